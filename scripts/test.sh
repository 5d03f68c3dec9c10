#!/usr/bin/env bash
# test.sh — the whole test suite, as CI runs it: installs what the tests
# need (scripts/setup.sh), then vets and tests every package, including the
# ONNX Runtime, TensorFlow.js and python3-onnx checks and a bounded fuzz run
# of the importers and the IR text form. Pass -short to skip the slow tests.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/setup.sh)"
export REMAT_ORT_LIB REMAT_MODELS REMAT_TFJS_DIR REMAT_TF_MODELS

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting (run gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "== go vet"
go vet ./...
echo "== CGO_ENABLED=0 go build (the compile path needs no C toolchain)"
CGO_ENABLED=0 go build ./...
echo "== go test"
go test -count=1 -timeout 30m "$@" ./...
if [[ " $* " != *" -short "* ]]; then
  echo "== fuzz (bounded)"
  go test -run '^$' -fuzz '^FuzzImport$' -fuzztime 30s ./importers/onnx
  go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 10s ./ir/irtext
  go test -run '^$' -fuzz '^FuzzImportGraphDef$' -fuzztime 10s ./importers/graphdef
  go test -run '^$' -fuzz '^FuzzImportModelJSON$' -fuzztime 10s ./importers/graphdef
  go test -run '^$' -fuzz '^FuzzReadNodeLink$' -fuzztime 5s ./passes/remat/interchange
  go test -run '^$' -fuzz '^FuzzReadTWRemat$' -fuzztime 5s ./passes/remat/interchange
fi
