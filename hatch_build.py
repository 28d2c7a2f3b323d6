"""Build hook: compile traceview's optional C helpers into shared libraries next to their
sources (loaded with ctypes by ``traceview/native.py``).

Why a hook and not extension modules: the helpers are plain C with no Python API, so any
C compiler builds them, for every Python version at once. A machine without a compiler
still installs traceview: the hook says so and the package takes its pure-Python paths,
which give identical output (``tests/test_fastscan.py``, ``tests/test_sweep.py``). Set
``TRACEVIEW_BUILD_NATIVE=0`` to skip it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCES = [Path("traceview/io/_kineto_scan.c"), Path("traceview/analyses/_host_sweep.c")]


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if os.environ.get("TRACEVIEW_BUILD_NATIVE") == "0":
            return
        root = Path(self.root)
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            print("traceview: no C compiler; the optional compiled helpers are not built "
                  "(traceview works without them; large traces take longer)", file=sys.stderr)
            return
        built = []
        for src in SOURCES:
            lib = src.with_suffix(".so")
            cmd = [cc, "-O2", "-shared", "-fPIC", "-o", str(root / lib), str(root / src)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"traceview: building {lib} failed ({' '.join(cmd)}): "
                      f"{done.stderr.strip()[:500]}; its pure-Python path is used",
                      file=sys.stderr)
                continue
            built.append(str(lib))
        if built:
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
            if version != "editable":
                build_data["artifacts"].extend(built)
