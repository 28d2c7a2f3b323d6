"""What a text command writes: a renderer returns ``str`` or, for a picture, ``bytes``
(the registry's protocol); the commands that print documents want the text."""

from __future__ import annotations


def as_text(rendered: str | bytes) -> str:
    """The rendered document as text (bytes are UTF-8, as the renderers write them)."""
    return rendered if isinstance(rendered, str) else rendered.decode("utf-8")
