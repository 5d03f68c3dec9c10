package graphdef_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/pipeline"
)

func tfModels(t *testing.T) []pipeline.ModelSpec {
	specs, err := pipeline.ReadManifest(testmodels.TFManifest(t))
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// rawModel is what the test reads from model.json itself, independently of
// the importer.
type rawModel struct {
	ModelTopology struct {
		Node []struct {
			Name  string   `json:"name"`
			Op    string   `json:"op"`
			Input []string `json:"input"`
		} `json:"node"`
	} `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string  `json:"name"`
			Shape        []int64 `json:"shape"`
			DType        string  `json:"dtype"`
			Quantization *struct {
				DType string `json:"dtype"`
			} `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// tfjsWeightSums are the SHA-256 of each fetched model's weights as
// TensorFlow.js 4.22 decodes them (tf.io.decodeWeights on the manifest and
// the joined shards, the decoded arrays concatenated in manifest order),
// recorded in Node. The models are pinned by sha256 in fetch-tf.sh.
var tfjsWeightSums = map[string]string{
	"selfie":            "68838bf6a9fc9084b39a0d63eaf5caa5574c95090d0103a77031033bd91c3d6e",
	"meet":              "d46cb9aed29c2525d128b5aaf099fd00a1de317c574dbfd15b1ef4f5c6a93527",
	"blazeface":         "dc9a97fdc50bc43216554bdd69aa3e7b9361a519ee7bdd996a2f69a98a6f9b72",
	"movenet-lightning": "ea9f76eb3807b65f0abae36d277d7813073a5474a95acf577377a08de4d7450a",
	"efficientpose":     "1b1f89f6ff2be09315576c25400dc416d8bdc565804bb9b593118ee30e92ca1a",
	"handlandmark-lite": "eb2205b392978dca1d03ad11c368fc731693dc179e085efceb55f65dc9ef661f",
	"posenet":           "15e9a22e499fe09307b077ee9bd37939987a5e20acb1a17506ccdf1cb72cd433",
}

// TestRealModels imports every fetched TensorFlow.js model and checks the
// IR against model.json read on its own: every NodeDef accounted for (ops
// counted per op type: nodes, Placeholders as graph inputs, Consts as
// parameters), control inputs as edges, the inputs the manifest of models
// names, every weight's decoded and stored sizes, the decoded weights
// against TensorFlow.js's, and the shards kept byte for byte.
func TestRealModels(t *testing.T) {
	for _, m := range tfModels(t) {
		t.Run(m.Name, func(t *testing.T) {
			g, err := graphdef.ImportFile(m.Source, graphdef.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(g); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(m.Source)
			if err != nil {
				t.Fatal(err)
			}
			var raw rawModel
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}

			// Node and op counts.
			want := map[string]int{}
			controls := 0
			for _, nd := range raw.ModelTopology.Node {
				want[nd.Op]++
				for _, in := range nd.Input {
					if strings.HasPrefix(in, "^") {
						controls++
					}
				}
			}
			got := map[string]int{"Placeholder": len(g.Inputs), "Const": len(g.Params)}
			edges := 0
			for _, n := range g.Nodes {
				if n.Domain != ir.TFDomain {
					t.Errorf("node %s in domain %q", n.Name, n.Domain)
				}
				got[n.Op]++
				edges += len(n.Control) + len(n.Ext.(*graphdef.NodeInfo).TFValueControls())
			}
			for _, p := range g.Params {
				ci := p.Ext.(*graphdef.ConstInfo)
				edges += len(ci.TFControl()) + len(ci.TFValueControls())
			}
			for _, in := range g.Inputs {
				ni := in.Ext.(*graphdef.NodeInfo)
				edges += len(ni.TFControl()) + len(ni.TFValueControls())
			}
			for op, n := range want {
				if got[op] != n {
					t.Errorf("%s: %d in the IR, %d NodeDefs in model.json", op, got[op], n)
				}
			}
			for op, n := range got {
				if want[op] == 0 {
					t.Errorf("%s: %d in the IR, none in model.json", op, n)
				}
			}
			if total := len(g.Nodes) + len(g.Inputs) + len(g.Params); total != len(raw.ModelTopology.Node) {
				t.Errorf("%d nodes+inputs+params, %d NodeDefs", total, len(raw.ModelTopology.Node))
			}
			if edges != controls {
				t.Errorf("%d control edges in the IR, %d control inputs in model.json", edges, controls)
			}

			// Inputs as the model manifest lists them (NAME:DIMS[:dtype]).
			if len(g.Inputs) != len(m.InputShapes) {
				t.Errorf("%d graph inputs, the manifest lists %d", len(g.Inputs), len(m.InputShapes))
			}
			for _, in := range g.Inputs {
				dims, ok := m.InputShapes[in.Name]
				dt, typed := m.InputTypes[in.Name]
				if !typed {
					dt = ir.Float32
				}
				if !ok || !in.Type.Equal(ir.TensorOf(dt, dims...)) {
					t.Errorf("input %s:%v, the manifest says %v %v", in.Name, in.Type, dt, dims)
				}
			}
			if len(g.Outputs) == 0 {
				t.Errorf("no graph outputs")
			}

			// Weights: one parameter each, decoded to its manifest shape
			// and dtype; stored bytes as the quantization says; shards
			// kept byte for byte.
			params := map[string]*ir.Value{}
			for _, p := range g.Params {
				params[p.Name] = p
			}
			info := g.Ext.(*graphdef.ModelInfo)
			decoded := sha256.New()
			var shards, stored []byte
			var dequantized, storedTotal int64
			for gi, grp := range raw.WeightsManifest {
				for _, p := range grp.Paths {
					b, err := os.ReadFile(filepath.Join(filepath.Dir(m.Source), p))
					if err != nil {
						t.Fatal(err)
					}
					shards = append(shards, b...)
				}
				for wi, w := range grp.Weights {
					p := params[w.Name]
					if p == nil {
						t.Errorf("weight %s: no parameter", w.Name)
						continue
					}
					n := int64(1)
					for _, d := range w.Shape {
						n *= d
					}
					size := map[string]int64{"float32": 4, "int32": 4, "bool": 1}[w.DType]
					if got := int64(len(p.Data.Raw)); got != n*size || !p.Type.Equal(ir.TensorOf(p.Data.DType, w.Shape...)) {
						t.Errorf("weight %s: %v with %d bytes, manifest %s%v (%d bytes)", w.Name, p.Type, got, w.DType, w.Shape, n*size)
					}
					storedSize := size
					if q := w.Quantization; q != nil {
						storedSize = map[string]int64{"uint8": 1, "uint16": 2, "float16": 2}[q.DType]
					}
					ew := info.TFJS.Manifest[gi].Weights[wi]
					if ew.Name != w.Name || int64(len(ew.Stored)) != n*storedSize || ew.Param != p {
						t.Errorf("weight %s: manifest entry %s with %d stored bytes, want %d", w.Name, ew.Name, len(ew.Stored), n*storedSize)
					}
					stored = append(stored, ew.Stored...)
					decoded.Write(p.Data.Raw)
					dequantized += int64(len(p.Data.Raw))
					storedTotal += int64(len(ew.Stored))
				}
			}
			if want, ok := tfjsWeightSums[m.Name]; ok {
				if got := hex.EncodeToString(decoded.Sum(nil)); got != want {
					t.Errorf("decoded weights: SHA-256 %s, TensorFlow.js decodes them to %s", got, want)
				}
			} else {
				t.Logf("no TensorFlow.js weight checksum recorded for %s", m.Name)
			}
			if !bytes.Equal(append(stored, info.TFJS.Trailing...), shards) {
				t.Errorf("the weights' stored bytes (%d) and the trailing bytes (%d) do not make up the shards (%d bytes)", len(stored), len(info.TFJS.Trailing), len(shards))
			}
			var kept []byte
			_, _, contents := info.TFJSShards()
			for _, c := range contents {
				kept = append(kept, c...)
			}
			if !bytes.Equal(kept, shards) {
				t.Errorf("TFJSShards differ from the shard files")
			}
			t.Logf("%d NodeDefs: %d nodes, %d inputs, %d weights (%d bytes stored, %d decoded), %d control edges, %d outputs",
				len(raw.ModelTopology.Node), len(g.Nodes), len(g.Inputs), len(g.Params), storedTotal, dequantized, edges, len(g.Outputs))

			// The IR text form holds the whole graph.
			if _, err := irtext.Parse(m.Name, irtext.Format(g)); err != nil {
				t.Errorf("the IR text does not parse back: %v", err)
			}
		})
	}
}
