"""Where a call's time goes without the profiler: chosen functions timed one per run.

``structure`` picks the functions from a profiled trace, ``child`` measures them in a
fresh process (``timer``, ``calibrate``, ``split``), and capture records the result in
the trace's metadata as ``baseline.split``. The parent side imports no torch.
"""
