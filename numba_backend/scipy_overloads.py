"""``scipy.special`` functions under ``numba.njit``: ``gammaln``, ``erf``, ``expit``, ``digamma``
(``psi``), ``logit``, ``xlogy``, ``softmax``, ``logsumexp``; the Bessel functions ``j0``, ``j1``,
``y0``, ``y1``, ``i0``, ``i1``, ``i0e``, ``i1e``, ``k0``, ``k1``, ``k0e``, ``k1e`` and those of any
order ``jv``, ``yv``, ``iv``, ``ive``, ``kv``, ``kve`` (and srctrans.runtime's helpers of the same
names, which their derivatives call); ``expi`` and ``exp1``.

Numba knows no SciPy function: a generated file's ``sp.gammaln(x)`` stopped with "Unknown
attribute 'gammaln'". Importing this module registers an overload for each, so the line
compiles and gives SciPy's numbers:

- ``gammaln``, ``erf``, ``expit``, ``digamma`` (``psi``) and ``logit`` call the very C functions SciPy's ufuncs call, found
  through ``scipy.special.cython_special`` and entered under symbols of our own
  (``srctrans.scipy.<name>``, as ``random_overloads`` does for libm), so the machine code
  holds a name, not an address, and Numba's disk cache can keep it. As SciPy's ufuncs, they
  take a number or an array of real numbers; float32 gives float32 (``gammaln`` and ``erf``
  computed in float64 and rounded, as SciPy's float32 loops do; ``expit`` and ``logit`` in
  float32 as SciPy's), anything else float64. Complex arguments raise ``TypingError``.
- ``xlogy(x, y)``: ``x * log(y)``, 0 where ``x`` is 0 and ``y`` is not NaN, as SciPy's C
  function, on numbers and broadcast arrays.
- ``softmax(x, axis=None)`` as SciPy writes it: the maximum along ``axis`` taken out, ``exp``,
  divided by its sum along ``axis``.
- ``logsumexp(a, axis=None, keepdims=False)`` (``axis`` an int or a tuple; ``b=`` and ``return_sign=`` not supported)
  follows SciPy's algorithm step by step: the maximum taken out, its repeats counted, the
  rest summed with ``log1p``, and the direct ``log(sum(exp(a)))`` where that is not finite.
"""

from __future__ import annotations

import math

import llvmlite.binding as ll
import numpy as np
import scipy.special as sp
from llvmlite import ir as llvm_ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import get_cython_function_address, intrinsic, overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from srctrans import runtime as rt

from . import overloads  # noqa: F401  (np.max, np.sum with axis= and keepdims=)
from .arguments import axis_kind, const_bool, is_none, norm_axis, unliteral

__all__: list[str] = []


def _intrinsic(nargs: int, signature, codegen):
    """An intrinsic of ``nargs`` positional arguments (Numba reads the arity from the typing
    function's own parameters, so it is written out)."""
    params = ", ".join(f"x{i}" for i in range(nargs))
    namespace = {"signature": signature, "codegen": codegen}
    exec(f"def call(typingctx, {params}):\n    return signature, codegen\n", namespace)
    return intrinsic(namespace["call"])


