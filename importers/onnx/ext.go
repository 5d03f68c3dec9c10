package onnx

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// The importer keeps everything about a model that the IR does not model in
// the Ext fields of the IR, so that exporters/onnx can write the model back.
// Each Ext type below has exported fields for readers (the CLI's inspect, for
// example) and one ONNX* method that hands the pieces back as protobuf
// messages: the exporter may not import this package (see DESIGN.md), so it
// reaches them through small interfaces of its own that these methods
// satisfy.
//
//	Graph.Ext (root)     *ModelInfo
//	Graph.Ext (subgraph) *GraphInfo
//	Node.Ext             *NodeInfo   (only when the node has such pieces)
//	Value.Ext            *ValueInfo  (values declared in input, output or value_info)
//	Tensor.Ext           *TensorInfo
//	Attr.Ext             *AttrInfo   (AttrOther attributes, or leftovers)

// Prop is one key/value entry of a metadata_props list.
type Prop struct{ Key, Value string }

// ModelInfo is the Ext of an imported root graph: the ModelProto fields the
// IR does not model, and (embedded) the root GraphProto's leftovers.
type ModelInfo struct {
	GraphInfo

	IRVersion       int64
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	Doc             string
	MetadataProps   []Prop
	// Functions, TrainingInfo and Configuration are kept as read; the
	// importer does not look inside them.
	Functions     []*onnxpb.FunctionProto
	TrainingInfo  []*onnxpb.TrainingInfoProto
	Configuration []*onnxpb.DeviceConfigurationProto
	// Unknown holds fields of ModelProto this schema does not know, in wire
	// format.
	Unknown []byte
	// BaseDir is the directory external data was read from ("" when the
	// model had none).
	BaseDir string
}

// ONNXModel returns a ModelProto with every field of m set and no graph and
// no opset_import (the IR holds those).
func (m *ModelInfo) ONNXModel() *onnxpb.ModelProto {
	mp := &onnxpb.ModelProto{
		IrVersion:     proto.Int64(m.IRVersion),
		MetadataProps: propsProto(m.MetadataProps),
		TrainingInfo:  m.TrainingInfo,
		Functions:     m.Functions,
		Configuration: m.Configuration,
	}
	if m.ProducerName != "" {
		mp.ProducerName = proto.String(m.ProducerName)
	}
	if m.ProducerVersion != "" {
		mp.ProducerVersion = proto.String(m.ProducerVersion)
	}
	if m.Domain != "" {
		mp.Domain = proto.String(m.Domain)
	}
	if m.ModelVersion != 0 {
		mp.ModelVersion = proto.Int64(m.ModelVersion)
	}
	if m.Doc != "" {
		mp.DocString = proto.String(m.Doc)
	}
	setUnknown(mp, m.Unknown)
	return mp
}

// GraphInfo is the Ext of an imported subgraph (and, inside ModelInfo, of the
// root graph): the GraphProto fields the IR does not model.
type GraphInfo struct {
	// Inputs and Outputs are the graph.input and graph.output entries as
	// read, by the value they declare. A value listed twice as an output
	// keeps its first entry.
	Inputs, Outputs map[*ir.Value]*onnxpb.ValueInfoProto
	// ValueInfo is the graph's value_info list as read, in order.
	ValueInfo              []ValueInfoEntry
	QuantizationAnnotation []*onnxpb.TensorAnnotation
	MetadataProps          []Prop
	Unknown                []byte
}

// ValueInfoEntry is one value_info entry of a graph.
type ValueInfoEntry struct {
	// Value is the value the entry describes, nil when no value of that name
	// was in scope (the entry is then written back as it was).
	Value *ir.Value
	Proto *onnxpb.ValueInfoProto
}

// ONNXGraph returns a GraphProto holding the graph-level leftovers
// (quantization annotations, metadata, unknown fields); the input and output
// entries as read, by value; and the value_info entries as read, each with
// the value it described (nil for none).
func (gi *GraphInfo) ONNXGraph() (tmpl *onnxpb.GraphProto, inputs, outputs map[*ir.Value]*onnxpb.ValueInfoProto, valueInfo []*onnxpb.ValueInfoProto, described []*ir.Value) {
	tmpl = &onnxpb.GraphProto{
		QuantizationAnnotation: gi.QuantizationAnnotation,
		MetadataProps:          propsProto(gi.MetadataProps),
	}
	setUnknown(tmpl, gi.Unknown)
	for _, e := range gi.ValueInfo {
		valueInfo = append(valueInfo, e.Proto)
		described = append(described, e.Value)
	}
	return tmpl, gi.Inputs, gi.Outputs, valueInfo, described
}

