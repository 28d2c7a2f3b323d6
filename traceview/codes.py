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
    Code("host-bound", "info", "the device is idle for at least half of a typical call, "
         "or a typical step's critical path is more than half host-thread time"),
    Code("sync-stalled", "info", "the host waits in synchronizing calls, with no device "
         "work running, for at least half of a typical call: neither host nor device work "
         "bounds it"),
    Code("device-bound", "info", "the device is busy for more than half of a typical call "
         "(a step's critical path not mostly host-thread time), or runs the call's device "
         "work, longer than the call, after it returns"),
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
         "no Python frames: untraced host time cannot be split by function (Triton's host "
         "stages, where the trace launches Triton kernels)"),
    Code("no-activity", "warning", "no host or device activity with a duration"),
    Code("no-device-work", "info", "no kernels, copies or sets in the window"),
    Code("no-host-events", "warning", "no host thread with events: host time is untraced"),
    Code("overlapping-host-slices", "warning",
         "host slices overlap their parent without nesting (profiler corruption)"),
    Code("device-work-without-launch", "warning", "device work with no launch record"),
    Code("launch-without-device-work", "info", "launches with no device record"),
    Code("device-work-cut", "warning",
         "launches whose device records were lost because the file was cut short"),
    Code("several-processes", "warning",
         "host threads of several processes launched device work into one file"),
)}

