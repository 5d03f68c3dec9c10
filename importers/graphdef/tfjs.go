package graphdef

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/encoding/protojson"
)

// tfjs reads a TensorFlow.js model.json and its shards.
func (im *importer) tfjs(data []byte) *ir.Graph {
	fail := func(format string, args ...any) *ir.Graph {
		im.errorf(im.filePos(), format, args...)
		return nil
	}
	fields, err := tfpb.JSONMembers(data, true)
	if err != nil {
		return fail("not a valid TensorFlow.js model.json: %v", err)
	}
	tj := &TFJSInfo{Fields: fields, Source: slices.Clone(data)}
	info := &ModelInfo{Format: FormatTFJS, TFJS: tj}
	strField := func(key string) (string, error) {
		raw := tj.Field(key)
		if raw == nil || isNull(raw) {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("model.json member %q is not a string", key)
		}
		return s, nil
	}
	for _, key := range []string{"format", "generatedBy", "convertedBy"} {
		s, err := strField(key)
		if err != nil {
			return fail("%v", err)
		}
		switch key {
		case "format":
			tj.Format = s
		case "generatedBy":
			tj.GeneratedBy = s
		case "convertedBy":
			tj.ConvertedBy = s
		}
	}
	if tj.Format != "" && tj.Format != "graph-model" {
		return fail("model.json has format %q; only TensorFlow.js graph models (format \"graph-model\") hold a GraphDef", tj.Format)
	}
	topo := tj.Field("modelTopology")
	if topo == nil || isNull(topo) {
		return fail("model.json has no modelTopology (the GraphDef)")
	}
	gd := &tfpb.GraphDef{}
	if err := protojson.Unmarshal(topo, gd); err != nil {
		return fail("modelTopology is not a GraphDef in the proto3 JSON mapping: %v", err)
	}
	tj.Signature = signatureOf(tj)
	weights := im.manifest(tj)
	if im.stop || im.errs.Len() > 0 {
		return nil
	}
	g := im.build(gd, info, weights)
	// Every manifest weight must be some Const's value.
	for _, grp := range tj.Manifest {
		for _, w := range grp.Weights {
			if w.Param != nil {
				continue
			}
			found := false
			for _, nd := range gd.GetNode() {
				if nd.GetName() == w.Name {
					found = true
					if nd.GetOp() != "Const" {
						im.errorf(ir.Pos{File: im.opts.File, Value: w.Name}, "manifest weight %q names a %s node; weights are the values of Const nodes", w.Name, nd.GetOp())
					}
					break
				}
			}
			if !found {
				im.errorf(ir.Pos{File: im.opts.File, Value: w.Name}, "manifest weight %q names no node of the graph; every weight is the value of a Const node of that name", w.Name)
			}
		}
	}
	return g
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// signatureOf picks the signature as TensorFlow.js does:
// userDefinedMetadata.signature when it is there, else signature.
func signatureOf(tj *TFJSInfo) json.RawMessage {
	if udm := tj.Field("userDefinedMetadata"); udm != nil && !isNull(udm) {
		if ms, err := tfpb.JSONMembers(udm, false); err == nil {
			for _, m := range ms {
				if m.Key == "signature" && !isNull(m.Value) {
					return m.Value
				}
			}
		}
	}
	if s := tj.Field("signature"); s != nil && !isNull(s) {
		return s
	}
	return nil
}

// signatureOutputs lists the tensor names of a signature's outputs in the
// order TensorFlow.js uses them: it maps each output's name to its key in a
// JavaScript object, so the names keep the order of their first appearance,
// except that names that are array indices ("0", "1", …) come first in
// numeric order, as in every JavaScript object (and the same for the keys
// of the outputs object they are read from).
func signatureOutputs(sig json.RawMessage) ([]string, error) {
	ms, err := tfpb.JSONMembers(sig, false)
	if err != nil {
		return nil, err
	}
	var outs json.RawMessage
	for _, m := range ms {
		if m.Key == "outputs" {
			outs = m.Value
		}
	}
	if outs == nil || isNull(outs) {
		return nil, nil
	}
	entries, err := tfpb.JSONMembers(outs, false)
	if err != nil {
		return nil, fmt.Errorf("outputs: %v", err)
	}
	keys := make([]string, len(entries))
	byKey := map[string]json.RawMessage{}
	for i, e := range entries {
		keys[i], byKey[e.Key] = e.Key, e.Value
	}
	var names []string
	seen := map[string]bool{}
	for _, k := range tfpb.JSKeyOrder(keys) {
		var entry struct {
			Name *string `json:"name"`
		}
		if err := json.Unmarshal(byKey[k], &entry); err != nil || entry.Name == nil {
			return nil, fmt.Errorf("output %q has no name (the tensor it returns, \"node:k\")", k)
		}
		if !seen[*entry.Name] {
			seen[*entry.Name] = true
			names = append(names, *entry.Name)
		}
	}
	return tfpb.JSKeyOrder(names), nil
}

// jsonWeight is a weights manifest entry.
type jsonWeight struct {
	Name         *string         `json:"name"`
	Shape        []json.Number   `json:"shape"`
	DType        *string         `json:"dtype"`
	Quantization json.RawMessage `json:"quantization"`
}

type jsonQuant struct {
	DType         *string  `json:"dtype"`
	Min           *float64 `json:"min"`
	Scale         *float64 `json:"scale"`
	OriginalDType *string  `json:"original_dtype"`
}

type jsonGroup struct {
	Paths   []string          `json:"paths"`
	Weights []json.RawMessage `json:"weights"`
}

// manifest reads the weights manifest and the shards, and slices the
// shards into the weights' stored bytes. It returns the weights by name.
func (im *importer) manifest(tj *TFJSInfo) map[string]*Weight {
	raw := tj.Field("weightsManifest")
	if raw == nil || isNull(raw) {
		return map[string]*Weight{}
	}
	fail := func(format string, args ...any) map[string]*Weight {
		im.errorf(im.filePos(), "weightsManifest: "+format, args...)
		return nil
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return fail("not a list of groups: %v", err)
	}
	weights := map[string]*Weight{}
	var all []*Weight
	var shardBytes int64
	var shards [][]byte
	for gi, graw := range groups {
		var jg jsonGroup
		if err := json.Unmarshal(graw, &jg); err != nil {
			return fail("group %d: %v", gi, err)
		}
		grp := &WeightGroup{Paths: jg.Paths, JSON: graw}
		tj.Manifest = append(tj.Manifest, grp)
		for _, p := range jg.Paths {
			b, err := im.readShard(p, tj)
			if err != nil {
				return fail("group %d: %v", gi, err)
			}
			shardBytes += int64(len(b))
			if shardBytes > im.maxShardBytes() {
				return fail("the shards hold more than the limit of %d bytes", im.maxShardBytes())
			}
			grp.Shards = append(grp.Shards, b)
			shards = append(shards, b)
		}
		for wi, wraw := range jg.Weights {
			w, err := parseWeight(wraw)
			if err != nil {
				return fail("group %d weight %d: %v", gi, wi, err)
			}
			if _, dup := weights[w.Name]; dup {
				return fail("weight %q is listed twice", w.Name)
			}
			w.Group = gi
			weights[w.Name] = w
			grp.Weights = append(grp.Weights, w)
			all = append(all, w)
		}
	}
	// TensorFlow.js reads the weights, in manifest order, from the shards
	// of all groups joined in order.
	buf := make([]byte, 0, shardBytes)
	for _, s := range shards {
		buf = append(buf, s...)
	}
	at := 0
	for _, grp := range tj.Manifest {
		for i := range grp.Shards {
			n := len(grp.Shards[i])
			grp.Shards[i] = buf[at : at+n : at+n]
			at += n
		}
	}
	off := int64(0)
	for _, w := range all {
		n, err := storedSize(w, buf[off:])
		if err != nil {
			return fail("weight %q: %v", w.Name, err)
		}
		if n > int64(len(buf))-off {
			return fail("the shards hold %d bytes, but weight %q needs bytes %d to %d: a shard is shorter than the manifest says", len(buf), w.Name, off, off+n)
		}
		w.Stored = buf[off : off+n : off+n]
		off += n
	}
	tj.Trailing = buf[off:len(buf):len(buf)]
	return weights
}

// parseWeight reads one manifest entry.
func parseWeight(raw json.RawMessage) (*Weight, error) {
	var jw jsonWeight
	if err := json.Unmarshal(raw, &jw); err != nil {
		return nil, err
	}
	if jw.Name == nil || *jw.Name == "" {
		return nil, fmt.Errorf("has no name")
	}
	w := &Weight{Name: *jw.Name, JSON: raw}
	if jw.DType == nil {
		return nil, fmt.Errorf("%q has no dtype", w.Name)
	}
	w.DType = *jw.DType
	if jw.Shape == nil {
		return nil, fmt.Errorf("%q has no shape", w.Name)
	}
	w.Shape = make([]int64, len(jw.Shape))
	for i, d := range jw.Shape {
		v, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: shape element %s is not an integer", w.Name, d)
		}
		if v < 0 {
			return nil, fmt.Errorf("%q: negative dimension %d in shape", w.Name, v)
		}
		w.Shape[i] = v
	}
	if _, ok := ir.NumElements(w.Shape); !ok {
		return nil, fmt.Errorf("%q: shape %v has more elements than can be stored", w.Name, w.Shape)
	}
	if jw.Quantization != nil && !isNull(jw.Quantization) {
		var jq jsonQuant
		if err := json.Unmarshal(jw.Quantization, &jq); err != nil {
			return nil, fmt.Errorf("%q: quantization: %v", w.Name, err)
		}
		q := &Quantization{}
		if jq.DType != nil {
			q.DType = *jq.DType
		}
		if jq.OriginalDType != nil {
			q.OriginalDType = *jq.OriginalDType
		}
		switch q.DType {
		case "uint8", "uint16":
			if jq.Min == nil || jq.Scale == nil {
				return nil, fmt.Errorf("%q: quantization %s needs min and scale", w.Name, q.DType)
			}
			q.Min, q.Scale = *jq.Min, *jq.Scale
			if w.DType != "float32" && w.DType != "int32" {
				return nil, fmt.Errorf("%q: quantization %s applies to float32 and int32 weights, not %q", w.Name, q.DType, w.DType)
			}
		case "float16":
			if w.DType != "float32" {
				return nil, fmt.Errorf("%q: quantization float16 applies to float32 weights, not %q", w.Name, w.DType)
			}
		default:
			return nil, fmt.Errorf("%q: quantization with unknown dtype %q; TensorFlow.js knows uint8, uint16 and float16", w.Name, q.DType)
		}
		w.Quantization = q
		return w, nil
	}
	if _, ok := weightDTypes[w.DType]; !ok {
		return nil, fmt.Errorf("%q: unknown dtype %q; TensorFlow.js weights are float32, int32, bool, string or complex64", w.Name, w.DType)
	}
	return w, nil
}

