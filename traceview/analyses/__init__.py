"""Analyses: one idea per module, each a function from the trace to a frozen result.

Analyses never print. ``traceview.report.explanation.explain`` runs them in order:
window -> device -> launches -> host -> breakdown -> calls -> findings.
"""