def _scipy_call(name: str, capi_name: str, single: bool = False, nargs: int = 1):
    """A jitted call of ``scipy.special.cython_special``'s ``capi_name``, of C signature
    ``double f(double, ..., int skip_dispatch)`` with ``nargs`` doubles (floats when ``single``)."""
    address = get_cython_function_address("scipy.special.cython_special", capi_name)
    symbol = f"srctrans.scipy.{name}{'_f32' if single else ''}"
    ll.add_symbol(symbol, address)
    nbtype = types.float32 if single else types.float64
    lltype = llvm_ir.FloatType() if single else llvm_ir.DoubleType()

    def codegen(context, builder, signature, args):
        fnty = llvm_ir.FunctionType(lltype, [lltype] * nargs + [llvm_ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        fn.attributes.add("nounwind")
        return builder.call(fn, [*args, llvm_ir.Constant(llvm_ir.IntType(32), 0)])

    return _intrinsic(nargs, nbtype(*[nbtype] * nargs), codegen)


def _elementwise(fn: np.ufunc, call64, call32=None) -> None:
    """Register ``fn`` (a SciPy ufunc of one real argument) on numbers and arrays: ``call64``
    on float64 values; float32 values through ``call32`` when given, else through ``call64``
    and rounded back, as SciPy's float32 loops do."""
    fname = f"scipy.special.{fn.__name__}"

    @register_jitable
    def one32(v):
        return call32(np.float32(v)) if call32 is not None else np.float32(call64(np.float64(v)))

    @overload(fn)
    def _ov(x):
        dtype = x.dtype if isinstance(x, types.Array) else x
        if isinstance(dtype, types.Complex) or not isinstance(dtype, (types.Number, types.Boolean)):
            raise TypingError(f"{fname}: under jit, x must be a real number or an array of them, got {x}")
        single = dtype == types.float32
        if not isinstance(x, types.Array):
            if single:
                return lambda x: one32(x)
            return lambda x: call64(np.float64(x))
        out_dt = np.float32 if single else np.float64

        def impl(x):
            out = np.empty(x.shape, out_dt)
            of = out.reshape(out.size)
            i = 0
            for v in x.flat:
                of[i] = one32(v) if single else call64(np.float64(v))
                i += 1
            return out

        return impl


_elementwise(sp.gammaln, _scipy_call("gammaln", "gammaln", False))
_elementwise(sp.erf, _scipy_call("erf", "__pyx_fuse_1erf", False))
_elementwise(rt.gammaln, _scipy_call("gammaln", "gammaln", False))  # (the helpers rules call: the same)
_elementwise(rt.erf, _scipy_call("erf", "__pyx_fuse_1erf", False))
_elementwise(
    sp.expit, _scipy_call("expit", "__pyx_fuse_0expit", False), _scipy_call("expit", "__pyx_fuse_1expit", True)
)

_elementwise(sp.psi, _scipy_call("psi", "__pyx_fuse_1psi", False))  # (sp.digamma is sp.psi)
_elementwise(
    sp.logit, _scipy_call("logit", "__pyx_fuse_0logit", False), _scipy_call("logit", "__pyx_fuse_1logit", True)
)


# --- Bessel functions and exponential integrals (issue 20) ---
# the functions of one number, as gammaln; those of an order v and a number x (jv ... kve)
# broadcast v against x and call SciPy's C function of two doubles at each element. float32:
# computed in float64 and rounded, as SciPy's float32 loops do.

for _name in ("j0", "j1", "y0", "y1", "i0", "i1", "i0e", "i1e", "k0", "k1", "k0e", "k1e"):
    _elementwise(getattr(sp, _name), _scipy_call(_name, _name, False))
_elementwise(sp.expi, _scipy_call("expi", "__pyx_fuse_1expi", False))
_elementwise(sp.exp1, _scipy_call("exp1", "__pyx_fuse_1exp1", False))


def _broadcast(fn, call, fname: str, params: str, float32_when) -> None:
    """Register ``fn`` (a SciPy ufunc of the real numbers ``params``, e.g. ``"v, x"``) on numbers
    and broadcast arrays, ``call`` (a jitted function of as many float64) at each element. The
    result is float32 where ``float32_when(*types)`` (the Numba types) says so, else float64."""
    names = [p.strip() for p in params.split(",")]
    namespace = {"np": np, "call": call}
    exec(f"def number({params}):\n    return call({', '.join(f'np.float64({p})' for p in names)})\n", namespace)
    array = (
        f"def array({params}):\n"
        f"    shape = np.broadcast_shapes({', '.join(f'np.shape({p})' for p in names)})\n"
        + "".join(f"    {p}_ = np.broadcast_to({p}, shape)\n" for p in names)
        + "    out = np.empty(shape, out_dt)\n"
        "    for at in np.ndindex(shape):\n"
        f"        out[at] = call({', '.join(f'np.float64({p}_[at])' for p in names)})\n"
        "    return out\n"
    )

    def typer(*args):
        for name, t in zip(names, args, strict=True):
            _real_or_array(t, fname, name)
        if not any(isinstance(t, types.Array) for t in args):
            return namespace["number"]
        scope = dict(namespace, out_dt=np.float32 if float32_when(*args) else np.float64)
        exec(array, scope)
        return scope["array"]

    scope = {"typer": typer}
    exec(f"def _ov({params}):\n    return typer({params})\n", scope)
    overload(fn)(scope["_ov"])


def _is_float32_array(t) -> bool:
    return isinstance(t, types.Array) and t.dtype == types.float32


def _float32_result(v, x) -> bool:
    """SciPy's ufunc of (v, x) gives float32 for a float32 array ``x`` and an order that is a
    number (NEP 50: a Python number takes the array's type) or float32."""
    return _is_float32_array(x) and (_is_float32_array(v) or not isinstance(v, types.Array))


for _name in ("jv", "yv", "iv", "ive", "kv", "kve"):
    _call = _scipy_call(_name, f"__pyx_fuse_1{_name}", nargs=2)
    _broadcast(getattr(sp, _name), _call, f"scipy.special.{_name}", "v, x", _float32_result)
    _broadcast(getattr(rt, _name), _call, f"srctrans.runtime.{_name}", "v, x", _float32_result)  # (the helper: the same)


# --- the functions of the error function, of the gamma function, and of two numbers (issue 20;
# what scipy.stats' densities are written with in srctrans.library.stats): SciPy's own C functions


for _name, _capi in (
    ("ndtr", "__pyx_fuse_1ndtr"), ("log_ndtr", "__pyx_fuse_1log_ndtr"), ("erfc", "__pyx_fuse_1erfc"),
    ("erfcx", "__pyx_fuse_1erfcx"), ("ndtri", "ndtri"), ("erfcinv", "erfcinv"), ("dawsn", "__pyx_fuse_1dawsn"),
    ("gamma", "__pyx_fuse_1gamma"), ("rgamma", "__pyx_fuse_1rgamma"), ("loggamma", "__pyx_fuse_1loggamma"),
    ("entr", "entr"),
):
    _elementwise(getattr(sp, _name), _scipy_call(_name, _capi, False))


def _float32_both(*args) -> bool:
    """SciPy's ufuncs of several numbers (gammainc, hyp2f1 ...) give float32 where all are float32,
    one an array (a Python number beside a float32 array gives float64: these ufuncs do not follow NEP 50)."""
    dtypes = [t.dtype if isinstance(t, types.Array) else t for t in args]
    return any(isinstance(t, types.Array) for t in args) and all(d == types.float32 for d in dtypes)


for _name, _capi in (
    ("gammainc", "gammainc"), ("gammaincc", "gammaincc"), ("betaln", "betaln"), ("xlog1py", "__pyx_fuse_1xlog1py"),
):
    _broadcast(getattr(sp, _name), _scipy_call(_name, _capi, nargs=2), f"scipy.special.{_name}", "a, x", _float32_both)


def _float32_weak(*args) -> bool:
    """SciPy's ufuncs of two numbers that keep float32 beside a number (rel_entr, poch ...):
    float32 where every array is float32 and the rest are numbers."""
    arrays = [t for t in args if isinstance(t, types.Array)]
    return bool(arrays) and all(t.dtype == types.float32 for t in arrays)


_elementwise(
    sp.erfinv, _scipy_call("erfinv", "__pyx_fuse_0erfinv", False), _scipy_call("erfinv", "__pyx_fuse_1erfinv", True)
)
_elementwise(sp.gammasgn, _scipy_call("gammasgn", "gammasgn", False))
for _name, _capi, _when in (
    ("beta", "beta", _float32_both), ("yn", "__pyx_fuse_0yn", _float32_both),
    ("rel_entr", "rel_entr", _float32_weak), ("kl_div", "kl_div", _float32_weak), ("poch", "poch", _float32_weak),
    ("boxcox", "boxcox", _float32_weak), ("boxcox1p", "boxcox1p", _float32_weak), ("owens_t", "owens_t", _float32_weak),
):
    _broadcast(getattr(sp, _name), _scipy_call(_name, _capi, nargs=2), f"scipy.special.{_name}", "a, b", _when)
_broadcast(rt.yn, _scipy_call("yn", "__pyx_fuse_0yn", nargs=2), "srctrans.runtime.yn", "n, x", _float32_both)  # (yn's derivative's)


_broadcast(sp.betainc, _scipy_call("betainc", "__pyx_fuse_0betainc", nargs=3), "scipy.special.betainc", "a, b, x", _float32_weak)
_broadcast(sp.hyp1f1, _scipy_call("hyp1f1", "__pyx_fuse_1hyp1f1", nargs=3), "scipy.special.hyp1f1", "a, b, x", _float32_weak)
_broadcast(rt.hyp1f1, _scipy_call("hyp1f1", "__pyx_fuse_1hyp1f1", nargs=3), "srctrans.runtime.hyp1f1", "a, b, x", _float32_weak)  # (its derivative's)


# --- xlogy, softmax ---


def _real_or_array(x, fname: str, name: str) -> None:
    dtype = x.dtype if isinstance(x, types.Array) else x
    if isinstance(dtype, types.Complex) or not isinstance(dtype, (types.Number, types.Boolean)):
        raise TypingError(f"{fname}: under jit, {name} must be a real number or an array of them, got {x}")


@register_jitable
def _xlogy1(x, y):
    if x == 0 and not np.isnan(y):
        return 0.0
    return x * np.log(y)


@overload(sp.xlogy)
def _ov_xlogy(x, y):
    fname = "scipy.special.xlogy"
    _real_or_array(x, fname, "x")
    _real_or_array(y, fname, "y")
    if not isinstance(x, types.Array) and not isinstance(y, types.Array):
        return lambda x, y: _xlogy1(np.float64(x), np.float64(y))

    def impl(x, y):
        # x * log(y) broadcast, then 0 where x is 0 and y is not NaN
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))

    return impl


