#!/usr/bin/env bash
# The GPU acceptance of ab --same-process's defaults and of serve's cold path, in one call
# of about TOTAL_S (570) s, at most HARD_S (590):
#
#   0. bytecode  /tmp/site's packages compiled once (compileall; below, why);
#   1. truth     the planted +1 us delay's cost, measured with a plain loop and no traceview
#                (tools/planted_delay_truth.py, TRUTH_PROCESSES (3) fresh processes);
#   2. same_1us  `ab --same-process` with its defaults (no --blocks, no --baseline-n), plain
#                vs plus_1us, up to 100 rounds in SAME_S s, read as 10-round runs;
#   3. same_aa   the same, plain on both sides (A/A);
#      (1-3: tools/calibrate_ab_planted_delays_on_gpu.sh; SAME_S is what the time leaves
#      after SERVE_S for step 4 and about 30 s for step 1, split between steps 2 and 3)
#   4. serve     `traceview serve --vs flag_gems --exclude-failing` cold (Triton's, FlagGems'
#                and traceview's caches empty: tools/measure_serve_default_on_gpu.sh, no warm
#                run), stopped at the time left: at least SERVE_S (195) s, and never past
#                HARD_S (590) s from the start (a device command is stopped at 600 s);
#   5. tools/summarize_ab_calibration.py prints the acceptance lines: per 10-round run
#      resolved? interval holds the measured truth? A/A quiet?; serve cold <= 180 s?
#
# Run from the repository root on the GPU machine (the carried wheels installed into
# /tmp/site and on PYTHONPATH; flag_gems 5.0.2 among them), OUT an empty folder:
#   OUT=/tmp/out bash tools/calibrate_ab_defaults_then_time_serve_on_gpu.sh
# Writes 5 files: $OUT/acceptance.txt (the acceptance lines and the calibration table),
# $OUT/serve_summary.txt (where serve's cold time went), $OUT/run.log (this script's
# progress), $OUT/calibration.tar.gz (truth.jsonl, same_*.json/txt) and $OUT/serve.tar.gz
# (cold.json, .md, .log).
# The CPU check of this script (115 s on a shared 2-core machine; too few rounds for a run,
# so its ab lines say FAIL): the tests' tiny model and stand-in FlagGems,
#   G=PYTHONPATH=$PWD/tests/fake_gems OUT=/tmp/e2e AB_DEVICE=cpu TRUTH_DEVICE=cpu \
#   TRUTH_PAIRS=200 TRUTH_PROCESSES=1 TOTAL_S=150 SERVE_S=60 TRUTH_S=10 HARD_S=170 \
#   SERVE_ARGS="--device cpu --dtype float32 --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
#     --intermediate 128 --vocab 512 --requests 4 --prompt-len 16 --output-len 8 \
#     --check-steps 4 --env $G --vs-env $G --profile-steps 2" \
#   bash tools/calibrate_ab_defaults_then_time_serve_on_gpu.sh
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
# the tools import traceview from this checkout (the carried wheels' PYTHONPATH alone
# would leave it out: a tool's own folder, not the checkout, is first on its path)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# 175 s per same-process step: about 1.7 s a round on the H200 after 10-15 s of checks
# and probes, so 90-95 rounds, nine 10-round runs (the acceptance counts a run the time
# could not fill as failed, so nine runs that all pass are "9 of 10")
TOTAL_S=${TOTAL_S:-570}; SERVE_S=${SERVE_S:-195}; TRUTH_S=${TRUTH_S:-25}; HARD_S=${HARD_S:-590}
began=$SECONDS
cal=$(mktemp -d /tmp/ab-defaults-cal.XXXXXX)
serve_out=$(mktemp -d /tmp/ab-defaults-serve.XXXXXX)
exec > >(tee "$OUT/run.log") 2>&1
# The carried wheels are installed without bytecode and the GPU machine sets
# PYTHONDONTWRITEBYTECODE=1, so every process would compile FlagGems' 535 modules from
# source (1.2 s of its 3.3 s import on the H200, docs/ab.md); a user's install has its
# bytecode. Compiled once here, before anything is timed (the caches serve measures cold
# are Triton's, FlagGems' and traceview's, not Python's).
[[ -d /tmp/site ]] && python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
echo "bytecode: $((SECONDS - began)) s"
same_s=${SAME_S:-$(( (TOTAL_S - (SECONDS - began) - SERVE_S - TRUTH_S) / 2 ))}
echo "plan: truth ~${TRUTH_S} s, same_1us and same_aa ${same_s} s each, serve cold the rest (at least ${SERVE_S} s) of ${TOTAL_S} s"

OUT=$cal STEPS="truth same_1us same_aa" SAME_S=$same_s bash tools/calibrate_ab_planted_delays_on_gpu.sh

left=$((TOTAL_S - (SECONDS - began) - 10))
[ "$left" -lt "$SERVE_S" ] && left=$SERVE_S
hard=$((HARD_S - (SECONDS - began) - 10))
[ "$left" -gt "$hard" ] && left=$hard
echo "serve cold: $left s left"
wall=""
if [ "$left" -lt 30 ]; then
  echo "serve: not run, $left s left" >"$serve_out/summary.txt"
else
  OUT=$serve_out BUDGET_S=$left COLD_S=$left WARM_MIN_S=100000 bash tools/measure_serve_default_on_gpu.sh >/dev/null
  wall=$(sed -n 's/^== cold: exit [0-9]*, wall \([0-9.]*\) s.*/\1/p' "$serve_out/summary.txt")
fi
cp "$serve_out/summary.txt" "$OUT/serve_summary.txt"
serve_args=()
[ -f "$serve_out/cold.json" ] && serve_args=(--serve-json "$serve_out/cold.json" ${wall:+--serve-wall-s "$wall"})
python3 tools/summarize_ab_calibration.py "$cal" "${serve_args[@]}" >"$OUT/acceptance.txt" 2>&1
tar -C "$cal" -czf "$OUT/calibration.tar.gz" .
tar -C "$serve_out" -czf "$OUT/serve.tar.gz" --exclude summary.txt .
cat "$OUT/acceptance.txt"
echo "all: $((SECONDS - began)) s"
rm -rf "$cal" "$serve_out"
