package zoo

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

var modelNames = []string{
	"vgg16", "vgg19", "mobilenet_v1", "mobilenet_v2", "resnet50", "resnet", "googlenet",
	"unet", "fcn8", "segnet", "transformer_encoder", "transformer_decoder", "lstm",
}

func TestModelsAndLookup(t *testing.T) {
	var got []string
	for _, m := range Models() {
		got = append(got, m.Name)
		if m.Doc == "" || m.Build == nil {
			t.Errorf("%s: empty Doc or nil Build", m.Name)
		}
		l, ok := Lookup(m.Name)
		if !ok || l.Name != m.Name || l.Default != m.Default {
			t.Errorf("Lookup(%q) = %v, %v", m.Name, l.Name, ok)
		}
	}
	if !slices.Equal(got, modelNames) {
		t.Errorf("Models() names = %v, want %v", got, modelNames)
	}
	if _, ok := Lookup("alexnet"); ok {
		t.Errorf("Lookup(alexnet) found a model")
	}
}

func mustModel(t testing.TB, name string) Model {
	t.Helper()
	m, ok := Lookup(name)
	if !ok {
		t.Fatalf("no model %q", name)
	}
	return m
}

func mustBuild(t testing.TB, name string, c Config) *ir.Graph {
	t.Helper()
	g, err := mustModel(t, name).Build(c)
	if err != nil {
		t.Fatalf("%s.Build(%+v): %v", name, c, err)
	}
	checkGraph(t, g)
	return g
}

// checkGraph asserts what every zoo graph promises: it verifies, imports
// opset 17 of the standard domain only, has typed inputs and parameters
// whose data matches their type, finite float weights, uniquely named
// nodes and values, one output "output", and no dead nodes or parameters.
func checkGraph(t testing.TB, g *ir.Graph) {
	t.Helper()
	if err := ir.Verify(g); err != nil {
		t.Fatalf("%s: Verify: %v", g.Name, err)
	}
	if len(g.Opsets) != 1 || g.Opsets[0] != (ir.Opset{Domain: "", Version: 17}) {
		t.Errorf("%s: opsets %v, want [{\"\" 17}]", g.Name, g.Opsets)
	}
	if len(g.Outputs) != 1 || g.Outputs[0].Name != "output" {
		t.Fatalf("%s: outputs %v, want one called output", g.Name, g.Outputs)
	}
	if n := len(g.Inputs); n < 1 || n > 2 {
		t.Errorf("%s: %d inputs", g.Name, n)
	}
	for _, v := range g.Inputs {
		if !v.Type.Static() || !v.Type.DType.Valid() || v.Name == "" {
			t.Errorf("%s: input %q has type %v", g.Name, v.Name, v.Type)
		}
	}
	for _, v := range g.Params {
		if err := v.Data.CheckSize(); err != nil {
			t.Fatalf("%s: parameter %q: %v", g.Name, v.Name, err)
		}
		if !v.Type.Equal(v.Data.Type()) {
			t.Errorf("%s: parameter %q has type %v but data %v", g.Name, v.Name, v.Type, v.Data.Type())
		}
		if len(v.Uses) == 0 {
			t.Errorf("%s: parameter %q is unused", g.Name, v.Name)
		}
		if v.Data.DType == ir.Float32 {
			for i := 0; i < len(v.Data.Raw); i += 4 {
				f := math.Float32frombits(binary.LittleEndian.Uint32(v.Data.Raw[i:]))
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					t.Fatalf("%s: parameter %q holds %v", g.Name, v.Name, f)
				}
			}
		}
	}
	names := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Name == "" || names[n.Name] {
			t.Errorf("%s: node name %q is empty or not unique", g.Name, n.Name)
		}
		names[n.Name] = true
		if n.Domain != "" || ir.LookupOp("", n.Op) == nil {
			t.Errorf("%s: node %q has op %s outside the IR's standard op table", g.Name, n.Name, n.OpName())
		}
		for _, o := range n.Outputs {
			if o == nil {
				continue
			}
			if o.Name == "" {
				t.Errorf("%s: node %q has an unnamed output", g.Name, n.Name)
			}
			// RandomDAG leaves MaxPool's optional Indices unread on purpose.
			if len(o.Uses) == 0 && o != g.Outputs[0] && !(n.Op == "MaxPool" && o.Index == 1) {
				t.Errorf("%s: value %q of node %q is unused", g.Name, o.Name, n.Name)
			}
		}
	}
}

