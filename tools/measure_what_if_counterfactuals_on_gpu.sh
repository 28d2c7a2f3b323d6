#!/usr/bin/env bash
# Measure the what-if counterfactuals unprofiled on the GPU, and profile each shape's eager
# call once (tools/measure_what_if_counterfactuals_on_gpu.py). Run from a checkout (or a
# copy of its tools/) on the device machine; results land in $OUT.
set -o pipefail
OUT=${OUT:-/tmp/what_if_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/log.txt"
PYTHONUNBUFFERED=1 python3 "$(dirname "$0")/measure_what_if_counterfactuals_on_gpu.py" \
    --out "$OUT" "$@" 2>&1 | grep -v "^USDT" | tee -a "$OUT/log.txt"
