"""``srctrans.random`` inside ``numba.njit`` functions.

Importing this module makes calls to ``srctrans.random.split``, ``fold_in``,
``bits``, ``uniform``, ``normal`` and ``randint`` compile in nopython mode, with
the same results as the uncompiled functions, bit for bit.  The compiled code is
built from the scalar kernels of ``srctrans.random`` (listed in its
``JITTABLE_KERNELS``), which are registered here as jittable functions: one loop
over the flat output, one Threefry hash per element. ``normal`` runs in passes
over the output and one temporary, so that LLVM vectorizes the branch-free ones
(the hash, and the central polynomial of erfinv, which all but the tails take);
the same operations in the same order, so the same bits.

What compiles (anything else raises ``TypingError`` naming the argument):

- ``key``: a 1-D ``uint32`` array (its length is checked at run time: 2).
- ``shape`` / ``num``: an integer or a tuple of integers (may be empty).
- ``dtype``: a NumPy scalar type or dtype (``np.float32``, ``np.dtype('int64')``),
  a string such as ``'float32'``, the builtins ``float``/``int``, or omitted/None
  for the default
  (``uniform``/``normal``: float64, ``bits``: uint32, ``randint``: int64).
  ``uniform``/``normal``: float32, float64.  ``bits``: uint8, uint16, uint32,
  uint64.  ``randint``: int8, int16, int32, int64, uint8, uint16, uint32.
- ``minval``/``maxval``: scalars (array bounds only in uncompiled code).
- ``fold_in``'s ``data``: an integer, taken modulo 2**32 (the uncompiled
  function raises ``OverflowError`` for a Python int outside [0, 2**32)).

The fused multiply-adds that ``srctrans.random`` emulates in software
(``_fma_f32``, ``_fma_f64``) compile to the ``llvm.fma`` intrinsics: one
instruction on CPUs with FMA, rounding the same way as the emulation.  Not done
yet: ``minval``/``maxval`` arrays, the other samplers (``permutation``,
``gamma`` ...), and a check that the kernels compile for CUDA devices.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype

import srctrans.random as _r

# --- the kernels of srctrans.random, compiled as they are ------------------

for _kernel in _r.JITTABLE_KERNELS:
    if _kernel not in (_r._fma_f32, _r._fma_f64):
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
    _check_scalar(minval, "uniform", "minval")
    _check_scalar(maxval, "uniform", "maxval")
    nptype = dt.type
    at = _r._uniform_f32_at if dt == np.float32 else _r._uniform_f64_at

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
    for name, v in (("minval", minval), ("maxval", maxval)):
        if not isinstance(v, (types.Integer, types.Float)):
            raise TypingError(f"{_where('randint')}: argument {name!r} must be a scalar "
                              f"integer here, got {v}")
    nptype = dt.type

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

    def impl(key, shape, minval, maxval, dtype=None):
        k0, k1 = _key_words(key)
        shp = to_shape(shape)
        n = _check_shape_values(shp)
        mn = np.int64(minval)
        mx = np.int64(maxval)
        if narrow:
            mn = min(max(mn, cmin), cmax_lo)
            mx = min(max(mx, cmin), cmax_hi)
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
