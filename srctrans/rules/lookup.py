"""The rule table's keys by the identity of the objects they name, and an object's qualified name."""

from __future__ import annotations

from typing import Any

from . import KeysById
from .derivatives import DERIVATIVES

_BY_ID = KeysById(DERIVATIVES)


def rule_keys_by_id() -> dict[int, str]:
    """The rule table's keys by the identity of the objects they name (aliases resolve alike),
    of the modules imported so far."""
    return _BY_ID.table()


def qualified_name(obj: Any, fallback: str) -> str:
    """``module.qualname`` of a function (``numpy.name`` of a ufunc), for messages and rule lookup."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name and module:
        return f"{module}.{name}"
    if name:
        return f"numpy.{name}" if type(obj).__name__ == "ufunc" else name
    return fallback
