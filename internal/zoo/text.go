package zoo

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/remat-compile/remat/ir"
)

// Transformers: input "input_ids" int64 [B,T] with ids in [0, Classes);
// output logits [B,T,Classes]. Width scales the head dimension (64·Width,
// rounded, at least 1); the head count stays at 12, so d = 12·head_dim.

// transformer holds the sizes shared by the layers of one graph.
type transformer struct {
	b                 *builder
	batch, seq, vocab int64
	d, heads, headDim int
	eps               float32
}

func newTransformer(b *builder, c Config, eps float32) *transformer {
	dh := scaled(64, c.Width)
	return &transformer{b: b, batch: int64(c.Batch), seq: int64(c.Resolution), vocab: int64(c.Classes),
		d: 12 * dh, heads: 12, headDim: dh, eps: eps}
}

// linear is x·W + b with W of shape [in, out] (MatMul then Add), Xavier
// initialised: nodes "<name>.matmul" and "<name>.add".
func (t *transformer) linear(name string, x *ir.Value, in, out int) *ir.Value {
	b := t.b
	w := b.sym(name+".weight", xavierUniform(in, out), int64(in), int64(out))
	x = b.op("MatMul", name+".matmul", []*ir.Value{x, w})
	return b.op("Add", name+".add", []*ir.Value{x, b.sym(name+".bias", 0.02, int64(out))})
}

func (t *transformer) layerNorm(name string, x *ir.Value) *ir.Value {
	b := t.b
	d := int64(t.d)
	return b.op("LayerNormalization", name, []*ir.Value{x,
		b.uniform(name+".weight", 0.9, 1.1, d), b.sym(name+".bias", 0.02, d),
	}, ir.IntAttr("axis", -1), ir.FloatAttr("epsilon", t.eps))
}

// embed gathers token and position embeddings and adds them; it returns
// the sum and the token embedding table (for a tied output layer).
func (t *transformer) embed(tokName, posName, prefix string, ids *ir.Value) (x, table *ir.Value) {
	b := t.b
	a := 0.02 * math.Sqrt(3) // standard deviation 0.02, as BERT and GPT-2
	table = b.sym(tokName, a, t.vocab, int64(t.d))
	pos := b.sym(posName, a, t.seq, int64(t.d))
	positions := make([]int64, t.seq)
	for i := range positions {
		positions[i] = int64(i)
	}
	tok := b.op("Gather", prefix+"token", []*ir.Value{table, ids})
	p := b.op("Gather", prefix+"position", []*ir.Value{pos, b.ints(prefix+"position_ids", positions...)})
	return b.op("Add", prefix+"add", []*ir.Value{tok, p}), table
}

// attention is scaled dot-product attention of q, k, v ([B,T,d] each) over
// 12 heads, with an optional additive mask [T,T]; it returns [B,T,d].
// Nodes are named "<p>q.reshape", "<p>scores", "<p>softmax", ….
func (t *transformer) attention(p string, q, k, v, mask *ir.Value) *ir.Value {
	b := t.b
	heads := b.ints("shape.heads", t.batch, t.seq, int64(t.heads), int64(t.headDim))
	split := func(name string, x *ir.Value, perm ...int64) *ir.Value {
		x = b.op("Reshape", p+name+".reshape", []*ir.Value{x, heads})
		return b.op("Transpose", p+name+".transpose", []*ir.Value{x}, ir.IntsAttr("perm", perm...))
	}
	q = split("q", q, 0, 2, 1, 3) // [B,h,T,dh]
	k = split("k", k, 0, 2, 3, 1) // [B,h,dh,T]
	v = split("v", v, 0, 2, 1, 3) // [B,h,T,dh]
	s := b.op("MatMul", p+"scores", []*ir.Value{q, k})
	s = b.op("Div", p+"scale", []*ir.Value{s, b.scalar("attention.scale", float32(math.Sqrt(float64(t.headDim))))})
	if mask != nil {
		s = b.op("Add", p+"mask", []*ir.Value{s, mask})
	}
	s = b.op("Softmax", p+"softmax", []*ir.Value{s}, ir.IntAttr("axis", -1))
	x := b.op("MatMul", p+"context", []*ir.Value{s, v})
	x = b.op("Transpose", p+"context.transpose", []*ir.Value{x}, ir.IntsAttr("perm", 0, 2, 1, 3))
	return b.op("Reshape", p+"context.reshape", []*ir.Value{x, b.ints("shape.hidden", t.batch, t.seq, int64(t.d))})
}

// geluErf is x·½·(1 + erf(x/√2)), BERT's GELU (the Gelu operator needs
// opset 20).
func (t *transformer) geluErf(p string, x *ir.Value) *ir.Value {
	b := t.b
	y := b.op("Div", p+"div", []*ir.Value{x, b.scalar("gelu.sqrt2", math.Sqrt2)})
	y = b.op("Erf", p+"erf", []*ir.Value{y})
	y = b.op("Add", p+"add", []*ir.Value{y, b.scalar("gelu.one", 1)})
	y = b.op("Mul", p+"mul", []*ir.Value{x, y})
	return b.op("Mul", p+"half", []*ir.Value{y, b.scalar("gelu.half", 0.5)})
}

