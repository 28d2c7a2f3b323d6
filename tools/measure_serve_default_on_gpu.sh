#!/usr/bin/env bash
# Times the default serving A/B, `traceview serve --vs flag_gems --exclude-failing` (torch
# eager against FlagGems on the default 155 M-parameter Llama, 6 interleaved rounds, the
# profiled decode steps), on a GPU, in two runs:
#
#   cold  the first run on a machine: Triton's, FlagGems' and traceview's caches all empty
#         (fresh folders), so the FlagGems check compiles every kernel and autotunes mm,
#         then bisects (FlagGems 5.0.2's mul is wrong in this model) and checks again;
#   warm  the same command again with --no-check-cache: the check runs again, the kernels
#         and the autotuning come from the first run's caches (a second run with another
#         seed or workload, or any run after FlagGems was used once on the machine). Run
#         only when at least WARM_MIN_S seconds of the budget are left.
#
# Run from the repository root on the GPU machine with traceview's dependencies and
# FlagGems importable (the carried wheels in /tmp/site, on PYTHONPATH), OUT an empty folder:
#   OUT=/tmp/out bash tools/measure_serve_default_on_gpu.sh
# Writes $OUT/{cold,warm}.{json,md,log} (serve --out, its markdown report, its progress log)
# and $OUT/summary.txt: each run's wall time and exit code, then
# tools/summarize_serve_timing.py's tables (where the time went, the A/B verdicts).
# Expected: at most BUDGET_S (232) s in all; the cold run is stopped at COLD_S (228) s.
# SERVE_ARGS: more options for both runs (the CPU check of this script: a tiny model, the
# test suite's stand-in FlagGems through --env/--vs-env PYTHONPATH=tests/fake_gems).
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
export PYTHONUNBUFFERED=1 COLUMNS=120
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
BUDGET_S=${BUDGET_S:-232}; COLD_S=${COLD_S:-228}; WARM_MIN_S=${WARM_MIN_S:-80}
scratch=$(mktemp -d /tmp/serve-default.XXXXXX)
export TRITON_CACHE_DIR=$scratch/triton FLAGGEMS_CACHE_DIR=$scratch/flaggems \
  TRACEVIEW_CACHE_DIR=$scratch/traceview TORCHINDUCTOR_CACHE_DIR=$scratch/inductor
began=$(date +%s.%N)

{
  echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1
  python3 - <<'PY' 2>&1
import importlib.metadata as m, sys
def v(n):
    try:
        return m.version(n)
    except m.PackageNotFoundError:
        return "not installed"
print("python", sys.version.split()[0], *(f"{n} {v(n)}" for n in ("torch", "triton", "transformers", "flag_gems")))
PY
} >"$OUT/summary.txt"

run() {  # run NAME LIMIT_S ARGS...: one timed serve run
  local name=$1 limit=$2; shift 2
  local t0 t1 code
  t0=$(date +%s.%N)
  timeout -k 10 "$limit" python3 -m traceview serve --vs flag_gems --exclude-failing \
    --trace-dir "$scratch/traces-$name" --out "$OUT/$name.json" --format md "$@" ${SERVE_ARGS:-} \
    >"$OUT/$name.md" 2>"$OUT/$name.log"
  code=$?
  t1=$(date +%s.%N)
  local wall
  wall=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  {
    echo
    echo "== $name: exit $code, wall $wall s (limit $limit s)$([ "$code" = 124 ] && echo ': STOPPED AT THE LIMIT')"
    python3 tools/summarize_serve_timing.py "$OUT/$name.json" --wall-s "$wall" 2>&1
  } >>"$OUT/summary.txt"
  echo "$name: exit $code, wall $wall s"
}

run cold "$COLD_S"
left=$(python3 -c "import time; print(int($BUDGET_S - (time.time() - $began)))")
if [ "$left" -ge "$WARM_MIN_S" ]; then
  run warm "$left" --no-check-cache
else
  echo "warm: not run ($left s of the budget left, fewer than $WARM_MIN_S)" | tee -a "$OUT/summary.txt"
fi
cat "$OUT/summary.txt"
rm -rf "$scratch"
