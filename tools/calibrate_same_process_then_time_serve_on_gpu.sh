#!/usr/bin/env bash
# Two GPU measurements in one call of at most TOTAL_S (295) s:
#
#   1. more same-process calibration runs: tools/calibrate_ab_planted_delays_on_gpu.sh with
#      STEPS="same_1us same_aa" and SAME_S (45) s each (about 1.7 s a round: two more
#      10-round runs of the planted +1 us and of the A/A);
#   2. the default serving A/B timed cold: tools/measure_serve_default_on_gpu.sh in the
#      time left (its cold run stopped at that limit; its warm run only if 80 s remain).
#
# CAL_STEPS="" skips step 1 (the CPU check of this script, with SERVE_ARGS as for step 2).
# Run from the repository root on the GPU machine (the carried wheels installed into
# /tmp/site and on PYTHONPATH), OUT an empty folder:
#   OUT=/tmp/out bash tools/calibrate_same_process_then_time_serve_on_gpu.sh
# Writes $OUT/same_1us.{json,txt}, $OUT/same_aa.{json,txt} (the calibration script's), and
# $OUT/serve_summary.txt plus $OUT/serve.tar.gz (cold/warm .json .md .log: the serve
# script's files, packed so that at most 8 files come back).
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
TOTAL_S=${TOTAL_S:-295}
began=$SECONDS
cal_steps=${CAL_STEPS-same_1us same_aa}
if [ -n "$cal_steps" ]; then
  STEPS="$cal_steps" SAME_S=${SAME_S:-45} bash tools/calibrate_ab_planted_delays_on_gpu.sh
fi
left=$((TOTAL_S - (SECONDS - began) - 3))
if [ "$left" -lt 30 ]; then
  echo "serve: not run, $left s left" | tee "$OUT/serve_summary.txt"
else
  serve_out=$(mktemp -d /tmp/serve-out.XXXXXX)
  OUT=$serve_out BUDGET_S=$left COLD_S=$left bash tools/measure_serve_default_on_gpu.sh
  cp "$serve_out/summary.txt" "$OUT/serve_summary.txt"
  tar -C "$serve_out" -czf "$OUT/serve.tar.gz" --exclude summary.txt .
fi
echo "all: $((SECONDS - began)) s"
