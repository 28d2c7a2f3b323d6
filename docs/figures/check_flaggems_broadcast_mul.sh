#!/usr/bin/env bash
# Correctness first, isolated, on the H200. The FlagGems 5.0.2 broadcast mul
# (bf16, 8x16x128x64 * 8x1x128x64, the rotary-embedding shape) must be reported as wrong
# (or crashed) with the worst element, the operands' strides and exit 3, before any
# timing; a contiguous mul must pass and capture normally; --check-layouts shows which
# layouts FlagGems gets wrong. Run from the repo root with $OUT set; about 3-4 minutes.
# Writes: $OUT/log.txt (every command, its exit code, the reports as a user sees them)
#         $OUT/reports.jsonl (one JSON line per command: name, rc, the --format json output)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
W=/tmp/w16; rm -rf "$W"; mkdir -p "$W"
LOG=$OUT/log.txt; JL=$OUT/reports.jsonl; : >"$LOG"; : >"$JL"

# step NAME LIMIT_S ARGS...: run `traceview capture ARGS --format json`, log the exit code,
# stderr and the report rendered as text (the same renderers the CLI uses).
step() {
  local name=$1 lim=$2; shift 2
  echo "### $name t=${SECONDS}s: traceview capture $*" | tee -a "$LOG"
  (cd "$W" && timeout -k 5 "$lim" env PYTHONPATH="$OLDPWD${PYTHONPATH:+:$PYTHONPATH}" \
     python3 -m traceview capture "$@" --format json) >"$W/out.json" 2>"$W/err.txt"
  local rc=$?
  echo "--- rc=$rc t=${SECONDS}s" | tee -a "$LOG"
  grep -v '^USDT' "$W/err.txt" | tail -n 30 >>"$LOG"
  python3 - "$name" "$rc" "$W/out.json" "$JL" >>"$LOG" 2>&1 <<'PY'
import json, sys
name, rc, path, jl = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
text = open(path).read().strip()
try:
    d = json.loads(text) if text else None
except ValueError:
    d = None
    print("(stdout was not JSON)", text[:2000])
# a failure report has a verdict; the layout matrix has rows and a total
if isinstance(d, dict) and "verdict" in d:
    from traceview.render.registry import RenderOptions, renderer
    print(renderer("text", "failure").render(d, RenderOptions()))
elif isinstance(d, dict) and "rows" in d and "total" in d:
    from traceview.render.registry import RenderOptions, renderer
    print(renderer("text", "layouts").render(d, RenderOptions(width=220)), end="")
elif isinstance(d, dict) and "traceview" in d:
    m = d["traceview"]
    d = {"trace": d["trace"], "correctness": m["correctness"],
         "baseline_full_api_ns_p50": m["baseline"]["full_api_ns_p50"],
         "device_ns": m["baseline"].get("device_ns"), "device": m["device"],
         "versions": m["versions"]}
    print(json.dumps(d, indent=1))
with open(jl, "a") as f:
    f.write(json.dumps({"name": name, "rc": rc, "out": d}) + "\n")
PY
}

nvidia-smi --query-gpu=name,driver_version --format=csv >>"$LOG" 2>&1
python3 -c "import sys,torch,triton,flag_gems; print(sys.version.split()[0], torch.__version__, triton.__version__, flag_gems.__version__)" >>"$LOG" 2>&1
ROPE="--op mul --impl flag_gems --shape 8x16x128x64,8x1x128x64 --dtype bf16"
# 1. the broadcast mul of the issue: expect rc=3, wrong values (or a located crash)
step gems_mul_broadcast 40 $ROPE
# 2. the same with a transposed first operand: expect rc=3
step gems_mul_broadcast_transposed 40 $ROPE --layout transposed
# 3. the layouts a model passes, FlagGems mul, on the rope output shape: expect rc=3, a table
step gems_check_layouts_rope 60 --op mul --impl flag_gems --dtype bf16 --shape 8x16x128x64 --check-layouts --timeout 30
# 4. a contiguous mul of equal shapes: expect rc=0, a trace, correctness passed both times
step gems_mul_contiguous 80 --op mul --impl flag_gems --shape 8x16x128x64 --dtype bf16 --iters 10 --warmup 3 --baseline-n 50
# 5. control, if time is left: the project's Triton kernel over the same layouts (expect rc=0)
if [ $SECONDS -lt 170 ]; then
  step triton_check_layouts_rope 40 --op mul --impl triton --dtype bf16 --shape 8x16x128x64 --check-layouts --timeout 30
fi
echo "done t=${SECONDS}s" | tee -a "$LOG"
