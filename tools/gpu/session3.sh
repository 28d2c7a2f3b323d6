#!/usr/bin/env bash
# GPU session 3 (2026-12-01, second session): run issue scripts with a limit each. Usage,
# from the repo root on the GPU machine: OUT=... bash tools/gpu/session3.sh STEP:SECONDS ...
# e.g. `issue13ab:560`. Each tools/gpu/STEP.sh writes into $OUT/STEP/; a log of every
# step goes to $OUT/log3.txt. The carried wheels (.whl/, see the device README) go to
# /tmp/site, which every step has on PYTHONPATH.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH="$PWD:/tmp/site"
LOG=$OUT/log3.txt
for item in "$@"; do
  step=${item%%:*}; lim=${item##*:}
  echo "### $step (limit $lim s) t=$SECONDS" | tee -a "$LOG"
  mkdir -p "$OUT/$step"
  OUT="$OUT/$step" LIMIT=$lim timeout -k 10 "$lim" bash "tools/gpu/$step.sh" >>"$LOG" 2>&1
  echo "--- $step rc=$? t=$SECONDS" | tee -a "$LOG"
done