// ValueInfo is the Ext of a value that the model declares as a graph input,
// a graph output or in value_info (the declarations themselves are in the
// GraphInfo of the graph that lists them).
type ValueInfo struct {
	// Type and Doc are Value.Type and Value.Doc as imported. While the value
	// still has them, the exporter writes the declarations' own type protos
	// (with their denotations, map key types, …) and doc strings back.
	Type ir.TensorType
	Doc  string
}

// ONNXValue returns the type and doc string the value was imported with.
func (vi *ValueInfo) ONNXValue() (typ ir.TensorType, doc string) { return vi.Type, vi.Doc }

// NodeInfo is the Ext of a node with NodeProto fields the IR does not model.
type NodeInfo struct {
	Overload             string
	MetadataProps        []Prop
	DeviceConfigurations []*onnxpb.NodeDeviceConfigurationProto
	Unknown              []byte
}

// ONNXNode returns a NodeProto holding only the node's leftovers.
func (ni *NodeInfo) ONNXNode() *onnxpb.NodeProto {
	np := &onnxpb.NodeProto{
		MetadataProps:        propsProto(ni.MetadataProps),
		DeviceConfigurations: ni.DeviceConfigurations,
	}
	if ni.Overload != "" {
		np.Overload = proto.String(ni.Overload)
	}
	setUnknown(np, ni.Unknown)
	return np
}

// AttrInfo is the Ext of an attribute. For an AttrOther attribute (a type
// proto, a sparse tensor, a ref_attr_name reference) Proto is the whole
// attribute as read; otherwise it is nil and Unknown holds the attribute's
// unknown fields.
type AttrInfo struct {
	Proto   *onnxpb.AttributeProto
	Unknown []byte
}

// ONNXAttr returns the attribute as read (AttrOther) or a template holding
// its unknown fields.
func (ai *AttrInfo) ONNXAttr() *onnxpb.AttributeProto {
	if ai.Proto != nil {
		return ai.Proto
	}
	ap := &onnxpb.AttributeProto{}
	setUnknown(ap, ai.Unknown)
	return ap
}

// Encoding says where a TensorProto kept its elements.
type Encoding uint8

const (
	EncRaw      Encoding = iota // raw_data
	EncFloat                    // float_data
	EncInt32                    // int32_data
	EncInt64                    // int64_data
	EncDouble                   // double_data
	EncUint64                   // uint64_data
	EncString                   // string_data
	EncExternal                 // external data (data_location EXTERNAL)
)

var encodingNames = [...]string{"raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data", "external data"}

func (e Encoding) String() string {
	if int(e) < len(encodingNames) {
		return encodingNames[e]
	}
	return "encoding?"
}

// TensorInfo is the Ext of an imported tensor: how the file stored it.
type TensorInfo struct {
	Encoding Encoding
	// DType and Sum (SHA-256 of Raw, or of Strs) identify the elements as
	// imported. While the tensor still holds them, the exporter writes the
	// typed field below back unchanged, so that a tensor stored in, say,
	// int32_data comes out bit for bit as it went in. Sum is computed only
	// where it is needed: typed fields, sparse initializers, and external
	// data with a checksum.
	DType ir.DType
	Sum   [sha256.Size]byte
	// The typed field as read (only the one Encoding names is set).
	FloatData  []float32
	Int32Data  []int32
	Int64Data  []int64
	DoubleData []float64
	Uint64Data []uint64
	// External is set for EncExternal.
	External *ExternalData
	// Sparse is set for a sparse initializer, imported as a dense Tensor.
	Sparse *SparseInfo

	MetadataProps []Prop
	Unknown       []byte
}

// ExternalData is where an external tensor's bytes were stored.
type ExternalData struct {
	Location string // as written: relative to the model's directory
	Offset   int64
	Length   int64
	Checksum string
	// Entries are all external_data entries in order, the four above
	// included.
	Entries []Prop
	// Path is the file the bytes were read from.
	Path string
}

