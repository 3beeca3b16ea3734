"""``srctrans.random`` inside ``numba.njit`` functions.

Importing this module makes calls to the functions of ``srctrans.random`` compile
in nopython mode, with the same results as the uncompiled functions, bit for bit
(same key, shape, dtype and parameters).  The compiled code is built from the
scalar kernels of ``srctrans.random`` (listed in its ``JITTABLE_KERNELS``), which
are registered here as jittable functions: one loop over the flat output, one
Threefry hash per element (per draw, for the rejection loops of ``gamma``).
``normal`` runs in passes over the output and one temporary, so that LLVM
vectorizes the branch-free ones (the hash, and the central polynomial of erfinv,
which all but the tails take); the same operations in the same order, so the same
bits.  The uncompiled samplers use vectorized twins of the kernels, performing the
same operations in the same order; where they need ``exp``, ``pow`` or ``erf`` both
paths call the C library's float64 function (Numba's ``math.exp`` ... do too),
never NumPy's SIMD versions or SciPy's.

What compiles (anything else raises ``TypingError`` naming the argument):

- ``key``: a 1-D ``uint32`` array (its length is checked at run time: 2).
- ``shape`` / ``num``: an integer or a tuple of integers (may be empty);
  ``choice`` takes a tuple only, as uncompiled.  Where the uncompiled function
  takes ``shape=None`` (the parameters' broadcast shape), so does the compiled one.
- ``dtype``: a NumPy scalar type or dtype (``np.float32``, ``np.dtype('int64')``),
  a string such as ``'float32'``, the builtins ``float``/``int``, or omitted/None
  for the default (floats: float64, ``bits``: uint32, ``randint``: int64).
  Floats: float32, float64 (no float16).  ``bits``: uint8, uint16, uint32,
  uint64.  ``randint``: int8, int16, int32, int64, uint8, uint16, uint32.
- ``split``, ``fold_in`` (``data`` an integer, taken modulo 2**32; the uncompiled
  function raises ``OverflowError`` for a Python int outside [0, 2**32)),
  ``bits``, ``uniform``, ``normal``, ``exponential``, ``gumbel`` (``mode`` a
  constant 'low'/'high').
- ``randint``, ``uniform``: ``minval``/``maxval`` scalars or arrays that broadcast
  to ``shape``.
- ``bernoulli``: ``p`` a float32/float64 scalar or array (its dtype is the
  dtype of the draw, as uncompiled), ``mode`` a constant.
- ``truncated_normal``: ``lower``/``upper`` scalars or arrays.
- ``gamma``, ``loggamma``: ``a`` scalar or array; ``beta``: ``a``, ``b`` scalars
  or arrays.
- ``categorical``: ``logits`` a float32/float64 array of any ndim, ``axis`` the
  constant -1 (or ndim - 1; for 1-D logits also 0), ``shape``, ``replace`` (a bool,
  with or without replacement), ``mode`` a constant.
- ``permutation``: ``x`` an integer (a shuffled ``arange(x)``) or an array,
  shuffled along ``axis`` 0 (a constant); ``independent=True`` only for 1-D
  arrays (where it is the same thing).
- ``choice``: ``a`` an integer or a 1-D array, ``shape`` a tuple, ``replace``
  a bool, ``p`` None or a 1-D array, ``axis`` the constant 0, ``mode`` a constant.
- ``multivariate_normal``: ``mean`` a 1-D and ``cov`` a 2-D float array (no
  batches of them), ``shape``, ``dtype``, ``method`` the constant 'cholesky'.  The
  Cholesky factor and ``factor @ z`` are computed by the kernels of
  ``srctrans.random`` in a fixed order (the uncompiled function uses the same
  order), not by LAPACK.
- ``key(seed)`` (an integer seed), ``key_data``, ``wrap_key_data`` (uint32
  arrays of shape ``(..., 2)``, returned as copies).

The fused multiply-adds that ``srctrans.random`` emulates in software
(``_fma_f32``, ``_fma_f64``) compile to the ``llvm.fma`` intrinsics: one
instruction on CPUs with FMA, rounding the same way as the emulation.

Not done yet: float16;
``categorical`` along an axis other than the last; ``permutation`` along another
axis or ``independent=True`` for arrays of more than 1 dimension; ``choice`` of an
N-D ``a`` or along another axis; ``multivariate_normal`` with ``method`` 'svd' or
'eigh' or with batches of means/covariances; and a check that the kernels compile
for CUDA devices.  Numba compiles one specialization per combination of argument
types, about a second each on a small machine.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as llvm_ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype

import srctrans.random as _r

# --- the kernels of srctrans.random, compiled as they are ------------------

def _libm_address(name: str) -> int | None:
    """The address of the C library's function ``name`` in this process, or None."""
    import ctypes

    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value
    except (AttributeError, OSError, TypeError):  # pragma: no cover - not a POSIX dlopen
        return None


def _libm_call(kernel, name: str, arity: int) -> bool:
    """Compile ``kernel`` (``math.log`` of a float64 ...) as a call of the C library's ``name``
    through a symbol of our own, which LLVM knows nothing about: it cannot turn a loop of them
    into one call of a vector function (``llvm.log.v4f64``), which ``vector_math`` would send
    to libmvec, whose last bit differs. So each draw calls the same scalar function as the
    uncompiled kernel, compiled cold or loaded from the cache. False where ``name`` is not found."""
    import llvmlite.binding as ll

    address = _libm_address(name)
    if not address:
        return False
    symbol = f"srctrans.libm.{name}"
    ll.add_symbol(symbol, address)
    double = llvm_ir.DoubleType()

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(double, [double] * arity), symbol)
        fn.attributes.add("nounwind")
        return builder.call(fn, args)

    if arity == 1:
        @intrinsic
        def call(typingctx, x):
            return types.float64(types.float64), codegen

        @overload(kernel)
        def _ol(x):
            return lambda x: call(np.float64(x))
    else:
        @intrinsic
        def call(typingctx, x, y):
            return types.float64(types.float64, types.float64), codegen

        @overload(kernel)
        def _ol(x, y):
            return lambda x, y: call(np.float64(x), np.float64(y))
    return True