func histogram(g *ir.Graph) map[string]int {
	h := map[string]int{}
	for _, n := range g.Nodes {
		h[n.Op]++
	}
	return h
}

// weights counts the trainable parameters: float32 parameters named like
// weights (running statistics, masks, shape and scalar constants excluded).
func weights(g *ir.Graph) int64 {
	var n int64
	for _, v := range g.Params {
		for _, s := range []string{".weight", ".bias", ".scale", ".W", ".R", ".B"} {
			if v.Data.DType == ir.Float32 && len(v.Data.Shape) > 0 && strings.HasSuffix(v.Name, s) {
				n += v.Data.NumElements()
				break
			}
		}
	}
	return n
}

// fingerprint hashes a canonical text of g: nodes with names, ops,
// attributes and operand names; inputs and parameters with names and
// types; and, when data is set, the parameters' bytes.
func fingerprint(g *ir.Graph, data bool) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s %v\n", g.Name, g.Opsets)
	for _, v := range g.Inputs {
		fmt.Fprintf(h, "in %s %v\n", v.Name, v.Type)
	}
	for _, v := range g.Params {
		fmt.Fprintf(h, "param %s %v\n", v.Name, v.Type)
		if data {
			h.Write(v.Data.Raw)
		}
	}
	for _, n := range g.Nodes {
		fmt.Fprintf(h, "node %s %s %v ->", n.Name, n.Op, n.Inputs)
		for _, o := range n.Outputs {
			fmt.Fprintf(h, " %v", o)
		}
		for _, a := range n.Attrs {
			fmt.Fprintf(h, " %s=%v/%d/%v/%q/%v/%v", a.Name, a.Kind, a.Int, a.Float, a.Str, a.Ints, a.Floats)
		}
		fmt.Fprintln(h)
	}
	fmt.Fprintf(h, "out %v\n", g.Outputs)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// facts are architecture facts of one configuration.
type facts struct {
	nodes   int
	ops     map[string]int // exact counts of these ops
	weights int64          // exact trainable parameters; 0: not checked
}

