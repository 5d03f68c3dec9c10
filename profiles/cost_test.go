package profiles_test

import (
	"math"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/profiles"
)

// graph parses an IR text graph body.
func graph(t *testing.T, body string) *ir.Graph {
	t.Helper()
	g, err := irtext.Parse("test.ir", "graph g {\n"+body+"\n}")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// node returns the node named name (or, when no node has that name, the
// first node of op name).
func node(t *testing.T, g *ir.Graph, name string) *ir.Node {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	for _, n := range g.Nodes {
		if n.Op == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return nil
}

func load(t *testing.T, name string) *profiles.Profile {
	t.Helper()
	p, err := profiles.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func cost(t *testing.T, p *profiles.Profile, n *ir.Node) profiles.Cost {
	t.Helper()
	c, err := p.Cost(n)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.Seconds > 0) || math.IsInf(c.Seconds, 0) || c.FLOPs < 0 || c.BytesRead < 0 || c.BytesWritten < 0 {
		t.Fatalf("%s: implausible cost %+v", n, c)
	}
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

const tf = profiles.TranscendentalFLOPs

func TestFLOPs(t *testing.T) {
	p := load(t, "v100-16gb")
	for _, tt := range []struct {
		name, body string
		flops      float64
		read, writ int64 // bytes; -1: not checked
	}{
		{"3x3 conv, the hand-computed case", `
  input x:f32[1,64,56,56]
  input w:f32[64,64,3,3]
  y:f32[1,64,56,56] = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]}
  return y`,
			// 2·N·Cout·Hout·Wout·(Cin/group)·kH·kW
			231_211_008, (64*56*56 + 64*64*9) * 4, 64 * 56 * 56 * 4},
		{"conv with bias", `
  input x:f32[1,64,56,56]
  input w:f32[64,64,3,3]
  input b:f32[64]
  y:f32[1,64,56,56] = Conv(x, w, b) {kernel_shape=[3,3], pads=[1,1,1,1]}
  return y`,
			231_211_008 + 64*56*56, (64*56*56 + 64*64*9 + 64) * 4, 64 * 56 * 56 * 4},
		{"depthwise strided conv", `
  input x:f32[2,32,56,56]
  input w:f32[32,1,3,3]
  y:f32[2,32,28,28] = Conv(x, w) {group=32, kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}
  return y`,
			2 * 2 * 32 * 28 * 28 * 1 * 9, -1, -1},
		{"conv transpose", `
  input x:f32[1,16,8,8]
  input w:f32[16,8,2,2]
  y:f32[1,8,16,16] = ConvTranspose(x, w) {strides=[2,2]}
  return y`,
			2 * 16 * 8 * 8 * 8 * 2 * 2, -1, -1},
		{"batched matmul", `
  input a:f32[8,128,64]
  input b:f32[8,64,32]
  y:f32[8,128,32] = MatMul(a, b)
  return y`,
			2 * 8 * 128 * 32 * 64, (8*128*64 + 8*64*32) * 4, 8 * 128 * 32 * 4},
		{"broadcast matmul", `
  input a:f32[2,1,4,5]
  input b:f32[3,5,6]
  y:f32[2,3,4,6] = MatMul(a, b)
  return y`,
			2 * (2 * 3 * 4 * 6) * 5, -1, -1},
		{"gemm transB with bias", `
  input a:f32[4,8]
  input b:f32[16,8]
  input c:f32[16]
  y:f32[4,16] = Gemm(a, b, c) {transB=1}
  return y`,
			2*4*16*8 + 4*16, -1, -1},
		{"einsum batched matmul", `
  input a:f32[8,128,64]
  input b:f32[8,64,32]
  y:f32[8,128,32] = Einsum(a, b) {equation="bij,bjk->bik"}
  return y`,
			2 * 8 * 128 * 32 * 64, -1, -1},
		{"einsum with ellipsis", `
  input a:f32[2,3,4,5]
  input b:f32[5,6]
  y:f32[2,3,4,6] = Einsum(a, b) {equation="...ij,jk->...ik"}
  return y`,
			2 * 2 * 3 * 4 * 5 * 6, -1, -1},
		{"lstm", `
  input x:f32[10,2,16]
  input w:f32[1,128,16]
  input r:f32[1,128,32]
  input b:f32[1,256]
  y:f32[10,1,2,32], yh:f32[1,2,32] = LSTM(x, w, r, b) {hidden_size=32}
  return y, yh`,
			// per step: gate matmuls 2·batch·4H·(I+H) = 2·2·128·48 = 24576,
			// biases 2·batch·4H = 512, pointwise batch·H·(3 sigmoids + 2 tanh
			// + 4) = 64·(3·(T+2) + 2T + 4) = 64·50 = 3200; × 10 steps.
			10 * (2*2*128*48 + 2*2*128 + 2*32*(3*(tf+2)+2*tf+4)), -1, -1},
		{"bidirectional gru", `
  input x:f32[5,3,8]
  input w:f32[2,48,8]
  input r:f32[2,48,16]
  y:f32[5,2,3,16] = GRU(x, w, r) {hidden_size=16, direction="bidirectional"}
  return y`,
			5 * 2 * (2*3*48*(8+16) + 3*16*(2*(tf+2)+tf+6)), -1, -1},
		{"relu", `
  input x:f32[1,64,56,56]
  y:f32[1,64,56,56] = Relu(x)
  return y`,
			64 * 56 * 56, 64 * 56 * 56 * 4, 64 * 56 * 56 * 4},
		{"tanh is transcendental", `
  input x:f32[4,100]
  y:f32[4,100] = Tanh(x)
  return y`,
			400 * tf, -1, -1},
		{"broadcast add reads each input once", `
  input x:f32[4,100]
  input b:f32[100]
  y:f32[4,100] = Add(x, b)
  z:f32[4,100] = Mul(y, y)
  return z`,
			400, (400 + 100) * 4, 400 * 4},
		{"softmax", `
  input x:f32[8,1000]
  y:f32[8,1000] = Softmax(x) {axis=-1}
  return y`,
			8000 * profiles.SoftmaxFLOPs, -1, -1},
		{"layer norm", `
  input x:f32[2,128,768]
  input s:f32[768]
  input b:f32[768]
  y:f32[2,128,768] = LayerNormalization(x, s, b) {axis=-1}
  return y`,
			2 * 128 * 768 * profiles.NormFLOPs, -1, -1},
		{"batch norm, inference", `
  input x:f32[1,64,56,56]
  input s:f32[64]
  input b:f32[64]
  input m:f32[64]
  input v:f32[64]
  y:f32[1,64,56,56] = BatchNormalization(x, s, b, m, v)
  return y`,
			2 * 64 * 56 * 56, -1, -1},
		{"reduce mean", `
  input x:f32[2,128,768]
  y:f32[2,128,1] = ReduceMean(x) {axes=[-1]}
  return y`,
			2*128*768 + 2*128, -1, -1},
		{"max pool", `
  input x:f32[1,64,56,56]
  y:f32[1,64,28,28] = MaxPool(x) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}
  return y`,
			64 * 28 * 28 * 9, -1, -1},
		{"global average pool", `
  input x:f32[1,2048,7,7]
  y:f32[1,2048,1,1] = GlobalAveragePool(x)
  return y`,
			2048 * 49, -1, -1},
		{"nearest resize", `
  input x:f32[1,16,8,8]
  y:f32[1,16,16,16] = Resize(x) {mode="nearest"}
  return y`,
			16 * 16 * 16, -1, -1},
		{"linear resize", `
  input x:f32[1,16,8,8]
  y:f32[1,16,16,16] = Resize(x) {mode="linear"}
  return y`,
			16 * 16 * 16 * 2 * 4, -1, -1},
		{"transpose moves bytes only", `
  input x:f32[1,64,56,56]
  y:f32[1,56,56,64] = Transpose(x) {perm=[0,2,3,1]}
  return y`,
			0, 64 * 56 * 56 * 4, 64 * 56 * 56 * 4},
		{"gather reads the rows it returns", `
  input table:f32[30000,768]
  input ids:i64[1,128]
  y:f32[1,128,768] = Gather(table, ids)
  return y`,
			0, (128*768)*4 + 128*8, 128 * 768 * 4},
		{"reshape is a view", `
  input x:f32[1,64,56,56]
  input s:i64[2]
  y:f32[64,3136] = Reshape(x, s)
  return y`,
			0, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := graph(t, tt.body)
			c := cost(t, p, g.Nodes[0])
			if !near(c.FLOPs, tt.flops) {
				t.Errorf("FLOPs = %.0f, want %.0f", c.FLOPs, tt.flops)
			}
			if tt.read >= 0 && c.BytesRead != tt.read {
				t.Errorf("BytesRead = %d, want %d", c.BytesRead, tt.read)
			}
			if tt.writ >= 0 && c.BytesWritten != tt.writ {
				t.Errorf("BytesWritten = %d, want %d", c.BytesWritten, tt.writ)
			}
			if c.Source != profiles.SourceDatasheet || c.Note != "" {
				t.Errorf("Source %q, Note %q", c.Source, c.Note)
			}
		})
	}
}

func TestRooflineRegimes(t *testing.T) {
	p := load(t, "v100-16gb")
	dev := p.Device
	g := graph(t, `
  input x:f32[1,64,56,56]
  input y:f32[1,64,56,56]
  input a:f32[4096,4096]
  input b:f32[4096,4096]
  input h:f16[4096,4096]
  input q:u8[256,256]
  input r:u8[256,256]
  s:f32[1,64,56,56] = Add(x, y) name="add"
  c:f32[4096,4096] = MatMul(a, b) name="gemm"
  e:f16[4096,4096] = MatMul(h, h) name="gemm16"
  i:i32[256,256] = MatMulInteger(q, r) name="int8"
  v:f32[64,3136] = Flatten(x) name="view"
  return s, c, e, i, v`)

	// An elementwise op moves 12 bytes per FLOP: bandwidth-bound.
	add := cost(t, p, node(t, g, "add"))
	elems := float64(64 * 56 * 56)
	if add.Bound != profiles.BoundMemory || !near(add.Seconds, dev.LaunchOverhead+12*elems/dev.MemoryBandwidth) {
		t.Errorf("Add: %+v", add)
	}
	// A 4096³ f32 GEMM does 2·4096³ FLOPs on 192 MiB: compute-bound on the
	// CUDA cores (Volta has no TF32).
	gemm := cost(t, p, node(t, g, "gemm"))
	if gemm.Bound != profiles.BoundCompute || !near(gemm.Seconds, dev.LaunchOverhead+2*math.Pow(4096, 3)/15.7e12) {
		t.Errorf("f32 GEMM: %+v", gemm)
	}
	// In f16 it runs on the tensor cores.
	g16 := cost(t, p, node(t, g, "gemm16"))
	if g16.Bound != profiles.BoundCompute || !near(g16.Seconds, dev.LaunchOverhead+2*math.Pow(4096, 3)/125e12) {
		t.Errorf("f16 GEMM: %+v", g16)
	}
	// u8 has no rate of its own: it takes i8's (DP4A).
	i8 := cost(t, p, node(t, g, "int8"))
	if want := dev.LaunchOverhead + math.Max(2*math.Pow(256, 3)/62.8e12, float64(i8.Bytes())/dev.MemoryBandwidth); !near(i8.Seconds, want) {
		t.Errorf("u8 MatMulInteger: %g s, want %g", i8.Seconds, want)
	}
	// A view costs the launch overhead alone.
	view := cost(t, p, node(t, g, "view"))
	if view.Bound != profiles.BoundOverhead || view.Seconds != dev.LaunchOverhead || view.Bytes() != 0 {
		t.Errorf("Flatten: %+v", view)
	}
}

// fittedProfile is the built-in V100 plus a fitted roofline and one
// measured entry for the conv of lookupGraph.
const lookupGraph = `
  input x:f32[1,64,56,56]
  input x2:f32[1,64,28,28]
  input w:f32[64,64,3,3]
  y:f32[1,64,56,56] = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} name="measured_conv"
  y2:f32[1,64,28,28] = Conv(x2, w) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} name="other_conv"
  z:f32[1,64,56,56] = com.example.Magic(y) name="custom"
  return y2, z`

func TestLookupOrder(t *testing.T) {
	g := graph(t, lookupGraph)
	measuredConv, otherConv, custom := node(t, g, "measured_conv"), node(t, g, "other_conv"), node(t, g, "custom")

	p := load(t, "v100-16gb")
	p.Fitted = &profiles.Fitted{FLOPsPerSecond: 10e12, BytesPerSecond: 700e9, OverheadSeconds: 8e-6, Source: "test"}
	m, err := profiles.NewMeasured(measuredConv)
	if err != nil {
		t.Fatal(err)
	}
	m.Seconds, m.Repeats = 123e-6, 10
	p.Measured = append(p.Measured, m)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	// The measured entry survives a trip through the file format.
	out, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if p, err = profiles.Parse(out, "lab.yaml"); err != nil {
		t.Fatal(err)
	}

	// 1. The exact signature was measured.
	c := cost(t, p, measuredConv)
	if c.Source != profiles.SourceMeasured || c.Seconds != 123e-6 || c.FLOPs != 231_211_008 {
		t.Errorf("measured conv: %+v", c)
	}
	// 2. Another shape falls back to the fitted roofline.
	c = cost(t, p, otherConv)
	flops := 231_211_008.0 / 4
	if want := 8e-6 + flops/10e12; c.Source != profiles.SourceFitted || !near(c.Seconds, want) || c.Bound != profiles.BoundCompute {
		t.Errorf("other conv: %+v, want %g s from the fitted roofline", c, want)
	}
	// An unknown op is costed by its bytes on the datasheet roofline even
	// when a fitted roofline exists.
	c = cost(t, p, custom)
	bytes := float64(2 * 64 * 56 * 56 * 4)
	if want := p.Device.LaunchOverhead + bytes/p.Device.MemoryBandwidth; c.Source != profiles.SourceDatasheet || !near(c.Seconds, want) ||
		c.FLOPs != 0 || !strings.Contains(c.Note, "unknown op com.example.Magic") {
		t.Errorf("custom op: %+v, want %g s", c, want)
	}
	// 3. Without the fitted roofline, the datasheet answers.
	p.Fitted = nil
	c = cost(t, p, otherConv)
	if want := p.Device.LaunchOverhead + flops/15.7e12; c.Source != profiles.SourceDatasheet || !near(c.Seconds, want) {
		t.Errorf("other conv, datasheet: %+v, want %g s", c, want)
	}
	if c := cost(t, p, measuredConv); c.Source != profiles.SourceMeasured {
		t.Errorf("a measurement wins over the datasheet too: %+v", c)
	}
	// A measured custom op wins over the bytes-only estimate.
	m, err = profiles.NewMeasured(custom)
	if err != nil {
		t.Fatal(err)
	}
	m.Seconds, m.Repeats = 42e-6, 1
	p.Measured = append(p.Measured, m)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := cost(t, p, custom); c.Source != profiles.SourceMeasured || c.Seconds != 42e-6 {
		t.Errorf("measured custom op: %+v", c)
	}
}

func TestSignature(t *testing.T) {
	g := graph(t, `
  input x:f32[1,3,8,8]
  input w:f32[4,3,3,3]
  input lo:f32[]
  y:f32[1,4,8,8] = Conv(x, w, _) {strides=[1,1], auto_pad="SAME_UPPER", kernel_shape=[3,3], alpha=0.5}
  z:f32[1,4,8,8] = Clip(y, lo, _)
  return z`)
	m, err := profiles.NewMeasured(g.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `alpha=0.5, auto_pad="SAME_UPPER", kernel_shape=[3,3], strides=[1,1]`; m.Attrs != want {
		t.Errorf("attrs %s, want %s", m.Attrs, want)
	}
	if len(m.Shapes) != 3 || m.Shapes[2] != nil || m.DType != ir.Float32 || m.Op != "Conv" {
		t.Errorf("signature %+v", m)
	}
	clip, err := profiles.NewMeasured(g.Nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	if clip.Shapes[1] == nil || len(clip.Shapes[1]) != 0 || clip.Shapes[2] != nil {
		t.Errorf("a scalar input must be an empty shape and an absent one nil: %#v", clip.Shapes)
	}
}

func TestUnknownSizesNameTheNode(t *testing.T) {
	g := graph(t, `
  input x:f32[batch,64,56,56]
  input w:f32[64,64,3,3]
  y:f32[batch,64,56,56] = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]} name="conv_3"
  return y`)
	_, err := load(t, "v100-16gb").Cost(g.Nodes[0])
	if err == nil || !strings.Contains(err.Error(), `node "conv_3" (Conv): input 0 "x" has no static size (f32[batch,64,56,56])`) {
		t.Errorf("Cost = %v", err)
	}
	var nilp *profiles.Profile
	if _, err := nilp.Cost(g.Nodes[0]); err == nil {
		t.Errorf("Cost on a nil profile succeeded")
	}
	if _, err := (&profiles.Profile{}).Cost(g.Nodes[0]); err == nil {
		t.Errorf("Cost on an empty profile succeeded")
	}
}

func TestControlFlow(t *testing.T) {
	p := load(t, "v100-16gb")
	g := graph(t, `
  input x:f32[1000]
  input c:bool[]
  param m = i64[]{5}
  param t = bool[]{true}
  y:f32[1000] = If(c) captures(x) {
    then_branch=graph then {
      a:f32[1000] = Exp(x)
      return a
    },
    else_branch=graph else {
      b:f32[1000] = Neg(x)
      return b
    },
  } name="if"
  z:f32[1000] = Loop(m, t, x) {
    body=graph body {
      input i:i64[]
      input cond:bool[]
      input v:f32[1000]
      w:f32[1000] = Relu(v)
      return cond, w
    },
  } name="loop"
  return y, z`)
	dev := p.Device
	exp := dev.LaunchOverhead + 8000.0/dev.MemoryBandwidth // Exp: 8000 B, 8000 FLOPs, memory-bound
	c := cost(t, p, node(t, g, "if"))
	if !near(c.Seconds, dev.LaunchOverhead+exp) || c.FLOPs != 1000*tf || c.Source != profiles.SourceDatasheet {
		t.Errorf("If: %+v, want the costlier branch (Exp) plus one overhead", c)
	}
	relu := dev.LaunchOverhead + 8000.0/dev.MemoryBandwidth
	c = cost(t, p, node(t, g, "loop"))
	if !near(c.Seconds, dev.LaunchOverhead+5*relu) || c.FLOPs != 5000 || c.Note != "" {
		t.Errorf("Loop: %+v, want 5 iterations of Relu plus one overhead", c)
	}
}

func TestSanityAcrossDevices(t *testing.T) {
	// A ResNet stage-3 3×3 conv, and a transformer's f16 GEMM.
	g := graph(t, `
  input x:f32[8,256,14,14]
  input w:f32[256,256,3,3]
  input a:f16[2048,4096]
  input b:f16[4096,4096]
  y:f32[8,256,14,14] = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1]} name="conv"
  z:f16[2048,4096] = MatMul(a, b) name="gemm"
  return y, z`)
	order := []string{"h100-80gb", "a100-80gb", "v100-16gb", "jetson-orin-nano-8gb", "rpi4-4gb", "stm32h7"}
	for _, name := range []string{"conv", "gemm"} {
		n := node(t, g, name)
		prev := 0.0
		for _, dev := range order {
			c := cost(t, load(t, dev), n)
			if c.Seconds <= prev {
				t.Errorf("%s: %s takes %g s, not more than the faster device before it (%g s)", name, dev, c.Seconds, prev)
			}
			prev = c.Seconds
		}
	}
	conv := node(t, g, "conv")
	v100, rpi := cost(t, load(t, "v100-16gb"), conv), cost(t, load(t, "rpi4-4gb"), conv)
	if rpi.Seconds < 100*v100.Seconds {
		t.Errorf("the conv takes %g s on a Raspberry Pi 4 and %g s on a V100: expected the Pi to be over 100× slower", rpi.Seconds, v100.Seconds)
	}
}
