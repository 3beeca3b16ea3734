"""Library functions written as NumPy source, which srctrans transforms like the user's own code.

Some functions users call are not formulas with a rule of their own but short programs of
functions that have rules: scipy.stats' densities and distribution functions are sums, logs
and ``scipy.special`` functions. Here they are written out as such programs
(:mod:`srctrans.library.stats`; NumPy's ``eigvals`` and ``row_stack`` in
:mod:`srctrans.library.numpy_functions`), and a call of the library's function in the user's code
(``stats.norm.logpdf(x, mu, s)``, ``norm.cdf(x)`` after ``from scipy.stats import norm``) is a
call of its source: every transformation (grad, jvp, vmap, jit ...) goes through it as it goes
through a function of the user's, and the generated file shows it. (JAX writes
``jax.scipy.stats`` the same way, in ``jax.numpy``.)

:func:`source_for` maps the object a user's call names to its source function, or None.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def _distributions():
    from . import stats

    return stats.METHODS


def is_distribution(value: Any) -> bool:
    """One of scipy.stats' distribution objects (``scipy.stats.norm``) that the library covers."""
    module = type(value).__module__ or ""
    if not module.startswith("scipy.stats"):
        return False
    import scipy.stats

    name = _name_of(value)
    return name is not None and getattr(scipy.stats, name, None) is value and any(d == name for d, _ in _distributions())


def _name_of(distribution: Any) -> str | None:
    """``norm`` for scipy.stats.norm (of the class ``norm_gen``)."""
    name = type(distribution).__name__
    return name[: -len("_gen")] if name.endswith("_gen") else None


_BY_ID: dict[int, Any] = {}
_SEEN: set[str] = set()


def _functions_by_id() -> dict[int, Any]:
    """The library's functions by the identity of the function each stands for, of the modules
    imported so far (the user's code cannot call a function of a module not imported: looking
    it up would import scipy.signal for every program)."""
    from .numpy_functions import FUNCTIONS

    for key, fn in FUNCTIONS.items():
        module = key.rsplit(".", 1)[0]
        if key not in _SEEN and module in sys.modules:
            _SEEN.add(key)
            obj = getattr(sys.modules[module], key.rsplit(".", 1)[1], None)
            if obj is not None:
                _BY_ID[id(obj)] = fn
    return _BY_ID


def source_for(value: Any):
    """The library's source function for ``value`` (``numpy.linalg.eigvals``, or a bound method
    such as ``scipy.stats.norm.logpdf``), or None when the library has none."""
    if not isinstance(value, types.MethodType):
        return _functions_by_id().get(id(value))
    owner = getattr(value, "__self__", None)
    method = getattr(getattr(value, "__func__", None), "__name__", None)
    if owner is None or method is None or not is_distribution(owner):
        return None
    return _distributions().get((_name_of(owner), method))


def covered() -> dict[str, Any]:
    """``{"scipy.stats.norm.pdf": function, ...}``: what the library writes as source."""
    from .numpy_functions import FUNCTIONS

    return {**FUNCTIONS, **{f"scipy.stats.{d}.{m}": fn for (d, m), fn in _distributions().items()}}
