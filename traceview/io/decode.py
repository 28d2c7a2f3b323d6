"""Read a Chrome/Kineto trace file into columns of raw events plus its metadata.

Accepts what ``torch.profiler`` writes (``export_chrome_trace``,
``tensorboard_trace_handler``), plain or gzipped (by content, not by name), as a JSON
object with ``traceEvents`` and metadata keys, or a bare array of events. Like
Perfetto's JSON tokenizer, every top-level key other than ``traceEvents`` is kept as
metadata (``deviceProperties``, ``baseTimeNanoseconds``, capture's ``traceview``, ...).

One idea per module under ``io/``:

* **Streaming.** The file is read (and gunzipped) in pieces (``pieces.py``); the event
  array is cut at event boundaries into chunks of about a piece each (``splitter.py``);
  each chunk becomes columns at once and is dropped (``collector.py``: the compiled
  scanner of ``fastscan.py`` when it is built and accepts the chunk, else msgspec's
  typed decode of ``events.py``, the reference). So neither the whole decompressed text
  nor one Python object per event is ever held: a real 450 MB trace decodes in about
  1.5 CPU s with the scanner, 2.7 s without (``docs/performance.md``).
* **Exact time** (``exact_time.py``): microsecond floats to exact integer ns; clocks
  past 2**43 us are parsed from their text.
* **rocprof's own traces** (``rocprof.py``): lanes named GPU/COPY/HIP API, exact ns in
  args, flow arrows for links, read as Kineto's categories, streams and correlations.
* **Damage.** A file cut short (a killed writer; a gzip stream cut short too) keeps every
  complete event before the cut and records a ``truncated`` problem (``splitter.py``). A
  chunk whose fields have unexpected types is decoded again permissively, one event at a
  time (``events.coerce``), so one odd event never costs the whole file. Only input with
  nothing usable raises ``TraceLoadError``.
* **The rarer phases** (``phases.py``): B/E pairs join the X columns; flows, thread
  names and instants are read once.
* **Other writers' shapes** (``nsys.py``): an Nsight Systems capture converted to Chrome
  JSON becomes Kineto's categories, threads and exact times, recognised by its events.
* **What the model gets** (``columns.py``): finished columns, args decoded lazily.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from traceview.errors import TraceLoadError
from traceview.io import limits, nsys
from traceview.io.collector import Collector
from traceview.io.columns import ARGS_KEPT_CATS, Columns, Decoded, LazyArgs
from traceview.io.events import ANY, decode_args
from traceview.io.exact_time import MISSING, value_to_ns
from traceview.io.phases import fold_phases
from traceview.io.pieces import pieces
from traceview.io.rocprof import read as read_rocprof
from traceview.io.sources import Source
from traceview.io.splitter import Splitter
from traceview.printable import printable_path

# what the other layers import from here (the model reads ``io/columns.py``)
__all__ = ["ARGS_KEPT_CATS", "MISSING", "Columns", "Decoded", "LazyArgs", "decode",
           "decode_args", "value_to_ns"]

_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])


# ------------------------------------------------------------------------ entry point


def decode(path: str | os.PathLike[str] | Source,
           progress: Callable[[int], object] | None = None) -> Decoded:
    """Decode a trace file; raise ``TraceLoadError`` only when nothing usable is there.

    ``path`` may be a ``Source`` its caller opened (and closes): the decoder then reads
    the file the caller sniffed, without opening it again. ``progress``, if given, is
    called with the count of decompressed bytes so far.
    """
    if isinstance(path, Source):
        return _decode(path, progress)
    with Source.open(path) as src:
        return _decode(src, progress)


def _decode(src: Source, progress: Callable[[int], object] | None) -> Decoded:
    p = src.ref
    compressed = src.size()
    from traceview.io.memory import check_memory

    check_memory(src)
    counter = [0]
    cut: list[int] = []
    collector = Collector(p)
    splitter = Splitter(p, collector.chunk)
    text = pieces(src, counter, cut)
    for piece in text:
        splitter.push(piece)
        if progress is not None:
            progress(counter[0])
    splitter.finish()

    problems: list[tuple[str, int, str]] = []
    if cut:  # the damage as it is: the compressed stream is cut; the JSON only follows
        where = (f"all {cut[0]} of the file's bytes" if cut[0] == compressed
                 else f"{cut[0]} of the file's {compressed} bytes")
        whole = "" if splitter.truncated else "; the text ends where an event ends"
        problems.append(("compressed-stream-cut", 1,
                         f"the compressed stream ends after {where} before its end (the "
                         "file was cut short: a killed writer or an incomplete copy?): "
                         f"{counter[0]} bytes of text read from it{whole}; what the rest "
                         "held is unknown, so nothing is concluded from what is missing"))
    if splitter.truncated:
        problems.append(("truncated", 1, ("the text read ends mid-JSON" if cut else
                                          "the file ends mid-JSON (a killed writer?)")
                         + ": kept every complete event before the cut, dropped the last "
                         f"{splitter.truncated_bytes} of {counter[0]} bytes"))
    if collector.malformed:
        problems.append(("event-malformed", collector.malformed,
                         "events that are not objects or have unusable fields"))
    metadata = _metadata(splitter.meta_raw, collector.too_deep, problems)
    x = collector.columns()
    if x.key.size == 0 and not collector.non_x and not metadata:
        if splitter.truncated:
            raise TraceLoadError(p, "truncated before the first complete event")
        raise TraceLoadError(p, "the trace holds no events")
    keys = list(collector.keys)  # codes are assigned in order of first sight
    names = list(collector.names)
    # B/E pairs join the columns
    x, phases = fold_phases(x, keys, names, collector.others, collector.phases)
    x, converted = nsys.read(x, keys, names)  # an Nsight Systems capture as Kineto's events
    problems += converted
    long = limits.cut_long_names(names)
    if long:
        problems.append(("name-too-long", long,
                         f"names over {limits.MAX_NAME_CHARS:,} characters cut (the note "
                         "after the cut gives each one's length)"))
    x, read_as = read_rocprof(x, keys, names, phases)  # a rocprof trace as Kineto's events
    problems += read_as
    return Decoded(path=printable_path(p), keys=keys, names=names, x=x, phases=phases,
                   metadata=metadata, problems=problems, compressed_bytes=compressed,
                   decoded_bytes=counter[0],
                   events_end=None if (cut or splitter.truncated) else splitter.events_end)


def _metadata(meta_raw: list[bytes], too_deep: int,
              problems: list[tuple[str, int, str]]) -> dict[str, Any]:
    """The top-level keys other than ``traceEvents``, decoded within ``io/limits.py``'s
    limits; what those limits changed (and the events' ``too_deep`` count) is added to
    ``problems``."""
    metadata: dict[str, Any] = {}
    for raw in meta_raw:
        if limits.may_be_deep(raw):
            raw, n = limits.cap_nesting(raw, 0)
            too_deep += n
        try:
            top = _TOP.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            continue
        for key, value in top.items():
            if key == "traceEvents":
                continue
            try:
                metadata[key] = ANY.decode(value)
            except (msgspec.DecodeError, RecursionError):
                problems.append(("metadata-undecodable", 1, f"top-level key {key!r}"))
    metadata, wide = limits.fit_ints(metadata)
    if wide:
        shown = ", ".join(wide[:3]) + (f" and {len(wide) - 3} more" if len(wide) > 3 else "")
        problems.append(("int-out-of-range", len(wide),
                         f"integers outside 64 bits kept as text: {shown}"))
    if too_deep:
        problems.append(("nested-too-deep", too_deep,
                         f"values nested over {limits.MAX_DEPTH} levels deep replaced by "
                         "null"))
    return metadata
