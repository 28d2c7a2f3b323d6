#!/usr/bin/env bash
# Regenerate fixtures/ with `capture` itself, run a
# sweep, check the unprofiled baseline against an independent timing, and explain every
# output. Run from the repository root on the GPU machine, with $OUT an empty folder:
#
#   OUT=/tmp/out bash tools/gpu/capture_fixtures.sh
#   OUT=/tmp/out ONLY="check_baseline sweep_sigmoid_torch" bash tools/gpu/capture_fixtures.sh
#
# traceview is not installed there: it runs as `python3 -m traceview` with PYTHONPATH=.
# explain needs msgspec and orjson, which the GPU image lacks: install the carried wheels
# first (see below). With the 3-process baseline each capture takes ~20-80 s: the core
# fixtures and check_baseline fill ~8 minutes; steps past DEADLINE_S are skipped so the
# archives are always written (run the rest in a second call). Everything ends up in at most 3 files under $OUT:
#   fixtures.tar  fixtures/*.json.gz (+ .cold twins) and fixtures/README.md
#   sweeps.tar    sweep_sigmoid_{triton,torch}/ (per-size traces, sweep.json, sweep.md)
#   logs.tar      log.txt (every command, its output, rc, seconds), explain/*.txt,
#                 check_baseline.txt, sweep tables
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
DEADLINE_S="${DEADLINE_S:-420}"
PY="${PY:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/fixtures" "$OUT/explain"
LOG="$OUT/log.txt"
: >"$LOG"
FAILED=()

log() { printf '%s\n' "$*" | tee -a "$LOG"; }

# run NAME TIMEOUT CMD...: log the command, its output, exit code and duration.
run() {
    local name="$1" limit="$2"; shift 2
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $name "* ]]; then
        return 0  # ONLY="name ...": run just those steps
    fi
    if (( SECONDS > DEADLINE_S )); then
        log "### SKIPPED (deadline ${DEADLINE_S}s reached): $name"
        FAILED+=("$name(skipped)")
        return 0
    fi
    log "### $name  [t=${SECONDS}s]"
    log "\$ $*"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
    local rc=$?
    log "--- rc=$rc  $((SECONDS - t0))s"
    (( rc == 0 )) || FAILED+=("$name(rc=$rc)")
    return 0
}

cap() {  # cap NAME [capture options...] -> $OUT/fixtures/NAME.json.gz
    local name="$1"; shift
    run "$name" 150 "$PY" -m traceview capture "$@" --out "$OUT/fixtures/$name.json.gz"
}

log "# traceview capture fixtures $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
run nvidia-smi 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
run versions 60 "$PY" -c "import sys, torch, triton; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, torch.cuda.get_device_name())"
run flag_gems 60 "$PY" -c "import flag_gems; print('flag_gems', flag_gems.__version__)"
# Wheels the GPU image lacks (msgspec, orjson; flag_gems, sqlalchemy, greenlet for
# --impl flag_gems) are installed by the caller before this script, as the device README
# says: pip install --no-index --no-deps --target /tmp/site .whl/*.whl; PYTHONPATH=/tmp/site

# -- fixtures (names match fixtures/; each capture is a fresh process: a real cold path) --
# The issue's literal default: triton mul 1x4096 float32 eager; with_stack is on (auto).
cap triton_mul_1x4096_f32_stack --op mul
cap triton_mul_1x4096_f32       --op mul --no-with-stack
cap torch_mul_1x4096_f32_stack  --op mul --impl torch --with-stack
cap torch_mul_1x4096_f32        --op mul --impl torch --no-with-stack
cap triton_mul_4096x4096_f16    --op mul --shape 4096x4096 --dtype float16 --iters 20
cap torch_mul_4096x4096_f16     --op mul --impl torch --shape 4096x4096 --dtype float16 --iters 20
cap triton_mul_graph10          --op mul --mode graph --graph-ops 10 --iters 20
cap torch_mul_8192x8192_f16_syncend --op mul --impl torch --shape 8192x8192 --dtype float16 --sync end --iters 100
cap two_streams_8192x8192_f16   --op mul --impl torch --shape 8192x8192 --dtype float16 --streams 2 --iters 10
cap triton_add_4096x4096_bf16_transposed --op add --shape 4096x4096 --dtype bfloat16 --layout transposed --iters 20
cap inductor_mul_1x4096_f32     --op mul --impl inductor
cap flag_gems_add_16x4096_bf16  --op add --impl flag_gems --shape 16x4096 --dtype bfloat16
cap flaggems_sigmoid_65536_f32_split --op sigmoid --impl flag_gems --shape 65536 --dtype float32
# The cold-compile fixture is the cold twin of the default capture (fresh Triton cache).
if [[ -f "$OUT/fixtures/triton_mul_1x4096_f32_stack.cold.json.gz" ]]; then
    cp "$OUT/fixtures/triton_mul_1x4096_f32_stack.cold.json.gz" "$OUT/fixtures/triton_mul_cold_stack.json.gz"
fi

# -- capture's recorded baseline vs an independent plain loop (fresh processes) -------------
run check_baseline 200 bash -o pipefail -c "$PY tools/check_baseline.py --case triton:mul:1x4096:float32 --case torch:mul:1x4096:float32 | tee $OUT/check_baseline.txt"

# -- sweep: kernel vs full API vs host gap, crossover ---------------------------------------
run sweep_sigmoid_triton 240 bash -o pipefail -c "$PY -m traceview capture --op sigmoid --sweep 'numel=2**8..2**28:16' \
  --iters 10 --out $OUT/sweep_sigmoid_triton | tee $OUT/sweep_sigmoid_triton.txt"

