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
    if isinstance(out, (tuple, list)):
        raise TypeError(_seed_message(len(out), type(out).__name__))
    if np.ndim(out) != 0:
        raise TypeError(
            f"grad requires a scalar output, got an array of shape {np.shape(out)}; "
            "use vjp for non-scalar outputs, or reduce (e.g. with np.sum) first"
        )
    return np.ones_like(out, dtype=np.result_type(out, 1.0))[()] if isinstance(out, np.ndarray) else 1.0


def _seed_message(count: int, kind: str = "tuple") -> str:
    """What ``grad`` of a function that returns ``count`` values in a ``kind`` says."""
    return (
        f"grad requires a scalar output, got a {kind} of {count} values; return (output, aux) with "
        "has_aux=True, use vjp for several outputs, or reduce (e.g. with np.sum) first"
    )


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
    if isinstance(x, (list, tuple)):  # a display given to NumPy (np.sum([1.0, a * a])): one adjoint per entry
        whole = unbroadcast(g, np.asarray(x, dtype=float) if not _has_complex(x) else np.asarray(x))
        return tuple(unbroadcast(whole[i], v) for i, v in enumerate(x))
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


def empty_list_like(x):
    """An empty list, to hold the adjoints of the entries of list ``x`` (Numba types it after ``x``)."""
    return []


def add_list_adjoints(bar, contribution):
    """The adjoint of a list grown with ``append`` plus a contribution to it (``np.stack(out)``'s):
    a list, popped entry by entry in the backward sweep. An empty one is zero."""
    contribution = list(contribution)
    if not bar:
        return contribution
    if len(bar) != len(contribution):
        raise ValueError(f"adjoints of lists of {len(bar)} and {len(contribution)} entries do not add up")
    return [a + b for a, b in zip(bar, contribution)]


def _displayed(x):
    """A list or tuple given to NumPy in place of an array (``np.max([a, b])``), as the array NumPy makes."""
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def _has_complex(x) -> bool:
    return any(_has_complex(v) if isinstance(v, (list, tuple)) else np.iscomplexobj(v) for v in x)


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
    x = _displayed(x)
    if not isinstance(x, np.ndarray):
        return unbroadcast(g, x)
    hit = (x == _expand(ans, x, axis, keepdims)).astype(np.float64)
    count = np.sum(hit, axis=axis, keepdims=True) if axis is not None else np.sum(hit)
    return unbroadcast(hit * _expand(g, x, axis, keepdims) / count, x)


def prod_grad(g, x, ans, axis=None, keepdims=False):
    """Adjoint of prod: ``g * ans / x``, or the product of the others where ``x`` is zero."""
    x = _displayed(x)
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
    """Adjoint of ``x`` in ``np.dot(x, y)`` / ``x @ y``: numbers, vectors, matrices, and stacks of
    matrices as ``@`` broadcasts them (see :func:`_stacked_product`)."""
    if np.ndim(x) == 0:
        return unbroadcast(np.sum(g * y), x)
    if np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    if np.ndim(y) == 1:
        return unbroadcast(np.multiply.outer(g, y) if np.ndim(x) > 1 else g * y, x)
    if np.ndim(y) > 2:  # a stack of matrices y: x's rows (or x itself) times each y.T
        if np.ndim(x) == 1:
            return unbroadcast(np.sum(y * np.expand_dims(g, -2), axis=tuple(range(np.ndim(y) - 2)) + (-1,)), x)
        _stacked_product(g, x, y)
        return unbroadcast(np.asarray(g) @ np.swapaxes(y, -1, -2), x)
    if np.ndim(x) == 1:
        return unbroadcast(np.dot(y, g), x)
    return unbroadcast(np.dot(g, np.transpose(y)), x)


def _stacked_product(g, x, y) -> None:
    """Refuse what :func:`dot_grad_x` and :func:`dot_grad_y` cannot differentiate right.

    For a matrix (or stack) ``x`` and a stack of matrices ``y``, ``x @ y`` broadcasts the stacks
    (``(..., p, n) @ (..., n, m) -> (..., p, m)``) while ``np.dot`` puts x's axes first
    (``(p, n) . (s, n, m) -> (p, s, m)``); the helpers, given only the adjoint ``g``, follow ``@``
    and raise when ``g``'s shape says ``np.dot``, or fits both.
    """
    g_shape, xs, ys = np.shape(g), np.shape(x), np.shape(y)
    as_dot = xs[:-1] + ys[:-2] + ys[-1:]
    try:
        as_matmul = np.broadcast_shapes(xs[:-2], ys[:-2]) + (xs[-2], ys[-1])
    except ValueError:
        as_matmul = None
    if g_shape == as_matmul and g_shape != as_dot:
        return
    if g_shape == as_dot and g_shape != as_matmul:
        raise NotImplementedError(
            f"np.dot of arrays of shapes {xs} and {ys} is not differentiated (a second operand of 3 or more "
            "dimensions); write x @ y (np.matmul) or np.tensordot"
        )
    raise NotImplementedError(
        f"srctrans cannot tell np.dot from x @ y for arrays of shapes {xs} and {ys} (both give shape {g_shape}); "
        "write np.tensordot, or np.einsum, instead"
    )


def dot_grad_x_add(out, g, x, y):
    """``out + dot_grad_x(g, x, y)``, added into ``out`` in place when it is an array (the
    adjoint a loop's ``W @ h`` adds into, :meth:`Reverse._open_sinks`); returns ``out``."""
    if isinstance(out, np.ndarray):
        out += dot_grad_x(g, x, y)
        return out
    return out + dot_grad_x(g, x, y)


def dot_grad_y(g, x, y):
    """Adjoint of ``y`` in ``np.dot(x, y)`` / ``x @ y`` (operands as :func:`dot_grad_x` takes them)."""
    if np.ndim(y) == 0:
        return unbroadcast(np.sum(g * x), y)
    if np.ndim(x) == 0:
        return unbroadcast(g * x, y)
    if np.ndim(x) == 1:
        if np.ndim(y) == 1:
            return unbroadcast(g * x, y)
        return unbroadcast(np.reshape(x, (-1, 1)) * np.expand_dims(g, -2), y)
    if np.ndim(y) > 2:  # a stack of matrices y: each x.T times its part of g
        _stacked_product(g, x, y)
        return unbroadcast(np.swapaxes(x, -1, -2) @ np.asarray(g), y)
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
    out = zeros_like(_indexable(x))
    np.add.at(out, index, g)
    return out


def _indexable(x):
    """``x``, an array whose elements' adjoints can be added up; a tuple or list is refused."""
    if isinstance(x, (tuple, list)):
        raise TypeError(
            "srctrans: indexing a tuple or list of differentiated values is differentiated where the "
            "index is a number written out (t[0], t[-1]) and t is read only so; here it is not: "
            "unpack it instead (a, b = t)"
        )
    return x


def getitem_grad_add(out, g, index):
    """``out += getitem_grad(g, x, index)`` in place, for an ``out`` shaped as ``x``: a loop's
    reads ``x[i]`` add their adjoints into rows of one array (repeated indices add up)."""
    np.add.at(_indexable(out), index, g)


def refuse_view_update(value, base, name: str, op: str, base_name: str, file: str, line: int) -> None:
    """Before ``name op= ...`` in generated code, where ``name = base[i]`` may be a view: raise
    :class:`~srctrans.errors.ViewUpdateError` when ``value`` shares memory with ``base``. The
    transformed line makes a new array (``name = name + ...``), so ``base`` would not change."""
    if isinstance(value, np.ndarray) and value.ndim > 0 and np.may_share_memory(value, base):
        from .errors import ViewUpdateError

        raise ViewUpdateError(name, op, base_name, file, line)


def _unique_rows(index, what: str) -> None:
    """Refuse an index array that repeats an entry (which write wins is not differentiable)."""
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu" and np.unique(index).size != index.size:
        raise ValueError(f"srctrans: {what} through an index array with repeated entries is not supported")


def at_set(x, index, v):
    """``x.at[index].set(v)``, as in JAX: a copy of ``x`` with ``v`` written at ``index``."""
    _unique_rows(index, ".at[index].set")
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
    _unique_rows(index, ".at[index].multiply")
    out = np.copy(x)
    out[index] = out[index] * v
    return out


def tape(v, n):
    """Room for ``n`` saved values like ``v``, filled by index (``t[trip] = v``) in a loop that runs ``n`` times.

    Here a list of ``n`` places, which holds values of any type and shape; compiled, numbers
    go into one array of ``v``'s type (``v`` is the value the first trip saves).
    """
    return [v] * n


def snapshot(v):
    """A copy of ``v`` as it is now (a view changes when its array is written); numbers as they are."""
    return v.copy() if isinstance(v, np.ndarray) else v


def setitem_grad(g, index, v):
    """Adjoint of ``v`` in ``y[index] = v``, taken out of ``g`` (the adjoint of ``y``).

    The written elements of ``y`` no longer reach the output, so their part of ``g`` moves
    to ``v`` (summed down to ``v``'s shape) and ``g[index]`` becomes zero, in place.
    """
    _unique_rows(index, "a differentiated write")
    taken = np.array(g[index], copy=True)
    g[index] = 0.0
    return unbroadcast(taken, v)


def slogdet_grad(g, x):
    """Adjoint of ``x`` in ``sign, logdet = np.linalg.slogdet(x)``: ``g`` is the pair of their adjoints.

    ``logdet``'s adjoint times ``inv(x).T``, matrix by matrix for a stack of matrices.
    """
    return scale_matrices(g[1], matrix_transpose(np.linalg.inv(x)))


def split_grad(g, axis=0):
    """Adjoint of ``x`` in ``np.split(x, ...)``: the pieces' adjoints ``g``, put back together."""
    return np.concatenate([np.asarray(piece, dtype=np.result_type(piece, 1.0)) for piece in g], axis=axis)


def xlogy(a, b):
    """``a * log(b)``, zero where ``a`` is zero (the power rule's exponent partial)."""
    return np.where(np.asarray(a) == 0, 0.0, a * np.log(np.where(np.asarray(a) == 0, 1.0, b)))


def _mask_dtype(*values) -> np.dtype:
    """The dtype of a 0/1 mask (exact in any float type) multiplying adjoints of ``values``: their
    narrowest float, so that it never widens a float32 adjoint; float64 when none is a float."""
    floats = [d for d in (np.asarray(v).dtype for v in values if v is not None) if d.kind == "f"]
    return min(floats, key=lambda d: d.itemsize) if floats else np.dtype(np.float64)


def ge_mask(x, y):
    return np.asarray(np.asarray(x) >= np.asarray(y), dtype=_mask_dtype(x, y))


def le_mask(x, y):
    return np.asarray(np.asarray(x) <= np.asarray(y), dtype=_mask_dtype(x, y))


def inside_mask(x, lo, hi):
    """1 where ``lo <= x <= hi`` (np.clip passes ``x`` through), else 0."""
    x = np.asarray(x)
    inside = np.ones(x.shape, dtype=bool)
    if lo is not None:
        inside &= x >= lo
    if hi is not None:
        inside &= x <= hi
    return inside.astype(_mask_dtype(x))


def sinc_grad(x):
    px = np.pi * np.asarray(x, dtype=np.result_type(x, 1.0))
    safe = np.where(px == 0, 1.0, px)
    return np.where(px == 0, 0.0, (np.cos(safe) * safe - np.sin(safe)) / (safe * safe) * np.pi)


def digamma(x):
    from scipy.special import psi

    return psi(x)


# --- rules for the helpers themselves (second order) ---------------------------------
# The rules of srctrans/rules/runtime_helpers.py differentiate the helpers above (so that
# an adjoint file can be differentiated again); these are the helpers their templates call.


def ones_like(x):
    """Ones shaped like ``x`` (dtype as ``zeros_like``); a Python float for scalars."""
    if isinstance(x, np.ndarray):
        return np.ones(x.shape, dtype=_grad_dtype(x))
    return 1.0


def _linspace_shares(n, endpoint, at_stop):
    """How much each of the ``n`` points of ``np.linspace(start, stop, n, endpoint)`` moves with
    ``stop`` (``at_stop``) or with ``start``: ``i / div`` and ``1 - i / div``."""
    w = np.linspace(0.0, 1.0, n, endpoint=endpoint)
    return w if at_stop else 1.0 - w


