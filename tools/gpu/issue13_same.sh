#!/usr/bin/env bash
# Issue 13 on the H200, next session: the same before/after as issue13ab.sh, measured with
# `ab --same-process` (both variants in each fresh process, 10 alternating blocks), so the
# per-process fast/slow state seen in sessions 1-2 (two modes, ~85 and ~140 us) cancels.
# Then `capture --fn` and the Python API on the hand-written Triton kernel (issue13_rest.sh).
# Writes $OUT/ab_same.json, $OUT/ab_same.txt and $OUT/rest.txt.
set -uo pipefail
LIM=${LIMIT:-400}
PYTHONPATH="tools/gpu${PYTHONPATH:+:$PYTHONPATH}" python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 \
  --same-process --blocks 10 --a-fn issue13_fns:unpatched --b-fn issue13_fns:patched \
  --a-name unpatched --b-name patched --rounds 12 --time-limit $((LIM - SECONDS - 120)) \
  --out "$OUT/ab_same.json" --width 100 >"$OUT/ab_same.txt" 2>&1
echo "ab rc=$? t=$SECONDS" >>"$OUT/ab_same.txt"
STEPS="fn api" bash tools/gpu/issue13_rest.sh
