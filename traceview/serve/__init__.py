"""traceview serve: does a backend swap improve inference? A controlled serving workload.

Whether a backend swap improves inference, answered on an existing engine (Hugging Face transformers'
``generate``, greedy, KV cache) driving a Llama-style model built from a config with
seeded random weights (no downloads). The op backend underneath is swapped (torch eager,
FlagGems, torch.compile, or any ``--env``/``--python`` variant) and measured the way the
rest of traceview measures: correctness first, warm-up excluded, fresh processes
interleaved by repetition, paired differences with intervals, and a profiled decode step
explained by ``traceview explain``.

Two halves, split by what they import:

* the **parent** side (:mod:`.spec`, :mod:`.arrivals`, :mod:`.metrics`, :mod:`.runner`,
  :mod:`.bisect`, :mod:`.diagnosis`) never imports torch: it validates the request,
  starts children, and turns their integer-ns timestamps into figures;
* the **child** side (:mod:`.child`, :mod:`.model`, :mod:`.backends`, :mod:`.engine`,
  :mod:`.correctness`, :mod:`.profile`) runs in a fresh interpreter per task, imports
  torch and transformers, and prints one JSON line.
"""

from __future__ import annotations

from traceview.serve.spec import ModelSpec, ServeSpec, Variant, Workload

__all__ = ["ModelSpec", "ServeSpec", "Variant", "Workload"]
