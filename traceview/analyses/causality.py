"""Damage that only causality reveals: device work the host's own timeline rules out.

A fixed bound (``model.ABSURD_DUR_NS``, one hour) catches "236 years" but not a one-hour
kernel inside a 7 ms trace, which would still poison every total. Two checks need no
bound:

* **after a sync returned** — ``cudaDeviceSynchronize`` (``cuCtxSynchronize``) returns
  only when all work submitted before it finished. Device work whose launch (or, without
  one, whose start) precedes a device-wide synchronize but that ends more than
  ``SYNC_SKEW_NS`` after that synchronize returned cannot be right. (Traces of one device
  only: the trace does not say which device a synchronize waited for.)
* **far past the host** — device work ending more than ``max(host span, FAR_MIN_NS)``
  after the last host event would stretch the window by more than the whole host
  activity.

Such slices are dropped (with a diagnostic) before any analysis, so the window, device
busy time and every per-call figure stay what the host's timeline allows. Idempotent: a
second pass finds nothing.
"""

from __future__ import annotations

import numpy as np

from traceview.diagnostics import Diagnostic
from traceview.model import DEVICE_WORK_CATS, NON_ACTIVITY_CATS, Slices, Trace, _link, _renumber

DEVICE_SYNCS = frozenset({"cudaDeviceSynchronize", "cuCtxSynchronize", "hipDeviceSynchronize",
                          "cudaThreadSynchronize"})
# CUPTI aligns device timestamps to the host clock to well under this
SYNC_SKEW_NS = 50_000
FAR_MIN_NS = 1_000_000_000


def implausible_device_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(rows ending after a later device sync returned, rows ending far past the host)."""
    s = trace.slices
    work = trace.rows_of_cats(DEVICE_WORK_CATS)
    empty = np.zeros(0, np.int64)
    if work.size == 0:
        return empty, empty
    host_cats = set(trace.cat_names) - DEVICE_WORK_CATS - NON_ACTIVITY_CATS - {"gpu_user_annotation"}
    host = trace.rows_of_cats(host_cats)
    after_sync = empty
    devices = {ln.device for ln in trace.device_lanes}
    api = trace.rows_of_cats({"cuda_runtime", "cuda_driver"})
    sync_codes = [i for i, n in enumerate(trace.names) if n in DEVICE_SYNCS]
    syncs = api[np.isin(s.name[api], sync_codes)] if sync_codes else empty
    if syncs.size and len(devices) <= 1:
        order = np.argsort(s.start[syncs], kind="stable")
        st = s.start[syncs][order]
        suffix_min_end = np.minimum.accumulate(s.end[syncs][order][::-1])[::-1]
        launch = np.asarray([trace.work_to_launch.get(int(r), -1) for r in work.tolist()],
                            np.int64)
        submitted = np.where(launch >= 0, s.start[np.maximum(launch, 0)], s.start[work])
        i = np.searchsorted(st, submitted, side="right")
        has = i < st.size
        bound = np.full(work.size, np.iinfo(np.int64).max)
        bound[has] = suffix_min_end[i[has]] + SYNC_SKEW_NS
        after_sync = work[s.end[work] > bound]
    far = empty
    if host.size:
        h0, h1 = int(s.start[host].min()), int(s.end[host].max())
        far = work[s.end[work] > h1 + max(h1 - h0, FAR_MIN_NS)]
        far = np.setdiff1d(far, after_sync)
    return after_sync, far


def drop_implausible_device_work(trace: Trace) -> None:
    after_sync, far = implausible_device_rows(trace)
    if not (after_sync.size or far.size):
        return
    s = trace.slices
    keep = np.setdiff1d(np.arange(len(s)), np.concatenate([after_sync, far]))
    trace.slices = Slices(s.cat[keep], s.name[keep], s.lane[keep], s.start[keep], s.end[keep],
                          s.corr[keep], s.args.subset(_renumber(s.args, keep)))
    trace.launch_to_work, trace.work_to_launch = _link(trace.slices, trace.cat_names)
    if after_sync.size:
        trace.diagnostics.append(Diagnostic(
            "device-work-after-sync", "warning", int(after_sync.size),
            "device work ending after a later device synchronize had returned (impossible: "
            "the sync waits for it); dropped"))
    if far.size:
        trace.diagnostics.append(Diagnostic(
            "device-work-past-host", "warning", int(far.size),
            "device work ending far past the last host event (more than the whole host span "
            "later); dropped"))
