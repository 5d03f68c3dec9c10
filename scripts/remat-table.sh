#!/usr/bin/env bash
# remat-table.sh: the end-to-end table of the remat pass. For each model and
# budget: compile (the main command), then, when a plan exists, onnx.checker
# and `remat-compile verify` (bitwise outputs, recompute placement, ORT's
# measured activation peaks at levels disabled and all, run times). Prints a
# Markdown table; a budget below the model's floor prints the proven floor,
# and one below the least peak the solvers reached (unproven) is followed
# by a compile at that peak, and one whose written model the target's
# order puts over it by a compile at the -budget the refusal suggests (at
# most two such compiles); the row names each budget.
#
# With -train it does the same for training graphs (passes/autodiff, loss
# sum) of the zoo models at sizes ORT runs in about a second: the plain
# training graph (-solver checkpoint-all) against the rematerialized one.
#
#   eval "$(scripts/setup.sh)"; scripts/remat-table.sh [-train] [BUDGETS]
#
# COMPILE_FLAGS adds flags to every compile (e.g. "-ort-shapes auto");
# TIME_LIMIT is compile's -time-limit (60s).
set -euo pipefail
cd "$(dirname "$0")/.."
train=""
if [ "${1:-}" = -train ]; then
  train=-train
  shift
fi
budgets=${1:-"90% 80% 70%"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/rc" ./cmd/remat-compile

models=("testdata/zoo/unet.onnx|" "testdata/zoo/fcn8.onnx|" "testdata/models/unet_like.onnx|")
if [ -n "$train" ]; then
  models=()
  for spec in ${TRAIN_MODELS:-vgg16:res=64:batch=4 vgg19:res=64:batch=4 mobilenet_v1:res=64:batch=4 mobilenet_v2:res=64:batch=4 resnet50:res=64:batch=4 unet:res=64:batch=4 fcn8:res=64:batch=4 segnet:res=64:batch=4}; do
    models+=("zoo:$spec|")
  done
elif [ -n "${REMAT_MODELS:-}" ] && [ -f "$REMAT_MODELS" ]; then
  while IFS=$'\t' read -r name path _ _ inputs; do
    [ "$name" = name ] && continue
    flags=""
    for kv in ${inputs//,/ }; do
      k=${kv%%:*}; v=${kv#*:}
      case "$v" in scalar:*) continue ;; esac # a value, not a shape: verify's -input-value
      flags="$flags -input-shape $k=$v"
    done
    models+=("$path|$flags")
  done < "$REMAT_MODELS"
fi

echo "| model | budget | predicted peak (B) | ORT model (B) | plan | overhead % | ORT disabled: orig → remat (B) | ORT all: orig → remat (B) | measured/predicted drop | ORT defaults (memory pattern on): predicted | measured disabled | measured all | run time ms (all) orig → remat | outputs |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  path=${entry%%|*}; flags=${entry#*|}
  name=$(basename "$path" .onnx)
  orig=$path
  if [ -n "$train" ]; then
    name=${path#zoo:}
    orig="$work/plain.onnx"
    "$work/rc" compile -train -solver checkpoint-all -o "$orig" "$path" > /dev/null
  fi
  for b in $budgets; do
    out="$work/$name.onnx"; rep="$work/$name.json"
    # shellcheck disable=SC2086
    # shellcheck disable=SC2086
    # A refused budget is compiled again as a user would, up to twice: at
    # the least peak the solvers reached, one unit of its last printed
    # digit up (bytes), when the refusal names no proof that the budget
    # is unreachable; at the -budget the refusal suggests when the
    # target's order of the written model peaks above the budget.
    label=$b cur=$b retries=0 msg=""
    # shellcheck disable=SC2086
    until msg=$("$work/rc" compile $train $flags ${COMPILE_FLAGS:-} -budget "$cur" -time-limit "${TIME_LIMIT:-60s}" -report "$rep" -o "$out" "$path" 2>&1); do
      floor=$(echo "$msg" | grep -o 'smallest peak possible, [^(]*([^)]*)' | head -1 || true)
      reached=$(echo "$msg" | grep -o 'smallest peak any solver reached, [^;]*' | head -1 || true)
      least=$(echo "$reached" | sed -n 's/.*reached, \([0-9.]* [KMG]iB\).*/\1/p')
      next="" why=""
      if [ -z "$floor" ] && [ -n "$least" ]; then
        next=$(python3 -c "
import math, sys
num, unit = sys.argv[1].split()
step = 10 ** -len(num.partition('.')[2])
print(math.ceil((float(num) + step) * {'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}[unit]))" "$least")
        why=$reached
      elif echo "$msg" | grep -q "order of the written model peaks at"; then
        next=$(echo "$msg" | grep -o 'try -budget [0-9.]*[KMG]iB' | head -1 | sed 's/try -budget //')
        why="the written model predicted over it: $(echo "$msg" | grep -o 'peaks at [0-9.]* [KMG]iB' | head -1)"
      fi
      if [ -z "$next" ] || [ "$retries" -ge 2 ]; then
        echo "| $name | $label | infeasible: ${floor:-${why:-$(echo "$msg" | head -1)}} | - | - | - | - | - | - | - | - | - | - | - |"
        continue 2
      fi
      label="$label refused ($why); at $next"
      cur=$next retries=$((retries + 1))
    done
    /usr/bin/python3 -c "import onnx,sys; onnx.checker.check_model(sys.argv[1], full_check=True)" "$out"
    # shellcheck disable=SC2086
    "$work/rc" verify -runs 5 -json $flags "$orig" "$out" > "$work/v.json" || true
    python3 - "$rep" "$work/v.json" "$name" "$label" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); v = json.load(open(sys.argv[2]))
lv = {l["level"]: l for l in v["levels"]}
def pair(l, key="peak_bytes"): return "%d → %d" % (l["original_model"][key], l["remat_model"][key])
ratio = ", ".join("%s %.0f%%" % (k, l.get("measured_over_predicted_drop_percent") or 0) for k, l in lv.items())
same = all(o["equal"] for l in v["levels"] for o in l["outputs"])
a = lv.get("all")
rt = "%.2f → %.2f" % (a["original_model"]["median_run_time_ms"], a["remat_model"]["median_run_time_ms"]) if a else "-"
print("| %s | %s | %d → %d | %d → %d | %s | %+.1f | %s | %s | %s | %d → %d | %s | %s | %s | %s%s |" % (
    sys.argv[3], sys.argv[4], r["before_peak_bytes"], r["after_peak_bytes"],
    r.get("ort_model_before_peak_bytes", 0), r.get("ort_model_after_peak_bytes", 0), r["plan_solver"] + (", shapes hidden" if r.get("ort_hidden_shapes") else ""), r["overhead_percent"],
    pair(lv["disabled"]) if "disabled" in lv else "-", pair(a) if a else "-", ratio,
    r.get("ort_model_default_before_peak_bytes", 0), r.get("ort_model_default_after_peak_bytes", 0),
    pair(lv["disabled"], "default_peak_bytes") if "disabled" in lv else "-", pair(a, "default_peak_bytes") if a else "-", rt,
    "bitwise identical" if same else "DIFFER", "" if v["ok"] else " (verify: " + "; ".join(v["failures"][:2]) + ")"))
PY
  done
done
