#!/usr/bin/env bash
# tf-remat-table.sh: the end-to-end table of the remat pass on TensorFlow
# graphs, for the tfjs target. For each real TensorFlow.js model of
# $REMAT_TF_MODELS (and the zoo models of ZOO_TF, built as TensorFlow
# graphs) and each budget: compile (the main command: the plan in
# TensorFlow.js's order, recomputations gated where its order would run
# them too early), then `remat-compile verify` in TensorFlow.js (bitwise
# outputs, every recomputation where the plan put it, tf.profile's peaks,
# run and kernel times; a tiled fit's predicted overhead includes the
# tiling's extra compute). A budget below what remat can reach prints the
# floor, and the script then also runs the smallest budget the compiler
# suggests ("min"). Prints a Markdown table.
#
# With -train it does the same for training graphs in TensorFlow ops
# (passes/autodiff, loss sum) of the zoo models of TRAIN_TF (built as
# TensorFlow graphs; TRAIN_TF= for none) and the real models, verifying
# the plain training graph (-solver checkpoint-all) against the
# rematerialized one in TensorFlow.js; a model with an op that has no
# TensorFlow gradient rule gets a row with the error.
#
#   eval "$(scripts/setup.sh)"; scripts/tf-remat-table.sh [-train] [BUDGETS]
set -euo pipefail
cd "$(dirname "$0")/.."
train=""
if [ "${1:-}" = -train ]; then
  train="-train -loss sum"
  shift
fi
budgets=${1:-"90% 80% 70%"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/rc" ./cmd/remat-compile

models=()
if [ -n "$train" ]; then
  for spec in ${TRAIN_TF-mobilenet_v1:res=64:batch=4 mobilenet_v2:res=64:batch=4 resnet:depth=18:res=64:batch=4 resnet50:res=64:batch=4 unet:res=64:batch=4 fcn8:res=64:batch=4 vgg16:res=64:batch=4 googlenet:res=64:batch=4}; do
    models+=("zoo:$spec:tf|zoo:$spec:tf|")
  done
fi
if [ -n "${REMAT_TF_MODELS:-}" ] && [ -f "$REMAT_TF_MODELS" ]; then
  while IFS=$'\t' read -r name path _ _ inputs; do
    [ "$name" = name ] && continue
    flags=""
    for item in $inputs; do
      k=${item%%:*}; rest=${item#*:}; dims=${rest%%:*}
      flags="$flags -input-shape $k=$dims"
    done
    models+=("$name|$path|$flags")
  done < "$REMAT_TF_MODELS"
fi
if [ -z "$train" ]; then
  for spec in ${ZOO_TF:-}; do
    models+=("zoo:$spec:tf|zoo:$spec:tf|")
  done
fi

echo "| model | budget | liveness peak (B) | tfjs predicted (B) | plan | recomputations (gates) | tf.profile orig → remat (B) | measured/predicted drop | overhead: predicted / measured (median, fastest run) | outputs, placement |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row() { # name path flags budget
  local name=$1 path=$2 flags=$3 b=$4
  local dir="$work/$name/$b"; mkdir -p "$dir"
  local out="$dir/model.json" rep="$dir/report.json" orig="$dir/orig/model.json"
  mkdir -p "$dir/orig"
  # shellcheck disable=SC2086
  if ! msg=$("$work/rc" compile $train $flags -budget "$b" -time-limit "${TIME_LIMIT:-60s}" -report "$rep" -o "$out" "$path" 2>&1); then
    floor=$(echo "$msg" | grep -o 'smallest peak possible, [^(]*([^)]*)' | head -1 || true)
    [ -z "$floor" ] && floor=$(echo "$msg" | grep -o 'smallest peak any solver reached, [^;]*' | head -1 || true)
    if [ -n "$floor" ]; then
      echo "| $name | $b | infeasible: $floor | - | - | - | - | - | - | - |"
    else
      echo "| $name | $b | error: $(echo "$msg" | head -2 | tail -1) | - | - | - | - | - | - | - |"
    fi
    echo "$msg" | grep -o 'try -budget [0-9.]*[KMG]*i*B' | head -1 | sed 's/try -budget //' > "$work/try"
    return 1
  fi
  # The original as the compiler reads it (a zoo model written as
  # model.json; with -train, the plain training graph).
  if [ -n "$train" ]; then
    # shellcheck disable=SC2086
    "$work/rc" compile $train -solver checkpoint-all $flags -o "$orig" "$path" > /dev/null
  else
    # shellcheck disable=SC2086
    "$work/rc" convert $flags -o "$orig" "$path" > /dev/null
  fi
  # shellcheck disable=SC2086
  "$work/rc" verify -runs "${RUNS:-5}" -json $flags "$orig" "$out" > "$dir/v.json" || true
  python3 - "$rep" "$dir/v.json" "$name" "$b" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); v = json.load(open(sys.argv[2]))
md = v.get("metadata") or {}
ratio = v.get("measured_over_predicted_drop_percent")
same = all(o["equal"] for o in v["outputs"])
tl = r.get("tiling") or {}
plan = r["plan_solver"] + (" + tiling (%d region(s))" % len(tl.get("regions") or []) if tl else "")
placed = sum(1 for p in v.get("recompute") or [] if p["ok"])
n = len(v.get("recompute") or [])
print("| %s | %s | %d → %d | %d → %d | %s | %d (%d) | %d → %d | %s | %+.1f%% / %+.1f%%, %+.1f%% | %s, %d/%d placed%s |" % (
    sys.argv[3], sys.argv[4], r["before_peak_bytes"], r["after_peak_bytes"],
    r.get("tfjs_model_before_peak_bytes", 0), r.get("tfjs_model_after_peak_bytes", 0), plan,
    r["recomputations"], len(md.get("gated") or []),
    v["original_model"]["peak_bytes"], v["remat_model"]["peak_bytes"],
    "-" if ratio is None else "%.0f%%" % ratio,
    r["overhead_percent"] + tl.get("extra_compute_percent", 0), v["run_time_change_percent"], v["min_run_time_change_percent"],
    "bitwise identical" if same else "DIFFER", placed, n,
    "" if v["ok"] else " (verify: " + "; ".join(v["failures"][:2]) + ")"))
PY
}
for entry in "${models[@]}"; do
  IFS='|' read -r name path flags <<< "$entry"
  feasible=0
  for b in $budgets; do
    if row "$name" "$path" "$flags" "$b"; then feasible=1; fi
  done
  if [ "$feasible" = 0 ] && [ -s "$work/try" ]; then
    row "$name" "$path" "$flags" "$(cat "$work/try")" || true
  fi
done