def linspace_grad(g, x, endpoint=True, at_stop=False):
    """Adjoint of ``start`` (or of ``stop``, ``at_stop``) in ``np.linspace(start, stop, num, endpoint)``:
    ``g``'s points weighted by their shares of it, summed along the first axis."""
    g = np.asarray(g)
    shares = _linspace_shares(g.shape[0], endpoint, at_stop)
    return unbroadcast(np.tensordot(shares, g, axes=(0, 0)), x)


def linspace_spread(u, g, endpoint=True, at_stop=False):
    """``u`` spread over the points of a linspace shaped like ``g`` by their shares of ``start``
    (of ``stop``, ``at_stop``): the transpose of :func:`linspace_grad`, whose ``g`` it gives."""
    shares = _linspace_shares(np.shape(g)[0], endpoint, at_stop)
    return unbroadcast(np.reshape(shares, (-1,) + (1,) * (np.ndim(g) - 1)) * np.asarray(u), g)


def sum_to(h, g, axis=None, keepdims=False):
    """``h`` summed over ``axis`` into ``g``'s shape: the adjoint of ``g`` in ``sum_grad(g, x, axis, keepdims)``."""
    return unbroadcast(np.reshape(np.sum(h, axis=axis, keepdims=True), np.shape(g)), g)


def dot(x, y):
    """``np.dot(x, y)`` for the operands ``dot_grad_x``/``dot_grad_y`` take (the adjoint of their
    ``g``): ``x @ y`` where one is a stack of matrices, as those helpers read it."""
    if np.ndim(x) > 2 or np.ndim(y) > 2:
        if np.ndim(x) and np.ndim(y):
            return np.matmul(x, y)
    return np.dot(x, y)


def transpose(x, axes=None):
    """``np.transpose(x, axes)``, ``axes=()`` meaning reversed as in ``transpose_grad`` (its adjoint)."""
    if axes is None or len(axes) == 0:
        return np.transpose(x)
    return np.transpose(x, axes)


def prod_grad_grad(u, g, x, axis=None, keepdims=False):
    """``g`` times prod's Hessian at ``x`` applied to ``u``: the adjoint of ``x`` in ``prod_grad`` (exact at zeros)."""
    x = _displayed(x)
    if not isinstance(x, np.ndarray):
        return 0.0  # the product of one number is the number: no second derivative
    u, zero = np.asarray(u), x == 0
    xs = np.where(zero, 1, x)
    zeros = np.sum(zero, axis=axis, keepdims=True)
    q = np.prod(xs, axis=axis, keepdims=True)  # the product of the nonzero entries
    s = np.sum(np.where(zero, 0.0, u / xs), axis=axis, keepdims=True)
    u0 = np.sum(np.where(zero, u, 0.0), axis=axis, keepdims=True)  # u summed where x is zero
    # sum over i != k of u_i * (product of x_j, j != i, k), by how many zeros the group has
    h = np.where(
        zeros == 0,
        q / xs * (s - u / xs),
        np.where(zeros == 1, np.where(zero, q * s, q / xs * u0), np.where((zeros == 2) & zero, q * (u0 - u), 0.0)),
    )
    return unbroadcast(_expand(g, x, axis, keepdims) * h, x)


def sinc_grad2(x):
    """The second derivative of ``np.sinc`` (a series near 0, where the closed form cancels)."""
    p = np.pi * np.asarray(x, dtype=np.float64)
    small = np.abs(p) < 1e-2
    s = np.where(small, 1.0, p)
    closed = ((2.0 - s * s) * np.sin(s) - 2.0 * s * np.cos(s)) / (s * s * s)
    series = -1.0 / 3.0 + p * p * (1.0 / 10.0 - p * p / 168.0)
    return _in_dtype_of(np.where(small, series, closed) * (np.pi * np.pi), x)


def _in_dtype_of(out, x):
    """``out``, computed in float64, in ``x``'s float dtype (float32 stays float32)."""
    dtype = np.result_type(x, 1.0)
    return out.astype(dtype) if isinstance(out, np.ndarray) and out.dtype != dtype else out


def _special(name, *args):
    """``scipy.special.<name>(*args)`` in the dtype SciPy's ufunc gives (float32 for float32
    arguments and Python numbers, as the function it differentiates); a Python float for numbers."""
    import scipy.special

    out = getattr(scipy.special, name)(*args)
    return out if np.ndim(out) else float(out)


# Bessel functions of order v (any real v) and their exponentially scaled forms: the derivatives
# of scipy.special's j0, j1, jv, y0, ..., i0e, k1e are these functions at the neighbouring orders
def jv(v, x):
    return _special("jv", v, x)


def yv(v, x):
    return _special("yv", v, x)


def iv(v, x):
    return _special("iv", v, x)


def ive(v, x):
    """``iv(v, x) * exp(-|x|)``."""
    return _special("ive", v, x)


def kv(v, x):
    return _special("kv", v, x)


def kve(v, x):
    """``kv(v, x) * exp(x)``."""
    return _special("kve", v, x)


def yn(n, x):
    """``yv`` of an integer order (its own ufunc: float64 for float32 ``x``, as ``scipy.special.yn``)."""
    return _special("yn", n, x)


def gammaln(x):
    """``log |Gamma(x)|`` (the incomplete gamma and beta functions' densities are written with it)."""
    return _special("gammaln", x)


def erf(x):
    return _special("erf", x)


def expm(x):
    """The matrix exponential (scipy.linalg.expm) of a matrix or a stack of them; its derivatives
    are exponentials of block matrices (:func:`expm_block`), so every order has a rule."""
    import scipy.linalg

    return scipy.linalg.expm(x)


def solve_sylvester(a, b, q):
    """``X`` with ``a X + X b = q`` (scipy.linalg.solve_sylvester), for matrices or stacks of them
    (broadcast against each other). The derivatives of X are solutions of Sylvester equations
    again (its rule), and so are those of scipy.linalg.sqrtm."""
    import scipy.linalg

    a, b, q = np.asarray(a), np.asarray(b), np.asarray(q)
    if a.ndim == b.ndim == q.ndim == 2:
        return scipy.linalg.solve_sylvester(a, b, q)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    q = np.broadcast_to(q, batch + q.shape[-2:])
    out = np.empty(q.shape, dtype=np.result_type(a, b, q))
    for index in np.ndindex(*batch):
        out[index] = scipy.linalg.solve_sylvester(a[index], b[index], q[index])
    return out


def _lu_parts(a, ans, permute_l):
    """``p, l, u`` of ``scipy.linalg.lu(a, permute_l)`` = ``ans`` (square matrices only)."""
    a = np.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise NotImplementedError(
            f"scipy.linalg.lu is differentiated for square matrices only; this one has shape {a.shape}"
        )
    if not permute_l:
        return ans
    import scipy.linalg

    return scipy.linalg.lu(a)


def _right_solve(x, u):
    """``x @ inv(u)``."""
    return np.swapaxes(np.linalg.solve(np.swapaxes(u, -1, -2), np.swapaxes(x, -1, -2)), -1, -2)


def lu_jvp(t, a, ans, permute_l=False):
    """Tangent of ``scipy.linalg.lu(a, permute_l)`` along ``t``. With ``a = p l u`` and
    ``F = inv(l) p.T t inv(u)``, the unit lower ``l`` moves by ``l tril(F, -1)`` and ``u`` by
    ``triu(F) u``; the permutation does not move. No rule of its own: first order only."""
    p, low, u = _lu_parts(a, ans, permute_l)
    f = _right_solve(np.linalg.solve(low, np.swapaxes(p, -1, -2) @ t), u)
    l_dot, u_dot = low @ np.tril(f, -1), np.triu(f) @ u
    return (p @ l_dot, u_dot) if permute_l else (np.zeros_like(p), l_dot, u_dot)


def lu_grad(g, a, ans, permute_l=False):
    """Adjoint of ``a`` in ``scipy.linalg.lu(a, permute_l)``: ``g`` holds the adjoints of the
    results. The transpose of :func:`lu_jvp`: ``p inv(l).T M inv(u).T`` with
    ``M = tril(l.T gl, -1) + triu(gu u.T)``."""
    p, low, u = _lu_parts(a, ans, permute_l)
    gl, gu = (np.asarray(g[0]), np.asarray(g[1])) if permute_l else (np.asarray(g[1]), np.asarray(g[2]))
    if permute_l:
        gl = np.swapaxes(p, -1, -2) @ gl  # the adjoint of l in p @ l
    m = np.tril(np.swapaxes(low, -1, -2) @ gl, -1) + np.triu(gu @ np.swapaxes(u, -1, -2))
    return p @ _right_solve(np.linalg.solve(np.swapaxes(low, -1, -2), m), np.swapaxes(u, -1, -2))


# --- scipy.integrate.odeint: derivatives by sensitivity equations, integrated by odeint itself
# The derivative of the right-hand side comes from srctrans's own vjp and jvp of the user's
# function, which srctrans (the public API, a layer above this one) registers here on import.
TRANSFORMS: dict = {}


def _flat_args(args) -> tuple[np.ndarray, list]:
    """The extra arguments of the right-hand side as one float vector, and their shapes."""
    parts = [np.asarray(a, dtype=float) for a in args]
    return (np.concatenate([a.ravel() for a in parts]) if parts else np.zeros(0)), [a.shape for a in parts]


def _unflat_args(flat, shapes, like=None) -> tuple:
    """The extra arguments again from ``flat``: in float64 (the right-hand side is evaluated
    so, whatever the arguments' dtype: odeint integrates in float64), or in the dtypes of
    ``like`` (the adjoints returned)."""
    out, start = [], 0
    for k, shape in enumerate(shapes):
        size = int(np.prod(shape))
        piece = flat[start: start + size].reshape(shape)
        if like is not None:
            piece = piece.astype(np.result_type(np.asarray(like[k]).dtype, np.float32))
        out.append(piece if shape else piece[()])
        start += size
    return tuple(out)


def _odeint_options(full_output, options) -> dict:
    if full_output:
        raise NotImplementedError("scipy.integrate.odeint is differentiated without full_output=True")
    return {k: v for k, v in options.items() if v is not None}


def odeint_grad(g, func, y0, t_, args, ans, which, full_output=0, tfirst=False, **options):
    """Adjoint of y0 (``which`` 0), of the times (1) or of the tuple of extra arguments (2) in
    ``ans = scipy.integrate.odeint(func, y0, t_, args)``, by the adjoint equations integrated
    backwards from each time to the one before: ``lam' = -(df/dy).T lam`` and
    ``mu' = -(df/dargs).T lam`` beside the state itself, ``lam`` taking ``g`` at every time.
    The time ``t_[i]`` moves ``ans[i]`` by ``f(ans[i], t_[i])``; the first one moves the rest of
    the trajectory, by ``-f(y0, t_[0])`` seen through ``lam - g[0]`` there."""
    import scipy.integrate

    options = _odeint_options(full_output, options)
    vjp = TRANSFORMS["vjp"]
    times = np.asarray(t_, dtype=float)
    ys = np.asarray(ans, dtype=float)
    g = np.broadcast_to(np.asarray(g, dtype=float), ys.shape)
    args = tuple(args)
    flat, shapes = _flat_args(args)
    n = ys.shape[1]

    def rhs(y, s, a):  # in float64
        a = _unflat_args(_flat_args(a)[0], [np.shape(v) for v in a])
        return func(s, y, *a) if tfirst else func(y, s, *a)

    def augmented(z, s):
        y, lam = z[:n], z[n: 2 * n]
        a = _unflat_args(flat, shapes)
        dy, pull = vjp(func, *((s, y) if tfirst else (y, s)), *a)
        bars = pull(lam)
        y_bar = bars[1] if tfirst else bars[0]
        return np.concatenate([np.asarray(dy, dtype=float).ravel(), -np.asarray(y_bar, dtype=float).ravel(), -_flat_args(bars[2:])[0]])

    lam, mu = g[-1].copy(), np.zeros(flat.size)
    t_bar = np.zeros(times.shape)
    for i in range(len(times) - 1, 0, -1):
        t_bar[i] = np.dot(g[i], np.asarray(rhs(ys[i], times[i], args), dtype=float))
        z = scipy.integrate.odeint(augmented, np.concatenate([ys[i], lam, mu]), times[[i, i - 1]], **options)[1]
        lam, mu = z[n: 2 * n] + g[i - 1], z[2 * n:]
    # (the first row is y0 itself, whatever the first time: g[0] stays out)
    t_bar[0] = -np.dot(lam - g[0], np.asarray(rhs(ys[0], times[0], args), dtype=float))
    if which == 0:
        return lam.reshape(np.shape(y0)).astype(np.result_type(np.asarray(y0).dtype, np.float32))
    if which == 1:
        return t_bar.astype(np.result_type(np.asarray(t_).dtype, np.float32))
    return _unflat_args(mu, shapes, args)


