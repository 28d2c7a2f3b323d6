#!/usr/bin/env bash
# Unprofiled figures on a CUDA machine, from the repository root: (1) a small Llama
# training loop of two micro-batches per step through traceview.capture_steps (profiled
# and unprofiled step times; tools/capture_steps_llama.py), with explain run on the result;
# (2) FlagGems sigmoid 65536 float32 captured by `traceview capture` with its unprofiled
# split, against the independent staged timing (tools/run_unprofiled_h200.sh); (3) FlagGems
# add 65536 bfloat16 the same way, only if (1) and (2) took under 110 s, so the whole stays
# near 200 s. Everything is written under $OUT (traces gzipped). Expected wall: ~150-200 s
# on the H200 (capture_steps ~40 s, each FlagGems case ~70-90 s, mostly imports).
# Usage: OUT=folder tools/capture_steps_unprofiled_on_gpu.sh
set -uo pipefail
out=${OUT:?set OUT to the output folder}
mkdir -p "$out/steps" "$out/flaggems"
start=$SECONDS
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
  echo "start $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
  python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)'
} > "$out/env.txt" 2>&1

# (1) capture_steps on the training loop, then explain (text and JSON).
t=$SECONDS
python3 tools/capture_steps_llama.py "$out/steps" > "$out/steps/run.txt" 2>&1 \
  || { echo "capture_steps_llama failed"; tail -20 "$out/steps/run.txt"; }
if [ -f "$out/steps/steps.json.gz" ]; then
  python3 -m traceview explain "$out/steps/steps.json.gz" -f json > "$out/steps/explain.json" 2> "$out/steps/explain.err"
  python3 -m traceview explain "$out/steps/steps.json.gz" --width 160 > "$out/steps/explain.txt" 2>&1
fi
echo "steps: $((SECONDS - t)) s" | tee -a "$out/env.txt"

# (2) FlagGems sigmoid: capture with its split, staged timing, comparison into a fixture.
t=$SECONDS
bash tools/run_unprofiled_h200.sh "$out/flaggems" sigmoid:float32 > "$out/flaggems/sigmoid.txt" 2>&1 \
  || { echo "sigmoid failed"; tail -20 "$out/flaggems/sigmoid.txt"; }
echo "sigmoid: $((SECONDS - t)) s" | tee -a "$out/env.txt"

# (3) add, only where the time allows.
if [ $((SECONDS - start)) -lt 110 ]; then
  t=$SECONDS
  bash tools/run_unprofiled_h200.sh "$out/flaggems" add:bfloat16 > "$out/flaggems/add.txt" 2>&1 \
    || { echo "add failed"; tail -20 "$out/flaggems/add.txt"; }
  echo "add: $((SECONDS - t)) s" | tee -a "$out/env.txt"
else
  echo "add: skipped (already $((SECONDS - start)) s)" | tee -a "$out/env.txt"
fi
for f in "$out"/flaggems/*.explain.json; do
  [ -f "$f" ] && python3 -m traceview explain "${f%.explain.json}.json.gz" --width 160 \
    > "${f%.explain.json}.explain.txt" 2>&1
done
echo "total: $((SECONDS - start)) s" | tee -a "$out/env.txt"