// weightDTypes maps the dtypes of manifest entries to IR element types and
// their stored size in bytes (0: strings, length-prefixed).
var weightDTypes = map[string]struct {
	dt   ir.DType
	size int64
}{
	"float32":   {ir.Float32, 4},
	"int32":     {ir.Int32, 4},
	"bool":      {ir.Bool, 1},
	"complex64": {ir.Complex64, 8},
	"string":    {ir.String, 0},
}

// storedSize is the number of bytes w takes in the shards; rest is the
// shard data from w's first byte on (string lengths are read from it).
func storedSize(w *Weight, rest []byte) (int64, error) {
	n, _ := ir.NumElements(w.Shape)
	per := int64(0)
	if q := w.Quantization; q != nil {
		per = 2
		if q.DType == "uint8" {
			per = 1
		}
	} else {
		per = weightDTypes[w.DType].size
	}
	if per > 0 {
		if n > (1<<62)/per {
			return 0, fmt.Errorf("shape %v is too large", w.Shape)
		}
		return n * per, nil
	}
	// Strings: each a 4-byte little-endian length, then its bytes.
	off := int64(0)
	for range n {
		if int64(len(rest))-off < 4 {
			return 0, fmt.Errorf("the shards end inside the string weight (a shard is shorter than the manifest says)")
		}
		l := int64(binary.LittleEndian.Uint32(rest[off:]))
		off += 4
		if int64(len(rest))-off < l {
			return 0, fmt.Errorf("a string of %d bytes runs past the end of the shards (a shard is shorter than the manifest says)", l)
		}
		off += l
	}
	return off, nil
}

