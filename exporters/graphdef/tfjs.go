package graphdef

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// files writes the model in the format of the options.
func (ex *exporter) files() (*Files, error) {
	gd := ex.graphDef()
	if ex.opts.Format == FormatGraphDef {
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(gd)
		if err != nil {
			return nil, fmt.Errorf("graphdef export: %w", err)
		}
		return &Files{Format: FormatGraphDef, Model: data}, nil
	}
	return ex.tfjsFiles(gd)
}

// graphDef assembles the GraphDef: the source's graph-level fields (or
// empty versions, which TensorFlow.js requires) and the NodeDefs in file
// order.
func (ex *exporter) graphDef() *tfpb.GraphDef {
	var gd *tfpb.GraphDef
	if m := ex.model(); m != nil {
		gd = proto.Clone(m.TFGraphDef()).(*tfpb.GraphDef)
	} else {
		gd = &tfpb.GraphDef{Versions: &tfpb.VersionDef{}, Library: &tfpb.FunctionDefLibrary{}}
	}
	if gd.Versions == nil {
		gd.Versions = &tfpb.VersionDef{}
	}
	gd.Node = make([]*tfpb.NodeDef, len(ex.entries))
	for i, e := range ex.entries {
		gd.Node[i] = e.nd
	}
	return gd
}

// Keys of model.json's top-level members and of the metadata.
const (
	keyTopology = "modelTopology"
	keyManifest = "weightsManifest"
	keySig      = "signature"
	keyUDM      = "userDefinedMetadata"
)

