from __future__ import annotations

import gzip
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traceview
from conftest import FIXTURES
from traceview.errors import TraceLoadError
from traceview.io.columns import IdColumn
from traceview.io.decode import value_to_ns as _to_ns


def test_kineto_float_microseconds_to_exact_ns():
    assert _to_ns(5170286174716.935) == 5170286174716935
    assert _to_ns(0.832) == 832
    assert _to_ns("5170286174716.935") == 5170286174716935
    assert _to_ns(float("nan")) is None and _to_ns("abc") is None


@pytest.mark.slow
def test_every_fixture_timestamp_is_exact():
    """round(float * 1000) equals the decimal digits read as text, for every ts/dur."""
    num = re.compile(rb'"(?:ts|dur)":\s*(-?\d+)\.(\d{1,3})\b')
    checked = 0
    for path in sorted(FIXTURES.glob("*.json.gz")):
        raw = gzip.decompress(path.read_bytes())
        for whole, frac in num.findall(raw):
            frac = frac.ljust(3, b"0")  # re-encoded JSON drops trailing zeros
            text_ns = int(whole) * 1000 + (int(frac) if not whole.startswith(b"-") else -int(frac))
            assert _to_ns(float(whole + b"." + frac)) == text_ns
            checked += 1
    assert checked > 10_000


def test_plain_gzip_and_bare_array_agree(tb, tmp_path):
    tb.launched_kernel("k", 1_000, 2_000, 5_000, 863)
    tb.op("aten::mul", 500, 4_000)
    a = traceview.analyze(tb.write(tmp_path / "a.json")).to_dict()
    b = traceview.analyze(tb.write(tmp_path / "b.json.gz", gz=True)).to_dict()
    c = traceview.analyze(tb.write(tmp_path / "c.json", bare=True)).to_dict()
    for d in (a, b, c):
        d["trace"].pop("path"), d["trace"].pop("metadata")
    assert a == b == c


def test_metadata_is_kept(tb, tmp_path):
    tb.metadata = {"deviceProperties": [{"name": "X"}], "baseTimeNanoseconds": 17,
                   "traceview": {"op": "mul"}}
    tb.op("aten::mul", 0, 10)
    t = traceview.load(tb.write(tmp_path / "m.json"))
    assert t.metadata["deviceProperties"][0]["name"] == "X"
    assert t.metadata["baseTimeNanoseconds"] == 17
    assert t.metadata["traceview"] == {"op": "mul"}


@pytest.mark.parametrize("content, problem", [
    (b"", "empty file"),
    (b"hello", "not a JSON trace"),
    (b'{"foo": 1}', "no 'traceEvents'"),
    (b'{"traceEvents": [', "truncated before the first complete event"),
    (b'{"traceEvents": [}', "not valid JSON"),
    (b'{"traceEvents": []}', "no events"),
    (b"\x1f\x8b\x08\x00garbage", "gzip"),
])
def test_unusable_input_raises_one_clear_error(tmp_path, content, problem):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceLoadError, match=problem) as exc:
        traceview.load(p)
    assert str(p) in str(exc.value)


def test_odd_field_types_fall_back_event_by_event(tmp_path, tb):
    tb.op("aten::mul", 0, 1_000)
    tb.raw({"ph": "X", "cat": "cpu_op", "name": 12, "pid": 1.0, "tid": [1], "ts": "2.5", "dur": 1})
    tb.raw("not an event")
    t = traceview.load(tb.write(tmp_path / "odd.json"))
    assert len(t.slices) == 2
    assert int(t.slices.start[1]) == 2_500
    assert any(d.code == "event-malformed" and d.count == 1 for d in t.diagnostics)


def test_unknown_category_kept_and_reported(tb, tmp_path):
    tb.op("mystery", 0, 1_000, cat="my_cat")
    ex = traceview.analyze(tb.write(tmp_path / "u.json"))
    assert ex.host.categories["other"] == 1_000
    assert any(d.code == "unknown-category" for d in ex.diagnostics)


