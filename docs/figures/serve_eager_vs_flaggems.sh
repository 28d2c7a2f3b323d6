#!/usr/bin/env bash
# traceview serve on the H200 (docs/serving.md, run 3): torch eager (A) vs FlagGems without `mul` (B; run 1's
# bisect found FlagGems 5.0.2 mul wrong inside the model), 6 interleaved fresh-process
# rounds, --child-timeout 180 (FlagGems' mm autotunes for over 60 s in a cold process),
# then a profiled prefill + 8 decode steps per side, explained. Writes $OUT/serve.json
# (rewritten after every stage) and $OUT/log.txt.
set -uo pipefail
LOG=$OUT/log.txt; W=/tmp/serve14c; rm -rf "$W"; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1
echo "### serve t=$SECONDS" >>"$LOG"
python3 -m traceview serve --backend eager --vs flag_gems --vs-exclude-ops mul \
  --layers 8 --hidden 1024 --heads 16 --kv-heads 4 --intermediate 2816 --vocab 32000 \
  --dtype bfloat16 --device cuda --seed 0 \
  --requests 16 --prompt-len 128 --output-len 32 --batch-size 8 --arrival offline \
  --rounds ${ROUNDS:-6} --check-steps 16 --profile-steps 8 --child-timeout 180 \
  --trace-dir "$W" --out "$OUT/serve.json" --format md >"$W/serve.md" 2>"$W/serve.err"
echo "--- serve rc=$? t=$SECONDS" >>"$LOG"
grep -v '^USDT' "$W/serve.err" | tail -60 >>"$LOG"
echo "### markdown" >>"$LOG"; cat "$W/serve.md" >>"$LOG"
for f in "$W"/serve-*-decode.json.gz; do
  [ -e "$f" ] || continue
  echo "### explain $f t=$SECONDS" >>"$LOG"
  timeout -k 2 30 python3 -m traceview explain "$f" --window 'decode_\d+' --calls 'decode_\d+' \
    --width 100 2>&1 | head -80 >>"$LOG"
  cp "$f" "$OUT/" 2>/dev/null
done
echo "done t=$SECONDS" >>"$LOG"
