#!/usr/bin/env bash
# GPU session 2 (2026-12-01): run the issue scripts on the merged tree. Usage, from the repo
# root on the GPU machine: OUT=... bash tools/gpu/session2.sh issue16 issue13 [shapes2 ...]
# Each issueN.sh writes at most 2 files into $OUT/issueN/; shapes2 re-captures the cold
# compiled model under a profiler schedule. A log of every step goes to $OUT/log2.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH="$PWD:/tmp/site"
LOG=$OUT/log2.txt
for step in "$@"; do
  echo "### $step t=$SECONDS" | tee -a "$LOG"
  if [ "$step" = shapes2 ]; then
    mkdir -p "$OUT/shapes2"
    export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d)
    timeout -k 5 120 python3 tools/gpu/shapes.py model_schedule_cold /tmp/model_schedule_cold.json >>"$LOG" 2>&1
    gzip -9c /tmp/model_schedule_cold.json > "$OUT/shapes2/model_schedule_cold.json.gz"
  else
    mkdir -p "$OUT/$step"
    OUT="$OUT/$step" timeout -k 10 300 bash "tools/gpu/$step.sh" >>"$LOG" 2>&1
  fi
  echo "--- $step rc=$? t=$SECONDS" | tee -a "$LOG"
done
