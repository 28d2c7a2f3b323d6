#!/usr/bin/env bash
# The A/A check of `ab --same-process` on the H200: after the interleaved device figure
# (baseline.device_per_op_interleaved), an A/A run with --same-process (the same callable
# on both sides: the verdict must be "cannot tell" and the device figures alike), then the
# A/B again, then `capture --fn` and the Python API (no "Profiler clears events" warning).
# Writes $OUT/aa.{json,txt}, $OUT/ab2.{json,txt} and $OUT/rest.txt.
set -uo pipefail
LIM=${LIMIT:-360}
TVAB=(python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 --same-process --blocks 10)
export PYTHONPATH="docs/figures/flaggems_type_promotion${PYTHONPATH:+:$PYTHONPATH}"
"${TVAB[@]}" --a-fn flaggems_type_promotion_fns:unpatched --b-fn flaggems_type_promotion_fns:unpatched --a-name unpatched \
  --b-name unpatched-again --rounds 6 --time-limit 130 --out "$OUT/aa.json" --width 100 \
  >"$OUT/aa.txt" 2>&1
echo "aa rc=$? t=$SECONDS" >>"$OUT/aa.txt"
"${TVAB[@]}" --a-fn flaggems_type_promotion_fns:unpatched --b-fn flaggems_type_promotion_fns:patched --a-name unpatched \
  --b-name patched --rounds 12 --time-limit $((LIM - SECONDS - 70)) --out "$OUT/ab2.json" \
  --width 100 >"$OUT/ab2.txt" 2>&1
echo "ab rc=$? t=$SECONDS" >>"$OUT/ab2.txt"
STEPS="fn api" bash docs/figures/flaggems_type_promotion/capture_flaggems_type_promotion.sh
