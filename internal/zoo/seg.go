package zoo

import (
	"fmt"

	"github.com/remat-compile/remat/ir"
)

// Segmentation networks: input "input" float32 [B,3,R,R], output per-pixel
// logits [B,Classes,R,R].

func uNetModel() Model {
	const name = "unet"
	doc := "U-Net (Ronneberger et al. 2015): an encoder of Depth levels (default 4), each two 3×3 conv+ReLU then a 2×2 max-pool, channels 64·2^level; a bottleneck of two convs; a decoder whose every level upsamples with a 2×2/2 ConvTranspose that halves the channels, Concats the encoder's skip tensor on the channel axis and applies two 3×3 conv+ReLU; a final 1×1 conv to Classes. Convs are padded (\"same\"), as in most reimplementations and the rematerialization papers, so no crops are needed; there is no BatchNormalization, as in the paper. Resolution must be a multiple of 2^Depth. Default: 256×256, 2 classes, 31.0M parameters."
	s := spec{name: name, depthRange: [2]int{1, 8}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 4)
			if err != nil {
				return nil, err
			}
			if c.Resolution%(1<<c.Depth) != 0 {
				return nil, fmt.Errorf("zoo: %s: resolution %d is not a multiple of %d (2^depth)", name, c.Resolution, 1<<c.Depth)
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				x := imageInput(b, c)
				double := func(p string, x *ir.Value, cin, cout int) *ir.Value {
					x = b.relu(p+"relu1", b.conv(p+"conv1", x, cin, cout, 3, 1, 1, 1, true))
					return b.relu(p+"relu2", b.conv(p+"conv2", x, cout, cout, 3, 1, 1, 1, true))
				}
				ch := func(level int) int { return scaled(64<<level, c.Width) }
				skips := make([]*ir.Value, c.Depth)
				cin := 3
				for l := range c.Depth {
					p := fmt.Sprintf("down%d.", l+1)
					skips[l] = double(p, x, cin, ch(l))
					x = b.maxPool(p+"pool", skips[l], 2, 2)
					cin = ch(l)
				}
				x = double("bottleneck.", x, cin, ch(c.Depth))
				cin = ch(c.Depth)
				for l := c.Depth - 1; l >= 0; l-- {
					p := fmt.Sprintf("up%d.", l+1)
					up := b.convT(p+"upconv", x, cin, ch(l), 2, 2, true)
					x = b.op("Concat", p+"concat", []*ir.Value{skips[l], up}, ir.IntAttr("axis", 1))
					x = double(p, x, 2*ch(l), ch(l))
					cin = ch(l)
				}
				x = b.conv("head", x, cin, c.Classes, 1, 1, 0, 1, true)
				return x
			})
		},
		Default: Config{Batch: 1, Resolution: 256, Width: 1, Classes: 2},
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 32, Classes: 2},
	}
}

func fcn8Model() Model {
	const name = "fcn8"
	doc := "FCN-8s (Long et al. 2015) on a VGG16 backbone: the 13 conv layers and five pools of VGG16, fc6 as a 7×7 conv (4096) and fc7 as a 1×1 conv, each with ReLU (dropout left out), a 1×1 score layer; then upscore2 (4×4/2 ConvTranspose), Slice crop, Add with a 1×1 score of pool4; upscore_pool4 (4×4/2), crop, Add with a score of pool3; upscore8 (16×16/8) and a final crop to the input size. Convs are padded (\"same\") instead of Caffe's 100-pixel padding of conv1_1, and fc6 pads 3, so the unpadded transposed convs overshoot by a fixed margin that the Slice crops remove (1, 1 and 4 pixels at each side). Resolution must be a multiple of 32. Default: 416×416 (the side of the rematerialization papers' 416×608 inputs), 21 classes (PASCAL VOC), 134M parameters."
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
				pools := make([]*ir.Value, 5)
				x, cin := vggFeatures(b, x, c.Width, [5]int{2, 2, 3, 3, 3}, false, pools)
				fc := scaled(4096, c.Width)
				x = b.relu("relu6", b.conv("fc6", x, cin, fc, 7, 1, 3, 1, true))
				x = b.relu("relu7", b.conv("fc7", x, fc, fc, 1, 1, 0, 1, true))
				k := c.Classes
				score := func(name string, x *ir.Value, cin int) *ir.Value {
					return b.conv(name, x, cin, k, 1, 1, 0, 1, true)
				}
				crop := func(name string, x *ir.Value, offset, size int) *ir.Value {
					o, e := int64(offset), int64(offset+size)
					return b.op("Slice", name, []*ir.Value{x,
						b.ints(name+".starts", o, o), b.ints(name+".ends", e, e), b.ints("crop.axes", 2, 3)})
				}
				side := c.Resolution / 32
				x = score("score_fr", x, fc)
				// upscore2: (s-1)·2+4 = 2s+2 pixels, cropped to pool4's 2s.
				x = crop("upscore2.crop", b.convT("upscore2", x, k, k, 4, 2, false), 1, 2*side)
				x = b.op("Add", "fuse_pool4", []*ir.Value{x, score("score_pool4", pools[3], scaled(512, c.Width))})
				x = crop("upscore_pool4.crop", b.convT("upscore_pool4", x, k, k, 4, 2, false), 1, 4*side)
				x = b.op("Add", "fuse_pool3", []*ir.Value{x, score("score_pool3", pools[2], scaled(256, c.Width))})
				// upscore8: (4s-1)·8+16 = 32s+8 pixels, cropped to the input.
				x = crop("upscore8.crop", b.convT("upscore8", x, k, k, 16, 8, false), 4, c.Resolution)
				return x
			})
		},
		Default: Config{Batch: 1, Resolution: 416, Width: 1, Classes: 21},
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 64, Classes: 4},
	}
}

