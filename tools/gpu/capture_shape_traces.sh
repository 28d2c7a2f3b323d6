#!/usr/bin/env bash
# Raw H200 traces of the shapes users have (fixtures/shape_*.json.gz; the
# programs are tools/gpu/shapes.py) and the big real torch.compile with_stack trace that
# docs/performance.md measures (one cold compile, scaled to ~450 MB with BIG_K).
# Each shape runs with fresh Inductor/Triton caches. Run from the repo root on the GPU
# machine with $OUT set; about 8 minutes. Writes:
#   $OUT/shapes.tar.gz (shape_*.json.gz), $OUT/big.json.xz.part-* (the big trace, xz, in
#   15 MB parts: cat them | xz -d), $OUT/log.txt
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
export PYTHONUNBUFFERED=1
W=$(mktemp -d); mkdir -p "$W/shapes"
LOG=$OUT/log.txt
step() { local name=$1 lim=$2; shift 2; echo "### $name t=$SECONDS" | tee -a "$LOG";
  timeout -k 5 "$lim" "$@" >>"$LOG" 2>&1; echo "--- rc=$? t=$SECONDS" | tee -a "$LOG"; }
fresh() { TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d);
  export TORCHINDUCTOR_CACHE_DIR TRITON_CACHE_DIR; }
step versions 60 bash -c 'nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import sys,torch,triton; print(sys.version, torch.__version__, triton.__version__)"'
# calibrate the big trace: one cold compile, then scale to ~450 MB, in the background
fresh; step big_k1 150 env BIG_K=1 python3 tools/gpu/shapes.py compile_big "$W/big1.json"
S1=$(stat -c %s "$W/big1.json" 2>/dev/null || echo 0)
K=$(python3 -c "import math;print(max(1,min(25,math.ceil(460e6/max($S1,1)))))")
echo "S1=$S1 K=$K" | tee -a "$LOG"
rm -f "$W/big1.json"
LIM=$((500 - SECONDS))
(fresh; BIG_K=$K timeout -k 5 $LIM python3 tools/gpu/shapes.py compile_big "$W/big.json" >"$W/big.log" 2>&1; echo "big rc=$?" >>"$W/big.log") &
BIG=$!
for s in loop_sync loop_two_ops loop_cold user_inductor user_inductor_stack compile_cold model_schedule model_schedule_cold; do
  fresh; step "$s" 120 python3 tools/gpu/shapes.py "$s" "$W/shapes/shape_$s.json"
done
wait $BIG; cat "$W/big.log" >>"$LOG"
ls -la "$W/shapes" "$W" >>"$LOG"
(cd "$W/shapes" && gzip -9 ./*.json && tar czf "$OUT/shapes.tar.gz" ./*.json.gz)
if [ -s "$W/big.json" ]; then xz -T16 -6 -c "$W/big.json" | split -b 15M - "$OUT/big.json.xz.part-"; fi
echo "done t=$SECONDS" | tee -a "$LOG"