@overload(sp.softmax)
def _ov_softmax(x, axis=None):
    fname = "scipy.special.softmax"
    if not isinstance(x, types.Array) or not isinstance(x.dtype, (types.Float, types.Integer)):
        raise TypingError(f"{fname}: under jit, x must be an array of real numbers, got {x}")
    axis_kind(axis, fname)

    def impl(x, axis=None):
        shifted = np.exp(x - np.amax(x, axis=axis, keepdims=True))
        return shifted / np.sum(shifted, axis=axis, keepdims=True)

    return impl


# --- logsumexp ---


@register_jitable
def _reduced_shape(shape, reduced, nd, out_nd):
    """``shape`` without the axes ``reduced`` marks."""
    out = np.empty(out_nd, np.intp)
    j = 0
    for d in range(nd):
        if not reduced[d]:
            out[j] = shape[d]
            j += 1
    return out


@register_jitable
def _take_max_out(x, mask, m, dt):
    """SciPy's ``a`` with its maxima set to -inf, and ``m``: how many maxima each result has."""
    xf, mf, rest = x.ravel(), mask.ravel(), np.empty(x.size, dt)
    for i in range(xf.size):
        rest[i] = -np.inf if mf[i] else xf[i]
    return rest.reshape(x.shape)


@register_jitable
def _logsumexp_kept(x, axis, dt):
    """SciPy's ``_logsumexp`` (no ``b``) and the infinite results replaced by the direct sum,
    each result with the reduced axes kept (size 1), for a non-empty float array ``x``."""
    one, two = dt(1.0), dt(2.0)
    out_inf = np.log(np.sum(np.exp(x), axis=axis, keepdims=True))
    a_max = np.max(x, axis=axis, keepdims=True)
    mask = x == a_max
    m = np.sum(mask.astype(dt), axis=axis, keepdims=True)
    e = np.exp(_take_max_out(x, mask, m, dt) - a_max)
    s = np.sum(e, axis=axis, keepdims=True)
    s = np.where(s == 0, s, s / m)
    sgn = np.sign(s + one) * np.sign(m)
    s = np.where(s < -one, -s - two, s)
    out = np.log1p(s) + np.log(np.abs(m)) + a_max
    of, sf, inf_f = out.ravel(), sgn.ravel(), out_inf.ravel()
    for i in range(of.size):
        if sf[i] < 0:
            of[i] = np.nan
        if not np.isfinite(of[i]):
            of[i] = inf_f[i]
    return of.reshape(out.shape)


