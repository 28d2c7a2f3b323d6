#!/usr/bin/env bash
# The rest of the known-answer before/after on the H200 (ab_flaggems_type_promotion.sh: the A/B, whose ab.json must be in the
# working tree as fixtures/ab_h200_flaggems_add.json for the diff step):
#   1. the independent truth: docs/figures/flaggems_type_promotion/loop_flaggems_type_promotion.py, a plain perf_counter_ns +
#      synchronize loop in alternating fresh processes (PAIRS pairs), no traceview code;
#   2. one profiled `traceview capture` per side (B with the patch), then
#      `traceview diff before after --ab ab.json` (unprofiled first, code-path table);
#   3. `capture --fn` and the Python API on the hand-written Triton kernel in examples/.
# Writes $OUT/rest.txt (everything) and $OUT/loop.json; set STEPS to a subset of
# "loop traces fn api" (default: all).
set -uo pipefail
STEPS=${STEPS:-loop traces fn api}; PAIRS=${PAIRS:-6}
LOG=$OUT/rest.txt; W=$(mktemp -d); PATCH=docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch
TV="python3 -m traceview"; COMMON=(--op add --shape 16x4096 --dtype bf16)
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has loop; then
  echo "### plain loop t=$SECONDS" >>"$LOG"
  python3 docs/figures/flaggems_type_promotion/loop_flaggems_type_promotion.py "$PAIRS" "$PATCH" >"$OUT/loop.json" 2>>"$LOG"
  echo "--- loop rc=$? t=$SECONDS" >>"$LOG"; cat "$OUT/loop.json" >>"$LOG"
fi
if has traces; then
  echo "### profiled traces t=$SECONDS" >>"$LOG"
  $TV capture "${COMMON[@]}" --impl flag_gems --out $W/unpatched.json.gz >>"$LOG" 2>&1
  echo "--- A rc=$? t=$SECONDS" >>"$LOG"
  PYTHONPATH="$PATCH:$PYTHONPATH" TV13_PATCH=1 $TV capture "${COMMON[@]}" --impl flag_gems \
    --out $W/patched.json.gz >>"$LOG" 2>&1
  echo "--- B rc=$? t=$SECONDS" >>"$LOG"
  cp $W/unpatched.json.gz $W/patched.json.gz "$OUT/" 2>>"$LOG"
  AB=fixtures/ab_h200_flaggems_add.json; [ -e $AB ] && ABOPT=(--ab $AB) || ABOPT=()
  for w in 80 120; do
    echo "### diff --width $w t=$SECONDS" >>"$LOG"
    $TV diff $W/unpatched.json.gz $W/patched.json.gz "${ABOPT[@]}" --width $w >>"$LOG" 2>&1
    echo "--- diff rc=$?" >>"$LOG"
  done
  $TV diff $W/unpatched.json.gz $W/patched.json.gz "${ABOPT[@]}" --format md >"$OUT/diff.md" 2>>"$LOG"
fi
if has fn; then
  echo "### capture --fn t=$SECONDS" >>"$LOG"
  $TV capture "${COMMON[@]}" --fn examples.triton_add:add --out $W/fn.json.gz >>"$LOG" 2>&1
  echo "--- fn rc=$? t=$SECONDS" >>"$LOG"
  $TV explain $W/fn.json.gz --width 100 2>&1 | head -60 >>"$LOG"
fi
if has api; then
  echo "### python API t=$SECONDS" >>"$LOG"
  python3 - "$W" >>"$LOG" 2>&1 <<'PY'
import sys
import torch
import traceview
from examples.triton_add import add
w = sys.argv[1]
a = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
m = traceview.capture(add, a, b, reference=torch.add, out=f"{w}/api.json.gz")
print("api correctness", m["correctness"]["passed"], "max_abs_err", m["correctness"]["max_abs_err"])
print("api full call p50 ns", m["baseline"]["full_api_ns_p50"], "amortized submit ns",
      m["baseline"]["amortized_submit_ns"], "device ns", m["baseline"]["device_ns"])
PY
  echo "--- api rc=$? t=$SECONDS" >>"$LOG"
fi
echo "### done t=$SECONDS" >>"$LOG"
rm -rf "$W"
