//go:build !cgo

package ort

// TimeModels needs cgo; without it, it returns an error.
func TimeModels(models []TimedModel, opts Options, warmup, rounds int) ([]Timing, error) {
	return nil, errNoCgo
}