def odeint_jvp(func, y0, t_, args, ans, y0_dot, t_dot, args_dot, full_output=0, tfirst=False, **options):
    """Tangent of ``ans = scipy.integrate.odeint(func, y0, t_, args)`` along the tangents of y0,
    of the times and of the extra arguments (None: zero), by the sensitivity equation
    ``s' = (df/dy) s + (df/dargs) args_dot`` from ``s(t0) = y0_dot - f(y0, t0) t_dot[0]``
    beside the state: ``ans_dot[i] = s(t_[i]) + f(ans[i], t_[i]) t_dot[i]``."""
    import scipy.integrate

    options = _odeint_options(full_output, options)
    jvp = TRANSFORMS["jvp"]
    times = np.asarray(t_, dtype=float)
    ys = np.asarray(ans, dtype=float)
    n = ys.shape[1]
    args = tuple(args)
    flat, shapes = _flat_args(args)
    flat_dot = np.zeros(flat.size) if args_dot is None else _flat_args(args_dot)[0]
    dt = np.zeros(times.shape) if t_dot is None else np.broadcast_to(np.asarray(t_dot, dtype=float), times.shape)

    def rhs(y, s, a):  # in float64
        a = _unflat_args(_flat_args(a)[0], [np.shape(v) for v in a])
        return func(s, y, *a) if tfirst else func(y, s, *a)

    def augmented(z, s):
        y, sens = z[:n], z[n:]
        a, a_dot = _unflat_args(flat, shapes), _unflat_args(flat_dot, shapes)
        primals, tangents = ((s, y), (0.0, sens)) if tfirst else ((y, s), (sens, 0.0))
        dy, dy_dot = jvp(func, (*primals, *a), (*tangents, *a_dot))
        return np.concatenate([np.asarray(dy, dtype=float).ravel(), np.asarray(dy_dot, dtype=float).ravel()])

    start = np.zeros(n) if y0_dot is None else np.asarray(y0_dot, dtype=float).ravel().copy()
    start = start - np.asarray(rhs(ys[0], times[0], args), dtype=float).ravel() * dt[0]
    sens = scipy.integrate.odeint(augmented, np.concatenate([ys[0], start]), times, **options)[:, n:]
    moved = np.stack([np.asarray(rhs(ys[i], times[i], args), dtype=float).ravel() for i in range(len(times))])
    out = sens + moved * dt[:, None]
    return out.astype(np.asarray(ans).dtype)


def zeta(x, q):
    """Hurwitz's zeta function ``sum over k >= 0 of (k + q) ** -x``."""
    return _special("zeta", x, q)


def hyp1f1(a, b, x):
    return _special("hyp1f1", a, b, x)


def hyp2f1(a, b, c, x):
    return _special("hyp2f1", a, b, c, x)


def multipolygamma(n, a, d):
    """The sum over ``j < d`` of ``polygamma(n, a - j / 2)``: ``n = 0`` is the derivative of
    ``scipy.special.multigammaln(a, d)``, each next ``n`` the derivative of the one before."""
    return sum(polygamma(n, np.asarray(a) - 0.5 * j) if np.ndim(a) else polygamma(n, a - 0.5 * j) for j in range(int(d)))


def trigamma(x):
    """``polygamma(1, x)``: the derivative of ``digamma``."""
    from scipy.special import polygamma

    return _in_dtype_of(polygamma(1, x), x)


def take_sorted(u, x, axis=-1):
    """``u``'s elements in the order that sorts ``x`` along ``axis``: the adjoint of ``g`` in ``sort_grad``."""
    if axis is None:
        return np.ravel(u)[np.argsort(np.ravel(x), kind="stable")]
    return np.take_along_axis(np.asarray(u), np.argsort(x, axis=axis, kind="stable"), axis)


# --- rules for shape and linear-algebra functions ------------------------------------
# Each returns the adjoint in its canonical form (see ``unbroadcast``); the ``*_grad`` of a
# function of a sequence of arrays (``stack_grad`` ...) returns a tuple, one adjoint per array.


def inner_grad_x(g, x, y):
    """Adjoint of ``x`` in ``np.inner(x, y)``: ``g`` contracted with ``y`` over y's leading axes."""
    if np.ndim(x) == 0:
        return unbroadcast(np.sum(g * y), x)
    if np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    n = np.shape(x)[-1]
    rows_x, rows_y = int(np.prod(np.shape(x)[:-1])), int(np.prod(np.shape(y)[:-1]))
    g2 = np.reshape(g, (rows_x, rows_y))
    return unbroadcast(np.reshape(g2 @ np.reshape(y, (rows_y, n)), np.shape(x)), x)


def inner_grad_y(g, x, y):
    """Adjoint of ``y`` in ``np.inner(x, y)``: ``g`` contracted with ``x`` over x's leading axes."""
    if np.ndim(y) == 0:
        return unbroadcast(np.sum(g * x), y)
    if np.ndim(x) == 0:
        return unbroadcast(g * x, y)
    n = np.shape(y)[-1]
    rows_x, rows_y = int(np.prod(np.shape(x)[:-1])), int(np.prod(np.shape(y)[:-1]))
    g2 = np.reshape(g, (rows_x, rows_y))
    return unbroadcast(np.reshape(g2.T @ np.reshape(x, (rows_x, n)), np.shape(y)), y)


def cumsum_grad(g, x, axis=None):
    """Adjoint of ``np.cumsum(x, axis)``: the cumulative sum of ``g`` taken from the end."""
    if axis is None:
        return unbroadcast(np.reshape(np.flip(np.cumsum(np.flip(np.ravel(g)))), np.shape(x)), x)
    return unbroadcast(np.flip(np.cumsum(np.flip(g, axis), axis), axis), x)


def _cumprod_grad_line(g, x, ans):
    """Adjoint of a 1-D ``np.cumprod``; exact where ``x`` holds zeros."""
    zeros = np.flatnonzero(x == 0)
    z = zeros[0] if zeros.size else len(x)  # the first zero: every product from there on is 0
    out = np.zeros(len(x), dtype=np.result_type(g, x, 1.0))
    tail = np.flip(np.cumsum(np.flip(g * ans)))  # sum over j >= i of g[j] * ans[j]
    out[:z] = tail[:z] / x[:z]
    if z < len(x):  # at the first zero: the products that leave it out
        skip = np.cumprod(np.where(np.arange(len(x)) == z, 1.0, x))
        out[z] = np.sum(g[z:] * skip[z:])
    return out


def cumprod_grad(g, x, ans, axis=None):
    """Adjoint of ``np.cumprod(x, axis)``, one line along ``axis`` at a time."""
    if axis is None:
        line = _cumprod_grad_line(np.ravel(g), np.ravel(x), np.ravel(ans))
        return unbroadcast(np.reshape(line, np.shape(x)), x)
    g, xs, ans = (np.moveaxis(np.asarray(a), axis, -1) for a in (g, x, ans))
    out = np.zeros(xs.shape, dtype=np.result_type(g, xs, 1.0))
    for i in np.ndindex(xs.shape[:-1]):
        out[i] = _cumprod_grad_line(g[i], xs[i], ans[i])
    return unbroadcast(np.moveaxis(out, -1, axis), x)


def _tensordot_axes(x, y, axes):
    """The summed axes of ``x`` and of ``y`` in ``np.tensordot(x, y, axes)``, as two lists."""
    nx, ny = np.ndim(x), np.ndim(y)
    if isinstance(axes, (int, np.integer)):
        return list(range(nx - axes, nx)), list(range(axes))
    ax, ay = ([a] if isinstance(a, (int, np.integer)) else list(a) for a in axes)
    return [a % nx for a in ax], [a % ny for a in ay]


def tensordot_grad_x(g, x, y, axes=2):
    """Adjoint of ``x`` in ``np.tensordot(x, y, axes)``: ``g`` contracted with y's free axes."""
    ax, ay = _tensordot_axes(x, y, axes)
    free_x = [i for i in range(np.ndim(x)) if i not in ax]
    free_y = [i for i in range(np.ndim(y)) if i not in ay]
    r = np.tensordot(g, y, axes=(list(range(len(free_x), np.ndim(g))), free_y))
    # r's axes: x's free axes, then x's summed axes in the order of y's matching (sorted) axes
    order = free_x + [ax[k] for k in np.argsort(ay)]
    return unbroadcast(np.transpose(r, np.argsort(order)), x)


def tensordot_grad_y(g, x, y, axes=2):
    """Adjoint of ``y`` in ``np.tensordot(x, y, axes)``: ``g`` contracted with x's free axes."""
    ax, ay = _tensordot_axes(x, y, axes)
    free_x = [i for i in range(np.ndim(x)) if i not in ax]
    free_y = [i for i in range(np.ndim(y)) if i not in ay]
    r = np.tensordot(x, g, axes=(free_x, list(range(len(free_x)))))
    # r's axes: y's summed axes in the order of x's matching (sorted) axes, then y's free axes
    order = [ay[k] for k in np.argsort(ax)] + free_y
    return unbroadcast(np.transpose(r, np.argsort(order)), y)


def _einsum_grad_plan(subscripts, n_operands, k):
    """``(spec, extras)`` for the adjoint of operand ``k`` of an einsum (no ``...``).

    The adjoint is ``np.einsum(spec, g, *other_operands, *made)``, where ``extras`` lists
    the arrays to make, ``("eye", p)`` or ``("ones", p)`` sized like axis ``p`` of operand
    ``k``: an identity puts ``g`` on the diagonal of a repeated subscript (``"ii->i"``), a
    vector of ones spreads it along a subscript that only operand ``k`` has (``"ij->i"``).
    """
    text = subscripts.replace(" ", "")
    if "." in text:
        raise NotImplementedError("einsum with '...' is not differentiated")
    lhs, arrow, out = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise ValueError(f"einsum: {subscripts!r} names {len(terms)} operands, {n_operands} were given")
    if not arrow:  # implicit output: the subscripts seen once, in alphabetical order
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    unused = iter(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in text)
    inputs, extras, target = [out, *(t for i, t in enumerate(terms) if i != k)], [], ""
    for p, c in enumerate(terms[k]):
        if c in target:  # a repeated subscript: a fresh one, tied to the first by an identity
            fresh = next(unused)
            inputs.append(c + fresh)
            extras.append(("eye", p))
            c = fresh
        target += c
    for p, c in enumerate(target):
        if not any(c in t for t in inputs):
            inputs.append(c)
            extras.append(("ones", p))
    return ",".join(inputs) + "->" + target, extras


def einsum_grad(g, subscripts, k, x, y=None, z=None):
    """Adjoint of operand ``k`` of ``np.einsum(subscripts, x[, y[, z]])``: an einsum of ``g`` and the others."""
    operands = [a for a in (x, y, z) if a is not None]
    spec, extras = _einsum_grad_plan(subscripts, len(operands), k)
    target = operands[k]
    made = [np.eye(np.shape(target)[p]) if kind == "eye" else np.ones(np.shape(target)[p]) for kind, p in extras]
    others = [a for i, a in enumerate(operands) if i != k]
    return unbroadcast(np.einsum(spec, g, *others, *made), target)


