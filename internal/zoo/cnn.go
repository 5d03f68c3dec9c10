package zoo

import (
	"fmt"
	"math"

	"github.com/remat-compile/remat/ir"
)

// ImageNet classifiers: input "input" float32 [B,3,R,R], output logits
// [B,Classes].

func imageInput(b *builder, c Config) *ir.Value {
	return b.input("input", ir.Float32, int64(c.Batch), 3, int64(c.Resolution), int64(c.Resolution))
}

// imageNet is the Default of the ImageNet classifiers.
func imageNet() Config { return Config{Batch: 1, Resolution: 224, Width: 1, Classes: 1000} }

// VGG

// vggChannels are the channels of VGG's five conv blocks.
func vggChannels() [5]int { return [5]int{64, 128, 256, 512, 512} }

func vgg16Model() Model {
	return vggModel("vgg16", [5]int{2, 2, 3, 3, 3},
		"VGG16 (Simonyan and Zisserman 2015, configuration D): 13 3×3 conv+ReLU layers in five blocks, each block ending in a 2×2 max-pool, then fc6 and fc7 (4096, ReLU) and fc8 as Gemm. Dropout is left out (inference). Resolution must be a multiple of 32. 138M parameters at 224×224 with 1000 classes.")
}

func vgg19Model() Model {
	return vggModel("vgg19", [5]int{2, 2, 4, 4, 4},
		"VGG19 (Simonyan and Zisserman 2015, configuration E): 16 3×3 conv+ReLU layers in five blocks, each ending in a 2×2 max-pool, then three Gemm layers (4096, 4096, classes). Dropout is left out. Resolution must be a multiple of 32. 144M parameters at 224×224.")
}

func vggModel(name string, convs [5]int, doc string) Model {
	s := spec{name: name, multiple: 32}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 0)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				x := imageInput(b, c)
				x, cin := vggFeatures(b, x, c.Width, convs, false, nil)
				side := c.Resolution / 32
				hidden := scaled(4096, c.Width)
				x = b.op("Flatten", "flatten", []*ir.Value{x}, ir.IntAttr("axis", 1))
				in := cin * side * side
				x = b.relu("relu6", b.gemm("fc6", x, in, hidden, heUniform(in)))
				x = b.relu("relu7", b.gemm("fc7", x, hidden, hidden, heUniform(hidden)))
				return b.gemm("fc8", x, hidden, c.Classes, lecunUniform(hidden))
			})
		},
		Default: imageNet(),
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 32, Classes: 10},
	}
}

// vggFeatures adds VGG's conv blocks ("conv3_2", "relu3_2", "pool3"), with
// BatchNormalization after each conv when bn is set. taps, when not nil,
// receives the output of each pool. It returns the last pool's output and
// its channel count.
func vggFeatures(b *builder, x *ir.Value, width float64, convs [5]int, bn bool, taps []*ir.Value) (*ir.Value, int) {
	cin := 3
	for blk, n := range convs {
		cout := scaled(vggChannels()[blk], width)
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("%d_%d", blk+1, i)
			x = b.conv("conv"+id, x, cin, cout, 3, 1, 1, 1, true)
			if bn {
				x = b.bn("bn"+id, x, cout, 0.8, 1.2)
			}
			x = b.relu("relu"+id, x)
			cin = cout
		}
		x = b.maxPool(fmt.Sprintf("pool%d", blk+1), x, 2, 2)
		if taps != nil {
			taps[blk] = x
		}
	}
	return x, cin
}

// ResNet

type resNetLayout struct {
	blocks     [4]int
	bottleneck bool
}

// resNetLayoutOf gives the blocks per stage of each depth.
func resNetLayoutOf(depth int) resNetLayout {
	switch depth {
	case 18:
		return resNetLayout{[4]int{2, 2, 2, 2}, false}
	case 34:
		return resNetLayout{[4]int{3, 4, 6, 3}, false}
	case 50:
		return resNetLayout{[4]int{3, 4, 6, 3}, true}
	case 101:
		return resNetLayout{[4]int{3, 4, 23, 3}, true}
	case 152:
		return resNetLayout{[4]int{3, 8, 36, 3}, true}
	}
	return resNetLayout{[4]int{3, 24, 36, 3}, true} // 200
}

