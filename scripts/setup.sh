#!/usr/bin/env bash
# setup.sh — install what remat-compile's tests need on a fresh Debian
# machine, idempotently:
#   - Debian packages: protobuf-compiler (regenerating internal/onnxpb),
#     python3-onnx and python3-numpy (independent checker),
#     coinor-libcbc3 and coinor-libclp1 (MILP/LP solvers, loaded at run time);
#   - ONNX Runtime 1.30 CPU from the npm package onnxruntime-node, without
#     its install scripts, into $REMAT_CACHE/ort;
#   - the Go modules of go.mod;
#   - the real third-party models of ../shared/models (when that folder is
#     present), into $REMAT_CACHE/models: ONNX models (fetch.sh) and
#     TensorFlow.js graph models (fetch-tf.sh).
# It prints the environment the tests read (REMAT_ORT_LIB, REMAT_MODELS,
# REMAT_TF_MODELS) as shell assignments on stdout; logs go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${REMAT_CACHE:-$HOME/.cache/remat-compile}"
ORT_VERSION=1.30.0
log() { echo "setup: $*" >&2; }

need_apt=()
for p in protobuf-compiler python3-onnx python3-numpy coinor-libcbc3 coinor-libclp1; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  log "apt-get install ${need_apt[*]}"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >&2
fi

ORT_DIR="$CACHE/ort"
ORT_LIB="$ORT_DIR/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
if [ ! -f "$ORT_LIB" ] || ! grep -q "\"version\": \"$ORT_VERSION\"" "$ORT_DIR/node_modules/onnxruntime-node/package.json" 2>/dev/null; then
  log "npm install onnxruntime-node@$ORT_VERSION into $ORT_DIR"
  mkdir -p "$ORT_DIR"
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$ORT_DIR" "onnxruntime-node@$ORT_VERSION" >&2
fi
[ -f "$ORT_LIB" ] || { log "ONNX Runtime library missing after install: $ORT_LIB"; exit 1; }

log "go mod download"
go mod download

MODELS=""
if [ -x ../shared/models/fetch.sh ]; then
  log "fetching the real models of ../shared/models"
  ../shared/models/fetch.sh "$CACHE/models" >/dev/null
  MODELS="$CACHE/models/MANIFEST.tsv"
else
  log "../shared/models/fetch.sh not found: tests on third-party models will fail"
fi

TF_MODELS=""
if [ -x ../shared/models/fetch-tf.sh ]; then
  log "fetching the real TensorFlow.js models of ../shared/models"
  ../shared/models/fetch-tf.sh "$CACHE/models" >/dev/null
  TF_MODELS="$CACHE/models/MANIFEST-tf.tsv"
else
  log "../shared/models/fetch-tf.sh not found: tests on third-party TensorFlow models will fail"
fi

echo "export REMAT_ORT_LIB='$ORT_LIB'"
echo "export REMAT_MODELS='$MODELS'"
echo "export REMAT_TF_MODELS='$TF_MODELS'"
