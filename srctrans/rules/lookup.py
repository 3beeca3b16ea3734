"""The rule table's keys by the identity of the objects they name, and an object's qualified name."""

from __future__ import annotations

from typing import Any

from . import object_named
from .derivatives import DERIVATIVES

_BY_ID: dict[int, str] | None = None


def rule_keys_by_id() -> dict[int, str]:
    """The rule table's keys by the identity of the objects they name (aliases resolve alike)."""
    global _BY_ID
    if _BY_ID is None:
        found: dict[int, str] = {}
        for key in DERIVATIVES:
            obj = object_named(key)
            if obj is not None:
                found.setdefault(id(obj), key)
        _BY_ID = found
    return _BY_ID


def qualified_name(obj: Any, fallback: str) -> str:
    """``module.qualname`` of a function (``numpy.name`` of a ufunc), for messages and rule lookup."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name and module:
        return f"{module}.{name}"
    if name:
        return f"numpy.{name}" if type(obj).__name__ == "ufunc" else name
    return fallback
