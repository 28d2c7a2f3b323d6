#!/usr/bin/env bash
# `ab --same-process` on the H200: the before/after of ab_flaggems_type_promotion.sh with both
# variants in each fresh process, so the per-process fast/slow state seen in sessions 1-2
# (two modes, ~85 and ~140 us, on both sides) cancels in the difference:
#   1. the independent truth, docs/figures/flaggems_type_promotion/loop_flaggems_type_promotion_same_process.py: PROCS plain-loop processes,
#      no traceview code (~20 s each);
#   2. `ab --same-process --blocks 10`, as many rounds as fit (--time-limit);
#   3. `capture --fn` and the Python API on the hand-written Triton kernel (capture_flaggems_type_promotion.sh).
# Writes $OUT/loop_same.json, $OUT/ab_same.json, $OUT/ab_same.txt and $OUT/rest.txt.
set -uo pipefail
LIM=${LIMIT:-500}; PROCS=${PROCS:-4}
python3 docs/figures/flaggems_type_promotion/loop_flaggems_type_promotion_same_process.py "$PROCS" >"$OUT/loop_same.json" 2>"$OUT/loop_same.err"
echo "loop_same rc=$? t=$SECONDS" >>"$OUT/loop_same.err"
PYTHONPATH="docs/figures/flaggems_type_promotion${PYTHONPATH:+:$PYTHONPATH}" python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 \
  --same-process --blocks 10 --a-fn flaggems_type_promotion_fns:unpatched --b-fn flaggems_type_promotion_fns:patched \
  --a-name unpatched --b-name patched --rounds 16 --time-limit $((LIM - SECONDS - 90)) \
  --out "$OUT/ab_same.json" --width 100 >"$OUT/ab_same.txt" 2>&1
echo "ab rc=$? t=$SECONDS" >>"$OUT/ab_same.txt"
STEPS="fn api" bash docs/figures/flaggems_type_promotion/capture_flaggems_type_promotion.sh
