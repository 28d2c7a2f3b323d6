"""How a child process ended, in one type for every child of the measuring half.

``status`` is one of:

* ``ok``: the child's work returned; ``value`` is what it returned.
* ``wrong``: it returned, and says the answer is wrong (``value`` says what is wrong).
* ``error``: a problem the user can fix (no GPU, a missing package): ``error`` is its one
  line, ``exit_code`` its code.
* ``crashed``: it raised something else, or the process died (a signal, an abort, a
  non-zero exit): ``error`` says how, ``frame`` where when known.
* ``timeout``: it gave no sign of life within its time limit and was stopped.

``records`` holds what the child reported before the end, in order, so that what it did
before a crash or a hang is not lost with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["ok", "wrong", "error", "crashed", "timeout"]

#: The one time limit of a child process that has none of its own: it may import torch,
#: transformers or FlagGems, build a model and compile kernels (torch.compile, Triton).
CHILD_TIMEOUT_S = 600
#: A query of a tool (nvidia-smi's driver version, an interpreter's package versions)
#: answers in well under a second; one that takes this long is wedged and is skipped.
QUERY_S = 30


@dataclass(frozen=True)
class Outcome:
    """How one child run ended; see the module docstring for ``status``."""

    status: Status
    value: dict[str, Any] | None = None
    records: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    exit_code: int | None = None  # for "error": the TraceviewError's exit code
    frame: str | None = None  # "path:line in function"
    stack: tuple[str, ...] = ()  # innermost last
    returncode: int | None = None
    signal: str | None = None
    stderr_tail: tuple[str, ...] = ()
    wall_ns: int = 0
    timeout_s: float | None = None
    #: Re-run with ``CUDA_LAUNCH_BLOCKING=1`` to find the launch that crashed; the first
    #: run's error is ``first_error``.
    located: bool = False
    first_error: str | None = None

    @property
    def failed(self) -> bool:
        return self.status != "ok"

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["records"] = list(self.records)
        d["stack"] = list(self.stack)
        d["stderr_tail"] = list(self.stderr_tail)
        return d
