#!/usr/bin/env bash
# GPU session 1 (2026-12-01): raw traces of the shapes users have (issue #12), the big
# real torch.compile with_stack trace (issue #15), and the FlagGems broadcast mul check
# (issue #16). Run from the repo root on the GPU machine with $OUT set. Writes:
#   $OUT/shapes.tar.gz, $OUT/big.json.xz.part-*, $OUT/log.txt
set -uo pipefail
export PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W/shapes
LOG=$OUT/log.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >>$LOG 2>&1
export PYTHONPATH=/tmp/site
step() { local name=$1 lim=$2; shift 2; echo "### $name t=$SECONDS" | tee -a $LOG;
  timeout -k 5 $lim "$@" >>$LOG 2>&1; echo "--- rc=$? t=$SECONDS" | tee -a $LOG; }
fresh() { export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d); }
step versions 60 bash -c 'nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import sys,torch,triton,transformers; print(sys.version, torch.__version__, triton.__version__, transformers.__version__)"'
# calibrate the big trace: one cold compile, then scale to ~450 MB, in the background
fresh; step big_k1 150 env BIG_K=1 python3 tools/gpu/shapes.py compile_big $W/big1.json
S1=$(stat -c %s $W/big1.json 2>/dev/null || echo 0)
K=$(python3 -c "import math;print(max(1,min(25,math.ceil(460e6/max($S1,1)))))")
echo "S1=$S1 K=$K" | tee -a $LOG
rm -f $W/big1.json
LIM=$((500 - SECONDS))
(fresh; BIG_K=$K timeout -k 5 $LIM python3 tools/gpu/shapes.py compile_big $W/big.json >$W/big.log 2>&1; echo "big rc=$?" >>$W/big.log) &
BIG=$!
for s in loop_sync loop_two_ops loop_cold user_inductor user_inductor_stack compile_cold model_schedule model_schedule_cold; do
  fresh; step $s 120 python3 tools/gpu/shapes.py $s $W/shapes/$s.json
done
fresh; step gems_mul 120 python3 tools/gpu/shapes.py gems_mul /dev/null
wait $BIG; cat $W/big.log >>$LOG
ls -la $W/shapes $W >>$LOG
(cd $W/shapes && gzip -9 *.json && tar czf $OUT/shapes.tar.gz *.json.gz)
if [ -s $W/big.json ]; then xz -T16 -6 -c $W/big.json | split -b 15M - $OUT/big.json.xz.part-; fi
ls -la $OUT >>$LOG
python3 - <<'PY' >>$LOG 2>&1
import transformers, inspect
from transformers import GenerationMixin
print("generate_batch", hasattr(GenerationMixin, "generate_batch"), "init_continuous_batching", hasattr(GenerationMixin, "init_continuous_batching"))
try:
    import transformers.generation.continuous_batching as cb; print("cb module", [n for n in dir(cb) if not n.startswith("_")][:40])
except Exception as e: print("no cb", e)
PY
echo "done t=$SECONDS" | tee -a $LOG