// defaultFacts are the Default configurations' facts. Parameter counts
// are those of the reference implementations: torchvision (VGG, ResNet,
// MobileNetV2), Keras (MobileNetV1), BVLC Caffe (GoogLeNet), Hugging Face
// (GPT-2 small); the others are derived in the comments.
var defaultFacts = map[string]facts{
	"vgg16": {37, map[string]int{"Conv": 13, "Gemm": 3, "MaxPool": 5, "Relu": 15}, 138_357_544},
	"vgg19": {43, map[string]int{"Conv": 16, "Gemm": 3, "MaxPool": 5, "Relu": 18}, 143_667_240},
	// stem + 13 × (depthwise + pointwise), each with BN and ReLU.
	"mobilenet_v1": {84, map[string]int{"Conv": 27, "BatchNormalization": 27, "Relu": 27, "Gemm": 1}, 4_231_976},
	// stem + 2 + 16×3 block convs + last; 10 residuals; ReLU6 after all
	// but the 17 projections.
	"mobilenet_v2": {152, map[string]int{"Conv": 52, "BatchNormalization": 52, "Clip": 35, "Add": 10, "Gemm": 1}, 3_504_872},
	// stem + 16 bottlenecks × 3 + 4 projection shortcuts = 53.
	"resnet50": {175, map[string]int{"Conv": 53, "BatchNormalization": 53, "Relu": 49, "Add": 16, "MaxPool": 1, "Gemm": 1}, 25_557_032},
	// ResNet-152: stem + 50 × 3 + 4 = 155.
	"resnet":    {515, map[string]int{"Conv": 155, "BatchNormalization": 155, "Add": 50, "Gemm": 1}, 60_192_808},
	"googlenet": {141, map[string]int{"Conv": 57, "Relu": 57, "Concat": 9, "MaxPool": 13, "LRN": 2, "Gemm": 1}, 6_998_552},
	// 4 levels × 2 + 2 + 4 × 2 + head = 19 convs. Weights: encoder
	// 4,685,376 + bottleneck 14,157,824 + decoder 12,188,480 + head 130.
	"unet": {49, map[string]int{"Conv": 19, "ConvTranspose": 4, "MaxPool": 4, "Concat": 4, "Relu": 18}, 31_031_810},
	// VGG16 convs 14,714,688 + fc6 102,764,544 + fc7 16,781,312 + three
	// scores 102,207 + upsamplers 127,008 (no bias).
	"fcn8": {46, map[string]int{"Conv": 18, "ConvTranspose": 3, "Slice": 3, "Add": 2, "MaxPool": 5, "Relu": 15}, 134_489_759},
	// Encoder 14,714,688 + 8,448 BN; decoder 14,719,372 + 7,424 BN.
	"segnet": {86, map[string]int{"Conv": 26, "BatchNormalization": 25, "Relu": 25, "MaxPool": 5, "MaxUnpool": 5}, 29_449_932},
	// Embedding LN + 12 × 2 + MLM-head LN; 12 × 8 MatMuls + MLM dense.
	// Weights: Hugging Face BertForMaskedLM's 109,514,298 less the
	// token-type table (1,536) and 384 of the 512 position rows (294,912).
	"transformer_encoder": {411, map[string]int{"LayerNormalization": 26, "Softmax": 12, "Erf": 13, "MatMul": 97, "Gather": 2, "Gemm": 1, "Transpose": 48}, 109_217_850},
	"transformer_decoder": {427, map[string]int{"LayerNormalization": 25, "Softmax": 12, "Split": 12, "Tanh": 12, "MatMul": 72, "Gather": 2, "Gemm": 1}, 124_439_808},
	// 4 × 4·1024·(1024+1024+2) + 1024·10 + 10.
	"lstm": {10, map[string]int{"LSTM": 4, "Squeeze": 4, "Gemm": 1}, 33_597_450},
}

// smallFacts: the Small configurations keep the topology (ResNet is
// ResNet-101, U-Net keeps 4 levels, transformers have one layer, the LSTM
// two; MobileNetV2's narrowest channels round up to 8, which makes the
// first block and one more residual).
var smallFacts = map[string]facts{
	"vgg16":               {37, map[string]int{"Conv": 13, "Gemm": 3}, 0},
	"vgg19":               {43, map[string]int{"Conv": 16, "Gemm": 3}, 0},
	"mobilenet_v1":        {84, map[string]int{"Conv": 27}, 0},
	"mobilenet_v2":        {154, map[string]int{"Conv": 52, "Add": 12}, 0},
	"resnet50":            {175, map[string]int{"Conv": 53, "Add": 16}, 0},
	"resnet":              {345, map[string]int{"Conv": 104, "Add": 33}, 0},
	"googlenet":           {141, map[string]int{"Conv": 57, "Concat": 9}, 0},
	"unet":                {49, map[string]int{"Conv": 19, "Concat": 4}, 0},
	"fcn8":                {46, map[string]int{"Conv": 18, "Slice": 3}, 0},
	"segnet":              {86, map[string]int{"MaxUnpool": 5}, 0},
	"transformer_encoder": {48, map[string]int{"LayerNormalization": 4, "Softmax": 1}, 0},
	"transformer_decoder": {42, map[string]int{"LayerNormalization": 3, "Softmax": 1}, 0},
	"lstm":                {6, map[string]int{"LSTM": 2}, 0},
}

func checkFacts(t *testing.T, g *ir.Graph, f facts) {
	t.Helper()
	h := histogram(g)
	if len(g.Nodes) != f.nodes {
		t.Errorf("%s: %d nodes, want %d (%v)", g.Name, len(g.Nodes), f.nodes, h)
	}
	for op, want := range f.ops {
		if h[op] != want {
			t.Errorf("%s: %d %s nodes, want %d", g.Name, h[op], op, want)
		}
	}
	if f.weights != 0 {
		if w := weights(g); w != f.weights {
			t.Errorf("%s: %d weights, want %d", g.Name, w, f.weights)
		}
	}
}

