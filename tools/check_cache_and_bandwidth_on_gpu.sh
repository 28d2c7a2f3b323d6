#!/usr/bin/env bash
# Three review questions of a FlagGems fix on a GPU (is the warm cache right, which kernels
# ran, how close to the copy bandwidth), in one run of about 4 minutes:
#
#   1. Is the cache safe?  `capture --check-cache` (no timing) on FlagGems add/mul as
#      shipped, on FlagGems with a type-promotion cache keyed right (dtypes) and wrong
#      (shapes: examples/flag_gems_promotion_cache.py), and on examples/cached_add.py's
#      correct cache and two planted bugs. All nine run at once (they time nothing).
#   2. Which kernels ran?  one capture of FlagGems add (its summary names the kernels per
#      call) and a short `ab` torch vs FlagGems that names each side's kernels.
#   3. How close to the device's limit?  bytes moved, GB/s and % of a device-to-device
#      copy (of the same bytes, and the copy peak) in that capture's summary, explain's
#      markdown "Device-kernel result" line, and a sweep over 2^10..2^26 elements.
#
# Run from the repository root on the GPU machine with $OUT an empty folder:
#
#   OUT=/tmp/out bash tools/check_cache_and_bandwidth_on_gpu.sh
#
# Everything lands in ONE file, $OUT/check_cache_and_bandwidth.tar.gz, whose SUMMARY.md
# says for every step what ran, what was expected, what happened (exit code, first line),
# then the capture summary, the markdown line, the sweep table and the ab report; the
# folders beside it hold each step's full output (JSON reports, traces, sweep.json).
# SUMMARY.md is also printed at the end. Steps past DEADLINE_S (default 250) are skipped
# and say so, so the tarball is always written.
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
DEADLINE_S="${DEADLINE_S:-250}"
export PYTHONUNBUFFERED=1 COLUMNS=160  # rich tables one row per line in the text files
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
[[ -d /tmp/site ]] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
NAME=check_cache_and_bandwidth
W=$(mktemp -d); R="$W/$NAME"
mkdir -p "$R/cache_checks" "$R/capture" "$R/ab"
SUM="$R/SUMMARY.md"
TV=(python3 -m traceview)

say() { printf '%s\n' "$*" >>"$SUM"; }
first_line() { grep -v '^USDT' "$1" | grep -v '^\s*$' | head -n 1; }

say "# traceview cache and bandwidth checks on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say ""
say '```'
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$SUM" 2>&1
python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], '| torch', torch.__version__, '| triton', triton.__version__)" >>"$SUM" 2>&1
python3 -c "import flag_gems; print('flag_gems', getattr(flag_gems, '__version__', '?'))" >>"$SUM" 2>&1
git log -1 --format='traceview commit %h (%cd)' --date=iso >>"$SUM" 2>/dev/null
say '```'

# -- 1. --check-cache, nine at once (each is one warm process; nothing is timed) ----------
say ""
say "## 1. capture --check-cache (one warm process per row; exit 0 = every call right, 3 = the first wrong call is named)"
say ""
CHECKS=(
  "gems_add_shipped|0 unless FlagGems itself is wrong on some layout|--op add --impl flag_gems --dtype bfloat16"
  "gems_mul_shipped|0 unless FlagGems itself is wrong on some layout (its 5.0.2 mul mishandled transposed/broadcast operands)|--op mul --impl flag_gems --dtype bfloat16"
  "gems_add_promotion_cache_by_dtype|same as gems_add_shipped (the cache is keyed right)|--op add --fn examples.flag_gems_promotion_cache:add --dtype bfloat16"
  "gems_mul_promotion_cache_by_dtype|3, the example refusing: on Hopper FlagGems mul of same-rank tensors asks no type promotion (mul_all_real_func)|--op mul --fn examples.flag_gems_promotion_cache:mul --dtype bfloat16"
  "gems_add_promotion_cache_by_shape|3 at 'dtype: both float32' (dtype cached by shape)|--op add --fn examples.flag_gems_promotion_cache:add_by_shape --dtype bfloat16"
  "gems_mul_promotion_cache_by_shape|3, the example refusing, as the row above|--op mul --fn examples.flag_gems_promotion_cache:mul_by_shape --dtype bfloat16"
  "example_cached_add|0 (a correct cache)|--op add --fn examples.cached_add:cached_add"
  "example_bad_promotion_cache|3 at 'dtype: both float16'|--op add --fn examples.cached_add:bad_promotion_cache"
  "example_bad_grid_cache|3 at 'strides: lhs transposed view'|--op add --fn examples.cached_add:bad_grid_cache"
)
for spec in "${CHECKS[@]}"; do
  IFS='|' read -r name _ args <<<"$spec"
  # shellcheck disable=SC2086
  ( timeout -k 5 170 "${TV[@]}" capture $args --check-cache --format json \
      >"$R/cache_checks/$name.json" 2>"$R/cache_checks/$name.stderr.txt"
    echo $? >"$R/cache_checks/$name.rc" ) &
done
wait
say "| check | expected | exit | first line of the report (full JSON in cache_checks/NAME.json) |"
say "|---|---|---:|---|"
for spec in "${CHECKS[@]}"; do
  IFS='|' read -r name want args <<<"$spec"
  rc=$(cat "$R/cache_checks/$name.rc" 2>/dev/null || echo '?')
  line=$(first_line "$R/cache_checks/$name.stderr.txt" | sed 's/|/\\|/g' | cut -c1-400)
  [[ "$rc" == 0 && -z "$line" ]] && line="all calls right (table: cache_checks/$name.json)"
  [[ "$rc" == 124 || "$rc" == 137 ]] && line="TIMED OUT after 170 s"
  say "| $name \`$args\` | $want | $rc | $line |"