def diagonal_grad(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.diagonal(x, offset, axis1, axis2)``: ``g`` put on that diagonal of zeros."""
    out = zeros_like(x)
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))  # writes go to out
    i = np.arange(np.shape(g)[-1])
    view[..., i + max(-offset, 0), i + max(offset, 0)] = g
    return out


def trace_grad(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.trace(x, offset, axis1, axis2)``: each element of ``g`` along its diagonal of zeros
    (one matrix's trace, or one per matrix of a stack)."""
    diagonal = np.diagonal(x, offset, axis1, axis2)
    return diagonal_grad(np.broadcast_to(np.expand_dims(g, -1), diagonal.shape), x, offset, axis1, axis2)


def moveaxis_grad(g, x, source, destination):
    """Adjoint of ``np.moveaxis(x, source, destination)``: the axes of ``g`` moved back."""
    return unbroadcast(np.moveaxis(g, destination, source), x)


def flip_grad(g, x, axis=None):
    """Adjoint of ``np.flip(x, axis)``: ``g`` flipped back."""
    return unbroadcast(np.flip(g, axis), x)


def diff_grad(g, x, n=1, axis=-1):
    """Adjoint of ``np.diff(x, n, axis)``: ``y[j] = x[j + 1] - x[j]`` sends ``g[j]`` to
    ``x[j + 1]`` and ``-g[j]`` to ``x[j]``, ``n`` times over."""
    g = np.asarray(g, dtype=_grad_dtype(np.asarray(x)))
    for _ in range(n):
        edge = list(g.shape)
        edge[axis] = 1
        zero = np.zeros(edge, g.dtype)
        g = np.concatenate((zero, g), axis) - np.concatenate((g, zero), axis)
    return g


def roll_grad(g, x, shift, axis=None):
    """Adjoint of ``np.roll(x, shift, axis)``: ``g`` rolled back."""
    return unbroadcast(np.roll(g, np.negative(shift), axis), x)


def tile_grad(g, x, reps):
    """Adjoint of ``np.tile(x, reps)``: the tiles of ``g`` summed."""
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    d = max(np.ndim(x), len(reps))
    shape = (1,) * (d - np.ndim(x)) + np.shape(x)
    reps = (1,) * (d - len(reps)) + reps
    split = [n for pair in zip(reps, shape) for n in pair]  # (r0, s0, r1, s1, ...): tile, then place
    tiles = np.sum(np.reshape(g, split), axis=tuple(range(0, 2 * d, 2)))
    return unbroadcast(np.reshape(tiles, np.shape(x)), x)


def repeat_grad(g, x, repeats, axis=None):
    """Adjoint of ``np.repeat(x, repeats, axis)``: the copies of each element of ``g`` summed."""
    shape = (np.size(x),) if axis is None else np.shape(x)
    axis = 0 if axis is None else axis % len(shape)
    owner = np.repeat(np.arange(shape[axis]), repeats)  # the source of each copy
    out = np.zeros(shape, dtype=np.result_type(g, 1.0))
    np.add.at(np.moveaxis(out, axis, 0), owner, np.moveaxis(np.asarray(g), axis, 0))
    return unbroadcast(np.reshape(out, np.shape(x)), x)


def _constant_mode(mode) -> None:
    if not (isinstance(mode, str) and mode == "constant"):
        raise NotImplementedError(f"np.pad is differentiated in 'constant' mode only, not {mode!r}")


def pad_grad(g, x, pad_width, mode="constant"):
    """Adjoint of ``np.pad(x, pad_width)`` in constant mode: the part of ``g`` over ``x``."""
    _constant_mode(mode)
    before = np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (np.ndim(x), 2))[:, 0]
    inside = tuple(slice(b, b + n) for b, n in zip(before, np.shape(x)))
    return unbroadcast(np.asarray(g)[inside], x)


def pad_tangent(t, pad_width, mode="constant"):
    """Tangent of ``np.pad(x, pad_width, mode)`` along ``t`` in constant mode: ``t`` padded with zeros
    (the constant values do not move); the transpose of :func:`pad_grad`, which refuses the same modes."""
    _constant_mode(mode)
    return np.pad(t, pad_width)


def sort_grad(g, x, axis=-1):
    """Adjoint of ``np.sort(x, axis)``: each element of ``g`` sent back to where its value came from."""
    if axis is None:
        out = np.zeros(np.size(x), dtype=np.result_type(g, 1.0))
        out[np.argsort(np.ravel(x), kind="stable")] = np.ravel(g)
        return unbroadcast(np.reshape(out, np.shape(x)), x)
    out = np.zeros(np.shape(x), dtype=np.result_type(g, 1.0))
    np.put_along_axis(out, np.argsort(x, axis=axis, kind="stable"), g, axis)
    return unbroadcast(out, x)


def take_grad(g, x, indices, axis=None):
    """Adjoint of ``np.take(x, indices, axis)``: ``g`` added into zeros at ``indices`` (repeats add up)."""
    if axis is None:
        out = zeros_like(np.ravel(x))
        np.add.at(out, indices, g)
        return unbroadcast(np.reshape(out, np.shape(x)), x)
    out = zeros_like(x)
    np.add.at(out, (slice(None),) * (axis % np.ndim(x)) + (np.asarray(indices),), g)
    return out


def take_along_axis_grad(g, x, indices, axis=-1):
    """Adjoint of ``np.take_along_axis(x, indices, axis)``: ``g`` added into zeros at ``indices``."""
    if axis is None:
        return take_grad(g, x, indices, None)
    out = zeros_like(x)
    g = np.asarray(g)
    # the position in x of each element of g: its own index, but along axis the one in indices
    index = [i if np.shape(x)[d] != 1 else 0 * i for d, i in enumerate(np.indices(g.shape, sparse=True))]
    index[axis % np.ndim(x)] = np.asarray(indices)
    np.add.at(out, tuple(index), g)
    return out


def solve_grad_b(g, a, b):
    """Adjoint of ``b`` in ``np.linalg.solve(a, b)``: ``solve(a.T, g)``."""
    if np.ndim(b) == 1:  # b is one column
        return unbroadcast(np.linalg.solve(np.swapaxes(a, -1, -2), np.asarray(g)[..., None])[..., 0], b)
    return unbroadcast(np.linalg.solve(np.swapaxes(a, -1, -2), g), b)


def solve_grad_a(g, a, b, ans):
    """Adjoint of ``a`` in ``np.linalg.solve(a, b)``: ``-solve(a.T, g) @ ans.T``."""
    if np.ndim(b) == 1:
        gb = np.linalg.solve(np.swapaxes(a, -1, -2), np.asarray(g)[..., None])
        return unbroadcast(-gb * np.asarray(ans)[..., None, :], a)
    gb = np.linalg.solve(np.swapaxes(a, -1, -2), g)
    return unbroadcast(-(gb @ np.swapaxes(ans, -1, -2)), a)


def as_columns(v, b):
    """``v`` as a stack of columns where ``b`` is a vector (``v[..., None]``), else ``v`` itself: the
    right-hand sides ``np.linalg.solve(a, b)`` reads (NumPy 2 reads a vector ``b`` as one column, for
    every matrix of a stack ``a``). Its transpose is :func:`from_columns`."""
    return np.expand_dims(v, -1) if np.ndim(b) == 1 else v


def from_columns(m, b):
    """``m[..., 0]`` where ``b`` is a vector, else ``m``: the inverse and transpose of :func:`as_columns`."""
    return np.asarray(m)[..., 0] if np.ndim(b) == 1 else m


def scale_matrices(s, m):
    """Each matrix of ``m`` times its number in ``s`` (``s[..., None, None] * m``; ``s * m`` for one
    matrix): a determinant's adjoint. Its transpose in ``s`` is :func:`matrix_inner`."""
    if np.ndim(s) == 0:
        return s * m  # (a Python number stays weak: float32 matrices stay float32)
    return np.expand_dims(s, (-2, -1)) * m


def matrix_inner(a, b):
    """``np.sum(a * b)`` over the last two axes: ``trace(a.T @ b)`` for one pair of matrices, one
    number per pair for stacks."""
    return np.sum(np.asarray(a) * b, axis=(-2, -1))


def zeros_per_matrix(x):
    """Zeros shaped like ``x`` without its last two axes: 0.0 for a matrix (the tangent of a
    determinant's sign)."""
    if np.ndim(x) <= 2:
        return 0.0
    return np.zeros(np.shape(x)[:-2], dtype=_grad_dtype(np.asarray(x)))


def _lower_half_diagonal(m):
    """The lower triangle of ``m`` with its diagonal halved."""
    return np.tril(m) - 0.5 * m * np.eye(np.shape(m)[-1], dtype=np.result_type(m, 1.0))


def cholesky_grad(g, x, ans):
    """Adjoint of ``L = np.linalg.cholesky(x)``.

    NumPy reads only the lower triangle of ``x`` (the upper one is taken to mirror it), so
    the adjoint is lower-triangular: ``phi(S + S.T)`` with ``S = L^-T phi(L^T g) L^-1`` and
    ``phi`` the lower triangle with the diagonal halved.
    """
    lt = np.swapaxes(ans, -1, -2)
    s = np.linalg.solve(lt, _lower_half_diagonal(lt @ g))  # L^-T phi(L^T g)
    s = np.swapaxes(np.linalg.solve(lt, np.swapaxes(s, -1, -2)), -1, -2)  # ... L^-1
    return unbroadcast(_lower_half_diagonal(s + np.swapaxes(s, -1, -2)), x)


def norm_grad(g, x, ans, ord=None, axis=None, keepdims=False):
    """Adjoint of ``np.linalg.norm(x, ord, axis, keepdims)``: ``g * x / norm`` (0 where the norm is 0)
    for ``ord=None`` and ``'fro'``; for other orders ``g`` times the norm's derivative (see
    :func:`norm_weights`)."""
    if ord is None or (isinstance(ord, str) and ord == "fro"):
        norm = _expand(ans, x, axis, keepdims)
        return unbroadcast(_expand(g, x, axis, keepdims) * x / np.where(norm == 0, 1.0, norm), x)
    return unbroadcast(_expand(g, x, axis, keepdims) * norm_weights(x, ans, ord, axis, keepdims), x)


def logsumexp_grad(g, x, ans, axis=None, keepdims=False, b=None):
    """Adjoint of ``scipy.special.logsumexp(x, axis, keepdims=...)``: ``g`` times the softmax of ``x``."""
    if b is not None:
        raise NotImplementedError("logsumexp is differentiated without b= only")
    return unbroadcast(_expand(g, x, axis, keepdims) * np.exp(x - _expand(ans, x, axis, keepdims)), x)


def array_grad(g, x):
    """The adjoint of ``x`` in ``np.array(x)`` / ``np.asarray(x)``: ``g`` in ``x``'s shape and dtype
    for an array or a number, and for a list or tuple (``np.array([a, 2.0 * b])``) a tuple of the
    adjoints of its elements, the slices of ``g`` along its first axis (nested lists too)."""
    if isinstance(x, (list, tuple)):
        g = np.asarray(g)
        return tuple(array_grad(g[i], e) for i, e in enumerate(x))
    return unbroadcast(g, x)


def stack_grad(g, arrays, axis=0):
    """Adjoints of the ``arrays`` of ``np.stack(arrays, axis)``: the slices of ``g``, as a tuple."""
    return tuple(unbroadcast(np.take(g, i, axis=axis), a) for i, a in enumerate(arrays))


def concatenate_grad(g, arrays, axis=0):
    """Adjoints of the ``arrays`` of ``np.concatenate(arrays, axis)``: the pieces of ``g``, as a tuple."""
    if axis is None:
        g, axis, sizes = np.ravel(g), 0, [np.size(a) for a in arrays]
    else:
        sizes = [np.shape(a)[axis] for a in arrays]
    pieces = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return tuple(unbroadcast(np.reshape(p, np.shape(a)), a) for p, a in zip(pieces, arrays))


def hstack_grad(g, arrays):
    """Adjoints of the ``arrays`` of ``np.hstack(arrays)``, as a tuple."""
    axis = 0 if np.ndim(g) == 1 else 1
    pieces = concatenate_grad(g, [np.atleast_1d(a) for a in arrays], axis)
    return tuple(unbroadcast(np.reshape(p, np.shape(a)), a) for p, a in zip(pieces, arrays))


def vstack_grad(g, arrays):
    """Adjoints of the ``arrays`` of ``np.vstack(arrays)``, as a tuple."""
    pieces = concatenate_grad(g, [np.atleast_2d(a) for a in arrays], 0)
    return tuple(unbroadcast(np.reshape(p, np.shape(a)), a) for p, a in zip(pieces, arrays))


# --- batching ---------------------------------------------------------------------------------
# Helpers of vmap's generated files (srctrans.batching); the batch axis is axis 0.
# numba_backend/batching_overloads.py compiles the same meaning.


def batch_of(v, n):
    """``n`` copies of an unbatched value, stacked on a new axis 0 (an array of its own)."""
    v = np.asarray(v)
    return np.array(np.broadcast_to(v, (n,) + v.shape))


def batch_flatten(x):
    """A batch as ``(n, size of one example)``; an empty batch too."""
    x = np.asarray(x)
    return np.reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))))