func TestSmall(t *testing.T) {
	for _, m := range Models() {
		t.Run(m.Name, func(t *testing.T) {
			g := mustBuild(t, m.Name, m.Small)
			checkFacts(t, g, smallFacts[m.Name])
			var bytes int64
			for _, v := range g.Params {
				bytes += int64(len(v.Data.Raw))
			}
			// The exported file must stay below 200 KB.
			if bytes > 180_000 {
				t.Errorf("%s: %d bytes of weights; Small must stay below 180 KB", m.Name, bytes)
			}
		})
	}
}

// TestDefault builds every paper-size model (about 3.4 GB of weights in
// all, one model at a time) and checks its architecture facts and, unless
// -short, that a second build is identical.
func TestDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the papers' full-size models, hundreds of MB of weights; skipped in -short mode")
	}
	for _, m := range Models() {
		t.Run(m.Name, func(t *testing.T) {
			g := mustBuild(t, m.Name, m.Default)
			checkFacts(t, g, defaultFacts[m.Name])
			t.Logf("%-20s %4d nodes %12d weights %6.1f MB of parameters", m.Name, len(g.Nodes), weights(g), float64(paramBytes(g))/1e6)
			sum := fingerprint(g, true)
			g = nil
			if again := fingerprint(mustBuild(t, m.Name, m.Default), true); again != sum {
				t.Errorf("%s: two builds of the Default config differ", m.Name)
			}
		})
	}
}

func paramBytes(g *ir.Graph) int64 {
	var n int64
	for _, v := range g.Params {
		n += int64(len(v.Data.Raw))
	}
	return n
}

func TestDeterministic(t *testing.T) {
	for _, m := range Models() {
		a := mustBuild(t, m.Name, m.Small)
		b := mustBuild(t, m.Name, m.Small)
		if fingerprint(a, true) != fingerprint(b, true) {
			t.Errorf("%s: two builds of the same config differ", m.Name)
		}
	}
	if fingerprint(LargeGraph(3000, 7), true) != fingerprint(LargeGraph(3000, 7), true) {
		t.Errorf("LargeGraph: two builds differ")
	}
	if fingerprint(Chain(50, 7), true) != fingerprint(Chain(50, 7), true) {
		t.Errorf("Chain: two builds differ")
	}
}

// isConstant reports whether a parameter is a fixed constant rather than a
// random weight: integer tensors, scalars and masks.
func isConstant(v *ir.Value) bool {
	return v.Data.DType != ir.Float32 || len(v.Data.Shape) == 0 || strings.HasSuffix(v.Name, "mask")
}

func TestSeedChangesWeightsOnly(t *testing.T) {
	for _, m := range Models() {
		c := m.Small
		a := mustBuild(t, m.Name, c)
		c.Seed++
		b := mustBuild(t, m.Name, c)
		if fingerprint(a, false) != fingerprint(b, false) {
			t.Errorf("%s: a different seed changed the graph's structure", m.Name)
		}
		for i, v := range a.Params {
			same := bytes.Equal(v.Data.Raw, b.Params[i].Data.Raw)
			if same != isConstant(v) {
				t.Errorf("%s: parameter %q: same bytes under another seed = %v", m.Name, v.Name, same)
			}
		}
	}
	a, b := LargeGraph(500, 1), LargeGraph(500, 2)
	if fingerprint(a, false) == fingerprint(b, false) {
		t.Errorf("LargeGraph: the seed does not change the random structure")
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Batch: 1, Resolution: 64, Width: 0.25, Classes: 10}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	tests := []struct {
		model string
		c     Config
		want  string
	}{
		{"vgg16", with(func(c *Config) { c.Resolution = 100 }), "vgg16: resolution 100 is not a multiple of 32"},
		{"resnet50", with(func(c *Config) { c.Resolution = 48 }), "not a multiple of 32"},
		{"fcn8", with(func(c *Config) { c.Resolution = 16 }), "not a multiple of 32"},
		{"unet", with(func(c *Config) { c.Resolution = 40 }), "resolution 40 is not a multiple of 16 (2^depth)"},
		{"unet", with(func(c *Config) { c.Depth = 9 }), "depth 9 is outside [1, 8]"},
		{"vgg16", with(func(c *Config) { c.Batch = 0 }), "batch 0"},
		{"lstm", with(func(c *Config) { c.Resolution = 0 }), "resolution 0"},
		{"googlenet", with(func(c *Config) { c.Width = 0 }), "width 0"},
		{"googlenet", with(func(c *Config) { c.Width = math.NaN() }), "width NaN"},
		{"googlenet", with(func(c *Config) { c.Width = -1 }), "width -1"},
		{"segnet", with(func(c *Config) { c.Classes = 0 }), "classes 0"},
		{"vgg16", with(func(c *Config) { c.Depth = 19 }), "has no depth parameter"},
		{"resnet", with(func(c *Config) { c.Depth = 42 }), "depth 42 is not one of [18 34 50 101 152 200]"},
		{"resnet50", with(func(c *Config) { c.Depth = 101 }), "depth 101 is not one of [50]"},
		{"transformer_encoder", with(func(c *Config) { c.Depth = -2 }), "depth -2 is outside"},
		{"vgg16", with(func(c *Config) { c.Width = 48 }), "more than 4 GiB of weights"},
		{"transformer_decoder", with(func(c *Config) { c.Resolution = 40000 }), "more than 4 GiB of weights"},
	}
	for _, tt := range tests {
		g, err := mustModel(t, tt.model).Build(tt.c)
		if err == nil || !strings.Contains(err.Error(), tt.want) || g != nil {
			t.Errorf("%s.Build(%+v) = %v, want an error containing %q", tt.model, tt.c, err, tt.want)
		}
	}
}

