"""Resolve: what each free name of a function refers to, and how the generated file gets it.

Every name a function reads from outside becomes one :class:`Binding`:

``builtin``  ``range``, ``len``, ``print`` ...: nothing to emit.
``import``   a module, or an object another importable module defines:
             ``import numpy as np``, ``from scipy.special import expit``,
             ``from model import SCALE``.
``literal``  a number, string, bool, None or tuple of those that cannot be imported
             (closure values, ``__main__`` globals): written into the file as ``scale = 2.0``.
``bound``    anything else that cannot be imported (a closure array ...): the
             loader puts it into the module before it runs; the header lists it.
``callee``   a user function: transformed too, and emitted into the same file.

:func:`fingerprint` hashes a function with everything it depends on (callees,
globals, closure values) from code objects alone, without parsing, so a cached
file can be reused without importing libcst.
"""

from __future__ import annotations

import builtins
import hashlib
import linecache
import math
import os
import sys
import sysconfig
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LOCAL = object()  # what a resolver returns for names bound inside the function (not a global)

# Libraries with rules of their own (the tables' qualified names start with these), and those
# that compile or are srctrans: their functions are called as they are, never transformed.
# Any other function whose source can be read is transformed, wherever it is installed (a
# package of the user's installed with ``pip install .`` lives in site-packages too).
RULE_LIBRARIES = frozenset({"numpy", "scipy", "math", "builtins", "srctrans", "numba_backend", "numba", "llvmlite"})
_SITE_ROOTS = tuple(
    os.path.realpath(p) + os.sep for p in {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
)
_STDLIB_ROOTS = tuple(
    os.path.realpath(p) + os.sep for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
)
_OWN_PACKAGES = ("srctrans", "numba_backend")
# where those packages' files are: a function of theirs may carry the user's __module__
# (a Jacobian is functools.update_wrapper'ed with the user's function)
_OWN_ROOTS = tuple(
    os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, p)) + os.sep for p in _OWN_PACKAGES
)
# srctrans.library: NumPy source srctrans transforms as the user's own (scipy.stats' densities)
_LIBRARY_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir, "library")) + os.sep
_LIBRARY_MODULE = "srctrans.library."


@dataclass(frozen=True)
class Binding:
    """How the generated file obtains one free name of a function."""

    name: str
    kind: str  # builtin | import | literal | bound | callee
    value: Any
    origin: str  # global | closure | builtin
    text: str = ""  # the import statement or literal expression, when kind needs one

    def describe(self) -> str:
        """One line for the header of the generated file."""
        return f"{self.name} ({self.origin}): {describe_value(self.value)}"


def describe_value(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(value).__module__}.{type(value).__name__} {dtype} {tuple(shape)}"
    return f"{type(value).__qualname__}"


def is_user_function(value: Any) -> bool:
    """A Python function srctrans transforms: not one of a library with rules
    (:data:`RULE_LIBRARIES`) or of the standard library; in an installed package (site-packages),
    one whose source can be read."""
    value = getattr(value, "__srctrans_function__", value)
    if not isinstance(value, types.FunctionType):
        return False
    module = getattr(value, "__module__", "") or ""
    filename = value.__code__.co_filename
    path = os.path.realpath(filename)
    if module.startswith(_LIBRARY_MODULE) and path.startswith(_LIBRARY_ROOT):
        return True
    if module.split(".")[0] in RULE_LIBRARIES:
        return False
    if path.startswith(_OWN_ROOTS) or _in_stdlib(path):
        return False
    if path.startswith(_SITE_ROOTS):
        return bool(linecache.getlines(filename, value.__globals__))
    return True


def _in_stdlib(path: str) -> bool:
    """In the standard library's folders, and not in a site-packages folder inside them."""
    for root in _STDLIB_ROOTS:
        if path.startswith(root):
            parts = path[len(root) :].split(os.sep)
            return "site-packages" not in parts and "dist-packages" not in parts
    return False