@register_jitable
def _empty_kept(shape, reduced, nd, dt):
    """SciPy's result for an empty array: -inf, with the reduced axes kept (size 1)."""
    out = np.empty(nd, np.intp)
    for d in range(nd):
        out[d] = 1 if reduced[d] else shape[d]
    return np.full(to_fixed_tuple(out, nd), -np.inf, dt)


def _reduced_axes(kind: str, nd: int):
    """A jitted ``axes(axis)``: the boolean mask of the axes that ``axis`` (of kind ``kind``,
    ``axis_kind``'s) reduces, checked as NumPy checks them."""
    if kind == "none":

        def axes(axis):
            return np.ones(nd, np.bool_)

    elif kind == "int":

        def axes(axis):
            reduced = np.zeros(nd, np.bool_)
            reduced[norm_axis(unliteral(axis), nd)] = True
            return reduced

    else:

        def axes(axis):
            reduced = np.zeros(nd, np.bool_)
            for ax in unliteral(axis):
                d = norm_axis(ax, nd)
                if reduced[d]:
                    raise ValueError("duplicate value in 'axis'")
                reduced[d] = True
            return reduced

    return register_jitable(axes)


@overload(sp.logsumexp)
def _ov_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    fname = "scipy.special.logsumexp"
    if not is_none(b):
        raise TypingError(f"{fname}: b= is not supported under jit")
    if const_bool(return_sign, fname, "return_sign"):
        raise TypingError(f"{fname}: return_sign=True is not supported under jit")
    if (
        not isinstance(a, types.Array)
        or a.ndim == 0
        or not isinstance(a.dtype, (types.Float, types.Integer, types.Boolean))
    ):
        raise TypingError(f"{fname}: under jit, a must be an array of real numbers (1-D or more), got {a}")
    kind, count = axis_kind(axis, fname)
    keep = const_bool(keepdims, fname, "keepdims")
    nd = a.ndim
    out_nd = 0 if kind == "none" else nd - count
    dt = np.float32 if a.dtype == types.float32 else np.float64
    whole = kind == "none"
    axes = _reduced_axes(kind, nd)

    def kept(a, axis):
        x = np.ascontiguousarray(a).astype(dt)
        reduced = axes(axis)
        if x.size == 0:
            return _empty_kept(x.shape, reduced, nd, dt), reduced
        return _logsumexp_kept(x, axis, dt), reduced

    kept = register_jitable(kept)
    if keep:
        return lambda a, axis=None, b=None, keepdims=False, return_sign=False: kept(a, axis)[0]
    if whole:
        return lambda a, axis=None, b=None, keepdims=False, return_sign=False: kept(a, axis)[0].ravel()[0]

    def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
        out, reduced = kept(a, axis)
        return out.reshape(to_fixed_tuple(_reduced_shape(out.shape, reduced, nd, out_nd), out_nd))

    return impl