func TestResNetDepths(t *testing.T) {
	tests := []struct {
		depth, convs, adds int
		weights            int64 // torchvision's counts; 0: none published
	}{
		{18, 20, 8, 11_689_512},
		{34, 36, 16, 21_797_672},
		{50, 53, 16, 25_557_032},
		{101, 104, 33, 44_549_160},
		{152, 155, 50, 60_192_808},
		{200, 203, 66, 0},
	}
	for _, tt := range tests {
		c := Config{Batch: 1, Resolution: 224, Width: 1, Depth: tt.depth, Classes: 1000}
		if testing.Short() {
			c.Width, c.Resolution = 1.0/16, 32
		}
		g := mustBuild(t, "resnet", c)
		if g.Name != fmt.Sprintf("resnet%d", tt.depth) {
			t.Errorf("name %q", g.Name)
		}
		want := facts{nodes: len(g.Nodes), ops: map[string]int{"Conv": tt.convs, "BatchNormalization": tt.convs, "Add": tt.adds}}
		if !testing.Short() {
			want.weights = tt.weights
		}
		checkFacts(t, g, want)
		// Every stage but the first opens with a stride-2 projection;
		// the bottleneck's first stage also projects (64 → 256 channels).
		var strided, projections int
		for _, n := range g.Nodes {
			if strings.HasSuffix(n.Name, "downsample.conv") {
				projections++
				if s, _ := n.AttrInts("strides"); s[0] == 2 {
					strided++
				}
			}
		}
		wantProj := 4
		if tt.depth < 50 {
			wantProj = 3
		}
		if projections != wantProj || strided != 3 {
			t.Errorf("resnet%d: %d projections (%d strided), want %d (3)", tt.depth, projections, strided, wantProj)
		}
	}
}

func TestTransformerLayers(t *testing.T) {
	for _, tt := range []struct {
		model         string
		perLayer, fix int
	}{
		// Per layer: 3 × (MatMul, Add, Reshape, Transpose), scores,
		// Div, Softmax, context, Transpose, Reshape, output MatMul+Add,
		// residual, LN, FFN 2 × (MatMul, Add), 5-node GELU, residual, LN.
		{"transformer_encoder", 33, 15},
		// Per layer: LN, c_attn MatMul+Add, Split, 3 × (Reshape,
		// Transpose), scores, Div, mask Add, Softmax, context,
		// Transpose, Reshape, c_proj MatMul+Add, residual, LN, c_fc
		// MatMul+Add, 9-node GELU, c_proj MatMul+Add, residual.
		{"transformer_decoder", 35, 7},
	} {
		for _, layers := range []int{1, 3, 24} {
			c := mustModel(t, tt.model).Small
			c.Depth = layers
			g := mustBuild(t, tt.model, c)
			h := histogram(g)
			if len(g.Nodes) != tt.perLayer*layers+tt.fix || h["Softmax"] != layers {
				t.Errorf("%s with %d layers: %d nodes, %d Softmax; want %d, %d", tt.model, layers, len(g.Nodes), h["Softmax"], tt.perLayer*layers+tt.fix, layers)
			}
		}
	}
}