// decodeWeight builds the tensor TensorFlow.js builds from w's stored bytes
// (tfjs-core io.decodeWeights): quantized values dequantized as
// min + scale·q, computed in float64 (JavaScript numbers) and stored as
// float32 (a Float32Array), or, for int32 weights, rounded with Math.round
// and wrapped to 32 bits (an Int32Array); float16 values widened exactly.
func (im *importer) decodeWeight(w *Weight) (*ir.Tensor, error) {
	n, _ := ir.NumElements(w.Shape)
	dt := weightDTypes[w.DType].dt
	if w.Quantization != nil {
		dt = ir.Float32
		if w.DType == "int32" {
			dt = ir.Int32
		}
	}
	t := &ir.Tensor{Name: w.Name, DType: dt, Shape: slices.Clone(w.Shape)}
	if dt == ir.String {
		if n > im.maxTensorBytes() {
			return nil, fmt.Errorf("%d strings exceed the limit of %d", n, im.maxTensorBytes())
		}
		t.Strs = make([][]byte, 0, n)
		for off := 0; off < len(w.Stored); {
			l := int(binary.LittleEndian.Uint32(w.Stored[off:]))
			t.Strs = append(t.Strs, slices.Clone(w.Stored[off+4:off+4+l]))
			off += 4 + l
		}
		return t, nil
	}
	want, ok := dt.StorageBytes(n)
	if !ok || want > im.maxTensorBytes() {
		return nil, fmt.Errorf("%v takes more than the limit of %d bytes", t.Type(), im.maxTensorBytes())
	}
	q := w.Quantization
	if q == nil {
		t.Raw = slices.Clone(w.Stored)
		return t, nil
	}
	raw := make([]byte, want)
	for i := range int(n) {
		var v float64
		switch q.DType {
		case "uint8":
			v = float64(w.Stored[i])
		case "uint16":
			v = float64(binary.LittleEndian.Uint16(w.Stored[2*i:]))
		case "float16":
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(ir.HalfToFloat32(binary.LittleEndian.Uint16(w.Stored[2*i:]))))
			continue
		}
		// The explicit conversion keeps the multiply and the add two
		// rounded float64 operations, as in JavaScript (no fused
		// multiply-add).
		x := float64(v*q.Scale) + q.Min
		if dt == ir.Int32 {
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(jsToInt32(jsRound(x))))
		} else {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(x)))
		}
	}
	t.Raw = raw
	return t, nil
}

