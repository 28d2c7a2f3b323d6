#!/usr/bin/env bash
# Reproduces fixtures/unprofiled_h200_flaggems.json on a CUDA machine with FlagGems:
# a capture per case (its split child times the heaviest functions one per run), the
# independent staged timing, and the comparison. Usage: tools/run_unprofiled_h200.sh OUTDIR
# [CASE ...] (cases "op:dtype"; default both). An existing OUTDIR/unprofiled_h200_flaggems.json
# keeps its other cases.
set -euo pipefail
out=${1:?output folder}
mkdir -p "$out"
fixture="$out/unprofiled_h200_flaggems.json"
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(sigmoid:float32 add:bfloat16)
for c in "${cases[@]}"; do
  op=${c%%:*}; dt=${c##*:}; name="${op}_${dt}"
  t0=$SECONDS
  python3 -m traceview capture --op "$op" --impl flag_gems --shape 65536 --dtype "$dt" \
    --out "$out/$name.json.gz" > "$out/$name.capture.txt" 2>&1 || { tail -20 "$out/$name.capture.txt"; exit 1; }
  echo "capture wall: $((SECONDS - t0)) s" >> "$out/$name.capture.txt"
  python3 -m traceview explain "$out/$name.json.gz" -f json > "$out/$name.explain.json"
  python3 tools/staged_timing_flaggems.py --op "$op" --shape 65536 --dtype "$dt" \
    --out "$out/$name.staged.json" > /dev/null
  python3 tools/unprofiled_vs_staged.py --case "$name" --explain "$out/$name.explain.json" \
    --staged "$out/$name.staged.json" --fixture "$fixture"
done
