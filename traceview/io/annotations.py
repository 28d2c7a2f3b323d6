"""The events ``explain --annotate`` adds to a trace, recognised when it is read back.

Every added event (its slices, flow arrows, instants and track names) has the category
``ANNOTATION_CAT``; the loader leaves them all out, so an annotated trace explains to the
same figures as the original (``traceview/render/annotate.py`` writes them).
"""

from __future__ import annotations

from traceview.io.columns import ANNOTATION_CAT

__all__ = ["ANNOTATION_CAT"]
