"""Data files shipped with traceview (the default category rules)."""
