"""Values at the API's boundary: which arguments are pytree containers, and the dtypes of the
gradients and tangents handed back.

As in JAX, a gradient or tangent comes back in the dtype of the value it belongs to (a float32
argument gets a float32 gradient whatever precision the function computed in); complex values
are refused with one message; integer leaves carry zero tangents. The transformations of the
public API (:mod:`srctrans.api`, :mod:`srctrans.tangents`, :mod:`srctrans.jacobians`) share
these.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tree import keystr, tree_flatten_with_path, tree_map

__all__ = [
    "COMPLEX_REFUSED",
    "any_tree",
    "differentiable",
    "in_dtype_of",
    "in_output_dtypes",
    "in_primal_dtypes",
    "is_container",
    "leaf_dtype",
    "refuse_complex",
    "zero_tangent",
]


def in_primal_dtypes(cotangents: tuple, primals: list) -> tuple:
    """Each cotangent (a gradient) in the dtype of the argument it belongs to, as in JAX: a float32
    argument gets a float32 gradient whatever precision the function computed in (a cast to
    float64 inside it, a float64 constant, or Numba's promotion of float32 arrays under jit)."""
    return tuple(tree_map(in_dtype_of, c, p) if is_container(p) else in_dtype_of(c, p) for c, p in zip(cotangents, primals))


def in_dtype_of(cotangent: Any, primal: Any) -> Any:
    dtype = getattr(primal, "dtype", None)
    if dtype is None or dtype.kind != "f" or getattr(cotangent, "dtype", None) == dtype:
        return cotangent  # Python numbers, integers (allow_int's zeros), and what already fits
    if isinstance(primal, np.ndarray):
        return np.asarray(cotangent, dtype=dtype)
    return dtype.type(cotangent)


def is_container(value: Any) -> bool:
    """Whether ``value`` is a pytree container passed as its leaves (``None`` is passed as it is)."""
    t = type(value)
    return t is tuple or t is list or t is dict or (isinstance(value, tuple) and hasattr(t, "_fields"))


def any_tree(args: tuple, wrt: tuple | None) -> bool:
    """Whether a call needs binding: a container argument, an array subclass (refused or passed
    as a plain array there, :mod:`srctrans.subclasses`) or (``wrt``: differentiating) a ``None``."""
    for a in args:
        if is_container(a) or (a is None and wrt is not None) or (type(a) is not np.ndarray and isinstance(a, np.ndarray)):
            return True
    return False


def in_output_dtypes(tangent: Any, out: Any) -> Any:
    """A tangent in the dtypes of the output it belongs to, as in JAX (a float32 output's tangent
    is float32, not a Python float or, under jit, Numba's float64)."""
    return tree_map(in_dtype_of, tangent, out) if is_container(out) else in_dtype_of(tangent, out)


COMPLEX_REFUSED = (
    "srctrans differentiates real values only, and this one is complex; "
    "pass its real and imaginary parts as two float arrays"
)


def refuse_complex(who: str, names, values) -> None:
    """A ``TypeError`` naming the first complex leaf of ``values`` (differentiated or not: a complex
    value that meets a differentiated one gives wrong derivatives)."""
    for name, value in zip(names, values):
        for path, leaf in tree_flatten_with_path(value)[0]:
            if leaf is not None and (isinstance(leaf, complex) or getattr(leaf, "dtype", None) is not None and leaf.dtype.kind == "c"):
                raise TypeError(f"{who}: {name}{keystr(path)}: {COMPLEX_REFUSED}")


def leaf_dtype(x: Any) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def differentiable(x: Any) -> bool:
    return leaf_dtype(x).kind in "fc"


def zero_tangent(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    if isinstance(x, np.generic):
        return np.zeros((), dtype=x.dtype if x.dtype.kind in "fc" else np.float64)[()]
    return 0.0
