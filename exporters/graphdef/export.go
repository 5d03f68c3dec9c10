// Package graphdef writes IR graphs of the TensorFlow op domain
// (ir.TFDomain) as TensorFlow graphs: binary GraphDef protobufs (frozen
// graphs, .pb) and TensorFlow.js graph models (model.json with binary
// weight shards). It is the counterpart of importers/graphdef, whose Ext
// fields (read here through small interfaces, ext.go) let it write back
// everything it read.
//
// # What is written
//
//   - Every graph input is a Placeholder, every parameter a Const, every
//     node a NodeDef named after the node, with its op, its data inputs
//     ("node" or "node:k"), then its control inputs ("^node": ir.Node.Control,
//     and those the importer kept on values), and its attributes. Imported
//     nodes start from the NodeDef as read (device, debug info, experimental
//     type, unknown fields, and every attribute whose ir.Attr still carries
//     the AttrValue it was read from); attributes without one are converted
//     (attr.go).
//   - Node order: NodeDefs read from a file keep their file order; nodes
//     that were not read (a rewrite's recomputations, graphs built in code)
//     follow the node that precedes them in the graph's order. TensorFlow.js
//     visits nodes in an order that depends on this one, which is why a
//     rewrite is written with its order forced (remat.go).
//   - A GraphDef holds its Consts' values inline (tensor_content, or
//     string_val for strings). A TensorFlow.js model holds them in the
//     weight shards, in manifest order, and its Consts carry only dtype and
//     shape. A model read from model.json whose weights are all still there
//     and unchanged is written with its manifest and shards as read, byte
//     for byte; otherwise the manifest is written anew (the weights the
//     source manifest had keep its order, entry and stored bytes, which
//     keeps quantized weights quantized; new ones follow as TensorFlow.js
//     stores them: float32, int32, bool, string or complex64) into shards
//     of at most Options.ShardBytes named after the output file.
//   - model.json keeps every top-level member of the source in its order
//     (format, generatedBy, convertedBy, signature, userDefinedMetadata,
//     …), with modelTopology and weightsManifest written anew, the
//     signature's output names following the graph's outputs, and the
//     rewrite's metadata in userDefinedMetadata. When the graph written is
//     the graph read (the same GraphDef, weights and signature), the file
//     is the source's bytes. A graph whose outputs TensorFlow.js would not
//     find on its own (the nodes no node reads, in its key order) gets a
//     signature naming them.
//
// Export builds the files in memory; ExportFile writes them atomically
// (internal/atomicfile: every file to a temporary file, renamed into place
// only when all are written) and never over the source model or its
// shards.
package graphdef

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
)

// Format is the file format written.
type Format = tfpb.Format

// The formats.
const (
	// FormatAuto chooses from the output path: ".json" writes a
	// TensorFlow.js graph model, anything else a binary GraphDef.
	FormatAuto = tfpb.FormatAuto
	// FormatGraphDef is a binary GraphDef (.pb).
	FormatGraphDef = tfpb.FormatGraphDef
	// FormatTFJS is a TensorFlow.js graph model (model.json and shards).
	FormatTFJS = tfpb.FormatTFJS
)

// FormatOf returns the format a path's extension selects: FormatTFJS for
// ".json", FormatGraphDef otherwise.
func FormatOf(path string) Format {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return FormatTFJS
	}
	return FormatGraphDef
}

// DefaultShardBytes is the largest weight shard written when
// Options.ShardBytes is 0: TensorFlow.js's converter's default, 4 MiB.
const DefaultShardBytes = 4 << 20

// Options configure an export. The zero value writes the graph as it is.
type Options struct {
	// Format is the format to write; FormatAuto means FormatOf(path) in
	// ExportFile and FormatTFJS in Export.
	Format Format
	// Source is the path of the model the graph was read from: ExportFile
	// refuses to write over it or over its shards.
	Source string
	// ShardBytes bounds a weight shard written anew (0: DefaultShardBytes).
	ShardBytes int64
	// ShardPrefix names new shards "<prefix>.bin", or
	// "<prefix>-shard<i>of<n>.bin" when there are several; "" means the
	// output file's name without its extension (ExportFile), or "weights"
	// (Export).
	ShardPrefix string
	// Remat, when set, is the rewrite that made the graph: its
	// recomputations are forced into place (remat.go) and listed in the
	// metadata with RematInfo.
	Remat     *remat.RewriteResult
	RematInfo RematInfo
	// RuntimeOrder, when set, gives the order in which the runtime runs a
	// written graph (targets/tfjs: TensorFlow.js's executor): the positions
	// of w.Nodes in run order, the nodes it does not run left out. The
	// exporter gates a recompute chain only where that order would run it
	// before the node the plan runs it after. Without it every chain is
	// gated.
	RuntimeOrder func(w *Written) ([]int, error)
	// Order lists extra order constraints: each Node runs after its After
	// node, forced with a gate like a recompute chain.
	Order []remat.OrderConstraint
}

