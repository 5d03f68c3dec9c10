package onnx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// ExportFile writes g as an ONNX model at path. Tensors that came from
// external data go to external data files next to path (see
// Options.ExternalFile), unless opts.Inline is set. Every file is written
// to a temporary file in its directory and renamed into place, so a failed
// export leaves no partial file behind. ExportFile refuses to overwrite
// opts.Source, the input model, and the files its external data was read
// from.
func ExportFile(g *ir.Graph, path string, opts Options) error {
	if path == "" {
		return errors.New("onnx export: empty output path")
	}
	if opts.Source != "" && SamePath(path, opts.Source) {
		return fmt.Errorf("onnx export: refusing to overwrite the input model %q; write the output to another path", opts.Source)
	}
	ex := &exporter{opts: opts}
	mp, err := ex.model(g)
	if err != nil {
		return err
	}
	for _, e := range ex.ext {
		if e.source != "" && SamePath(path, e.source) {
			return fmt.Errorf("onnx export: refusing to overwrite %q, which holds the input model's external data; write the output to another path", e.source)
		}
	}
	files, err := ex.layout(path)
	if err != nil {
		return err
	}
	data, err := marshal(mp)
	if err != nil {
		return err
	}

	// Write everything to temporary files, then rename: the data files
	// first, the model last.
	var set atomicfile.Set
	defer set.Abort()
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return fmt.Errorf("onnx export: %w", err)
		}
		if err := set.Add(f.path, writeChunks(f.chunks...)); err != nil {
			return fmt.Errorf("onnx export: %w", err)
		}
	}
	if err := set.Add(path, writeChunks(data)); err != nil {
		return fmt.Errorf("onnx export: %w", err)
	}
	if err := set.Commit(); err != nil {
		return fmt.Errorf("onnx export: %w", err)
	}
	return nil
}

// writeChunks returns a writer of chunks, in order.
func writeChunks(chunks ...[]byte) func(io.Writer) error {
	return func(w io.Writer) error {
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// SamePath reports whether two paths name the same file (or would, for
// files that do not exist yet).
func SamePath(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// dataFile is one external data file to write.
type dataFile struct {
	location string // relative to the model's directory
	path     string
	chunks   [][]byte
}

// layout assigns every queued external tensor a file, offset and length,
// and fills in their external_data entries. Tensors go to the location they
// were read from (or opts.ExternalFile), contiguously in the order met.
func (ex *exporter) layout(modelPath string) ([]*dataFile, error) {
	if len(ex.ext) == 0 {
		return nil, nil
	}
	dir := filepath.Dir(modelPath)
	// Files the output must not overwrite: the input model and every file
	// external data was read from.
	var protected []string
	if ex.opts.Source != "" {
		protected = append(protected, ex.opts.Source)
	}
	for _, e := range ex.ext {
		if e.source != "" {
			protected = append(protected, e.source)
		}
	}
	clashes := func(p string) bool {
		if SamePath(p, modelPath) {
			return true
		}
		for _, q := range protected {
			if SamePath(p, q) {
				return true
			}
		}
		return false
	}
	fallback := filepath.Base(modelPath) + ".data"

	byLoc := map[string]*dataFile{}
	var files []*dataFile
	type placed struct {
		e      *extTensor
		f      *dataFile
		offset int64
	}
	var all []placed
	sizes := map[*dataFile]int64{}
	for _, e := range ex.ext {
		loc := ex.opts.ExternalFile
		if loc == "" {
			loc = entry(e.tp, "location")
		}
		if !filepath.IsLocal(loc) {
			return nil, fmt.Errorf("onnx export: tensor %q: external data location %q is not a path inside the output's directory", e.tp.GetName(), loc)
		}
		f := byLoc[loc]
		if f == nil {
			target := filepath.Join(dir, loc)
			if clashes(target) {
				if ex.opts.ExternalFile != "" || clashes(filepath.Join(dir, fallback)) {
					return nil, fmt.Errorf("onnx export: writing external data to %q would overwrite the input model or its data; write the output to another directory or set Options.ExternalFile", target)
				}
				loc, target = fallback, filepath.Join(dir, fallback)
			}
			if f = byLoc[loc]; f == nil {
				f = &dataFile{location: loc, path: target}
				byLoc[loc] = f
				files = append(files, f)
			}
			byLoc[entry(e.tp, "location")] = f
		}
		all = append(all, placed{e, f, sizes[f]})
		f.chunks = append(f.chunks, e.raw)
		sizes[f] += int64(len(e.raw))
	}
	for _, p := range all {
		length := int64(len(p.e.raw))
		whole := p.offset == 0 && length == sizes[p.f]
		setEntries(p.e.tp, p.f.location, p.offset, length, whole)
	}
	return files, nil
}

// entry returns the value of an external_data key.
func entry(tp *onnxpb.TensorProto, key string) string {
	for _, e := range tp.GetExternalData() {
		if e.GetKey() == key {
			return e.GetValue()
		}
	}
	return ""
}

// setEntries rewrites a tensor's external_data entries for its new place,
// keeping the order and any other keys. Offset and length are added when
// the source lacked them and they are needed.
func setEntries(tp *onnxpb.TensorProto, loc string, offset, length int64, whole bool) {
	var out []*onnxpb.StringStringEntryProto
	have := map[string]bool{}
	kv := func(k, v string) *onnxpb.StringStringEntryProto {
		return &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(v)}
	}
	for _, e := range tp.GetExternalData() {
		k := e.GetKey()
		have[k] = true
		switch k {
		case "location":
			out = append(out, kv(k, loc))
		case "offset":
			out = append(out, kv(k, strconv.FormatInt(offset, 10)))
		case "length":
			out = append(out, kv(k, strconv.FormatInt(length, 10)))
		default:
			out = append(out, e)
		}
	}
	if !have["location"] {
		out = append([]*onnxpb.StringStringEntryProto{kv("location", loc)}, out...)
	}
	if !have["offset"] && offset != 0 {
		out = append(out, kv("offset", strconv.FormatInt(offset, 10)))
	}
	if !have["length"] && !whole {
		out = append(out, kv("length", strconv.FormatInt(length, 10)))
	}
	tp.ExternalData = out
	tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	tp.RawData = nil
}