// producer returns the node called name.
func producer(t *testing.T, g *ir.Graph, name string) *ir.Node {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("%s: no node %q", g.Name, name)
	return nil
}

func TestStructure(t *testing.T) {
	t.Run("depthwise", func(t *testing.T) {
		for name, want := range map[string]int{"mobilenet_v1": 13, "mobilenet_v2": 17} {
			g := mustBuild(t, name, mustModel(t, name).Default)
			dw := 0
			for _, n := range g.Nodes {
				if n.Op == "Conv" && n.AttrInt("group", 1) > 1 {
					dw++
					if w := n.Inputs[1].Data.Shape; w[1] != 1 || w[0] != n.AttrInt("group", 1) {
						t.Errorf("%s: %s has weight shape %v and group %d", name, n.Name, w, n.AttrInt("group", 1))
					}
				}
			}
			if dw != want {
				t.Errorf("%s: %d depthwise convs, want %d", name, dw, want)
			}
		}
	})
	t.Run("segnet indices", func(t *testing.T) {
		g := mustBuild(t, "segnet", mustModel(t, "segnet").Small)
		for _, n := range g.Nodes {
			if n.Op != "MaxPool" {
				continue
			}
			idx := n.Outputs[1]
			if len(n.Outputs) != 2 || idx == nil || len(idx.Uses) != 1 || idx.Uses[0].Node.Op != "MaxUnpool" || idx.Uses[0].Index != 1 {
				t.Errorf("segnet: %s's indices do not feed exactly one MaxUnpool", n.Name)
			}
		}
	})
	t.Run("unet skips", func(t *testing.T) {
		g := mustBuild(t, "unet", mustModel(t, "unet").Small)
		for _, n := range g.Nodes {
			if n.Op != "Concat" {
				continue
			}
			// The skip is an encoder level's last Relu, read by that
			// level's MaxPool and by this Concat.
			skip, up := n.Inputs[0], n.Inputs[1]
			if up.Def.Op != "ConvTranspose" || skip.Def.Op != "Relu" || len(skip.Uses) != 2 || skip.Uses[0].Node.Op != "MaxPool" {
				t.Errorf("unet: %s joins %s (%s) and %s (%s)", n.Name, skip, skip.Def.Op, up, up.Def.Op)
			}
		}
	})
	t.Run("fcn8 crops", func(t *testing.T) {
		// The crops depend only on the resolution.
		g := mustBuild(t, "fcn8", Config{Batch: 1, Resolution: 416, Width: 1.0 / 32, Classes: 21})
		for name, want := range map[string][2]int64{"upscore2.crop": {1, 27}, "upscore_pool4.crop": {1, 53}, "upscore8.crop": {4, 420}} {
			n := producer(t, g, name)
			starts, _ := n.Inputs[1].Data.Int64s()
			ends, _ := n.Inputs[2].Data.Int64s()
			if starts[0] != want[0] || ends[0] != want[1] || n.Inputs[0].Def.Op != "ConvTranspose" {
				t.Errorf("fcn8: %s crops [%d,%d) of %s, want [%d,%d)", name, starts[0], ends[0], n.Inputs[0], want[0], want[1])
			}
		}
	})
	t.Run("tied embeddings", func(t *testing.T) {
		for _, name := range []string{"transformer_encoder", "transformer_decoder"} {
			g := mustBuild(t, name, mustModel(t, name).Small)
			var gather, gemm *ir.Node
			for _, n := range g.Nodes {
				switch {
				case n.Op == "Gather" && n.Inputs[1] == g.Inputs[0]:
					gather = n
				case n.Op == "Gemm":
					gemm = n
				}
			}
			if gather == nil || gemm == nil || gemm.Inputs[1] != gather.Inputs[0] || gemm.AttrInt("transB", 0) != 1 {
				t.Errorf("%s: the LM head does not reuse the token embedding table", name)
			}
			if g.Inputs[0].Name != "input_ids" || g.Inputs[0].Type.DType != ir.Int64 {
				t.Errorf("%s: input %v", name, g.Inputs[0])
			}
		}
	})
	t.Run("causal mask", func(t *testing.T) {
		c := mustModel(t, "transformer_decoder").Small
		g := mustBuild(t, "transformer_decoder", c)
		for _, v := range g.Params {
			if v.Name != "attention.causal_mask" {
				continue
			}
			vals, _ := v.Data.Float64s()
			T := c.Resolution
			for i := range T {
				for j := range T {
					if want := map[bool]float64{true: 0, false: -1e9}[j <= i]; float32(vals[i*T+j]) != float32(want) {
						t.Fatalf("mask[%d][%d] = %v, want %v", i, j, vals[i*T+j], want)
					}
				}
			}
			if len(v.Uses) != c.Depth {
				t.Errorf("mask has %d uses, want one per layer (%d)", len(v.Uses), c.Depth)
			}
			return
		}
		t.Errorf("no causal mask")
	})
}