func segNetModel() Model {
	const name = "segnet"
	doc := "SegNet (Badrinarayanan et al. 2017): the VGG16 encoder (13 3×3 convs, each with BatchNormalization and ReLU) whose five 2×2 max-pools also output their argmax indices; a mirrored decoder that upsamples each stage with MaxUnpool at those indices, followed by 3×3 conv+BN+ReLU layers (13 convs, the last one producing the class scores without BN or ReLU). Resolution must be a multiple of 32. Default: 416×416 (the side of the rematerialization papers' 416×608 inputs), 12 classes (CamVid), 29.4M parameters."
	s := spec{name: name, multiple: 32}
	encoder := [5]int{2, 2, 3, 3, 3}
	// Decoder stages 5 to 1: output channels of each conv (0: Classes).
	decoder := [5][]int{{512, 512, 512}, {512, 512, 256}, {256, 256, 128}, {128, 64}, {64, 0}}
	return Model{
		Name: name, Doc: doc,
		Build: func(c Config) (*ir.Graph, error) {
			c, err := s.check(c, 0)
			if err != nil {
				return nil, err
			}
			return build(name, doc, c.Seed, func(b *builder) *ir.Value {
				x := imageInput(b, c)
				indices := make([]*ir.Value, 5)
				cin := 3
				for blk, n := range encoder {
					p := fmt.Sprintf("enc%d.", blk+1)
					cout := scaled(vggChannels()[blk], c.Width)
					for i := 1; i <= n; i++ {
						x = b.conv(fmt.Sprintf("%sconv%d", p, i), x, cin, cout, 3, 1, 1, 1, true)
						x = b.bn(fmt.Sprintf("%sbn%d", p, i), x, cout, 0.8, 1.2)
						x = b.relu(fmt.Sprintf("%srelu%d", p, i), x)
						cin = cout
					}
					pool := b.opN("MaxPool", p+"pool", []*ir.Value{x}, []string{p + "pool", p + "pool.indices"},
						ir.IntsAttr("kernel_shape", 2, 2), ir.IntsAttr("strides", 2, 2))
					x, indices[blk] = pool.Outputs[0], pool.Outputs[1]
				}
				for stage := 5; stage >= 1; stage-- {
					p := fmt.Sprintf("dec%d.", stage)
					x = b.op("MaxUnpool", p+"unpool", []*ir.Value{x, indices[stage-1]},
						ir.IntsAttr("kernel_shape", 2, 2), ir.IntsAttr("strides", 2, 2))
					convs := decoder[5-stage]
					for i, co := range convs {
						last := stage == 1 && i == len(convs)-1
						cout := c.Classes
						if !last {
							cout = scaled(co, c.Width)
						}
						x = b.conv(fmt.Sprintf("%sconv%d", p, i+1), x, cin, cout, 3, 1, 1, 1, true)
						if !last {
							x = b.bn(fmt.Sprintf("%sbn%d", p, i+1), x, cout, 0.8, 1.2)
							x = b.relu(fmt.Sprintf("%srelu%d", p, i+1), x)
						}
						cin = cout
					}
				}
				return x
			})
		},
		Default: Config{Batch: 1, Resolution: 416, Width: 1, Classes: 12},
		Small:   Config{Batch: 1, Resolution: 32, Width: 1.0 / 32, Classes: 4},
	}
}
