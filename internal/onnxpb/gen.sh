#!/bin/sh
# Regenerates onnx.pb.go from onnx.proto (run via `go generate ./internal/onnxpb`).
#
# Usage: sh gen.sh [OUTDIR]   (OUTDIR defaults to this directory)
#
# The work is done by ../pbtest/protoc-go.sh, shared by the generated
# packages.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../pbtest/protoc-go.sh" "$here" onnx.proto "$@"