func TestChain(t *testing.T) {
	for _, n := range []int{-3, 0, 1, 2, 7, 1000} {
		g := Chain(n, 3)
		checkGraph(t, g)
		want := max(n, 1)
		if len(g.Nodes) != want {
			t.Errorf("Chain(%d) has %d nodes", n, len(g.Nodes))
		}
		for i, nd := range g.Nodes {
			if len(nd.Inputs[0].Uses) != 1 || (i > 0 && nd.Inputs[0].Def != g.Nodes[i-1]) {
				t.Fatalf("Chain(%d): node %s is not a chain link", n, nd.Name)
			}
		}
	}
}

func TestLargeGraph(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 10, 999, 10000} {
		g := LargeGraph(n, 11)
		checkGraph(t, g)
		if len(g.Nodes) != n {
			t.Errorf("LargeGraph(%d) has %d nodes", n, len(g.Nodes))
		}
	}
	g := LargeGraph(10000, 1)
	h := histogram(g)
	for _, op := range []string{"Conv", "Relu", "Add", "Concat", "Reshape"} {
		if h[op] < 1000 {
			t.Errorf("LargeGraph(10000) has only %d %s nodes: %v", h[op], op, h)
		}
	}
	// Some skips reach far back: an Add or Concat reading a value made
	// more than 100 nodes earlier.
	pos := make([]int, g.NumNodes())
	for i, n := range g.Nodes {
		pos[n.ID] = i
	}
	long := 0
	for i, n := range g.Nodes {
		if (n.Op == "Add" || n.Op == "Concat") && n.Inputs[1].Def != nil && i-pos[n.Inputs[1].Def.ID] > 100 {
			long++
		}
	}
	if long < 50 {
		t.Errorf("LargeGraph(10000) has only %d long skips", long)
	}
}

func TestRandomDAG(t *testing.T) {
	for _, n := range []int{-1, 1, 2, 5, 9, 300} {
		for seed := uint64(1); seed <= 5; seed++ {
			g := RandomDAG(n, seed)
			checkGraph(t, g)
			if len(g.Nodes) != max(n, 1) {
				t.Errorf("RandomDAG(%d, %d) has %d nodes", n, seed, len(g.Nodes))
			}
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
				t.Fatalf("RandomDAG(%d, %d): %v", n, seed, err)
			}
		}
	}
	if fingerprint(RandomDAG(200, 3), true) != fingerprint(RandomDAG(200, 3), true) {
		t.Errorf("RandomDAG: two builds differ")
	}
	// Branching: some node's output has readers that are not consecutive.
	h := histogram(RandomDAG(300, 1))
	for _, op := range []string{"Conv", "Relu", "Add", "Concat", "Reshape", "MaxPool"} {
		if h[op] < 10 {
			t.Errorf("RandomDAG(300) has only %d %s nodes: %v", h[op], op, h)
		}
	}
}
