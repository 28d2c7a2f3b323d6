"""Long names made readable: C++ kernel signatures without their template arguments.

A kernel name such as ``void at::native::vectorized_elementwise_kernel<4,
at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3> >(int, ...)`` is
mostly template arguments and parameter types. The terminal and markdown show
``at::native::vectorized_elementwise_kernel<…>(…)``; the JSON keeps the full name.
"""

from __future__ import annotations

import re


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


# What the kernel tables say about their names.
KERNEL_NAMES_NOTE = ("template arguments folded; kernels sharing a template show the "
                     "arguments that differ; full names in --format json")


def _top_args(s: str) -> tuple[str, list[str], str] | None:
    """``prefix<a, b<c, d>, e>rest`` -> (prefix, [a, b<c, d>, e], rest): the first
    template argument list split at its own commas; None without one."""
    start = s.find("<")
    if start <= 0:
        return None
    depth = 0
    args: list[str] = []
    cur: list[str] = []
    for i in range(start, len(s)):
        ch = s[i]
        if ch in "<(":
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return s[:start], args, s[i + 1:]
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    return None


def _short_arg(a: str) -> str:
    """A template argument as a reader names it: namespaces dropped, its own template
    arguments kept one level deep (``MulFunctor<…>`` inside ``BinaryFunctor<…>``)."""
    a = re.sub(r"\b(?:\w+::)+", "", a)
    out, depth = [], 0
    for ch in a:
        if ch == "<":
            depth += 1
            if depth == 2:
                out.append("<…")
                continue
        elif ch == ">":
            depth -= 1
            if depth == 1:
                out.append(">")
                continue
        if depth < 2:
            out.append(ch)
    return re.sub(r"\s*>\s*>", ">>", "".join(out)).strip()


def kernel_labels(names: list[str]) -> dict[str, str]:
    """Each kernel's name as a reader tells it apart from the others in ``names``.

    A name is ``short_kernel``'s (template arguments and parameters folded to ``<…>``,
    ``(…)``) unless several kernels fold to the same one (``elementwise_kernel<…>(…)`` for
    an add and a mul): those show the template arguments that differ between them
    (namespaces dropped, nested arguments one level deep), ``…`` for those that do not,
    and how many variants share the template (``[1 of 2 variants]``), numbered when even their
    arguments agree. The full names stay in the JSON."""
    groups: dict[str, list[str]] = {}
    for n in dict.fromkeys(names):
        groups.setdefault(short_kernel(n), []).append(n)
    out: dict[str, str] = {}
    for base, members in groups.items():
        if len(members) == 1:
            out[members[0]] = base
            continue
        parsed = {m: _top_args(m[5:] if m.startswith("void ") else m) for m in members}
        width = max((len(p[1]) for p in parsed.values() if p), default=0)
        differ = {i for i in range(width)
                  if len({(p[1][i] if p and i < len(p[1]) else None)
                          for p in parsed.values()}) > 1}
        labels = {}
        for m in members:
            p = parsed[m]
            if p is None or not differ:
                labels[m] = base
                continue
            shown: list[str] = []
            for i, a in enumerate(p[1]):
                if i in differ:
                    shown.append(_short_arg(a))
                elif not shown or shown[-1] != "…":
                    shown.append("…")
            prefix = short_kernel(p[0] + "<>").removesuffix("<…>").removesuffix("<>")
            labels[m] = f"{prefix}<{', '.join(shown)}>" + ("(…)" if "(" in p[2] else "")
        seen: dict[str, int] = {}
        for m in members:
            seen[labels[m]] = seen.get(labels[m], 0) + 1
        k = dict.fromkeys(seen, 0)
        for m in members:
            label = labels[m]
            if seen[label] > 1:
                k[label] += 1
                label = f"{label} #{k[label]}"
            # one row of the template's variants: "[53 variants]" beside a count of 8
            # launches read as the row holding all 53
            out[m] = f"{label} [1 of {len(members)} variants]"
    return out


_HEX_RUN = re.compile(r"[0-9a-f]{16,}")


def short_frame(frame: str) -> str:
    """A Python frame as a table shows it: an absolute path (a generated-code cache such
    as FlagGems' ``/root/.flaggems/code_cache/...``) by its file name, and a long hash in
    that name cut to 8 digits (``pointwise_dynamic_8fae3846…_sigmoid_..._bptr.py(18):
    sigmoid_forward_wrapper_rank_1``). The JSON keeps the trace's own name."""
    path, sep, rest = frame.partition(": ")
    if sep and path.startswith("/"):
        path = ".../" + _HEX_RUN.sub(lambda m: m.group(0)[:8] + "…", path.rsplit("/", 1)[-1])
    return path + sep + rest
