"""Problems found in the input, carried with the trace instead of raised.

Like Perfetto's import stats: each problem has a stable code, a severity, a count and
a sentence. Analyses still run; the renderers show diagnostics beside the numbers so a
reader knows what the numbers rest on.
"""

from __future__ import annotations

from dataclasses import dataclass

from traceview.codes import Severity


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    count: int
    message: str

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "severity": self.severity, "count": self.count,
                "message": self.message}
