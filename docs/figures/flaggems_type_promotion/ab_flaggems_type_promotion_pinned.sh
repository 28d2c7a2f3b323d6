#!/usr/bin/env bash
# The A/B of ab_flaggems_type_promotion.sh on the H200 with every process of both sides
# pinned to CPUS (default 2-3) with `ab --cpus`; part 1 (unpinned, 17 rounds) showed
# per-process figures in two modes (~85 us and ~140 us full call) on both sides, which
# swamps a ~15 us change. Then the independent plain loop (unpinned, PAIRS pairs).
# Writes $OUT/ab.json, $OUT/ab.txt, $OUT/loop.json, $OUT/topo.txt.
set -uo pipefail
LIM=${LIMIT:-580}; CPUS=${CPUS:-2-3}; PAIRS=${PAIRS:-6}
{ nvidia-smi topo -m; lscpu | grep -iE "model name|socket|numa|core|thread"; } >"$OUT/topo.txt" 2>&1
python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 --impl flag_gems --cpus "$CPUS" \
  --rounds 24 --time-limit $((LIM - SECONDS - 200)) --b-path docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch \
  --b-env TV13_PATCH=1 --a-name unpatched --b-name patched --out "$OUT/ab.json" --width 100 \
  >"$OUT/ab.txt" 2>&1
echo "ab rc=$? t=$SECONDS" >>"$OUT/ab.txt"
python3 docs/figures/flaggems_type_promotion/loop_flaggems_type_promotion.py "$PAIRS" docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch >"$OUT/loop.json" 2>"$OUT/loop.err"
echo "loop rc=$? t=$SECONDS" >>"$OUT/ab.txt"