def batch_example(x):
    """The first example of a batch, to size a loop's results; zeros shaped like one for an empty batch."""
    x = np.asarray(x)
    if x.shape[0] > 0:
        return x[0]
    return np.zeros(x.shape[1:], dtype=x.dtype)[()]


class BatchTuple(tuple):
    """The batched results of a per-example loop whose examples return tuples: one batch per
    element. ``batches[i] = example`` stores each element of ``example`` in its own batch."""

    def __setitem__(self, i, example) -> None:
        for batch, value in zip(self, example, strict=True):
            batch[i] = value


def plain_batches(out):
    """``out`` with every :class:`BatchTuple` made a plain tuple again (for the caller's pytree)."""
    if isinstance(out, tuple):
        return tuple(plain_batches(v) for v in out)
    return out


def batch_alloc(v, n):
    """Room for ``n`` results shaped like ``v``, the first one ``v`` (when ``n > 0``); a
    :class:`BatchTuple` of them for a tuple."""
    if isinstance(v, tuple):
        return BatchTuple(batch_alloc(e, n) for e in v)
    out = np.empty((n,) + np.shape(v), dtype=np.result_type(v))
    if n > 0:
        out[0] = v
    return out


class BatchTape(list):
    """:func:`tape` of a batched value: ``n`` places for saved batches, written ``t[:, trip] = v`` and
    read ``t[:, trip]`` as vmap's files index a batched array (batch axis first). Each place holds
    the batch it was given, as it is: a loop whose values change dtype or shape between trips
    (``s = 1`` then ``s = s * x``) reads back exactly what it saved."""

    def __setitem__(self, key, value):
        super().__setitem__(self._trip(key), value)

    def __getitem__(self, key):
        return super().__getitem__(self._trip(key))

    @staticmethod
    def _trip(key):
        if isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None):
            return key[1]
        raise IndexError(f"a batched tape is indexed [:, trip], got {key!r}")


def batch_tape(v, n):
    """:func:`tape` of a batched value (:class:`BatchTape`). Not compiled: a file that uses it runs
    vmap's compiled per-example loop under jit instead."""
    return BatchTape([v] * n)


def batch_unbroadcast(g, x):
    """``unbroadcast(g[i], x[i])`` for every example ``i``: both batched along axis 0."""
    return _batch_unbroadcast(np.asarray(g), np.shape(x)[1:], _grad_dtype(np.asarray(x)))


def batch_unbroadcast_to(g, x):
    """``unbroadcast(g[i], x)`` for every example ``i``: ``g`` batched along axis 0, ``x`` one
    example's operand, the same for all."""
    return _batch_unbroadcast(np.asarray(g), np.shape(x), _grad_dtype(np.asarray(x)))


def _batch_unbroadcast(g, shape, dtype):
    n, example = g.shape[0], g.shape[1:]
    if len(example) < len(shape):
        g = g.reshape((n,) + (1,) * (len(shape) - len(example)) + example)
    elif len(example) > len(shape):
        g = np.sum(g, axis=tuple(range(1, 1 + len(example) - len(shape))))
    axes = tuple(1 + i for i, size in enumerate(shape) if size == 1 and g.shape[1 + i] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return np.array(np.broadcast_to(g, (n,) + tuple(shape)), dtype=dtype, order="C")


def prange(*args):
    """``range``; a loop over it runs in parallel when Numba compiles the file with ``parallel=True``."""
    return range(*args)


# --- forward mode ----------------------------------------------------------------------
# Tangent rules' helpers; numba_backend/forward_overloads.py compiles the same meaning.


def cholesky_jvp(t, ans):
    """Tangent of ``L = np.linalg.cholesky(x)`` along ``t``: ``L phi(L^-1 T L^-T)``.

    NumPy reads only the lower triangle of ``x``, so ``T`` is ``t``'s lower triangle
    mirrored; ``phi`` takes the lower triangle with the diagonal halved.
    """
    t = np.tril(t) + np.swapaxes(np.tril(t, -1), -1, -2)
    s = np.linalg.solve(ans, t)  # L^-1 T
    s = np.swapaxes(np.linalg.solve(ans, np.swapaxes(s, -1, -2)), -1, -2)  # L^-1 T L^-T (T symmetric)
    return ans @ _lower_half_diagonal(s)


# --- higher derivatives -------------------------------------------------------------------
# Helpers of the rules that differentiate other helpers (third and higher derivatives of the
# user's function); numba_backend/runtime_overloads.py compiles the same meaning.


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)``: the ``n``-th derivative of ``digamma``."""
    from scipy.special import polygamma as _polygamma

    out = _polygamma(n, x)
    return _in_dtype_of(out, x) if np.ndim(out) else float(out)


def _sinc_derivative1(n, p):
    """The ``n``-th derivative of ``sin(p) / p`` at one float ``p``."""
    if abs(p) < n + 2.0:  # the Taylor series: sum over 2m >= n of (-1)^m p^(2m-n) / ((2m+1) (2m-n)!)
        total, m = 0.0, (n + 1) // 2
        term = 1.0  # p^(2m-n) / (2m-n)!
        if 2 * m - n == 1:
            term = p
        while True:
            add = (-1.0) ** m * term / (2 * m + 1)
            total += add
            if abs(term) < 1e-17 * max(abs(total), 1e-300) and 2 * m - n > abs(p):
                return total
            term *= p * p / ((2 * m - n + 1) * (2 * m - n + 2))
            m += 1
    # Leibniz: sum over k of C(n, k) sin^(n-k)(p) (1/p)^(k), with (1/p)^(k) = (-1)^k k! / p^(k+1)
    total, binom, fact = 0.0, 1.0, 1.0
    for k in range(n + 1):
        total += binom * np.sin(p + (n - k) * np.pi / 2) * (-1.0) ** k * fact / p ** (k + 1)
        binom = binom * (n - k) / (k + 1)
        fact *= k + 1
    return total


def sinc_derivative(n, x):
    """The ``n``-th derivative of ``np.sinc`` (``n >= 1``): a series near 0, where the closed form cancels."""
    p = np.pi * np.asarray(x, dtype=np.float64)
    out = np.vectorize(lambda v: _sinc_derivative1(int(n), float(v)), otypes=[np.float64])(p) * np.pi**n
    return _in_dtype_of(out, x) if out.ndim else float(out)


def prod_grad3(v, u, g, x, axis=None, keepdims=False):
    """``g`` times prod's third derivative at ``x`` applied to ``v`` and ``u``: the adjoint of ``x``
    in ``prod_grad_grad(u, g, x)``; exact where ``x`` has zeros (no division)."""
    x = _displayed(x)
    if not isinstance(x, np.ndarray):
        return 0.0
    axes = tuple(range(np.ndim(x))) if axis is None else tuple(a % np.ndim(x) for a in np.atleast_1d(axis))
    kept = [a for a in range(np.ndim(x)) if a not in axes]
    order = kept + list(axes)

    def lines(a):  # the reduced groups as columns: (elements of a group, groups)
        a = np.transpose(np.broadcast_to(np.asarray(a, dtype=np.float64), np.shape(x)), order)
        return np.reshape(a, (-1, int(np.prod([np.shape(x)[i] for i in axes], dtype=np.int64)))).T

    xs, vs, us = lines(x), lines(v), lines(u)
    # the coefficients of 1, s, t, st in the product of (x_j + s v_j + t u_j) over the j before
    # (pre) and after (post) each element: the element's own factor left out, no division
    n = xs.shape[0]
    pre, post = np.zeros((n, 4, xs.shape[1])), np.zeros((n, 4, xs.shape[1]))
    acc = np.zeros((4, xs.shape[1]))
    acc[0] = 1.0
    for j in range(n):
        pre[j] = acc
        acc = np.stack([acc[0] * xs[j], acc[1] * xs[j] + acc[0] * vs[j], acc[2] * xs[j] + acc[0] * us[j],
                        acc[3] * xs[j] + acc[1] * us[j] + acc[2] * vs[j]])
    acc = np.zeros((4, xs.shape[1]))
    acc[0] = 1.0
    for j in range(n - 1, -1, -1):
        post[j] = acc
        acc = np.stack([acc[0] * xs[j], acc[1] * xs[j] + acc[0] * vs[j], acc[2] * xs[j] + acc[0] * us[j],
                        acc[3] * xs[j] + acc[1] * us[j] + acc[2] * vs[j]])
    st = pre[:, 0] * post[:, 3] + pre[:, 3] * post[:, 0] + pre[:, 1] * post[:, 2] + pre[:, 2] * post[:, 1]
    shape = [np.shape(x)[i] for i in order]
    h = np.transpose(np.reshape(st.T, shape), np.argsort(order))
    return unbroadcast(_expand(g, x, axis, keepdims) * h, x)


def einsum(subscripts, x, y=None, z=None):
    """``np.einsum(subscripts, x[, y[, z]])``: the adjoint of ``g`` in ``einsum_grad_x`` ... (no ``None`` operands)."""
    return np.einsum(subscripts, *(a for a in (x, y, z) if a is not None))


# <g, einsum(x, y, z)> is linear in each of g, x, y, z: the gradient in one of them is again
# one of these four functions, at the others, with the incoming adjoint in the place of the
# one (whose value is then not read, only its shape)


def einsum_grad_x(subscripts, g, x, y=None, z=None):
    """Adjoint of ``x`` in ``np.einsum(subscripts, x[, y[, z]])``."""
    return einsum_grad(g, subscripts, 0, x, y, z)


def einsum_grad_y(subscripts, g, x, y, z=None):
    """Adjoint of ``y`` in ``np.einsum(subscripts, x, y[, z])``."""
    return einsum_grad(g, subscripts, 1, x, y, z)


def einsum_grad_z(subscripts, g, x, y, z):
    """Adjoint of ``z`` in ``np.einsum(subscripts, x, y, z)``."""
    return einsum_grad(g, subscripts, 2, x, y, z)


def half_tril(m):
    """The lower triangle of ``m`` with its diagonal halved (self-adjoint)."""
    return _lower_half_diagonal(m)


def half_tril_sym(m):
    """``half_tril(m + m.T)``; its adjoint is ``sym_half_tril``."""
    return _lower_half_diagonal(m + np.swapaxes(m, -1, -2))


def sym_half_tril(m):
    """``half_tril(m) + half_tril(m).T``: the symmetric matrix whose lower triangle is ``m``'s;
    the adjoint of ``half_tril_sym``."""
    h = _lower_half_diagonal(m)
    return h + np.swapaxes(h, -1, -2)


# cumprod, and the linear recurrences its derivatives are made of (multiplications only, so
# exact where x has zeros). Along ``axis``; with ``axis=None`` the arrays are flattened first
# and the result is flat, as ``np.cumprod(x)``.


def _lines(a, axis):
    a = np.asarray(a, dtype=np.result_type(a, 1.0))
    return np.ravel(a) if axis is None else np.moveaxis(a, axis, 0)


def _unlines(out, axis):
    return out if axis is None else np.moveaxis(out, 0, axis)


def linrec(b, a, axis=None):
    """``z[0] = b[0]``, ``z[i] = b[i] + a[i] * z[i - 1]`` along ``axis``."""
    bs, as_ = _lines(b, axis), _lines(a, axis)
    out = np.empty(np.broadcast_shapes(bs.shape, as_.shape), dtype=np.result_type(bs, as_))
    for i in range(out.shape[0]):
        out[i] = bs[i] if i == 0 else bs[i] + as_[i] * out[i - 1]
    return _unlines(out, axis)


def linrec_rev(b, a, axis=None):
    """``s[-1] = b[-1]``, ``s[j] = b[j] + a[j + 1] * s[j + 1]`` along ``axis``: the transpose of ``linrec``."""
    bs, as_ = _lines(b, axis), _lines(a, axis)
    out = np.empty(np.broadcast_shapes(bs.shape, as_.shape), dtype=np.result_type(bs, as_))
    n = out.shape[0]
    for j in range(n - 1, -1, -1):
        out[j] = bs[j] if j == n - 1 else bs[j] + as_[j + 1] * out[j + 1]
    return _unlines(out, axis)


def shift_right(z, axis=None, fill=0.0):
    """``z`` moved one place along ``axis``, ``fill`` in front: ``out[0] = fill``, ``out[i] = z[i - 1]``."""
    zs = _lines(z, axis)
    out = np.empty_like(zs)
    if out.shape[0]:
        out[0] = fill
        out[1:] = zs[:-1]
    return _unlines(out, axis)


def shift_left(z, axis=None):
    """``z`` moved one place back along ``axis``, 0 at the end: the transpose of ``shift_right``."""
    zs = _lines(z, axis)
    out = np.empty_like(zs)
    if out.shape[0]:
        out[-1] = 0.0
        out[:-1] = zs[1:]
    return _unlines(out, axis)


def cumprod_jvp(t, x, ans, axis=None):
    """Tangent of ``ans = np.cumprod(x, axis)`` along ``t``: ``dans[i] = t[i] ans[i - 1] + x[i] dans[i - 1]``."""
    t = np.reshape(t, np.shape(ans))
    return linrec(t * shift_right(ans, axis, 1.0), x, axis)


def matrix_transpose(x):
    """``x`` with its last two axes swapped (each matrix of a stack transposed), as a new C array."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