// tfjsFiles writes model.json and the shards.
func (ex *exporter) tfjsFiles(gd *tfpb.GraphDef) (*Files, error) {
	files := &Files{Format: FormatTFJS}
	var members []tfpb.JSONMember
	var source []byte
	if m := ex.model(); m != nil {
		if keys, values, ok := m.TFJSTopLevel(); ok {
			for i, k := range keys {
				members = append(members, tfpb.JSONMember{Key: k, Value: values[i]})
			}
			source = m.TFJSSource()
		}
	}
	fromTFJS := members != nil
	if !fromTFJS {
		members = []tfpb.JSONMember{
			{Key: "format", Value: json.RawMessage(`"graph-model"`)},
			{Key: "convertedBy", Value: json.RawMessage(`"remat-compile"`)},
		}
	}
	changed := !fromTFJS

	// modelTopology: the source's as read when the GraphDef is the same.
	topo, err := ex.topology(gd, member(members, keyTopology))
	if err != nil {
		return nil, err
	}
	changed = set(&members, keyTopology, topo) || changed

	// weightsManifest and shards.
	manifest, shards, reused, err := ex.weights(member(members, keyManifest))
	if err != nil {
		return nil, err
	}
	files.Shards, files.Reused = shards, reused
	changed = set(&members, keyManifest, manifest) || changed

	// The signature's outputs follow the graph's outputs.
	sigChanged, err := ex.signature(&members)
	if err != nil {
		return nil, err
	}
	changed = sigChanged || changed

	// The rewrite's metadata.
	if ex.meta != nil {
		js, err := marshal(ex.meta)
		if err != nil {
			return nil, err
		}
		udm := member(members, keyUDM)
		if udm == nil || isNull(udm) {
			udm = json.RawMessage("{}")
		}
		udm, err = setMember(udm, RematMetadataKey, js)
		if err != nil {
			return nil, fmt.Errorf("graphdef export: userDefinedMetadata: %w", err)
		}
		set(&members, keyUDM, udm)
		changed = true
	}

	if !changed && source != nil {
		files.Model = slices.Clone(source)
		return files, nil
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, mb := range members {
		k, _ := json.Marshal(mb.Key)
		fmt.Fprintf(&b, "  %s: %s", k, bytes.TrimSpace(mb.Value))
		if i < len(members)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	files.Model = b.Bytes()
	return files, nil
}

// member returns the raw value of key in members, or nil.
func member(members []tfpb.JSONMember, key string) json.RawMessage {
	for _, m := range members {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// set sets key to value in members (appending it when absent) and reports
// whether that changed anything.
func set(members *[]tfpb.JSONMember, key string, value json.RawMessage) bool {
	for i, m := range *members {
		if m.Key == key {
			if bytes.Equal(m.Value, value) {
				return false
			}
			(*members)[i].Value = value
			return true
		}
	}
	*members = append(*members, tfpb.JSONMember{Key: key, Value: value})
	return true
}

// setMember returns the JSON object obj with key set to value (replaced in
// place, or appended), its other members as they are.
func setMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	ms, err := tfpb.JSONMembers(obj, false)
	if err != nil {
		return nil, err
	}
	set(&ms, key, value)
	return object(ms), nil
}

// object writes members as a compact JSON object.
func object(ms []tfpb.JSONMember) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(bytes.TrimSpace(m.Value))
	}
	b.WriteByte('}')
	return b.Bytes()
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// marshal encodes v as compact JSON without HTML escapes.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("graphdef export: %w", err)
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// topology returns modelTopology: src, the source's, when it holds the
// same GraphDef, else gd in the proto3 JSON mapping (compact; protojson's
// whitespace is not stable, so it is compacted away).
func (ex *exporter) topology(gd *tfpb.GraphDef, src json.RawMessage) (json.RawMessage, error) {
	if src != nil {
		old := &tfpb.GraphDef{}
		if err := protojson.Unmarshal(src, old); err == nil && proto.Equal(old, gd) {
			return src, nil
		}
	}
	js, err := protojson.Marshal(gd)
	if err != nil {
		return nil, fmt.Errorf("graphdef export: %w", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, js); err != nil {
		return nil, fmt.Errorf("graphdef export: %w", err)
	}
	return b.Bytes(), nil
}

// weight is one weight of the manifest written.
type weight struct {
	entry  json.RawMessage
	stored []byte
}

// weights returns the weights manifest and the shards: the source's as
// read when every weight it lists is the value of a parameter still there,
// unchanged, and there is no other parameter; else a manifest of one group
// written anew (see the package doc).
func (ex *exporter) weights(src json.RawMessage) (json.RawMessage, []Shard, bool, error) {
	// The source manifest's weight names, in order.
	var srcNames []string
	if src != nil && !isNull(src) {
		var groups []struct {
			Weights []struct {
				Name string `json:"name"`
			} `json:"weights"`
		}
		if err := json.Unmarshal(src, &groups); err == nil {
			for _, g := range groups {
				for _, w := range g.Weights {
					srcNames = append(srcNames, w.Name)
				}
			}
		}
	}
	pos := make(map[string]int, len(srcNames))
	for i, n := range srcNames {
		pos[n] = i
	}
	type param struct {
		v      *ir.Value
		w      weight
		srcPos int // position in the source manifest, -1 when new
	}
	var params []param
	kept := 0
	for _, e := range ex.entries {
		v := e.value
		if v == nil || e.nd.GetOp() != "Const" {
			continue
		}
		name := ex.valueNames[v]
		p := param{v: v, srcPos: -1}
		if ce, ok := v.Ext.(constExt); ok && ce.TFConstUnchanged(v.Data) {
			if entry, stored, ok := ce.TFWeight(); ok {
				if i, ok := pos[name]; ok && weightName(entry) == name {
					p.w, p.srcPos = weight{entry: entry, stored: stored}, i
					kept++
				}
			}
		}
		if p.srcPos < 0 {
			dt, stored, err := weightBytes(v.Data)
			if err != nil {
				return nil, nil, false, fmt.Errorf("graphdef export: Const %q: %w", name, err)
			}
			entry, err := marshal(struct {
				Name  string  `json:"name"`
				Shape []int64 `json:"shape"`
				DType string  `json:"dtype"`
			}{name, nonNil(v.Data.Shape), dt})
			if err != nil {
				return nil, nil, false, err
			}
			p.w = weight{entry: entry, stored: stored}
		}
		params = append(params, p)
	}
	if m := ex.model(); m != nil && kept == len(srcNames) && kept == len(params) && src != nil {
		paths, _, contents := m.TFJSShards()
		shards := make([]Shard, len(paths))
		for i := range paths {
			shards[i] = Shard{Path: paths[i], Data: contents[i]}
		}
		return src, shards, true, nil
	}
	slices.SortStableFunc(params, func(a, b param) int {
		switch {
		case a.srcPos >= 0 && b.srcPos >= 0:
			return a.srcPos - b.srcPos
		case a.srcPos >= 0:
			return -1
		case b.srcPos >= 0:
			return 1
		}
		return 0
	})
	var data []byte
	entries := make([]json.RawMessage, len(params))
	for i, p := range params {
		entries[i] = p.w.entry
		data = append(data, p.w.stored...)
	}
	size := ex.opts.ShardBytes
	if size <= 0 {
		size = DefaultShardBytes
	}
	n := max(1, int((int64(len(data))+size-1)/size))
	var shards []Shard
	paths := make([]string, 0, n)
	for i := range n {
		path := ex.opts.ShardPrefix + ".bin"
		if n > 1 {
			path = fmt.Sprintf("%s-shard%dof%d.bin", ex.opts.ShardPrefix, i+1, n)
		}
		lo := int64(i) * size
		hi := min(int64(len(data)), lo+size)
		shards = append(shards, Shard{Path: path, Data: data[lo:hi]})
		paths = append(paths, path)
	}
	if len(params) == 0 {
		shards, paths = nil, []string{}
	}
	manifest, err := marshal([]struct {
		Paths   []string          `json:"paths"`
		Weights []json.RawMessage `json:"weights"`
	}{{Paths: paths, Weights: nonNilRaw(entries)}})
	if err != nil {
		return nil, nil, false, err
	}
	return manifest, shards, false, nil
}

func nonNil(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

func nonNilRaw(s []json.RawMessage) []json.RawMessage {
	if s == nil {
		return []json.RawMessage{}
	}
	return s
}

// weightName reads the name of a manifest entry.
func weightName(entry json.RawMessage) string {
	var w struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(entry, &w)
	return w.Name
}

// signature makes the signature's outputs name the graph's outputs: the
// signature TensorFlow.js reads (userDefinedMetadata.signature, else
// signature) gets each output entry's "name" set to the tensor that is now
// the graph output in its place. Without a signature, one is added when
// TensorFlow.js's default outputs (the nodes no node reads, in its key
// order) are not the graph's outputs. It reports whether members changed.
func (ex *exporter) signature(members *[]tfpb.JSONMember) (bool, error) {
	outs := make([]string, len(ex.g.Outputs))
	for i, v := range ex.g.Outputs {
		outs[i] = ex.tensorName(v)
	}
	// Where the signature is.
	udm := member(*members, keyUDM)
	var sig json.RawMessage
	inUDM := false
	if udm != nil && !isNull(udm) {
		if ms, err := tfpb.JSONMembers(udm, false); err == nil {
			if s := member(ms, keySig); s != nil && !isNull(s) {
				sig, inUDM = s, true
			}
		}
	}
	if sig == nil {
		if s := member(*members, keySig); s != nil && !isNull(s) {
			sig = s
		}
	}
	if sig == nil {
		if slices.EqualFunc(ex.defaultOutputs(), outs, func(a, b string) bool { return canonical(a) == canonical(b) }) {
			return false, nil
		}
		return set(members, keySig, ex.newSignature(outs)), nil
	}
	newSig, err := ex.renameOutputs(sig, outs)
	if err != nil {
		return false, fmt.Errorf("graphdef export: signature: %w", err)
	}
	if bytes.Equal(newSig, sig) {
		return false, nil
	}
	if inUDM {
		udm, err := setMember(udm, keySig, newSig)
		if err != nil {
			return false, err
		}
		return set(members, keyUDM, udm), nil
	}
	return set(members, keySig, newSig), nil
}

// renameOutputs returns sig with the names of its outputs set to outs: the
// distinct names in TensorFlow.js's order (tfpb.JSKeyOrder of the keys,
// then of the names, as the importer reads them) map one to one onto outs.
// When their number differs, the outputs are written anew.
func (ex *exporter) renameOutputs(sig json.RawMessage, outs []string) (json.RawMessage, error) {
	ms, err := tfpb.JSONMembers(sig, false)
	if err != nil {
		return nil, err
	}
	raw := member(ms, "outputs")
	if raw == nil || isNull(raw) {
		set(&ms, "outputs", ex.outputsObject(outs))
		return object(ms), nil
	}
	entries, err := tfpb.JSONMembers(raw, false)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
	}
	nameOf := map[string]string{}
	var names []string
	for _, k := range tfpb.JSKeyOrder(keys) {
		var entry struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(member(entries, k), &entry); err != nil {
			return nil, fmt.Errorf("output %q: %v", k, err)
		}
		nameOf[k] = entry.Name
		if !slices.Contains(names, entry.Name) {
			names = append(names, entry.Name)
		}
	}
	names = tfpb.JSKeyOrder(names)
	if len(names) != len(outs) {
		set(&ms, "outputs", ex.outputsObject(outs))
		return object(ms), nil
	}
	rename := map[string]string{}
	for i, n := range names {
		rename[n] = outs[i]
	}
	changed := false
	for i, e := range entries {
		old := nameOf[e.Key]
		if canonical(rename[old]) == canonical(old) {
			continue // "x:0" names what "x" does
		}
		js, _ := marshal(rename[old])
		v, err := setMember(e.Value, "name", js)
		if err != nil {
			return nil, err
		}
		entries[i].Value = v
		changed = true
	}
	if !changed {
		return sig, nil
	}
	set(&ms, "outputs", object(entries))
	return object(ms), nil
}

// newSignature is a signature naming outs as the outputs.
func (ex *exporter) newSignature(outs []string) json.RawMessage {
	return object([]tfpb.JSONMember{{Key: "outputs", Value: ex.outputsObject(outs)}})
}

// outputsObject lists outs as a signature's outputs, each keyed by its
// tensor name, with its dtype and shape where known.
func (ex *exporter) outputsObject(outs []string) json.RawMessage {
	var ms []tfpb.JSONMember
	for i, name := range outs {
		if member(ms, name) != nil {
			continue
		}
		t := ex.g.Outputs[i].Type
		entry := []tfpb.JSONMember{{Key: "name", Value: mustMarshal(name)}}
		if dt, err := dataType(t.DType); err == nil {
			entry = append(entry, tfpb.JSONMember{Key: "dtype", Value: mustMarshal(dt.String())})
		}
		if !t.Unranked && t.Shape != nil {
			sp, _ := protojson.Marshal(shapeProto(t))
			var b bytes.Buffer
			_ = json.Compact(&b, sp)
			entry = append(entry, tfpb.JSONMember{Key: "tensorShape", Value: b.Bytes()})
		}
		ms = append(ms, tfpb.JSONMember{Key: name, Value: object(entry)})
	}
	return object(ms)
}

func mustMarshal(v any) json.RawMessage {
	b, _ := marshal(v)
	return b
}

// defaultOutputs are the tensors TensorFlow.js returns from a model
// without a signature: output 0 of every NodeDef that no NodeDef reads
// (by data or control input), in the order of its node map's keys.
func (ex *exporter) defaultOutputs() []string {
	read := map[string]bool{}
	for _, e := range ex.entries {
		for _, in := range e.nd.Input {
			read[nodeOfRef(in)] = true
		}
	}
	var keys []string
	for _, e := range ex.entries {
		if !read[e.name()] {
			keys = append(keys, e.name())
		}
	}
	return tfpb.JSKeyOrder(keys)
}

// nodeOfRef is the node an input reference names.
func nodeOfRef(ref string) string {
	if len(ref) > 0 && ref[0] == '^' {
		ref = ref[1:]
	}
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == ':' {
			if _, err := strconv.Atoi(ref[i+1:]); err == nil {
				return ref[:i]
			}
			break
		}
	}
	return ref
}
