"""The workload every measuring product runs: what op, on which inputs, by which
implementation, on which device.

``config`` (the validated request, ``CaptureConfig``), ``ops`` (the op table),
``inputs`` (seeded inputs built outside timed regions), ``impls`` and ``kernels`` (the
implementations, the project's Triton kernels among them), ``usercode`` (the user's
``--fn``/``--inputs``/``--ref``), ``device`` (opening the GPU), ``graphs`` (CUDA graphs)
and ``wire`` (the one JSON form in which a config travels to a child process).

It sits beneath ``capture``, ``checks``, ``unprofiled``, ``ab``, ``sweep`` and ``serve``
so that they share these pieces without importing each other; it imports only
``runner`` and the bottom modules, and torch only inside the functions that measure.
"""