# --- scipy.linalg: solve_sylvester, sqrtm and lu of matrices (not stacks) -------------------------
# Other algorithms than SciPy's LAPACK ones: the same numbers to rounding.
import scipy.linalg as _linalg  # noqa: E402

from .arguments import const_bool as _const_bool  # noqa: E402


def _matrices(fname: str, *arrays) -> np.dtype:
    """The dtype of the result (float32 when every array is float32); refuse what is not a matrix."""
    for a in arrays:
        if not isinstance(a, types.Array) or a.ndim != 2 or not isinstance(a.dtype, (types.Float, types.Integer)):
            raise TypingError(f"{fname}: under jit, matrices of real numbers (2-D arrays, not stacks), got {a}")
    return np.float32 if all(a.dtype == types.float32 for a in arrays) else np.float64


@register_jitable
def _sylvester(a, b, q, dt):
    """X with a X + X b = q: the linear system (a kron I + I kron b.T) vec(X) = vec(q), rows first."""
    n, m = q.shape
    big = np.kron(np.ascontiguousarray(a).astype(np.float64), np.eye(m)) + np.kron(
        np.eye(n), np.ascontiguousarray(b.T).astype(np.float64)
    )
    x = np.linalg.solve(big, np.ascontiguousarray(q).astype(np.float64).reshape(n * m))
    return x.reshape((n, m)).astype(dt)


@overload(_linalg.solve_sylvester)
def _ov_solve_sylvester(a, b, q):
    dt = _matrices("scipy.linalg.solve_sylvester", a, b, q)
    return lambda a, b, q: _sylvester(a, b, q, dt)


@overload(rt.solve_sylvester)
def _ov_rt_solve_sylvester(a, b, q):
    dt = _matrices("srctrans.runtime.solve_sylvester", a, b, q)
    return lambda a, b, q: _sylvester(a, b, q, dt)


@register_jitable
def _sqrtm(a, dt):
    """Denman and Beavers' iteration: y -> (y + inv(z)) / 2, z -> (z + inv(y)) / 2 from (a, I)
    converges to (sqrt(a), inv(sqrt(a))) where a has no eigenvalue on the closed negative axis."""
    y = np.ascontiguousarray(a).astype(np.float64)
    z = np.eye(a.shape[0])
    for _ in range(100):
        y_next = 0.5 * (y + np.linalg.inv(z))
        z = 0.5 * (z + np.linalg.inv(y))
        change = np.max(np.abs(y_next - y)) if y.size else 0.0
        y = y_next
        if change <= 1e-15 * max(1.0, np.max(np.abs(y))):
            return y.astype(dt)
    raise ValueError("scipy.linalg.sqrtm under jit: no real square root found (an eigenvalue on the negative axis?)")


@overload(_linalg.sqrtm)
def _ov_sqrtm(A, disp=None, blocksize=None):
    dt = _matrices("scipy.linalg.sqrtm", A)
    return lambda A, disp=None, blocksize=None: _sqrtm(A, dt)


@register_jitable
def _lu(a, dt):
    """p, l, u with a = p l u: Gaussian elimination with partial pivoting (the first largest
    magnitude in the column, as LAPACK's getrf picks)."""
    m, n = a.shape
    k = min(m, n)
    w = np.ascontiguousarray(a).astype(np.float64).copy()
    perm = np.arange(m)
    for j in range(k):
        pivot = j + np.argmax(np.abs(w[j:, j]))
        if pivot != j:
            for c in range(n):
                w[j, c], w[pivot, c] = w[pivot, c], w[j, c]
            perm[j], perm[pivot] = perm[pivot], perm[j]
        if w[j, j] != 0.0:
            for r in range(j + 1, m):
                w[r, j] /= w[j, j]
                for c in range(j + 1, n):
                    w[r, c] -= w[r, j] * w[j, c]
    p = np.zeros((m, m), dt)
    for i in range(m):
        p[perm[i], i] = 1.0
    low = np.zeros((m, k), dt)
    up = np.zeros((k, n), dt)
    for i in range(m):
        for j in range(k):
            if i == j:
                low[i, j] = 1.0
            elif i > j:
                low[i, j] = w[i, j]
    for i in range(k):
        for j in range(i, n):
            up[i, j] = w[i, j]
    return p, low, up


