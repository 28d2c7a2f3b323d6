#!/usr/bin/env bash
# capture's built-in Triton implementation against a plain hand-written wrapper on the GPU,
# both in every fresh process (ab --same-process), add 16x4096 bf16:
#   1. the minimal launch (--launcher minimal, the default here) vs the hand-written
#      wrapper (tools/handwritten_triton_add.py): the goal is within 10%;
#   2. the library-style launcher (--launcher library) vs the same wrapper: what the
#      promotion, broadcast and stride work per call costs;
#   3. one profiled capture of the default: its summary shows the harness-owned part of a
#      call (traceview's frames) apart from Triton's and torch's, from the trace.
# Run from the repository root, with OUT an empty folder (under 4 minutes; a step that
# would pass the DEADLINE_S is skipped and said so):
#   OUT=/tmp/out bash tools/compare_builtin_launcher_on_gpu.sh
# Writes $OUT/summary.txt (every step's command, exit code, seconds, and the verdict
# lines) and $OUT/compare_builtin_launcher.tar (ab texts and JSON, the capture's text and
# traces).
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
DEADLINE_S="${DEADLINE_S:-230}"
export PYTHONPATH="$PWD:$PWD/tools${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
W="$OUT/work"
mkdir -p "$W"
SUM="$OUT/summary.txt"
: >"$SUM"

# step NAME SECONDS CMD...: run with a time limit unless the deadline is near.
step() {
    local name="$1" limit="$2"; shift 2
    if (( SECONDS + limit > DEADLINE_S )); then
        echo "### $name SKIPPED (would pass ${DEADLINE_S}s at ${SECONDS}s)" >>"$SUM"
        return 0
    fi
    local t0=$SECONDS
    timeout "$limit" "$@" >"$W/$name.txt" 2>&1
    local rc=$?
    { echo "### $name rc=$rc $((SECONDS - t0))s: $*"
      grep -E "verdict|B - A|faster|per synchronized|launcher|harness|Triton per call|torch per call|full API p50|amortized" "$W/$name.txt" | head -25
    } >>"$SUM"
}

AB=(python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 --same-process --blocks 10
    --a-impl triton --b-fn handwritten_triton_add:add --a-name builtin --b-name handwritten
    --width 120)
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" >>"$SUM" 2>&1
step ab_minimal 95 "${AB[@]}" --launcher minimal --rounds 8 --time-limit 80 --out "$W/ab_minimal.json"
step ab_library 65 "${AB[@]}" --launcher library --rounds 6 --time-limit 50 --out "$W/ab_library.json"
step capture_minimal 60 env COLUMNS=200 python3 -m traceview capture --op add --shape 16x4096 --dtype bf16 \
    --with-stack --out "$W/capture_minimal.json.gz"
tar -C "$W" -cf "$OUT/compare_builtin_launcher.tar" .
rm -rf "$W"
echo "### done in ${SECONDS}s" >>"$SUM"