const resNetDoc = "ResNet (He et al. 2016) in the torchvision layout (v1.5: the stride sits on the 3×3 conv): a 7×7/2 conv stem with BatchNormalization, ReLU and a 3×3/2 max-pool; four stages of residual blocks (bottleneck 1×1-3×3-1×1 blocks with 4× expansion for depth ≥ 50, two 3×3 convs for 18 and 34), each conv followed by inference-form BatchNormalization, a 1×1 projection conv+BN on the first block of each stage, residual Add then ReLU; global average pool, Flatten and a Gemm. The last BatchNormalization of every block has a small scale (0.1–0.3) so that activations stay bounded through 200 layers. Resolution must be a multiple of 32."

func resNet50Model() Model {
	s := spec{name: "resnet50", multiple: 32, depths: []int{50}}
	doc := "ResNet-50: " + resNetDoc + " 53 Conv nodes (stem, 16 bottlenecks of 3, 4 projections), 25.6M parameters at 224×224 with 1000 classes. Depth must be 0 or 50; use \"resnet\" for other depths."
	return Model{
		Name: "resnet50", Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 50)
			if err != nil {
				return nil, err
			}
			return buildResNet("resnet50", doc, c)
		},
		Default: imageNet(),
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 32, Classes: 10},
	}
}

func resNetModel() Model {
	s := spec{name: "resnet", multiple: 32, depths: []int{18, 34, 50, 101, 152, 200}}
	doc := resNetDoc + " Depth is 18, 34, 50 (the default when 0), 101, 152 or 200; Default is ResNet-152 (60.2M parameters)."
	return Model{
		Name: "resnet", Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 50)
			if err != nil {
				return nil, err
			}
			return buildResNet(fmt.Sprintf("resnet%d", c.Depth), doc, c)
		},
		Default: Config{Batch: 1, Resolution: 224, Width: 1, Depth: 152, Classes: 1000},
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 64, Depth: 101, Classes: 10},
	}
}

func buildResNet(name, doc string, c Config) (*ir.Graph, error) {
	layout := resNetLayoutOf(c.Depth)
	return build(name, doc, c.Seed, func(b *builder) *ir.Value {
		x := imageInput(b, c)
		cin := scaled(64, c.Width)
		x = b.conv("conv1", x, 3, cin, 7, 2, 3, 1, false)
		x = b.relu("relu", b.bn("bn1", x, cin, 0.8, 1.2))
		x = b.maxPool("maxpool", x, 3, 2, 1, 1, 1, 1)
		expansion := 1
		if layout.bottleneck {
			expansion = 4
		}
		for stage, n := range layout.blocks {
			planes := scaled(64<<stage, c.Width)
			for i := range n {
				p := fmt.Sprintf("layer%d.%d.", stage+1, i)
				stride := 1
				if i == 0 && stage > 0 {
					stride = 2
				}
				cout := planes * expansion
				skip := x
				if i == 0 && (stride != 1 || cin != cout) {
					skip = b.conv(p+"downsample.conv", x, cin, cout, 1, stride, 0, 1, false)
					skip = b.bn(p+"downsample.bn", skip, cout, 0.8, 1.2)
				}
				if layout.bottleneck {
					x = b.conv(p+"conv1", x, cin, planes, 1, 1, 0, 1, false)
					x = b.relu(p+"relu1", b.bn(p+"bn1", x, planes, 0.8, 1.2))
					x = b.conv(p+"conv2", x, planes, planes, 3, stride, 1, 1, false)
					x = b.relu(p+"relu2", b.bn(p+"bn2", x, planes, 0.8, 1.2))
					x = b.conv(p+"conv3", x, planes, cout, 1, 1, 0, 1, false)
					x = b.bn(p+"bn3", x, cout, 0.1, 0.3)
				} else {
					x = b.conv(p+"conv1", x, cin, planes, 3, stride, 1, 1, false)
					x = b.relu(p+"relu1", b.bn(p+"bn1", x, planes, 0.8, 1.2))
					x = b.conv(p+"conv2", x, planes, cout, 3, 1, 1, 1, false)
					x = b.bn(p+"bn2", x, cout, 0.1, 0.3)
				}
				x = b.op("Add", p+"add", []*ir.Value{x, skip})
				x = b.relu(p+"relu", x)
				cin = cout
			}
		}
		return b.classifier(x, cin, c.Classes)
	})
}

// MobileNets

