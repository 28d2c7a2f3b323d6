"""The lines a Proton report's outputs print above its tables, as claims (``report.claims``).

A trace's kernels, device busy time and calls, the kernels outside every call; a tree's
kernel time and rates and each device it names: each made here from the figures it
states, cited in the Proton document (``ProtonTraceReport.to_dict``,
``ProtonTreeReport.to_dict``) where it holds them, with what it asserts between them.
``render.proton`` prints their texts. Apart from ``report.proton_words`` because
``report.proton`` uses those while it reads a profile, and these read its reports.
"""

from __future__ import annotations

from traceview.report.claims import Claim, Figure, Relation, pointer, rel
from traceview.report.proton import ProtonDevice, ProtonTraceReport, ProtonTreeReport
from traceview.units import fmt_bytes, fmt_ns, fmt_rate, plural, printable

# Names in a Proton line are cut to this many characters (as the tables cut them).
NAME_CHARS = 40


def short_name(s: str, n: int = NAME_CHARS) -> str:
    """A scope or kernel name as the Proton outputs show it: printable, cut to ``n``."""
    s = printable(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def si(v: float | None, unit: str) -> str:
    """A count or rate with an SI prefix and 3 significant digits: 81.9 kFLOP, 4.8 GFLOP/s."""
    if v is None:
        return "-"
    for p, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {p}{unit}"
    return f"{v:.3g} {unit}"


def flop_rate(tflop_per_s: float | None) -> str:
    return "-" if tflop_per_s is None else si(tflop_per_s * 1e12, "FLOP/s")


def trace_summary_claim(r: ProtonTraceReport) -> Claim:
    """A Proton trace's first line (``20 kernels on 1 stream over 33.6 ms (first kernel
    start to last kernel end); device busy 17.1 us (0.05% of it); kernel sum 17.1 us``):
    the busy union is at most the window and at most the kernels summed; its share is
    the busy time over the window."""
    figs = [Figure("kernels", r.kernel_count, pointer("kernel_count")),
            Figure("streams", len(r.streams)),
            Figure("window", r.window_ns, pointer("window_ns")),
            Figure("busy", r.device_busy_ns, pointer("device_busy_ns")),
            Figure("kernel_sum", r.kernel_sum_ns, pointer("kernel_sum_ns"))]
    rels: list[Relation] = [rel("le", "busy", "window"), rel("le", "busy", "kernel_sum")]
    share = ""
    if r.window_ns:
        figs.append(Figure("share", r.device_busy_ns / r.window_ns))
        rels.append(rel("ratio", "busy", "window", "share"))
        share = f" ({100 * r.device_busy_ns / r.window_ns:.2f}% of it)"
    return Claim("proton-summary", (
        f"{plural(r.kernel_count, 'kernel')} on {plural(len(r.streams), 'stream')} over "
        f"{fmt_ns(r.window_ns)} (first kernel start to last kernel end); device busy "
        f"{fmt_ns(r.device_busy_ns)}{share}; kernel sum {fmt_ns(r.kernel_sum_ns)}"),
        tuple(figs), tuple(rels))


def trace_calls_claim(r: ProtonTraceReport) -> Claim:
    """The calls' line (``20 calls: top-level Proton scopes (proton.scope) (call_# x20)``):
    the calls of each kind add up to the calls."""
    n = len(r.calls)
    figs = [Figure("calls", n)]
    if n:
        figs.append(Figure("last", n - 1, pointer("calls", n - 1, "index")))
    kinds = sorted(r.call_kinds.items(), key=lambda kv: -kv[1])
    names = [f"kind:{j}" for j in range(len(kinds))]
    figs += [Figure(f, c, pointer("call_kinds", k)) for f, (k, c) in zip(names, kinds,
                                                                          strict=True)]
    rels = [rel("sum", *names, "calls")] if names else [rel("eq", "calls", "last")]
    what = ", ".join(f"{short_name(k)} x{c}" for k, c in kinds)
    return Claim("proton-calls", f"{plural(n, 'call')}: {r.calls_source} ({what})",
                 tuple(figs), tuple(rels))


def unscoped_claim(r: ProtonTraceReport) -> Claim | None:
    """The kernels outside every call, some of the kernels; None when there are none."""
    if not r.unscoped_kernels:
        return None
    return Claim("proton-unscoped", f"{plural(r.unscoped_kernels, 'kernel')} ran outside "
                 "any scope (not in a call)",
                 (Figure("unscoped", r.unscoped_kernels, pointer("unscoped_kernels")),
                  Figure("kernels", r.kernel_count, pointer("kernel_count"))),
                 (rel("le", "unscoped", "kernels"),))


def trace_claims(r: ProtonTraceReport) -> list[Claim]:
    """The lines a Proton trace's outputs print above its tables, in order."""
    return [c for c in (trace_summary_claim(r), trace_calls_claim(r), unscoped_claim(r))
            if c is not None]


def tree_summary_claim(r: ProtonTreeReport) -> Claim:
    """A Proton tree's first line (``20 kernel invocations, 17.1 us of kernel time; 81.9
    kFLOP at 4.79 GFLOP/s; 983 kB at 57.4 GB/s (1.2% of the device's 4814 GB/s)``): each
    rate is its work over the kernel time, the share of the peak the rate over it."""
    figs = [Figure("count", r.count, pointer("count")),
            Figure("time", r.time_ns, pointer("time_ns"))]
    rels: list[Relation] = []
    text = f"{plural(r.count, 'kernel invocation')}, {fmt_ns(r.time_ns)} of kernel time"
    if r.flops is not None:
        figs += [Figure("flops", r.flops, pointer("flops")),
                 Figure("tflop_per_s", r.tflop_per_s, pointer("tflop_per_s"))]
        if r.tflop_per_s is not None:  # flop per ns is GFLOP/s
            figs.append(Figure("gflop_per_s", 1000 * r.tflop_per_s))
            rels.append(rel("ratio", "flops", "time", "gflop_per_s"))
        text += f"; {si(r.flops, 'FLOP')} at {flop_rate(r.tflop_per_s)}"
    if r.bytes is not None:
        figs += [Figure("bytes", r.bytes, pointer("bytes")),
                 Figure("gb_per_s", r.gb_per_s, pointer("gb_per_s"))]
        if r.gb_per_s is not None:  # bytes per ns is GB/s
            rels.append(rel("ratio", "bytes", "time", "gb_per_s"))
        text += f"; {fmt_bytes(int(r.bytes))} at {fmt_rate(r.gb_per_s)}"
        k, peak = next(((k, d.peak_gb_per_s) for k, d in enumerate(r.devices)
                        if d.peak_gb_per_s), (None, None))
        if peak and k is not None and r.gb_per_s is not None:
            figs += [Figure("peak", peak, pointer("devices", k, "peak_gb_per_s")),
                     Figure("peak_share", r.gb_per_s / peak)]
            rels.append(rel("ratio", "gb_per_s", "peak", "peak_share"))
            text += f" ({100 * r.gb_per_s / peak:.1f}% of the device's {peak:.0f} GB/s)"
    return Claim("proton-tree-summary", text, tuple(figs), tuple(rels))


def device_claim(d: ProtonDevice, k: int) -> Claim:
    """A device the tree names (``device CUDA 0: arch 90, 132 SMs, clock 1.98 GHz, memory
    6016-bit at 3.20 GHz (peak 4814 GB/s)``): its figures as Proton recorded them, and its
    peak the bus width in bytes times the memory clock, twice (double data rate)."""
    at = ("devices", k)
    figs = [Figure(n, v, pointer(*at, key)) for n, v, key in (
        ("sms", d.num_sms, "num_sms"), ("clock_khz", d.clock_khz, "clock_khz"),
        ("memory_clock_khz", d.memory_clock_khz, "memory_clock_khz"),
        ("bus_width_bits", d.bus_width_bits, "bus_width_bits"))]
    rels: list[Relation] = []
    peak = ""
    if d.peak_gb_per_s:
        figs.append(Figure("peak", d.peak_gb_per_s, pointer(*at, "peak_gb_per_s")))
        if d.bus_width_bits and d.memory_clock_khz:
            # GB/s per kHz of memory clock: bytes across the bus, twice a cycle
            figs.append(Figure("per_khz", d.bus_width_bits / 8 * 2 * 1e3 / 1e9))
            rels.append(rel("ratio", "peak", "memory_clock_khz", "per_khz"))
        peak = f" (peak {d.peak_gb_per_s:.0f} GB/s)"
    return Claim("proton-device", (
        f"device {d.type} {d.id}: arch {d.arch}, {d.num_sms} SMs, clock "
        f"{(d.clock_khz or 0) / 1e6:.2f} GHz, memory {d.bus_width_bits}-bit at "
        f"{(d.memory_clock_khz or 0) / 1e6:.2f} GHz{peak}"), tuple(figs), tuple(rels))


def tree_claims(r: ProtonTreeReport) -> list[Claim]:
    """The lines a Proton tree's outputs print above its tables, in order."""
    return [tree_summary_claim(r), *(device_claim(d, k) for k, d in enumerate(r.devices))]
