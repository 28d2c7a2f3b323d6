#!/usr/bin/env bash
# Issue #14 on the H200, second run (session 2, call 3): the first run (issue14.sh) found by
# its bisect that FlagGems 5.0.2 `mul` is wrong inside the model (and the full backend ran
# past the 90 s child limit), then was cut by its own 205 s limit in round 1. This run
# starts from that finding (`--vs-exclude-ops mul`, no bisect) and keeps the A/B:
# torch eager (A) vs FlagGems without mul (B), 6 interleaved fresh-process rounds.
# Writes $OUT/serve.json and $OUT/log.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.:/tmp/site
LOG=$OUT/log.txt
W=/tmp/serve14b; rm -rf "$W"; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1
echo "### serve t=$SECONDS" | tee -a "$LOG"
timeout -k 5 265 python3 -m traceview serve --backend eager --vs flag_gems --vs-exclude-ops mul \
  --layers 8 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2816 --vocab 32000 \
  --dtype bfloat16 --device cuda --seed 0 \
  --requests 8 --prompt-len 128 --output-len 32 --batch-size 8 --arrival offline \
  --rounds 6 --check-steps 8 --profile-steps 4 --child-timeout 60 \
  --trace-dir "$W" --out "$OUT/serve.json" --format md >"$W/serve.md" 2>"$W/serve.err"
echo "--- serve rc=$? t=$SECONDS" | tee -a "$LOG"
grep -v '^USDT' "$W/serve.err" | tail -80 >>"$LOG"
echo "### markdown" >>"$LOG"; cat "$W/serve.md" >>"$LOG"
for f in "$W"/serve-*-decode.json.gz; do
  [ -e "$f" ] || continue
  echo "### explain $f t=$SECONDS" >>"$LOG"
  timeout -k 2 20 python3 -m traceview explain "$f" --window 'decode_\d+' --calls 'decode_\d+' \
    2>&1 | head -70 >>"$LOG"
done
echo "done t=$SECONDS" | tee -a "$LOG"