// SparseInfo records a sparse initializer: the values and indices tensors as
// read (with their own TensorInfo) and the dense dims.
type SparseInfo struct {
	Values, Indices *ir.Tensor
	Dims            []int64
}

// ONNXTensor returns a TensorProto holding t's leftovers: metadata, unknown
// fields, and for an external tensor data_location EXTERNAL with the
// external_data entries as read (the checksum dropped when t's elements
// changed). When t came from a typed field (float_data, int32_data, …) and
// still holds the elements it was imported with, that field is set too, so
// the tensor comes out bit for bit as it went in. The caller sets name, doc,
// dims and data type, and raw_data or string_data when no typed field is
// set.
func (ti *TensorInfo) ONNXTensor(t *ir.Tensor) *onnxpb.TensorProto {
	tmpl := &onnxpb.TensorProto{MetadataProps: propsProto(ti.MetadataProps)}
	setUnknown(tmpl, ti.Unknown)
	typed := ti.Encoding >= EncFloat && ti.Encoding <= EncUint64
	checksum := ti.External != nil && ti.External.Checksum != ""
	unchanged := false
	if typed || checksum {
		unchanged = t.DType == ti.DType && tensorSum(t) == ti.Sum
	}
	if ti.External != nil {
		tmpl.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
		for _, e := range ti.External.Entries {
			if e.Key == "checksum" && !unchanged {
				continue
			}
			tmpl.ExternalData = append(tmpl.ExternalData, &onnxpb.StringStringEntryProto{Key: proto.String(e.Key), Value: proto.String(e.Value)})
		}
	}
	if typed && unchanged {
		switch ti.Encoding {
		case EncFloat:
			tmpl.FloatData = ti.FloatData
		case EncInt32:
			tmpl.Int32Data = ti.Int32Data
		case EncInt64:
			tmpl.Int64Data = ti.Int64Data
		case EncDouble:
			tmpl.DoubleData = ti.DoubleData
		case EncUint64:
			tmpl.Uint64Data = ti.Uint64Data
		}
	}
	return tmpl
}

// ONNXExternalSource returns the file an external tensor was read from, or
// "".
func (ti *TensorInfo) ONNXExternalSource() string {
	if ti.External == nil {
		return ""
	}
	return ti.External.Path
}

// ONNXSparse returns the values, indices and dims of a sparse initializer
// when t still holds the dense elements and shape it was imported with.
func (ti *TensorInfo) ONNXSparse(t *ir.Tensor) (values, indices *ir.Tensor, dims []int64, ok bool) {
	if ti.Sparse == nil || t.DType != ti.DType || !slices.Equal(t.Shape, ti.Sparse.Dims) || tensorSum(t) != ti.Sum {
		return nil, nil, nil, false
	}
	return ti.Sparse.Values, ti.Sparse.Indices, ti.Sparse.Dims, true
}

// tensorSum fingerprints the elements of t.
func tensorSum(t *ir.Tensor) [sha256.Size]byte {
	if t.DType != ir.String {
		return sha256.Sum256(t.Raw)
	}
	h := sha256.New()
	var n [8]byte
	for _, s := range t.Strs {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func propsProto(ps []Prop) []*onnxpb.StringStringEntryProto {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*onnxpb.StringStringEntryProto, len(ps))
	for i, p := range ps {
		out[i] = &onnxpb.StringStringEntryProto{Key: proto.String(p.Key), Value: proto.String(p.Value)}
	}
	return out
}

func propsOf(es []*onnxpb.StringStringEntryProto) []Prop {
	if len(es) == 0 {
		return nil
	}
	out := make([]Prop, len(es))
	for i, e := range es {
		out[i] = Prop{e.GetKey(), e.GetValue()}
	}
	return out
}

func setUnknown(m proto.Message, b []byte) {
	if len(b) > 0 {
		m.ProtoReflect().SetUnknown(bytes.Clone(b))
	}
}

func unknownOf(m proto.Message) []byte {
	u := m.ProtoReflect().GetUnknown()
	if len(u) == 0 {
		return nil
	}
	return u
}