def test_begin_end_pairs_become_slices(tmp_path, tb):
    tb.raw({"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 1.0})
    tb.raw({"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 2.0})
    tb.raw({"ph": "E", "pid": 1, "tid": 1, "ts": 3.0})
    tb.raw({"ph": "E", "pid": 1, "tid": 1, "ts": 5.5})
    t = traceview.load(tb.write(tmp_path / "be.json"))
    spans = sorted((t.names[n], int(s), int(e)) for n, s, e in
                   zip(t.slices.name.tolist(), t.slices.start, t.slices.end, strict=True))
    assert spans == [("inner", 2_000, 3_000), ("outer", 1_000, 5_500)]


@pytest.mark.parametrize("name", ["triton_mul_1x4096_f32_stack.json.gz", "flag_gems_add_16x4096_bf16.json.gz",
                                  "two_streams_8192x8192_f16.json.gz"])
def test_same_json_plain_gzipped_whole_or_streamed(tmp_path, monkeypatch, name):
    """Streaming in tiny pieces, in one piece, plain or gzipped: the same explain JSON."""
    from traceview.io import pieces as dec

    src = FIXTURES / name
    plain = tmp_path / "plain.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))

    def run(path):
        d = traceview.analyze(path).to_dict()
        d["trace"].pop("path")
        return d

    reference = run(src)
    assert run(plain) == reference
    monkeypatch.setattr(dec, "PIECE", 997)  # thousands of chunks, cut at odd places
    assert run(src) == reference and run(plain) == reference
    monkeypatch.setattr(dec, "PIECE", 1 << 30)  # the whole file as one chunk
    assert run(src) == reference


def test_clock_past_float_precision_is_still_exact(tb, tmp_path):
    """ts >= 2**43 us (101 days of uptime): floats cannot hold the ns; the text is parsed."""
    base = 2**43 * 1000 + 1  # ns
    tb.op("aten::mul", base, 1_001)
    tb.launched_kernel("k", base + 100, 200, base + 501, 863)
    t = traceview.load(tb.write(tmp_path / "late.json"))
    assert sorted(t.slices.start.tolist()) == [base, base + 100, base + 501]
    assert traceview.explain(t).device.busy_ns == 863


@pytest.fixture(params=["isal", "zlib"])
def inflate_backend(request, monkeypatch):
    """Run a test with each gzip backend (ISA-L when installed, and the standard zlib)."""
    import zlib

    from traceview.io import pieces

    if request.param == "zlib":
        monkeypatch.setattr(pieces, "inflate", zlib)
        monkeypatch.setattr(pieces, "INFLATE_ERRORS", (zlib.error,))
    elif pieces.inflate is zlib:
        pytest.skip("isal is not installed")
    return request.param


def test_gzip_members_garbage_and_cuts_with_each_backend(tmp_path, tb, inflate_backend):
    """Several gzip members read as one text, garbage after the stream is ignored, a cut
    stream keeps what inflated, corrupt data is one clear error: with either backend."""
    for i in range(40):
        tb.op(f"aten::op{i}", i * 2_000, 1_000)
    text = (tb.write(tmp_path / "t.json")).read_bytes()

    def slices(data: bytes, name: str) -> int:
        p = tmp_path / name
        p.write_bytes(data)
        return len(traceview.load(p).slices)

    whole = slices(gzip.compress(text, mtime=0), "whole.json.gz")
    assert whole == 40
    half = len(text) // 2
    two = gzip.compress(text[:half], mtime=0) + gzip.compress(text[half:], mtime=0)
    assert slices(two, "members.json.gz") == whole
    assert slices(gzip.compress(text, mtime=0) + b"\x00\x00garbage", "trail.json.gz") == whole
    z = gzip.compress(text, mtime=0)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(z[: len(z) * 3 // 4])
    t = traceview.load(cut)
    assert 0 < len(t.slices) < whole
    assert any(d.code == "truncated" for d in t.diagnostics)
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(z[:20] + bytes(b ^ 0x5A for b in z[20:60]) + z[60:])
    with pytest.raises(TraceLoadError, match="gzip"):
        traceview.load(bad)


def test_a_cut_gzip_gives_the_same_text_with_either_backend(tmp_path, tb, monkeypatch):
    """ISA-L holds back the end of a member until it sees the member's end; a cut stream
    never shows it, so the loader inflates that member again with zlib: with either
    backend, every byte that can be inflated reaches the JSON layer."""
    import zlib

    from traceview.io import pieces

    if pieces.inflate is zlib:
        pytest.skip("isal is not installed")
    for i in range(3_000):
        tb.op(f"aten::op{i % 7}", i * 2_000, 1_000 + i % 13)
    text = tb.write(tmp_path / "t.json").read_bytes()
    half = len(text) // 3
    z = gzip.compress(text[:half], mtime=0) + gzip.compress(text[half:], mtime=0)
    cases = [(frac, piece) for frac in [k / 150 for k in range(1, 150)]  # ISA-L held back
             for piece in (pieces.PIECE, 1000)]  # bytes at ~1 cut in 5; small pieces too
    for frac, piece in cases:
        monkeypatch.setattr(pieces, "PIECE", piece)
        p = tmp_path / "cut.json.gz"
        p.write_bytes(z[: int(len(z) * frac)])

        def read(p=p) -> bytes | None:
            try:
                return pieces.read_bytes(p)
            except TraceLoadError:  # nothing inflatable yet (a cut inside the header)
                return None

        isal_text = read()
        with monkeypatch.context() as m:
            m.setattr(pieces, "inflate", zlib)
            m.setattr(pieces, "INFLATE_ERRORS", (zlib.error,))
            zlib_text = read()
        assert isal_text == zlib_text, (frac, piece)
        assert isal_text is None or text.startswith(isal_text)
        if frac >= 0.45:
            assert len(isal_text) > half


@pytest.mark.parametrize("corr", [7, 2**31 - 1, 2**31, 2**40])
def test_link_ids_past_int32_keep_their_value(tmp_path, tb, corr):
    """The id columns are held narrow only when every id fits: a launch and its kernel
    with a correlation id past int32 still link, by the id the file wrote."""
    for cat, pid, tid, ts in (("cuda_runtime", 1, 1, 1.0), ("kernel", 0, 7, 3.0)):
        tb.raw({"ph": "X", "cat": cat, "name": "k" if cat == "kernel" else "cudaLaunchKernel",
                "pid": pid, "tid": tid, "ts": ts, "dur": 1.0,
                "args": {"correlation": corr, "device": 0, "stream": 7}})
    t = traceview.load(tb.write(tmp_path / "ids.json"))
    cats = [t.cat_names[c] for c in t.slices.cat.tolist()]
    assert sorted(t.slices.corr.tolist()) == [corr, corr]
    launch, work = cats.index("cuda_runtime"), cats.index("kernel")
    assert dict(t.work_to_launch) == {work: launch}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([-1, -1, -1, 0, 5, 2**31 - 1, 2**31, 2**40]), max_size=40),
       st.data())
def test_a_sparse_id_column_reads_as_the_dense_one(ids, data):
    """``IdColumn`` (the slices' correlation ids: the rows that have one) against the
    dense column written out here: each read (index, slice, index array, mask, ==, !=,
    np.asarray, tolist), a subset of rows (``take``), ids set later (``with_ids``), and
    never written in place."""
    dense = np.asarray(ids, np.int64)
    col = IdColumn.of(dense, -1, block=data.draw(st.sampled_from([1, 3, 1 << 20])))
    assert len(col) == col.size == dense.size and col.rows.size == int((dense != -1).sum())
    assert np.asarray(col).tolist() == col.tolist() == ids
    for v in (-1, 5, 2**40):
        assert (col == v).tolist() == (dense == v).tolist()
        assert (col != v).tolist() == (dense != v).tolist()
    if dense.size:
        i = data.draw(st.integers(-dense.size, dense.size - 1))
        assert int(col[i]) == ids[i]
        idx = np.asarray(data.draw(st.lists(st.integers(-dense.size, dense.size - 1))), np.int64)
        assert col[idx].tolist() == dense[idx].tolist()
        mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=dense.size,
                                             max_size=dense.size)), bool)
        assert col[mask].tolist() == dense[mask].tolist()
        a = data.draw(st.integers(0, dense.size))
        assert col[a:].tolist() == ids[a:]
    keep = np.asarray(sorted(data.draw(st.sets(st.integers(0, max(dense.size - 1, 0))))
                             if dense.size else []), np.int64)
    assert col.take(keep).tolist() == dense[keep].tolist()
    absent = np.flatnonzero(dense == -1)
    set_rows = absent[:data.draw(st.integers(0, absent.size))]
    new = data.draw(st.lists(st.integers(0, 2**50), min_size=set_rows.size, max_size=set_rows.size))
    want = dense.copy()
    want[set_rows] = new
    assert col.with_ids(set_rows, np.asarray(new, np.int64)).tolist() == want.tolist()
    assert col.tolist() == ids  # a copy: the column itself unchanged
    with pytest.raises(ValueError):
        col[:1] = 0
