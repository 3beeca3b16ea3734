"""Static argument values as stable text: the part of a specialization's file name and hash
that says which value it was made for, the same in every process.

:func:`value_key` reads a value's content, never its address: literals as Python source;
tuples and frozensets element by element; NumPy scalars and dtypes; enum members, classes,
modules and library functions by where they are defined; a function of the user's by its
name and the fingerprint of its source and of everything it reads (it is written into the
file as a callee); any other object by its type and its fields (dataclasses, namedtuples,
``__dict__``, ``__slots__``), recursively.

A value whose content cannot be read that way (it holds a lock, a generator, itself...)
is *opaque*: :func:`value_key` returns None and the caller keys it by its type alone
(:func:`key_text`). Such a value is bound into the module at load time and never written
into the file, so one file per type serves every value of it, and its specialization is
compiled without Numba's disk cache (:func:`opaque`), so that no value is frozen into
machine code on disk. The cache therefore holds at most one file per function and type
of opaque static, not one per object or process.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import sys
import types
from typing import Any

import numpy as np

from .analysis.resolve import function_fingerprint, import_text, is_user_function, literal_text

_DEPTH = 16  # nested fields deeper than this make a value opaque (and so do cycles)


def value_key(value: Any, fingerprints: bool = True) -> str | None:
    """Stable text for ``value``'s content, or None when it is opaque. ``fingerprints=False``:
    the user's functions by name only (what a file's header shows)."""
    return _key(value, fingerprints, 0, set())


def key_text(value: Any, fingerprints: bool = True) -> str:
    """``value_key``, or for an opaque value its type: ``<opaque mymod.Config>``."""
    key = value_key(value, fingerprints)
    return key if key is not None else f"<opaque {_type_name(type(value))}>"


def opaque(values: dict[str, Any]) -> bool:
    """Whether any of the static ``values`` is opaque (its specialization is not cached by Numba)."""
    return any(value_key(v, False) is None for v in values.values())


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _reference(value: Any) -> str | None:
    """``numpy.tanh``: where a module, class or library function can be imported from again."""
    if isinstance(value, types.ModuleType):
        return value.__name__
    text = import_text(value, "_")
    if text is None or not text.startswith("from "):
        return None
    module, _, rest = text[len("from ") :].partition(" import ")
    return f"{module}.{rest.split(' as ')[0]}"


def _key(value: Any, fingerprints: bool, depth: int, active: set[int]) -> str | None:
    if depth > _DEPTH or id(value) in active:
        return None
    text = literal_text(value)
    if text is not None:
        return text
    if type(value) in (float, complex):  # nan, inf
        return f"{type(value).__name__}({str(value)!r})"
    if type(value) is bytes:
        return repr(value)
    if isinstance(value, np.generic):
        return f"numpy.{type(value).__name__}({value.item()!r})"
    if isinstance(value, np.dtype):
        return f"numpy.dtype({str(value)!r})"
    if type(value) is np.ndarray and value.dtype.kind in "biufcSU":  # (a field of a hashable object)
        digest = hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
        return f"numpy.ndarray({value.dtype.str!r}, {value.shape}, {digest})"
    if isinstance(value, enum.Enum):
        return f"{_type_name(type(value))}.{value.name}"
    inner = getattr(value, "__srctrans_function__", None)
    if is_user_function(value):
        fn = inner if inner is not None else value
        name = f"{fn.__module__}.{fn.__qualname__}"
        return f"{name}#{function_fingerprint(fn)[:16]}" if fingerprints else name
    py_func = getattr(value, "py_func", None)  # a Numba dispatcher of the user's
    if isinstance(py_func, types.FunctionType) and is_user_function(py_func):
        name = f"{py_func.__module__}.{py_func.__qualname__}"
        return f"njit({name}#{function_fingerprint(py_func)[:16]})" if fingerprints else f"njit({name})"
    if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        return _reference(value)
    active = active | {id(value)}
    if type(value) is tuple or type(value) is frozenset:
        parts = [_key(v, fingerprints, depth + 1, active) for v in value]
        if any(p is None for p in parts):
            return None
        if type(value) is frozenset:
            return "frozenset({" + ", ".join(sorted(parts)) + "})"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    fields = _fields(value)
    if fields is None:
        return None
    parts = []
    for name, field_value in fields:
        part = _key(field_value, fingerprints, depth + 1, active)
        if part is None:
            return None
        parts.append(f"{name}={part}")
    return f"{_type_name(type(value))}(" + ", ".join(parts) + ")"


def _fields(value: Any) -> list[tuple[str, Any]] | None:
    """An object's content as ``(name, value)`` pairs, or None when it has none we can read."""
    cls = type(value)
    if cls.__module__ == "builtins" or getattr(sys.modules.get(cls.__module__), cls.__qualname__, None) is not cls:
        return None  # a builtin container or a class that cannot be found again by its name
    if isinstance(value, tuple) and hasattr(cls, "_fields"):  # a namedtuple
        return list(zip(cls._fields, value))
    if dataclasses.is_dataclass(value):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    pairs: list[tuple[str, Any]] = []
    slots = [s for c in cls.__mro__ for s in c.__dict__.get("__slots__", ()) if s not in ("__dict__", "__weakref__")]
    for name in sorted(set(slots)):
        if hasattr(value, name):
            pairs.append((name, getattr(value, name)))
    state = getattr(value, "__dict__", None)
    if state is None and not slots:
        return None
    if state is not None:
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            return None
        pairs += sorted(state.items())
    return pairs