// Files is what an export writes: the model file and, for a TensorFlow.js
// model, its weight shards.
type Files struct {
	// Format is the format written (never FormatAuto).
	Format Format
	// Model is the .pb or the model.json.
	Model []byte
	// Shards are the weight shards by the path the manifest names
	// (relative to the model's directory), in manifest order.
	Shards []Shard
	// Reused reports that the shards are the source's, unchanged.
	Reused bool
}

// Shard is one weight shard file.
type Shard struct {
	Path string
	Data []byte
}

// Export writes g in memory in opts.Format (FormatAuto: TensorFlow.js).
func Export(g *ir.Graph, opts Options) (*Files, error) {
	if opts.Format == FormatAuto {
		opts.Format = FormatTFJS
	}
	if opts.ShardPrefix == "" {
		opts.ShardPrefix = "weights"
	}
	ex, err := newExporter(g, opts)
	if err != nil {
		return nil, err
	}
	return ex.files()
}

// ExportFile writes g to path: a TensorFlow.js model (path ending in
// ".json", or opts.Format) with its shards in path's directory, or a
// binary GraphDef. Nothing is written over opts.Source or its shards, and
// a failure leaves no partial file.
func ExportFile(g *ir.Graph, path string, opts Options) error {
	if path == "" {
		return errors.New("graphdef export: empty output path")
	}
	if opts.Format == FormatAuto {
		opts.Format = FormatOf(path)
	}
	if opts.ShardPrefix == "" {
		opts.ShardPrefix = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if opts.Source != "" && SamePath(path, opts.Source) {
		return fmt.Errorf("graphdef export: refusing to overwrite the input model %q; write the output to another path", opts.Source)
	}
	ex, err := newExporter(g, opts)
	if err != nil {
		return err
	}
	files, err := ex.files()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	var set atomicfile.Set
	defer set.Abort()
	for _, sh := range files.Shards {
		sp := filepath.Join(dir, filepath.FromSlash(sh.Path))
		if !filepath.IsLocal(filepath.FromSlash(sh.Path)) {
			return fmt.Errorf("graphdef export: shard path %q leaves the model's directory", sh.Path)
		}
		if SamePath(sp, path) {
			return fmt.Errorf("graphdef export: shard %q would overwrite the model file %s; choose another output name", sh.Path, path)
		}
		if same, err := ex.sourceShard(sp, sh.Data); err != nil {
			return err
		} else if same {
			continue // the source's own shard, with these very bytes
		}
		if err := os.MkdirAll(filepath.Dir(sp), 0o755); err != nil {
			return fmt.Errorf("graphdef export: %w", err)
		}
		if err := set.Add(sp, writeBytes(sh.Data)); err != nil {
			return fmt.Errorf("graphdef export: %w", err)
		}
	}
	if err := set.Add(path, writeBytes(files.Model)); err != nil {
		return fmt.Errorf("graphdef export: %w", err)
	}
	if err := set.Commit(); err != nil {
		return fmt.Errorf("graphdef export: %w", err)
	}
	return nil
}

// sourceShard reports whether path is a shard of the source model (the
// files it was read from) holding data already; a source shard that
// would get other bytes is an error, never overwritten.
func (ex *exporter) sourceShard(path string, data []byte) (bool, error) {
	if ex.opts.Source == "" {
		return false, nil
	}
	if SamePath(path, ex.opts.Source) {
		return false, fmt.Errorf("graphdef export: a shard would overwrite the input model %q; write the output to another directory", ex.opts.Source)
	}
	m := ex.model()
	if m == nil {
		return false, nil
	}
	paths, _, contents := m.TFJSShards()
	base := filepath.Dir(ex.opts.Source)
	for i, p := range paths {
		if !SamePath(path, filepath.Join(base, filepath.FromSlash(p))) {
			continue
		}
		if string(contents[i]) == string(data) {
			return true, nil
		}
		return false, fmt.Errorf("graphdef export: refusing to overwrite %s, a weight shard of the input model, with other weights; write the output to another directory", path)
	}
	return false, nil
}

func writeBytes(b []byte) func(w io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

// SamePath reports whether a and b name the same file: equal cleaned
// absolute paths, or, when both exist, the same file on disk.
func SamePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