// geluTanh is ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's GELU.
func (t *transformer) geluTanh(p string, x *ir.Value) *ir.Value {
	b := t.b
	y := b.op("Mul", p+"square", []*ir.Value{x, x})
	y = b.op("Mul", p+"cube", []*ir.Value{y, x})
	y = b.op("Mul", p+"cube.scale", []*ir.Value{y, b.scalar("gelu.coef", 0.044715)})
	y = b.op("Add", p+"inner", []*ir.Value{x, y})
	y = b.op("Mul", p+"inner.scale", []*ir.Value{y, b.scalar("gelu.sqrt_2_over_pi", float32(math.Sqrt(2/math.Pi)))})
	y = b.op("Tanh", p+"tanh", []*ir.Value{y})
	y = b.op("Add", p+"add", []*ir.Value{y, b.scalar("gelu.one", 1)})
	y = b.op("Mul", p+"mul", []*ir.Value{x, y})
	return b.op("Mul", p+"half", []*ir.Value{y, b.scalar("gelu.half", 0.5)})
}

// logits maps hidden states [B,T,d] to [B,T,vocab] through the token
// embedding table (tied weights): Reshape to [B·T,d], Gemm with transB and
// an optional bias, Reshape back.
func (t *transformer) logits(name string, x, table, bias *ir.Value) *ir.Value {
	b := t.b
	x = b.op("Reshape", name+".flatten", []*ir.Value{x, b.ints("shape.tokens", t.batch*t.seq, int64(t.d))})
	in := []*ir.Value{x, table}
	if bias != nil {
		in = append(in, bias)
	}
	x = b.op("Gemm", name, in, ir.IntAttr("transB", 1))
	return b.op("Reshape", name+".unflatten", []*ir.Value{x, b.ints("shape.logits", t.batch, t.seq, t.vocab)})
}

func encoderModel() Model {
	const name = "transformer_encoder"
	doc := "Transformer encoder shaped like BERT-base (Devlin et al. 2019) with its masked-language-model head: token and position embeddings (Gather of int64 ids; Resolution positions), LayerNormalization, Depth post-LN layers (default 12) of 12-head self-attention built from MatMul, Reshape, Transpose, Div, Softmax, then a 4×d feed-forward layer with the erf form of GELU, each sublayer with a residual Add and LayerNormalization; the MLM transform (dense, GELU, LayerNormalization) and output logits through the tied token embedding (Gemm with transB) plus a bias. Classes is the vocabulary size. There is no attention mask input (every sequence is full length), no token-type embedding and no dropout. Default: BERT-base, d = 768, T = 128, vocabulary 30522, 109M parameters (BERT-base's 110M counts a 512-row position table)."
	s := spec{name: name, depthRange: [2]int{1, 1024}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 12)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				t := newTransformer(b, c, 1e-12)
				ids := b.input("input_ids", ir.Int64, t.batch, t.seq)
				x, table := t.embed("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight", "embeddings.", ids)
				x = t.layerNorm("embeddings.layernorm", x)
				d := t.d
				for i := range c.Depth {
					p := fmt.Sprintf("encoder.layer.%d.", i)
					q := t.linear(p+"attention.self.query", x, d, d)
					k := t.linear(p+"attention.self.key", x, d, d)
					v := t.linear(p+"attention.self.value", x, d, d)
					a := t.attention(p+"attention.self.", q, k, v, nil)
					a = t.linear(p+"attention.output.dense", a, d, d)
					x = t.layerNorm(p+"attention.output.layernorm", b.op("Add", p+"attention.output.residual", []*ir.Value{a, x}))
					h := t.linear(p+"intermediate.dense", x, d, 4*d)
					h = t.geluErf(p+"intermediate.gelu.", h)
					h = t.linear(p+"output.dense", h, 4*d, d)
					x = t.layerNorm(p+"output.layernorm", b.op("Add", p+"output.residual", []*ir.Value{h, x}))
				}
				x = t.linear("cls.transform.dense", x, d, d)
				x = t.layerNorm("cls.transform.layernorm", t.geluErf("cls.transform.gelu.", x))
				x = t.logits("cls.decoder", x, table, b.sym("cls.decoder.bias", 0.02, t.vocab))
				return x
			})
		},
		Default: Config{Batch: 1, Resolution: 128, Width: 1, Depth: 12, Classes: 30522},
		Small:   Config{Batch: 1, Resolution: 16, Width: 1.0 / 16, Depth: 1, Classes: 64},
	}
}