@overload(_linalg.lu)
def _ov_lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    dt = _matrices("scipy.linalg.lu", a)
    if _const_bool(p_indices, "scipy.linalg.lu", "p_indices"):
        raise TypingError("scipy.linalg.lu: p_indices=True is not supported under jit")
    if _const_bool(permute_l, "scipy.linalg.lu", "permute_l"):

        def impl_permuted(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
            p, low, up = _lu(a, dt)
            return p @ low, up

        return impl_permuted
    return lambda a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False: _lu(a, dt)


@register_jitable
def _right_solve(x, u):
    """x @ inv(u)."""
    return np.linalg.solve(np.ascontiguousarray(u.T), np.ascontiguousarray(x.T)).T


@register_jitable
def _lu_tangents(t, p, low, up):
    f = _right_solve(np.linalg.solve(low, np.ascontiguousarray(p.T) @ np.ascontiguousarray(t)), up)
    return low @ np.ascontiguousarray(np.tril(f, -1)), np.ascontiguousarray(np.triu(f)) @ up


@register_jitable
def _lu_adjoint(gl, gu, p, low, up):
    m = np.tril(np.ascontiguousarray(low.T) @ np.ascontiguousarray(gl), -1) + np.triu(
        np.ascontiguousarray(gu) @ np.ascontiguousarray(up.T)
    )
    return p @ np.ascontiguousarray(_right_solve(np.linalg.solve(np.ascontiguousarray(low.T), m), np.ascontiguousarray(up.T)))


@overload(rt.lu_jvp)
def _ov_lu_jvp(t, a, ans, permute_l=False):
    dt = _matrices("srctrans.runtime.lu_jvp", a)
    if _const_bool(permute_l, "srctrans.runtime.lu_jvp", "permute_l"):

        def impl_permuted(t, a, ans, permute_l=False):
            p, low, up = _lu(a, dt)
            low_dot, up_dot = _lu_tangents(t, p, low, up)
            return p @ low_dot, up_dot

        return impl_permuted

    def impl(t, a, ans, permute_l=False):
        p, low, up = ans
        low_dot, up_dot = _lu_tangents(t, p, low, up)
        return np.zeros_like(p), low_dot, up_dot

    return impl


@overload(rt.lu_grad)
def _ov_lu_grad(g, a, ans, permute_l=False):
    dt = _matrices("srctrans.runtime.lu_grad", a)
    if _const_bool(permute_l, "srctrans.runtime.lu_grad", "permute_l"):

        def impl_permuted(g, a, ans, permute_l=False):
            p, low, up = _lu(a, dt)
            return _lu_adjoint(np.ascontiguousarray(p.T) @ np.asarray(g[0]), np.asarray(g[1]), p, low, up)

        return impl_permuted

    def impl(g, a, ans, permute_l=False):
        p, low, up = ans
        return _lu_adjoint(np.asarray(g[1]), np.asarray(g[2]), p, low, up)

    return impl


# --- the last functions with rules (issue 20): sici and fresnel (pairs of results), hyp2f1 (four
# numbers), Hurwitz's zeta and what SciPy writes with it (polygamma), multigammaln, factorial,
# log_softmax; numpy.i0 (SciPy's C i0 is the Cephes algorithm NumPy's float64 i0 follows: the
# same numbers, bit for bit; float32 is computed in float64 and rounded, where NumPy computes in
# float32, so the last bit may differ)


def _scipy_pair(name: str, capi_name: str):
    """A jitted call of ``cython_special``'s ``void f(double, double *, double *)``: a pair of floats."""
    address = get_cython_function_address("scipy.special.cython_special", capi_name)
    symbol = f"srctrans.scipy.{name}"
    ll.add_symbol(symbol, address)
    double = llvm_ir.DoubleType()

    def codegen(context, builder, signature, args):
        fnty = llvm_ir.FunctionType(llvm_ir.VoidType(), [double, double.as_pointer(), double.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        fn.attributes.add("nounwind")
        first, second = cgutils.alloca_once(builder, double), cgutils.alloca_once(builder, double)
        builder.call(fn, [args[0], first, second])
        return context.make_tuple(builder, signature.return_type, [builder.load(first), builder.load(second)])

    return _intrinsic(1, types.UniTuple(types.float64, 2)(types.float64), codegen)


def _pair(fn, call) -> None:
    """Register ``fn`` (a SciPy ufunc of one real number with two results) on numbers and arrays:
    a pair of numbers or of arrays, float32 for float32 (computed in float64, as SciPy's loop)."""
    fname = f"scipy.special.{fn.__name__}"

    @overload(fn)
    def _ov(x):
        _real_or_array(x, fname, "x")
        dtype = x.dtype if isinstance(x, types.Array) else x
        dt = np.float32 if dtype == types.float32 else np.float64
        if not isinstance(x, types.Array):

            def number(x):
                first, second = call(np.float64(x))
                return dt(first), dt(second)

            return number

        def array(x):
            first, second = np.empty(x.shape, dt), np.empty(x.shape, dt)
            first_flat, second_flat = first.reshape(first.size), second.reshape(second.size)
            i = 0
            for v in x.flat:
                first_flat[i], second_flat[i] = call(np.float64(v))
                i += 1
            return first, second

        return array


def _map_floats(scalar, dt):
    """A jitted ``x -> scalar(x)`` of each element of the array ``x`` (as a float64), an array of dtype ``dt``."""

    def each(x):
        out = np.empty(x.shape, dt)
        flat = out.reshape(out.size)
        i = 0
        for v in x.flat:
            flat[i] = scalar(np.float64(v))
            i += 1
        return out

    return register_jitable(each)


_pair(sp.sici, _scipy_pair("sici", "__pyx_fuse_1sici"))
_pair(sp.fresnel, _scipy_pair("fresnel", "__pyx_fuse_1fresnel"))

_hyp2f1 = _scipy_call("hyp2f1", "__pyx_fuse_1hyp2f1", nargs=4)
_broadcast(sp.hyp2f1, _hyp2f1, "scipy.special.hyp2f1", "a, b, c, z", _float32_both)
_broadcast(rt.hyp2f1, _hyp2f1, "srctrans.runtime.hyp2f1", "a, b, c, z", _float32_both)  # (its derivative's)

_i0 = _scipy_call("i0", "i0")


@overload(np.i0)
def _ov_i0(x):
    _real_or_array(x, "numpy.i0", "x")
    if not isinstance(x, types.Array):
        return lambda x: _i0(np.float64(x)) if x == x else np.nan  # (a number: a float, not a 0-d array)
    each = _map_floats(_i0, np.float32 if x.dtype == types.float32 else np.float64)
    return lambda x: each(x)


# the (2j)! / B_2j of the Euler-Maclaurin sum below (B_2j: Bernoulli's numbers), from the recurrence
# sum over k < m of C(m + 1, k) B_k = -(m + 1) B_m
def _bernoulli_ratios(count: int) -> tuple[float, ...]:
    from fractions import Fraction
    from math import comb, factorial

    b = [Fraction(1)]
    for m in range(1, 2 * count + 1):
        b.append(-sum(comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return tuple(float(factorial(2 * j) / b[2 * j]) for j in range(1, count + 1))


_EULER_MACLAURIN = _bernoulli_ratios(12)
_EPSILON = float(np.finfo(np.float64).eps)


@register_jitable
def _zeta_sum(s, q):
    """The sum over k >= 0 of (k + q) ** -s (for any s but 1): the terms are summed until
    q + k > 9 (and at least nine of them), then Euler-Maclaurin's tail closes the sum."""
    total = q**-s
    a = q
    term = 0.0
    k = 0
    while k < 9 or a <= 9.0:
        k += 1
        a += 1.0
        term = a**-s
        total += term
        if abs(term) <= _EPSILON * abs(total):
            return total
    total += term * a / (s - 1.0) - 0.5 * term
    rising = 1.0  # s (s + 1) ... (s + 2j - 2)
    for j in range(len(_EULER_MACLAURIN)):
        rising *= s + 2.0 * j
        term /= a
        tail = rising * term / _EULER_MACLAURIN[j]
        total += tail
        if abs(tail) <= _EPSILON * abs(total):
            break
        rising *= s + 2.0 * j + 1.0
        term /= a
    return total


@register_jitable
def _hurwitz_zeta1(s, q):
    """Hurwitz's zeta as SciPy's zeta(s, q): inf at s = 1 and at the poles q = 0, -1, -2 ...;
    NaN for s < 1, and for q < 0 with s not an integer."""
    s, q = float(s), float(q)
    if np.isnan(s) or np.isnan(q):
        return np.nan
    if s == 1.0:
        return np.inf
    if s < 1.0:
        return np.nan
    if q <= 0.0:
        if q == np.floor(q):
            return np.inf
        if s != np.floor(s):
            return np.nan
    return _zeta_sum(s, q)


_sin_pi = register_jitable(lambda x: math.sin(np.pi * (x - 2.0 * np.floor(0.5 * x))))  # (x reduced mod 2)


@register_jitable
def _riemann_zeta1(s):
    """Riemann's zeta (SciPy's zeta(s) without q): the sum at q = 1 for s >= 0, the functional
    equation zeta(s) = 2^s pi^(s-1) sin(pi s / 2) Gamma(1 - s) zeta(1 - s) below 0."""
    s = float(s)
    if np.isnan(s):
        return np.nan
    if s == 1.0:
        return np.inf
    if s >= 0.0:
        return _zeta_sum(s, 1.0)
    if 0.5 * s == np.floor(0.5 * s):
        return 0.0  # the trivial zeros
    return 2.0**s * np.pi ** (s - 1.0) * _sin_pi(0.5 * s) * math.gamma(1.0 - s) * _zeta_sum(1.0 - s, 1.0)


def _riemann_zeta(x):
    """(what ``scipy.special.zeta(x)`` without ``q`` calls under jit: overloaded below)"""
    raise NotImplementedError


_broadcast(rt.zeta, _hurwitz_zeta1, "srctrans.runtime.zeta", "x, q", _float32_weak)
_broadcast(_riemann_zeta, _riemann_zeta1, "scipy.special.zeta", "x", _float32_weak)


@overload(sp.zeta)
def _ov_zeta(x, q=None, out=None):
    if not is_none(out):
        raise TypingError("scipy.special.zeta: out= is not supported under jit")
    if is_none(q):
        return lambda x, q=None, out=None: _riemann_zeta(x)
    return lambda x, q=None, out=None: rt.zeta(x, q)


_gamma = _scipy_call("gamma", "__pyx_fuse_1gamma")
_psi = _scipy_call("psi", "__pyx_fuse_1psi")
_gammaln = _scipy_call("gammaln", "gammaln")


@register_jitable
def _polygamma_scipy1(n, x):
    """scipy.special.polygamma(n, x): psi(x) for n = 0, else (-1)^(n+1) Gamma(n+1) zeta(n+1, x)
    (NaN for an n that is not a natural number)."""
    if n == 0.0:
        return _psi(x)
    if n < 0.0 or n != np.floor(n):
        return np.nan
    sign = 1.0 if n % 2.0 == 1.0 else -1.0
    return sign * _gamma(n + 1.0) * _hurwitz_zeta1(n + 1.0, x)


_broadcast(sp.polygamma, _polygamma_scipy1, "scipy.special.polygamma", "n, x", lambda n, x: False)


@register_jitable
def _multigammaln1(a, d):
    """log of the multivariate gamma function, as SciPy sums it: d (d - 1) / 4 log(pi) plus the
    gammaln(a - j / 2) for j < d, in order."""
    if a <= 0.5 * (d - 1):
        raise ValueError("scipy.special.multigammaln: condition a > 0.5 * (d - 1) not met")
    total = _gammaln(a)
    for j in range(1, d):
        total += _gammaln(a - 0.5 * j)
    return (d * (d - 1) * 0.25) * np.log(np.pi) + total


@overload(sp.multigammaln)
def _ov_multigammaln(a, d):
    fname = "scipy.special.multigammaln"
    _real_or_array(a, fname, "a")
    if not isinstance(d, (types.Integer, types.Float)):
        raise TypingError(f"{fname}: d must be a positive integer (the dimension), got {d}")

    def dimension(d):
        if np.floor(d) != d:
            raise ValueError("scipy.special.multigammaln: d should be a positive integer (dimension)")
        return int(d)

    dimension = register_jitable(dimension)
    if not isinstance(a, types.Array):
        return lambda a, d: _multigammaln1(np.float64(a), dimension(d))

    def impl(a, d):
        dim = dimension(d)
        out = np.empty(a.shape)
        flat = out.reshape(out.size)
        i = 0
        for v in a.flat:
            flat[i] = _multigammaln1(np.float64(v), dim)
            i += 1
        return out

    return impl


@register_jitable
def _factorial1(n):
    """scipy.special.factorial(n) (exact=False): Gamma(n + 1), 0 below 0, NaN kept."""
    if n < 0.0:
        return 0.0
    if n == 0.0 or n == 1.0:
        return 1.0
    return _gamma(n + 1.0)


@overload(sp.factorial)
def _ov_factorial(n, exact=False, extend="zero"):
    fname = "scipy.special.factorial"
    dtype = n.dtype if isinstance(n, types.Array) else n
    if not isinstance(dtype, (types.Integer, types.Float)):
        raise TypingError(f"{fname}: under jit, n must be a real number or an array of them, got {n}")
    if const_bool(exact, fname, "exact"):
        raise TypingError(f"{fname}: exact=True (Python's integers) is not supported under jit")
    if getattr(extend, "literal_value", getattr(extend, "value", extend)) != "zero":  # (omitted: the str itself)
        raise TypingError(f"{fname}: only extend='zero' is supported under jit, got {extend}")
    if not isinstance(n, types.Array):
        return lambda n, exact=False, extend="zero": _factorial1(np.float64(n))
    each = _map_floats(_factorial1, np.float64)
    return lambda n, exact=False, extend="zero": each(n)


@overload(sp.log_softmax)
def _ov_log_softmax(x, axis=None):
    fname = "scipy.special.log_softmax"
    _real_or_array(x, fname, "x")
    if not isinstance(x, types.Array):

        def number(x, axis=None):
            shift = x if np.isfinite(x) else 0.0
            return (x - shift) - np.log(np.exp(x - shift))

        return number
    axis_kind(axis, fname)

    def impl(x, axis=None):
        # SciPy's steps: the finite maxima taken out, then the log of the sum of the exponentials
        x_max = np.amax(x, axis=axis, keepdims=True)
        flat = x_max.reshape(x_max.size)
        for i in range(flat.size):
            if not np.isfinite(flat[i]):
                flat[i] = 0
        tmp = x - x_max
        return tmp - np.log(np.sum(np.exp(tmp), axis=axis, keepdims=True))

    return impl
