"""Build of traceview's two optional compiled helpers, with setuptools' ``Extension``.

Why setuptools ``Extension`` (and not scikit-build-core, Cython or a hand-called ``cc``):
the helpers are two single-file C loops with no Python API and no dependencies, so they
need a compiler driver, not a build system. setuptools already knows how to find and call
the platform's compiler (``CC``, ``CFLAGS``, MSVC on Windows), is the default build backend
every packager knows, and needs no tool beyond itself (scikit-build-core would add CMake,
Cython a language and a generated C file per loop). What is particular to traceview is
written here and only here:

* The libraries are loaded with ctypes (``traceview/native.py``), not imported, so they
  are named ``_kineto_scan.so`` / ``_host_sweep.so`` (no ``cpython-311`` suffix) and the
  wheel is tagged ``py3-none-<platform>``: one wheel per platform serves every Python 3.
  A wheel with no library in it (the build failed) is tagged ``py3-none-any``.
* A failed compile is not an error: it prints a banner on stderr (``pip install -v``
  shows it; pip names the resulting ``py3-none-any`` wheel either way) and the install
  goes on; traceview then takes its pure-Python paths, which give identical output.
  ``TRACEVIEW_BUILD_NATIVE=0`` skips the helpers; ``TRACEVIEW_BUILD_NATIVE=1`` makes a
  failed compile fail the install (CI uses it).
* Each library is compiled with ``TV_SOURCE_SHA256``, the sha256 of its own ``.c`` file;
  ``native.py`` compares it with the ``.c`` shipped beside the library and refuses a stale
  one (a library built from an older source) with a message instead of calling it with
  the wrong arguments.

Developers: ``pip install -e .`` builds them in place; after editing a ``.c`` file,
``python setup.py build_ext --inplace`` rebuilds them.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCES = {
    "traceview.io._kineto_scan": "traceview/io/_kineto_scan.c",
    "traceview.analyses._host_sweep": "traceview/analyses/_host_sweep.c",
}
#: libraries this build produced (the wheel's tag depends on it)
BUILT: list[str] = []


def source_sha256(path: str) -> str:
    return hashlib.sha256((HERE / path).read_bytes()).hexdigest()


def extension(name: str, path: str) -> Extension:
    return Extension(name, [path], define_macros=[("TV_SOURCE_SHA256", f'"{source_sha256(path)}"')],
                     extra_compile_args=["-O2"] if os.name != "nt" else [])


class BuildHelpers(build_ext):
    """Plain shared libraries for ctypes: plain names, no ``PyInit_`` export, and a
    failed compile warns (or fails, with ``TRACEVIEW_BUILD_NATIVE=1``)."""

    def get_ext_filename(self, fullname: str) -> str:
        return os.path.join(*fullname.split(".")) + (".dll" if os.name == "nt" else ".so")

    def get_export_symbols(self, ext: Extension) -> list[str]:
        return ext.export_symbols

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # a compiler's failure comes in several classes
            if os.environ.get("TRACEVIEW_BUILD_NATIVE") == "1":
                raise
            bar = "!" * 78
            print(f"\n{bar}\ntraceview: WARNING: building the compiled helper {ext.sources[0]} "
                  f"failed:\n  {type(exc).__name__}: {exc}\ntraceview installs without it and "
                  f"takes its pure-Python path (same output, large traces take longer).\n"
                  f"`traceview --version` says which helpers are in use.\n{bar}\n",
                  file=sys.stderr, flush=True)
            return
        BUILT.append(ext.name)


class Wheel(bdist_wheel):
    """``py3-none-<platform>`` when a helper is inside, ``py3-none-any`` when none is."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return ("py3", "none", platform if BUILT else "any")


skip = os.environ.get("TRACEVIEW_BUILD_NATIVE") == "0"
setup(
    ext_modules=[] if skip else [extension(name, path) for name, path in SOURCES.items()],
    cmdclass={"build_ext": BuildHelpers, "bdist_wheel": Wheel},
)
