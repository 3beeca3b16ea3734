"""Numba overloads of the batching helpers in :mod:`srctrans.runtime` (``rt.batch_of`` ...).

vmap's generated files call a few helpers that put a batch axis in front
(``batch_of``, ``batch_alloc``), take one example (``batch_example``) or flatten the
examples (``batch_flatten``); each gets an overload here with the same meaning. A
per-example loop compiled with ``parallel=True`` iterates over ``rt.prange``: importing
this module makes that name Numba's ``prange`` (which is ``range`` when called from
Python), so the loop runs on every core.
"""

from __future__ import annotations

import operator

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from srctrans import runtime as rt

__all__: list[str] = []

rt.prange = numba.prange  # Numba parallelizes loops over its own prange object only


def _scalar(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


@overload(rt.batch_of)
def _batch_of(v, n):
    if _scalar(v):
        def impl(v, n):
            return np.full(n, v)
        return impl
    if isinstance(v, types.Array):
        def impl(v, n):
            out = np.empty((n,) + v.shape, v.dtype)
            for i in range(n):
                out[i] = v
            return out
        return impl
    return None


@overload(rt.batch_alloc)
def _batch_alloc(v, n):
    if _scalar(v):
        dtype = np.dtype(str(v)) if isinstance(v, types.Number) else np.bool_

        def impl(v, n):
            out = np.empty(n, dtype)
            if n > 0:
                out[0] = v
            return out
        return impl
    if isinstance(v, types.Array):
        def impl(v, n):
            out = np.empty((n,) + v.shape, v.dtype)
            if n > 0:
                out[0] = v
            return out
        return impl
    if isinstance(v, types.BaseTuple):  # a tuple of batches, one per element
        elements = "".join(f"rt.batch_alloc(v[{k}], n), " for k in range(len(v)))
        return _compiled(f"def impl(v, n):\n    return ({elements})")
    return None


def _compiled(source: str):
    """The function ``impl`` defined by ``source`` (written per tuple length by an overload)."""
    namespace = {"rt": rt}
    exec(source, namespace)  # noqa: S102 - the text is made from a tuple's length
    return namespace["impl"]


@overload(operator.setitem)
def _store_example(batches, i, example):
    """``batches[i] = example`` for a tuple of batches (rt.batch_alloc of a tuple): each element in its own."""
    if isinstance(batches, types.BaseTuple) and isinstance(example, types.BaseTuple) and len(batches) == len(example):
        stores = "".join(f"\n    batches[{k}][i] = example[{k}]" for k in range(len(batches)))
        return _compiled(f"def impl(batches, i, example):{stores}")
    return None


@overload(rt.batch_example)
def _batch_example(x):
    if not isinstance(x, types.Array):
        return None
    if x.ndim == 1:
        def impl(x):
            if x.shape[0] > 0:
                return x[0]
            return np.zeros(1, x.dtype)[0]
        return impl

    def impl(x):
        out = np.zeros(x.shape[1:], x.dtype)
        if x.shape[0] > 0:
            out[...] = x[0]
        return out
    return impl


@overload(rt.batch_flatten)
def _batch_flatten(x):
    if not isinstance(x, types.Array):
        return None

    def impl(x):
        size = 1
        for d in x.shape[1:]:
            size *= d
        return np.ascontiguousarray(x).reshape((x.shape[0], size))
    return impl


def _unbroadcast_overload(helper, per_example: bool) -> None:
    """``rt.batch_unbroadcast`` (``per_example``: ``x`` batched too) and ``rt.batch_unbroadcast_to``
    (one ``x`` for every example): ``rt.unbroadcast`` per example."""
    from .arguments import grad_dtype

    @overload(helper)
    def _ov(g, x):
        if not (isinstance(g, types.Array) and isinstance(x, types.Array)):
            return None
        dt = grad_dtype(x)

        def impl(g, x):
            n = g.shape[0]
            shape = x.shape[1:] if per_example else x.shape
            out = np.empty((n,) + shape, dt)
            for i in range(n):
                out[i] = rt.unbroadcast(g[i], x[i] if per_example else x)
            return out

        return impl


_unbroadcast_overload(rt.batch_unbroadcast, per_example=True)
_unbroadcast_overload(rt.batch_unbroadcast_to, per_example=False)
