// Package e2e holds end-to-end tests that cross packages: every zoo model
// and every real third-party model is imported, shape-inferred, exported,
// checked by python3-onnx and run in ONNX Runtime against the original.
package e2e
