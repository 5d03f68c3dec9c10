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
  # Execution counts, not durations: Go 1.26's fuzz coordinator can fail a
  # duration-bounded run with "context deadline exceeded" at its end when
  # a worker is still busy (golang/go#75804, fixed in Go 1.27); a count has
  # no deadline to race. Each count is about what the old duration ran here.
  go test -run '^$' -fuzz '^FuzzImport$' -fuzztime 600000x ./importers/onnx
  go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 150000x ./ir/irtext
  go test -run '^$' -fuzz '^FuzzImportGraphDef$' -fuzztime 120000x ./importers/graphdef
  go test -run '^$' -fuzz '^FuzzImportModelJSON$' -fuzztime 1000x ./importers/graphdef
  go test -run '^$' -fuzz '^FuzzReadNodeLink$' -fuzztime 40000x ./passes/remat/interchange
  go test -run '^$' -fuzz '^FuzzReadTWRemat$' -fuzztime 5000x ./passes/remat/interchange
fi
