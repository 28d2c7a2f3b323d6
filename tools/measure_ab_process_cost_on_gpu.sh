#!/usr/bin/env bash
# What an `ab` round costs on the GPU, and whether capture's built-in Triton launcher is
# what a kernel author ships, in one run of at most 420 s
# (steps: 90 + 125 + 110 + 90 s; STEPS="a c" runs some of them):
#
#   a. `ab --same-process`: the default (minimal) built-in Triton add against a plain
#      hand-written wrapper (tools/handwritten_triton_add.py), 16x4096 bf16, 12 rounds
#      (or as many as fit in 75 s; 6 are the fewest that give a 95% interval) (the goal:
#      the built-in within 10% of the wrapper);
#   b. a 10-round FlagGems A/B in fresh-process mode (each process forked from a per-side
#      template): the recorded case of docs/ab.md (FlagGems add 16x4096 bf16 as shipped
#      vs with docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch), timed (the goal: <= 120 s);
#   c. the same as an A/A (as shipped on both sides), 10 rounds: it must say "cannot tell";
#   d. the recorded same-process case (docs/figures/flaggems_type_promotion/flaggems_type_promotion_fns.py, both
#      callables in one forked process per round), 12 rounds or 75 s;
#   e. where each process's time goes, from both JSON results: per side the template's
#      start and imports (once), per process fork-to-ready, imports, CUDA init,
#      build/compile/warm-up, measure (protocol.process_start, processes[].phases_ns).
#
# Run from the repository root on the GPU machine, with OUT an empty folder (FlagGems
# and the other wheels in /tmp/site, as for tools/check_cache_and_bandwidth_on_gpu.sh):
#   OUT=/tmp/out bash tools/measure_ab_process_cost_on_gpu.sh
# Every step runs under `timeout`; results are written as they come; everything ends in
# $OUT/measure_ab_process_cost.tar.gz, and $OUT/SUMMARY.txt (also printed) holds each
# step's command, exit code, seconds, verdict lines and the phase table.
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
export PYTHONUNBUFFERED=1 COLUMNS=120
export PYTHONPATH="$PWD:$PWD/tools:$PWD/docs/figures/flaggems_type_promotion${PYTHONPATH:+:$PYTHONPATH}"
[[ -d /tmp/site ]] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
# Wheels carried to the GPU machine are installed with --no-compile, and no bytecode was
# written there afterwards (a fourth process in a row still compiled FlagGems' 535
# modules: 1.2 s of every import). A user's install has its bytecode; so has this one.
[[ -d /tmp/site ]] && python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
env | grep -E '^PYTHON(DONTWRITEBYTECODE|PYCACHEPREFIX)=' || true
W="$OUT/measure_ab_process_cost"
mkdir -p "$W"
SUM="$OUT/SUMMARY.txt"
: >"$SUM"
# (versions and the device are in each JSON result: sides.X.versions, sides.X.device)

# step NAME LIMIT CMD...: under `timeout LIMIT`, output to $W/NAME.txt, a line in SUMMARY.
step() {
    local name="$1" limit="$2"; shift 2
    [[ " ${STEPS:-a b c d} " == *" ${name%%_*} "* ]] || return 0
    local t0=$SECONDS
    timeout -s INT -k 5 "$limit" "$@" >"$W/$name.txt" 2>&1
    local rc=$?
    { echo "### $name rc=$rc $((SECONDS - t0))s (limit ${limit}s): $*"
      grep -E "faster|slower|cannot tell|stopped early|error" "$W/$name.txt" | head -8
    } >>"$SUM"
}

TV=(python3 -m traceview ab --op add --shape 16x4096 --dtype bf16 --width 120)
step a_same_process_minimal_vs_handwritten 90 "${TV[@]}" --same-process --blocks 10 \
    --a-impl triton --launcher minimal --b-fn handwritten_triton_add:add \
    --a-name builtin --b-name handwritten --rounds 12 --time-limit 75 --out "$W/a.json"
step b_flaggems_fresh_processes 125 "${TV[@]}" --impl flag_gems --rounds 10 --time-limit 115 \
    --b-path docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch --b-env TV13_PATCH=1 \
    --a-name unpatched --b-name patched --out "$W/b.json"
step c_flaggems_fresh_processes_aa 110 "${TV[@]}" --impl flag_gems --rounds 10 --time-limit 100 \
    --a-name unpatched --b-name unpatched-again --out "$W/c.json"
step d_flaggems_same_process 90 "${TV[@]}" --same-process --blocks 10 \
    --a-fn flaggems_type_promotion_fns:unpatched --b-fn flaggems_type_promotion_fns:patched \
    --a-name unpatched --b-name patched --rounds 12 --time-limit 75 --out "$W/d.json"

# c. the phase table, from the JSON results (torch-free; a missing file is one line)
python3 - "$W"/[abcd].json >>"$SUM" 2>&1 <<'EOF'
import json, sys
for path in sys.argv[1:]:
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as exc:
        print(f"## {path}: no result ({exc})")
        continue
    p = doc["protocol"]
    start = p.get("process_start") or {}
    print(f"## {path}: {doc['rounds']} rounds; {p['process']}")
    print("verdict:", doc["verdict"])
    c = doc["comparisons"].get("full_api_ns_p50") or {}
    print("full call medians A/B ns:", c.get("a_median_ns"), c.get("b_median_ns"),
          "relative:", c.get("relative"))
    for label, t in (start.get("templates") or {}).items():
        print(f"template {label}: start {t['start_ns'] / 1e9:.2f} s, imports "
              f"{t['imports_ns'] / 1e9:.2f} s, left out: {t.get('left_out')}")
    if start.get("why"):
        print("fell back:", start["why"])
    keys = ("start_to_ready", "imports", "cuda_init", "build_compile_warmup", "measure")
    print("side round wall_s " + " ".join(keys))
    for label, side in doc["sides"].items():
        print(f"side {label} versions:", side.get("versions"), side.get("device"))
        for proc in side["processes"]:
            ph = proc.get("phases_ns") or {}
            print(label, proc["round"], f"{proc['wall_ns'] / 1e9:.2f}",
                  " ".join(f"{ph[k] / 1e9:.3f}" if k in ph else "-" for k in keys))
EOF
tar -C "$OUT" -czf "$OUT/measure_ab_process_cost.tar.gz" measure_ab_process_cost SUMMARY.txt
echo "### done in ${SECONDS}s" >>"$SUM"
cat "$SUM"