# --- linear algebra (issue 20) ---


def _matrix_norm_axes(x, axis):
    """The (row, column) axes of ``np.linalg.norm(x, ord, axis)`` where it is a matrix norm, else None."""
    if axis is None:
        return (0, 1) if np.ndim(x) == 2 else None
    if np.ndim(axis) == 0 or len(axis) == 1:
        return None
    return tuple(int(a) % np.ndim(x) for a in axis)


def _shares(hit, axis):
    """``hit`` (a boolean mask of the positions attaining an extremum) divided by their number
    along ``axis``: the adjoint of the extremum shared equally among them, as for np.max."""
    hit = hit.astype(np.float64)
    return hit / np.sum(hit, axis=axis, keepdims=True)


def norm_weights(x, ans, ord, axis=None, keepdims=False):
    """The derivative of ``np.linalg.norm(x, ord, axis, keepdims)`` with respect to ``x``, shaped like
    ``x`` (each element's weight in its own norm), for an ``ord`` other than None and 'fro'.

    Vector norms: ``sign(x)`` (ord=1), ``sign(x) |x|^(p-1) / norm^(p-1)`` (ord=p; 0 where the norm
    is 0), ``sign(x)`` at the elements of largest (inf) or smallest (-inf) magnitude, shared
    equally among ties, 0 for ord=0 (a count). Matrix norms: ``U Vt`` (nuc), ``u v.T`` for the
    largest (2) or smallest (-2) singular value, ``sign(x)`` on the column (1, -1) or row (inf,
    -inf) of largest or smallest absolute sum, shared among ties. Where a norm is not
    differentiable (repeated extreme singular values, ties) this is one subgradient.
    """
    x = np.asarray(x)
    matrix = _matrix_norm_axes(x, axis)
    if matrix is None:
        if axis is not None and np.ndim(axis) != 0:
            axis = tuple(axis)[0]
        mag = np.abs(x)
        if ord == np.inf or ord == -np.inf:
            best = np.max(mag, axis=axis, keepdims=True) if ord == np.inf else np.min(mag, axis=axis, keepdims=True)
            return np.sign(x) * _shares(mag == best, axis)
        if ord == 0:
            return np.zeros(x.shape, dtype=_grad_dtype(x))
        if ord == 1:
            return np.sign(x)
        norm = _expand(ans, x, axis, keepdims)
        safe = np.where(norm == 0, 1.0, norm)
        if ord == 2:
            return x / safe
        p = float(ord)
        return np.where((x == 0) | (norm == 0), 0.0, np.sign(x) * (np.where(x == 0, 1.0, mag) / safe) ** (p - 1.0))
    xm = np.moveaxis(x, matrix, (-2, -1))
    if isinstance(ord, str):
        if ord != "nuc":
            raise ValueError(f"Invalid norm order {ord!r} for matrices")
        u, _, vt = np.linalg.svd(xm, full_matrices=False)
        w = u @ vt
    elif ord == 2 or ord == -2:
        u, _, vt = np.linalg.svd(xm, full_matrices=False)
        one = slice(0, 1) if ord == 2 else slice(-1, None)  # (singular values come largest first)
        w = u[..., :, one] @ vt[..., one, :]
    elif ord in (1, -1, np.inf, -np.inf):
        lines = -2 if ord in (1, -1) else -1  # summed: down the columns (1, -1), along the rows
        sums = np.sum(np.abs(xm), axis=lines)
        best = np.max(sums, axis=-1, keepdims=True) if ord in (1, np.inf) else np.min(sums, axis=-1, keepdims=True)
        w = np.sign(xm) * np.expand_dims(_shares(sums == best, -1), lines)
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices")
    return np.moveaxis(w, (-2, -1), matrix)


def norm_ord_once(ord, x, axis=None):
    """None, where ``np.linalg.norm(x, ord, axis)`` is the 2-norm or Frobenius norm (the norms whose
    adjoint ``norm_grad``'s own rule differentiates); other orders are differentiated once only,
    and a second derivative stops here."""
    if ord is None or (isinstance(ord, str) and ord == "fro"):
        return None
    if ord == 2 and _matrix_norm_axes(x, axis) is None:
        return None
    raise NotImplementedError(
        f"np.linalg.norm with ord={ord!r} is differentiated once only: its second derivatives "
        "(grad of grad, hessian, jvp of grad) are not supported"
    )


def put_block(x, index):
    """``x`` (a matrix, or each matrix of a stack) as block ``index`` = (row, column) of a 2 x 2 block
    matrix, zeros elsewhere: ``put_block(a, (0, 0)) + put_block(t, (0, 1)) + put_block(a, (1, 1))`` is
    ``[[a, t], [0, a]]``, whose function ``f`` (a matrix power) has ``f(a)``'s derivative along
    ``t`` in its upper right block. Its transpose is :func:`block_of`."""
    x = np.asarray(x)
    n, m = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (2 * n, 2 * m), dtype=_grad_dtype(x))
    out[..., index[0] * n:(index[0] + 1) * n, index[1] * m:(index[1] + 1) * m] = x
    return out


def block_of(m, index):
    """Block ``index`` = (row, column) of ``m`` (each matrix of a stack) cut in 2 x 2 equal blocks, as
    a new C array: the transpose of :func:`put_block`."""
    m = np.asarray(m)
    n, k = m.shape[-2] // 2, m.shape[-1] // 2
    return np.ascontiguousarray(m[..., index[0] * n:(index[0] + 1) * n, index[1] * k:(index[1] + 1) * k])


def _multi_dot_matrices(arrays):
    """The operands of ``np.linalg.multi_dot(arrays)`` as matrices: a first vector as a row, a last
    one as a column."""
    mats = [np.asarray(a) for a in arrays]
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    return mats


def multi_dot_grad(g, arrays):
    """Adjoints of the ``arrays`` of ``np.linalg.multi_dot(arrays)``, as a tuple: for the product
    ``A_0 ... A_k``, ``(A_0 ... A_i-1).T g (A_i+1 ... A_k).T``. It has no rule of its own: second
    derivatives of multi_dot stop here (write ``a @ b @ c`` for those)."""
    mats = _multi_dot_matrices(arrays)
    k = len(mats)
    g = np.reshape(np.asarray(g), (mats[0].shape[0], mats[-1].shape[1]))
    right = [None] * k  # right[i]: g (A_i+1 ... A_k).T
    right[k - 1] = g
    for i in range(k - 2, -1, -1):
        right[i] = right[i + 1] @ np.swapaxes(mats[i + 1], -1, -2)
    out, left = [], None  # left: (A_0 ... A_i-1).T
    for i, a in enumerate(arrays):
        adj = right[i] if left is None else left @ right[i]
        out.append(unbroadcast(np.reshape(adj, np.shape(a)), np.asarray(a)))
        left = np.swapaxes(mats[i], -1, -2) if left is None else np.swapaxes(mats[i], -1, -2) @ left
    return tuple(out)


def multi_dot_jvp(t, arrays):
    """Tangent of ``np.linalg.multi_dot(arrays)`` along ``t`` (one tangent per array): the sum of
    the products with one array replaced by its tangent. No rule of its own (see multi_dot_grad)."""
    arrays = list(arrays)
    return sum(np.linalg.multi_dot(arrays[:i] + [np.asarray(t[i])] + arrays[i + 1:]) for i in range(len(arrays)))


def _inverse_gaps(w):
    """``F[..., i, j] = 1 / (w[j] - w[i])``, 0 on the diagonal (eigenvalues ``w``, stacks too);
    infinite where two eigenvalues are equal, where eigenvectors have no derivative."""
    w = np.asarray(w)
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    diagonal = np.eye(w.shape[-1], dtype=bool)
    with np.errstate(divide="ignore"):
        return np.where(diagonal, 0.0, 1.0 / np.where(diagonal, 1.0, gaps)).astype(w.dtype)


def _times_gaps(w, m):
    """``_inverse_gaps(w) * m``, 0 where ``m`` is 0 (an unused eigenvector adjoint or tangent: the
    eigenvalues' derivatives stay finite where eigenvalues repeat)."""
    with np.errstate(invalid="ignore"):
        return np.where(m == 0, 0.0, _inverse_gaps(w) * m).astype(np.result_type(m, np.asarray(w).dtype))


def _symmetric_input(t, UPLO):
    """The symmetric matrix np.linalg.eigh reads from ``t``: its lower (UPLO='L') or upper triangle."""
    return sym_half_tril(t if UPLO == "L" else np.swapaxes(t, -1, -2))


def eigh_grad(g, ans, UPLO="L"):
    """Adjoint of ``x`` in ``w, v = np.linalg.eigh(x, UPLO)``: ``g`` is the pair of their adjoints.

    ``M = v (diag(gw) + F * (v.T gv)) v.T`` with ``F = 1 / (w_j - w_i)`` is the adjoint of the
    symmetric matrix eigh reads, which moves with one triangle of ``x`` only: ``x``'s adjoint is
    ``M + M.T`` off the diagonal of that triangle, ``M``'s diagonal on it, zeros elsewhere.
    Repeated eigenvalues give infinities (the eigenvectors have no derivative there), as in JAX.
    No rule of its own: second derivatives of eigh stop here.
    """
    gw, gv = (np.asarray(piece) for piece in g)
    w, v = ans
    vt = np.swapaxes(v, -1, -2)
    inner = _times_gaps(w, vt @ gv) + np.expand_dims(gw, -1) * np.eye(np.shape(w)[-1], dtype=np.asarray(w).dtype)
    m = v @ inner @ vt
    return half_tril_sym(m) if UPLO == "L" else np.swapaxes(half_tril_sym(np.swapaxes(m, -1, -2)), -1, -2)


def eigh_jvp(t, ans, UPLO="L"):
    """Tangent of ``w, v = np.linalg.eigh(x, UPLO)`` along ``t``: ``(diag(P), v (F * P))`` with
    ``P = v.T S v``, ``S`` the symmetric matrix of ``t``'s triangle that eigh reads."""
    w, v = ans
    p = np.swapaxes(v, -1, -2) @ _symmetric_input(np.asarray(t, dtype=np.asarray(w).dtype), UPLO) @ v
    return np.diagonal(p, axis1=-2, axis2=-1).copy(), v @ _times_gaps(w, p)


def _svd_parts(x, ans, full_matrices, compute_uv):
    """``u, s, vt`` (reduced) of ``np.linalg.svd(x, full_matrices, compute_uv)`` = ``ans``, with
    ``F[i, j] = 1 / (s_j^2 - s_i^2)`` (0 on the diagonal) and ``1 / s`` (0 where s is 0)."""
    x = np.asarray(x)
    m, n = x.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "np.linalg.svd is differentiated with full_matrices=False (or a square matrix) only: "
            "the extra columns of a full U or rows of a full Vt are not unique"
        )
    u, s, vt = ans if compute_uv else np.linalg.svd(x, full_matrices=False)
    sq = s * s
    diagonal = np.eye(s.shape[-1], dtype=bool)
    gaps = np.expand_dims(sq, -2) - np.expand_dims(sq, -1)
    with np.errstate(divide="ignore"):
        f = np.where(diagonal, 0.0, 1.0 / np.where(diagonal, 1.0, gaps)).astype(s.dtype)
        s_inv = np.where(s == 0, 0.0, 1.0 / np.where(s == 0, 1.0, s)).astype(s.dtype)
    return u, s, vt, f, s_inv


