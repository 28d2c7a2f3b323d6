"""The optional compiled helpers, loaded with ctypes: one loader for all of them.

Two hot loops have a C twin (plain C, no Python API, so one library serves every Python 3
and the wheel is tagged ``py3-none-<platform>``): the chunk scanner of the trace decoder
(``io/_kineto_scan.c``, used by ``io/fastscan.py``) and the host sweep
(``analyses/_host_sweep.c``, used by ``analyses/host.py``). ``setup.py`` compiles them
with setuptools when the package is installed on a machine with a C compiler. Without
them, or with ``TRACEVIEW_NO_NATIVE=1``, traceview takes its pure-Python paths, which
give identical output (``tests/test_fastscan.py``, ``tests/test_sweep.py``); only large
traces are slower. ``traceview --version`` says which helpers are in use.

Why the check before a library is called: ctypes trusts the argument types written
here, so a library built from an older ``.c`` (an edit without a rebuild) would be called
with the wrong arguments and corrupt memory instead of failing. Each library exports its
ABI version and the sha256 of the source it was built from; a library whose ABI differs
from the table below, or whose hash differs from the ``.c`` file shipped beside it, is
refused with a one-line message on stderr and its pure-Python path is used.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
_SUFFIX = ".dll" if os.name == "nt" else ".so"
#: values of TRACEVIEW_NO_NATIVE that switch the helpers off ("0", "" and others do not)
_OFF = frozenset({"1", "true", "yes", "on"})
REBUILD = "`python setup.py build_ext --inplace` in a checkout, or reinstall traceview"


@dataclass(frozen=True)
class Library:
    """One compiled helper: where it lies, the function it exports, that function's
    argument types, and the ABI version those types describe (the C's ``tv_abi_version``)."""

    path: Path
    function: str
    argtypes: tuple[Any, ...]
    abi: int

    @property
    def source(self) -> Path:
        return self.path.with_suffix(".c")


_P, _I64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
#: name -> the library; argtypes mirror the C prototypes (bump abi on both sides together)
LIBRARIES = {
    # tv_scan_chunk(buf, size, cap, ucap, key, name, ts, dur, ev, args, key_spans,
    #               name_spans, counts)
    "scan": Library(ROOT / "io" / f"_kineto_scan{_SUFFIX}", "tv_scan_chunk",
                    (_P, _I64, _I64, _I64) + (_P,) * 9, abi=1),
    # tv_host_sweep(n, rows, start, end, own, subtree, w0, w1, untraced, other, bounds,
    #               base, off, seg_cat, seg_pos, seg_cap, resolved, non_nested)
    "sweep": Library(ROOT / "analyses" / f"_host_sweep{_SUFFIX}", "tv_host_sweep",
                     (_I64,) + (_P,) * 5 + (_I64, _I64, _I32, _I32) + (_P,) * 5
                     + (_I64, _P, _P),
                     abi=4),
    # tv_clip_rows(n, rows, start_col, end_col, stack, hit_rows, hit_by): the same
    # library's second function (model.clip_to_callers and _clip_python_frames)
    "clip": Library(ROOT / "analyses" / f"_host_sweep{_SUFFIX}", "tv_clip_rows",
                    (_I64,) + (_P,) * 6, abi=4),
}

#: name -> (the function or None, why: "in use" or the reason it is not)
_LOADED: dict[str, tuple[Callable[..., int] | None, str]] = {}


def switched_off() -> bool:
    """True when ``TRACEVIEW_NO_NATIVE`` is 1/true/yes/on (``0`` keeps the helpers on)."""
    return os.environ.get("TRACEVIEW_NO_NATIVE", "").strip().lower() in _OFF


def load(which: str) -> Callable[..., int] | None:
    """The compiled function ``which`` ("scan", "sweep"), or None when it is not built,
    switched off, or refused as stale (said once on stderr)."""
    if which not in _LOADED:
        fn, why = _open(LIBRARIES[which])
        _LOADED[which] = (fn, why)
        if why.startswith("stale"):
            print(f"traceview: {LIBRARIES[which].path} is {why}; not loaded, the pure-Python "
                  f"path is used. Rebuild it: {REBUILD}", file=sys.stderr)
    return _LOADED[which][0]


def status() -> dict[str, str]:
    """Each helper's state: "in use", "not built", "switched off (...)", "stale: ..."."""
    for which in LIBRARIES:
        load(which)
    return {which: _LOADED[which][1] for which in LIBRARIES}


def _open(lib: Library) -> tuple[Callable[..., int] | None, str]:
    if switched_off():
        return None, "switched off (TRACEVIEW_NO_NATIVE)"
    if not lib.path.exists():
        return None, "not built"
    try:
        cdll = ctypes.CDLL(str(lib.path))
    except OSError as exc:
        return None, f"not loadable ({exc})"
    problem = stale_reason(cdll, lib)
    if problem:
        return None, f"stale: {problem}"
    try:
        fn = getattr(cdll, lib.function)
    except AttributeError:
        return None, f"stale: it has no {lib.function}"
    fn.restype = ctypes.c_int64
    fn.argtypes = list(lib.argtypes)
    return fn, "in use"


def stale_reason(cdll: ctypes.CDLL, lib: Library) -> str | None:
    """Why the loaded library does not match this traceview, or None when it does."""
    try:
        abi, sha = cdll.tv_abi_version, cdll.tv_source_sha256
    except AttributeError:
        return "it exports no ABI version (built before the check existed)"
    abi.restype, abi.argtypes = ctypes.c_int64, []
    sha.restype, sha.argtypes = ctypes.c_char_p, []
    if abi() != lib.abi:
        return f"its ABI version is {abi()}, this traceview calls version {lib.abi}"
    if lib.source.exists():
        want = hashlib.sha256(lib.source.read_bytes()).hexdigest()
        got = (sha() or b"").decode("ascii", "replace")
        if got != want:
            return f"it was built from another {lib.source.name} (sha256 {got[:12]}, "\
                   f"the source beside it is {want[:12]})"
    return None
