#!/usr/bin/env bash
# Every capture path once on the GPU, each trace explained: the triton, torch, flag_gems and
# inductor impls eager, torch as CUDA graph replays, and the layout and cache checks of a
# Triton op. Each command's exit status and its explain headline go to $OUT/capture_paths.txt;
# the traces are packed into $OUT/capture_traces.tar.gz. Run from the repository root on the
# GPU machine (carried wheels on PYTHONPATH when flag_gems is wanted), OUT an empty folder.
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
SUM=$OUT/capture_paths.txt
dir=$(mktemp -d /tmp/capture-paths.XXXXXX)
TV=(python3 -m traceview)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$SUM"
run() {  # name, then capture's arguments
  local name=$1; shift
  local t0=$SECONDS
  timeout -k 5 240 "${TV[@]}" capture "$@" --out "$dir/$name.json.gz" >"$dir/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0)) s: capture $*" >>"$SUM"
  tail -n 3 "$dir/$name.log" >>"$SUM"
  if [ -f "$dir/$name.json.gz" ]; then
    timeout 120 "${TV[@]}" explain "$dir/$name.json.gz" --width 100 >"$dir/$name.txt" 2>&1
    echo "   explain rc=$?" >>"$SUM"
    head -n 12 "$dir/$name.txt" >>"$SUM"
  fi
}
run triton_mul --op mul --impl triton --shape 16x4096
run torch_mul_graph --op mul --impl torch --mode graph --shape 16x4096
run torch_add --op add --impl torch --shape 16x4096 --dtype bf16
run flag_gems_add --op add --impl flag_gems --shape 16x4096 --dtype bf16
run inductor_gelu --op gelu --impl inductor --shape 16x4096
run triton_mul_graph4 --op mul --impl triton --mode graph --graph-ops 4
for check in --check-layouts --check-cache; do
  t0=$SECONDS
  timeout -k 5 240 "${TV[@]}" capture --op add --impl triton "$check" >"$dir/check$check.log" 2>&1
  echo "== add triton $check rc=$? $((SECONDS - t0)) s" >>"$SUM"
  tail -n 4 "$dir/check$check.log" >>"$SUM"
done
tar -C "$dir" -czf "$OUT/capture_traces.tar.gz" .
