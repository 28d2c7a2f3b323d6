#!/usr/bin/env bash
# Calibrates `traceview ab` with planted host delays of known size (tools/planted_delay_add.py:
# a hand-written Triton add of 16x4096 bf16 after a busy-wait of 0, 1 or 3 us), in four steps:
#
#   same_1us  `ab --same-process --blocks 10`, plain vs plus_1us: up to 100 rounds in
#             SAME_S seconds, read as consecutive 10-round runs (tools/summarize_ab_calibration.py);
#   same_aa   the same with plain on both sides (A/A);
#   fresh_3us fresh processes per side (forked from a template), the sides differing by
#             environment only (--b-env PLANTED_DELAY_NS=3000), each process against
#             torch's add in alternating blocks (--reference torch), --until FRESH_S s:
#             planned looks, stop at the first interval that excludes zero;
#   fresh_aa  the same without the planted delay (A/A), --until AA_S s.
#
# Run from the repository root on the GPU machine, OUT an empty folder:
#   OUT=/tmp/out bash tools/calibrate_ab_planted_delays_on_gpu.sh
# Then, here: python tools/summarize_ab_calibration.py OUT_FOLDER --fixture fixtures/ab_h200_planted_delays.json
# Each step writes $OUT/<step>.json (ab --out) and $OUT/<step>.txt (its report, exit code, seconds).
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
export PYTHONUNBUFFERED=1 COLUMNS=120
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
SAME_S=${SAME_S:-150}; FRESH_S=${FRESH_S:-115}; AA_S=${AA_S:-60}
COMMON=(--op add --shape 16x4096 --dtype bf16 --warmup 10 --baseline-n 100 --width 120)

step() {  # step NAME ARGS...: one ab run, timed
  local name=$1; shift
  local t0=$SECONDS
  python3 -m traceview ab "${COMMON[@]}" "$@" --out "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  echo "exit $? seconds $((SECONDS - t0))" >>"$OUT/$name.txt"
  tail -n 3 "$OUT/$name.txt"
}

step same_1us --same-process --blocks 10 --rounds 100 --time-limit "$SAME_S" \
  --a-path tools --b-path tools --a-fn planted_delay_add:plain --b-fn planted_delay_add:plus_1us \
  --a-name plain --b-name plus_1us
step same_aa --same-process --blocks 10 --rounds 100 --time-limit "$SAME_S" \
  --a-path tools --b-path tools --a-fn planted_delay_add:plain --b-fn planted_delay_add:plain \
  --a-name plain --b-name plain_again
step fresh_3us --reference torch --blocks 10 --until "${FRESH_S}s" --rounds 60 \
  --a-path tools --b-path tools --fn planted_delay_add:from_env --b-env PLANTED_DELAY_NS=3000 \
  --a-name plain --b-name plus_3us
step fresh_aa --reference torch --blocks 10 --until "${AA_S}s" --rounds 60 \
  --a-path tools --b-path tools --fn planted_delay_add:from_env \
  --a-name plain --b-name plain_again