func mobileNetV1Model() Model {
	const name = "mobilenet_v1"
	doc := "MobileNetV1 (Howard et al. 2017): a 3×3/2 conv, then 13 depthwise-separable blocks (3×3 depthwise conv with group = channels, BatchNormalization, ReLU; 1×1 pointwise conv, BatchNormalization, ReLU), global average pool, Flatten and a Gemm classifier. Width is the paper's multiplier α (channels rounded, not to multiples of 8). Resolution must be a multiple of 32. 4.2M parameters at α = 1 with 1000 classes."
	s := spec{name: name, multiple: 32}
	// Pointwise output channels and depthwise strides of the 13 blocks.
	blocks := [13][2]int{{64, 1}, {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2},
		{512, 1}, {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 0)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				x := imageInput(b, c)
				cin := scaled(32, c.Width)
				x = b.conv("conv0", x, 3, cin, 3, 2, 1, 1, false)
				x = b.relu("conv0.relu", b.bn("conv0.bn", x, cin, 0.8, 1.2))
				for i, blk := range blocks {
					p := fmt.Sprintf("block%d.", i+1)
					cout := scaled(blk[0], c.Width)
					x = b.conv(p+"dw", x, cin, cin, 3, blk[1], 1, cin, false)
					x = b.relu(p+"dw.relu", b.bn(p+"dw.bn", x, cin, 0.8, 1.2))
					x = b.conv(p+"pw", x, cin, cout, 1, 1, 0, 1, false)
					x = b.relu(p+"pw.relu", b.bn(p+"pw.bn", x, cout, 0.8, 1.2))
					cin = cout
				}
				return b.classifier(x, cin, c.Classes)
			})
		},
		Default: imageNet(),
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 16, Classes: 10},
	}
}

// divisible8 rounds v to a multiple of 8, not below 8 and not more than
// 10% below v (MobileNetV2's _make_divisible).
func divisible8(v float64) int {
	n := max(8, int(v+4)/8*8)
	if float64(n) < 0.9*v {
		n += 8
	}
	return n
}

func mobileNetV2Model() Model {
	const name = "mobilenet_v2"
	doc := "MobileNetV2 (Sandler et al. 2018) in the torchvision layout: a 3×3/2 conv, 17 inverted-residual blocks (1×1 expansion by t, 3×3 depthwise, linear 1×1 projection, each with BatchNormalization and ReLU6 = Clip(0, 6) except after the projection; residual Add where stride is 1 and channels match: 10 blocks), a 1×1 conv to 1280 channels, global average pool, Flatten and a Gemm classifier. Channels are the width multiple rounded to multiples of 8; the last conv keeps 1280 channels for widths from 0.35 (the paper's smallest multiplier) to 1, as in the paper, and scales with narrower widths. Resolution must be a multiple of 32. 3.5M parameters at width 1 with 1000 classes."
	s := spec{name: name, multiple: 32}
	// t (expansion), c (channels), n (repeats), s (stride).
	settings := [7][4]int{{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 0)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				x := imageInput(b, c)
				cin := divisible8(32 * c.Width)
				x = b.conv("conv0", x, 3, cin, 3, 2, 1, 1, false)
				x = b.relu6("conv0.relu6", b.bn("conv0.bn", x, cin, 0.8, 1.2))
				k := 0
				for _, st := range settings {
					cout := divisible8(float64(st[1]) * c.Width)
					for i := range st[2] {
						k++
						p := fmt.Sprintf("block%d.", k)
						stride := 1
						if i == 0 {
							stride = st[3]
						}
						hidden := int(math.Round(float64(cin * st[0])))
						skip := x
						if st[0] != 1 {
							x = b.conv(p+"expand", x, cin, hidden, 1, 1, 0, 1, false)
							x = b.relu6(p+"expand.relu6", b.bn(p+"expand.bn", x, hidden, 0.8, 1.2))
						}
						x = b.conv(p+"dw", x, hidden, hidden, 3, stride, 1, hidden, false)
						x = b.relu6(p+"dw.relu6", b.bn(p+"dw.bn", x, hidden, 0.8, 1.2))
						x = b.conv(p+"project", x, hidden, cout, 1, 1, 0, 1, false)
						if stride == 1 && cin == cout {
							x = b.bn(p+"project.bn", x, cout, 0.2, 0.4)
							x = b.op("Add", p+"add", []*ir.Value{x, skip})
						} else {
							x = b.bn(p+"project.bn", x, cout, 0.8, 1.2)
						}
						cin = cout
					}
				}
				// The paper keeps 1280 channels for its multipliers below 1
				// (0.35 to 1); below 0.35 they scale too, so that test-sized
				// models stay small.
				last := divisible8(1280 * max(1, c.Width))
				if c.Width < 0.35 {
					last = divisible8(1280 * c.Width)
				}
				x = b.conv("conv_last", x, cin, last, 1, 1, 0, 1, false)
				x = b.relu6("conv_last.relu6", b.bn("conv_last.bn", x, last, 0.8, 1.2))
				return b.classifier(x, last, c.Classes)
			})
		},
		Default: imageNet(),
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 16, Classes: 4},
	}
}

