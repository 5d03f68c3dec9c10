package main

import (
	"context"
	"flag"

	"github.com/remat-compile/remat/pipeline"
)

type convertOptions struct {
	load   loadFlags
	out    string
	shapes bool
}

func convertCmd() *command {
	return &command{
		name:  "convert",
		usage: "[-input-shape name=DIMS] [-dim sym=N] [-shapes] -o out.onnx|out.pb|out.json model.onnx|graph.pb|model.json",
		short: "Import and export a model unchanged: an ONNX model with a topologically sorted node list and, with -shapes, the inferred shapes as value_info; a TensorFlow graph as a binary GraphDef (-o x.pb) or a TensorFlow.js model.json with its weight shards (-o x.json), either from either.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &convertOptions{}
			o.load.register(fs)
			fs.StringVar(&o.out, "o", "", "output `file` (required)")
			fs.BoolVar(&o.shapes, "shapes", false, "write every inferred intermediate type as value_info")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) != 1 {
					return usagef("convert takes one model file, got %d arguments", len(args))
				}
				if o.out == "" {
					return usagef("convert needs -o out.onnx")
				}
				return runConvert(ctx, o, args[0], st)
			}
		},
	}
}

func runConvert(ctx context.Context, o *convertOptions, path string, st *Streams) error {
	lo, err := o.load.options(st, false)
	if err != nil {
		return err
	}
	m, err := pipeline.Load(ctx, path, lo)
	if err != nil {
		return err
	}
	return m.Export(o.out, nil, o.shapes)
}
