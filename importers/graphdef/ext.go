package graphdef

import (
	"crypto/sha256"
	"encoding/json"
	"slices"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// The importer keeps everything about a model that the IR does not model in
// the Ext fields of the IR, so that exporters/graphdef can write the model
// back: the NodeDefs as read (order, attributes as raw AttrValues, devices,
// debug info), the library and versions, and for TensorFlow.js models the
// top-level members of model.json, the weights manifest and the shard bytes.
// Each Ext type has exported fields for readers (inspect, tests) and TF*
// methods that hand the pieces back as tfpb messages and standard types:
// the exporter may not import this package (DESIGN.md), so it reaches them
// through small interfaces of its own that these methods satisfy.
//
//	Graph.Ext                          *ModelInfo
//	Node.Ext                           *NodeInfo   (every imported node)
//	Value.Ext of a graph input         *NodeInfo   (its Placeholder)
//	Value.Ext of a parameter           *ConstInfo  (its Const, and its weight)
//	Attr.Ext                           *AttrInfo   (every imported attribute)
//
// Output values of nodes have no Ext.

// Format is the file format of a TensorFlow graph.
type Format = tfpb.Format

// The formats.
const (
	// FormatAuto lets Import decide from the bytes: a JSON object is a
	// TensorFlow.js model.json, anything else a binary GraphDef.
	FormatAuto = tfpb.FormatAuto
	// FormatGraphDef is a binary GraphDef protobuf (a frozen graph, .pb).
	FormatGraphDef = tfpb.FormatGraphDef
	// FormatTFJS is a TensorFlow.js graph model: model.json (the GraphDef
	// in the proto3 JSON mapping and a weights manifest) and the binary
	// weight shards the manifest names.
	FormatTFJS = tfpb.FormatTFJS
)

// ModelInfo is the Ext of an imported graph.
type ModelInfo struct {
	// Format is the format the graph was read from (never FormatAuto).
	Format Format
	// Versions, Library and Version are the GraphDef's fields as read (nil
	// or 0 when absent). The importer does not look inside the library.
	Versions *tfpb.VersionDef
	Library  *tfpb.FunctionDefLibrary
	Version  int32
	// Unknown holds GraphDef fields this schema does not know (binary
	// GraphDefs only), in wire format.
	Unknown []byte
	// NumNodeDefs is how many NodeDefs the file listed; NodeInfo.Index
	// numbers them in file order.
	NumNodeDefs int
	// TFJS is the rest of a TensorFlow.js model.json; nil for a binary
	// GraphDef.
	TFJS *TFJSInfo
}

// TFGraphDef returns a GraphDef holding the graph-level fields as read
// (versions, library, the deprecated version, unknown fields) and no nodes.
func (m *ModelInfo) TFGraphDef() *tfpb.GraphDef {
	gd := &tfpb.GraphDef{Versions: m.Versions, Library: m.Library, Version: m.Version}
	if len(m.Unknown) > 0 {
		gd.ProtoReflect().SetUnknown(slices.Clone(m.Unknown))
	}
	return gd
}

// TFJSTopLevel returns the top-level members of model.json in file order
// (keys and raw JSON values; modelTopology and weightsManifest included, as
// read), and false for a model that was not read from model.json.
func (m *ModelInfo) TFJSTopLevel() (keys []string, values []json.RawMessage, ok bool) {
	if m.TFJS == nil {
		return nil, nil, false
	}
	for _, f := range m.TFJS.Fields {
		keys = append(keys, f.Key)
		values = append(values, f.Value)
	}
	return keys, values, true
}

// TFJSSource returns model.json as read (nil for a binary GraphDef).
func (m *ModelInfo) TFJSSource() []byte {
	if m.TFJS == nil {
		return nil
	}
	return m.TFJS.Source
}

// TFJSShards returns the weight shards as read: their paths as the manifest
// writes them (relative to the model's directory), in manifest order, the
// manifest group of each, and their contents. Writing them back unchanged
// reproduces the shards byte for byte.
func (m *ModelInfo) TFJSShards() (paths []string, groups []int, contents [][]byte) {
	if m.TFJS == nil {
		return nil, nil, nil
	}
	for gi, g := range m.TFJS.Manifest {
		for i, p := range g.Paths {
			paths = append(paths, p)
			groups = append(groups, gi)
			contents = append(contents, g.Shards[i])
		}
	}
	return paths, groups, contents
}

// TFJSInfo is what a TensorFlow.js model.json holds besides the graph.
type TFJSInfo struct {
	// Fields are the top-level members of model.json in file order, each
	// with its raw JSON value: modelTopology and weightsManifest (which an
	// exporter regenerates) as well as format, generatedBy, convertedBy,
	// signature, userDefinedMetadata, modelInitializer, initializerSignature
	// and any other member.
	Fields []JSONField
	// Format, GeneratedBy and ConvertedBy are the string members of those
	// names ("" when absent or not strings).
	Format, GeneratedBy, ConvertedBy string
	// Signature is the signature that chose the graph outputs, as
	// TensorFlow.js picks it: userDefinedMetadata.signature when present,
	// else the top-level signature; nil when there is none.
	Signature json.RawMessage
	// Manifest is the weights manifest, group by group, in file order.
	Manifest []*WeightGroup
	// Trailing holds the bytes of the shards after the last weight (the
	// shards are read as one concatenated buffer, as TensorFlow.js reads
	// them).
	Trailing []byte
	// BaseDir is the directory the shard paths were resolved against (""
	// when the shards came from Options.Shards).
	BaseDir string
	// Source is model.json as read, byte for byte: an exporter writes it
	// back unchanged when the model it writes is the model read.
	Source []byte
}

// Field returns the raw JSON of the top-level member key, or nil.
func (t *TFJSInfo) Field(key string) json.RawMessage {
	for _, f := range t.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// JSONField is one member of a JSON object: its key and raw value.
type JSONField = tfpb.JSONMember

// WeightGroup is one group of the weights manifest.
type WeightGroup struct {
	// Paths are the shard files as the manifest writes them, relative to
	// the model's directory; Shards their contents as read.
	Paths  []string
	Shards [][]byte
	// Weights are the group's entries in manifest order.
	Weights []*Weight
	// JSON is the group object as read.
	JSON json.RawMessage
}

// Weight is one entry of the weights manifest.
type Weight struct {
	Name  string
	Shape []int64
	// DType is the manifest's dtype ("float32", "int32", "bool", "string",
	// "complex64"): the type of the tensor TensorFlow.js builds.
	DType string
	// Quantization is set when the shard holds quantized values that are
	// dequantized at load.
	Quantization *Quantization
	// Stored is the weight's bytes in the shards, as stored (quantized
	// values for a quantized weight). It shares memory with the shard.
	Stored []byte
	// JSON is the manifest entry as read.
	JSON json.RawMessage
	// Group is the index of the weight's group in the manifest.
	Group int
	// Param is the parameter the weight became.
	Param *ir.Value
}

// Quantization describes how a weight's stored values map to its dtype, as
// TensorFlow.js's io.decodeWeights applies it: uint8 and uint16 values q
// become min + scale·q (rounded to the nearest integer for int32 weights),
// float16 values are widened to float32.
type Quantization struct {
	DType      string // "uint8", "uint16" or "float16"
	Min, Scale float64
	// OriginalDType is original_dtype as newer converters write it ("" when
	// absent); informational.
	OriginalDType string
}

// NodeInfo is the Ext of an imported node, and of the graph input a
// Placeholder became.
type NodeInfo struct {
	// Def is the NodeDef as read: name, op, inputs (data inputs, then
	// "^name" control inputs), device, attributes as raw AttrValues, debug
	// info, experimental type, unknown fields.
	Def *tfpb.NodeDef
	// Index is the NodeDef's position in the file's node list.
	Index int
	// ValueControls are control inputs on a Placeholder or Const: the IR
	// has no node for those (they became a graph input or a parameter), so
	// the edge is kept here, by the value.
	ValueControls []*ir.Value
	// Control, on the Ext of a graph input or a parameter, are the
	// Placeholder's or Const's control inputs that are nodes. The IR does
	// not track edges on values: an exporter keeps those still in the
	// graph. (A node's control inputs are ir.Node.Control.)
	Control []*ir.Node
}

// TFNode returns the NodeDef as read.
func (ni *NodeInfo) TFNode() *tfpb.NodeDef { return ni.Def }

// TFIndex returns the NodeDef's position in the file's node list.
func (ni *NodeInfo) TFIndex() int { return ni.Index }

// TFValueControls returns the control inputs on graph inputs and
// parameters.
func (ni *NodeInfo) TFValueControls() []*ir.Value { return ni.ValueControls }

// TFControl returns the control inputs that are nodes of a Placeholder or
// Const (nil for a node: see ir.Node.Control).
func (ni *NodeInfo) TFControl() []*ir.Node { return ni.Control }

// ConstInfo is the Ext of a parameter imported from a Const node.
type ConstInfo struct {
	NodeInfo
	// Weight is the manifest entry the value came from (TensorFlow.js), nil
	// when the value was in the NodeDef's value attribute.
	Weight *Weight
	// DType and Sum (SHA-256 of the elements) identify the value as
	// imported: while the parameter still holds them, the NodeDef's value
	// tensor (or the weight's stored bytes) can be written back as read.
	DType ir.DType
	Sum   [sha256.Size]byte
}

// TFConstUnchanged reports whether t still holds the elements the Const was
// imported with.
func (ci *ConstInfo) TFConstUnchanged(t *ir.Tensor) bool {
	return t != nil && t.DType == ci.DType && tensorSum(t) == ci.Sum
}

// TFWeight returns the manifest entry as read and the weight's stored
// bytes, and false when the value was not from the manifest.
func (ci *ConstInfo) TFWeight() (entry json.RawMessage, stored []byte, ok bool) {
	if ci.Weight == nil {
		return nil, nil, false
	}
	return ci.Weight.JSON, ci.Weight.Stored, true
}

// AttrInfo is the Ext of an imported attribute: the AttrValue as read,
// which says what the ir.Attr cannot (a bool, a type, a shape, a function,
// the element kind of an empty list).
type AttrInfo struct {
	Value *tfpb.AttrValue
}

// TFAttr returns the AttrValue as read.
func (ai *AttrInfo) TFAttr() *tfpb.AttrValue { return ai.Value }

// tensorSum fingerprints the elements of t.
func tensorSum(t *ir.Tensor) [sha256.Size]byte {
	h := sha256.New()
	if t.DType != ir.String {
		h.Write(t.Raw)
	} else {
		for _, s := range t.Strs {
			var n [8]byte
			for i := range 8 {
				n[i] = byte(uint64(len(s)) >> (8 * i))
			}
			h.Write(n[:])
			h.Write(s)
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func unknownOf(m proto.Message) []byte {
	u := m.ProtoReflect().GetUnknown()
	if len(u) == 0 {
		return nil
	}
	return slices.Clone(u)
}
