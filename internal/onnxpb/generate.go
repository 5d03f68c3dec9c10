// Package onnxpb holds the project's protobuf schema of the ONNX IR
// (onnx.proto) and the Go code generated from it (onnx.pb.go).
//
// The generated code is committed. After editing onnx.proto, regenerate it
// with
//
//	go generate ./internal/onnxpb
//
// which needs protoc (Debian package protobuf-compiler) and builds
// protoc-gen-go at the version pinned in go.mod. TestGeneratedCodeIsUpToDate
// fails when the committed onnx.pb.go is stale.
package onnxpb

//go:generate sh gen.sh
