"""The report layer: every analysis result, the findings and the diagnostics of one trace.

``explanation`` runs the analyses and holds their results; ``findings`` detects the
measurement traps; ``schema`` owns the JSON (``docs/json.md``).
"""
