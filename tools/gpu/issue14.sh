#!/usr/bin/env bash
# Issue #14 on the H200: traceview serve, torch eager (A) vs FlagGems (B), 6 interleaved
# fresh-process rounds, correctness first (FlagGems ops that crash or are wrong alone are
# found by the one-op-at-a-time bisect, reported, and excluded: --exclude-failing), then a
# profiled prefill + 8 decode steps per side run through traceview explain.
# Run from the repo root on the GPU machine with $OUT set; about 3-4 minutes. Writes:
#   $OUT/serve.json  the full document (docs/serving.md), rewritten after every stage
#   $OUT/log.txt     versions, the progress log (elapsed seconds), the markdown report,
#                    and explain's terminal report of each side's decode trace
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.:/tmp/site
LOG=$OUT/log.txt
W=/tmp/serve14; rm -rf "$W"; mkdir -p "$W"
echo "### versions t=$SECONDS" >>"$LOG"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1
# (the software versions are in serve.json: variants[].environment, as each child saw them)

echo "### serve t=$SECONDS" | tee -a "$LOG"
timeout -k 5 205 python3 -m traceview serve --backend eager --vs flag_gems --exclude-failing \
  --layers 8 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2816 --vocab 32000 \
  --dtype bfloat16 --device cuda --seed 0 \
  --requests 16 --prompt-len 128 --output-len 32 --batch-size 8 --arrival offline \
  --rounds 6 --check-steps 16 --profile-steps 8 --child-timeout 90 \
  --trace-dir "$W" --out "$OUT/serve.json" --format md >"$W/serve.md" 2>"$W/serve.err"
echo "--- serve rc=$? t=$SECONDS" | tee -a "$LOG"
grep -v '^USDT' "$W/serve.err" | tail -80 >>"$LOG"
echo "### markdown" >>"$LOG"; cat "$W/serve.md" >>"$LOG"

for f in "$W"/serve-*-decode.json.gz; do
  [ -e "$f" ] || continue
  echo "### explain $f t=$SECONDS" >>"$LOG"
  timeout -k 2 10 python3 -m traceview explain "$f" --window 'decode_\d+' --calls 'decode_\d+' \
    2>&1 | head -70 >>"$LOG"
done
ls -la "$W" >>"$LOG" 2>&1
echo "done t=$SECONDS" | tee -a "$LOG"
