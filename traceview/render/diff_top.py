"""What the ``diff`` text shows of long lists: the top changes and a count of the rest.

Two traces of different programs differ in dozens of metadata keys, functions and
kernels; printed whole (full C++ kernel names one per line) the text ran to hundreds of
lines and the changes that matter scrolled away. The terminal shows the largest of each
list, by the size of the change, and says how many more there are; ``--format json`` and
the markdown keep everything.
"""

from __future__ import annotations

from typing import Any

from traceview.render.names import kernel_labels
from traceview.units import fmt_ns

TOP_WARNINGS = 6
TOP_FUNCTIONS = 15
TOP_KERNELS = 8


def more(n: int, what: str) -> str:
    return f"+{n} more {what} (--format json)" if n > 0 else ""


def top_warnings(warnings: list[str]) -> tuple[list[str], str]:
    return warnings[:TOP_WARNINGS], more(len(warnings) - TOP_WARNINGS,
                                         "differences in what was measured")


def kernel_change_ns(k: dict[str, Any]) -> int:
    """A kernel's change in device time: count x p50 after less before."""
    def total(side: str) -> int:
        return (k.get(f"count_{side}") or 0) * (k.get(f"p50_{side}") or 0)
    return total("after") - total("before")


def top_kernels(kernels: list[dict[str, Any]]) -> tuple[list[list[str]], str]:
    """The kernels that were added, removed or changed, the largest change in device time
    first, as table rows (a reader's name: ``names.kernel_labels``), and the rest counted."""
    changed = [k for k in kernels if k["status"] != "common"]
    changed.sort(key=lambda k: (-abs(kernel_change_ns(k)), k["name"]))
    labels = kernel_labels([k["name"] for k in kernels])
    rows = [[labels[k["name"]], k["status"], f"{k.get('count_before') or 0} -> "
             f"{k.get('count_after') or 0}", fmt_ns(k.get("p50_before")),
             fmt_ns(k.get("p50_after"))] for k in changed[:TOP_KERNELS]]
    return rows, more(len(changed) - TOP_KERNELS, "kernel changes")


KERNEL_HEADER = ["kernel", "status", "launches", "p50 before", "p50 after"]
