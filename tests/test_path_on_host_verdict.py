"""A step the device is busy most of, whose critical path is mostly host-thread time, is
host-bound: its length is its path. The verdict word and its clause agree (never
"device-bound ... but most of the path is host-thread time"). Figures counted here from
the raw events of the public trace; the synthetic shape is tests/test_trace_shapes.py's
untraced-host step."""

from __future__ import annotations

import gzip
import json

import public_corpus
import pytest

import traceview
from traceview.intervals import clip, length, union
from traceview.units import fmt_ns, fmt_pct

PT19 = "pytorch__kineto/resnet50_num_workers_0_pt19.json.gz"


def test_kineto_resnet50_pt19_step_on_a_host_path_is_host_bound():
    """Kineto's ResNet-50 sample (PyTorch 1.9 legacy format): the device is busy just
    over half of each step, and about two thirds of the step's critical path is the
    main thread's."""
    path = public_corpus.locate(PT19)
    if path is None:
        pytest.skip(f"public corpus trace {PT19} not present")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
              if e.get("ph") == "X"]
    steps = sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
                   for e in events if e.get("cat") == "Operator"
                   and e["name"].startswith("ProfilerStep#"))
    work = [e for e in events if e.get("cat") in ("Kernel", "Memcpy", "Memset")]
    busy = union([round(e["ts"] * 1000) for e in work],
                 [round((e["ts"] + e["dur"]) * 1000) for e in work])
    r = traceview.analyze(path)
    t = r.typical_call
    assert t is not None and r.steps is not None
    row = next(s for s in r.steps.steps if s.index == t.index)
    a, b = steps[t.index]
    assert (row.start_ns, row.range_end_ns) == (a, b)
    wall = row.end_ns - a
    on_device = length(clip(busy, a, row.end_ns))
    assert 2 * on_device > wall  # the shape: the device busy most of the step
    host = sum(p.ns for p in row.critical_path
               if p.kind == "host" and p.what not in ("sync", "wait"))
    assert sum(p.ns for p in row.critical_path) == wall
    assert 2 * host > wall  # ...and its path mostly the host thread's
    v = r.verdict
    assert v is not None and v.id == "host-bound", v and v.message
    assert v.message.startswith(f"host-bound: {fmt_pct(host / wall)} of the step's critical "
                                f"path ({fmt_ns(wall)}) is host-thread time"), v.message
    assert f"the device is busy {fmt_pct(on_device / wall)} of a typical step" in v.message
    assert "device-bound" not in v.message
    assert "host work is hidden" not in v.message
