#!/usr/bin/env bash
# `traceview ab` of a before/after whose answer is known, unprofiled, on the H200:
#   A = FlagGems 5.0.2 add 16x4096 bf16 through flag_gems.use_gems(), as shipped
#   B = the same with docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch first on the import path and TV13_PATCH=1,
#       which caches FlagGems' per-call type promotion (torch._prims_common.elementwise_dtypes);
#       a patch that cannot apply stops B's process (no silent A/A run)
# Up to 24 rounds, as many as fit in --time-limit (whole rounds only). Writes
# $OUT/ab.json (the ab result) and $OUT/ab.txt (the terminal report and progress).
# Part 2 (capture_flaggems_type_promotion.sh): the independent plain loop, profiled traces, diff, --fn, API.
set -uo pipefail
LIM=${LIMIT:-560}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv >"$OUT/ab.txt" 2>&1
python3 -c "import sys,torch,triton,flag_gems; print(sys.version.split()[0], torch.__version__, triton.__version__, flag_gems.__version__)" >>"$OUT/ab.txt" 2>&1
# the checks before the rounds (one fresh process per side, cold compile) take ~40 s
python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 --impl flag_gems \
  --rounds 24 --time-limit $((LIM - SECONDS - 75)) --b-path docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch \
  --b-env TV13_PATCH=1 --a-name unpatched --b-name patched --out "$OUT/ab.json" --width 100 \
  >>"$OUT/ab.txt" 2>&1
echo "ab rc=$? t=$SECONDS" >>"$OUT/ab.txt"