_OPAQUE = {
    kernel
    for kernel, name, arity in (
        (_r._log_libm, "log", 1), (_r._exp_libm, "exp", 1), (_r._pow_libm, "pow", 2), (_r._erf_libm, "erf", 1),
    )
    if _libm_call(kernel, name, arity)
}

for _kernel in _r.JITTABLE_KERNELS:
    if _kernel not in (_r._fma_f32, _r._fma_f64) and _kernel not in _OPAQUE:
        register_jitable(_kernel)


def _llvm_fma(nbtype, lltype, name):
    @intrinsic
    def fma(typingctx, a, b, c):
        sig = nbtype(nbtype, nbtype, nbtype)

        def codegen(context, builder, signature, args):
            fnty = llvm_ir.FunctionType(lltype, [lltype] * 3)
            fn = cgutils.get_or_insert_function(builder.module, fnty, name)
            return builder.call(fn, args)

        return sig, codegen
    return fma


_llvm_fma_f32 = _llvm_fma(types.float32, llvm_ir.FloatType(), "llvm.fma.f32")
_llvm_fma_f64 = _llvm_fma(types.float64, llvm_ir.DoubleType(), "llvm.fma.f64")


@overload(_r._fma_f32)
def _ol_fma_f32(a, b, c):
    def impl(a, b, c):
        return _llvm_fma_f32(np.float32(a), np.float32(b), np.float32(c))
    return impl


@overload(_r._fma_f64)
def _ol_fma_f64(a, b, c):
    def impl(a, b, c):
        return _llvm_fma_f64(np.float64(a), np.float64(b), np.float64(c))
    return impl


# --- typing-time helpers ---------------------------------------------------

def _where(fname):
    return f"srctrans.random.{fname} (compiled)"


def _is_none(t):
    return t is None or isinstance(t, types.NoneType) or (
        isinstance(t, types.Omitted) and t.value is None)


def _check_key(key, fname):
    if not (isinstance(key, types.Array) and key.ndim == 1 and key.dtype == types.uint32):
        raise TypingError(
            f"{_where(fname)}: argument 'key' must be a uint32 array of shape (2,) "
            f"(from srctrans.random.key), got {key}")


def _resolve_dtype(dtype, fname, default, allowed):
    if _is_none(dtype):
        return np.dtype(default)
    try:
        if isinstance(dtype, types.Omitted):
            dt = np.dtype(dtype.value)
        elif isinstance(dtype, types.NumberClass):
            dt = as_dtype(dtype.instance_type)
        elif isinstance(dtype, types.DType):
            dt = as_dtype(dtype.dtype)
        elif isinstance(dtype, types.StringLiteral):
            dt = np.dtype(dtype.literal_value)
        elif isinstance(dtype, types.Function) and dtype.typing_key in (float, int):
            dt = np.dtype(dtype.typing_key)     # the builtins float / int
        else:
            raise TypeError
    except TypeError:
        raise TypingError(f"{_where(fname)}: argument 'dtype' must be a NumPy dtype, "
                          f"got {dtype}") from None
    if dt not in [np.dtype(a) for a in allowed]:
        raise TypingError(f"{_where(fname)}: dtype {dt} is not supported here; "
                          f"use one of {', '.join(str(np.dtype(a)) for a in allowed)}")
    return dt


_shape_converters = {}


def _shape_converter(shape, fname, argname="shape"):
    """A jittable function turning the ``shape`` argument into a tuple of int64."""
    if isinstance(shape, (types.Omitted, int, tuple)):   # omitted: the default value
        value = shape.value if isinstance(shape, types.Omitted) else shape
        if isinstance(value, (int, np.integer)):
            value = (value,)
        if isinstance(value, tuple) and all(isinstance(d, (int, np.integer)) for d in value):
            dims = tuple(int(d) for d in value)
            if dims not in _shape_converters:
                _shape_converters[dims] = register_jitable(lambda s: dims)
            return _shape_converters[dims]
    elif isinstance(shape, types.Integer):
        return _shape_int
    elif isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape):
        n = len(shape)
        if n not in _shape_converters:
            body = ", ".join(f"np.int64(s[{i}])" for i in range(n))
            ns = {"np": np}
            exec(f"def conv(s):\n    return ({body}{',' if n == 1 else ''})\n", ns)
            _shape_converters[n] = register_jitable(ns["conv"])
        return _shape_converters[n]
    raise TypingError(f"{_where(fname)}: argument {argname!r} must be an int or a tuple "
                      f"of ints, got {shape}")


@register_jitable
def _shape_int(s):
    return (np.int64(s),)


@register_jitable
def _check_dim(d):
    if d < 0:
        raise ValueError("srctrans.random: negative dimension in shape")
    return d


def _check_shape_values(shp):
    """Number of elements of the shape tuple ``shp`` (checked non-negative)."""


@overload(_check_shape_values)
def _ol_check_shape_values(shp):
    n = len(shp)
    if n not in _sizers:
        body = "".join(f"    n *= _check_dim(shp[{i}])\n" for i in range(n))
        ns = {"_check_dim": _check_dim, "np": np}
        exec(f"def size(shp):\n    n = np.int64(1)\n{body}    return n\n", ns)
        _sizers[n] = ns["size"]
    return _sizers[n]


_sizers = {}


@register_jitable
def _key_words(key):
    if key.shape[0] != 2:
        raise TypeError("srctrans.random: argument 'key' must have shape (2,)")
    return key[0], key[1]


def _check_scalar(x, fname, argname):
    if isinstance(x, (int, float, types.Omitted)):   # omitted: the default value
        return
    if not isinstance(x, types.Number) or isinstance(x, types.Complex):
        raise TypingError(f"{_where(fname)}: argument {argname!r} must be a real scalar "
                          f"here (array bounds compile only in uncompiled code), got {x}")


def _check_real(x, fname, argname):
    """A real scalar or an array of them (bounds that broadcast to the draw's shape)."""
    kind = x.dtype if isinstance(x, types.Array) else x
    if isinstance(kind, (int, float, types.Omitted)):
        return
    if not isinstance(kind, (types.Integer, types.Float)):
        raise TypingError(f"{_where(fname)}: argument {argname!r} must be a real scalar "
                          f"or array, got {x}")