def svd_grad(g, x, ans, full_matrices=True, compute_uv=True):
    """Adjoint of ``x`` in ``np.linalg.svd(x, full_matrices, compute_uv)``: ``g`` the adjoints of
    ``(u, s, vt)``, or of ``s`` alone for ``compute_uv=False``.

    With ``J = F * (u.T gu)``, ``K = F * (vt gv)`` (``gv = gvt.T``): ``u (diag(gs) + (J + J.T) S +
    S (K + K.T)) vt``, plus ``(I - u u.T) gu S^-1 vt`` for a tall ``x`` and ``u S^-1 (gvt - gvt v
    vt)`` for a wide one: the transpose of :func:`svd_jvp` (JAX's tangent). Repeated or (for
    a matrix not square) zero singular values give infinities where ``u`` or ``vt`` is used.
    No rule of its own: second derivatives of svd stop here.
    """
    u, s, vt, f, s_inv = _svd_parts(x, ans, full_matrices, compute_uv)
    if not compute_uv:
        return unbroadcast((u * np.expand_dims(np.asarray(g), -2)) @ vt, x)
    gu, gs, gvt = (np.asarray(piece) for piece in g)
    ut, v = np.swapaxes(u, -1, -2), np.swapaxes(vt, -1, -2)
    with np.errstate(invalid="ignore"):
        j = np.where(ut @ gu == 0, 0.0, f * (ut @ gu))
        k = np.where(vt @ np.swapaxes(gvt, -1, -2) == 0, 0.0, f * (vt @ np.swapaxes(gvt, -1, -2)))
    inner = (j + np.swapaxes(j, -1, -2)) * np.expand_dims(s, -2) + np.expand_dims(s, -1) * (k + np.swapaxes(k, -1, -2))
    inner = inner + np.expand_dims(gs, -1) * np.eye(s.shape[-1], dtype=s.dtype)
    out = u @ inner @ vt
    m, n = np.shape(x)[-2:]
    if m > n:
        out = out + ((gu - u @ (ut @ gu)) * np.expand_dims(s_inv, -2)) @ vt
    if n > m:
        out = out + u @ (np.expand_dims(s_inv, -1) * (gvt - (gvt @ v) @ vt))
    return unbroadcast(out, x)


def svd_jvp(t, x, ans, full_matrices=True, compute_uv=True):
    """Tangent of ``np.linalg.svd(x, full_matrices, compute_uv)`` along ``t``: ``(du, ds, dvt)``, or
    ``ds`` alone for ``compute_uv=False`` (JAX's rule, for real matrices)."""
    u, s, vt, f, s_inv = _svd_parts(x, ans, full_matrices, compute_uv)
    t = np.asarray(t, dtype=s.dtype)
    ut, v = np.swapaxes(u, -1, -2), np.swapaxes(vt, -1, -2)
    p = ut @ t @ v
    ds = np.diagonal(p, axis1=-2, axis2=-1).copy()
    if not compute_uv:
        return ds
    ps, sp = p * np.expand_dims(s, -2), np.expand_dims(s, -1) * p
    with np.errstate(invalid="ignore"):
        a = ps + np.swapaxes(ps, -1, -2)
        b = sp + np.swapaxes(sp, -1, -2)
        du = u @ np.where(a == 0, 0.0, f * a)
        dv = v @ np.where(b == 0, 0.0, f * b)
    m, n = np.shape(x)[-2:]
    if m > n:
        tv = t @ v
        du = du + (tv - u @ (ut @ tv)) * np.expand_dims(s_inv, -2)
    if n > m:
        tu = np.swapaxes(t, -1, -2) @ u
        dv = dv + (tu - v @ (vt @ tu)) * np.expand_dims(s_inv, -2)
    return du, ds, np.swapaxes(dv, -1, -2)


def _check_qr(x, mode):
    m, n = np.shape(x)[-2:]
    if not (mode == "reduced" or (mode == "complete" and m == n)):
        raise NotImplementedError(f"np.linalg.qr is differentiated with mode='reduced' only, not mode={mode!r}")
    if m < n:
        raise NotImplementedError("np.linalg.qr is differentiated for square and tall matrices only (rows >= columns)")


def qr_grad(g, x, ans, mode="reduced"):
    """Adjoint of ``x`` in ``q, r = np.linalg.qr(x)`` (rows >= columns, r invertible): ``g`` the
    pair of their adjoints. With ``M = q.T gq - gr r.T``: ``(gq + q (tril(M - M.T, -1) - M)) r^-T``,
    the transpose of :func:`qr_jvp`. No rule of its own: second derivatives of qr stop here."""
    _check_qr(x, mode)
    q, r = ans
    gq, gr = (np.asarray(piece) for piece in g)
    m = np.swapaxes(q, -1, -2) @ gq - gr @ np.swapaxes(r, -1, -2)
    gb = np.tril(m - np.swapaxes(m, -1, -2), -1) - m
    return unbroadcast(np.swapaxes(np.linalg.solve(r, np.swapaxes(gq + q @ gb, -1, -2)), -1, -2), x)


def qr_jvp(t, x, ans, mode="reduced"):
    """Tangent of ``q, r = np.linalg.qr(x)`` along ``t`` (JAX's rule): with ``C = t r^-1``,
    ``B = q.T C`` and ``O = tril(B, -1) - tril(B, -1).T``, ``(q (O - B) + C, (B - O) r)``."""
    _check_qr(x, mode)
    q, r = ans
    c = np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(np.asarray(t, dtype=r.dtype), -1, -2)), -1, -2)
    b = np.swapaxes(q, -1, -2) @ c
    low = np.tril(b, -1)
    o = low - np.swapaxes(low, -1, -2)
    return q @ (o - b) + c, (b - o) @ r


def _lstsq_parts(a, b, ans):
    """``P = pinv(a)`` with lstsq's cutoff (rcond=None), the solution and ``b``'s columns as matrices,
    and the residual columns ``b - a x`` where lstsq returns residuals (else None)."""
    a = np.asarray(a)
    m, n = a.shape
    p = np.linalg.pinv(a, rcond=np.finfo(np.result_type(a, 1.0)).eps * max(m, n))
    x, res = np.asarray(ans[0]), np.asarray(ans[1])
    xm = x[:, None] if x.ndim == 1 else x
    bm = np.asarray(b)[:, None] if np.ndim(b) == 1 else np.asarray(b)
    return a, p, xm, bm, (bm - a @ xm if res.size else None)


def _pinv_grad(gp, a, p):
    """Adjoint of ``a`` in ``p = pinv(a)`` (constant rank) for ``p``'s adjoint ``gp``: pinv's rule."""
    pt, gt = p.T, gp.T
    return -(pt @ gp @ pt) + (gt - a @ p @ gt) @ p @ pt + pt @ p @ (gt - gt @ p @ a)


def _pinv_jvp(t, a, p):
    pt, tt = p.T, t.T
    return -(p @ t @ p) + p @ pt @ (tt - tt @ a @ p) + (tt - p @ a @ tt) @ pt @ p


def _lstsq_rcond(rcond):
    if rcond is not None:
        raise NotImplementedError("np.linalg.lstsq is differentiated with rcond=None only")


def tangent_sum(a, b):
    """Two tuples of tangents added piece by piece (forward mode's sum of a rule's terms where the
    function has several results, ``derivatives.TUPLE_TANGENTS``)."""
    return tuple(x + y for x, y in zip(a, b))


def lstsq_grad_a(g, a, b, ans, rcond=None):
    """Adjoint of ``a`` in ``x, residuals, rank, sv = np.linalg.lstsq(a, b)``: ``g`` their adjoints.
    ``x = pinv(a) b`` (pinv's rule, for ``a`` of constant rank), ``residuals`` (tall ``a`` of full
    rank) ``-2 (b - a x) x.T`` per column (x minimizes them), ``sv`` as svd's. No rule of its own:
    second derivatives of lstsq stop here."""
    _lstsq_rcond(rcond)
    a, p, xm, bm, r = _lstsq_parts(a, b, ans)
    gx = np.asarray(g[0])
    gxm = gx[:, None] if gx.ndim == 1 else gx
    out = _pinv_grad(gxm @ bm.T, a, p)
    if r is not None:
        out = out - 2.0 * (r * np.asarray(g[1])) @ xm.T
    out = out + svd_grad(g[3], a, ans[3], False, False)
    return unbroadcast(out, a)


def lstsq_grad_b(g, a, b, ans, rcond=None):
    """Adjoint of ``b`` in ``np.linalg.lstsq(a, b)``: ``pinv(a).T gx + 2 (b - a x) gresiduals``."""
    _lstsq_rcond(rcond)
    a, p, xm, bm, r = _lstsq_parts(a, b, ans)
    gx = np.asarray(g[0])
    out = p.T @ (gx[:, None] if gx.ndim == 1 else gx)
    if r is not None:
        out = out + 2.0 * r * np.asarray(g[1])
    return unbroadcast(np.reshape(out, np.shape(b)), np.asarray(b))


def lstsq_jvp_a(t, a, b, ans, rcond=None):
    """Tangent of ``(x, residuals, rank, sv) = np.linalg.lstsq(a, b)`` along ``t`` (for ``a``)."""
    _lstsq_rcond(rcond)
    a, p, xm, bm, r = _lstsq_parts(a, b, ans)
    t = np.asarray(t, dtype=p.dtype)
    dx = np.reshape(_pinv_jvp(t, a, p) @ bm, np.shape(ans[0]))
    dres = np.zeros_like(ans[1]) if r is None else -2.0 * np.sum(r * (t @ xm), axis=0)
    return dx, dres, 0, svd_jvp(t, a, None, False, False)


def lstsq_jvp_b(t, a, b, ans, rcond=None):
    """Tangent of ``np.linalg.lstsq(a, b)`` along ``t`` (for ``b``)."""
    _lstsq_rcond(rcond)
    a, p, xm, bm, r = _lstsq_parts(a, b, ans)
    t = np.asarray(t, dtype=p.dtype)
    tm = t[:, None] if t.ndim == 1 else t
    dx = np.reshape(p @ tm, np.shape(ans[0]))
    dres = np.zeros_like(ans[1]) if r is None else 2.0 * np.sum(r * tm, axis=0)
    return dx, dres, 0, np.zeros_like(ans[3])


def _real_eig(ans):
    w, v = ans
    if np.iscomplexobj(w) or np.iscomplexobj(v):
        raise NotImplementedError(
            "np.linalg.eig is differentiated for matrices with real eigenvalues only (this one has complex "
            "ones); for a symmetric matrix use np.linalg.eigh"
        )
    return np.asarray(w), np.asarray(v)


def eig_grad(g, ans):
    """Adjoint of ``x`` in ``w, v = np.linalg.eig(x)`` for a real spectrum: ``g`` the pair of their
    adjoints. With ``gv' = gv - v diag(v.T gv)`` (NumPy's eigenvectors have unit length):
    ``v^-T (diag(gw) + F * (v.T gv')) v.T``, ``F = 1 / (w_j - w_i)``. Repeated eigenvalues give
    infinities where ``v`` is used. No rule of its own: second derivatives of eig stop here."""
    w, v = _real_eig(ans)
    gw, gv = (np.asarray(piece) for piece in g)
    vt = np.swapaxes(v, -1, -2)
    gv = gv - v * np.expand_dims(np.sum(v * gv, axis=-2), -2)
    inner = _times_gaps(w, vt @ gv) + np.expand_dims(gw, -1) * np.eye(w.shape[-1], dtype=w.dtype)
    return np.linalg.solve(vt, inner @ vt)


def eig_jvp(t, ans):
    """Tangent of ``w, v = np.linalg.eig(x)`` (real spectrum) along ``t``: with ``P = v^-1 t v``,
    ``(diag(P), dv - v diag(v.T dv))``, ``dv = v (F * P)``."""
    w, v = _real_eig(ans)
    p = np.linalg.solve(v, np.asarray(t, dtype=w.dtype) @ v)
    dv = v @ _times_gaps(w, p)
    dv = dv - v * np.expand_dims(np.sum(v * dv, axis=-2), -2)
    return np.diagonal(p, axis1=-2, axis2=-1).copy(), dv


def c_column(x):
    """An item of ``np.c_[...]`` as NumPy joins it (desugar writes ``np.c_[a, b]`` as
    ``np.concatenate((rt.c_column(a), rt.c_column(b)), axis=-1)``): a 1-D array as a column
    ``(n, 1)``, a number as ``(1, 1)``, an array of two or more dimensions as it is."""
    x = np.asarray(x)
    if x.ndim == 0:
        return np.reshape(x, (1, 1))
    if x.ndim == 1:
        return np.reshape(x, (x.shape[0], 1))
    return x