# Sentences the outputs print that are not findings: each is a claim (``report.claims``)
# with one of these ids.
SENTENCES: dict[str, Code] = {c.id: c for c in (
    Code("typical-step", "info",
         "the typical training step: its wall, phases, device busy share and who holds "
         "its critical path"),
    Code("step-segments", "info", "the typical step's phases in time order, when a phase "
         "runs more than once (micro-batches)"),
    Code("step-communication", "info",
         "the typical step's communication on the device and how much of it is exposed"),
    Code("step-others", "info", "the other steps' walls"),
    Code("perturbation-recorded", "info", "what the profiler recorded per warm call: "
         "events, the Python frames among them, its own time"),
    Code("perturbation-unprofiled", "info",
         "the unprofiled call as a share of the profiled call's p50"),
    Code("unprofiled-steps", "info",
         "the profiled step's p50 beside the unprofiled steps' (capture_steps)"),
    Code("unprofiled-steps-phases", "info",
         "the typical step's phases corrected by the unprofiled step time"),
    Code("unprofiled-steps-path", "info",
         "the typical step's critical path corrected by the unprofiled step time"),
    Code("calls-found", "info", "how many calls, of which kinds, found how (and the other "
         "numbered series an option would pick)"),
    Code("unprofiled-call", "info", "the call without the profiler: its time, interval, "
         "the profiled call beside it and how it was found"),
    Code("unprofiled-measuring", "info", "what a measured split's timing cost per timed "
         "invocation and how much of it was subtracted"),
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
    Code("diff-machine-speed", "info", "diff's note that the functions both traces share "
         "all moved by about one factor: the profiled runs ran at different machine speeds"),
    Code("diff-unprofiled", "info", "diff's unprofiled line: the processes or rounds on "
         "each side and the difference's interval on the side of zero its word says"),
    Code("diff-header", "info",
         "diff's terminal header: each side's path and calls"),
    Code("diff-heading", "info",
         "diff's markdown line under its heading: each side's path and calls"),
    Code("diff-more", "info",
         "what diff's terminal leaves out of a long list (warnings, "
         "functions, kernel changes): the items listed, those shown and the "
         "rest adding up to them"),
    Code("diff-code-share", "info",
         "diff's note on the code-path table's share column: each function's p50 per "
         "call over the p50 wall of the warm calls it runs in, at most all of it"),
    Code("diff-kernel-rows", "info",
         "one kernel the traces' rows differ in: launched on one side only, "
         "or as a different number per call (each side's launches over its "
         "calls)"),
    Code("diff-unlinked-work", "info",
         "diff's warning that device work has no launch record: each side's items, "
         "some on one side at least"),
    Code("kernels-differ", "info",
         "one way two variants' kernels from capture's probe differ: a kernel one "
         "launched, counts per call (each its rows' counts summed), grids"),
    Code("diff-kernels-probe", "info",
         "one side's kernels per call from capture's probe: each kernel's "
         "count, those left out, the probed calls where they varied"),
    Code("diff-kernels-launched", "info",
         "whether the two sides launched the same kernels: from the traces' "
         "rows, every kernel on both sides at one count per call, or how "
         "they differ; the kernels with no launch record each side's counts "
         "leave out, the rows' own adding up to them"),
    Code("check-failure", "info",
         "the correctness check's failure headline: the wrong elements, some "
         "of the elements, their share and the tolerances, or the time limit "
         "a hang ran into"),
    Code("check-element", "info",
         "a compared element of a failed check (the worst, the first): its "
         "index, the value got and expected, the error (the largest error at "
         "least it)"),
    Code("check-wrong", "info",
         "a failed check's wrong elements, some of the elements, and per "
         "dimension its indices holding one, some of the output's size there"),
    Code("check-range", "info",
         "whether a failed check's wrong values lie near the reference's "
         "range or outside it: the values outside (none or some), the "
         "range's ends in order"),
    Code("check-layouts-title", "info",
         "the layout matrix's title: the layouts that passed, some of the "
         "layouts, one row each"),
    Code("cache-check-failure", "info",
         "the cache check's failure headline: the failing call, one of the "
         "sequence's, its wrong elements, the calls before it that were "
         "right"),
    Code("cache-check-call", "info",
         "the cache check's failing call, one of the sequence's calls"),
    Code("cache-check-changed", "info",
         "the call before the failing one that the change is from"),
    Code("cache-check-also", "info",
         "the other wrong calls of the cache check: those named and the "
         "rest, with the failing call as many as the report lists"),
    Code("cache-check-title", "info",
         "the passing cache check's title: its calls, a row each"),
    Code("cache-check-skipped", "info",
         "a call the cache check skipped, and why"),
    Code("cache-check-passed", "info",
         "the passing cache check's last line: the calls that ran, the calls "
         "less those skipped"),
    Code("ab-verdict", "info", "ab's verdict: the paired difference's estimate and "
         "interval, the rounds that agree, the share of A's median"),
    Code("serve-result", "info", "serve's one-line result: the measured throughput and "
         "latencies, each A/B row's interval around its estimate on the side of zero its "
         "verdict says"),
    Code("ranks-summary", "info",
         "how many ranks were analysed, the median device busy share and call API p50"),
    Code("ranks-straggler", "info", "a rank that stands out: each metric's value against "
         "the median, by more than the rule's MAD multiple and share of the median"),
    Code("ranks-no-straggler", "info",
         "why no rank is named a straggler: too few ranks for the rule, or none apart"),
    Code("ab-protocol", "info", "ab's header: the op, the rounds (the judged figure's at "
         "most those) and what each process ran"),
    Code("ab-cache-check", "info",
         "a side's --check-cache line: the calls checked in one warm process, all right"),
    Code("ab-confidence", "info", "the exact confidence of ab's interval over its rounds "
         "(at most the rounds run), or that the rounds give none"),
    Code("ab-split", "info", "one side's unprofiled split in ab: its call inside its "
         "interval, the profiled call, the categories summing to the call, what it cost"),
    Code("proton-outlier", "info", "why a Proton call is an outlier: its span above the "
         "rule's multiple of the other calls' median"),
    Code("proton-overlap", "info", "a Proton trace's calls that overlap in time (merged "
         "scopes of one name)"),
    Code("proton-bad-nodes", "info",
         "a Proton tree's nodes with out-of-range figures, left out"),
    Code("proton-summary", "info", "a Proton trace's kernels, streams and window, its "
         "device busy union (at most the window and the kernels summed) and its share"),
    Code("proton-calls", "info",
         "a Proton trace's calls, found how, by kind (the kinds adding up to the calls)"),
    Code("proton-unscoped", "info",
         "a Proton trace's kernels outside every call, some of the kernels"),
    Code("proton-tree-summary", "info", "a Proton tree's kernel invocations and time, its "
         "work and rates (each the work over the kernel time) and the share of the peak"),
    Code("proton-device", "info", "a device a Proton tree names: its figures as recorded "
         "and its peak (bus width times memory clock, twice)"),
    Code("window", "info", "what the window is: the activity's span, a --window time "
         "range, or the user ranges a --window regex matched (either widened to whole steps "
         "it cut)"),
    Code("integrity-check", "info", "one kind of damage in the records: how many, the "
         "calls and steps it falls in, and what it means for the figures"),
    Code("integrity-graphs", "info",
         "the CUDA graph replays: how many, of how many graphs, and their nodes per replay"),
    Code("integrity-incomplete", "info",
         "the incomplete calls left out of the warm figures"),
    Code("integrity-unreliable", "info", "the figures some integrity check makes unreliable"),
    Code("what-if", "info", "a projection of the typical call: its figure and interval "
         "against the call it replaces, and the figures its model rests on"),
    Code("attribution-split", "info",
         "serve --attribute: a backend swap's effect on one figure split by op, the parts "
         "and the interaction adding up to the whole"),
    Code("op-reproducer", "info",
         "a wrong op's reproducer: its largest error against a float64 reference and "
         "whether it is beyond its dtype's tolerance"),
    Code("device", "info", "the device's line: busy and idle tiling the window, the busy "
         "share, the kernels and copies, the kernel time summed over streams and the "
         "overlap counted once"),
    Code("unprofiled-baseline", "info", "capture's unprofiled baseline from the same run: "
         "the full API p50 (in graph mode the synchronized replay first), the amortized "
         "submit and the device time per op"),
    Code("rows-left-out", "info",
         "what a table of explain's markdown leaves out (hot functions, kernels, calls): "
         "the rows the report lists, those shown and the rest adding up to them"),
    Code("calls-title", "info", "the per-call table's title: the warm calls its figures "
         "are over, of how many, and the cold (left out), outlier (counted) and incomplete "
         "(left out) calls"),
    Code("unprofiled-share", "info", "beside per-call figures: the unprofiled call as a "
         "share of the profiled one"),
    Code("window-length", "info", "the window's header: its length (its end less its "
         "start) and what it is"),
    Code("device-result", "info", "the reproducer template's device-kernel result: the "
         "device work per call (p50, p90, n; kernels and copies apart) and the device busy "
         "time over the window"),
    Code("api-result", "info", "the reproducer template's full-API result: the profiled "
         "call (p50, p90, n) and its host overhead p50"),
    Code("device-row", "info", "under the device's line, one device of several: its busy "
         "union (at most its work summed and the union over every device), its share of "
         "the window, its kernels and copies"),
    Code("device-stream", "info", "under the device's line, one stream where streams "
         "overlap or there are several: its busy time (at most its device's and every "
         "device's busy union), its share of the window, its work items"),
    Code("launches", "info", "the launches line: the launches by API adding up to the "
         "launches, those linked to device work, the device work with no launch record"),
    Code("warm-mode", "info", "the reproducer template's cold-or-warm field: the warm "
         "calls (some of the calls), the cold calls reported apart, capture's cold call, "
         "the mode"),
    Code("timer", "info", "the reproducer template's timer field: capture's timer, sync, "
         "warm-up and profiled calls (the calls found are at most those; a cold trace "
         "holds its cold call alone), or the profiler and the calls found"),
    Code("typical-call", "info", "the typical call's picture's title: the call drawn, "
         "its wall and device work (the union of its kernels and copies: at least each, "
         "at most both summed)"),
    Code("correctness", "info", "the reproducer template's correctness field: capture's "
         "reference, tolerances, largest absolute error and whether the check passed"),
    Code("step-phases-title", "info",
         "the terminal's title of the typical step's phase table: the step and its wall"),
    Code("step-heading", "info", "the markdown's heading of the typical step: its wall "
         "and the warm steps, some of the steps"),
    Code("operation-step", "info", "the reproducer template's operation field for a "
         "training trace: the steps counted, how they were found, the first one's phases"),
    Code("families-title", "info", "the module table's title: the warm calls its figures "
         "are over (at most the warm calls) and the call p50 its shares are of"),
    Code("serve-decode", "info",
         "serve's profiled decode step of one side: its steps, step and host "
         "overhead p50 (the overhead at most the step), the device busy share of "
         "the decode window and of the prefill (each its busy time over its "
         "window), the launches per step"),
    Code("serve-attribution-caption", "info",
         "serve --attribute's table caption: the candidate ops, each screening "
         "stage's processes and the final stage's, the parts and the interaction "
         "adding up to the whole"),
    Code("capture-amortized", "info",
         "capture's note on the amortized submit against the full API p50: above "
         "it or below it, as the baseline has them"),
    Code("capture-perturbation", "info",
         "capture's profiled call against the same call unprofiled: the "
         "profiler's cost as a share of the unprofiled figure"),
    Code("sweep-crossover", "info",
         "a sweep's crossover: the first size whose kernel takes at least its "
         "host gap (every size before it less), or none; the fixed host gap "
         "within the gaps below it"),
    Code("sweep-bandwidth", "info",
         "a sweep's bandwidth line: the first size at half the copy peak or more "
         "(every size before it below), or none; the copy peak and the best rate "
         "the largest of the sizes'"),
    Code("ranks-title", "info",
         "the terminal's title of the ranks table: the ranks, those analysed and "
         "those that failed adding up to them"),
    Code("ranks-heading", "info",
         "the markdown's heading of the ranks report: the ranks, those analysed "
         "and those that failed adding up to them"),
    Code("ab-per-round", "info",
         "ab's note under the per-process table where its last column is not B "
         "minus A: the first round whose figure differs from its B minus its A"),
    Code("serve-correctness", "info",
         "serve's correctness line of one side: the logits' largest error over "
         "the reference's largest logit, within the tolerance where it passed "
         "and beyond it where not, the rows whose top-1 agrees and whose tokens "
         "are identical some of the rows, the first divergence inside the steps"),
    Code("serve-bisect-title", "info",
         "the terminal's title of serve's bisect table: the ops tried one at a "
         "time (some of the candidates) and the processes that ran them"),
    Code("serve-bisect-caption", "info",
         "the caption of serve's bisect table: the ops that passed alone and the "
         "culprits, each a row that crashed or answered wrong"),
    Code("serve-bisect-line", "info",
         "the markdown's bisect line: the ops tried and the culprits, each a row "
         "that crashed or answered wrong"),
    Code("serve-protocol", "info",
         "the markdown's protocol field of serve: the processes per side (each "
         "side's repetitions and the A/B's rounds at most those), or with "
         "--attribute each screening stage's processes and the final stage's"),
    Code("serve-ab-title", "info",
         "the terminal's title of serve's A/B table: the rounds it is over (at "
         "most the processes per side asked for; each figure's rounds B was "
         "faster in some of them)"),
    Code("serve-ab-heading", "info",
         "the markdown's title of serve's A/B table: the same rounds"),
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
    Code("rocprof-json", "info",
         "a rocprof Chrome trace, read as kernels and copies on their streams, HIP calls on "
         "their host threads linked by its flow arrows, in exact ns"),
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
    Code("nsys-export", "info",
         "an Nsight Systems capture converted to Chrome JSON, read as kernels, CUDA calls on "
         "their host threads and NVTX ranges, in exact ns"),
    Code("nsys-osrt-left-out", "info",
         "an Nsight Systems capture's OS runtime calls (mostly blocking waits) left out"),
    Code("device-work-after-sync", "warning",
         "device work ending after a later device synchronize returned (impossible); dropped"),
    Code("device-work-past-host", "warning",
         "device work ending far past the last host event; dropped"),
    Code("device-work-before-launch", "warning",
         "device work starting before its launch (impossible); its launch latency left out"),
    Code("events-removed", "warning",
         "events removed after the profiler wrote the trace (its CPU event numbering skips); "
         "device idle after a launch not charged to launch latency"),
    Code("python-frame-overhang", "warning",
         "Python frames recorded as ending after their caller (a profiler artifact); clipped"),
)}