// jsRound is JavaScript's Math.round: the nearest integer, halves rounded
// up (towards +∞).
func jsRound(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r := math.Floor(x)
	if x-r >= 0.5 {
		r++
	}
	return r
}

// jsToInt32 is the conversion a JavaScript Int32Array applies on store
// (ECMAScript ToInt32): NaN and infinities become 0, other values are
// truncated and wrapped modulo 2³².
func jsToInt32(x float64) int32 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	m := math.Mod(math.Trunc(x), 1<<32)
	if m < 0 {
		m += 1 << 32
	}
	return int32(uint32(m))
}

// readShard returns the contents of the shard at the manifest path p: from
// Options.Shards, or from the file p names below BaseDir, which p must not
// leave (no absolute path, no "..", no symlink leading outside).
func (im *importer) readShard(p string, tj *TFJSInfo) ([]byte, error) {
	local := filepath.FromSlash(p)
	switch {
	case p == "":
		return nil, fmt.Errorf("a shard path is empty")
	case filepath.IsAbs(local) || len(p) > 0 && p[0] == '/':
		return nil, fmt.Errorf("shard path %q is absolute; shard paths are relative to the model's directory", p)
	case !filepath.IsLocal(local):
		return nil, fmt.Errorf("shard path %q escapes the model's directory; shards must lie in it", p)
	}
	if im.opts.Shards != nil {
		b, ok := im.opts.Shards[p]
		if !ok {
			return nil, fmt.Errorf("shard %q is not among the shards provided", p)
		}
		return b, nil
	}
	if im.opts.BaseDir == "" {
		return nil, errNoShards
	}
	tj.BaseDir = im.opts.BaseDir
	root, err := os.OpenRoot(im.opts.BaseDir)
	if err != nil {
		return nil, fmt.Errorf("model directory: %v", err)
	}
	defer root.Close()
	f, err := root.Open(local)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("shard %q does not exist in %s; copy it next to model.json", p, im.opts.BaseDir)
		}
		return nil, fmt.Errorf("shard %q: %v", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shard %q: %v", p, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("shard %q is not a regular file", p)
	}
	if st.Size() > im.maxShardBytes() {
		return nil, fmt.Errorf("shard %q has %d bytes, more than the limit of %d", p, st.Size(), im.maxShardBytes())
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("shard %q: %v", p, err)
	}
	return b, nil
}
