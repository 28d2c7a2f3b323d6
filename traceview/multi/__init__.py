"""Many traces at once: ranks (in parallel, stragglers), before/after diff, Parquet export.

Builds on ``traceview.report``; nothing below imports this package.
"""
