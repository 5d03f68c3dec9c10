#!/bin/sh
# Regenerates tfpb.pb.go from tfpb.proto (run via `go generate ./internal/tfpb`).
#
# Usage: sh gen.sh [OUTDIR]   (OUTDIR defaults to this directory)
#
# protoc comes from Debian's protobuf-compiler package. protoc-gen-go is built
# from the module cache at the version go.mod pins, so the output does not
# depend on whatever protoc-gen-go happens to be on PATH.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}

if ! command -v protoc >/dev/null 2>&1; then
	echo "gen.sh: protoc not found; install Debian package protobuf-compiler" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

(cd "$here" && go build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)

cd "$here"
protoc \
	--plugin=protoc-gen-go="$tmp/protoc-gen-go" \
	--proto_path=. \
	--go_out="$out" \
	--go_opt=paths=source_relative \
	tfpb.proto
