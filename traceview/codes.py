"""The tables every output's labels come from: finding ids, sentence ids, diagnostic codes.

Like Perfetto's ``stats.h``: one row per id with its severity and a one-line meaning.
Ids are a contract (checks and ``traceview diff`` match on them). Detectors
(``report/findings.py``), the loader's diagnostics (``model.py``, ``io/``, ``metadata.py``)
and the renderers use these rows; ``docs/findings.md`` lists them exactly (a test checks).
This module sits at the bottom layer so that the loader may use it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Code:
    id: str
    severity: Severity  # the usual severity; a detector may lower it (said in ``meaning``)
    meaning: str


FINDINGS: dict[str, Code] = {c.id: c for c in (
    Code("host-bound", "info", "the device is idle for at least half of a typical call"),
    Code("device-bound", "info", "the device is busy for more than half of a typical call"),
    Code("unsynchronized-range", "warning",
         "device work ends after its call's range: ranges time submission, not completion"),
    Code("range-includes-idle", "warning",
         "the kernel runs under half of a call: event timing would report launch overhead"),
    Code("graph-replay", "warning", "the calls are CUDA graph replays, not eager launches"),
    Code("cold-path", "warning",
         "compile/import work in the window, or a first call far above the warm median"),
    Code("profiler-perturbation", "warning",
         "the profiler slows what it measures (info when only the profiled/unprofiled "
         "ratio is known)"),
    Code("reproducer-incomplete", "warning", "the trace lacks items a reproducer needs"),
    Code("no-python-frames", "info",
         "no Python frames: Triton's host stages cannot be told apart"),
    Code("no-activity", "warning", "no host or device activity with a duration"),
    Code("no-device-work", "info", "no kernels, copies or sets in the window"),
    Code("no-host-events", "warning", "no host thread with events: host time is untraced"),
    Code("overlapping-host-slices", "warning",
         "host slices overlap their parent without nesting (profiler corruption)"),
    Code("device-work-without-launch", "warning", "device work with no launch record"),
    Code("launch-without-device-work", "info", "launches with no device record"),
    Code("device-work-cut", "warning",
         "launches whose device records were lost because the file was cut short"),
)}

# Sentences the outputs print that are not findings: each is a claim (``report.claims``)
# with one of these ids.
SENTENCES: dict[str, Code] = {c.id: c for c in (
    Code("typical-step", "info",
         "the typical training step: its wall, phases, device busy share and who holds "
         "its critical path"),
    Code("calls-found", "info", "how many calls, of which kinds, found how (and the other "
         "numbered series an option would pick)"),
    Code("unprofiled-call", "info", "the call without the profiler: its time, interval, "
         "the profiled call beside it and how it was found"),
    Code("unprofiled-categories", "info",
         "the unprofiled call's host categories, which add up to the call"),
    Code("bytes-moved", "info",
         "the bytes a call moves and the rate at the device work's p50"),
    Code("cold-reason", "info", "why a call is cold: its compile/import work, or how far "
         "it is above the others of its kind and what holds the excess"),
    Code("outlier-reason", "info", "why a call is an outlier: the profiler's own work, or "
         "how far it is above the others of its kind and what holds the excess"),
    Code("diff-verdict", "info",
         "diff's verdict: speed from unprofiled figures only, the profiled calls as diagnosis"),
    Code("attribution-split", "info",
         "serve --attribute: a backend swap's effect on one figure split by op, the parts "
         "and the interaction adding up to the whole"),
    Code("op-reproducer", "info",
         "a wrong op's reproducer: its largest error against a float64 reference and "
         "whether it is beyond its dtype's tolerance"),
)}

DIAGNOSTICS: dict[str, Code] = {c.id: c for c in (
    Code("truncated", "warning", "the file ends mid-JSON; every complete event before the cut kept"),
    Code("compressed-stream-cut", "warning",
         "the gzip stream ends unfinished: the file was cut; what was read is kept, "
         "nothing concluded from the rest"),
    Code("event-malformed", "warning", "events that are not objects or have unusable fields"),
    Code("metadata-undecodable", "warning", "a top-level key that could not be decoded"),
    Code("metadata-malformed", "warning", "top-level metadata of an unexpected type ignored"),
    Code("nested-too-deep", "warning", "values nested over 64 levels deep replaced by null"),
    Code("int-out-of-range", "warning", "integers outside 64 bits kept as their text"),
    Code("name-too-long", "warning",
         "names over 10,000 characters cut, with a note of their length"),
    Code("threads-over-limit", "warning",
         "more host threads than are attributed one by one; the others left out of the "
         "per-thread figures"),
    Code("missing-ts", "warning", "duration events without a usable 'ts' dropped"),
    Code("missing-dur", "warning", "'X' events without 'dur' kept as zero-length"),
    Code("negative-dur", "warning", "events with a negative duration dropped"),
    Code("absurd-dur", "warning", "events lasting over an hour (corrupt records) dropped"),
    Code("duplicate", "warning", "exact duplicate events dropped"),
    Code("unclosed-begin", "warning", "'B' events without a matching 'E' dropped"),
    Code("unmatched-end", "warning", "'E' events without an open 'B' ignored"),
    Code("unknown-phase", "warning", "events with an unknown 'ph' ignored"),
    Code("other-phase", "info", "counter/async/object events ignored"),
    Code("unknown-category", "info", "events of an unknown category kept as host work"),
    Code("device-work-after-sync", "warning",
         "device work ending after a later device synchronize returned (impossible); dropped"),
    Code("device-work-past-host", "warning",
         "device work ending far past the last host event; dropped"),
    Code("device-work-before-launch", "warning",
         "device work starting before its launch (impossible); its launch latency left out"),
    Code("python-frame-overhang", "warning",
         "Python frames recorded as ending after their caller (a profiler artifact); clipped"),
)}