func decoderModel() Model {
	const name = "transformer_decoder"
	doc := "Transformer decoder shaped like GPT-2 small (Radford et al. 2019): token and position embeddings (Gather; Resolution positions), Depth pre-LN blocks (default 12), each LayerNormalization, a fused QKV projection split three ways (Split), 12-head causal self-attention (MatMul, Reshape, Transpose, Div, Add of a constant lower-triangular additive mask holding 0 and -1e9, Softmax) with an output projection and residual Add, then LayerNormalization, a 4×d feed-forward layer with GPT-2's tanh GELU and a residual Add; a final LayerNormalization and the LM head through the tied token embedding (Gemm with transB, no bias). Classes is the vocabulary size. No dropout, no key/value cache. Default: GPT-2 small, d = 768, T = 1024, vocabulary 50257, 124M parameters."
	s := spec{name: name, depthRange: [2]int{1, 1024}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 12)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				t := newTransformer(b, c, 1e-5)
				ids := b.input("input_ids", ir.Int64, t.batch, t.seq)
				x, table := t.embed("wte.weight", "wpe.weight", "embeddings.", ids)
				mask := causalMask(b, "attention.causal_mask", int(t.seq))
				d := t.d
				dd := int64(d)
				for i := range c.Depth {
					p := fmt.Sprintf("h.%d.", i)
					h := t.layerNorm(p+"ln_1", x)
					h = t.linear(p+"attn.c_attn", h, d, 3*d)
					qkv := b.opN("Split", p+"attn.split", []*ir.Value{h, b.ints("attention.split", dd, dd, dd)},
						[]string{p + "attn.q", p + "attn.k", p + "attn.v"}, ir.IntAttr("axis", 2))
					h = t.attention(p+"attn.", qkv.Outputs[0], qkv.Outputs[1], qkv.Outputs[2], mask)
					h = t.linear(p+"attn.c_proj", h, d, d)
					x = b.op("Add", p+"attn.residual", []*ir.Value{x, h})
					h = t.layerNorm(p+"ln_2", x)
					h = t.linear(p+"mlp.c_fc", h, d, 4*d)
					h = t.geluTanh(p+"mlp.gelu.", h)
					h = t.linear(p+"mlp.c_proj", h, 4*d, d)
					x = b.op("Add", p+"mlp.residual", []*ir.Value{x, h})
				}
				x = t.layerNorm("ln_f", x)
				return t.logits("lm_head", x, table, nil)
			})
		},
		Default: Config{Batch: 1, Resolution: 1024, Width: 1, Depth: 12, Classes: 50257},
		Small:   Config{Batch: 1, Resolution: 16, Width: 1.0 / 16, Depth: 1, Classes: 64},
	}
}

// causalMask is a [T,T] float32 constant: 0 where the key position is at
// most the query position, -1e9 above the diagonal.
func causalMask(b *builder, name string, seq int) *ir.Value {
	v := b.tensor(name, ir.Float32, []int64{int64(seq), int64(seq)})
	if raw := v.Data.Raw; raw != nil {
		neg := math.Float32bits(-1e9)
		for i := range seq {
			for j := i + 1; j < seq; j++ {
				binary.LittleEndian.PutUint32(raw[4*(i*seq+j):], neg)
			}
		}
	}
	return v
}

func lstmModel() Model {
	const name = "lstm"
	doc := "A stacked LSTM classifier: input \"input\" float32 [B,T,H] (batch first, T = Resolution, H = 1024·Width), Transpose to ONNX's [T,B,H], Depth ONNX LSTM layers (default 4, forward, hidden size H, gates initialised uniform on ±1/√H), each followed by a Squeeze of the direction axis, and a Gemm on the last layer's final hidden state to Classes logits [B,Classes]. Default: 4 layers of 1024 units over 256 steps, 33.6M parameters."
	s := spec{name: name, depthRange: [2]int{1, 1024}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 4)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				h := scaled(1024, c.Width)
				hh := int64(h)
				x := b.input("input", ir.Float32, int64(c.Batch), int64(c.Resolution), hh)
				x = b.op("Transpose", "input.transpose", []*ir.Value{x}, ir.IntsAttr("perm", 1, 0, 2))
				a := 1 / math.Sqrt(float64(h))
				for i := range c.Depth {
					p := fmt.Sprintf("lstm.%d", i)
					in := []*ir.Value{x, b.sym(p+".W", a, 1, 4*hh, hh), b.sym(p+".R", a, 1, 4*hh, hh), b.sym(p+".B", a, 1, 8*hh)}
					attr := ir.IntAttr("hidden_size", hh)
					if i < c.Depth-1 {
						// Y [T,1,B,H] → [T,B,H]
						y := b.opN("LSTM", p, in, []string{p + ".Y"}, attr).Outputs[0]
						x = b.op("Squeeze", p+".squeeze", []*ir.Value{y, b.ints("axes.1", 1)})
					} else {
						// Y_h [1,B,H] → [B,H]
						y := b.opN("LSTM", p, in, []string{"", p + ".Y_h"}, attr).Outputs[1]
						x = b.op("Squeeze", p+".squeeze", []*ir.Value{y, b.ints("axes.0", 0)})
					}
				}
				return b.gemm("fc", x, h, c.Classes, lecunUniform(h))
			})
		},
		Default: Config{Batch: 1, Resolution: 256, Width: 1, Depth: 4, Classes: 10},
		Small:   Config{Batch: 1, Resolution: 8, Width: 1.0 / 64, Depth: 2, Classes: 4},
	}
}
