"""NumPy features that Numba lacks, registered as ``numba.extending`` overloads.

Importing this module (``import numba_backend`` does) lets ordinary NumPy code compile
under ``numba.njit``. It owns:

- reductions with ``axis=`` (int, negative, tuple) and ``keepdims=`` (a constant bool):
  ``sum prod mean std var max amax min amin all any argmax argmin`` and
  ``np.linalg.norm``; ``ddof=`` for std/var; ``dtype=`` where NumPy has it;
- ``@`` and ``srctrans.runtime.matmul`` (what the front end writes for ``np.matmul``,
  which cannot be overloaded: see that helper) for batched N-D operands, integers and
  mixed dtypes;
- ``np.einsum`` with a constant subscripts string (no ``...``), ``np.tensordot`` and
  ``np.inner`` (1-D and 2-D);
- ``np.squeeze`` and ``ndarray.squeeze`` with ``axis=``; ``np.tile``; ``np.atleast_1d`` of a number;
- lists of arrays (``[a, b]`` or built with ``.append``) passed to ``np.stack``,
  ``np.concatenate``, ``np.hstack``, ``np.vstack`` and ``np.array``;
- ``ufunc.at`` for ``np.add``, ``np.subtract``, ``np.multiply``, ``np.maximum``,
  ``np.minimum`` (repeated indices accumulate);
- ``np.linalg.inv``, ``det``, ``slogdet`` and ``solve`` on stacks of matrices ``(..., n, n)``,
  one matrix at a time (``solve``'s ``b``: a vector or a matrix for every matrix, or one stack
  of the same leading shape); ``np.linalg.cholesky`` on stacks;
- ``np.dot`` with a number, or with an operand of 3 or more dimensions;
- ``axis=`` for ``np.repeat``, ``np.diff`` and ``np.roll``; ``np.diagonal`` (as a copy);
  ``np.pad`` in mode ``'constant'``; ``np.atleast_1d/2d/3d`` of a number; an array indexed
  with a list of ints (``x[[0, 2]]``);
- ``np.linalg.matrix_power`` of a float matrix or a stack, as a plain array (Numba's own is
  typed optional, which the adjoint helpers reading its result cannot take), with NumPy's
  products in NumPy's order;
- ``np.gradient`` (Numba has none): a spacing per axis (a number or coordinates), one for all
  axes or none, ``axis=`` (int, negative, tuple), ``edge_order=`` 1 or 2, NumPy's dtypes (integers
  give float64) and a tuple of arrays where more than one axis is differentiated;
- ``np.select`` of lists (or literal lists, tuples) of conditions and choices of different
  shapes, numbers among the choices, or an array default, with NumPy 2's result shape and dtype.

Numba tries the implementations it registered itself before these, so a call it already
compiled keeps its old implementation; these are reached only where Numba's fail. An
argument combination that is not handled raises ``TypingError`` with the reason, never a
different answer.
"""

from __future__ import annotations

import functools
import math
import operator
import string
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.core.registry import cpu_target
from numba.core.typing.typeof import typeof
from numba.extending import overload, overload_method, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from srctrans import runtime as srctrans_runtime

from .arguments import axis_kind, const_bool, const_int, is_int_tuple, is_none, norm_axis, unliteral

# --- typing-time helpers (plain Python, run while Numba types a call) ---


def _require_array(a: Any, fname: str, min_ndim: int = 0) -> None:
    if not isinstance(a, types.Array):
        raise TypingError(f"{fname}: expected an array, got {a}")
    if a.ndim < min_ndim:
        raise TypingError(f"{fname}: expected an array of at least {min_ndim} dimensions, got {a}")


def _require_numeric(a: types.Array, fname: str, allow_bool: bool = True) -> None:
    dt = a.dtype
    ok = isinstance(dt, (types.Integer, types.Float, types.Complex))
    if allow_bool:
        ok = ok or isinstance(dt, types.Boolean)
    if not ok:
        raise TypingError(f"{fname}: unsupported dtype {dt}")


def _dtype_arg(dtype: Any, fname: str) -> np.dtype | None:
    """NumPy dtype named by a ``dtype=`` argument, or None when it is absent."""
    if is_none(dtype):
        return None
    if isinstance(dtype, types.NumberClass):
        return as_dtype(dtype.instance_type)
    if isinstance(dtype, types.DType):
        return as_dtype(dtype.dtype)
    raise TypingError(f"{fname}: dtype= must be a NumPy scalar type such as np.float64, got {dtype}")


def _require_no_out(out: Any, fname: str) -> None:
    if not is_none(out):
        raise TypingError(f"{fname}: out= is not supported")


def _compile_source(source: str, name: str, env: dict[str, Any]) -> Callable:
    """Exec generated source (readable, kept on the function) and return `name`."""
    namespace = dict(env)
    exec(compile(source, f"<srctrans overload {name}>", "exec"), namespace)
    fn = namespace[name]
    fn.__source__ = source
    return fn


# --- jitted helpers shared by several overloads ---


@register_jitable
def _prod_range(shape, start, stop):
    p = 1
    for d in range(start, stop):
        p *= shape[d]
    return p


@register_jitable
def _mask_axis(axis, ndim):
    mask = np.zeros(ndim, np.bool_)
    mask[norm_axis(axis, ndim)] = True
    return mask


@register_jitable
def _mask_axes(axes, ndim):
    mask = np.zeros(ndim, np.bool_)
    for axis in axes:
        ax = norm_axis(axis, ndim)
        if mask[ax]:
            raise ValueError("duplicate value in 'axis'")
        mask[ax] = True
    return mask


_MASKS = {"int": _mask_axis, "tuple": _mask_axes}


@register_jitable
def _kept_shape(shape, mask, keepdims):
    """Shape after reducing the axes in `mask`, as an intp array."""
    ndim = len(shape)
    n_out = ndim
    if not keepdims:
        n_out = ndim - mask.sum()
    out = np.empty(n_out, np.intp)
    j = 0
    for d in range(ndim):
        if not mask[d]:
            out[j] = shape[d]
            j += 1
        elif keepdims:
            out[j] = 1
            j += 1
    return out


@register_jitable
def _check_core(ok, msg):
    if not ok:
        raise ValueError(msg)


@register_jitable
def _mm2_blas(a, b, out):
    """out = a @ b for C-contiguous 2-D float/complex arrays of one dtype."""
    if a.shape[1] == 0:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = 0
    elif out.size > 0:
        np.dot(a, b, out)


@register_jitable
def _mm2_loop(a, b, out):
    """out = a @ b by loops (integer dtypes, which BLAS does not cover)."""
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = 0
        for k in range(a.shape[1]):
            aik = a[i, k]
            for j in range(b.shape[1]):
                out[i, j] += aik * b[k, j]


def _mm2_for(dt: np.dtype) -> Callable:
    return _mm2_blas if dt.kind in "fc" else _mm2_loop


def _result_dtype(*arrays: types.Array) -> np.dtype:
    return np.result_type(*[as_dtype(x.dtype) for x in arrays])


@functools.cache
def _c_contig_as(dt: np.dtype, same: bool) -> Callable:
    """Jitted x -> C-contiguous array of dtype `dt` (no copy when already so)."""
    if same:
        return register_jitable(lambda x: np.ascontiguousarray(x))
    scalar = dt.type
    return register_jitable(lambda x: np.ascontiguousarray(x).astype(scalar))


