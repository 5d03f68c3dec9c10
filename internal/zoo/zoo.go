// Package zoo builds the neural networks that the rematerialization papers
// evaluate as ir.Graphs, with seeded random weights, for tests and
// benchmarks: VGG16 and VGG19, MobileNet V1 and V2, ResNet (50 to 200
// layers), U-Net, FCN-8s, SegNet, GoogLeNet, a BERT-like transformer
// encoder, a GPT-2-like transformer decoder and a stacked LSTM. Chain and
// LargeGraph build synthetic graphs of any size.
//
// Every graph uses only operators of the standard ONNX domain at opset 17,
// names every node and value readably ("layer3.1.conv2"), has one output
// called "output", and declares the types of its inputs and parameters;
// intermediate value types are left to shape inference. Weights are float32
// drawn from a PCG generator seeded by Config.Seed and scaled like He or
// Xavier initialisation, so activations stay finite through the deepest
// configurations. The same Config always yields the same graph, byte for
// byte; a different Seed changes the weights and nothing else.
//
// Each Model has a Default configuration with the sizes of its paper
// (224×224 ImageNet classifiers with 1000 classes, BERT-base, GPT-2 small…)
// and a Small one that ONNX Runtime runs in milliseconds and that exports to
// a file of less than 200 KB.
package zoo

// The Small models are committed, exported to ONNX, as testdata/zoo/*.onnx
// at the repository root; this regenerates them (TestExportSmall checks
// that they are up to date).
//go:generate go test -run ^TestExportSmall$ -update .

import (
	"fmt"
	"math"

	"github.com/remat-compile/remat/ir"
)

// Config sizes a model. A field that does not apply to a model must be zero
// (Depth) or is ignored where the Model's Doc says so.
type Config struct {
	// Batch is the batch size, at least 1.
	Batch int
	// Resolution is the side of the square input image, or the sequence
	// length of text and sequence models.
	Resolution int
	// Width multiplies every channel count (and hidden size); 1 is the
	// width of the paper.
	Width float64
	// Depth is model-specific: the number of layers of ResNet ("resnet"),
	// of the transformers and of the LSTM, or the number of down-sampling
	// levels of U-Net. 0 selects the model's default.
	Depth int
	// Classes is the number of output classes; for the transformers it is
	// the vocabulary size.
	Classes int
	// Seed seeds the weights.
	Seed uint64
}

// Model is one architecture of the zoo.
type Model struct {
	Name string
	// Doc describes the architecture, what it follows and where it departs
	// from its paper.
	Doc   string
	Build func(Config) (*ir.Graph, error)
	// Default is the configuration of the paper.
	Default Config
	// Small is a tiny configuration of the same topology family, for tests.
	Small Config
}

// Limits on Config fields, so that a mistaken configuration fails with an
// error instead of exhausting memory.
const (
	maxBatch      = 1 << 16
	maxResolution = 1 << 16
	maxWidth      = 64
	maxClasses    = 1 << 24
	// maxParamBytes bounds the weights of one graph.
	maxParamBytes = 4 << 30
)

// Models returns every architecture of the zoo, in a stable order.
func Models() []Model {
	return []Model{
		vgg16Model(),
		vgg19Model(),
		mobileNetV1Model(),
		mobileNetV2Model(),
		resNet50Model(),
		resNetModel(),
		googLeNetModel(),
		uNetModel(),
		fcn8Model(),
		segNetModel(),
		encoderModel(),
		decoderModel(),
		lstmModel(),
	}
}

// Lookup returns the model called name.
func Lookup(name string) (Model, bool) {
	for _, m := range Models() {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// spec is what a model requires of a Config.
type spec struct {
	name string
	// multiple is what Resolution must be a multiple of (0 or 1: any).
	multiple int
	// minRes is the smallest Resolution.
	minRes int
	// depths lists the allowed values of Depth besides 0; nil means Depth
	// must be 0, and depthRange is used instead when set.
	depths     []int
	depthRange [2]int
}

// check validates c against s and returns c with Depth defaulted to def.
func (s spec) check(c Config, def int) (Config, error) {
	errf := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("zoo: %s: "+format, append([]any{s.name}, args...)...)
	}
	switch {
	case c.Batch < 1 || c.Batch > maxBatch:
		return errf("batch %d is outside [1, %d]", c.Batch, maxBatch)
	case c.Resolution < 1 || c.Resolution > maxResolution:
		return errf("resolution %d is outside [1, %d]", c.Resolution, maxResolution)
	case math.IsNaN(c.Width) || c.Width <= 0 || c.Width > maxWidth:
		return errf("width %v is outside (0, %d]", c.Width, maxWidth)
	case c.Classes < 1 || c.Classes > maxClasses:
		return errf("classes %d is outside [1, %d]", c.Classes, maxClasses)
	}
	if s.multiple > 1 && c.Resolution%s.multiple != 0 {
		return errf("resolution %d is not a multiple of %d", c.Resolution, s.multiple)
	}
	if c.Resolution < s.minRes {
		return errf("resolution %d is below the minimum %d", c.Resolution, s.minRes)
	}
	if c.Depth == 0 {
		c.Depth = def
		return c, nil
	}
	switch {
	case s.depths != nil:
		for _, d := range s.depths {
			if c.Depth == d {
				return c, nil
			}
		}
		return errf("depth %d is not one of %v", c.Depth, s.depths)
	case s.depthRange[1] > 0:
		if c.Depth < s.depthRange[0] || c.Depth > s.depthRange[1] {
			return errf("depth %d is outside [%d, %d]", c.Depth, s.depthRange[0], s.depthRange[1])
		}
		return c, nil
	}
	return errf("has no depth parameter; depth must be 0, not %d", c.Depth)
}

// scaled is c channels multiplied by the width multiplier, at least 1.
func scaled(c int, width float64) int {
	return max(1, int(math.Round(float64(c)*width)))
}