@register_jitable
def _as_int32(v):
    """``v`` converted to int32 as NumPy's ``astype`` does (wrapping), as int64."""
    return ((v + 2147483648) & 0xFFFFFFFF) - 2147483648


@register_jitable
def _flat_bound(values, shp, n):
    """``values`` broadcast to the draw's shape ``shp``, flat (the uncompiled check and message)."""
    if values.ndim > len(shp):
        raise ValueError("parameter shapes must broadcast to the shape argument")
    for k in range(values.ndim):
        d = values.shape[values.ndim - 1 - k]
        if d != 1 and d != shp[len(shp) - 1 - k]:
            raise ValueError("parameter shapes must broadcast to the shape argument")
    return np.broadcast_to(values, shp).copy().reshape(n)


# --- overloads of the public functions --------------------------------------

@overload(_r.split)
def _ol_split(key, num=2):
    _check_key(key, "split")
    to_shape = _shape_converter(num, "split", "num")

    def impl(key, num=2):
        k0, k1 = _key_words(key)
        shp = to_shape(num)
        n = _check_shape_values(shp)
        out = np.empty((n, 2), np.uint32)
        for i in range(n):
            b0, b1 = _r._words_at(k0, k1, i)
            out[i, 0] = np.uint32(b0)
            out[i, 1] = np.uint32(b1)
        return out.reshape(shp + (2,))
    return impl


@overload(_r.fold_in)
def _ol_fold_in(key, data):
    _check_key(key, "fold_in")
    if not isinstance(data, types.Integer):
        raise TypingError(f"{_where('fold_in')}: argument 'data' must be an integer, got {data}")

    def impl(key, data):
        k0, k1 = _key_words(key)
        b0, b1 = _r._threefry2x32_pair(k0, k1, 0, np.int64(data) & 0xFFFFFFFF)
        out = np.empty(2, np.uint32)
        out[0] = np.uint32(b0)
        out[1] = np.uint32(b1)
        return out
    return impl


@overload(_r.bits)
def _ol_bits(key, shape=(), dtype=None):
    _check_key(key, "bits")
    to_shape = _shape_converter(shape, "bits")
    dt = _resolve_dtype(dtype, "bits", np.uint32, (np.uint8, np.uint16, np.uint32, np.uint64))

    if dt == np.uint64:
        def impl(key, shape=(), dtype=None):
            k0, k1 = _key_words(key)
            shp = to_shape(shape)
            n = _check_shape_values(shp)
            out = np.empty(n, np.uint64)
            for i in range(n):
                b0, b1 = _r._words_at(k0, k1, i)
                out[i] = (np.uint64(b0) << np.uint64(32)) | np.uint64(b1)
            return out.reshape(shp)
        return impl

    nptype = dt.type
    mask = (1 << (8 * dt.itemsize)) - 1

    def impl(key, shape=(), dtype=None):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n = _check_shape_values(shp)
        out = np.empty(n, nptype)
        for i in range(n):
            out[i] = nptype(_r._bits32_at(k0, k1, i) & mask)
        return out.reshape(shp)
    return impl


