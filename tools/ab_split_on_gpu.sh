#!/usr/bin/env bash
# traceview ab with each side's unprofiled split on a CUDA machine with FlagGems, from the
# repository root: sigmoid 65536 float32, torch (A) against FlagGems (B), 6 rounds, the
# profiled captures into $OUT/traces (the split comes with them). Writes $OUT/ab.json,
# $OUT/ab.txt, $OUT/ab.md. Expected wall on the H200: ~180 s (checks and probes ~20 s,
# 12 forked processes ~50 s, the torch capture ~40 s, the FlagGems one ~90 s).
# Usage: OUT=folder tools/ab_split_on_gpu.sh
set -uo pipefail
out=${OUT:?set OUT to the output folder}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
start=$SECONDS
python3 -m traceview ab --op sigmoid --shape 65536 --dtype float32 --a-impl torch \
  --b-impl flag_gems --rounds 6 --out "$out/ab.json" --trace-dir "$out/traces" --width 120 \
  > "$out/ab.txt" 2> "$out/ab.err" || { echo "ab failed"; tail -20 "$out/ab.err"; }
[ -f "$out/ab.json" ] && python3 - "$out/ab.json" > "$out/ab.md" <<'PY'
import json, sys
from traceview.render.registry import RenderOptions, renderer
out = renderer("md", "ab").render(json.load(open(sys.argv[1])), RenderOptions())
print(out if isinstance(out, str) else out.decode())
PY
gzip -f "$out"/traces/*.json 2>/dev/null || true
echo "total: $((SECONDS - start)) s" | tee "$out/wall.txt"
