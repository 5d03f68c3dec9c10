// Package tfpb holds the project's protobuf schema of TensorFlow graphs
// (tfpb.proto: GraphDef, NodeDef, AttrValue, TensorProto, TensorShapeProto,
// DataType, VersionDef, FunctionDefLibrary and what they contain) and the Go
// code generated from it (tfpb.pb.go). The protobuf package is "tensorflow",
// as in TensorFlow, so that `protoc --decode=tensorflow.GraphDef tfpb.proto`
// reads a frozen graph.
//
// The generated code is committed. After editing tfpb.proto, regenerate it
// with
//
//	go generate ./internal/tfpb
//
// which needs protoc (Debian package protobuf-compiler) and builds
// protoc-gen-go at the version pinned in go.mod. TestGeneratedCodeIsUpToDate
// fails when the committed tfpb.pb.go is stale.
package tfpb

//go:generate sh gen.sh