done
# the full text report of each failing check, as a user sees it
for spec in "${CHECKS[@]}"; do
  IFS='|' read -r name _ _ <<<"$spec"
  if [[ "$(cat "$R/cache_checks/$name.rc" 2>/dev/null)" != 0 ]]; then
    say ""; say "<details><summary>$name: the report as text</summary>"; say ""; say '```'
    python3 - "$R/cache_checks/$name.json" "$R/cache_checks/$name.stderr.txt" >>"$SUM" 2>&1 <<'PY'
import json, sys
try:
    rep = json.load(open(sys.argv[1]))
    from traceview.render.registry import RenderOptions, renderer
    print(renderer("text", "failure").render(rep, RenderOptions()) if "cache_check" in rep
          else json.dumps(rep)[:3000])
except Exception:  # no JSON report (it could not run): its stderr instead
    print("".join(ln for ln in open(sys.argv[2]) if not ln.startswith("USDT"))[-3000:])
PY
    say '```'; say "</details>"
  fi
done

late() { if (( SECONDS > DEADLINE_S )); then say ""; say "**SKIPPED** $1: past the ${DEADLINE_S} s deadline (t=${SECONDS}s)"; return 0; fi; return 1; }

# -- 2+3. one capture: kernels per call, bytes, GB/s, % of the copy rates -----------------
say ""
say "## 2-3. capture of FlagGems add 16x4096 bf16: kernels per call, bytes, achieved GB/s, share of the measured copy rates"
if ! late "the capture"; then
  t0=$SECONDS
  timeout -k 5 120 "${TV[@]}" capture --op add --impl flag_gems --shape 16x4096 --dtype bf16 \
      --out "$R/capture/gems_add.json.gz" >"$R/capture/summary.txt" 2>"$R/capture/stderr.txt"
  rc=$?
  say ""; say "exit $rc, $((SECONDS - t0)) s. The rows 'kernels per call', 'bytes per call', 'achieved bandwidth' are new:"
  say '```'; cat "$R/capture/summary.txt" >>"$SUM"; grep -v '^USDT' "$R/capture/stderr.txt" | tail -n 5 >>"$SUM"; say '```'
  if [[ -f "$R/capture/gems_add.json.gz" ]]; then
    "${TV[@]}" explain "$R/capture/gems_add.json.gz" --format md >"$R/capture/explain.md" 2>&1
    say ""; say "explain --format md, the reproducer template's line:"; say ""
    grep '^| Device-kernel result' "$R/capture/explain.md" >>"$SUM"
    python3 - "$R/capture/gems_add.json.gz" >>"$SUM" 2>&1 <<'PY'
import gzip, json, sys
m = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))["traceview"]
print("\nmetadata kernels_used:", json.dumps(m.get("kernels_used")))
print("\nmetadata bandwidth:", json.dumps(m.get("bandwidth")))
PY
  fi
fi

# -- 2. ab: which kernels each side launched ------------------------------------------------
say ""
say "## 2. ab torch vs FlagGems add 16x4096 bf16 (2 rounds: the point is the kernel lines, not the verdict)"
if ! late "the ab"; then
  t0=$SECONDS
  timeout -k 5 120 "${TV[@]}" ab --op add --shape 16x4096 --dtype bf16 --a-impl torch \
      --b-impl flag_gems --a-name torch --b-name flag_gems --rounds 2 --baseline-n 50 \
      --format md --out "$R/ab/ab.json" >"$R/ab/ab.md" 2>"$R/ab/stderr.txt"
  rc=$?
  say ""; say "exit $rc, $((SECONDS - t0)) s. Look for 'kernels per call' and 'kernels DIFFER':"; say ""
  cat "$R/ab/ab.md" >>"$SUM"
  grep -v '^USDT' "$R/ab/stderr.txt" | tail -n 5 | sed 's/^/    /' >>"$SUM"
fi

# -- 3. the sweep: where the kernel stops being latency-bound -----------------------------
say ""
say "## 3. sweep of FlagGems add bf16, numel 2^10..2^26: GB/s against the copy rates measured in each capture's process"
if ! late "the sweep"; then
  t0=$SECONDS
  limit=$(( 290 - SECONDS )); (( limit < 40 )) && limit=40  # the whole run stays under 5 min
  timeout -k 5 "$limit" "${TV[@]}" capture --op add --impl flag_gems --dtype bf16 \
      --sweep 'numel=2**10..2**26:16' --iters 10 --baseline-n 100 --out "$R/sweep" \
      >"$R/sweep.txt" 2>&1
  rc=$?
  say ""; say "exit $rc, $((SECONDS - t0)) s."
  if [[ -f "$R/sweep/sweep.md" ]]; then
    sed 's/^# /### /' "$R/sweep/sweep.md" >>"$SUM"
  else
    say "(cut at ${limit} s before sweep.md was written: the sizes done so far, from its progress lines)"
    say '```'; grep -v '^USDT' "$R/sweep.txt" | tail -n 20 >>"$SUM"; say '```'
  fi
fi

say ""
say "total ${SECONDS} s"
tar -C "$W" -czf "$OUT/$NAME.tar.gz" "$NAME"
cat "$SUM"
rm -rf "$W"