# Adjoint files call the collectives as rt.psum, rt.pmean ... (derivative rules name np, rt and math only).
from .parallel.collectives import all_gather, axis_index, pmax, pmean, pmin, psum  # noqa: E402,F401

# --- array functions and reductions (issue 20) ---
# Helpers of the derivative rules of np.append, np.column_stack, np.kron, np.rollaxis, np.select,
# np.average, np.median, np.partition, np.convolve and np.interp (srctrans/rules/derivatives.py);
# their own rules are in srctrans/rules/runtime_helpers.py.


def append_grad_arr(g, arr, values, axis=None):
    """Adjoint of ``arr`` in ``np.append(arr, values, axis)``: the first part of ``g`` (of the flat
    ``g`` for ``axis=None``), in ``arr``'s shape."""
    g = np.asarray(g)
    if axis is None:
        return unbroadcast(np.reshape(np.ravel(g)[: np.size(arr)], np.shape(arr)), arr)
    n = np.shape(arr)[axis]
    return unbroadcast(np.moveaxis(np.moveaxis(g, axis, 0)[:n], 0, axis), arr)


def append_grad_values(g, arr, values, axis=None):
    """Adjoint of ``values`` in ``np.append(arr, values, axis)``: the part of ``g`` after ``arr``'s."""
    g = np.asarray(g)
    if axis is None:
        return unbroadcast(np.reshape(np.ravel(g)[np.size(arr):], np.shape(values)), values)
    n = np.shape(arr)[axis]
    return unbroadcast(np.reshape(np.moveaxis(np.moveaxis(g, axis, 0)[n:], 0, axis), np.shape(values)), values)


def column_stack_grad(g, arrays):
    """Adjoints of the ``arrays`` of ``np.column_stack(arrays)`` (a vector is one column), as a tuple."""
    columns = [np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a for a in arrays]
    pieces = concatenate_grad(g, columns, 1)
    return tuple(unbroadcast(np.reshape(p, np.shape(a)), a) for p, a in zip(pieces, arrays))


def _kron_shapes(a, b):
    d = max(np.ndim(a), np.ndim(b))
    return (1,) * (d - np.ndim(a)) + np.shape(a), (1,) * (d - np.ndim(b)) + np.shape(b)


def kron_grad_a(g, a, b):
    """Adjoint of ``a`` in ``np.kron(a, b)``: ``g`` read as blocks (one per element of ``a``), each
    summed against ``b``. Bilinear in ``g`` and ``b``; its transpose in ``g`` is ``np.kron(u, b)``."""
    sa, sb = _kron_shapes(a, b)
    d = len(sa)
    blocks = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])  # (a0, b0, a1, b1, ...)
    out = np.tensordot(blocks, np.reshape(b, sb), axes=(tuple(range(1, 2 * d, 2)), tuple(range(d))))
    return unbroadcast(np.reshape(out, np.shape(a)), a)


def kron_grad_b(g, a, b):
    """Adjoint of ``b`` in ``np.kron(a, b)``: the blocks of ``g`` weighted by the elements of ``a``."""
    sa, sb = _kron_shapes(a, b)
    d = len(sa)
    blocks = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
    out = np.tensordot(blocks, np.reshape(a, sa), axes=(tuple(range(0, 2 * d, 2)), tuple(range(d))))
    return unbroadcast(np.reshape(out, np.shape(b)), b)


def _rollaxis_destination(ndim, axis, start):
    """Where ``np.rollaxis(x, axis, start)`` puts ``axis``: ``np.moveaxis``'s destination."""
    axis = axis % ndim
    start = start + ndim if start < 0 else start
    return start - 1 if start > axis else start


def rollaxis_grad(g, x, axis, start=0):
    """Adjoint of ``np.rollaxis(x, axis, start)``: the axis of ``g`` moved back. Its transpose is
    ``np.rollaxis`` itself."""
    destination = _rollaxis_destination(np.ndim(x), axis, start)
    return unbroadcast(np.moveaxis(g, destination, axis % np.ndim(x)), x)


def select_grad(g, condlist, choicelist):
    """Adjoints of the ``choicelist`` of ``np.select(condlist, choicelist, default)``: ``g`` where
    each choice was taken (its condition the first true one), as a tuple."""
    g = np.asarray(g)
    taken = np.zeros(np.shape(g), dtype=bool)
    out = []
    for cond, choice in zip(condlist, choicelist):
        first = np.logical_and(cond, np.logical_not(taken))
        out.append(unbroadcast(np.where(first, g, 0.0), choice))
        taken = np.logical_or(taken, cond)
    return tuple(out)


def select_default(condlist, g):
    """``g`` where no condition of ``condlist`` holds, else 0: the share of ``np.select``'s default."""
    g = np.asarray(g)
    taken = np.zeros(np.shape(g), dtype=bool)
    for cond in condlist:
        taken = np.logical_or(taken, cond)
    return np.where(taken, 0.0, g)


def average_weights(w, a, axis=None, returned=False):
    """The weights of ``np.average(a, axis, w)`` in a shape that broadcasts against ``a`` (a vector of
    weights along ``axis`` as such an axis; 1.0 without weights)."""
    if not (isinstance(returned, bool) and not returned):
        raise NotImplementedError("np.average is differentiated with returned=False only")
    if w is None:
        return 1.0
    w = np.asarray(w)
    if w.shape == np.shape(a):
        return w
    shape = [1] * np.ndim(a)
    shape[axis] = w.shape[0]
    return np.reshape(w, tuple(shape))


def median_grad(g, x, axis=None, keepdims=False):
    """Adjoint of ``np.median(x, axis, keepdims=...)``: ``g`` to the middle element of each sorted line,
    half of it to each of the two middle ones for an even count (ties: to the ones sorted there)."""
    if not (axis is None or np.ndim(axis) == 0):
        raise NotImplementedError("np.median is differentiated over one axis or all of them")
    x = np.asarray(x)
    lines = np.ravel(x)[None, :] if axis is None else np.moveaxis(x, axis, -1)
    n = lines.shape[-1]
    share = np.zeros(n)
    if n % 2:
        share[n // 2] = 1.0
    elif n:
        share[n // 2 - 1] = share[n // 2] = 0.5
    weights = np.zeros(lines.shape)
    np.put_along_axis(weights, np.argsort(lines, axis=-1, kind="stable"), np.broadcast_to(share, lines.shape), -1)
    weights = np.reshape(weights, np.shape(x)) if axis is None else np.moveaxis(weights, -1, axis)
    return unbroadcast(_expand(g, x, axis, keepdims) * weights, x)


def permutation_grad(g, src, dst, axis=-1):
    """``g`` (shaped like ``dst``) sent to the positions of ``src`` holding the same values: ``dst`` is a
    rearrangement of ``src`` along ``axis`` (``np.partition``'s result; flat for ``axis=None``), the
    k-th smallest of one at the place of the k-th smallest of the other. The adjoint of ``src`` in
    that rearrangement; with ``src`` and ``dst`` swapped, its transpose (the tangent)."""
    if axis is None:
        out = np.zeros(np.size(src), dtype=np.result_type(g, 1.0))
        out[np.argsort(np.ravel(src), kind="stable")] = np.ravel(g)[np.argsort(np.ravel(dst), kind="stable")]
        return unbroadcast(np.reshape(out, np.shape(src)), src)
    out = np.zeros(np.shape(src), dtype=np.result_type(g, 1.0))
    ranked = np.take_along_axis(np.asarray(g), np.argsort(dst, axis=axis, kind="stable"), axis)
    np.put_along_axis(out, np.argsort(src, axis=axis, kind="stable"), ranked, axis)
    return unbroadcast(out, src)


def _full_mode(mode) -> None:
    if not (isinstance(mode, str) and mode == "full"):
        raise NotImplementedError(f"np.convolve is differentiated in 'full' mode only, not {mode!r}")


def convolve_grad(g, other, mode="full"):
    """Adjoint of one operand of ``np.convolve(a, v)`` (full mode): ``g`` correlated with the other
    one. Bilinear in ``g`` and ``other``; its transpose in ``g`` is ``np.convolve(u, other)``."""
    _full_mode(mode)
    return np.correlate(g, other, "valid")


def _interp_weights(x, xp, left, right, period):
    """For each point of ``np.interp(x, xp, fp, left, right)``: the two indices into ``fp`` and their
    weights (0 where ``left``/``right`` is taken instead), as NumPy's interpolation reads ``fp``."""
    if period is not None:
        raise NotImplementedError("np.interp is differentiated without period= only")
    x = np.ravel(np.asarray(x, dtype=np.float64))
    xp = np.asarray(xp, dtype=np.float64)
    n = xp.shape[0]
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, max(n - 2, 0))
    k = np.minimum(j + 1, n - 1)
    span = xp[k] - xp[j]
    t = np.where(span > 0, (x - xp[j]) / np.where(span > 0, span, 1.0), 0.0)
    wj, wk = 1.0 - t, t
    below, above, last = x < xp[0], x > xp[-1], x == xp[-1]
    wj = np.where(last, 0.0, wj)
    wk = np.where(last, 1.0, wk)
    j = np.where(below, 0, j)
    wj = np.where(below, 0.0 if left is not None else 1.0, wj)
    wk = np.where(below, 0.0, wk)
    k = np.where(above, n - 1, k)
    wj = np.where(above, 0.0, wj)
    wk = np.where(above, 0.0 if right is not None else 1.0, wk)
    return j, k, wj, wk


def interp_grad(g, x, xp, fp, left=None, right=None, period=None):
    """Adjoint of ``fp`` in ``np.interp(x, xp, fp, left, right)``: each point's ``g`` shared between the
    two values of ``fp`` it lies between. Its transpose is :func:`interp_linear`."""
    j, k, wj, wk = _interp_weights(x, xp, left, right, period)
    g = np.ravel(np.asarray(g))
    out = np.zeros(np.shape(fp), dtype=np.result_type(g, 1.0))
    np.add.at(out, j, g * wj)
    np.add.at(out, k, g * wk)
    return unbroadcast(out, fp)


def interp_linear(x, xp, u, left=None, right=None, period=None):
    """``np.interp(x, xp, u, left, right)`` less its constant part (0 where ``left``/``right`` is
    taken): linear in ``u``, the tangent of ``np.interp`` along ``u``."""
    if period is not None:
        raise NotImplementedError("np.interp is differentiated without period= only")
    return np.interp(x, xp, u, None if left is None else 0.0, None if right is None else 0.0)


def _gradient_transpose(g, n, spacing, axis, edge_order):
    """The transpose of ``np.gradient(., spacing, edge_order=...)`` along ``axis`` (length ``n``)
    applied to ``g``. Each result reads three neighbouring values (at most), one of each residue
    mod 3: ``np.gradient`` of the three combs (ones at the places of one residue) gives every
    result's coefficient of each, which are sent back to the places they came from."""
    g = np.moveaxis(np.asarray(g), axis, -1)
    out = np.zeros(g.shape, dtype=np.result_type(g, 1.0))
    place = np.arange(n)
    start = np.clip(place - 1, 0, max(n - 3, 0))  # the first of the values each result reads
    for r in range(3):
        comb = (place % 3 == r).astype(np.float64)
        coefficients = np.gradient(comb, spacing, edge_order=edge_order)
        source = start + (r - start) % 3
        used = source < n
        np.add.at(out, (Ellipsis, source[used]), (g * coefficients)[..., used])
    return np.moveaxis(out, -1, axis)


def gradient_grad(g, f, spacing=1.0, axis=None, edge_order=1):
    """Adjoint of ``f`` in ``np.gradient(f, spacing, axis=axis, edge_order=edge_order)`` (one spacing
    for every axis differentiated): ``g`` is one adjoint per axis (a tuple) where the result is a
    tuple, else one array. Its transpose is ``np.gradient`` itself."""
    f = np.asarray(f)
    if axis is None:
        axes = tuple(range(f.ndim))
    elif np.ndim(axis) == 0:
        axes = (axis % f.ndim,)
    else:
        axes = tuple(a % f.ndim for a in axis)
    parts = (g,) if len(axes) == 1 else tuple(g)
    out = np.zeros(f.shape, dtype=_grad_dtype(f))
    for a, part in zip(axes, parts):
        if isinstance(part, np.ndarray) or np.ndim(part):
            out = out + _gradient_transpose(part, f.shape[a], spacing, a, edge_order)
    return unbroadcast(out, f)
