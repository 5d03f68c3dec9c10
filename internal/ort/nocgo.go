//go:build !cgo

package ort

import "errors"

// cgoEnabled tells the tests whether ORT can be used in this build.
const cgoEnabled = false

// errNoCgo is what every ORT-backed function returns in a build without cgo.
var errNoCgo = errors.New("built without cgo: ONNX Runtime needs cgo (build with CGO_ENABLED=1 and a C compiler)")

// Version needs cgo; without it, it returns an error.
func Version() (string, error) { return "", errNoCgo }

// ModelIO needs cgo; without it, it returns an error.
func ModelIO(modelPath string) (inputs, outputs []ValueInfo, err error) {
	return nil, nil, errNoCgo
}

// RandomInputs needs cgo (it asks ORT for the model's inputs); without it,
// it returns an error. RandomTensor works in every build.
func RandomInputs(modelPath string, seed uint64, shapes map[string][]int64) (map[string]Tensor, error) {
	return nil, errNoCgo
}

// Run needs cgo; without it, it returns an error.
func Run(modelPath string, inputs map[string]Tensor, opts Options) (*Result, error) {
	return nil, errNoCgo
}