@register_jitable
def _c_offsets(shape, dims):
    """Flat C-order offsets of every index over the axes `dims`, in that order (last fastest).

    With the offsets of two complementary groups of axes, out[i, j] = flat[rows[i] + cols[j]]
    gathers any transposition as a 2-D block: no transposed views, no generic copies.
    """
    ndim = len(shape)
    strides = np.empty(ndim, np.intp)
    step = 1
    for d in range(ndim - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    total = 1
    for d in dims:
        total *= shape[d]
    out = np.zeros(total, np.intp)
    if total == 0:
        return out
    count = 1
    for d in dims:
        n = shape[d]
        for j in range(count - 1, -1, -1):  # expand in place, back to front
            base = out[j]
            for i in range(n - 1, -1, -1):
                out[j * n + i] = base + i * strides[d]
        count *= n
    return out


@register_jitable
def _gather2(a, rows, cols, out):
    """out[i, j] = a.flat[rows[i] + cols[j]], cast to out's dtype."""
    flat = np.ascontiguousarray(a).reshape(a.size)
    for i in range(rows.size):
        for j in range(cols.size):
            out[i, j] = flat[rows[i] + cols[j]]


# --- reductions with axis/keepdims ---
# Every reduction views its input as a C-contiguous (outer, n, inner) block, reduces the
# middle axis into an (outer, inner) accumulator, then casts and reshapes the result.
# Each axis form has three jitted pieces: `prepare` normalizes the axis argument (to 0,
# an axis index or a mask of reduced axes), `view3` makes the (outer, n, inner) block and
# `shape` gives the result's shape.


@register_jitable
def _prepare_none(axis, ndim):
    return 0


@register_jitable
def _view3_all(a, unused):
    return np.ascontiguousarray(a).reshape((1, a.size, 1))


@register_jitable
def _shape_all(shape, unused, keepdims):
    return np.ones(len(shape) if keepdims else 0, np.intp)


@register_jitable
def _view3_axis(a, ax):
    outer = inner = 1
    for d in range(ax):
        outer *= a.shape[d]
    for d in range(ax + 1, a.ndim):
        inner *= a.shape[d]
    return np.ascontiguousarray(a).reshape((outer, a.shape[ax], inner))


@register_jitable
def _shape_axis(shape, ax, keepdims):
    ndim = len(shape)
    out = np.empty(ndim if keepdims else ndim - 1, np.intp)
    j = 0
    for d in range(ndim):
        if d != ax:
            out[j] = shape[d]
            j += 1
        elif keepdims:
            out[j] = 1
            j += 1
    return out


@register_jitable
def _view3_mask(a, mask):
    """(kept, reduced, 1) copy of `a` with the axes in `mask` gathered last."""
    n_reduced = mask.sum()
    kept = np.empty(a.ndim - n_reduced, np.intp)
    reduced = np.empty(n_reduced, np.intp)
    i = j = 0
    for d in range(a.ndim):
        if mask[d]:
            reduced[j] = d
            j += 1
        else:
            kept[i] = d
            i += 1
    rows = _c_offsets(a.shape, kept)
    cols = _c_offsets(a.shape, reduced)
    b = np.empty((rows.size, cols.size), a.dtype)
    _gather2(a, rows, cols, b)
    return b.reshape((rows.size, cols.size, 1))


_AXIS_FORMS = {
    "none": (_prepare_none, _view3_all, _shape_all),
    "int": (norm_axis, _view3_axis, _shape_axis),
    "tuple": (_mask_axes, _view3_mask, _kept_shape),
}


# Kernels reduce b3 (outer, n, inner) over its middle axis into out2 (outer, inner). Each
# is one self-contained loop nest: every jitted callee, and every array-valued slice
# assignment, costs Numba noticeable compile time in each caller. Loops run k outside j,
# so rows of `inner` values vectorize; the accumulating kernels keep a scalar in a
# register when inner == 1 (a reduction over the last axis, the most common one).


@register_jitable
def _k_sum(b3, out2, p):
    outer, n, inner = b3.shape
    for i in range(outer):
        if inner == 1:
            acc = 0
            for k in range(n):
                acc += b3[i, k, 0]
            out2[i, 0] = acc
            continue
        for j in range(inner):
            out2[i, j] = 0
        for k in range(n):
            for j in range(inner):
                out2[i, j] += b3[i, k, j]


@register_jitable
def _k_prod(b3, out2, p):
    outer, n, inner = b3.shape
    for i in range(outer):
        if inner == 1:
            acc = 1
            for k in range(n):
                acc *= b3[i, k, 0]
            out2[i, 0] = acc
            continue
        for j in range(inner):
            out2[i, j] = 1
        for k in range(n):
            for j in range(inner):
                out2[i, j] *= b3[i, k, j]


@register_jitable
def _quotient(total, count):
    """total / count, with NumPy's nan (0/0) and inf (x/0) for a count of zero."""
    if count > 0:
        return total / count
    return np.nan if total == 0 else np.inf


@register_jitable
def _k_mean(b3, out2, p):
    _k_sum(b3, out2, p)
    outer, n, inner = b3.shape
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = _quotient(out2[i, j], n)


@register_jitable
def _k_var_real(b3, out2, ddof):
    outer, n, inner = b3.shape
    mean = np.zeros(inner, np.float64)
    for i in range(outer):
        if inner == 1:
            m = 0.0
            for k in range(n):
                m += b3[i, k, 0]
            m = _quotient(m, n)
            acc = 0.0
            for k in range(n):
                d = b3[i, k, 0] - m
                acc += d * d
            out2[i, 0] = _quotient(acc, max(n - ddof, 0.0))
            continue
        for j in range(inner):
            mean[j] = 0.0
            out2[i, j] = 0.0
        for k in range(n):
            for j in range(inner):
                mean[j] += b3[i, k, j]
        for j in range(inner):
            mean[j] = _quotient(mean[j], n)
        for k in range(n):
            for j in range(inner):
                d = b3[i, k, j] - mean[j]
                out2[i, j] += d * d
        for j in range(inner):
            out2[i, j] = _quotient(out2[i, j], max(n - ddof, 0.0))


@register_jitable
def _k_var_complex(b3, out2, ddof):
    outer, n, inner = b3.shape
    mean = np.zeros(inner, np.complex128)
    for i in range(outer):
        for j in range(inner):
            mean[j] = 0.0
            out2[i, j] = 0.0
        for k in range(n):
            for j in range(inner):
                mean[j] += b3[i, k, j]
        for j in range(inner):
            mean[j] = mean[j] / n if n > 0 else np.nan
        for k in range(n):
            for j in range(inner):
                d = b3[i, k, j] - mean[j]
                out2[i, j] += d.real * d.real + d.imag * d.imag
        for j in range(inner):
            out2[i, j] = _quotient(out2[i, j], max(n - ddof, 0.0))


@register_jitable
def _sqrt2(out2):
    """In-place square root: turns a variance into a standard deviation."""
    for i in range(out2.shape[0]):
        for j in range(out2.shape[1]):
            out2[i, j] = np.sqrt(out2[i, j])


@register_jitable
def _k_max(b3, out2, p):
    outer, n, inner = b3.shape
    if n == 0:
        if outer * inner > 0:
            raise ValueError("zero-size array to reduction operation maximum which has no identity")
        return
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = b3[i, 0, j]
        for k in range(1, n):
            for j in range(inner):
                v = b3[i, k, j]
                if v > out2[i, j] or v != v:  # v != v: NaN propagates
                    out2[i, j] = v


@register_jitable
def _k_min(b3, out2, p):
    outer, n, inner = b3.shape
    if n == 0:
        if outer * inner > 0:
            raise ValueError("zero-size array to reduction operation minimum which has no identity")
        return
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = b3[i, 0, j]
        for k in range(1, n):
            for j in range(inner):
                v = b3[i, k, j]
                if v < out2[i, j] or v != v:
                    out2[i, j] = v


@register_jitable
def _k_argmax(b3, out2, p):
    outer, n, inner = b3.shape
    if n == 0:
        if outer * inner > 0:
            raise ValueError("attempt to get argmax of an empty sequence")
        return
    best = np.empty(inner, b3.dtype)
    for i in range(outer):
        for j in range(inner):
            best[j] = b3[i, 0, j]
            out2[i, j] = 0
        for k in range(1, n):
            for j in range(inner):
                v = b3[i, k, j]
                b = best[j]
                if v > b or (v != v and b == b):  # the first NaN wins, as in NumPy
                    best[j] = v
                    out2[i, j] = k


@register_jitable
def _k_argmin(b3, out2, p):
    outer, n, inner = b3.shape
    if n == 0:
        if outer * inner > 0:
            raise ValueError("attempt to get argmin of an empty sequence")
        return
    best = np.empty(inner, b3.dtype)
    for i in range(outer):
        for j in range(inner):
            best[j] = b3[i, 0, j]
            out2[i, j] = 0
        for k in range(1, n):
            for j in range(inner):
                v = b3[i, k, j]
                b = best[j]
                if v < b or (v != v and b == b):
                    best[j] = v
                    out2[i, j] = k


@register_jitable
def _k_all(b3, out2, p):
    outer, n, inner = b3.shape
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = True
        for k in range(n):
            for j in range(inner):
                if not b3[i, k, j]:
                    out2[i, j] = False


@register_jitable
def _k_any(b3, out2, p):
    outer, n, inner = b3.shape
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = False
        for k in range(n):
            for j in range(inner):
                if b3[i, k, j]:
                    out2[i, j] = True


@register_jitable
def _k_norm2(b3, out2, p):
    outer, n, inner = b3.shape
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = 0.0
        for k in range(n):
            for j in range(inner):
                v = b3[i, k, j]
                out2[i, j] += v.real * v.real + v.imag * v.imag
        for j in range(inner):
            out2[i, j] = np.sqrt(out2[i, j])


@register_jitable
def _k_norm_ord(b3, out2, ord):
    """Vector norm of any order (NumPy's meaning of ord=inf, -inf, 0, 1, 2, p)."""
    outer, n, inner = b3.shape
    if n == 0 and outer * inner > 0 and (ord == np.inf or ord == -np.inf):
        raise ValueError("zero-size array to reduction operation which has no identity")
    for i in range(outer):
        for j in range(inner):
            out2[i, j] = np.inf if ord == -np.inf else 0.0
        for k in range(n):
            for j in range(inner):
                m = np.abs(b3[i, k, j])
                if ord == np.inf:
                    out2[i, j] = max(out2[i, j], m)
                elif ord == -np.inf:
                    out2[i, j] = min(out2[i, j], m)
                elif ord == 0.0:
                    out2[i, j] += m != 0
                elif ord == 1.0:
                    out2[i, j] += m
                elif ord == 2.0:
                    out2[i, j] += m * m
                else:
                    out2[i, j] += m**ord
        for j in range(inner):
            if ord == 2.0:
                out2[i, j] = np.sqrt(out2[i, j])
            elif ord != 0.0 and ord != 1.0 and ord != np.inf and ord != -np.inf:
                out2[i, j] = out2[i, j] ** (1.0 / ord)


def _int_promoted(dt: np.dtype) -> np.dtype:
    """NumPy's sum/prod result: bool and small ints widen to the platform integer."""
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return np.dtype(np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def _float_result(dt: np.dtype) -> np.dtype:
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _real_of(dt: np.dtype) -> np.dtype:
    return np.empty(0, dt).real.dtype


def _wide_acc(dt: np.dtype) -> np.dtype:
    """Accumulate floats in float64 and complex in complex128; integers as they are."""
    if dt.kind == "f":
        return np.dtype(np.float64)
    if dt.kind == "c":
        return np.dtype(np.complex128)
    return dt


def _reduction_plan(kind: str, dt: np.dtype, dtype: np.dtype | None, fname: str) -> tuple[Callable, np.dtype, np.dtype]:
    """(kernel, accumulator dtype, result dtype) of one reduction on input dtype `dt`."""
    if kind in ("max", "min", "argmax", "argmin") and dt.kind == "c":
        raise TypingError(f"{fname}: complex input is not supported")
    if kind in ("sum", "prod"):
        res = dtype or _int_promoted(dt)
        return (_k_sum if kind == "sum" else _k_prod), _wide_acc(res), res
    if kind == "mean":
        res = dtype or _float_result(dt)
        return _k_mean, _wide_acc(_float_result(res)), res
    if kind in ("var", "std"):
        res = _real_of(dtype or _float_result(dt))
        complex_in = dt.kind == "c"
        return (_k_var_complex if complex_in else _k_var_real), np.dtype(np.float64), res
    if kind in ("max", "min"):
        return (_k_max if kind == "max" else _k_min), dt, dt
    if kind in ("argmax", "argmin"):
        intp = np.dtype(np.intp)
        return (_k_argmax if kind == "argmax" else _k_argmin), intp, intp
    if kind in ("all", "any"):
        boolean = np.dtype(np.bool_)
        return (_k_all if kind == "all" else _k_any), boolean, boolean
    if kind in ("norm2", "norm_ord"):
        res = _real_of(_float_result(dt))
        return (_k_norm2 if kind == "norm2" else _k_norm_ord), np.dtype(np.float64), res
    raise AssertionError(kind)


_REDUCTION_TEMPLATE = """\
def impl({signature}):
    ax = prepare(unliteral(axis), NDIM)
    b3 = view3({array}, ax)
    out2 = np.empty((b3.shape[0], b3.shape[2]), acc_scalar)
    kernel(b3, out2, {param})
{post}{finish}"""

_FINISH_SCALAR = "    return res_scalar(out2[0, 0])\n"
_FINISH_ARRAY = """\
    shape = shape_of({array}.shape, ax, KEEPDIMS)
    return out2{cast}.reshape(to_fixed_tuple(shape, OUT_NDIM))
"""


@functools.cache
def _reduction_impl(
    signature: str,
    param: str,
    kernel: Callable,
    acc_dt: np.dtype,
    res_dt: np.dtype,
    form: str,
    ndim: int,
    keepdims: bool,
    n_reduced: int,
    post: str,
) -> Callable:
    """The overload implementation of one reduction configuration, shared between calls.

    It is generated so that it carries the NumPy function's own signature and calls the
    kernel directly: every extra layer of jitted function costs a compile.
    """
    array = signature.split(",")[0]
    out_ndim = ndim if keepdims else ndim - n_reduced
    if out_ndim == 0:
        finish = _FINISH_SCALAR
    else:
        finish = _FINISH_ARRAY.format(array=array, cast="" if acc_dt == res_dt else ".astype(res_scalar)")
    source = _REDUCTION_TEMPLATE.format(signature=signature, array=array, param=param, post=post, finish=finish)
    env = {
        "np": np,
        "unliteral": unliteral,
        "_sqrt2": _sqrt2,
        "_norm_ord_value": _norm_ord_value,
        "to_fixed_tuple": to_fixed_tuple,
        "prepare": _AXIS_FORMS[form][0],
        "view3": _AXIS_FORMS[form][1],
        "shape_of": _AXIS_FORMS[form][2],
        "kernel": kernel,
        "acc_scalar": acc_dt.type,
        "res_scalar": res_dt.type,
        "NDIM": ndim,
        "OUT_NDIM": out_ndim,
        "KEEPDIMS": keepdims,
    }
    return _compile_source(source, "impl", env)


def _reduction(
    kind: str,
    fname: str,
    signature: str,
    a: Any,
    axis: Any,
    keepdims: Any,
    dtype: Any = None,
    out: Any = None,
    param: str = "0.0",
) -> Callable:
    """Type-check one reduction call and return its implementation."""
    _require_array(a, fname)
    _require_numeric(a, fname)
    _require_no_out(out, fname)
    keep = const_bool(keepdims, fname, "keepdims")
    form, n_reduced = axis_kind(axis, fname, allow_tuple=kind not in ("argmax", "argmin"))
    if form == "none":
        n_reduced = a.ndim
    elif a.ndim == 0:
        raise TypingError(f"{fname}: axis= given for a 0-d array")
    elif n_reduced > a.ndim:
        raise TypingError(f"{fname}: more axes than the array's {a.ndim} dimensions")
    kernel, acc_dt, res_dt = _reduction_plan(kind, as_dtype(a.dtype), _dtype_arg(dtype, fname), fname)
    if form == "none" and not keep and kind in _WHOLE and as_dtype(a.dtype).kind in "iuf":
        return _whole_reduction_impl(signature, kind, acc_dt, res_dt)
    post = "    _sqrt2(out2)\n" if kind == "std" else ""
    return _reduction_impl(signature, param, kernel, acc_dt, res_dt, form, a.ndim, keep, n_reduced, post)


# A whole array reduced to one number (np.sum(x), np.max(x) in a loop): one pass over its
# elements in C order into a scalar, as the kernels above do for a (1, size, 1) view, the same
# operations in the same order (so the same bits) without their (1, 1) result array. Numba's
# own are as fast; ours are kept for NumPy's dtypes (float32 summed in float64) and errors.
_WHOLE = {
    "sum": "    acc = acc_scalar(0)\n    for v in {array}.flat:\n        acc += v\n    return res_scalar(acc)\n",
    "mean": (
        "    acc = acc_scalar(0)\n    for v in {array}.flat:\n        acc += v\n"
        "    return res_scalar(quotient(acc, {array}.size))\n"
    ),
    "max": (
        "    if {array}.size == 0:\n"
        '        raise ValueError("zero-size array to reduction operation maximum which has no identity")\n'
        "    acc = {array}.flat[0]\n"
        "    for v in {array}.flat:\n"
        "        if v > acc or v != v:  # v != v: NaN propagates\n"
        "            acc = v\n"
        "    return res_scalar(acc)\n"
    ),
    "min": (
        "    if {array}.size == 0:\n"
        '        raise ValueError("zero-size array to reduction operation minimum which has no identity")\n'
        "    acc = {array}.flat[0]\n"
        "    for v in {array}.flat:\n"
        "        if v < acc or v != v:  # v != v: NaN propagates\n"
        "            acc = v\n"
        "    return res_scalar(acc)\n"
    ),
}


@functools.cache
def _whole_reduction_impl(signature: str, kind: str, acc_dt: np.dtype, res_dt: np.dtype) -> Callable:
    array = signature.split(",")[0]
    source = f"def impl({signature}):\n" + _WHOLE[kind].format(array=array)
    env = {"acc_scalar": acc_dt.type, "res_scalar": res_dt.type, "quotient": _quotient}
    return _compile_source(source, "impl", env)


_SIG_DTYPE = "a, axis=None, dtype=None, out=None, keepdims=False"
_SIG_DDOF = "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False"
_SIG_PLAIN = "a, axis=None, out=None, keepdims=False"


@overload(np.sum)
def _ov_sum(a, axis=None, dtype=None, out=None, keepdims=False):
    return _reduction("sum", "np.sum", _SIG_DTYPE, a, axis, keepdims, dtype, out)


@overload(np.prod)
def _ov_prod(a, axis=None, dtype=None, out=None, keepdims=False):
    return _reduction("prod", "np.prod", _SIG_DTYPE, a, axis, keepdims, dtype, out)


@overload(np.mean)
def _ov_mean(a, axis=None, dtype=None, out=None, keepdims=False):
    return _reduction("mean", "np.mean", _SIG_DTYPE, a, axis, keepdims, dtype, out)


def _check_ddof(ddof: Any, fname: str) -> None:
    if not isinstance(ddof, (int, float, types.Integer, types.Float, types.Omitted)):
        raise TypingError(f"{fname}: ddof= must be a number, got {ddof}")


@overload(np.var)
def _ov_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _check_ddof(ddof, "np.var")
    return _reduction("var", "np.var", _SIG_DDOF, a, axis, keepdims, dtype, out, "float(ddof)")


@overload(np.std)
def _ov_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _check_ddof(ddof, "np.std")
    return _reduction("std", "np.std", _SIG_DDOF, a, axis, keepdims, dtype, out, "float(ddof)")


def _register_axis_reduction(fn: Callable, kind: str, fname: str) -> None:
    """max amax min amin all any argmax argmin share the signature (a, axis, out, keepdims)."""

    @overload(fn)
    def _ov_axis_reduction(a, axis=None, out=None, keepdims=False):
        return _reduction(kind, fname, _SIG_PLAIN, a, axis, keepdims, None, out)


for _name, _kind in (
    ("max", "max"),
    ("amax", "max"),
    ("min", "min"),
    ("amin", "min"),
    ("all", "all"),
    ("any", "any"),
    ("argmax", "argmax"),
    ("argmin", "argmin"),
):
    _register_axis_reduction(getattr(np, _name), _kind, f"np.{_name}")


@register_jitable
def _norm_ord_value(ord):
    if ord is None:
        return 2.0
    return float(ord)


def _refuse_string_orders() -> None:
    """Numba's own np.linalg.norm types ``ord='nuc'`` and ``'fro'`` and raises ValueError when it
    runs; wrapped here so that it refuses them when it types the call, and ``_ov_norm`` takes them."""
    import numba.np.linalg as numba_linalg

    own = numba_linalg._get_norm_impl
    if getattr(own, "_srctrans_wrapped", False):
        return

    def get_norm_impl(x, ord_flag):
        if isinstance(ord_flag, (types.UnicodeType, types.StringLiteral)):
            raise TypingError("np.linalg.norm: a string ord is taken by numba_backend.overloads")
        return own(x, ord_flag)

    get_norm_impl._srctrans_wrapped = True
    numba_linalg._get_norm_impl = get_norm_impl


@register_jitable
def _nuclear_norm(x):
    """The sum of the singular values, as NumPy's 'nuc'."""
    return np.sum(np.linalg.svd(np.ascontiguousarray(x).astype(np.float64), full_matrices=False)[1])


@overload(np.linalg.norm)
def _ov_norm(x, ord=None, axis=None, keepdims=False):
    fname = "np.linalg.norm"
    _require_array(x, fname)
    form, n_axes = axis_kind(axis, fname)
    if isinstance(ord, (types.UnicodeType, types.StringLiteral)):
        literal = getattr(ord, "literal_value", None)
        if literal not in ("fro", "nuc") or x.ndim != 2 or form != "none" or const_bool(keepdims, fname, "keepdims"):
            raise TypingError(
                f"{fname}: under jit, ord='fro' or 'nuc' is taken for one matrix (2-d x, no axis=, no keepdims=), got {ord}"
            )
        if literal == "nuc":
            return lambda x, ord=None, axis=None, keepdims=False: _nuclear_norm(x)
        return lambda x, ord=None, axis=None, keepdims=False: np.linalg.norm(x)  # 'fro': the elements' 2-norm
    if is_none(ord):
        kind = "norm2"  # 2-norm of vectors, Frobenius norm of matrices: same formula
    elif isinstance(ord, (types.Integer, types.Float)):
        vector = n_axes == 1 or (form == "none" and x.ndim == 1)
        if not vector:
            raise TypingError(f"{fname}: ord= is supported for vector norms only (an int axis or a 1-d x)")
        kind = "norm_ord"
    else:
        raise TypingError(f"{fname}: ord= must be None or a number, got {ord}")
    signature = "x, ord=None, axis=None, keepdims=False"
    return _reduction(kind, fname, signature, x, axis, keepdims, param="_norm_ord_value(ord)")


# --- matmul ---


@register_jitable
def _batch_dims(shape, n_own, n_out):
    """Leading batch dims of `shape` (n_own of them), left-padded with 1s to n_out."""
    dims = np.ones(n_out, np.intp)
    for d in range(n_own):
        dims[n_out - n_own + d] = shape[d]
    return dims


@register_jitable
def _broadcast_dims(sa, sb):
    out = np.empty(len(sa), np.intp)
    for d in range(len(sa)):
        if sa[d] == sb[d] or sb[d] == 1:
            out[d] = sa[d]
        elif sa[d] == 1:
            out[d] = sb[d]
        else:
            raise ValueError("operands could not be broadcast together (batch dimensions)")
    return out


@register_jitable
def _flat_batch_index(p, out_dims, own_dims):
    """Flat index into an operand's batch for output batch p (size-1 dims broadcast)."""
    idx = 0
    stride = 1
    for d in range(len(out_dims) - 1, -1, -1):
        c = p % out_dims[d]
        p //= out_dims[d]
        if own_dims[d] != 1:
            idx += c * stride
        stride *= own_dims[d]
    return idx


@functools.cache
def _matmul_runner(a_ndim: int, b_ndim: int, dt: np.dtype, same_a: bool, same_b: bool) -> Callable:
    """Implementation (x1, x2) following np.matmul's rules for 1-D and stacked operands."""
    scalar = dt.type
    as_c_a = _c_contig_as(dt, same_a)
    as_c_b = _c_contig_as(dt, same_b)
    mm2 = _mm2_for(dt)
    if a_ndim == 1 and b_ndim == 1:

        def run_vv(x1, x2):
            _check_core(x1.shape[0] == x2.shape[0], "matmul: mismatch in core dimension")
            acc = scalar(0)
            for i in range(x1.shape[0]):
                acc += scalar(x1[i]) * scalar(x2[i])
            return acc

        return run_vv

    nba, nbb = max(a_ndim - 2, 0), max(b_ndim - 2, 0)
    nbo = max(nba, nbb)
    keep_m, keep_n = a_ndim >= 2, b_ndim >= 2
    out_ndim = nbo + keep_m + keep_n

    def run(x1, x2):
        a, b = x1, x2
        ac = as_c_a(a)
        bc = as_c_b(b)
        m = a.shape[a_ndim - 2] if keep_m else 1
        k = a.shape[a_ndim - 1]
        n = b.shape[b_ndim - 1] if keep_n else 1
        _check_core(b.shape[b_ndim - 2 if keep_n else 0] == k, "matmul: mismatch in core dimension")
        a3 = ac.reshape((_prod_range(a.shape, 0, nba), m, k))
        b3 = bc.reshape((_prod_range(b.shape, 0, nbb), k, n))
        sa = _batch_dims(a.shape, nba, nbo)
        sb = _batch_dims(b.shape, nbb, nbo)
        so = _broadcast_dims(sa, sb)
        nbatch = _prod_range(so, 0, nbo)
        out = np.empty((nbatch, m, n), scalar)
        for p in range(nbatch):
            mm2(a3[_flat_batch_index(p, so, sa)], b3[_flat_batch_index(p, so, sb)], out[p])
        shape = np.empty(out_ndim, np.intp)
        for d in range(nbo):
            shape[d] = so[d]
        if keep_m:
            shape[nbo] = m
        if keep_n:
            shape[out_ndim - 1] = n
        return out.reshape(to_fixed_tuple(shape, out_ndim))

    return run


def _matmul(a: Any, b: Any, fname: str) -> Callable:
    _require_array(a, fname, 1)
    _require_array(b, fname, 1)
    _require_numeric(a, fname, allow_bool=False)
    _require_numeric(b, fname, allow_bool=False)
    dt = _result_dtype(a, b)
    return _matmul_runner(a.ndim, b.ndim, dt, as_dtype(a.dtype) == dt, as_dtype(b.dtype) == dt)


@overload(srctrans_runtime.matmul)
def _ov_runtime_matmul(x1, x2):
    return _matmul(x1, x2, "np.matmul")


@overload(np.matmul)
def _ov_matmul(x1, x2):
    # np.matmul is a ufunc: Numba's array-expression pass would turn any np.matmul call
    # that returns an array into an elementwise loop, so refuse it with directions.
    raise TypingError(
        "np.matmul cannot be compiled by Numba (it is treated as an elementwise ufunc); "
        "use a @ b, or srctrans.runtime.matmul(a, b), which the srctrans front end substitutes"
    )


@overload(operator.matmul)
def _ov_matmul_operator(x1, x2):
    # For what Numba's own '@' cannot take: N-D operands, integers, mixed dtypes. What it takes
    # (1-D and 2-D operands of one float or complex dtype: BLAS) is left to it, whichever of the
    # two was registered first (Numba tries them in that order; ours, first, took every '@',
    # 1.5x slower on small matrices and with other bits than NumPy's BLAS).
    if not (isinstance(x1, types.Array) and isinstance(x2, types.Array)):
        return None
    if x1.ndim <= 2 and x2.ndim <= 2 and x1.dtype == x2.dtype and isinstance(x1.dtype, (types.Float, types.Complex)):
        return None
    return _matmul(x1, x2, "'@'")


# --- einsum ---


def _parse_einsum(subscripts: str, n_operands: int) -> tuple[list[str], str]:
    """(input terms, output term) of a subscripts string; implicit output is made explicit."""
    text = subscripts.replace(" ", "")
    if "." in text:
        raise TypingError("np.einsum: '...' (ellipsis) subscripts are not supported")
    if text.count("->") > 1:
        raise TypingError(f"np.einsum: more than one '->' in {subscripts!r}")
    lhs, arrow, out = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise TypingError(f"np.einsum: {subscripts!r} names {len(terms)} operands, {n_operands} were given")
    for term in terms + [out]:
        if any(c not in string.ascii_letters for c in term):
            raise TypingError(f"np.einsum: invalid subscript in {subscripts!r}")
    counts = Counter("".join(terms))
    if not arrow:
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(out)) != len(out):
        raise TypingError(f"np.einsum: output subscript repeated in {subscripts!r}")
    if any(c not in counts for c in out):
        raise TypingError(f"np.einsum: output subscript not in the inputs of {subscripts!r}")
    return terms, out


def _einsum_source(terms: list[str], out: str, scalar_operands: list[bool]) -> str:
    """Loop nest for one einsum: loops over every label, in order of first appearance."""
    lines = ["def einsum_impl(subscripts, *operands):"]
    for i in range(len(terms)):
        lines.append(f"    op{i} = operands[{i}]")
    seen: set[str] = set()
    for i, term in enumerate(terms):
        for pos, c in enumerate(term):
            if c in seen:
                msg = f"einsum: operands disagree on the size of subscript {c!r}"
                lines.append(f"    if op{i}.shape[{pos}] != n_{c}: raise ValueError({msg!r})")
            else:
                lines.append(f"    n_{c} = op{i}.shape[{pos}]")
                seen.add(c)
    labels = list(dict.fromkeys("".join(terms)))
    if out:
        lines.append(f"    out = np.zeros(({', '.join('n_' + c for c in out)},), scalar)")
    else:
        lines.append("    acc = scalar(0)")
    indent = "    "
    for c in labels:
        lines.append(f"{indent}for i_{c} in range(n_{c}):")
        indent += "    "
    factors = []
    for i, term in enumerate(terms):
        factors.append(f"op{i}" if scalar_operands[i] else f"op{i}[{', '.join('i_' + c for c in term)}]")
    product = " * ".join(factors)
    if out:
        lines.append(f"{indent}out[{', '.join('i_' + c for c in out)}] += {product}")
        lines.append("    return out")
    else:
        lines.append(f"{indent}acc += {product}")
        lines.append("    return scalar(acc)")
    return "\n".join(lines) + "\n"


@functools.cache
def _einsum_impl(subscripts: str, operand_ndims: tuple[int | None, ...], dt: np.dtype) -> Callable:
    """operand_ndims: ndim of each array operand, None for a scalar operand."""
    terms, out = _parse_einsum(subscripts, len(operand_ndims))
    for i, (term, ndim) in enumerate(zip(terms, operand_ndims)):
        if ndim is None and term:
            raise TypingError(f"np.einsum: operand {i} is a scalar but has subscripts {term!r}")
        if ndim is not None and ndim != len(term):
            raise TypingError(f"np.einsum: operand {i} has {ndim} dimensions but subscripts {term!r}")
    source = _einsum_source(terms, out, [n is None for n in operand_ndims])
    return _compile_source(source, "einsum_impl", {"np": np, "scalar": dt.type})


@overload(np.einsum)
def _ov_einsum(subscripts, *operands):
    if not isinstance(subscripts, types.StringLiteral):
        raise TypingError("np.einsum: the subscripts must be a constant string")
    if not operands:
        raise TypingError("np.einsum: no operands given")
    ndims: list[int | None] = []
    dtypes: list[np.dtype] = []  # NumPy's einsum makes scalars 0-d arrays: no weak promotion
    for i, op in enumerate(operands):
        if isinstance(op, types.Array):
            if not isinstance(op.dtype, (types.Integer, types.Float, types.Complex, types.Boolean)):
                raise TypingError(f"np.einsum: operand {i} has unsupported dtype {op.dtype}")
            if op.ndim == 0:
                raise TypingError(f"np.einsum: operand {i} is a 0-d array; pass a scalar instead")
            ndims.append(op.ndim)
            dtypes.append(as_dtype(op.dtype))
        elif isinstance(op, (types.Integer, types.Float, types.Complex)):
            ndims.append(None)
            dtypes.append(as_dtype(types.unliteral(op)))
        else:
            raise TypingError(f"np.einsum: operand {i} must be an array or a number, got {op}")
    return _einsum_impl(subscripts.literal_value, tuple(ndims), np.result_type(*dtypes))


# --- tensordot ---


@register_jitable
def _tensordot_axes_int(n, a_ndim, b_ndim):
    if n < 0 or n > a_ndim or n > b_ndim:
        raise ValueError("tensordot: axes exceeds the operands' dimensions")
    axa = np.arange(a_ndim - n, a_ndim)
    axb = np.arange(0, n)
    return axa, axb


@register_jitable
def _as_intp_array(x):
    """An int or a tuple of ints as a 1-D intp array."""
    return np.asarray(x, dtype=np.intp).reshape(-1)


@register_jitable
def _tensordot_perm(axes, ndim, summed_last):
    """Permutation putting the free axes first and `axes` last (or the reverse)."""
    mask = np.zeros(ndim, np.bool_)
    n = len(axes)
    perm = np.empty(ndim, np.intp)
    for i in range(n):
        ax = norm_axis(axes[i], ndim)
        if mask[ax]:
            raise ValueError("tensordot: repeated axis")
        mask[ax] = True
        perm[ndim - n + i if summed_last else i] = ax
    j = 0 if summed_last else n
    for d in range(ndim):
        if not mask[d]:
            perm[j] = d
            j += 1
    return perm


@functools.cache
def _tensordot_runner(a_ndim: int, b_ndim: int, n: int, dt: np.dtype, int_axes: bool) -> Callable:
    scalar = dt.type
    mm2 = _mm2_for(dt)
    out_ndim = a_ndim + b_ndim - 2 * n
    if int_axes:  # n is a compile-time constant: the value of axes itself is not needed
        get_axes = register_jitable(lambda axes: _tensordot_axes_int(n, a_ndim, b_ndim))
    else:
        get_axes = register_jitable(lambda axes: (_as_intp_array(axes[0]), _as_intp_array(axes[1])))
    if out_ndim == 0:
        finish = register_jitable(lambda out, shape: out[0, 0])
    else:
        finish = register_jitable(lambda out, shape: out.reshape(to_fixed_tuple(shape, out_ndim)))

    def run(a, b, axes=2):
        axa, axb = get_axes(unliteral(axes))
        perm_a = _tensordot_perm(axa, a_ndim, True)
        perm_b = _tensordot_perm(axb, b_ndim, False)
        k = 1
        for i in range(n):
            size = a.shape[perm_a[a_ndim - n + i]]
            _check_core(size == b.shape[perm_b[i]], "tensordot: shape mismatch for the summed axes")
            k *= size
        free_a = _c_offsets(a.shape, perm_a[: a_ndim - n])
        free_b = _c_offsets(b.shape, perm_b[n:])
        a2 = np.empty((free_a.size, k), scalar)
        b2 = np.empty((k, free_b.size), scalar)
        _gather2(a, free_a, _c_offsets(a.shape, perm_a[a_ndim - n :]), a2)
        _gather2(b, _c_offsets(b.shape, perm_b[:n]), free_b, b2)
        out = np.empty((free_a.size, free_b.size), scalar)
        mm2(a2, b2, out)
        shape = np.empty(out_ndim, np.intp)
        for i in range(a_ndim - n):
            shape[i] = a.shape[perm_a[i]]
        for i in range(b_ndim - n):
            shape[a_ndim - n + i] = b.shape[perm_b[n + i]]
        return finish(out, shape)

    return run


def _tensordot_count(axes: Any, a: types.Array, b: types.Array) -> tuple[int, bool]:
    """(number of summed axes, whether `axes` is the int form)."""
    fname = "np.tensordot"
    if isinstance(axes, (types.Integer, types.Omitted, int)):
        n = const_int(axes, fname, "axes")
        if n < 0 or n > a.ndim or n > b.ndim:
            raise TypingError(f"{fname}: axes={n} exceeds the operands' dimensions")
        return n, True
    if isinstance(axes, types.BaseTuple) and len(axes.types) == 2:
        counts = []
        for part in axes.types:
            if isinstance(part, types.Integer):
                counts.append(1)
            elif is_int_tuple(part):
                counts.append(len(part.types))
            else:
                raise TypingError(f"{fname}: axes= must hold ints or tuples of ints, got {axes}")
        if counts[0] != counts[1]:
            raise TypingError(f"{fname}: the two axes sequences have different lengths")
        if counts[0] > a.ndim or counts[0] > b.ndim:
            raise TypingError(f"{fname}: more summed axes than dimensions")
        return counts[0], False
    raise TypingError(f"{fname}: axes= must be a constant int or a pair of (tuples of) ints, got {axes}")


@overload(np.tensordot)
def _ov_tensordot(a, b, axes=2):
    fname = "np.tensordot"
    _require_array(a, fname)
    _require_array(b, fname)
    _require_numeric(a, fname, allow_bool=False)
    _require_numeric(b, fname, allow_bool=False)
    n, int_axes = _tensordot_count(axes, a, b)
    return _tensordot_runner(a.ndim, b.ndim, n, _result_dtype(a, b), int_axes)


# --- inner ---


@overload(np.inner)
def _ov_inner(a, b):
    """``np.inner`` for 1-D and 2-D operands: a sum over the last axis of both."""
    fname = "np.inner"
    _require_array(a, fname, min_ndim=1)
    _require_array(b, fname, min_ndim=1)
    if a.ndim > 2 or b.ndim > 2:
        raise TypingError(f"{fname}: operands of more than 2 dimensions are not supported")
    if a.ndim == 1 and b.ndim == 1:
        return lambda a, b: np.dot(a, b)
    if a.ndim == 2 and b.ndim == 1:
        return lambda a, b: np.dot(a, b)
    if a.ndim == 1 and b.ndim == 2:
        return lambda a, b: np.dot(np.ascontiguousarray(b), a)
    return lambda a, b: np.dot(a, np.ascontiguousarray(b.T))


# --- shape manipulation: squeeze, tile ---


@functools.cache
def _squeeze_runner(form: str, ndim: int, n_axes: int, c_layout: bool) -> Callable:
    """Implementation (a, axis=None): a view without the size-1 axes named by axis."""
    mask_of = _MASKS[form]
    out_ndim = ndim - n_axes
    if c_layout:  # a C-contiguous reshape keeps Numba's faster 'C' layout
        view = register_jitable(lambda a, shape, strides: a.reshape(to_fixed_tuple(shape, out_ndim)))
    else:
        view = register_jitable(
            lambda a, shape, strides: np.lib.stride_tricks.as_strided(
                a, shape=to_fixed_tuple(shape, out_ndim), strides=to_fixed_tuple(strides, out_ndim)
            )
        )

    def run(a, axis=None):
        mask = mask_of(unliteral(axis), ndim)
        shape = np.empty(out_ndim, np.intp)
        strides = np.empty(out_ndim, np.intp)
        j = 0
        for d in range(ndim):
            if mask[d]:
                if a.shape[d] != 1:
                    raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
            else:
                shape[j] = a.shape[d]
                strides[j] = a.strides[d]
                j += 1
        return view(a, shape, strides)

    return run


def _squeeze(a: Any, axis: Any, fname: str) -> Callable:
    _require_array(a, fname)
    form, n_axes = axis_kind(axis, fname)
    if form == "none":
        if a.ndim == 0:
            return lambda a, axis=None: a
        raise TypingError(
            f"{fname}: without axis= the result's ndim depends on the runtime shape, which Numba "
            "must know when it compiles; pass axis= (an int or a tuple of ints)"
        )
    if n_axes > a.ndim:
        raise TypingError(f"{fname}: more axes than the array's {a.ndim} dimensions")
    return _squeeze_runner(form, a.ndim, n_axes, a.layout == "C" and a.ndim - n_axes > 0)


@overload(np.squeeze)
def _ov_squeeze(a, axis=None):
    return _squeeze(a, axis, "np.squeeze")


@overload_method(types.Array, "squeeze")
def _ov_array_squeeze(a, axis=None):
    return _squeeze(a, axis, "ndarray.squeeze")


@functools.cache
def _tile_runner(ndim: int, n_reps: int) -> Callable:
    """Implementation (A, reps): both padded with leading 1s to d dims, then copied row by row."""
    d = max(ndim, n_reps)

    def run(A, reps):
        a = A
        reps_arr = _as_intp_array(unliteral(reps))
        src_shape = np.ones(d, np.intp)
        out_shape = np.ones(d, np.intp)
        for i in range(ndim):
            src_shape[d - ndim + i] = a.shape[i]
        for i in range(n_reps):
            if reps_arr[i] < 0:
                raise ValueError("negative dimensions are not allowed")
            out_shape[d - n_reps + i] = reps_arr[i]
        for i in range(d):
            out_shape[i] *= src_shape[i]
        out = np.empty(to_fixed_tuple(out_shape, d), a.dtype)
        if out.size == 0:
            return out
        src = np.ascontiguousarray(a).reshape((-1, src_shape[d - 1]))
        rows = out.reshape((-1, out_shape[d - 1]))
        n_last = src_shape[d - 1]
        for r in range(rows.shape[0]):
            # source row: each output row index taken modulo the source's extent
            rem = r
            src_row = 0
            stride = 1
            for i in range(d - 2, -1, -1):
                c = rem % out_shape[i]
                rem //= out_shape[i]
                src_row += (c % src_shape[i]) * stride
                stride *= src_shape[i]
            for j in range(rows.shape[1]):
                rows[r, j] = src[src_row, j % n_last]
        return out

    return run


@overload(np.atleast_1d)
def _ov_atleast_1d(x):
    """``np.atleast_1d`` of a number (Numba's takes arrays only): what ``np.r_[x, 1.0]`` reads."""
    if isinstance(x, (types.Number, types.Boolean)):
        return lambda x: np.full(1, x)
    raise TypingError(f"np.atleast_1d: expected a number, got {x}")


@overload(np.tile)
def _ov_tile(A, reps):
    fname = "np.tile"
    _require_array(A, fname)
    if isinstance(reps, types.Integer):
        n_reps = 1
    elif is_int_tuple(reps):
        n_reps = len(reps.types)
    else:
        raise TypingError(f"{fname}: reps must be an int or a tuple of ints, got {reps}")
    if max(A.ndim, n_reps) == 0:
        raise TypingError(f"{fname}: 0-d array with empty reps is not supported")
    return _tile_runner(A.ndim, n_reps)


# --- np.fix, np.full of an array, np.cumprod with axis= ---


@overload(np.fix)
def _ov_fix(x, out=None):
    """np.fix: rounding towards zero, which is np.trunc (-0.0 included)."""
    _require_no_out(out, "np.fix")
    return lambda x, out=None: np.trunc(x)


@overload(np.frexp)
def _ov_frexp(x):
    """np.frexp of floats: the mantissa in x's dtype and the exponent as int32, as NumPy gives
    them (through C's frexp, element by element)."""
    if isinstance(x, types.Float):

        def impl_scalar(x):
            m, e = math.frexp(x)
            return m, np.int32(e)

        return impl_scalar
    if isinstance(x, types.Array) and isinstance(x.dtype, types.Float):

        def impl(x):
            m = np.empty(x.shape, x.dtype)
            e = np.empty(x.shape, np.int32)
            flat, m_flat, e_flat = x.ravel(), m.reshape(-1), e.reshape(-1)
            for i in range(flat.size):
                mantissa, exponent = math.frexp(flat[i])
                m_flat[i] = mantissa
                e_flat[i] = exponent
            return m, e

        return impl
    return None


@overload(np.full)
def _ov_full_of_array(shape, fill_value, dtype=None):
    """np.full with an array fill_value, broadcast to shape (Numba's takes a number)."""
    if not isinstance(fill_value, types.Array):
        return None
    dt = as_dtype(fill_value.dtype) if is_none(dtype) else _dtype_arg(dtype, "np.full")

    def impl(shape, fill_value, dtype=None):
        out = np.empty(shape, dt)
        out[...] = np.broadcast_to(fill_value, out.shape)
        return out

    return impl


@register_jitable
def _cumprod_rows(rows):
    out = rows.copy()
    for r in range(out.shape[0]):
        for i in range(1, out.shape[1]):
            out[r, i] = out[r, i - 1] * out[r, i]
    return out


@overload(np.cumprod)
def _ov_cumprod_axis(a, axis=None, dtype=None, out=None):
    """np.cumprod along an int axis, a C-contiguous result (Numba's takes no axis)."""
    fname = "np.cumprod"
    _require_no_out(out, fname)
    if is_none(axis) or not isinstance(a, types.Array):
        return None  # Numba's own
    if not is_none(dtype):
        raise TypingError(f"{fname}: dtype= is not supported under jit")
    axis_kind(axis, fname, allow_tuple=False)
    nd = a.ndim
    dt = _int_promoted(as_dtype(a.dtype))

    def impl(a, axis=None, dtype=None, out=None):
        ax = norm_axis(unliteral(axis), nd)
        moved = np.ascontiguousarray(np.moveaxis(a, ax, -1)).astype(dt)
        n = a.shape[ax]
        done = _cumprod_rows(moved.reshape((moved.size // max(n, 1), n))).reshape(moved.shape)
        return np.ascontiguousarray(np.moveaxis(done, -1, ax))

    return impl


# --- np.sort and np.argsort along an axis ---


def _along_axis(fname: str, arg: bool) -> Callable:
    """``impl(a, axis, kind)``: each line of ``a`` along an int ``axis`` sorted (``arg``: the
    indices that sort it), a C-contiguous result; Numba's own sort the last axis only."""

    def overload_impl(a, axis=-1, kind=None, order=None):
        if not isinstance(a, types.Array) or a.ndim < 2 or is_none(axis) or isinstance(axis, types.Omitted):
            return None  # Numba's own
        if not is_none(order):
            raise TypingError(f"{fname}: order= is not supported under jit")
        axis_kind(axis, fname, allow_tuple=False)
        nd = a.ndim
        dt = np.dtype(np.intp) if arg else as_dtype(a.dtype)

        def impl(a, axis=-1, kind=None, order=None):
            ax = norm_axis(unliteral(axis), nd)
            moved = np.ascontiguousarray(np.moveaxis(a, ax, -1))
            n = a.shape[ax]
            rows = moved.reshape((moved.size // max(n, 1), n))
            out = np.empty(rows.shape, dt)
            for r in range(rows.shape[0]):
                out[r] = np.argsort(rows[r], kind="mergesort") if arg else np.sort(rows[r])
            return np.ascontiguousarray(np.moveaxis(out.reshape(moved.shape), -1, ax))

        return impl

    return overload_impl


overload(np.sort)(_along_axis("np.sort", False))
overload(np.argsort)(_along_axis("np.argsort", True))


# --- np.linalg.lstsq with rcond=None ---


@overload(np.linalg.lstsq)
def _ov_lstsq_rcond_none(a, b, rcond=None):
    """rcond=None (NumPy's default: machine precision times max(M, N)), through Numba's own."""
    if not is_none(rcond) or not isinstance(a, types.Array) or a.ndim != 2:
        return None
    eps = float(np.finfo(np.float32 if a.dtype == types.float32 else np.float64).eps)

    def impl(a, b, rcond=None):
        return np.linalg.lstsq(a, b, eps * max(a.shape[0], a.shape[1]))

    return impl


# --- np.linalg.multi_dot ---


@register_jitable
def multi_dot_chain(mats):
    """The product of a list of 2-D C-contiguous arrays in NumPy's order: its cost comparison for
    three, its matrix-chain order (dynamic programming) for more."""
    n = len(mats)
    if n == 1:
        return mats[0]
    if n == 2:
        return np.dot(mats[0], mats[1])
    if n == 3:
        a0, a1b0 = mats[0].shape
        b1c0, c1 = mats[2].shape
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            return np.dot(np.dot(mats[0], mats[1]), mats[2])
        return np.dot(mats[0], np.dot(mats[1], mats[2]))
    p = np.empty(n + 1, np.intp)
    for i in range(n):
        p[i] = mats[i].shape[0]
    p[n] = mats[n - 1].shape[1]
    cost = np.zeros((n, n))
    split = np.zeros((n, n), np.intp)
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j] = np.inf
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if q < cost[i, j]:
                    cost[i, j] = q
                    split[i, j] = k
    needed = np.zeros((n, n), np.bool_)  # the intervals the order multiplies, found from the whole
    todo = [(0, n - 1)]
    while len(todo) > 0:
        i, j = todo.pop()
        needed[i, j] = True
        if i < j:
            todo.append((i, split[i, j]))
            todo.append((split[i, j] + 1, j))
    done = [mats[0]] * (n * n)  # done[i * n + j]: the product of mats[i..j]
    for i in range(n):
        done[i * n + i] = mats[i]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            if needed[i, j]:
                k = split[i, j]
                done[i * n + j] = np.dot(done[i * n + k], done[(k + 1) * n + j])
    return done[n - 1]


def multi_dot_items(arrays: Any, fname: str) -> tuple[list, np.dtype]:
    """The element types of multi_dot's arrays (a list of matrices, or a tuple or literal list with
    vectors at the ends), checked; and the float dtype they share."""
    if isinstance(arrays, (types.List, types.ListType)):
        items = [arrays.dtype]
        if not (isinstance(items[0], types.Array) and items[0].ndim == 2):
            raise TypingError(f"{fname}: a list of matrices, got {arrays}")
    elif isinstance(arrays, (types.BaseTuple, types.LiteralList)):
        items = list(arrays.types)
        if len(items) < 2 or not all(isinstance(t, types.Array) for t in items):
            raise TypingError(f"{fname}: at least two arrays, got {arrays}")
        if any(t.ndim != 2 for t in items[1:-1]) or any(t.ndim not in (1, 2) for t in (items[0], items[-1])):
            raise TypingError(f"{fname}: matrices, with vectors at the ends only, got {arrays}")
    else:
        raise TypingError(f"{fname}: expected a list or a tuple of arrays, got {arrays}")
    dts = {t.dtype for t in items}
    if len(dts) != 1 or not isinstance(items[0].dtype, types.Float):
        raise TypingError(f"{fname}: under jit, float arrays of one dtype, got {arrays}")
    return items, as_dtype(items[0].dtype)


def multi_dot_matrices(arrays: Any, items: list, dt: np.dtype) -> Callable:
    """``mats(arrays)``: a list of 2-D C-contiguous copies, a first vector as a row and a last one
    as a column (NumPy's promotion)."""
    if isinstance(arrays, (types.List, types.ListType)):

        def from_list(arrays):
            return [np.ascontiguousarray(a).astype(dt) for a in arrays]

        return register_jitable(from_list)
    n = len(items)
    parts = []
    for i, t in enumerate(items):
        a = f"np.ascontiguousarray(arrays[{i}]).astype(dt)"
        if t.ndim == 1:
            a = f"{a}.reshape((1, arrays[{i}].size))" if i == 0 else f"{a}.reshape((arrays[{i}].size, 1))"
        parts.append(a)
    source = "def mats(arrays):\n    return [" + ", ".join(parts) + "]\n"
    return register_jitable(_compile_source(source, "mats", {"np": np, "dt": dt, "n": n}))


@overload(np.linalg.multi_dot)
def _ov_multi_dot(arrays, out=None):
    fname = "np.linalg.multi_dot"
    _require_no_out(out, fname)
    items, dt = multi_dot_items(arrays, fname)
    mats = multi_dot_matrices(arrays, items, dt)
    first, last = items[0].ndim == 1, items[-1].ndim == 1
    if first and last:
        return lambda arrays, out=None: multi_dot_chain(mats(arrays))[0, 0]
    if first:
        return lambda arrays, out=None: multi_dot_chain(mats(arrays))[0].copy()
    if last:
        return lambda arrays, out=None: np.ascontiguousarray(multi_dot_chain(mats(arrays))[:, 0])
    return lambda arrays, out=None: multi_dot_chain(mats(arrays))


# --- nansum, nanmean, nanmax, nanmin and median with axis= or keepdims= ---
# Numba's own take the array alone; these are reached for the other calls. NaNs replaced as
# NumPy replaces them (0 for the sums, -inf/+inf for the extrema), then the reductions above.


def _nan_reduction_args(a: Any, axis: Any, keepdims: Any, fname: str) -> bool:
    """Check the arguments; True when the call reduces everything to a number."""
    _require_array(a, fname)
    if not isinstance(a.dtype, (types.Float, types.Integer, types.Boolean)):
        raise TypingError(f"{fname}: under jit, an array of real numbers, got {a}")
    axis_kind(axis, fname)
    return is_none(axis) and not const_bool(keepdims, fname, "keepdims")


@overload(np.nansum)
def _ov_nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    fname = "np.nansum"
    _require_no_out(out, fname)
    if not is_none(dtype):
        raise TypingError(f"{fname}: dtype= is not supported under jit")
    _nan_reduction_args(a, axis, keepdims, fname)

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        return np.sum(np.where(np.isnan(a), 0, a), axis=axis, keepdims=keepdims)

    return impl


@overload(np.nanmean)
def _ov_nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    fname = "np.nanmean"
    _require_no_out(out, fname)
    if not is_none(dtype):
        raise TypingError(f"{fname}: dtype= is not supported under jit")
    _nan_reduction_args(a, axis, keepdims, fname)

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        nans = np.isnan(a)
        total = np.sum(np.where(nans, 0, a), axis=axis, keepdims=keepdims)
        return total / np.sum(~nans, axis=axis, keepdims=keepdims)

    return impl


def _nan_extremum(fn: Callable, fill: float, fname: str) -> None:
    reduce = np.max if fill < 0 else np.min

    @overload(fn)
    def _ov(a, axis=None, out=None, keepdims=False):
        _require_no_out(out, fname)
        if _nan_reduction_args(a, axis, keepdims, fname):
            return None  # Numba's own

        def impl(a, axis=None, out=None, keepdims=False):
            nans = np.isnan(a)
            m = reduce(np.where(nans, fill, a), axis=axis, keepdims=keepdims)
            return np.where(np.sum(~nans, axis=axis, keepdims=keepdims) == 0, np.nan, m)  # all NaN: NaN

        return impl


_nan_extremum(np.nanmax, -np.inf, "np.nanmax")
_nan_extremum(np.nanmin, np.inf, "np.nanmin")


@register_jitable
def _median_rows(rows):
    """The median of each row (NaN where it holds one), as NumPy's: the middle of the sorted
    row, or the mean (a + b) / 2 of the two middle ones."""
    n = rows.shape[1]
    out = np.empty(rows.shape[0], np.float64)
    h = n // 2
    for r in range(rows.shape[0]):
        row = np.sort(rows[r])
        if np.isnan(row[n - 1]):
            out[r] = np.nan
        elif n % 2 == 1:
            out[r] = row[h]
        else:
            out[r] = (row[h - 1] + row[h]) / 2.0
    return out


@overload(np.median)
def _ov_median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    fname = "np.median"
    _require_no_out(out, fname)
    whole = _nan_reduction_args(a, axis, keepdims, fname)
    if whole:
        return None  # Numba's own
    if not isinstance(a.dtype, types.Float) or a.dtype.bitwidth != 64:
        raise TypingError(f"{fname}: with axis= or keepdims=, a float64 array under jit, got {a}")
    kind, n_axes = axis_kind(axis, fname)
    if kind not in ("int", "none"):
        raise TypingError(f"{fname}: axis must be an int under jit, got {axis}")
    nd = a.ndim
    keep = const_bool(keepdims, fname, "keepdims")
    out_nd = nd if keep else nd - 1
    flat = kind == "none"

    def impl(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        ax = nd - 1 if flat else norm_axis(unliteral(axis), nd)
        moved = np.ascontiguousarray(np.moveaxis(a, ax, -1))
        n = a.size if flat else a.shape[ax]
        values = _median_rows(moved.reshape((moved.size // n, n)))
        shape = np.empty(out_nd, np.intp)
        j = 0
        for d in range(nd):
            if flat or d == ax:
                if keep:
                    shape[j] = 1
                    j += 1
            else:
                shape[j] = a.shape[d]
                j += 1
        return values.reshape(to_fixed_tuple(shape, out_nd))

    return impl


# --- rot90 (with axes=), rollaxis ---


@register_jitable
def _rot90_copy(m, k, a0, a1):
    """np.rot90(m, k, (a0, a1)) as a C-contiguous copy (NumPy's is a view; the values are the same)."""
    nd = m.ndim
    src = np.ascontiguousarray(m)
    flat = src.reshape(src.size)
    k = k % 4
    n0, n1 = m.shape[a0], m.shape[a1]
    shape = np.empty(nd, np.intp)
    step = np.empty(nd, np.intp)  # element strides of the source, C order
    size = 1
    for d in range(nd - 1, -1, -1):
        shape[d] = m.shape[d]
        step[d] = size
        size *= m.shape[d]
    if k % 2 == 1:
        shape[a0], shape[a1] = n1, n0
    out = np.empty(size, m.dtype)
    for p in range(size):
        rest = p
        offset = 0
        i0 = 0
        i1 = 0
        for d in range(nd - 1, -1, -1):
            i = rest % shape[d]
            rest //= shape[d]
            if d == a0:
                i0 = i
            elif d == a1:
                i1 = i
            else:
                offset += i * step[d]
        if k == 0:
            s0, s1 = i0, i1
        elif k == 1:  # out[i, j] = m[j, n1 - 1 - i]
            s0, s1 = i1, n1 - 1 - i0
        elif k == 2:
            s0, s1 = n0 - 1 - i0, n1 - 1 - i1
        else:  # out[i, j] = m[n0 - 1 - j, i]
            s0, s1 = n0 - 1 - i1, i0
        out[p] = flat[offset + s0 * step[a0] + s1 * step[a1]]
    return out.reshape(to_fixed_tuple(shape, nd))


@overload(np.real_if_close)
def _ov_real_if_close(a, tol=100):
    """np.real_if_close of a real array: the array itself, as NumPy returns it. (Of a complex array
    NumPy's result type depends on the values, which Numba must know when it compiles.)"""
    if not isinstance(a, types.Array):
        raise TypingError(f"np.real_if_close takes an array here, got {a}")
    if not isinstance(a.dtype, (types.Float, types.Integer, types.Boolean)):
        raise TypingError(
            "np.real_if_close of a complex array: its result's type depends on the values (real when the "
            "imaginary parts are small), which Numba must know when it compiles; take np.real(a) instead"
        )

    def impl(a, tol=100):
        return a

    return impl


@overload(np.rot90)
def _ov_rot90(m, k=1, axes=(0, 1)):
    """np.rot90 with axes= (Numba's own takes none), as a copy."""
    fname = "np.rot90"
    _require_array(m, fname, 2)
    if not (is_int_tuple(axes) and len(axes) == 2) and not isinstance(axes, types.Omitted):
        raise TypingError(f"{fname}: axes must be a pair of ints, got {axes}")
    nd = m.ndim

    def impl(m, k=1, axes=(0, 1)):
        a0, a1 = norm_axis(axes[0], nd), norm_axis(axes[1], nd)
        if a0 == a1:
            raise ValueError("Axes must be different.")
        return _rot90_copy(m, k, a0, a1)

    return impl


@overload(np.rollaxis)
def _ov_rollaxis(a, axis, start=0):
    """np.rollaxis as NumPy writes it for np.moveaxis: a view."""
    fname = "np.rollaxis"
    _require_array(a, fname, 1)
    nd = a.ndim

    def impl(a, axis, start=0):
        ax = norm_axis(axis, nd)
        st = start + nd if start < 0 else start
        if st < 0 or st > nd:
            raise ValueError("rollaxis: start is out of bounds")
        return np.moveaxis(a, ax, st - 1 if ax < st else st)

    return impl


# --- joining lists of arrays: stack, concatenate, hstack, vstack, array ---
# Numba joins tuples of arrays itself; these take lists ([a, b] or built by .append).


def _list_item(arrays: Any) -> types.Array | None:
    if isinstance(arrays, (types.List, types.ListType)) and isinstance(arrays.dtype, types.Array):
        return arrays.dtype
    return None


def _require_list(arrays: Any, fname: str, min_ndim: int = 0) -> types.Array:
    item = _list_item(arrays)
    if item is None:
        raise TypingError(f"{fname}: expected a list of arrays, got {arrays}")
    if item.ndim < min_ndim:
        raise TypingError(f"{fname}: the arrays must have at least {min_ndim} dimensions, got {item}")
    return item


@register_jitable
def _copy3(src, out, offset):
    """out[:, offset:offset + src.shape[1], :] = src, as loops (cheap to compile)."""
    for i in range(src.shape[0]):
        for k in range(src.shape[1]):
            for j in range(src.shape[2]):
                out[i, offset + k, j] = src[i, k, j]


@functools.cache
def _concatenate_runner(ndim: int) -> Callable:
    def run(arrays, axis=0):
        if len(arrays) == 0:
            raise ValueError("need at least one array to concatenate")
        first = arrays[0]
        ax = norm_axis(unliteral(axis), ndim)
        total = 0
        for x in arrays:
            for d in range(ndim):
                if d != ax and x.shape[d] != first.shape[d]:
                    raise ValueError(
                        "all the input array dimensions except for the concatenation axis must match exactly"
                    )
            total += x.shape[ax]
        outer = _prod_range(first.shape, 0, ax)
        inner = _prod_range(first.shape, ax + 1, ndim)
        out = np.empty((outer, total, inner), first.dtype)
        offset = 0
        for x in arrays:
            m = x.shape[ax]
            _copy3(np.ascontiguousarray(x).reshape((outer, m, inner)), out, offset)
            offset += m
        shape = np.empty(ndim, np.intp)
        for d in range(ndim):
            shape[d] = first.shape[d]
        shape[ax] = total
        return out.reshape(to_fixed_tuple(shape, ndim))

    return register_jitable(run)


@functools.cache
def _stack_runner(ndim: int) -> Callable:
    out_ndim = ndim + 1

    def run(arrays, axis=0):
        n = len(arrays)
        if n == 0:
            raise ValueError("need at least one array to stack")
        first = arrays[0]
        ax = norm_axis(unliteral(axis), out_ndim)
        for x in arrays:
            for d in range(ndim):
                if x.shape[d] != first.shape[d]:
                    raise ValueError("all input arrays must have the same shape")
        outer = _prod_range(first.shape, 0, ax)
        inner = _prod_range(first.shape, ax, ndim)
        out = np.empty((outer, n, inner), first.dtype)
        for i in range(n):
            _copy3(np.ascontiguousarray(arrays[i]).reshape((outer, 1, inner)), out, i)
        shape = np.empty(out_ndim, np.intp)
        for d in range(out_ndim):
            if d < ax:
                shape[d] = first.shape[d]
            elif d == ax:
                shape[d] = n
            else:
                shape[d] = first.shape[d - 1]
        return out.reshape(to_fixed_tuple(shape, out_ndim))

    return register_jitable(run)


@functools.cache
def _concatenate_flat_runner() -> Callable:
    def run(arrays, axis=0):
        if len(arrays) == 0:
            raise ValueError("need at least one array to concatenate")
        total = 0
        for x in arrays:
            total += x.size
        out = np.empty(total, arrays[0].dtype)
        offset = 0
        for x in arrays:
            flat = np.ravel(x)
            for i in range(x.size):
                out[offset + i] = flat[i]
            offset += x.size
        return out

    return register_jitable(run)


@overload(np.concatenate)
def _ov_concatenate(arrays, axis=0):
    fname = "np.concatenate"
    item = _require_list(arrays, fname)
    if is_none(axis):
        run = _concatenate_flat_runner()
    else:
        axis_kind(axis, fname, allow_tuple=False)
        if item.ndim == 0:
            raise TypingError(f"{fname}: zero-dimensional arrays cannot be concatenated")
        run = _concatenate_runner(item.ndim)
    return run


@overload(np.stack)
def _ov_stack(arrays, axis=0):
    fname = "np.stack"
    if isinstance(arrays, (types.List, types.ListType)) and isinstance(arrays.dtype, (types.Number, types.Boolean)):
        axis_kind(axis, fname, allow_tuple=False)

        dtype = as_dtype(arrays.dtype)

        def numbers(arrays, axis=0):  # (numbers: 0-d arrays, stacked along the one axis there is)
            if norm_axis(axis, 1) != 0:
                raise ValueError("np.stack: axis is out of bounds for 0-d arrays")
            out = np.empty(len(arrays), dtype)
            for i in range(len(arrays)):
                out[i] = arrays[i]
            return out

        return numbers
    item = _require_list(arrays, fname)
    axis_kind(axis, fname, allow_tuple=False)
    return _stack_runner(item.ndim)


@overload(np.hstack)
def _ov_hstack(tup):
    item = _require_list(tup, "np.hstack")
    if item.ndim == 0:
        stack = _stack_runner(0)
        return lambda tup: stack(tup, 0)
    concatenate = _concatenate_runner(item.ndim)
    axis = 0 if item.ndim == 1 else 1
    return lambda tup: concatenate(tup, axis)


def _mixed_arrays(seq: Any) -> int | None:
    """The length of a literal list or tuple of arrays of different dimensions ([x, m] with a vector
    and a matrix: Numba types it LiteralList), else None."""
    if isinstance(seq, (types.LiteralList, types.BaseTuple)) and not isinstance(seq, types.UniTuple):
        items = list(seq.types)
        if items and all(isinstance(t, types.Array) for t in items) and len({t.ndim for t in items}) > 1:
            return len(items)
    return None


@functools.cache
def _join_items(n: int, call: str, each: str) -> Callable:
    """``run(tup)``: ``call`` of the tuple of ``each(tup[i])``, written out for ``n`` items."""
    items = "".join(f"{each}(tup[{i}]), " for i in range(n))
    source = f"def run(tup):\n    return {call.format(items=items)}\n"
    env = {"np": np, "same": _same_array, "rows": np.atleast_2d}
    return register_jitable(_compile_source(source, "run", env))


@register_jitable
def _same_array(x):
    return x


@overload(np.column_stack)
def _ov_column_stack(tup):
    """A literal list of vectors and matrices ([x, m]): Numba's np.column_stack takes a tuple."""
    n = _mixed_arrays(tup)
    if n is None or not isinstance(tup, types.LiteralList):
        return None
    return _join_items(n, "np.column_stack(({items}))", "same")


@overload(np.vstack)
def _ov_vstack(tup):
    n = _mixed_arrays(tup)
    if n is not None:  # vectors and matrices: each vector a row
        if any(t.ndim > 2 for t in tup.types):
            raise TypingError("np.vstack: vectors beside arrays of more than 2 dimensions")
        return _join_items(n, "np.concatenate(({items}), 0)", "rows")
    item = _require_list(tup, "np.vstack", min_ndim=1)
    if item.ndim == 1:
        stack = _stack_runner(1)
        return lambda tup: stack(tup, 0)
    concatenate = _concatenate_runner(item.ndim)
    return lambda tup: concatenate(tup, 0)


@overload(np.array)
def _ov_array_of_list(object, dtype=None):
    if isinstance(object, types.Array):  # np.array(x) of an array: a copy, as in NumPy
        if is_none(dtype):
            return lambda object, dtype=None: object.copy()
        scalar = _dtype_arg(dtype, "np.array").type
        return lambda object, dtype=None: object.astype(scalar)
    item = _list_item(object)
    if item is None:
        return None  # everything else is Numba's own np.array
    stack = _stack_runner(item.ndim)
    if is_none(dtype):
        return lambda object, dtype=None: stack(object, 0)
    scalar = _dtype_arg(dtype, "np.array").type
    return lambda object, dtype=None: stack(object, 0).astype(scalar)


# --- np.linalg on stacks of matrices: Numba's takes one matrix; these loop over a stack ---


def _require_stack(a: Any, fname: str) -> bool:
    """Whether ``a`` is a stack of float matrices (else None is returned: Numba's own, or its error)."""
    return isinstance(a, types.Array) and a.ndim > 2 and isinstance(a.dtype, types.Float)


@register_jitable
def _matrices(a):
    """A stack ``(..., m, n)`` as a C array ``(k, m, n)``."""
    m, n = a.shape[-2], a.shape[-1]
    k = 1
    for i in range(a.ndim - 2):
        k *= a.shape[i]
    return np.ascontiguousarray(a).reshape((k, m, n))


def _each_matrix(fn):
    """An impl applying ``fn`` (matrix -> matrix of the same shape) to every matrix of a stack."""

    def impl(a):
        a3 = _matrices(a)
        out = np.empty(a3.shape, a3.dtype)
        for i in range(a3.shape[0]):
            out[i] = fn(a3[i])
        return out.reshape(a.shape)

    return impl


@overload(np.linalg.inv)
def _ov_inv_stack(a):
    if not _require_stack(a, "np.linalg.inv"):
        return None
    return _each_matrix(np.linalg.inv)


@overload(np.linalg.det)
def _ov_det_stack(a):
    if not _require_stack(a, "np.linalg.det"):
        return None

    def impl(a):
        a3 = _matrices(a)
        out = np.empty(a3.shape[0], a3.dtype)
        for i in range(a3.shape[0]):
            out[i] = np.linalg.det(a3[i])
        return out.reshape(a.shape[:-2])

    return impl


@overload(np.linalg.slogdet)
def _ov_slogdet_stack(a):
    if not _require_stack(a, "np.linalg.slogdet"):
        return None

    def impl(a):
        a3 = _matrices(a)
        sign = np.empty(a3.shape[0], a3.dtype)
        logdet = np.empty(a3.shape[0], a3.dtype)
        for i in range(a3.shape[0]):
            sign[i], logdet[i] = np.linalg.slogdet(a3[i])
        return sign.reshape(a.shape[:-2]), logdet.reshape(a.shape[:-2])

    return impl


@overload(np.linalg.solve)
def _ov_solve_stack(a, b):
    if not _require_stack(a, "np.linalg.solve"):
        return None
    if not (isinstance(b, types.Array) and isinstance(b.dtype, types.Float)):
        raise TypingError(f"np.linalg.solve: b must be a float array, got {b}")
    if b.ndim in (1, 2):  # one vector or one matrix for every matrix of a

        def shared(a, b):
            a3 = _matrices(a)
            first = np.linalg.solve(a3[0], b)
            out = np.empty((a3.shape[0],) + first.shape, first.dtype)
            out[0] = first
            for i in range(1, a3.shape[0]):
                out[i] = np.linalg.solve(a3[i], b)
            return out.reshape(a.shape[:-2] + first.shape)

        return shared
    if b.ndim == a.ndim:  # a stack of matrices b, one per matrix of a
        dt = np.result_type(as_dtype(a.dtype), as_dtype(b.dtype))

        def stacked(a, b):
            if a.shape[:-2] != b.shape[:-2]:
                raise ValueError("np.linalg.solve: under jit, a stack b must have a's leading shape")
            a3, b3 = _matrices(a), _matrices(b)
            out = np.empty(b3.shape, dt)
            for i in range(a3.shape[0]):
                out[i] = np.linalg.solve(a3[i], b3[i])
            return out.reshape(b.shape)

        return stacked
    raise TypingError(f"np.linalg.solve: under jit, b must be a vector, a matrix or a stack like a, got {b}")


# --- linear algebra (issue 20) ---


@register_jitable
def _matrix_power_of(a, n):
    """NumPy's matrix power of one float matrix as a C array (Numba's own is typed as optional,
    which the adjoint helpers reading it cannot take): the same products in the same order."""
    a = np.ascontiguousarray(a)
    m = a.shape[-1]
    if a.shape[-2] != m:
        raise ValueError("input must be a square array")
    if n == 0:
        out = np.zeros((m, m), a.dtype)
        for k in range(m):
            out[k, k] = 1.0
        return out
    base = np.linalg.inv(a) if n < 0 else a
    e = -n if n < 0 else n
    if e == 1:
        return base.copy()
    if e == 2:
        return np.dot(base, base)
    if e == 3:
        return np.dot(np.dot(base, base), base)
    z = base
    result = base
    first = True
    while e > 0:
        bit = e & 1
        e = e >> 1
        if bit:
            if first:
                result = z
                first = False
            else:
                result = np.dot(result, z)
        if e > 0:
            z = np.dot(z, z)
    return np.ascontiguousarray(result)


@overload(np.linalg.matrix_power, target="cpu")
def _ov_matrix_power(a, n):
    """One matrix or a stack of them (float), with an int power. Registered for the CPU target,
    not Numba's generic one, so that it comes before Numba's own (typed optional) whichever
    was imported first: Numba tries a target's own templates before generic ones. (By
    registration order alone, a process that compiled np.linalg before importing this module
    got Numba's, and the adjoint helpers reading the result refused an optional.)"""
    if not (isinstance(a, types.Array) and a.ndim >= 2 and isinstance(a.dtype, types.Float) and isinstance(n, types.Integer)):
        return None
    if a.ndim == 2:
        return lambda a, n: _matrix_power_of(a, n)

    def impl(a, n):
        a3 = _matrices(a)
        out = np.empty(a3.shape, a3.dtype)
        for i in range(a3.shape[0]):
            out[i] = _matrix_power_of(a3[i], n)
        return out.reshape(a.shape)

    return impl


# --- ufunc.at: unbuffered in-place ufunc at indices (repeated indices accumulate) ---


@register_jitable
def _wrap_index(i, n):
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("index out of bounds in ufunc.at")
    return j


def _index_parts(indices: Any, fname: str) -> list[types.Type]:
    parts = list(indices.types) if isinstance(indices, types.BaseTuple) else [indices]
    for part in parts:
        ok = isinstance(part, types.Integer) or (
            isinstance(part, types.Array) and isinstance(part.dtype, types.Integer)
        )
        if not ok:
            raise TypingError(f"{fname}: indices must be ints, integer arrays or a tuple of them, got {indices}")
    return parts


@functools.cache
def _ufunc_at_impl(
    ufunc: np.ufunc, index_is_array: tuple[bool, ...], is_tuple: bool, a_ndim: int, scalar_b: bool
) -> Callable:
    """Generated implementation of ufunc.at(a, indices, b) for one kind of call.

    The index arrays are flattened and b is broadcast to ``indices.shape + a.shape[k:]``
    (k = number of indices); then every index, repeats included, applies the ufunc in
    place, elementwise over the remaining axes.
    """
    k = len(index_is_array)
    rest = a_ndim - k
    src = [f"indices[{i}]" if is_tuple else "indices" for i in range(k)]
    ref = index_is_array.index(True) if any(index_is_array) else None
    lines = ["def impl(self, a, indices, b):"]
    for i in range(k):
        lines.append(f"    idx{i} = np.ravel({src[i]})" if index_is_array[i] else f"    idx{i} = {src[i]}")
    if ref is None:
        lines.append("    count = 1")
        target = f"a.shape[{k}:]"
    else:
        lines.append(f"    count = idx{ref}.size")
        for i in range(k):
            if index_is_array[i] and i != ref:
                lines.append(f"    if {src[i]}.shape != {src[ref]}.shape:")
                lines.append("        raise ValueError('ufunc.at: index arrays must have the same shape')")
        target = f"{src[ref]}.shape + a.shape[{k}:]"
    if not scalar_b:
        lines.append(f"    vals = np.ascontiguousarray(np.broadcast_to(b, {target})).reshape((count,) + a.shape[{k}:])")
    lines.append("    for p in range(count):")
    for i in range(k):
        elem = f"idx{i}[p]" if index_is_array[i] else f"idx{i}"
        lines.append(f"        j{i} = _wrap_index({elem}, a.shape[{i}])")
    indent = "        "
    for r in range(rest):
        lines.append(f"{indent}for q{r} in range(a.shape[{k + r}]):")
        indent += "    "
    where = ", ".join([f"j{i}" for i in range(k)] + [f"q{r}" for r in range(rest)])
    value = "b" if scalar_b else f"vals[{', '.join(['p'] + [f'q{r}' for r in range(rest)])}]"
    lines.append(f"{indent}a[{where}] = op(a[{where}], {value})")
    source = "\n".join(lines) + "\n"
    return _compile_source(source, "impl", {"np": np, "op": ufunc, "_wrap_index": _wrap_index})


def _register_ufunc_at(ufunc: np.ufunc) -> None:
    # A ufunc's Numba type is an instance (Function(<ufunc 'add'>)): methods are keyed on it.
    typing_context = cpu_target.typing_context
    typing_context.refresh()  # installs Numba's ufunc typing if nothing has compiled yet
    fnty = typing_context.resolve_value_type(ufunc)
    fname = f"np.{ufunc.__name__}.at"

    @overload_method(fnty, "at")
    def _ov_at(self, a, indices, b):
        _require_array(a, fname, 1)
        parts = _index_parts(indices, fname)
        if len(parts) > a.ndim:
            raise TypingError(f"{fname}: too many indices for a {a.ndim}-d array")
        if isinstance(b, (types.Number, types.Boolean)):
            scalar_b = True
        elif isinstance(b, types.Array):
            scalar_b = False
        else:
            raise TypingError(f"{fname}: b must be a number or an array, got {b}")
        index_is_array = tuple(isinstance(part, types.Array) for part in parts)
        return _ufunc_at_impl(ufunc, index_is_array, isinstance(indices, types.BaseTuple), a.ndim, scalar_b)


for _ufunc in (np.add, np.subtract, np.multiply, np.maximum, np.minimum):
    _register_ufunc_at(_ufunc)


# --- np.linalg.cholesky on stacks of matrices ---


@overload(np.linalg.cholesky)
def _ov_cholesky_stack(a):
    if not _require_stack(a, "np.linalg.cholesky"):
        return None
    return _each_matrix(np.linalg.cholesky)


# --- np.dot with a number, or with operands of 3 or more dimensions ---


@overload(np.dot)
def _ov_dot_more(a, b):
    """``np.dot`` where Numba's stops: a number operand (a product in the operands' common
    dtype, the number taken as a 0-d array as NumPy does), or an operand of 3 or more
    dimensions (``dot(a, b)[i..., j..., m] = sum_n a[i..., n] b[j..., n, m]``)."""
    fname = "np.dot"
    a_num, b_num = isinstance(a, (types.Number, types.Boolean)), isinstance(b, (types.Number, types.Boolean))
    if a_num or b_num:
        if not (a_num or isinstance(a, types.Array)) or not (b_num or isinstance(b, types.Array)):
            return None
        dt = np.result_type(*[as_dtype(t.dtype if isinstance(t, types.Array) else t) for t in (a, b)])
        if dt.kind == "b":
            raise TypingError(f"{fname}: booleans only are not supported under jit, got {a} and {b}")
        scalar = dt.type
        if a_num and b_num:
            return lambda a, b: scalar(a) * scalar(b)
        if a_num:
            return lambda a, b: scalar(a) * b.astype(scalar)
        return lambda a, b: a.astype(scalar) * scalar(b)
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or max(a.ndim, b.ndim) < 3:
        return None
    if a.ndim == 0 or b.ndim == 0:
        return None
    _require_numeric(a, fname, allow_bool=False)
    _require_numeric(b, fname, allow_bool=False)
    dt = _result_dtype(a, b)
    if dt.kind not in "fc":
        raise TypingError(
            f"{fname}: operands of 3 or more dimensions must be float or complex under jit, got {a} and {b}"
        )
    scalar = dt.type
    na, nb = a.ndim, b.ndim
    out_nd = na - 1 + max(nb - 1, 0)

    def impl(a, b):
        n = a.shape[-1]
        if b.ndim == 1:
            m = 1
            if b.shape[0] != n:
                raise ValueError("shapes not aligned")
            b3 = np.ascontiguousarray(b).astype(scalar).reshape((1, n, 1))
        else:
            m = b.shape[-1]
            if b.shape[-2] != n:
                raise ValueError("shapes not aligned")
            b3 = _matrices(b).astype(scalar)
        a2 = np.ascontiguousarray(a).astype(scalar).reshape((_prod_range(a.shape, 0, na - 1), n))
        out = np.empty((a2.shape[0], b3.shape[0], m), scalar)
        for j in range(b3.shape[0]):
            out[:, j, :] = np.dot(a2, b3[j])
        shape = np.empty(out_nd, np.intp)
        for d in range(na - 1):
            shape[d] = a.shape[d]
        for d in range(nb - 1):
            shape[na - 1 + d] = b.shape[d] if d < nb - 2 else b.shape[nb - 1]
        return out.reshape(to_fixed_tuple(shape, out_nd))

    return impl


# --- along one axis: repeat, diff, roll with axis= (Numba's take none); diagonal ---
# Each views its input as a C block (outer, n, inner) around the axis, as the reductions do.


@register_jitable
def _with_extent(shape, ax, n, ndim):
    """``shape`` with its axis ``ax`` of extent ``n``, as a tuple of ``ndim`` ints."""
    out = np.empty(ndim, np.intp)
    for d in range(ndim):
        out[d] = shape[d]
    out[ax] = n
    return to_fixed_tuple(out, ndim)


@register_jitable
def _repeat_count_int(repeats, n):
    if repeats < 0:
        raise ValueError("repeats may not contain negative values.")
    return np.full(n, repeats, np.intp)


@register_jitable
def _repeat_count_array(repeats, n):
    if repeats.size != n and repeats.size != 1:
        raise ValueError("operands could not be broadcast together")
    counts = np.empty(n, np.intp)
    for i in range(n):
        r = repeats[i] if repeats.size == n else repeats[0]
        if r < 0:
            raise ValueError("repeats may not contain negative values.")
        counts[i] = r
    return counts


@overload(np.repeat)
def _ov_repeat_axis(a, repeats, axis=None):
    fname = "np.repeat"
    if is_none(axis):
        return None  # Numba's own (a flat result)
    _require_array(a, fname, 1)
    axis_kind(axis, fname, allow_tuple=False)
    if isinstance(repeats, types.Integer):
        counts_of = _repeat_count_int
    elif isinstance(repeats, types.Array) and repeats.ndim <= 1 and isinstance(repeats.dtype, types.Integer):
        counts_of = _repeat_count_array
    else:
        raise TypingError(f"{fname}: repeats must be an int or a 1-D array of ints, got {repeats}")
    nd = a.ndim

    def impl(a, repeats, axis=None):
        ax = norm_axis(unliteral(axis), nd)
        a3 = _view3_axis(a, ax)
        counts = counts_of(repeats, a3.shape[1])
        out3 = np.empty((a3.shape[0], counts.sum(), a3.shape[2]), a.dtype)
        for p in range(a3.shape[0]):
            j = 0
            for i in range(a3.shape[1]):
                for _ in range(counts[i]):
                    out3[p, j, :] = a3[p, i, :]
                    j += 1
        return out3.reshape(_with_extent(a.shape, ax, out3.shape[1], nd))

    return impl


@register_jitable
def _diff_step(b3):
    """One difference along the middle axis of ``b3`` (wrapping as NumPy's integers do)."""
    length = max(b3.shape[1] - 1, 0)
    out = np.empty((b3.shape[0], length, b3.shape[2]), b3.dtype)
    for p in range(b3.shape[0]):
        for i in range(length):
            for q in range(b3.shape[2]):
                out[p, i, q] = b3[p, i + 1, q] - b3[p, i, q]
    return out


@register_jitable
def _diff_step_bool(b3):
    """``_diff_step`` of booleans: NumPy's ``not_equal``."""
    length = max(b3.shape[1] - 1, 0)
    out = np.empty((b3.shape[0], length, b3.shape[2]), b3.dtype)
    for p in range(b3.shape[0]):
        for i in range(length):
            for q in range(b3.shape[2]):
                out[p, i, q] = b3[p, i + 1, q] != b3[p, i, q]
    return out


@overload(np.diff)
def _ov_diff_axis(a, n=1, axis=-1, prepend=None, append=None):
    fname = "np.diff"
    if not (is_none(prepend) and is_none(append)):
        raise TypingError(f"{fname}: prepend= and append= are not supported under jit")
    _require_array(a, fname, 1)
    axis_kind(axis, fname, allow_tuple=False)
    if not isinstance(n, (int, types.Integer, types.Omitted)):
        raise TypingError(f"{fname}: n must be an int, got {n}")
    nd = a.ndim
    step = _diff_step_bool if isinstance(a.dtype, types.Boolean) else _diff_step

    def impl(a, n=1, axis=-1, prepend=None, append=None):
        if n < 0:
            raise ValueError("order must be non-negative")
        ax = norm_axis(unliteral(axis), nd)
        cur = _view3_axis(a, ax).copy()
        for _ in range(n):
            cur = step(cur)
        return cur.reshape(_with_extent(a.shape, ax, cur.shape[1], nd))

    return impl


@overload(np.roll)
def _ov_roll_axis(a, shift, axis=None):
    fname = "np.roll"
    if is_none(axis):
        return None  # Numba's own
    _require_array(a, fname, 1)
    axis_kind(axis, fname, allow_tuple=False)
    if not isinstance(shift, types.Integer):
        raise TypingError(f"{fname}: with an int axis, shift must be an int, got {shift}")
    nd = a.ndim

    def impl(a, shift, axis=None):
        ax = norm_axis(unliteral(axis), nd)
        a3 = _view3_axis(a, ax)
        out3 = np.empty(a3.shape, a.dtype)
        n = a3.shape[1]
        if n == 0:
            return out3.reshape(a.shape)
        s = shift % n
        for p in range(a3.shape[0]):
            for i in range(n):
                out3[p, (i + s) % n, :] = a3[p, i, :]
        return out3.reshape(a.shape)

    return impl


@overload(np.diagonal)
def _ov_diagonal(a, offset=0, axis1=0, axis2=1):
    """``np.diagonal`` as a new array (NumPy's is a read-only view): the other axes in order,
    then the diagonal."""
    fname = "np.diagonal"
    _require_array(a, fname, 2)
    for name, t in (("offset", offset), ("axis1", axis1), ("axis2", axis2)):
        if not isinstance(t, (int, types.Integer, types.Omitted)):
            raise TypingError(f"{fname}: {name} must be an int, got {t}")
    nd = a.ndim
    out_nd = nd - 1

    def impl(a, offset=0, axis1=0, axis2=1):
        ax1, ax2 = norm_axis(axis1, nd), norm_axis(axis2, nd)
        if ax1 == ax2:
            raise ValueError("axis1 and axis2 cannot be the same")
        perm = np.empty(nd, np.intp)
        j = 0
        for d in range(nd):
            if d != ax1 and d != ax2:
                perm[j] = d
                j += 1
        perm[nd - 2], perm[nd - 1] = ax1, ax2
        t = np.ascontiguousarray(a.transpose(to_fixed_tuple(perm, nd)))
        n1, n2 = a.shape[ax1], a.shape[ax2]
        rows = t.reshape((_prod_range(t.shape, 0, nd - 2), n1, n2))
        r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
        length = max(min(n1 - r0, n2 - c0), 0)
        out = np.empty((rows.shape[0], length), a.dtype)
        for k in range(rows.shape[0]):
            for i in range(length):
                out[k, i] = rows[k, r0 + i, c0 + i]
        shape = np.empty(out_nd, np.intp)
        for d in range(nd - 2):
            shape[d] = t.shape[d]
        shape[nd - 2] = length
        return out.reshape(to_fixed_tuple(shape, out_nd))

    return impl


# --- np.pad, mode 'constant' ---


def _pad_widths(pad_width: Any, fname: str) -> Callable:
    """Jitted (pad_width, ndim) -> (before, after) arrays for the forms NumPy takes: ``n``,
    ``(n,)``, ``(before, after)``, ``((before, after),)`` or one pair per axis."""
    if isinstance(pad_width, types.Integer):
        return register_jitable(lambda pw, nd: (np.full(nd, pw, np.intp), np.full(nd, pw, np.intp)))
    if is_int_tuple(pad_width) and len(pad_width.types) in (1, 2):
        last = len(pad_width.types) - 1
        return register_jitable(lambda pw, nd: (np.full(nd, pw[0], np.intp), np.full(nd, pw[last], np.intp)))
    if isinstance(pad_width, types.BaseTuple) and all(
        is_int_tuple(t) and len(t.types) in (1, 2) for t in pad_width.types
    ):
        sizes = [len(t.types) for t in pad_width.types]
        if len(set(sizes)) == 1:
            last = sizes[0] - 1
            count = len(sizes)

            def widths(pw, nd):
                if count != 1 and count != nd:
                    raise ValueError("np.pad: pad_width must have one pair, or one per axis")
                p = unliteral(pw)
                before, after = np.empty(nd, np.intp), np.empty(nd, np.intp)
                for d in range(nd):
                    k = d if count == nd else 0
                    before[d], after[d] = p[k][0], p[k][last]
                return before, after

            return register_jitable(widths)
    raise TypingError(f"{fname}: pad_width must be an int, a pair of ints or a tuple of pairs, got {pad_width}")


@overload(np.pad)
def _ov_pad(array, pad_width, mode="constant", constant_values=0):
    fname = "np.pad"
    _require_array(array, fname)
    if not (isinstance(mode, (str, types.Omitted)) or isinstance(mode, types.StringLiteral)):
        raise TypingError(f"{fname}: mode must be a constant string, got {mode}")
    mode_value = mode.value if isinstance(mode, types.Omitted) else getattr(mode, "literal_value", mode)
    if mode_value != "constant":
        raise TypingError(f"{fname}: only mode='constant' is supported under jit, got {mode_value!r}")
    if not isinstance(constant_values, (int, float, types.Number, types.Boolean, types.Omitted)):
        raise TypingError(f"{fname}: constant_values must be a number under jit, got {constant_values}")
    widths = _pad_widths(pad_width, fname)
    nd = array.ndim
    dt = as_dtype(array.dtype).type

    def impl(array, pad_width, mode="constant", constant_values=0):
        before, after = widths(pad_width, nd)
        shape = np.empty(nd, np.intp)
        for d in range(nd):
            if before[d] < 0 or after[d] < 0:
                raise ValueError("index can't contain negative values")
            shape[d] = array.shape[d] + before[d] + after[d]
        out = np.full(to_fixed_tuple(shape, nd), constant_values, dt)
        src = np.ascontiguousarray(array).reshape(array.size)
        flat = out.reshape(out.size)
        for k in range(array.size):
            rem = k
            offset = 0
            step = 1
            for d in range(nd - 1, -1, -1):
                i = rem % array.shape[d]
                rem //= array.shape[d]
                offset += (i + before[d]) * step
                step *= shape[d]
            flat[offset] = src[k]
        return out

    return impl


# --- np.atleast_1d/2d/3d of a number (Numba's take arrays) ---


def _register_atleast(fn: Callable, ndim: int) -> None:
    ones = (1,) * ndim

    @overload(fn)
    def _ov_atleast_scalar(*arys):
        if len(arys) == 1 and isinstance(arys[0], (types.Number, types.Boolean)):
            return lambda *arys: np.full(ones, arys[0])
        return None


for _fn, _nd in ((np.atleast_1d, 1), (np.atleast_2d, 2), (np.atleast_3d, 3)):
    _register_atleast(_fn, _nd)


# --- indexing with a list of ints (x[[0, 2]]): as with the same ints in an array ---


@overload(operator.getitem)
def _ov_getitem_list(a, index):
    if not isinstance(a, types.Array) or not isinstance(index, types.List):
        return None
    if not isinstance(index.dtype, (types.Integer, types.Boolean)):
        raise TypingError(f"array[list]: the list must hold ints or bools, got {index}")
    return lambda a, index: a[np.array(index)]


# --- np.gradient ---
# Central differences along each axis asked for (second-order accurate inside), one-sided
# differences of first or second order at the two ends, on the (outer, n, inner) block around
# the axis, as the reductions view it. An axis's spacing is a number (points that far apart) or
# the coordinates of its points (1-D, one per point): NumPy's formulas for uneven spacing, or
# those for even spacing when the coordinates are evenly spaced (as NumPy checks).
#
# Numba's overloads take no keyword-only parameters after ``*args`` (it folds them as if given
# last by position), so NumPy's ``*varargs`` are the parameters d0 ... d7 here: a call passes
# its spacings by position, ``axis=`` and ``edge_order=`` by name, as NumPy's signature requires.

_GRADIENT_SLOTS = 8
_GRADIENT_PARAMS = "f, " + "".join(f"d{k}=None, " for k in range(_GRADIENT_SLOTS)) + "axis=None, edge_order=1"
_GRADIENT_SHORT = (
    "Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required."
)


@register_jitable
def _gradient_edge_order(edge_order):
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")


@register_jitable
def _gradient_length(n, edge_order):
    # (an edge_order below 1 takes NumPy's second-order branch, which reads three points)
    if n < edge_order + 1 or (edge_order != 1 and n < 3):
        raise ValueError(_GRADIENT_SHORT)


@register_jitable
def _gradient_axes(axis, nd):
    """The axes of a tuple ``axis``, normalized, as an intp array (NumPy's normalize_axis_tuple)."""
    axes = unliteral(axis)
    out = np.empty(len(axes), np.intp)
    for j in range(len(axes)):
        out[j] = norm_axis(axes[j], nd)
        for k in range(j):
            if out[k] == out[j]:
                raise ValueError("repeated axis")
    return out


@functools.cache
def _gradient_divide(qt: np.dtype) -> Callable:
    """Jitted (num, den) -> num / den for a real ``den``, the quotient of dtype ``qt``. NumPy divides
    a complex number by a real one (made complex) as num * (1 / den)."""
    if qt.kind != "c":
        return register_jitable(lambda num, den: num / den)
    real = np.empty(0, qt).real.dtype.type
    return register_jitable(lambda num, den: num * (real(1.0) / real(den)))


@register_jitable
def _gradient_ends(out3, a3, c0, c1, c2, e0, e1, e2):
    """The second-order one-sided derivatives at both ends of the (outer, n, inner) block: c0 f0 + c1 f1 + c2 f2
    at the first point, e0 f[n-3] + e1 f[n-2] + e2 f[n-1] at the last."""
    outer, n, inner = a3.shape
    for p in range(outer):
        for q in range(inner):
            out3[p, 0, q] = c0 * a3[p, 0, q] + c1 * a3[p, 1, q] + c2 * a3[p, 2, q]
            out3[p, n - 1, q] = e0 * a3[p, n - 3, q] + e1 * a3[p, n - 2, q] + e2 * a3[p, n - 1, q]


@functools.cache
def _gradient_even(ct: np.dtype, dt: np.dtype) -> Callable:
    """Jitted (a, ax, dx, edge_order) -> the derivative of ``a`` along axis ``ax``, its points ``dx``
    apart, as an array of dtype ``dt``. The coefficients (2 dx, 1.5 / dx ...) are of dtype ``ct``,
    as in NumPy: the dtype of ``a``'s real part for a Python number ``dx`` (a weak scalar), wider
    where the spacing came from coordinates of a wider dtype."""
    cast = ct.type
    div = _gradient_divide(np.result_type(dt, ct))

    def run(a, ax, dx, edge_order):
        a3 = _view3_axis(a, ax)
        outer, n, inner = a3.shape
        _gradient_length(n, edge_order)
        out3 = np.empty((outer, n, inner), dt)
        h = cast(dx)
        h2 = cast(2.0 * dx)
        for p in range(outer):
            for i in range(1, n - 1):
                for q in range(inner):
                    out3[p, i, q] = div(a3[p, i + 1, q] - a3[p, i - 1, q], h2)
        if edge_order == 1:
            for p in range(outer):
                for q in range(inner):
                    out3[p, 0, q] = div(a3[p, 1, q] - a3[p, 0, q], h)
                    out3[p, n - 1, q] = div(a3[p, n - 1, q] - a3[p, n - 2, q], h)
        else:
            # f'(x0) ~ (-3 f0 + 4 f1 - f2) / (2 dx), and its mirror image at the far end
            c0, c1, c2 = cast(-1.5 / dx), cast(2.0 / dx), cast(-0.5 / dx)
            e0, e1, e2 = cast(0.5 / dx), cast(-2.0 / dx), cast(1.5 / dx)
            _gradient_ends(out3, a3, c0, c1, c2, e0, e1, e2)
        return out3.reshape(a.shape)

    return register_jitable(run)


@functools.cache
def _gradient_uneven(cd: np.dtype, ct: np.dtype, dt: np.dtype) -> Callable:
    """Jitted (a, ax, x, edge_order) -> the derivative of ``a`` along axis ``ax`` at the coordinates
    ``x`` (of dtype ``cd`` once integers are made float64), as an array of dtype ``dt``. With
    h1, h2 the steps before and after a point, the three-point (second-order) derivative is

        -h2 / (h1 (h1 + h2)) f[i-1] + (h2 - h1) / (h1 h2) f[i] + h1 / (h2 (h1 + h2)) f[i+1]

    inside, and at the ends the one-sided difference (edge_order 1) or the derivative of the
    parabola through the first (last) three points (edge_order 2)."""
    even = _gradient_even(ct, dt)
    div = _gradient_divide(np.result_type(dt, cd))
    kind = cd.type

    def run(a, ax, x, edge_order):
        n = a.shape[ax]
        if x.shape[0] != n:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        if n < 2:  # (NumPy reads the first step before it checks the length)
            raise IndexError("index 0 is out of bounds for axis 0 with size 0")
        _gradient_length(n, edge_order)
        xs = x.astype(kind)
        dx = np.empty(n - 1, kind)
        for i in range(n - 1):
            dx[i] = xs[i + 1] - xs[i]
        uniform = True
        for i in range(n - 1):
            if dx[i] != dx[0]:
                uniform = False
        if uniform:
            return even(a, ax, dx[0], edge_order)
        a3 = _view3_axis(a, ax)
        outer, inner = a3.shape[0], a3.shape[2]
        out3 = np.empty((outer, n, inner), dt)
        lo = np.empty(n, kind)
        mid = np.empty(n, kind)
        hi = np.empty(n, kind)
        for i in range(1, n - 1):
            h1, h2 = dx[i - 1], dx[i]
            lo[i] = -h2 / (h1 * (h1 + h2))
            mid[i] = (h2 - h1) / (h1 * h2)
            hi[i] = h1 / (h2 * (h1 + h2))
        for p in range(outer):
            for i in range(1, n - 1):
                for q in range(inner):
                    out3[p, i, q] = lo[i] * a3[p, i - 1, q] + mid[i] * a3[p, i, q] + hi[i] * a3[p, i + 1, q]
        if edge_order == 1:
            for p in range(outer):
                for q in range(inner):
                    out3[p, 0, q] = div(a3[p, 1, q] - a3[p, 0, q], dx[0])
                    out3[p, n - 1, q] = div(a3[p, n - 1, q] - a3[p, n - 2, q], dx[n - 2])
        else:
            h1, h2 = dx[0], dx[1]
            c0 = -(h1 + h1 + h2) / (h1 * (h1 + h2))
            c1 = (h1 + h2) / (h1 * h2)
            c2 = -h1 / (h2 * (h1 + h2))
            h1, h2 = dx[n - 3], dx[n - 2]
            e0 = h2 / (h1 * (h1 + h2))
            e1 = -(h1 + h2) / (h1 * h2)
            e2 = (h2 + h2 + h1) / (h2 * (h1 + h2))
            _gradient_ends(out3, a3, c0, c1, c2, e0, e1, e2)
        return out3.reshape(a.shape)

    return register_jitable(run)


def _gradient_spacing(t: Any, fname: str) -> np.dtype | None:
    """None for a number (an even spacing), else the dtype the coordinates ``t`` are used in."""
    if isinstance(t, (types.Integer, types.Float)):
        return None
    if isinstance(t, types.Array) and isinstance(t.dtype, (types.Integer, types.Float)):
        if t.ndim != 1:
            raise TypingError(f"{fname}: distances must be either scalars or 1d, got {t}")
        return np.dtype(np.float64) if isinstance(t.dtype, types.Integer) else as_dtype(t.dtype)
    raise TypingError(f"{fname}: a spacing must be a real number or a 1-D array of coordinates, got {t}")


@functools.cache
def _gradient_impl(nd: int, form: str, n_axes: int, spacings: tuple, dt: np.dtype, to_float: bool) -> Callable:
    """np.gradient for an array of ``nd`` dimensions, ``n_axes`` axes (``form``: 'none', 'int'
    or 'tuple'), and per differentiated axis its spacing (source text) and the dtype of its
    coordinates (None: a number)."""
    real = np.empty(0, dt).real.dtype  # (complex64's: float32)
    env: dict[str, Any] = {"np": np, "edge_check": _gradient_edge_order, "norm_axis": norm_axis, "axes_of": _gradient_axes}
    lines = [f"def impl({_GRADIENT_PARAMS}):", "    edge_check(edge_order)"]
    lines.append("    a = f.astype(np.float64)" if to_float else "    a = f")
    if form == "int":
        lines.append(f"    ax = norm_axis(axis, {nd})")
    elif form == "tuple":
        lines.append(f"    axes = axes_of(axis, {nd})")
    for j, (text, cd) in enumerate(spacings):
        ax = {"none": str(j), "int": "ax", "tuple": f"axes[{j}]"}[form]
        if cd is None:
            env[f"along{j}"] = _gradient_even(real, dt)
        else:
            env[f"along{j}"] = _gradient_uneven(cd, np.result_type(real, cd), dt)
        lines.append(f"    r{j} = along{j}(a, {ax}, {text}, edge_order)")
    if n_axes == 1:
        lines.append("    return r0")
    else:
        lines.append("    return (" + "".join(f"r{j}, " for j in range(n_axes)) + ")")
    return _compile_source("\n".join(lines) + "\n", "impl", env)


@overload(np.gradient)
def _ov_gradient(
    f, d0=None, d1=None, d2=None, d3=None, d4=None, d5=None, d6=None, d7=None, axis=None, edge_order=1
):
    fname = "np.gradient"
    _require_array(f, fname)
    if not isinstance(f.dtype, (types.Integer, types.Float, types.Complex)):
        raise TypingError(f"{fname}: unsupported dtype {f.dtype} (NumPy subtracts the values)")
    if not isinstance(edge_order, (int, float, types.Integer, types.Float, types.Boolean, types.Omitted)):
        raise TypingError(f"{fname}: edge_order must be 1 or 2, got {edge_order}")
    slots = [d0, d1, d2, d3, d4, d5, d6, d7]
    given = [not is_none(t) for t in slots]
    n = sum(given)
    if given != [True] * n + [False] * (_GRADIENT_SLOTS - n):
        raise TypingError(f"{fname}: the spacings are passed by position")
    form, n_axes = axis_kind(axis, fname)
    if form == "none":
        n_axes = f.ndim
    if n == 0:
        spacings = tuple(("1.0", None) for _ in range(n_axes))
    elif n == 1 and isinstance(slots[0], (types.Integer, types.Float)):
        spacings = tuple(("d0", None) for _ in range(n_axes))
    elif n == n_axes:
        spacings = tuple((f"d{j}", _gradient_spacing(slots[j], fname)) for j in range(n))
    else:
        raise TypingError(
            f"{fname}: invalid number of arguments: {n} spacings for {n_axes} axes (give none, one number, or one per axis)"
        )
    to_float = isinstance(f.dtype, types.Integer)
    dt = np.dtype(np.float64) if to_float else as_dtype(f.dtype)
    return _gradient_impl(f.ndim, form, n_axes, spacings, dt, to_float)


# --- np.select of choices of different shapes or numbers, or with an array default ---
# Numba's np.select takes lists of arrays of one type (a literal list of different ones, such as
# [x, 2.0] or [matrix, vector], is a LiteralList, which it refuses) and a number default. This
# one broadcasts conditions, choices and default together (NumPy's result shape), and its dtype
# is NumPy 2's result_type of the choices and the default (a number among them a weak Python
# scalar). The lists may be lists, literal lists or tuples: code is written for their length
# where one of them has a fixed length, else it loops.


@register_jitable
def _select_fold_shape(shape, s):
    """Broadcast the shape ``shape`` (an intp array of the result's ndim) with the tuple ``s``, in place."""
    nd, k = len(shape), len(s)
    for j in range(k):
        d = nd - k + j
        if shape[d] == 1:
            shape[d] = s[j]
        elif s[j] != 1 and s[j] != shape[d]:
            raise ValueError("shape mismatch: objects cannot be broadcast to a single shape")


@register_jitable
def _select_lengths(n_cond, n_choice):
    if n_cond != n_choice:
        raise ValueError("list of cases must be same length as list of conditions")
    if n_cond == 0:
        raise ValueError("select with an empty condition list is not possible")


@register_jitable
def _select_put_aa(out, cond, choice):
    cb = np.broadcast_to(cond, out.shape)
    xb = np.broadcast_to(choice, out.shape)
    for idx in np.ndindex(out.shape):
        if cb[idx]:
            out[idx] = xb[idx]


@register_jitable
def _select_put_an(out, cond, choice):
    cb = np.broadcast_to(cond, out.shape)
    for idx in np.ndindex(out.shape):
        if cb[idx]:
            out[idx] = choice


@register_jitable
def _select_put_na(out, cond, choice):
    if cond:
        xb = np.broadcast_to(choice, out.shape)
        for idx in np.ndindex(out.shape):
            out[idx] = xb[idx]


@register_jitable
def _select_put_nn(out, cond, choice):
    if cond:
        for idx in np.ndindex(out.shape):
            out[idx] = choice


_SELECT_PUT = {
    (True, True): _select_put_aa,
    (True, False): _select_put_an,
    (False, True): _select_put_na,
    (False, False): _select_put_nn,
}


def _select_items(seq: Any, what: str) -> tuple[list[types.Type], int | None]:
    """The item types of a list/literal list/tuple argument of np.select and its fixed length
    (None: a list, known when it runs)."""
    if isinstance(seq, (types.List, types.ListType)):
        return [seq.dtype], None
    if isinstance(seq, (types.LiteralList, types.BaseTuple)):
        return list(seq.types), len(seq.types)
    raise TypingError(f"np.select: {what} must be a list or a tuple, got {seq}")


def _select_weak(t: Any) -> Any:
    """What NumPy 2's result_type sees for a choice or the default: an array's dtype, a Python
    number (weak) for an int, float or complex, NumPy's bool for a bool."""
    if isinstance(t, types.Array):
        return as_dtype(t.dtype)
    if isinstance(t, types.Boolean):
        return np.dtype(np.bool_)
    if isinstance(t, types.Integer):
        return 0
    if isinstance(t, types.Float):
        return 0.0
    return 0j


@overload(np.select)
def _ov_select(condlist, choicelist, default=0):
    fname = "np.select"
    conds, n_cond = _select_items(condlist, "condlist")
    choices, n_choice = _select_items(choicelist, "choicelist")
    value = default.value if isinstance(default, types.Omitted) else default
    if isinstance(value, (bool, int, float, complex)):  # omitted: NumPy's default 0
        default_t: Any = types.unliteral(typeof(value))
    else:
        default_t = types.unliteral(default)
    for i, t in enumerate(conds):
        if not (isinstance(t, types.Boolean) or (isinstance(t, types.Array) and isinstance(t.dtype, types.Boolean))):
            raise TypingError(f"{fname}: invalid entry {i} in condlist: should be boolean ndarray, got {t}")
    for t in [*choices, default_t]:
        t = types.unliteral(t)
        ok = isinstance(t, (types.Number, types.Boolean)) or (
            isinstance(t, types.Array) and isinstance(t.dtype, (types.Number, types.Boolean))
        )
        if not ok:
            raise TypingError(f"{fname}: the choices and the default must be numbers or numeric arrays, got {t}")
    choices = [types.unliteral(t) for t in choices]
    dt = np.result_type(*[_select_weak(t) for t in [*choices, default_t]])
    nd = max([t.ndim for t in [*conds, *choices, default_t] if isinstance(t, types.Array)], default=0)
    env: dict[str, Any] = {
        "np": np, "dt": dt.type, "lengths": _select_lengths, "to_fixed_tuple": to_fixed_tuple,
        "fold": _select_fold_shape, "fill": _SELECT_PUT[False, isinstance(default_t, types.Array)],
    }

    def fold(t: Any, item: str, indent: str = "    ") -> list[str]:  # (a number has no axes)
        return [f"{indent}fold(shape, {item}.shape)"] if isinstance(t, types.Array) else []

    lines = [
        "def impl(condlist, choicelist, default=0):",
        "    lengths(len(condlist), len(choicelist))",
        f"    shape = np.ones({nd}, np.intp)",
    ]
    if n_cond is None and n_choice is None:  # two lists: a loop over them
        env["put"] = _SELECT_PUT[isinstance(conds[0], types.Array), isinstance(choices[0], types.Array)]
        lines += ["    for i in range(len(condlist)):"]
        lines += fold(conds[0], "condlist[i]", " " * 8) + fold(choices[0], "choicelist[i]", " " * 8) or ["        pass"]
    else:
        m = min(n for n in (n_cond, n_choice) if n is not None)
        for k in range(m):
            c_t = conds[k if n_cond is not None else 0]
            x_t = choices[k if n_choice is not None else 0]
            env[f"put{k}"] = _SELECT_PUT[isinstance(c_t, types.Array), isinstance(x_t, types.Array)]
            lines += fold(c_t, f"condlist[{k}]") + fold(x_t, f"choicelist[{k}]")
    lines += fold(default_t, "default")
    lines += [
        f"    out = np.empty(to_fixed_tuple(shape, {nd}), dt)",
        "    fill(out, True, default)",
    ]
    if n_cond is None and n_choice is None:
        lines += ["    for i in range(len(condlist) - 1, -1, -1):", "        put(out, condlist[i], choicelist[i])"]
    else:
        lines += [f"    put{k}(out, condlist[{k}], choicelist[{k}])" for k in range(m - 1, -1, -1)]
    lines.append("    return out")
    return _compile_source("\n".join(lines) + "\n", "impl", env)


# Last: importing numba.np.linalg registers Numba's own linalg and '@' implementations, which
# must come after this module's (Numba tries them in the order they were registered).
_refuse_string_orders()
