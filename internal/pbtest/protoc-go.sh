#!/bin/sh
# Runs protoc with protoc-gen-go on one of the project's .proto files; each
# generated package's gen.sh (what `go generate` runs) calls it.
#
# Usage: sh protoc-go.sh PKGDIR PROTO [OUTDIR]
#   PKGDIR  the package directory holding PROTO
#   OUTDIR  where the .pb.go goes; defaults to PKGDIR
#
# protoc comes from Debian's protobuf-compiler package. protoc-gen-go is built
# from the module cache at the version go.mod pins, so the output does not
# depend on whatever protoc-gen-go happens to be on PATH.
set -eu

here=$(cd "$1" && pwd)
proto=$2
out=${3:-$here}

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
	"$proto"
