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
from traceview.report.claims import Claim, Figure, pointer, rel
from traceview.units import fmt_ns

TOP_WARNINGS = 6
TOP_FUNCTIONS = 15
TOP_KERNELS = 8


def more_claim(what: str, total: int, shown: int, *at: str) -> Claim | None:
    """``+3 more functions (--format json)`` as a claim over the diff document: the
    items the document lists at ``at`` (their count: ``claims.check`` reads a list's
    length), the ``shown`` the text prints and the rest adding up to them. None when the
    text shows them all."""
    if total <= shown:
        return None
    return Claim("diff-more", f"+{total - shown} more {what} (--format json)", (
        Figure("total", total, pointer(*at)), Figure("shown", shown),
        Figure("rest", total - shown)), (rel("sum", "shown", "rest", "total"),))


def more(claim: Claim | None) -> str:
    return "" if claim is None else claim.text


def warnings_claim(warnings: list[str]) -> Claim | None:
    return more_claim("differences in what was measured", len(warnings), TOP_WARNINGS,
                      "warnings")


def functions_claim(functions: list[dict[str, Any]]) -> Claim | None:
    return more_claim("functions", len(functions), TOP_FUNCTIONS, "code_path", "functions")


def kernels_claim(kernels: list[dict[str, Any]]) -> Claim | None:
    """The kernel changes left out of the text's table: its changes are the kernels
    added, removed or changed (``status`` other than common), some of the kernels."""
    changed = sum(1 for k in kernels if k["status"] != "common")
    c = more_claim("kernel changes", changed, TOP_KERNELS, "kernels")
    if c is None:
        return None
    # the changes are counted from the rows; the document's list holds every kernel
    figs = (Figure("total", changed), Figure("kernels", len(kernels), pointer("kernels")),
            *c.figures[1:])
    return Claim(c.id, c.text, figs, (*c.relations, rel("le", "total", "kernels")))


def top_warnings(warnings: list[str]) -> tuple[list[str], str]:
    return warnings[:TOP_WARNINGS], more(warnings_claim(warnings))


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
    return rows, more(kernels_claim(kernels))


# "runs": the kernel's records in each trace, launched in the window or not (a kernel no
# launch record links to, such as an optimizer step launched before the profiler started,
# still ran there); "kernels launched" below the table counts launches alone
KERNEL_HEADER = ["kernel", "status", "runs", "p50 before", "p50 after"]
