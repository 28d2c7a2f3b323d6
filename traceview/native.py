"""The optional compiled helpers, loaded with ctypes: one loader for all of them.

Two hot loops have a C twin (plain C, no Python API, so any C compiler builds them and
no wheel per Python version is needed): the chunk scanner of the trace decoder
(``io/_kineto_scan.c``, used by ``io/fastscan.py``) and the host sweep
(``analyses/_host_sweep.c``, used by ``analyses/host.py``). ``hatch_build.py`` compiles
them when the package is installed on a machine with a C compiler. Without them, or with
``TRACEVIEW_NO_NATIVE=1``, traceview takes its pure-Python paths, which give identical
output (``tests/test_fastscan.py``, ``tests/test_sweep.py``); only large traces are slower.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent
#: name -> (the library's path, its exported function, that function's argument types)
LIBRARIES = {
    "scan": (ROOT / "io" / "_kineto_scan.so", "tv_scan_chunk",
             [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
             + [ctypes.c_void_p] * 9),
    "sweep": (ROOT / "analyses" / "_host_sweep.so", "tv_host_sweep",
              [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
               ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32,
               ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
               ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
}


# more functions of an already listed library: name -> (library, function, argument types)
FUNCTIONS = {
    "clip": ("sweep", "tv_clip_frames", [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_void_p]),
}


def load(which: str):
    """The compiled function ``which`` ("scan", "sweep"), or None when not built or
    switched off."""
    if which in FUNCTIONS:
        lib, name, argtypes = FUNCTIONS[which]
        path = LIBRARIES[lib][0]
    else:
        path, name, argtypes = LIBRARIES[which]
    if os.environ.get("TRACEVIEW_NO_NATIVE") or not path.exists():
        return None
    try:
        fn = getattr(ctypes.CDLL(str(path)), name)
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int64
    fn.argtypes = argtypes
    return fn
