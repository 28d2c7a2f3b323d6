#!/usr/bin/env bash
# Splits the default serving swap, torch eager -> FlagGems, by op on a GPU
# (`traceview serve --attribute --vs flag_gems --exclude-failing`), twice, and checks the
# attribution against a planted slowdown in one real FlagGems op:
#
#   run1, run2  the default model, the same command twice (run2 reuses run1's kept
#               correctness check and compiled kernels): do the top three ops agree?
#               Each attribution gets 36% of what the budget leaves after 200 s for the
#               cold check, op listings and profiled runs; the planted run 20%.
#   planted     the same with PLANTED_OP (default argmax: called once per decode step and
#               once per prefill) busy-waiting PLANTED_NS (default 5 ms) per call, installed
#               by a sitecustomize that wraps that op's function in FlagGems' op table on
#               import; the candidates: the planted op and run1's three largest parts.
#               Truth: TPOT p50 +PLANTED_NS x calls per step over what the op costs
#               unplanted (run1's figure for it when run1 isolated it).
#
# Run from the repository root with traceview's dependencies and FlagGems importable
# (carried wheels on PYTHONPATH), OUT an empty folder, the budget in seconds (default 470):
#   OUT=/tmp/out bash tools/attribute_serve_on_gpu.sh 470
# Writes $OUT/results.tar.gz (run1/run2/planted .json .md .log, any reproducer scripts)
# and $OUT/summary.txt (each run's wall and exit status, the top parts of each run, the
# planted check's verdict). SERVE_ARGS: more options for every run; CALLS_PER_STEP: the
# planted op's calls per decode step when the profile's count is not it.
# The CPU check of this script (about 25 s on a quiet 2-core machine; run1's and run2's
# parts are noise there, the planted rsqrt gets its 5 calls x 2 ms):
#   PYTHONPATH=$PWD:$PWD/tests/planted_gems OUT=/tmp/o PLANTED_GEMS_SLOW=rsqrt:0 \
#   PLANTED_OP=rsqrt PLANTED_NS=2000000 CALLS_PER_STEP=5 \
#   WORK="--requests 2 --output-len 8 --batch-size 2 --profile-steps 2" \
#   SERVE_ARGS="--device cpu --dtype float32 --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
#     --intermediate 128 --vocab 512 --prompt-len 8 --check-steps 2" \
#   bash tools/attribute_serve_on_gpu.sh 400
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
BUDGET_S=${1:-470}
export PYTHONUNBUFFERED=1 COLUMNS=120
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PLANTED_OP=${PLANTED_OP:-argmax}; PLANTED_NS=${PLANTED_NS:-5000000}
# which of the three runs to make (the planted one alone: STEPS=planted, its attribution
# budget PLANTED_ATTR_S, candidates the planted op alone; RUN_ATTR_S: run 1's and run 2's
# attribution budget, when each run is a call of its own)
STEPS=${STEPS:-run1 run2 planted}
# the attribution's workload: one batch of 8 requests keeps a process to a few seconds
WORK=${WORK:---requests 8 --output-len 16 --profile-steps 4}
# WORK_DIR: keep the runs' documents there (one device call per run on a warm machine:
# STEPS=run1, then STEPS=run2, then STEPS=planted, each reading the earlier runs' files)
work=${WORK_DIR:-$(mktemp -d /tmp/attribute-serve.XXXXXX)}
mkdir -p "$work"
began=$(date +%s)
left() { echo $((BUDGET_S - ($(date +%s) - began))); }

python3 - >"$OUT/summary.txt" 2>&1 <<'PY'
import importlib.metadata as m, sys
def v(n):
    try:
        return m.version(n)
    except m.PackageNotFoundError:
        return "not installed"
print("python", sys.version.split()[0], *(f"{n} {v(n)}" for n in ("torch", "triton", "transformers", "flag_gems")))
PY
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$OUT/summary.txt" 2>&1

run() {  # run NAME ATTRIBUTION_BUDGET_S LIMIT_S ARGS...: one timed serve --attribute run
  local name=$1 attr=$2 limit=$3; shift 3
  local t0 code
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout -k 10 "$limit" python3 -m traceview serve --vs flag_gems --exclude-failing \
    --attribute --attribute-budget "${attr}s" $WORK ${SERVE_ARGS:-} "$@" \
    --trace-dir "$work/$name" --out "$work/$name.json" --format md \
    >"$work/$name.md" 2>"$work/$name.log"
  code=$?
  echo "== $name: exit $code, wall $(( $(date +%s) - t0 )) s (limit $limit s, attribution budget $attr s)" >>"$OUT/summary.txt"
}

# The attribution's own budget (from its start: both runs get the same resolution); what
# is around it: run1's cold check (FlagGems' compiles and mm autotuning, the bisect, the
# reproducer), each run's op listing and two profiled runs.
spare=$(( BUDGET_S > 260 ? BUDGET_S - 200 : 60 ))
a1=${RUN_ATTR_S:-$(( spare * 36 / 100 ))}; a3=${PLANTED_ATTR_S:-$(( spare * 20 / 100 ))}
case " $STEPS " in *" run1 "*) run run1 "$a1" $(( a1 + 190 ));; esac
case " $STEPS " in *" run2 "*) run run2 "$a1" $(( a1 + 70 ));; esac
# the planted check: tools/plant_flag_gems_slowdown/sitecustomize.py on the variants' path
# wraps PLANTED_OP on import (both of FlagGems' op tables: its docstring)
ops=$(python3 - "$work/run1.json" "$PLANTED_OP" <<'PY'
import json, sys
try:
    att = json.load(open(sys.argv[1])).get("attribution") or {}
except (OSError, ValueError):
    att = {}
top = [p["ops"][0] for p in att.get("parts", []) if len(p["ops"]) == 1][:3]
print(",".join(dict.fromkeys([sys.argv[2], *top])))
PY
)
# the shim goes on the parent's path (the children inherit it): the variants' own
# environment stays as run1's, so the kept correctness check applies
last=$(( $(left) > a3 + 30 ? $(left) - 10 : a3 + 30 ))
case " $STEPS " in *" planted "*) ;; *) last=0;; esac
[ "$last" -gt 0 ] && PYTHONPATH="$PWD/tools/plant_flag_gems_slowdown:$PYTHONPATH" PLANTED_FLAG_GEMS_SLOW="$PLANTED_OP:$PLANTED_NS" \
  run planted "$a3" "$last" --attribute-ops "$ops"
echo "planted: $PLANTED_OP busy-waits $PLANTED_NS ns per call; candidates $ops" >>"$OUT/summary.txt"
python3 tools/attribution_verdicts.py "$work" "$PLANTED_OP" "$PLANTED_NS" >>"$OUT/summary.txt" 2>&1
(cd "$work" && tar czf "$OUT/results.tar.gz" $(ls run1.* run2.* planted.* reproduce_*.py \
  2>/dev/null)) || true
echo "total wall $(( $(date +%s) - began )) s of $BUDGET_S s" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