def literal_text(value: Any) -> str | None:
    """Python source for a literal value, or None when it has none that round-trips."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if type(value) in (int, str):
        return repr(value)
    if type(value) is float:
        return repr(value) if math.isfinite(value) else None
    if type(value) is complex:
        return repr(value) if math.isfinite(value.real) and math.isfinite(value.imag) else None
    if type(value) is tuple:
        parts = [literal_text(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return None


def importable_module(name: str) -> bool:
    """True when ``name`` is a real module another process can import by that name."""
    if name in ("__main__", "builtins") or name not in sys.modules:
        return False
    mod = sys.modules[name]
    path = getattr(mod, "__file__", None)
    return bool(path) and os.path.isfile(path)


def import_text(value: Any, name: str) -> str | None:
    """``import x as name`` / ``from m import attr as name`` that yields ``value``, if any."""
    if isinstance(value, types.ModuleType):
        modname = value.__name__
        if modname == name:
            return f"import {modname}"
        if "." in modname and modname.rsplit(".", 1)[1] == name:
            parent, attr = modname.rsplit(".", 1)
            return f"from {parent} import {attr}"
        return f"import {modname} as {name}"
    attr = getattr(value, "__name__", None)
    homes = []
    if getattr(value, "__module__", None):
        homes.append(value.__module__)
    homes += ["numpy", "scipy.special", "math"]
    for home in homes:
        mod = sys.modules.get(home)
        if mod is None or not importable_module(home):
            continue
        if isinstance(attr, str) and getattr(mod, attr, None) is value:
            return f"from {home} import {attr}" + ("" if attr == name else f" as {name}")
    return None


def _library_source(value: Any):
    if isinstance(value, types.ModuleType) or isinstance(value, (int, float, str, bool)) or value is None:
        return None
    from ..library import source_for

    return source_for(value)


def bind(name: str, value: Any, origin: str, module_name: str) -> Binding:
    """Decide how one free name's value reaches the generated file."""
    source = _library_source(value)
    if source is not None:  # logpdf = scipy.stats.norm.logpdf: srctrans.library's source of it
        return Binding(name, "callee", source, origin)
    if is_user_function(value):
        return Binding(name, "callee", getattr(value, "__srctrans_function__", value), origin)
    text = None
    if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)) or callable(value):
        text = import_text(value, name)
    if text is None and origin == "global" and importable_module(module_name) and not isinstance(value, types.ModuleType):
        text = f"from {module_name} import {name}"
    if text is not None:
        return Binding(name, "import", value, origin, text)
    lit = literal_text(value)
    if lit is not None:
        return Binding(name, "literal", value, origin, lit)
    return Binding(name, "bound", value, origin)


def lookup(fn: types.FunctionType, name: str, closure: dict[str, Any]) -> tuple[str, Any] | None:
    """Where ``name`` comes from inside ``fn``: ('closure'|'global'|'builtin', value) or None."""
    if name in closure:
        return "closure", closure[name]
    if name in fn.__globals__:
        return "global", fn.__globals__[name]
    b = fn.__globals__.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    if name in b:
        return "builtin", b[name]
    return None


# --- fingerprints (no parsing) -------------------------------------------------


def global_names(code: types.CodeType) -> set[str]:
    """The global names a function's code (nested functions and comprehensions included) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return names


def value_fingerprint(value: Any, seen: dict[int, str]) -> str:
    """A stable text fingerprint of a value a function reads."""
    if isinstance(value, types.ModuleType):
        return "module:" + value.__name__
    if type(value).__name__ == "VMapped" and type(value).__module__ == "srctrans.batching.api":
        # a jit file holds the loop a call of it runs: its axes and the function it batches
        axes = f"{value.in_axes!r}:{value.out_axes!r}:{value.axis_size!r}:{value.axis_name!r}"
        return f"vmapped:{axes}:" + value_fingerprint(value._fn, seen)
    inner = getattr(value, "__srctrans_function__", None)
    if inner is not None:
        value = inner
    if is_user_function(value):
        return "function:" + function_fingerprint(value, seen)
    lit = literal_text(value)
    if lit is not None:
        return f"{type(value).__name__}:{lit}"
    if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "tobytes"):
        digest = hashlib.sha1(value.tobytes()).hexdigest()
        return f"array:{value.dtype}:{tuple(value.shape)}:{digest}"
    module = getattr(value, "__module__", None) or ""
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if qualname:
        return f"object:{module}:{qualname}"
    if isinstance(value, (float, complex, int)) or hasattr(value, "item"):
        return f"{type(value).__name__}:{value!r}"
    return f"object:{type(value).__module__}.{type(value).__qualname__}:{value!r}"


def function_fingerprint(fn: types.FunctionType, seen: dict[int, str] | None = None) -> str:
    """Hash of ``fn``'s source and of everything it reads, recursively; cycle-safe."""
    from ..capture import capture
    from ..version import __version__

    seen = {} if seen is None else seen
    key = id(fn)
    if key in seen:
        return seen[key] or "recursive:" + fn.__qualname__
    seen[key] = ""
    cap = capture(fn)
    h = hashlib.sha256()
    h.update(f"srctrans {__version__}\n{cap.filename}\n{cap.qualname}\n{cap.name}\n{cap.firstlineno}\n".encode())
    h.update(cap.source.encode())
    closure = cap.closure
    for name in sorted(global_names(fn.__code__) | set(closure)):
        found = lookup(fn, name, closure)
        if found is None or found[0] == "builtin":
            continue
        where, value = found
        h.update(f"\n{where}:{name}=".encode())
        h.update(value_fingerprint(value, seen).encode())
    for default in fn.__defaults__ or ():
        h.update(b"\ndefault=" + value_fingerprint(default, seen).encode())
    for name, default in sorted((fn.__kwdefaults__ or {}).items()):
        h.update(f"\ndefault {name}=".encode() + value_fingerprint(default, seen).encode())
    digest = h.hexdigest()
    seen[key] = digest
    return digest


def callable_fingerprint(obj: Callable, extra: str = "") -> str:
    """Fingerprint of any callable srctrans accepts, plus ``extra`` (transform chain, options)."""
    from ..capture import unwrap

    fn, kind, args, kwargs = unwrap(obj)
    h = hashlib.sha256(function_fingerprint(fn).encode())
    h.update(f"\nkind={kind} bound={len(args)} {sorted(kwargs)}\n{extra}".encode())
    return h.hexdigest()

