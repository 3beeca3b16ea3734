"""The spine every transformation runs through: capture -> parse -> fence -> normalize
-> transform -> emit -> cache file.

:func:`generate` returns a :class:`Generated`: the path of a real Python file and
what a caller needs to load and call it. When a file for the same function,
dependencies and options already exists and is intact, it is reused without
parsing anything (libcst is not even imported).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .analysis.resolve import callable_fingerprint
from .cache import (
    cache_dir,
    module_name_for,
    read_header,
    source_stem,
    toolchain_fingerprint,
    variant_path,
    write_generated,
)
from .capture import Captured, capture
from .statics import key_text
from .variant import Generated, StaticArgs, Transform, display_source, static_suffix, trees_text

__all__ = ["Generated", "StaticArgs", "Transform", "display_source", "generate", "static_suffix", "trees_text"]


def generate(obj: Callable, transform: Transform, static: dict[str, Any] | None = None) -> Generated:
    """Write (or reuse) the generated file for ``transform`` applied to ``obj``."""
    static = StaticArgs(static or {}, getattr(static, "trees", None), getattr(static, "differentiated", frozenset()))
    cap = capture(obj)
    from .rules import fingerprint as rules_fingerprint

    extra = f"{transform.label}|static=" + repr(sorted((k, key_text(v)) for k, v in static.items()))
    if static.trees:
        extra += "|trees=" + trees_text(static.trees)
    extra += "|rules=" + rules_fingerprint(transform.name) + "|toolchain=" + toolchain_fingerprint()
    dep_hash = callable_fingerprint(obj, extra)[:16]
    stem = f"{source_stem(cap)}.{cap.dotted_name}.{transform.file_tag}{static_suffix(static)}"
    path = variant_path(cache_dir(cap), stem, dep_hash)  # one file per variant, for good
    reused = _reuse(path, dep_hash, cap, static)
    if reused is not None:
        return reused
    from .build import build  # imports libcst: only when a file must be (re)written

    text, meta, bound = build(cap, transform, static, dep_hash, path)
    write_generated(path, text)
    return Generated(path, module_name_for(path), meta, bound, cap, text)


def _reuse(path: Path, dep_hash: str, cap: Captured, static: dict[str, Any]) -> Generated | None:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    header = read_header(text)
    if header is None:
        return None
    meta, file_hash, _ = header
    if file_hash != dep_hash or not meta.get("fast"):
        return None
    bound = {}
    closure = cap.closure
    try:
        for name, (origin, original) in meta.get("bound", {}).items():
            if origin == "static":
                bound[name] = static[original]
            elif origin == "closure":
                bound[name] = closure[original]
            elif origin == "default":
                bound[name] = cap.defaults[original]
            else:
                bound[name] = cap.fn.__globals__[original]
        entry, params = meta["entry"], meta["params"]
    except (KeyError, TypeError, ValueError):  # a header that does not fit: regenerate
        return None
    if not isinstance(entry, str) or not isinstance(params, list):
        return None
    return Generated(path, module_name_for(path), meta, bound, cap, text)
