#!/usr/bin/env bash
# Before/after speed of `explain` on a real 450 MB torch.compile cold-start trace, made
# and measured on the GPU machine (a 2-core development machine cannot receive the 83 MB
# capture). Usage, from the repository root there, with OLD a directory holding the
# "before" traceview package (`git archive COMMIT traceview | tar -x -C OLD`; several
# such directories, separated by spaces, are all measured in each rep) and the
# carried wheels in .whl/ (msgspec, orjson, isal):
#
#   OUT=/tmp/out OLD=.scratch/old bash tools/benchmark_compile_trace_on_gpu.sh
#
# Steps: install the wheels; compile both trees' C helpers; capture
# `tools/gpu/shapes.py compile_big` (BIG_K=1: one torch.compile cold start, with_stack);
# cut it to 450 MB (benchmarks/cut_trace.py); run benchmarks/ab_trees.py (each rep runs
# both trees once, in turn, fresh processes pinned to one core). Writes $OUT/bench.txt.
set -uo pipefail
: "${OUT:?set OUT}" "${OLD:?set OLD}"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site
# -DTV_SOURCE_SHA256: what setup.py passes (traceview/native.py refuses a library built
# without its source's hash as stale; a tree from before that check ignores the macro)
for tree in . $OLD; do
  for src in traceview/io/_kineto_scan traceview/analyses/_host_sweep; do
    sha=$(sha256sum "$tree/$src.c" | cut -d' ' -f1)
    cc -O2 -shared -fPIC "-DTV_SOURCE_SHA256=\"$sha\"" -o "$tree/$src.so" "$tree/$src.c" \
      || echo "cc failed: $tree/$src"
  done
done
# the current tree must report its helpers in use, or the comparison is not of the fast paths
python3 -m traceview --version | tee /dev/stderr | grep -q "scan in use, sweep in use" \
  || { echo "the compiled helpers are not in use: stopping"; exit 1; }
S=$SECONDS
BIG_K=1 python3 tools/gpu/shapes.py compile_big /tmp/big.json 2>&1 | grep -v USDT | tail -2
echo "capture $((SECONDS - S)) s, $(stat -c %s /tmp/big.json) bytes"
python3 benchmarks/cut_trace.py /tmp/big.json --mb 450 --out-dir /tmp/cuts 2>&1 | tail -3
CUT=$(ls /tmp/cuts/*/*.json.gz | head -1)
echo "cut: $CUT $(stat -c %s "$CUT") bytes"
python3 benchmarks/ab_trees.py "$CUT" $OLD . --reps "${REPS:-4}" --cpu 2 2>&1 | tee "$OUT/bench.txt"
