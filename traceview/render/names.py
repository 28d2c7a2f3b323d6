"""Long names made readable: C++ kernel signatures without their template arguments.

A kernel name such as ``void at::native::vectorized_elementwise_kernel<4,
at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3> >(int, ...)`` is
mostly template arguments and parameter types. The terminal and markdown show
``at::native::vectorized_elementwise_kernel<…>(…)``; the JSON keeps the full name.
"""

from __future__ import annotations


def _drop_nested(s: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in s:
        if ch == open_:
            if depth == 0:
                out.append(open_ + "…")
            depth += 1
        elif ch == close and depth:
            depth -= 1
            if depth == 0:
                out.append(close)
        elif depth == 0:
            out.append(ch)
    return "".join(out) if depth == 0 else s


def short_kernel(name: str) -> str:
    """Drop a C++ name's template arguments and parameter list (and a leading ``void``)."""
    s = name.strip()
    if "<" not in s and "(" not in s or s.startswith("<"):
        return s  # not a C++ signature (``<built-in function launch>`` is a Python name)
    if s.startswith("void "):
        s = s[5:]
    s = _drop_nested(s, "<", ">")
    s = _drop_nested(s, "(", ")")
    return s.replace("<…>", "<…>").strip() or name