# -- error paths on a real GPU: one line, exit 2, nothing written ---------------------------
run "no partial trace on error (expect rc=2, one line)" 60 bash -c \
  "$PY -m traceview capture --op nope; test \$? -eq 2 && \
   $PY -m traceview capture --op mul --shape 200000x200000x8 --out $OUT/nope.json.gz; test \$? -eq 2 && test ! -e $OUT/nope.json.gz"

# -- extras while time allows: more GPU code paths (skipped past an earlier deadline) -------
DEADLINE_S=$((DEADLINE_S - 60))
cap torch_add_4096x4096_bf16_transposed  --op add --impl torch --shape 4096x4096 --dtype bfloat16 --layout transposed --iters 20
cap triton_sigmoid_64x4096_bf16_strided  --op sigmoid --shape 64x4096 --dtype bfloat16 --layout strided
cap triton_add_16x4096_bcast    --op add --shape 16x4096,4096
cap triton_mul_scalar_1x4096_f32 --op mul --scalar 2.5
cap torch_mul_graph             --op mul --impl torch --mode graph --iters 100
run sweep_sigmoid_torch 150 bash -o pipefail -c "$PY -m traceview capture --op sigmoid --impl torch --sweep 'numel=2**8..2**28' \
  --iters 20 --out $OUT/sweep_sigmoid_torch | tee $OUT/sweep_sigmoid_torch.txt"
DEADLINE_S=$((DEADLINE_S + 60))

# -- explain on every output, in one process (skipped per file past the deadline) ----------
DEADLINE_S=$((DEADLINE_S + 40))
run explain_all 120 "$PY" - "$OUT/fixtures" "$OUT/explain" "$((DEADLINE_S - SECONDS))" <<'EOF'
import pathlib, sys, time
from typer.testing import CliRunner
from traceview.cli.app import app
src, dst, budget = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), float(sys.argv[3])
t0, runner = time.monotonic(), CliRunner()
for f in sorted(src.glob("*.json.gz")):
    if time.monotonic() - t0 > budget:
        print("explain: budget spent, skipped", f.name)
        continue
    r = runner.invoke(app, ["explain", str(f), "--width", "120"])
    name = f.name.removesuffix(".json.gz")
    (dst / f"{name}.txt").write_text(r.output)
    print(f"explain {name}: rc={r.exit_code}")
EOF

# -- fixtures/README.md from the metadata each trace carries -------------------------------
"$PY" - "$OUT/fixtures" >>"$LOG" 2>&1 <<'EOF'
import gzip, json, pathlib, shlex, sys
folder = pathlib.Path(sys.argv[1])
rows, meta = [], {}
for p in sorted(folder.glob("*.json.gz")):
    if p.name.endswith(".cold.json.gz"):
        continue
    m = json.loads(gzip.decompress(p.read_bytes())).get("traceview")
    if not m:
        continue
    meta = m
    argv = shlex.split(m["command"])
    if argv[:3] == ["python", "-m", "traceview"]:
        argv[:3] = ["traceview"]
    if "--out" in argv:
        argv[argv.index("--out") + 1] = f"fixtures/{p.name}"
    b, pr = m["baseline"], m["protocol"]
    what = (f"{m['impl']} {m['op']} {'x'.join(map(str, m['shape']))} {m['dtype']} {m['layout']}; "
            f"{pr['mode']}, sync {pr['sync']}, {pr['iters']} calls, stack {'on' if pr['with_stack'] else 'off'}")
    fig = (f"unprofiled: full API p50 {b['full_api_ns_p50']} ns, submit {b['amortized_submit_ns']} ns, "
           f"device/op {b.get('device_ns')} ns; cold call {m['cold']['wall_ns']} ns")
    rows.append(f"- `{p.name}` + cold twin `{m['cold']['trace']}`: {what}.\n  {fig}.\n"
                f"  `{shlex.join(argv)}`")
cold = folder / "triton_mul_cold_stack.json.gz"
dev, ver = meta.get("device", {}), meta.get("versions", {})
text = ["# Fixtures", "",
        "Regenerated by `traceview capture` itself (tools/gpu/capture_fixtures.sh). Each trace carries its",
        "metadata (command, versions, protocol, correctness, unprofiled baseline) under the",
        "top-level `traceview` key; `<name>.cold.json.gz` is its cold twin (one range,",
        "`cold_call_0`: the first call with empty compile caches).",
        *([f"`{cold.name}` is a copy of the default capture's cold twin (Triton compile, with",
           "Python frames)."] if cold.exists() else []), "",
        f"Device: {dev.get('name')} (driver {dev.get('driver')}, CUDA {dev.get('cuda')}, "
        f"capability {dev.get('capability')}); torch {ver.get('torch')}, triton {ver.get('triton')}, "
        f"Python {ver.get('python')}, flag_gems {ver.get('flag_gems')}.", "",
        "Commands, from the repository root (where traceview is not installed:",
        "`PYTHONPATH=. python3 -m traceview capture ...`, as the capture script ran them):", ""] + rows
(folder / "README.md").write_text("\n".join(text) + "\n")
print(f"README.md: {len(rows)} traces")
EOF

# -- archives: at most 3 files under $OUT ---------------------------------------------------
log "# done in ${SECONDS}s; failed or skipped: ${FAILED[*]:-none}"
cd "$OUT" || exit 1
tar -cf fixtures.tar fixtures && rm -rf fixtures
tar -cf sweeps.tar sweep_sigmoid_triton sweep_sigmoid_torch 2>/dev/null; rm -rf sweep_sigmoid_triton sweep_sigmoid_torch
tar -cf logs.tar ./*.txt explain && rm -rf explain ./*.txt
ls -la "$OUT"
