"""Everything that touches the execution device: imports, fresh caches, sync, memory, identity.

This module, like the rest of ``traceview.opcapture``, imports torch and triton only inside
functions, so ``traceview --help`` and ``traceview explain`` never pay for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import platform
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from traceview.errors import CaptureError
from traceview.workload import ops
from traceview.workload.config import CaptureConfig


def import_torch() -> Any:
    """``import torch``, or one line saying how to install the capture extra."""
    try:
        import torch
    except ImportError:
        raise CaptureError(
            "capture, ab and sweep need PyTorch: pip install 'traceview[capture]' "
            "(or install a torch build for your platform first)"
        ) from None
    return torch


def import_triton() -> Any:
    try:
        import triton
    except ImportError:
        raise CaptureError("--impl triton needs Triton: pip install 'traceview[capture]'") from None
    return triton


@contextlib.contextmanager
def environ(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``env`` laid over it for the block; every value restored after."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def fresh_compile_caches(config: CaptureConfig) -> Iterator[str]:
    """Point Triton's and Inductor's on-disk caches at a new empty folder for this capture.

    The cold-path measurement is only honest if the first call really compiles, so it
    must not find a kernel compiled by an earlier run. ``TRITON_INTERPRET=1`` is also set
    here for Triton on the CPU; both must be in the environment before triton is first
    imported and while kernels are created, so this wraps the whole capture. Previous
    values are restored and the folder removed afterwards.
    """
    root = tempfile.mkdtemp(prefix="traceview-cache-")
    env = {
        "TRITON_CACHE_DIR": os.path.join(root, "triton"),
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "inductor"),
    }
    if config.interpreted:
        env["TRITON_INTERPRET"] = "1"
    try:
        with environ(env):
            yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Device:
    """The torch device a capture runs on, with its synchronize and identity."""

    torch: Any
    kind: str  # "cuda" | "cpu"

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def torch_device(self) -> Any:
        return self.torch.device("cuda", self.torch.cuda.current_device()) if self.is_cuda \
            else self.torch.device("cpu")

    @property
    def sync(self) -> Callable[[], None]:
        """``torch.cuda.synchronize`` on the GPU; on the CPU every op is already complete."""
        return self.torch.cuda.synchronize if self.is_cuda else _no_sync

    def free_bytes(self) -> int | None:
        if self.is_cuda:
            free, _total = self.torch.cuda.mem_get_info()
            return int(free)
        return _mem_available()

    def info(self) -> dict[str, str | None]:
        """``{name, driver, cuda, capability}`` for the trace metadata."""
        if not self.is_cuda:
            return {"name": _cpu_name(), "driver": None, "cuda": None, "capability": None}
        torch = self.torch
        idx = torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(idx)
        return {
            "name": torch.cuda.get_device_name(idx),
            "driver": nvidia_driver_version(),
            "cuda": torch.version.cuda,
            "capability": f"{major}.{minor}",
        }


def _no_sync() -> None:
    return None


def open_device(config: CaptureConfig) -> Device:
    """The device asked for, or CaptureError (exit 2) with one line when there is none."""
    torch = import_torch()
    if config.device == "cuda":
        if not torch.cuda.is_available():
            cuda = torch.version.cuda
            build = "a CPU-only build" if cuda is None else f"CUDA {cuda}"
            raise CaptureError(
                f"no CUDA GPU available (torch {torch.__version__}, {build}); "
                "use --device cpu with --impl torch or --impl triton for the CPU path"
            )
        torch.cuda.init()
    return Device(torch=torch, kind=config.device)


def estimate_bytes(config: CaptureConfig) -> int:
    """Peak memory the capture needs, before allocating anything.

    Inputs (twice the storage for ``strided``), outputs alive at once (graph mode keeps
    ``graph_ops`` of them, streams one each), and the float64 reference with its inputs.
    Deliberately a slight overestimate: failing early beats an OOM mid-trace.
    """
    item = ops.ITEMSIZE[config.dtype]
    stretch = 2 if config.layout == "strided" else 1
    inputs = sum(math.prod(s) for s in config.shapes) * item * stretch
    outs_alive = 2 + config.graph_ops + config.streams
    outputs = config.numel * max(item, 4) * outs_alive
    reference = (sum(math.prod(s) for s in config.shapes) + 2 * config.numel) * 8
    return inputs + outputs + reference


def check_memory(device: Device, config: CaptureConfig) -> None:
    need = estimate_bytes(config)
    free = device.free_bytes()
    if free is not None and need > free:
        raise CaptureError(
            f"too large for {device.kind} memory: shape {config.shape_label} {config.dtype} "
            f"needs about {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
        )


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def nvidia_driver_version() -> str | None:
    """The kernel-mode driver version (e.g. ``570.124.06``): NVML first, then nvidia-smi.

    torch exposes only the CUDA runtime version, and a reproducer needs the driver too.
    """
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() == 0:
            buf = ctypes.create_string_buffer(96)
            ok = nvml.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(96)) == 0
            nvml.nvmlShutdown()
            if ok:
                return buf.value.decode()
    except (OSError, AttributeError):
        pass
    from traceview.runner.process import query

    out = (query(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
           or "").strip().splitlines()
    return out[0].strip() if out else None
