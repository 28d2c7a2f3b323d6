#!/usr/bin/env bash
# Calibrates `traceview ab` with planted host delays of known size (tools/planted_delay_add.py:
# a hand-written Triton add of 16x4096 bf16 after a busy-wait of 0, 1 or 3 us), in five steps:
#
#   truth     the planted delay's true cost, with no traceview: tools/planted_delay_truth.py
#             (plain vs plus_1us in interleaved blocks in one process, paired differences)
#             in TRUTH_PROCESSES (3) fresh processes, one JSON line each into truth.jsonl;
#   same_1us  `ab --same-process` with its default blocks (200 per side, the calls per block
#             chosen from the call's time; SAME_BLOCKS / SAME_N set --blocks / --baseline-n),
#             plain vs plus_1us: up to 100 rounds in SAME_S seconds, read as consecutive
#             10-round runs (tools/summarize_ab_calibration.py: resolved? does the interval
#             hold the truth?);
#   same_aa   the same with plain on both sides (A/A: quiet?);
#   fresh_3us fresh processes per side (forked from a template), the sides differing by
#             environment only (--b-env PLANTED_DELAY_NS=3000), each process against
#             torch's add in alternating blocks (--reference torch), --until FRESH_S s:
#             planned looks, stop at the first interval that excludes zero;
#   fresh_aa  the same without the planted delay (A/A), --until AA_S s.
#
# Run from the repository root on the GPU machine with traceview's dependencies importable (orjson
# writes --out: install the carried wheels into /tmp/site first), OUT an empty folder (STEPS="same_1us same_aa"
# runs some steps; SAME_S=110 etc. change the time each step is given):
#   OUT=/tmp/out bash tools/calibrate_ab_planted_delays_on_gpu.sh
# Then, here: python tools/summarize_ab_calibration.py OUT_FOLDER --fixture fixtures/ab_h200_planted_delays.json
# Each step writes $OUT/<step>.json (ab --out) and $OUT/<step>.txt (its report, exit code, seconds);
# truth writes $OUT/truth.jsonl and truth.txt. AB_DEVICE=cpu TRUTH_DEVICE=cpu: the CPU check.
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
export PYTHONUNBUFFERED=1 COLUMNS=120
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
SAME_S=${SAME_S:-150}; FRESH_S=${FRESH_S:-115}; AA_S=${AA_S:-60}
STEPS=${STEPS:-"truth same_1us same_aa fresh_3us fresh_aa"}
TRUTH_PROCESSES=${TRUTH_PROCESSES:-3}; TRUTH_PAIRS=${TRUTH_PAIRS:-2000}
# Same process: ab's defaults (200 blocks per side of about 150 us each). On the H200 a
# process flips between a fast and a slow state (24 vs 37 us per call) every few
# milliseconds; blocks of 100 calls (2.5 ms) straddled the flips and 2 rounds in 10 went
# wild; blocks of 5 calls (about 150 us) rarely do. SAME_BLOCKS=200 SAME_N=5 repeats the
# earlier explicit setting.
SAME_OPTS=()
[ -n "${SAME_BLOCKS:-}" ] && SAME_OPTS+=(--blocks "$SAME_BLOCKS")
[ -n "${SAME_N:-}" ] && SAME_OPTS+=(--baseline-n "$SAME_N")
# --no-split: the calibration times the verdict; each side's unprofiled split would add a
# capture per side after it.
COMMON=(--op add --shape 16x4096 --dtype bf16 --warmup 10 --width 120 --no-split ${AB_DEVICE:+--device "$AB_DEVICE"})

step() {  # step NAME ARGS...: one ab run, timed
  local name=$1; shift
  [[ " $STEPS " == *" $name "* ]] || return 0
  local t0=$SECONDS
  python3 -m traceview ab "${COMMON[@]}" "$@" --out "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  echo "exit $? seconds $((SECONDS - t0))" >>"$OUT/$name.txt"
  tail -n 3 "$OUT/$name.txt"
}

if [[ " $STEPS " == *" truth "* ]]; then
  t0=$SECONDS
  for _ in $(seq "$TRUTH_PROCESSES"); do
    python3 tools/planted_delay_truth.py --b plus_1us --pairs "$TRUTH_PAIRS" ${TRUTH_DEVICE:+--device "$TRUTH_DEVICE"} \
      >>"$OUT/truth.jsonl" 2>>"$OUT/truth.txt"
  done
  echo "exit $? seconds $((SECONDS - t0))" >>"$OUT/truth.txt"
  tail -n 1 "$OUT/truth.jsonl"
fi
step same_1us --same-process "${SAME_OPTS[@]}" --rounds 100 --time-limit "$SAME_S" \
  --a-path tools --b-path tools --a-fn planted_delay_add:plain --b-fn planted_delay_add:plus_1us \
  --a-name plain --b-name plus_1us
step same_aa --same-process "${SAME_OPTS[@]}" --rounds 100 --time-limit "$SAME_S" \
  --a-path tools --b-path tools --a-fn planted_delay_add:plain --b-fn planted_delay_add:plain \
  --a-name plain --b-name plain_again
step fresh_3us --reference torch --blocks 10 --baseline-n 100 --until "${FRESH_S}s" --rounds 60 \
  --a-path tools --b-path tools --fn planted_delay_add:from_env --b-env PLANTED_DELAY_NS=3000 \
  --a-name plain --b-name plus_3us
step fresh_aa --reference torch --blocks 10 --baseline-n 100 --until "${AA_S}s" --rounds 60 \
  --a-path tools --b-path tools --fn planted_delay_add:from_env \
  --a-name plain --b-name plain_again
