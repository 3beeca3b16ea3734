"""small helpers that generated code imports.

Each helper is plain NumPy, so a generated file runs unchanged as ordinary Python; this
module never imports Numba. ``numba_backend`` registers an overload for every helper so
that the same file also compiles.

``NUMPY_REWRITES`` maps the qualified name of a NumPy call that Numba cannot be taught
directly to the name of the helper here that replaces it: the front end rewrites
``np.matmul(a, b)`` in user code to ``srctrans.runtime.matmul(a, b)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NUMPY_REWRITES", "matmul"]


def matmul(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """``np.matmul(x1, x2)``.

    ``np.matmul`` is a ufunc, and Numba fuses any ufunc call that returns an array into
    an elementwise loop, so an overload of ``np.matmul`` itself would compute the wrong
    thing; generated code calls this helper instead.
    """
    return np.matmul(x1, x2)


NUMPY_REWRITES: dict[str, str] = {
    "numpy.matmul": "matmul",
}


# --- reverse-mode helpers ------------------------------------------------------------
# Each is plain NumPy; numba_backend/runtime_overloads.py compiles the same meaning.


def grad_seed(out):
    """The adjoint ``1.0`` of a scalar result; ``grad`` of a non-scalar result is an error."""
    if np.ndim(out) != 0:
        raise TypeError(
            f"grad requires a scalar output, got an array of shape {np.shape(out)}; "
            "use vjp for non-scalar outputs, or reduce (e.g. with np.sum) first"
        )
    return np.ones_like(out, dtype=np.result_type(out, 1.0))[()] if isinstance(out, np.ndarray) else 1.0


def zeros_like(x):
    """Zeros shaped like ``x``; a Python float for scalars; a tuple of zeros for a tuple."""
    if isinstance(x, (tuple, list)):
        return tuple(zeros_like(v) for v in x)
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, dtype=_grad_dtype(x))
    return 0.0


def _grad_dtype(x: np.ndarray) -> np.dtype:
    """The dtype of the adjoint of array ``x``: its own if inexact, else float64."""
    return np.result_type(x.dtype, np.float64) if x.dtype.kind in "biu" else x.dtype


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x``: the adjoint of NumPy's broadcasting.

    Also the adjoint's canonical form: a C-contiguous array of ``x``'s shape and of
    ``zeros_like(x)``'s dtype (a ``g`` of fewer dimensions, or with size-1 axes, is
    broadcast up), or a Python float for a scalar ``x``.
    """
    if not isinstance(x, np.ndarray):
        return float(np.sum(g))
    g = np.asarray(g)
    if g.ndim < x.ndim:
        g = g.reshape((1,) * (x.ndim - g.ndim) + g.shape)
    if g.ndim > x.ndim:
        g = np.sum(g, axis=tuple(range(g.ndim - x.ndim)))
    axes = tuple(i for i, n in enumerate(x.shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    if g.shape != x.shape:
        g = np.broadcast_to(g, x.shape)
    return np.asarray(g, dtype=_grad_dtype(x), order="C")


def _expand(g, x, axis, keepdims):
    """Put back the reduced axes of ``g`` (a reduction of ``x`` over ``axis``) so it broadcasts."""
    g = np.asarray(g)
    if axis is None or keepdims:
        return g
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(a % np.ndim(x) for a in axes)
    return np.expand_dims(g, axes)


def sum_grad(g, x, axis=None, keepdims=False):
    return unbroadcast(_expand(g, x, axis, keepdims), x)


def mean_grad(g, x, axis=None, keepdims=False):
    count = np.size(x) if axis is None else np.prod([np.shape(x)[a] for a in np.atleast_1d(axis)])
    return unbroadcast(sum_grad(g, x, axis, keepdims) / count, x)


def extremum_grad(g, x, ans, axis=None, keepdims=False):
    """Adjoint of max/min: shared equally among the positions that attain it."""
    if not isinstance(x, np.ndarray):
        return unbroadcast(g, x)
    hit = (x == _expand(ans, x, axis, keepdims)).astype(np.float64)
    count = np.sum(hit, axis=axis, keepdims=True) if axis is not None else np.sum(hit)
    return unbroadcast(hit * _expand(g, x, axis, keepdims) / count, x)


def prod_grad(g, x, ans, axis=None, keepdims=False):
    """Adjoint of prod: ``g * ans / x``, or the product of the others where ``x`` is zero."""
    if not isinstance(x, np.ndarray):
        return unbroadcast(g, x)
    g, ans = _expand(g, x, axis, keepdims), _expand(ans, x, axis, keepdims)
    zero = x == 0
    zeros = np.sum(zero, axis=axis, keepdims=True)
    others = np.prod(np.where(zero, 1, x), axis=axis, keepdims=True)
    plain = g * ans / np.where(zero, 1, x)
    return unbroadcast(np.where(zeros == 0, plain, np.where(zero & (zeros == 1), g * others, 0.0)), x)


def var_grad(g, x, axis=None, ddof=0, keepdims=False):
    n = np.size(x) if axis is None else np.prod([np.shape(x)[a] for a in np.atleast_1d(axis)])
    centered = x - np.mean(x, axis=axis, keepdims=True)
    return unbroadcast(2.0 * _expand(g, x, axis, keepdims) * centered / (n - ddof), x)


def std_grad(g, x, ans, axis=None, ddof=0, keepdims=False):
    return var_grad(np.asarray(g) / (2.0 * np.asarray(ans)), x, axis, ddof, keepdims)


def dot_grad_x(g, x, y):
    """Adjoint of ``x`` in ``np.dot(x, y)`` / ``x @ y`` (scalars, 1-D and 2-D operands)."""
    if np.ndim(x) == 0:
        return unbroadcast(np.sum(g * y), x)
    if np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    if np.ndim(y) == 1:
        return unbroadcast(np.multiply.outer(g, y) if np.ndim(x) > 1 else g * y, x)
    if np.ndim(x) == 1:
        return unbroadcast(np.dot(y, g), x)
    return unbroadcast(np.dot(g, np.transpose(y)), x)


def dot_grad_y(g, x, y):
    """Adjoint of ``y`` in ``np.dot(x, y)`` / ``x @ y`` (scalars, 1-D and 2-D operands)."""
    if np.ndim(y) == 0:
        return unbroadcast(np.sum(g * x), y)
    if np.ndim(x) == 0:
        return unbroadcast(g * x, y)
    if np.ndim(x) == 1:
        return unbroadcast(np.multiply.outer(x, g) if np.ndim(y) > 1 else g * x, y)
    lead = tuple(range(np.ndim(x) - 1))  # every axis of x but the last
    return unbroadcast(np.tensordot(x, g, axes=(lead, lead)), y)


def transpose_grad(g, axes=None):
    if axes is None or len(axes) == 0:
        return np.transpose(g)
    return np.transpose(g, np.argsort([a % np.ndim(g) for a in axes]))


def diag_grad(g, x, k=0):
    """Adjoint of ``np.diag(x, k)``: the k-th diagonal of ``g`` (x 1-D), or ``g`` put on it (x 2-D)."""
    if np.ndim(x) == 1:
        return np.ascontiguousarray(np.diag(g, k), dtype=_grad_dtype(np.asarray(x)))
    out = zeros_like(x)
    row, col = max(-k, 0), max(k, 0)
    for i in range(np.shape(g)[0]):
        out[row + i, col + i] = g[i]
    return out


def getitem_grad(g, x, index):
    """Adjoint of ``x[index]``: ``g`` added into zeros at ``index`` (repeated indices add up)."""
    if isinstance(x, (tuple, list)):
        raise TypeError(
            "srctrans: indexing a tuple or list of differentiated values is not differentiated; "
            "unpack it instead (a, b = t)"
        )
    out = zeros_like(x)
    np.add.at(out, index, g)
    return out


def _unique_rows(index) -> None:
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu" and np.unique(index).size != index.size:
        raise ValueError("srctrans: .at[index].set/.multiply through an index array with repeated entries is not supported")


def at_set(x, index, v):
    """``x.at[index].set(v)``, as in JAX: a copy of ``x`` with ``v`` written at ``index``."""
    _unique_rows(index)
    out = np.copy(x)
    out[index] = v
    return out


def at_add(x, index, v):
    """``x.at[index].add(v)``: a copy of ``x`` with ``v`` added at ``index`` (repeated indices add up)."""
    out = np.copy(x)
    np.add.at(out, index, v)
    return out


def at_multiply(x, index, v):
    """``x.at[index].multiply(v)``: a copy of ``x`` multiplied by ``v`` at ``index``."""
    _unique_rows(index)
    out = np.copy(x)
    out[index] = out[index] * v
    return out


def snapshot(v):
    """A copy of ``v`` as it is now (a view changes when its array is written); numbers as they are."""
    return v.copy() if isinstance(v, np.ndarray) else v


def setitem_grad(g, index, v):
    """Adjoint of ``v`` in ``y[index] = v``, taken out of ``g`` (the adjoint of ``y``).

    The written elements of ``y`` no longer reach the output, so their part of ``g`` moves
    to ``v`` (summed down to ``v``'s shape) and ``g[index]`` becomes zero, in place.
    """
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu" and np.unique(index).size != index.size:
        raise ValueError("srctrans: writing through an index array with repeated entries is not differentiated")
    taken = np.array(g[index], copy=True)
    g[index] = 0.0
    return unbroadcast(taken, v)


def slogdet_grad(g, x):
    """Adjoint of ``x`` in ``sign, logdet = np.linalg.slogdet(x)``: ``g`` is the pair of their adjoints."""
    return g[1] * np.transpose(np.linalg.inv(x))


def split_grad(g, axis=0):
    """Adjoint of ``x`` in ``np.split(x, ...)``: the pieces' adjoints ``g``, put back together."""
    return np.concatenate([np.asarray(piece, dtype=float) for piece in g], axis=axis)


def xlogy(a, b):
    """``a * log(b)``, zero where ``a`` is zero (the power rule's exponent partial)."""
    return np.where(np.asarray(a) == 0, 0.0, a * np.log(np.where(np.asarray(a) == 0, 1.0, b)))


def ge_mask(x, y):
    return np.asarray(np.asarray(x) >= np.asarray(y), dtype=np.float64)


def le_mask(x, y):
    return np.asarray(np.asarray(x) <= np.asarray(y), dtype=np.float64)


def inside_mask(x, lo, hi):
    x = np.asarray(x)
    inside = np.ones(x.shape, dtype=bool)
    if lo is not None:
        inside &= x >= lo
    if hi is not None:
        inside &= x <= hi
    return inside.astype(np.float64)


def sinc_grad(x):
    px = np.pi * np.asarray(x, dtype=np.float64)
    safe = np.where(px == 0, 1.0, px)
    return np.where(px == 0, 0.0, (np.cos(safe) * safe - np.sin(safe)) / (safe * safe) * np.pi)


def digamma(x):
    from scipy.special import psi

    return psi(x)
