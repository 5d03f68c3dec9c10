#!/usr/bin/env bash
# setup.sh — install what remat-compile's tests need on a fresh Debian
# machine, idempotently:
#   - Debian packages: protobuf-compiler (regenerating internal/onnxpb),
#     python3-onnx and python3-numpy (independent checker),
#     coinor-libcbc3 and coinor-libclp1 (MILP/LP solvers, loaded at run time);
#   - ONNX Runtime 1.30 CPU from the npm package onnxruntime-node, without
#     its install scripts, into $REMAT_CACHE/ort;
#   - TensorFlow.js 4.22 (tfjs-core, tfjs-converter and the cpu and wasm
#     backends; never tfjs-node), without install scripts, into
#     $REMAT_CACHE/tfjs;
#   - the Go modules of go.mod;
#   - the real third-party models of ../shared/models (ONNX, and TensorFlow.js
#     graph models) when that folder is present, into $REMAT_CACHE/models.
# It prints the environment the tests read (REMAT_ORT_LIB, REMAT_MODELS,
# REMAT_TFJS_DIR, REMAT_TF_MODELS) as shell assignments on stdout; logs go to
# stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${REMAT_CACHE:-$HOME/.cache/remat-compile}"
ORT_VERSION=1.30.0
TFJS_VERSION=4.22.0
log() { echo "setup: $*" >&2; }

need_apt=()
for p in protobuf-compiler python3-onnx python3-numpy coinor-libcbc3 coinor-libclp1 chromium; do
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

TFJS_DIR="$CACHE/tfjs"
TFJS_MODULES="$TFJS_DIR/node_modules"
TFJS_PKGS=(tfjs-core tfjs-converter tfjs-backend-cpu tfjs-backend-wasm)
tfjs_ok() {
  local p
  for p in "${TFJS_PKGS[@]}"; do
    grep -q "\"version\": \"$TFJS_VERSION\"" "$TFJS_MODULES/@tensorflow/$p/package.json" 2>/dev/null || return 1
  done
}
if ! tfjs_ok; then
  specs=(); for p in "${TFJS_PKGS[@]}"; do specs+=("@tensorflow/$p@$TFJS_VERSION"); done
  log "npm install ${specs[*]} into $TFJS_DIR"
  mkdir -p "$TFJS_DIR"
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$TFJS_DIR" "${specs[@]}" >&2
fi
tfjs_ok || { log "TensorFlow.js $TFJS_VERSION missing under $TFJS_MODULES after install"; exit 1; }

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
  log "fetching the real TensorFlow.js graph models of ../shared/models"
  ../shared/models/fetch-tf.sh "$CACHE/models" >/dev/null
  TF_MODELS="$CACHE/models/MANIFEST-tf.tsv"
else
  log "../shared/models/fetch-tf.sh not found: tests on third-party TensorFlow models will fail"
fi

echo "export REMAT_ORT_LIB='$ORT_LIB'"
echo "export REMAT_MODELS='$MODELS'"
echo "export REMAT_TFJS_DIR='$TFJS_MODULES'"
echo "export REMAT_TF_MODELS='$TF_MODELS'"