@overload(_r.uniform)
def _ol_uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    _check_key(key, "uniform")
    to_shape = _shape_converter(shape, "uniform")
    dt = _resolve_dtype(dtype, "uniform", np.float64, (np.float32, np.float64))
    nptype = dt.type
    at = _r._uniform_f32_at if dt == np.float32 else _r._uniform_f64_at
    if isinstance(minval, types.Array) or isinstance(maxval, types.Array):
        _check_real(minval, "uniform", "minval")
        _check_real(maxval, "uniform", "maxval")

        def impl_bounds(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
            k0, k1 = _key_words(key)
            shp = to_shape(shape)
            n = _check_shape_values(shp)
            lo = _flat_bound(np.asarray(minval).astype(nptype), shp, n)
            hi = _flat_bound(np.asarray(maxval).astype(nptype), shp, n)
            out = np.empty(n, nptype)
            for i in range(n):
                out[i] = at(k0, k1, i, lo[i], hi[i] - lo[i])
            return out.reshape(shp)
        return impl_bounds
    _check_scalar(minval, "uniform", "minval")
    _check_scalar(maxval, "uniform", "maxval")

    def impl(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n = _check_shape_values(shp)
        lo = nptype(minval)
        span = nptype(maxval) - lo
        out = np.empty(n, nptype)
        for i in range(n):
            out[i] = at(k0, k1, i, lo, span)
        return out.reshape(shp)
    return impl


def _horner(name: str, coefs, fma):
    """``name(w)``: the polynomial ``coefs`` (highest power first) by Horner's rule, one
    fused multiply-add per coefficient, written out (no loop, no loads: LLVM vectorizes
    a loop that calls it)."""
    c = [repr(float(v)) for v in coefs]
    lines = [f"def {name}(w):", f"    p = nptype({c[0]})"]
    lines += [f"    p = fma(p, w, nptype({v}))" for v in c[1:]]
    lines.append("    return p")
    ns = {"fma": fma, "nptype": np.dtype(coefs.dtype).type}
    exec("\n".join(lines), ns)  # noqa: S102 - the text is made from the constants above
    return register_jitable(ns[name])


# The central polynomial of erfinv, which all but about 0.2% (float64) or 0.6%
# (float32) of normal draws take: w < 6.25 (float64), w < 5 (float32).
_erfinv_center_f64 = _horner("_erfinv_center_f64", _r._ERFINV_F64_LT6_25, _llvm_fma_f64)
_erfinv_center_f32 = _horner("_erfinv_center_f32", _r._ERFINV_F32_LT5, _llvm_fma_f32)


@register_jitable
def _normal_fill_f64(k0, k1, out, w):
    """``out[i] = normal element i``, in passes that LLVM can vectorize where they have no branch."""
    n = out.shape[0]
    lo = _r._NORMAL_LO_F64
    for i in range(n):  # the hash, a uniform draw in (-1, 1)
        b0, b1 = _r._words_at(k0, k1, i)
        out[i] = max(lo, _r._uniform01_f64_from_words(b0, b1) * _r._NORMAL_SPAN_F64 + lo)
    for i in range(n):  # erfinv's w = -log1p(-x * x): a branch and a libm log, one at a time
        x = out[i]
        w[i] = -_r._log1p_f64(x * -x)
    for i in range(n):  # the central polynomial for every element
        out[i] = _r._SQRT2_F64 * (_erfinv_center_f64(w[i] - 3.125) * out[i])
    for i in range(n):  # the tails (and x = -1), again in full
        if not w[i] < 6.25:
            out[i] = _r._normal_f64_at(k0, k1, i)


@register_jitable
def _normal_fill_f32(k0, k1, out, w):
    n = out.shape[0]
    lo = _r._NORMAL_LO_F32
    for i in range(n):
        b0, b1 = _r._words_at(k0, k1, i)
        out[i] = max(lo, _r._uniform01_f32_from_words(b0, b1) * _r._NORMAL_SPAN_F32 + lo)
    for i in range(n):
        x = out[i]
        w[i] = -_r._log1p_f32(x * -x)
    for i in range(n):
        out[i] = _r._SQRT2_F32 * (_erfinv_center_f32(w[i] - np.float32(2.5)) * out[i])
    for i in range(n):
        if not w[i] < np.float32(5.0):
            out[i] = _r._normal_f32_at(k0, k1, i)


@overload(_r.normal)
def _ol_normal(key, shape=(), dtype=None):
    _check_key(key, "normal")
    to_shape = _shape_converter(shape, "normal")
    dt = _resolve_dtype(dtype, "normal", np.float64, (np.float32, np.float64))
    nptype = dt.type
    fill = _normal_fill_f32 if dt == np.float32 else _normal_fill_f64

    def impl(key, shape=(), dtype=None):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n = _check_shape_values(shp)
        out = np.empty(n, nptype)
        fill(k0, k1, out, np.empty(n, nptype))
        return out.reshape(shp)
    return impl


@overload(_r.randint)
def _ol_randint(key, shape, minval, maxval, dtype=None):
    _check_key(key, "randint")
    to_shape = _shape_converter(shape, "randint")
    dt = _resolve_dtype(dtype, "randint", np.int64,
                        (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32))
    bounds = isinstance(minval, types.Array) or isinstance(maxval, types.Array)
    for name, v in (("minval", minval), ("maxval", maxval)):
        kind = v.dtype if isinstance(v, types.Array) else v
        if not isinstance(kind, (types.Integer, types.Float)):
            raise TypingError(f"{_where('randint')}: argument {name!r} must be an integer "
                              f"or an integer array, got {v}")
    nptype = dt.type

    if dt == np.int64 and bounds:
        def impl_bounds64(key, shape, minval, maxval, dtype=None):
            k0, k1 = _key_words(key)
            shp = to_shape(shape)
            n = _check_shape_values(shp)
            mns = _flat_bound(np.asarray(minval).astype(np.int64), shp, n)
            mxs = _flat_bound(np.asarray(maxval).astype(np.int64), shp, n)
            ka0, ka1 = _r._words_at(k0, k1, 0)
            kb0, kb1 = _r._words_at(k0, k1, 1)
            out = np.empty(n, np.int64)
            for i in range(n):
                lo, span, mult = _r._randint64_params(mns[i], mxs[i])
                out[i] = _r._randint64_at(ka0, ka1, kb0, kb1, i, lo, span, mult)
            return out.reshape(shp)
        return impl_bounds64

    if dt == np.int64:
        def impl(key, shape, minval, maxval, dtype=None):
            k0, k1 = _key_words(key)
            shp = to_shape(shape)
            n = _check_shape_values(shp)
            ka0, ka1 = _r._words_at(k0, k1, 0)
            kb0, kb1 = _r._words_at(k0, k1, 1)
            lo, span, mult = _r._randint64_params(np.int64(minval), np.int64(maxval))
            out = np.empty(n, np.int64)
            for i in range(n):
                out[i] = _r._randint64_at(ka0, ka1, kb0, kb1, i, lo, span, mult)
            return out.reshape(shp)
        return impl

    info = np.iinfo(dt)
    if info.bits < 32:
        # JAX samples 8- and 16-bit integers as int32 within the dtype's range.
        smin, smax = -(2 ** 31), 2 ** 31 - 1
        cmin, cmax_lo, cmax_hi = int(info.min), int(info.max), int(info.max) + 1
    else:
        smin, smax = int(info.min), int(info.max)
        cmin, cmax_lo, cmax_hi = smin, smin, smax + 1  # no pre-clipping
    narrow = info.bits < 32
    signed = info.kind == "i" or narrow

    if bounds:
        def impl_bounds32(key, shape, minval, maxval, dtype=None):
            k0, k1 = _key_words(key)
            shp = to_shape(shape)
            n = _check_shape_values(shp)
            mns = _flat_bound(np.asarray(minval).astype(np.int64), shp, n)
            mxs = _flat_bound(np.asarray(maxval).astype(np.int64), shp, n)
            ka0, ka1 = _r._words_at(k0, k1, 0)
            kb0, kb1 = _r._words_at(k0, k1, 1)
            out = np.empty(n, nptype)
            for i in range(n):
                mn = mns[i]
                mx = mxs[i]
                if narrow:
                    mn = min(max(_as_int32(mn), cmin), cmax_lo)
                    mx = min(max(_as_int32(mx), cmin), cmax_hi)
                lo, span, mult = _r._randint32_params(mn, mx, smin, smax)
                v = _r._randint32_at(ka0, ka1, kb0, kb1, i, lo, span, mult)
                if signed and v >= 2147483648:
                    v -= 4294967296
                out[i] = nptype(v)
            return out.reshape(shp)
        return impl_bounds32

    def impl(key, shape, minval, maxval, dtype=None):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n = _check_shape_values(shp)
        mn = np.int64(minval)
        mx = np.int64(maxval)
        if narrow:
            mn = min(max(_as_int32(mn), cmin), cmax_lo)
            mx = min(max(_as_int32(mx), cmin), cmax_hi)
        ka0, ka1 = _r._words_at(k0, k1, 0)
        kb0, kb1 = _r._words_at(k0, k1, 1)
        lo, span, mult = _r._randint32_params(mn, mx, smin, smax)
        out = np.empty(n, nptype)
        for i in range(n):
            v = _r._randint32_at(ka0, ka1, kb0, kb1, i, lo, span, mult)
            if signed and v >= 2147483648:
                v -= 4294967296
            out[i] = nptype(v)
        return out.reshape(shp)
    return impl


# --- the other samplers -------------------------------------------------------

def _literal_choice(v, fname, argname, default, allowed):
    """The compile-time value of a string/bool option (omitted, None or a constant)."""
    if _is_none(v):
        return default
    if isinstance(v, types.Omitted):
        val = v.value
    elif isinstance(v, types.Literal):
        val = v.literal_value
    elif not isinstance(v, types.Type):   # a default value, given as itself
        val = v
    else:
        raise TypingError(f"{_where(fname)}: argument {argname!r} must be a constant "
                          f"(one of {allowed!r}) here, got {v}")
    if val not in allowed:
        raise TypingError(f"{_where(fname)}: argument {argname!r} must be one of "
                          f"{allowed!r} here, got {val!r}")
    return val


def _float_param(p, fname, argname, allow_int=True):
    """NumPy dtype of a float parameter (scalar or array); TypingError otherwise."""
    if isinstance(p, types.Omitted):
        return np.asarray(p.value).dtype
    if isinstance(p, (int, float)):
        return np.asarray(p).dtype
    if isinstance(p, types.Array):
        dt = p.dtype
    elif isinstance(p, types.Number) and not isinstance(p, types.Complex):
        dt = p
    else:
        raise TypingError(f"{_where(fname)}: argument {argname!r} must be a real scalar "
                          f"or array, got {p}")
    if isinstance(dt, types.Float):
        return as_dtype(dt)
    if allow_int and isinstance(dt, (types.Integer, types.Boolean)):
        return as_dtype(dt)
    raise TypingError(f"{_where(fname)}: argument {argname!r} must have a floating "
                      f"dtype, got {p}")


def _is_array(p):
    return isinstance(p, types.Array)


def _flat_param(p, shp):
    """``p`` (scalar or array) broadcast to ``shp``, as a contiguous 1-D array."""


@overload(_flat_param)
def _ol_flat_param(p, shp):
    if len(shp) == 0:   # Numba's broadcast_to does not take the shape ()
        if isinstance(p, types.Array) and p.ndim > 0:
            def impl0(p, shp):
                raise ValueError("srctrans.random: a parameter's shape does not "
                                 "broadcast to the shape argument ()")
                return np.ascontiguousarray(p).ravel()
            return impl0
        return lambda p, shp: np.asarray(p).reshape((1,))
    return lambda p, shp: np.ascontiguousarray(np.broadcast_to(np.asarray(p), shp)).ravel()


def _pick(dt, f32, f64):
    return f32 if dt == np.float32 else f64


_fills = {}


def _fill(kind, at):
    """A jittable loop over the flat output calling the kernel ``at``, one per
    (kind, kernel): compiled once per dtype, whatever the shape argument's type,
    so that each new shape type costs only a thin wrapper."""
    if (kind, at) in _fills:
        return _fills[kind, at]
    if kind == "plain":        # out[i] = at(k0, k1, i, n)
        def fill(k0, k1, out):
            n = out.shape[0]
            for i in range(n):
                out[i] = at(k0, k1, i, n)
    elif kind == "bernoulli":
        def fill(k0, k1, pf, out, high):
            n = out.shape[0]
            for i in range(n):
                out[i] = at(k0, k1, i, n, pf[i], high)
    elif kind == "truncated":  # at = (bounds, element)
        bounds, elem = at

        def fill(k0, k1, lf, uf, out):
            for i in range(out.shape[0]):
                a, span, lo, hi = bounds(lf[i], uf[i])
                out[i] = elem(k0, k1, i, a, span, lo, hi)
    elif kind == "gamma":
        def fill(k0, k1, af, out, log_space):
            for i in range(out.shape[0]):
                s0, s1 = _r._words_at(k0, k1, i)
                out[i] = at(s0, s1, af[i], log_space)
    elif kind == "beta":       # at = (gamma_one, from_logs)
        one, fin = at

        def fill(k0, k1, af, bf, out):
            ka0, ka1 = _r._words_at(k0, k1, 0)
            kb0, kb1 = _r._words_at(k0, k1, 1)
            for i in range(out.shape[0]):
                s0, s1 = _r._words_at(ka0, ka1, i)
                la = one(s0, s1, af[i], True)
                s0, s1 = _r._words_at(kb0, kb1, i)
                lb = one(s0, s1, bf[i], True)
                out[i] = fin(la, lb)
    else:
        raise ValueError(kind)
    _fills[kind, at] = register_jitable(fill)
    return _fills[kind, at]


def _with_n(at):
    """``at(k0, k1, i)`` as ``(k0, k1, i, n)``."""
    if at not in _fills:
        _fills[at] = register_jitable(lambda k0, k1, i, n: at(k0, k1, i))
    return _fills[at]


def _unary_float_sampler(fname, at32, at64):
    """``fname(key, shape=(), dtype=None)`` from a per-element kernel (k0, k1, i)."""
    @overload(getattr(_r, fname))
    def ol(key, shape=(), dtype=None):
        _check_key(key, fname)
        to_shape = _shape_converter(shape, fname)
        dt = _resolve_dtype(dtype, fname, np.float64, (np.float32, np.float64))
        nptype = dt.type
        fill = _fill("plain", _with_n(_pick(dt, at32, at64)))

        def impl(key, shape=(), dtype=None):
            k0, k1 = _key_words(key)
            shp = to_shape(shape)
            n = _check_shape_values(shp)
            out = np.empty(n, nptype)
            fill(k0, k1, out)
            return out.reshape(shp)
        return impl
    return ol


_unary_float_sampler("exponential", _r._exponential_f32_at, _r._exponential_f64_at)


def _gumbel_kernels(dt, mode):
    if mode == "low":
        return _with_n(_pick(dt, _r._gumbel_low_f32_at, _r._gumbel_low_f64_at))
    return _pick(dt, _r._gumbel_high_f32_at, _r._gumbel_high_f64_at)


@overload(_r.gumbel)
def _ol_gumbel(key, shape=(), dtype=None, mode=None):
    _check_key(key, "gumbel")
    to_shape = _shape_converter(shape, "gumbel")
    dt = _resolve_dtype(dtype, "gumbel", np.float64, (np.float32, np.float64))
    mode_v = _literal_choice(mode, "gumbel", "mode", "low", ("low", "high"))
    fill = _fill("plain", _gumbel_kernels(dt, mode_v))
    nptype = dt.type

    def impl(key, shape=(), dtype=None, mode=None):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n = _check_shape_values(shp)
        out = np.empty(n, nptype)
        fill(k0, k1, out)
        return out.reshape(shp)
    return impl


def _param_shape_impl(shape, fname, *params):
    """A jittable ``(shape, *params) -> shape tuple``: the ``shape`` argument, or the
    broadcast shape of the parameters when it is None."""
    if _is_none(shape):
        if len(params) == 1:
            return register_jitable(lambda s, a: np.shape(a))
        return register_jitable(lambda s, a, b: np.broadcast_shapes(np.shape(a), np.shape(b)))
    conv = _shape_converter(shape, fname)
    if len(params) == 1:
        return register_jitable(lambda s, a: conv(s))
    return register_jitable(lambda s, a, b: conv(s))


@overload(_r.bernoulli)
def _ol_bernoulli(key, p=0.5, shape=None, mode="low"):
    _check_key(key, "bernoulli")
    dt = _float_param(p, "bernoulli", "p", allow_int=False)
    if dt not in (np.float32, np.float64):
        raise TypingError(f"{_where('bernoulli')}: argument 'p' must be float32 or "
                          f"float64 here, got {p}")
    high = _literal_choice(mode, "bernoulli", "mode", "low", ("low", "high")) == "high"
    get_shape = _param_shape_impl(shape, "bernoulli", p)
    fill = _fill("bernoulli", _pick(dt, _r._bernoulli_f32_at, _r._bernoulli_f64_at))
    nptype = dt.type

    def impl(key, p=0.5, shape=None, mode="low"):
        k0, k1 = _key_words(key)
        shp = get_shape(shape, p)
        n = _check_shape_values(shp)
        pf = _flat_param(p, shp).astype(nptype)
        out = np.empty(n, np.bool_)
        fill(k0, k1, pf, out, high)
        return out.reshape(shp)
    return impl


@overload(_r.truncated_normal)
def _ol_truncated_normal(key, lower, upper, shape=None, dtype=None):
    _check_key(key, "truncated_normal")
    _float_param(lower, "truncated_normal", "lower")
    _float_param(upper, "truncated_normal", "upper")
    dt = _resolve_dtype(dtype, "truncated_normal", np.float64, (np.float32, np.float64))
    get_shape = _param_shape_impl(shape, "truncated_normal", lower, upper)
    fill = _fill("truncated", _pick(
        dt, (_r._truncated_bounds_f32, _r._truncated_normal_f32_at),
        (_r._truncated_bounds_f64, _r._truncated_normal_f64_at)))
    nptype = dt.type

    def impl(key, lower, upper, shape=None, dtype=None):
        k0, k1 = _key_words(key)
        shp = get_shape(shape, lower, upper)
        n = _check_shape_values(shp)
        lf = _flat_param(lower, shp).astype(nptype)
        uf = _flat_param(upper, shp).astype(nptype)
        out = np.empty(n, nptype)
        fill(k0, k1, lf, uf, out)
        return out.reshape(shp)
    return impl


@register_jitable
def _argmax_first(row_g, row_l, o, C):
    """np.argmax of g + l over a row: the first maximum, or the first NaN."""
    best = 0
    bv = row_g[o * C] + row_l[0]
    if bv != bv:
        return 0
    for c in range(1, C):
        v = row_g[o * C + c] + row_l[c]
        if v != v:
            return c
        if v > bv:
            bv = v
            best = c
    return best


@overload(_r.categorical)
def _ol_categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    _check_key(key, "categorical")
    if not (isinstance(logits, types.Array) and isinstance(logits.dtype, types.Float)
            and logits.ndim >= 1):
        raise TypingError(f"{_where('categorical')}: argument 'logits' must be a float32 "
                          f"or float64 array here, got {logits}")
    nd = logits.ndim
    ax = _literal_choice(axis, "categorical", "axis", -1, (-1, nd - 1))
    del ax
    if not (isinstance(replace, (types.Boolean, types.Omitted, bool))):
        raise TypingError(f"{_where('categorical')}: argument 'replace' must be a bool, "
                          f"got {replace}")
    mode_v = _literal_choice(mode, "categorical", "mode", "low", ("low", "high"))
    dt = as_dtype(logits.dtype)
    nptype = dt.type
    gfill = _fill("plain", _gumbel_kernels(dt, mode_v))
    conv = None if _is_none(shape) else _shape_converter(shape, "categorical")

    if conv is None:
        get_shape = register_jitable(lambda s, lg: lg.shape[:-1])
    else:
        get_shape = register_jitable(lambda s, lg: conv(s))

    def impl(key, logits, axis=-1, shape=None, replace=True, mode=None):
        k0, k1 = _key_words(key)
        C = logits.shape[-1]
        batch = logits.shape[:-1]
        shp = get_shape(shape, logits)
        if np.broadcast_shapes(shp, batch) != shp:
            raise ValueError("srctrans.random.categorical: the logits' batch shape must "
                             "broadcast to the shape argument")
        n = _check_shape_values(shp)
        out = np.empty(n, np.int64)
        if replace:
            lg = np.ascontiguousarray(np.broadcast_to(logits, shp + (C,))).reshape(n, C)
            g = np.empty(n * C, nptype)
            gfill(k0, k1, g)
            for o in range(n):
                out[o] = _argmax_first(g, lg[o], o, C)
            return out.reshape(shp)
        lg = np.ascontiguousarray(logits).ravel()
        B = lg.shape[0] // C if C > 0 else 0
        m = lg.shape[0]
        P = n // B if B > 0 else 0
        if P > C:
            raise ValueError("srctrans.random.categorical: number of samples without "
                             "replacement cannot exceed number of categories")
        g = np.empty(m, nptype)
        gfill(k0, k1, g)
        for j in range(m):
            g[j] = lg[j] + g[j]
        for b in range(B):
            order = np.argsort(-g[b * C:(b + 1) * C], kind="mergesort")
            for q in range(P):
                out[q * B + b] = order[q]
        return out.reshape(shp)
    return impl


# --- permutation and choice ---------------------------------------------------

@register_jitable
def _shuffled_arange(k0, k1, n):
    """JAX's sort-based shuffle of arange(n) (``_shuffle`` of srctrans.random)."""
    perm = np.arange(n)
    rounds = int(np.ceil(3 * math.log(max(1, n)) / math.log(4294967295)))
    sort_keys = np.empty(n, np.uint32)
    for _ in range(rounds):
        a0, a1 = _r._words_at(k0, k1, 0)
        s0, s1 = _r._words_at(k0, k1, 1)
        k0, k1 = a0, a1
        for i in range(n):
            sort_keys[i] = _r._bits32_at(s0, s1, i)
        order = np.argsort(sort_keys, kind="mergesort")
        perm = perm[order]
    return perm


@overload(_r.permutation)
def _ol_permutation(key, x, axis=0, independent=False):
    _check_key(key, "permutation")
    if isinstance(x, types.Integer) and not isinstance(x, types.Boolean):
        def impl_int(key, x, axis=0, independent=False):
            k0, k1 = _key_words(key)
            return _shuffled_arange(k0, k1, max(np.int64(x), 0))   # arange(x < 0): empty
        return impl_int
    if not (isinstance(x, types.Array) and x.ndim >= 1):
        raise TypingError(f"{_where('permutation')}: argument 'x' must be an integer or "
                          f"an array of at least 1 dimension, got {x}")
    _literal_choice(axis, "permutation", "axis", 0, (0, -x.ndim))
    indep = _literal_choice(independent, "permutation", "independent", False, (False, True))
    if indep and x.ndim > 1:
        raise TypingError(f"{_where('permutation')}: argument 'independent' must be False "
                          f"here for arrays of more than 1 dimension")

    def impl(key, x, axis=0, independent=False):
        k0, k1 = _key_words(key)
        return x[_shuffled_arange(k0, k1, x.shape[0])]
    return impl


@overload(_r.choice)
def _ol_choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    _check_key(key, "choice")
    if isinstance(shape, types.Integer):
        raise TypingError(f"{_where('choice')}: argument 'shape' must be a tuple, got {shape}")
    to_shape = _shape_converter(shape, "choice")
    if isinstance(a, types.Integer) and not isinstance(a, types.Boolean):
        a_is_int = True
        out_dtype = np.int64
    elif isinstance(a, types.Array) and a.ndim == 1:
        a_is_int = False
        out_dtype = as_dtype(a.dtype)
    else:
        raise TypingError(f"{_where('choice')}: argument 'a' must be an integer or a 1-D "
                          f"array here, got {a}")
    _literal_choice(axis, "choice", "axis", 0, (0, -1))
    if not isinstance(replace, (types.Boolean, types.Omitted, bool)):
        raise TypingError(f"{_where('choice')}: argument 'replace' must be a bool, got {replace}")
    mode_v = _literal_choice(mode, "choice", "mode", "low", ("low", "high"))
    if _is_none(p):
        has_p = False
        pdt = np.dtype(np.float64)
    else:
        if not (isinstance(p, types.Array) and p.ndim == 1):
            raise TypingError(f"{_where('choice')}: argument 'p' must be None or a 1-D "
                              f"array, got {p}")
        has_p = True
        pdt = as_dtype(p.dtype)
        if pdt not in (np.float32, np.float64):
            pdt = np.dtype(np.float64)
    pnp = pdt.type
    gum = _gumbel_kernels(pdt, mode_v)
    u01 = _pick(pdt, _r._uniform01_f32_from_words, _r._uniform01_f64_from_words)
    log = _pick(pdt, _r._log_f32, _r._log_f64)

    if a_is_int:
        n_of = register_jitable(lambda a: np.int64(a))
        take = register_jitable(lambda a, ind: ind)
    else:
        n_of = register_jitable(lambda a: np.int64(a.shape[0]))
        take = register_jitable(lambda a, ind: a[ind])
    if has_p:
        p_of = register_jitable(lambda p: p.astype(pnp))
    else:
        p_of = register_jitable(lambda p: np.ones(1, pnp))

    def impl(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n_draws = _check_shape_values(shp)
        if n_draws == 0:
            return np.zeros(shp, out_dtype)
        n_in = n_of(a)
        if n_in <= 0:
            raise ValueError("srctrans.random.choice: a must be greater than 0 unless "
                             "no samples are taken")
        if not replace and n_draws > n_in:
            raise ValueError("srctrans.random.choice: cannot take a larger sample than "
                             "population when 'replace=False'")
        if not has_p:
            if replace:
                ka0, ka1 = _r._words_at(k0, k1, 0)
                kb0, kb1 = _r._words_at(k0, k1, 1)
                lo, span, mult = _r._randint64_params(np.int64(0), n_in)
                ind = np.empty(n_draws, np.int64)
                for i in range(n_draws):
                    ind[i] = _r._randint64_at(ka0, ka1, kb0, kb1, i, lo, span, mult)
            else:
                ind = _shuffled_arange(k0, k1, n_in)[:n_draws]
            return take(a, ind).reshape(shp)
        pa = p_of(p)
        if pa.shape[0] != n_in:
            raise ValueError("srctrans.random.choice: p must be None or a 1D vector with "
                             "the same size as a.shape[axis]")
        if replace:
            cum = np.cumsum(pa)
            last = cum[-1]
            r = np.empty(n_draws, pnp)
            for i in range(n_draws):
                b0, b1 = _r._words_at(k0, k1, i)
                r[i] = last * (pnp(1) - u01(b0, b1))
            ind = np.searchsorted(cum, r, side="left").astype(np.int64)
        else:
            g = np.empty(n_in, pnp)
            for j in range(n_in):
                g[j] = gum(k0, k1, j, n_in) + log(pa[j])
            ind = np.argsort(-g, kind="mergesort")[:n_draws].astype(np.int64)
        return take(a, ind).reshape(shp)
    return impl


# --- gamma, loggamma, beta ------------------------------------------------------

def _gamma_overload(fname, log_space):
    @overload(getattr(_r, fname))
    def ol(key, a, shape=None, dtype=None):
        _check_key(key, fname)
        _float_param(a, fname, "a")
        dt = _resolve_dtype(dtype, fname, np.float64, (np.float32, np.float64))
        get_shape = _param_shape_impl(shape, fname, a)
        fill = _fill("gamma", _pick(dt, _r._gamma_one_f32, _r._gamma_one_f64))
        nptype = dt.type

        def impl(key, a, shape=None, dtype=None):
            k0, k1 = _key_words(key)
            shp = get_shape(shape, a)
            n = _check_shape_values(shp)
            af = _flat_param(a, shp).astype(nptype)
            out = np.empty(n, nptype)
            fill(k0, k1, af, out, log_space)
            return out.reshape(shp)
        return impl
    return ol


_gamma_overload("gamma", False)
_gamma_overload("loggamma", True)


@overload(_r.beta)
def _ol_beta(key, a, b, shape=None, dtype=None):
    _check_key(key, "beta")
    _float_param(a, "beta", "a")
    _float_param(b, "beta", "b")
    dt = _resolve_dtype(dtype, "beta", np.float64, (np.float32, np.float64))
    get_shape = _param_shape_impl(shape, "beta", a, b)
    fill = _fill("beta", _pick(dt, (_r._gamma_one_f32, _r._beta_from_logs_f32),
                               (_r._gamma_one_f64, _r._beta_from_logs_f64)))
    nptype = dt.type

    def impl(key, a, b, shape=None, dtype=None):
        k0, k1 = _key_words(key)
        shp = get_shape(shape, a, b)
        n = _check_shape_values(shp)
        af = _flat_param(a, shp).astype(nptype)
        bf = _flat_param(b, shp).astype(nptype)
        out = np.empty(n, nptype)
        fill(k0, k1, af, bf, out)
        return out.reshape(shp)
    return impl


# --- multivariate_normal ------------------------------------------------------------

@overload(_r.multivariate_normal)
def _ol_multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    _check_key(key, "multivariate_normal")
    if not (isinstance(mean, types.Array) and mean.ndim == 1
            and isinstance(mean.dtype, types.Float)):
        raise TypingError(f"{_where('multivariate_normal')}: argument 'mean' must be a 1-D "
                          f"float array here (batches only in uncompiled code), got {mean}")
    if not (isinstance(cov, types.Array) and cov.ndim == 2
            and isinstance(cov.dtype, types.Float)):
        raise TypingError(f"{_where('multivariate_normal')}: argument 'cov' must be a 2-D "
                          f"float array here (batches only in uncompiled code), got {cov}")
    _literal_choice(method, "multivariate_normal", "method", "cholesky", ("cholesky",))
    common = np.result_type(as_dtype(mean.dtype), as_dtype(cov.dtype), np.float16)
    if common not in (np.float32, np.float64):
        raise TypingError(f"{_where('multivariate_normal')}: argument 'mean' must be "
                          f"float32 or float64 here, got {mean}")
    dt = _resolve_dtype(dtype, "multivariate_normal", common, (np.float32, np.float64))
    rt = np.result_type(common, dt).type
    ct = common.type
    nptype = dt.type
    fill = _normal_fill_f32 if dt == np.float32 else _normal_fill_f64
    conv = None if _is_none(shape) else _shape_converter(shape, "multivariate_normal")
    if conv is None:
        get_shape = register_jitable(lambda s: ())
    else:
        get_shape = register_jitable(lambda s: conv(s))

    def impl(key, mean, cov, shape=None, dtype=None, method="cholesky"):
        k0, k1 = _key_words(key)
        n = mean.shape[0]
        if cov.shape[0] != n or cov.shape[1] != n:
            raise ValueError("srctrans.random.multivariate_normal: cov must have shape "
                             "(n, n) with n = mean.shape[-1]")
        shp = get_shape(shape)
        m = _check_shape_values(shp)
        c = np.ascontiguousarray(cov).astype(ct)
        mu = mean.astype(ct)
        f = np.empty((n, n), ct)
        _r._cholesky_lower(c, f)
        z = np.empty(m * n, nptype)
        fill(k0, k1, z, np.empty(m * n, nptype))
        out = np.empty(m * n, rt)
        for s in range(m):
            for i in range(n):
                acc = rt(f[i, 0]) * rt(z[s * n])
                for j in range(1, n):
                    acc = acc + rt(f[i, j]) * rt(z[s * n + j])
                out[s * n + i] = rt(mu[i]) + acc
        return out.reshape(shp + (n,))
    return impl


# --- keys ---------------------------------------------------------------------------

@overload(_r.key)
def _ol_key(seed):
    if not isinstance(seed, types.Integer) or isinstance(seed, types.Boolean):
        raise TypingError(f"{_where('key')}: argument 'seed' must be an integer, got {seed}")

    def impl(seed):
        s = np.int64(seed)
        out = np.empty(2, np.uint32)
        out[0] = np.uint32((s >> 32) & 0xFFFFFFFF)
        out[1] = np.uint32(s & 0xFFFFFFFF)
        return out
    return impl


def _key_data_overload(fn, fname, argname):
    @overload(fn)
    def ol(keys):
        if not (isinstance(keys, types.Array) and keys.ndim >= 1
                and keys.dtype == types.uint32):
            raise TypingError(f"{_where(fname)}: argument {argname!r} must be a uint32 "
                              f"array of shape (..., 2), got {keys}")

        def impl(keys):
            if keys.shape[-1] != 2:
                raise TypeError("srctrans.random: the key data must have shape (..., 2)")
            return keys.copy()
        return impl
    return ol


_key_data_overload(_r.key_data, "key_data", "keys")
_key_data_overload(_r.wrap_key_data, "wrap_key_data", "key_bits_array")