// GoogLeNet

func googLeNetModel() Model {
	const name = "googlenet"
	doc := "GoogLeNet (Szegedy et al. 2015, Inception v1) as in the paper's Table 1 and BVLC's Caffe model: 7×7/2 conv, max-pool, LRN, 1×1 and 3×3 convs, LRN, max-pool, nine inception modules (1×1, 1×1→3×3, 1×1→5×5 and 3×3 max-pool→1×1 branches joined by Concat; 3a, 3b, pool, 4a–4e, pool, 5a, 5b), global average pool, Flatten and a Gemm; every conv has a bias and a ReLU. The auxiliary classifiers and dropout (training only) are left out. The 3×3/2 max-pools pad one pixel bottom and right, which gives Caffe's ceil-mode sizes for even inputs. Resolution must be a multiple of 32. 7.0M parameters with 1000 classes."
	s := spec{name: name, multiple: 32}
	type inception struct {
		name                     string
		c1, c3r, c3, c5r, c5, pp int
		poolAfter                bool
	}
	modules := []inception{
		{"inception_3a", 64, 96, 128, 16, 32, 32, false},
		{"inception_3b", 128, 128, 192, 32, 96, 64, true},
		{"inception_4a", 192, 96, 208, 16, 48, 64, false},
		{"inception_4b", 160, 112, 224, 24, 64, 64, false},
		{"inception_4c", 128, 128, 256, 24, 64, 64, false},
		{"inception_4d", 112, 144, 288, 32, 64, 64, false},
		{"inception_4e", 256, 160, 320, 32, 128, 128, true},
		{"inception_5a", 256, 160, 320, 32, 128, 128, false},
		{"inception_5b", 384, 192, 384, 48, 128, 128, false},
	}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 0)
			if err != nil {
				return nil, err
			}
			w := c.Width
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				convRelu := func(name string, x *ir.Value, cin, cout, k, s, p int) *ir.Value {
					return b.relu(name+".relu", b.conv(name, x, cin, cout, k, s, p, 1, true))
				}
				lrn := func(name string, x *ir.Value) *ir.Value {
					return b.op("LRN", name, []*ir.Value{x},
						ir.IntAttr("size", 5), ir.FloatAttr("alpha", 1e-4), ir.FloatAttr("beta", 0.75), ir.FloatAttr("bias", 1))
				}
				pool := func(name string, x *ir.Value) *ir.Value { return b.maxPool(name, x, 3, 2, 0, 0, 1, 1) }
				x := imageInput(b, c)
				c64, c192 := scaled(64, w), scaled(192, w)
				x = convRelu("conv1", x, 3, c64, 7, 2, 3)
				x = lrn("norm1", pool("pool1", x))
				x = convRelu("conv2_reduce", x, c64, c64, 1, 1, 0)
				x = convRelu("conv2", x, c64, c192, 3, 1, 1)
				x = pool("pool2", lrn("norm2", x))
				cin := c192
				for i, m := range modules {
					p := m.name + "."
					c1, c3r, c3, c5r, c5, pp := scaled(m.c1, w), scaled(m.c3r, w), scaled(m.c3, w), scaled(m.c5r, w), scaled(m.c5, w), scaled(m.pp, w)
					b1 := convRelu(p+"1x1", x, cin, c1, 1, 1, 0)
					b2 := convRelu(p+"3x3", convRelu(p+"3x3_reduce", x, cin, c3r, 1, 1, 0), c3r, c3, 3, 1, 1)
					b3 := convRelu(p+"5x5", convRelu(p+"5x5_reduce", x, cin, c5r, 1, 1, 0), c5r, c5, 5, 1, 2)
					b4 := convRelu(p+"pool_proj", b.maxPool(p+"pool", x, 3, 1, 1, 1, 1, 1), cin, pp, 1, 1, 0)
					x = b.op("Concat", p+"concat", []*ir.Value{b1, b2, b3, b4}, ir.IntAttr("axis", 1))
					cin = c1 + c3 + c5 + pp
					if m.poolAfter {
						x = pool(fmt.Sprintf("pool%d", i/4+3), x)
					}
				}
				return b.classifier(x, cin, c.Classes)
			})
		},
		Default: imageNet(),
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 16, Classes: 10},
	}
}
