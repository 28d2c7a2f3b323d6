"""traceview beside Holistic Trace Analysis (HTA), whole processes, interleaved, repeated.

    PYTHONPATH=. python benchmarks/vs_hta.py --hta-python /work/venv-hta/bin/python \\
        --work /tmp/vs_hta --reps 3 --cpu 1 [--big-mb 450] [--calls 12000] \\
        [--corpus NAME ...] [--trace LABEL=PATH ...] [--annotate] [--only TEXT]

Each repetition runs every trace once with each tool, in fresh processes pinned to one
core (``taskset -c CPU``) under ``/usr/bin/time -v``; the order of the tools rotates
from one repetition to the next, so a burst of other load on the shared machine falls
on each tool in turn. The table gives the median CPU time (user + sys) and wall time of
each tool, its peak RSS, and HTA's median over traceview's, CPU and wall: on a shared
machine the CPU ratio is the one to read, the wall ratio holds only on a quiet one.

The tools: ``explain TRACE --format json`` (interpreter start and imports included), and
with ``--annotate`` the same with ``--annotate OUT.json.gz`` (its time and peak over
explain's are printed too); HTA 0.5.0's load and three analyses (``bench_hta.HTA_DRIVER``:
temporal breakdown, idle time breakdown, kernel launch statistics) from its own venv
(``python3 -m venv /work/venv-hta && /work/venv-hta/bin/pip install
HolisticTraceAnalysis 'pandas<3'``; never traceview's venv).

The traces:

* public ones from the corpus (``tests/public_corpus.py``), by manifest name:
  ``--corpus`` (default: HTA's own ``df_index_resolver`` test trace), each as it was
  published (HTA's test traces are in Kineto's layout already);
* the real 12,000-call trace (``fixtures/large/many_calls_torch_triton_mul_h200``,
  6,000 torch and 6,000 Triton mul calls captured on an H200 with stacks), when present;
* a synthetic trace of ``--calls`` calls (``synth_calls.py``);
* the compile trace of ``--big-mb`` MB (``make_large_trace.py``: a real H200 cold
  compile with stacks, repeated with shifted times and ids; 0 leaves it out).

Fixtures and generated traces are re-laid out as Kineto writes them, with a rank
(``bench_hta.kineto_layout``): HTA reads the file line by line to find the rank.
Every measurement goes to ``WORK/vs_hta.json``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import bench_hta  # (same directory)
import synth_calls  # (same directory)

DEFAULT_CORPUS = ["facebookresearch__HolisticTraceAnalysis/df_index_resolver.json.gz"]
MANY_CALLS = ROOT / "fixtures" / "large" / "many_calls_torch_triton_mul_h200.json.gz"


def traces(work: Path, corpus: list[str], calls: int, big_mb: float,
           extra: list[str]) -> list[tuple[str, Path]]:
    """(label, trace file alone in its directory) for every trace; made once per WORK."""
    import public_corpus  # type: ignore[import-not-found]  # tests/public_corpus.py

    out: list[tuple[str, Path]] = []
    for name in corpus:
        src = public_corpus.locate(name)
        if src is None:
            print(f"vs_hta: {name} is not in the corpus here; left out", file=sys.stderr)
            continue
        d = work / "traces" / name.replace("/", "__").removesuffix(".json.gz")
        dst = d / src.name
        if not dst.exists():
            d.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        out.append((f"public: {src.name.removesuffix('.json.gz')}", dst))
    made: list[tuple[str, Path]] = []
    if MANY_CALLS.exists():
        made.append(("12,000 calls, real (H200)", MANY_CALLS))
    synth = work / f"synth_{calls}.json.gz"
    if calls and not synth.exists():
        synth_calls.write(synth, calls)
    if calls:
        made.append((f"{calls:,} calls, synthetic", synth))
    if big_mb:
        big = work / f"big_{big_mb:g}.json.gz"
        if not big.exists():
            bench_hta.make_large_trace.main(["--mb", str(big_mb), "--out", str(big)])
        made.append((f"compile, {big_mb:g} MB", big))
    for item in extra:
        label, _, path = item.partition("=")
        made.append((label, Path(path)))
    for label, src in made:
        name = src.name.removesuffix(".gz").removesuffix(".json")
        dst = work / "traces" / name / "trace.json.gz"
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            bench_hta.kineto_layout(src, dst)
        out.append((label, dst))
    return out


def _cpu(r: dict) -> float:
    return r["user_s"] + r["sys_s"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta-python", type=Path, required=True, help="python of HTA's own venv")
    ap.add_argument("--work", type=Path, default=Path("/tmp/vs_hta"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=1, help="core to pin every run to")
    ap.add_argument("--calls", type=int, default=12_000, help="0: no synthetic trace")
    ap.add_argument("--big-mb", type=float, default=0, help="the compile trace's size; 0: none")
    ap.add_argument("--corpus", action="append", help="public corpus trace by manifest name")
    ap.add_argument("--trace", action="append", default=[], metavar="LABEL=PATH")
    ap.add_argument("--annotate", action="store_true", help="also time explain --annotate")
    ap.add_argument("--no-hta", action="store_true", help="traceview only")
    ap.add_argument("--only", help="only the traces whose label contains this")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    driver = a.work / "hta_driver.py"
    driver.write_text(bench_hta.HTA_DRIVER)
    logs = a.work / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    todo = [(lb, p) for lb, p in traces(a.work, a.corpus or DEFAULT_CORPUS, a.calls,
                                        a.big_mb, a.trace)
            if not a.only or a.only in lb]
    # traceview's modules byte-compiled first, as pip does on install (HTA's venv has its
    # own .pyc from pip): a checkout run under PYTHONDONTWRITEBYTECODE would otherwise
    # compile them again in every run, a tenth of explain's time on a small trace
    compileall.compile_dir(ROOT / "traceview", quiet=1)
    tv = bench_hta.traceview_cmd()
    tools: dict[str, object] = {"explain": lambda p: [*tv, "explain", str(p), "--format", "json"]}
    if a.annotate:
        tools["annotate"] = lambda p: [*tv, "explain", str(p), "--format", "json",
                                       "--annotate", str(a.work / "annotated.json.gz")]
    if not a.no_hta:
        tools["hta"] = lambda p: [str(a.hta_python), str(driver), str(p.parent)]
    names = list(tools)
    runs: dict[str, dict[str, list[dict]]] = {lb: {t: [] for t in names} for lb, _ in todo}
    for rep in range(a.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for k, (label, path) in enumerate(todo):
            for t in order:
                cmd = tools[t](path)  # type: ignore[operator]
                r = bench_hta.run_one("hta" if t == "hta" else "traceview", cmd,
                                      logs / f"{k}_{t}_{rep}", a.cpu)
                if t == "hta":
                    phases = r.get("hta", {}).get("phases", {})
                    r["hta_failed"] = [n for n, p in phases.items() if not p.get("ok")]
                runs[label][t].append(r)
                print(f"rep {rep + 1} {label} {t}: CPU {_cpu(r):.2f} s, wall "
                      f"{r['wall_s']:.2f} s, {r['peak_mb']:.0f} MiB, rc {r['rc']}", flush=True)
            (a.work / "vs_hta.json").write_text(json.dumps(
                {"reps": a.reps, "cpu": a.cpu, "traces": {lb: str(p) for lb, p in todo},
                 "runs": runs}, indent=1, default=str))
    print()
    print(table(runs, names))
    return 0


def table(runs: dict[str, dict[str, list[dict]]], names: list[str]) -> str:
    """Medians per trace and tool; the ratios are of medians."""
    head = ["trace"]
    for t in names:
        head += [f"{t} CPU s (wall)", f"{t} MiB"]
    if "annotate" in names:
        head += ["annotate / explain CPU", "annotate / explain MiB"]
    if "hta" in names:
        head += ["HTA / explain CPU", "HTA / explain wall"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for label, by in runs.items():
        med = {t: {"cpu": statistics.median(_cpu(r) for r in rs),
                   "wall": statistics.median(r["wall_s"] for r in rs),
                   "mb": statistics.median(r["peak_mb"] for r in rs)}
               for t, rs in by.items() if rs}
        cells = [label]
        for t in names:
            m = med.get(t)
            cells += [f"{m['cpu']:.2f} ({m['wall']:.2f})", f"{m['mb']:.0f}"] if m else ["-", "-"]
        e = med.get("explain")
        if "annotate" in names and e and "annotate" in med:
            cells += [f"{med['annotate']['cpu'] / e['cpu']:.2f}x",
                      f"{med['annotate']['mb'] / e['mb']:.2f}x"]
        if "hta" in names and e and "hta" in med:
            failed = sorted({n for r in by["hta"] for n in r.get("hta_failed", [])})
            note = f" (HTA raised in {', '.join(failed)})" if failed else ""
            cells += [f"{med['hta']['cpu'] / e['cpu']:.1f}x{note}",
                      f"{med['hta']['wall'] / e['wall']:.1f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
