"""Explicit-key, counter-based random numbers that reproduce JAX bit for bit.

The generator is Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC'11), the default PRNG of JAX, in the layout that
JAX uses when ``jax_threefry_partitionable`` is on.  That flag is on by default
since JAX 0.5.0; the known-answer vectors in ``tests/random/jax_vectors.json``
were recorded from JAX 0.10.2 with its defaults (``jax_threefry_partitionable =
True``, ``jax_default_prng_impl = "threefry2x32"``).  Keys made by JAX's old
layout (flag off) give different ``split``/``bits`` streams; we do not emulate it.

Keys
----
A key is a NumPy ``uint32`` array of shape ``(2,)``: exactly what
``jax.random.PRNGKey(seed)`` or ``jax.random.key_data(jax.random.key(seed))``
holds, so keys can be passed between JAX and srctrans.  A batch of keys is an
array of shape ``(..., 2)`` (``split`` returns one).  Sampling functions take a
single key, as in JAX; batch them with ``vmap`` or a loop.  As in JAX's
partitionable layout, ``split(k, n)[i]`` is ``fold_in(k, i)``: key i of a split
is the hash of the counter i, and so is ``fold_in``'s.

What "the same as JAX" means here
---------------------------------
* ``key``, ``split``, ``fold_in``, ``bits``, ``randint``, ``permutation`` and
  ``choice`` without ``p`` give exactly JAX's values (integer arithmetic).
* ``uniform``, ``normal``, ``exponential``, ``gumbel``, ``categorical``,
  ``bernoulli`` and float64 ``gamma``/``loggamma`` give bit for bit the values
  of JAX on the CPU, in float32 and float64: we follow XLA operation for
  operation, including where it fuses a multiply and an add into one rounding
  (FMA), its own polynomials for ``log``/``log1p``/``erf_inv``, its rewrite of
  ``a / sqrt(b)``, and the C library's float64 ``log``/``pow`` that XLA calls.
  (JAX on a GPU, or on a CPU without FMA, may itself differ from JAX on an FMA
  CPU in the last bit; so may a C library other than the one JAX ran with.)
  Checked on the recorded vectors and on 10**6-element streams.
* ``beta``, float32 ``gamma``/``loggamma``, ``truncated_normal``,
  ``multivariate_normal`` and ``choice`` with ``p`` use JAX's algorithms and
  key schedules, but some float operations differ from XLA's in the last bit
  (the C library's ``exp``, float32 ``pow`` rounded from float64, ``rsqrt``, the
  C library's ``erf`` for the bounds of ``truncated_normal``, our own Cholesky
  factor and ``factor @ z`` summed in a fixed order): they agree with JAX to a
  few ulps (relative 1e-6 in float32, 1e-14 in float64).

Defaults (differences from JAX)
-------------------------------
JAX's default dtypes depend on ``jax_enable_x64``.  Ours are those of JAX with
x64 enabled: floats are ``float64``, ``randint`` gives ``int64`` and
``key(seed)`` takes a 64-bit seed (``key(-1) == [0xFFFFFFFF, 0xFFFFFFFF]``; JAX
without x64 truncates the seed to 32 bits, which agrees for seeds in
``[0, 2**31)``).  One exception, as in the project's API: ``bits`` defaults to
``uint32`` (JAX with x64 gives ``uint64``).  Pass ``dtype`` explicitly to get
float32 results; they equal JAX's float32 results (JAX without x64).

Compilation
-----------
This module never imports Numba.  The inner kernels (``_threefry2x32_pair``,
``_uniform01_f32_from_words``, ``_erfinv_f64_scalar``, ``_gamma_one_f32`` ...,
listed in ``JITTABLE_KERNELS``) are plain arithmetic on scalars (32-bit words
kept in ``int64`` and masked), so ``numba_backend.random_overloads`` compiles
them as they are, for every public function.  The NumPy path uses vectorized
twins of the same kernels; tests check that both give the same numbers, bit for
bit.  Floating point uses only operations that round the same way everywhere
(+ - * / sqrt, emulated FMA, and the C library's float64 ``log``/``pow``/``exp``
/``erf``, called through ``math``, which is what XLA's CPU backend and Numba's
``math`` functions call), never NumPy's SIMD transcendental functions or SciPy's
special functions, whose last bit depends on the machine or differs from the C
library's.

All functions are pure: the result depends only on (key, shape, dtype, params).
There is no derivative through keys; reparameterized samples such as
``mu + sigma * normal(k)`` differentiate with respect to ``mu`` and ``sigma``.
"""

from __future__ import annotations

import math
import operator

import numpy as np

__all__ = [
    "key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "bits",
    "uniform", "normal", "truncated_normal", "bernoulli", "categorical",
    "randint", "permutation", "choice", "exponential", "gamma", "loggamma",
    "beta", "gumbel", "multivariate_normal",
]

# --------------------------------------------------------------------------
# Kernels: plain arithmetic on scalars, compilable by Numba (CPU and CUDA).
# 32-bit words are np.uint32; every operation that may carry past 32 bits is
# truncated with np.uint32(...) (Numba widens integer arithmetic to 64 bits).
# In plain Python, NumPy may warn about the (intended) wrap-around.
# --------------------------------------------------------------------------

_MASK32 = 0xFFFFFFFF
_KS_PARITY = 0x1BD11BDA


def _rotl32(x, r):
    """Rotate the uint32 ``x`` left by ``r`` bits."""
    return np.uint32((x << np.uint32(r)) | (x >> np.uint32(32 - r)))


def _mix4(x0, x1, r0, r1, r2, r3):
    """Four Threefry rounds with rotation constants r0..r3."""
    x0 = np.uint32(x0 + x1)
    x1 = _rotl32(x1, r0) ^ x0
    x0 = np.uint32(x0 + x1)
    x1 = _rotl32(x1, r1) ^ x0
    x0 = np.uint32(x0 + x1)
    x1 = _rotl32(x1, r2) ^ x0
    x0 = np.uint32(x0 + x1)
    x1 = _rotl32(x1, r3) ^ x0
    return x0, x1


def _threefry2x32_pair(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds, of the counter (x0, x1) under key (k0, k1).

    All four inputs are integers in [0, 2**32); returns two np.uint32 words.
    """
    k0 = np.uint32(k0)
    k1 = np.uint32(k1)
    k2 = np.uint32(k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    x0 = np.uint32(np.uint32(x0) + k0)
    x1 = np.uint32(np.uint32(x1) + k1)
    x0, x1 = _mix4(x0, x1, 13, 15, 26, 6)
    x0 = np.uint32(x0 + k1)
    x1 = np.uint32(x1 + np.uint32(k2 + np.uint32(1)))
    x0, x1 = _mix4(x0, x1, 17, 29, 16, 24)
    x0 = np.uint32(x0 + k2)
    x1 = np.uint32(x1 + np.uint32(k0 + np.uint32(2)))
    x0, x1 = _mix4(x0, x1, 13, 15, 26, 6)
    x0 = np.uint32(x0 + k0)
    x1 = np.uint32(x1 + np.uint32(k1 + np.uint32(3)))
    x0, x1 = _mix4(x0, x1, 17, 29, 16, 24)
    x0 = np.uint32(x0 + k1)
    x1 = np.uint32(x1 + np.uint32(k2 + np.uint32(4)))
    x0, x1 = _mix4(x0, x1, 13, 15, 26, 6)
    x0 = np.uint32(x0 + k2)
    x1 = np.uint32(x1 + np.uint32(k0 + np.uint32(5)))
    return x0, x1


def _counter_words(i):
    """Element ``i`` of the flat output uses the 64-bit counter i = (hi, lo)."""
    i = np.int64(i)
    return np.uint32((i >> 32) & 0xFFFFFFFF), np.uint32(i & 0xFFFFFFFF)


def _bits32_at(k0, k1, i):
    """32 random bits for flat element ``i`` (JAX: ``bits1 ^ bits2``)."""
    hi, lo = _counter_words(i)
    b0, b1 = _threefry2x32_pair(k0, k1, hi, lo)
    return np.uint32(b0 ^ b1)


def _words_at(k0, k1, i):
    """The two hash words for flat element ``i``."""
    hi, lo = _counter_words(i)
    return _threefry2x32_pair(k0, k1, hi, lo)


# 2**-23 and 2**-52: the unit in the last place of [1, 2) in float32/float64.
_F32_ULP1 = np.float32(2.0 ** -23)
_F64_ULP1 = np.float64(2.0 ** -52)


def _uniform01_f32_from_words(b0, b1):
    """[0, 1) float32 from two hash words, exactly as JAX.

    JAX ORs the top 23 bits into the mantissa of 1.0 and subtracts 1.0;
    ``m * 2**-23`` is the same number, computed without a bit cast.
    """
    m = np.uint32(b0 ^ b1) >> np.uint32(9)
    return np.float32(m) * _F32_ULP1


def _uniform01_f64_from_words(b0, b1):
    """[0, 1) float64 from two hash words: top 52 of the 64 bits (b0 << 32) | b1."""
    m = (np.int64(b0) << 20) | (np.int64(b1) >> 12)
    return np.float64(m) * _F64_ULP1


# ---- floating point as XLA computes it ----------------------------------
#
# XLA (CPU, and GPU) fuses a multiply that feeds an add into one fused
# multiply-add (FMA), and evaluates log/log1p with its own polynomials.  The
# kernels below reproduce that with operations that round the same way on every
# machine (+ - * / sqrt, and the C library's float64 log, which XLA's CPU
# backend calls too), so results do not depend on NumPy's SIMD code paths:
#   * a float32 FMA is computed in float64, where the 24x24-bit product is
#     exact, then rounded once (a double rounding could differ once in ~2**29);
#   * a float64 FMA is emulated with Dekker's exact product and an error-free
#     sum (numba_backend may replace it with the hardware instruction).
# The constants are those of JAX 0.10's lowering (XLA's erf_inv after Giles,
# and the Cephes-style log/log1p of XLA's CPU backend).

def _fma_f32(a, b, c):
    """float32 ``a * b + c`` rounded once, as XLA's fused multiply-add.

    The product is exact in float64; the sum is rounded to odd in float64 (an
    inexact result gets an odd last bit), after which rounding to float32 is
    correct: no double rounding.
    """
    p = np.float64(a) * np.float64(b)
    c = np.float64(c)
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    if err != 0.0 and s == s and abs(s) < np.inf and (np.int64(np.float64(s).view(np.int64)) & 1) == 0:
        s = np.nextafter(s, np.inf if err > 0.0 else -np.inf)
    return np.float32(s)


def _fma_f64(a, b, c):
    """float64 ``a * b + c`` with (almost always) one rounding, emulating FMA."""
    a = np.float64(a)
    b = np.float64(b)
    c = np.float64(c)
    p = a * b
    s = p + c
    if not (abs(a) < 1e300 and abs(b) < 1e300 and abs(p) < 1e300 and abs(s) < 1e300):
        return s
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


def _f32_from_bits(u):
    return np.frombuffer(np.array([u], dtype=np.uint32).tobytes(), dtype=np.float32)[0]


def _f64_from_bits(u):
    return np.frombuffer(np.array([u], dtype=np.uint64).tobytes(), dtype=np.float64)[0]


# log of float32 (XLA CPU: Cephes logf with FMAs)
_LOGF_SQRTHF = _f32_from_bits(0x3F3504F3)
_LOGF_MIN_NORMAL = _f32_from_bits(0x00800000)
_LOGF_C = np.array([_f32_from_bits(u) for u in (
    0x3D9021BB, 0xBDEBD1B8, 0xBDFE5D4F, 0x3E11E9BF, 0x3E4CCEAC, 0xBE7FFFFC,
    0x3DEF251A, 0xBE2AAE50, 0x3EAAAAAA)], dtype=np.float32)
_LOGF_LN2_LO = _f32_from_bits(0xB95E8083)
_LOGF_LN2_HI = _f32_from_bits(0x3F318000)
# log1p of float32 and float64 (XLA: a rational function near 0, else log(1 + x))
_LOG1PF_THRESHOLD = _f32_from_bits(0x3ED413CD)
_LOG1PF_Q = np.array([_f32_from_bits(u) for u in (
    0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A, 0x42707982)],
    dtype=np.float32)
_LOG1PF_P = np.array([np.float32(4.527e-05)] + [_f32_from_bits(u) for u in (
    0x3EFF40C5, 0x40D284FA, 0x41EF4B9C, 0x4273CC76, 0x426473AD, 0x41A05101)],
    dtype=np.float32)
_LOG1P_THRESHOLD = _f64_from_bits(0x3FDA827999FCEF32)
_LOG1P_Q = np.array([_f64_from_bits(u) for u in (
    0x402E20359E903E37, 0x4054C30B52213498, 0x406BB86590FCFB56, 0x407351945DC908A5,
    0x406B0DB13E48E066, 0x404E0F304466448E)], dtype=np.float64)
_LOG1P_P = np.array([_f64_from_bits(u) for u in (
    0x3F07BC0962B395CA, 0x3FDFE818A0FE1A83, 0x401A509F46F4FA53, 0x403DE9738B8CB9C9,
    0x404E798EB86C3351, 0x404C8E7597479A10, 0x40340A202D99830A)], dtype=np.float64)


def _log_f32(y):
    """Natural log of a float32, operation for operation as XLA's CPU backend."""
    y = np.float32(y)
    if not y > np.float32(0.0):
        if y == np.float32(0.0):
            return np.float32(-np.inf)
        return np.float32(np.nan)
    if y == np.float32(np.inf):
        return y
    if y < _LOGF_MIN_NORMAL:
        y = _LOGF_MIN_NORMAL
    m, e = math.frexp(y)              # y = m * 2**e, m in [0.5, 1)
    m = np.float32(m)
    ef = np.float32(e)
    if m < _LOGF_SQRTHF:
        x = (m - np.float32(1.0)) + m
        ef = ef - np.float32(1.0)
    else:
        x = m - np.float32(1.0)
    z = x * x
    x3 = z * x
    c = _LOGF_C
    pa = _fma_f32(_fma_f32(x, c[0], c[1]), x, c[6])
    pb = _fma_f32(_fma_f32(x, c[2], c[3]), x, c[7])
    pc = _fma_f32(_fma_f32(x, c[4], c[5]), x, c[8])
    t = _fma_f32(_fma_f32(pa, x3, pb), x3, pc)
    tail = _fma_f32(t, x3, ef * _LOGF_LN2_LO)
    head = _fma_f32(-z, np.float32(0.5), x)
    return _fma_f32(ef, _LOGF_LN2_HI, head + tail)


def _log_f64(y):
    """Natural log of a float64: the C library's, which XLA's CPU backend calls."""
    y = np.float64(y)
    if not y > 0.0:
        if y == 0.0:
            return -np.inf
        return np.nan
    return np.float64(_log_libm(y))


def _log1p_f32(x):
    """log(1 + x) of a float32, operation for operation as XLA."""
    x = np.float32(x)
    if not abs(x) < _LOG1PF_THRESHOLD:
        return _log_f32(x + np.float32(1.0))
    x2 = x * x
    q = x + _LOG1PF_Q[0]
    for i in range(1, 6):
        q = _fma_f32(q, x, _LOG1PF_Q[i])
    p = _LOG1PF_P[0]
    for i in range(1, 7):
        p = _fma_f32(p, x, _LOG1PF_P[i])
    return x + _fma_f32(x2, np.float32(-0.5), (x * x2) * (p / q))


def _log1p_f64(x):
    """log(1 + x) of a float64, operation for operation as XLA."""
    x = np.float64(x)
    if not abs(x) < _LOG1P_THRESHOLD:
        return _log_f64(x + 1.0)
    x2 = x * x
    q = x + _LOG1P_Q[0]
    for i in range(1, 6):
        q = _fma_f64(q, x, _LOG1P_Q[i])
    p = _LOG1P_P[0]
    for i in range(1, 7):
        p = _fma_f64(p, x, _LOG1P_P[i])
    return x + _fma_f64(x2, -0.5, (x * x2) * (p / q))


# erfinv: XLA's polynomial approximations (M. Giles, "Approximating the erfinv
# function"), with the constants of JAX's lowering of lax.erf_inv.
_ERFINV_F32_LT5 = np.array([
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
    0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941,
], dtype=np.float32)
_ERFINV_F32_GE5 = np.array([
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
    0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682,
], dtype=np.float32)
_ERFINV_F64_LT6_25 = np.array([
    -3.64441206401782e-21, -1.6850591381820166e-19, 1.28584807152564e-18,
    1.1157877678025181e-17, -1.333171662854621e-16, 2.0972767875968562e-17,
    6.637638134358324e-15, -4.054566272975207e-14, -8.151934197605472e-14,
    2.6335093153082323e-12, -1.2975133253453532e-11, -5.415412054294628e-11,
    1.0512122733215323e-09, -4.112633980346984e-09, -2.9070369957882005e-08,
    4.2347877827932404e-07, -1.3654692000834679e-06, -1.3882523362786469e-05,
    0.00018673420803405714, -0.000740702534166267, -0.006033670871430149,
    0.24015818242558962, 1.6536545626831027,
], dtype=np.float64)
_ERFINV_F64_LT16 = np.array([
    2.2137376921775787e-09, 9.075656193888539e-08, -2.7517406297064545e-07,
    1.8239629214389228e-08, 1.5027403968909828e-06, -4.013867526981546e-06,
    2.9234449089955446e-06, 1.2475304481671779e-05, -4.7318229009055734e-05,
    6.828485145957318e-05, 2.4031110387097894e-05, -0.0003550375203628475,
    0.0009532893797373805, -0.0016882755560235047, 0.002491442096107851,
    -0.003751208507569241, 0.005370914553590064, 1.0052589676941592,
    3.0838856104922208,
], dtype=np.float64)
_ERFINV_F64_GE16 = np.array([
    -2.7109920616438573e-11, -2.555641816996525e-10, 1.5076572693500548e-09,
    -3.789465440126737e-09, 7.61570120807834e-09, -1.496002662714924e-08,
    2.914795345090108e-08, -6.771199775845234e-08, 2.2900482228026655e-07,
    -9.9298272942317e-07, 4.526062597223154e-06, -1.968177810553167e-05,
    7.599527703001776e-05, -0.00021503011930044477, -0.00013871931833623122,
    1.0103004648645344, 4.849906401408584,
], dtype=np.float64)


def _erfinv_f32_scalar(x):
    """erfinv of a float32 scalar, operation for operation as XLA."""
    x = np.float32(x)
    if abs(x) == np.float32(1.0):
        return x * np.float32(np.inf)
    w = -_log1p_f32(x * -x)
    if w < np.float32(5.0):
        w = w - np.float32(2.5)
        coefs = _ERFINV_F32_LT5
    else:
        w = np.float32(np.sqrt(w)) - np.float32(3.0)
        coefs = _ERFINV_F32_GE5
    p = coefs[0]
    for i in range(1, 9):
        p = _fma_f32(p, w, coefs[i])
    return p * x


def _erfinv_f64_scalar(x):
    """erfinv of a float64 scalar, operation for operation as XLA."""
    x = np.float64(x)
    if abs(x) == 1.0:
        return x * np.inf
    w = -_log1p_f64(x * -x)
    if w < 6.25:
        w = w - 3.125
        coefs = _ERFINV_F64_LT6_25
    elif w < 16.0:
        w = np.sqrt(w) - 3.25
        coefs = _ERFINV_F64_LT16
    else:
        w = np.sqrt(w) - 5.0
        coefs = _ERFINV_F64_GE16
    p = coefs[0]
    for i in range(1, coefs.shape[0]):
        p = _fma_f64(p, w, coefs[i])
    return p * x


_SQRT2_F32 = np.float32(np.sqrt(2.0))
_SQRT2_F64 = np.float64(np.sqrt(2.0))
# normal draws u uniformly from [nextafter(-1, 0), 1).  The span 1 - lo rounds
# to exactly 2, so f * span + lo is the same fused or not.
_NORMAL_LO_F32 = np.nextafter(np.float32(-1.0), np.float32(0.0))
_NORMAL_LO_F64 = np.nextafter(np.float64(-1.0), np.float64(0.0))
_NORMAL_SPAN_F32 = np.float32(1.0) - _NORMAL_LO_F32
_NORMAL_SPAN_F64 = np.float64(1.0) - _NORMAL_LO_F64
assert _NORMAL_SPAN_F32 == 2.0 and _NORMAL_SPAN_F64 == 2.0


def _uniform_f32_at(k0, k1, i, lo, span):
    """Element ``i`` of ``uniform(key, shape, float32, lo, lo + span)``."""
    b0, b1 = _words_at(k0, k1, i)
    u = _fma_f32(_uniform01_f32_from_words(b0, b1), span, lo)
    return max(lo, u)


def _uniform_f64_at(k0, k1, i, lo, span):
    """Element ``i`` of ``uniform(key, shape, float64, lo, lo + span)``."""
    b0, b1 = _words_at(k0, k1, i)
    u = _fma_f64(_uniform01_f64_from_words(b0, b1), span, lo)
    return max(lo, u)


def _normal_f32_at(k0, k1, i):
    """Element ``i`` of ``normal(key, shape, float32)``."""
    b0, b1 = _words_at(k0, k1, i)
    u = _uniform01_f32_from_words(b0, b1) * _NORMAL_SPAN_F32 + _NORMAL_LO_F32
    return _SQRT2_F32 * _erfinv_f32_scalar(max(_NORMAL_LO_F32, u))


def _normal_f64_at(k0, k1, i):
    """Element ``i`` of ``normal(key, shape, float64)``."""
    b0, b1 = _words_at(k0, k1, i)
    u = _uniform01_f64_from_words(b0, b1) * _NORMAL_SPAN_F64 + _NORMAL_LO_F64
    return _SQRT2_F64 * _erfinv_f64_scalar(max(_NORMAL_LO_F64, u))


# ---- randint, one element at a time (JAX's two-words-modulo algorithm) ----

def _urem32(a, b):
    """Unsigned 32-bit remainder with XLA's convention ``a % 0 == a``."""
    if b == 0:
        return a
    return a % b


def _randint32_params(minval, maxval, dmin, dmax):
    """(low, span, multiplier) for 32-bit ``randint``; ints held in int64."""
    minval = np.int64(minval)
    maxval = np.int64(maxval)
    out_of_range = maxval > dmax
    lo = min(max(minval, dmin), dmax)
    hi = min(max(maxval, dmin), dmax)
    span = (hi - lo) & 0xFFFFFFFF
    if hi <= lo:
        span = np.int64(1)
    elif out_of_range:
        span = (span + 1) & 0xFFFFFFFF
    mult = _urem32(np.int64(65536), span)
    mult = _urem32((mult * mult) & 0xFFFFFFFF, span)
    return lo, span, mult


def _randint32_at(ka0, ka1, kb0, kb1, i, lo, span, mult):
    """Element ``i`` of a 32-bit ``randint`` (as int64, before the cast)."""
    higher = np.int64(_bits32_at(ka0, ka1, i))
    lower = np.int64(_bits32_at(kb0, kb1, i))
    off = ((_urem32(higher, span) * mult) & 0xFFFFFFFF) + _urem32(lower, span)
    off = _urem32(off & 0xFFFFFFFF, span)
    return (lo + off) & 0xFFFFFFFF


def _urem64(a, b):
    """Unsigned 64-bit remainder with XLA's convention ``a % 0 == a``."""
    if b == np.uint64(0):
        return a
    return a % b


def _randint64_params(minval, maxval):
    """(low, span, multiplier) for int64 ``randint``: span and multiplier uint64."""
    lo = np.int64(minval)
    hi = np.int64(maxval)
    span = np.uint64(hi) - np.uint64(lo)
    if hi <= lo:
        span = np.uint64(1)
    mult = _urem64(np.uint64(4294967296), span)
    mult = _urem64(mult * mult, span)
    return lo, span, mult


def _randint64_at(ka0, ka1, kb0, kb1, i, lo, span, mult):
    """Element ``i`` of an int64 ``randint``."""
    a0, a1 = _words_at(ka0, ka1, i)
    b0, b1 = _words_at(kb0, kb1, i)
    higher = (np.uint64(a0) << np.uint64(32)) | np.uint64(a1)
    lower = (np.uint64(b0) << np.uint64(32)) | np.uint64(b1)
    off = _urem64(higher, span) * mult + _urem64(lower, span)
    off = _urem64(off, span)
    return np.int64(np.uint64(lo) + off)


# ---- the other samplers, one element at a time ----------------------------
#
# Each ``*_f32``/``*_f64`` pair below is one template (``_F``: the float type,
# ``_fma``/``_log``/``_log1p``/``_u01``/``_normal_at``: the kernels of that
# type), written once and instantiated for both types by ``_instantiate``; the
# vectorized samplers further down perform the same operations in the same order.

_F32_FUNCS = dict(_F=np.float32, _fma=_fma_f32, _log=_log_f32, _log1p=_log1p_f32,
                  _u01=_uniform01_f32_from_words, _normal_at=_normal_f32_at,
                  _uniform_at=_uniform_f32_at, _erfinv=_erfinv_f32_scalar,
                  _SQRT2=_SQRT2_F32, _TINY=np.finfo(np.float32).tiny,
                  _EPS=np.float32(2.0 ** -23))
_F64_FUNCS = dict(_F=np.float64, _fma=_fma_f64, _log=_log_f64, _log1p=_log1p_f64,
                  _u01=_uniform01_f64_from_words, _normal_at=_normal_f64_at,
                  _uniform_at=_uniform_f64_at, _erfinv=_erfinv_f64_scalar,
                  _SQRT2=_SQRT2_F64, _TINY=np.finfo(np.float64).tiny,
                  _EPS=np.float64(2.0 ** -52))


def _instantiate(template):
    """Two module-level functions ``name_f32`` and ``name_f64`` from ``template``.

    The template's globals ``_F``, ``_fma`` ... are bound per type; Numba reads
    them as constants and functions, as it reads any module global.
    """
    import types as _types

    out = []
    for suffix, funcs in (("_f32", _F32_FUNCS), ("_f64", _F64_FUNCS)):
        g = dict(globals())
        g.update(funcs)
        name = template.__name__ + suffix
        fn = _types.FunctionType(template.__code__, g, name, template.__defaults__)
        fn.__qualname__ = name
        fn.__doc__ = template.__doc__
        g[name] = fn
        globals()[name] = fn
        out.append(fn)
    return tuple(out)


_F = _fma = _log = _log1p = _u01 = _normal_at = _uniform_at = _erfinv = None
_SQRT2 = _TINY = _EPS = None


def _log_libm(x):
    """log of a float64 by the C library (as Python's ``math.log``)."""
    return math.log(np.float64(x))


def _exp_libm(x):
    """exp of a float64 by the C library (as Numba's ``math.exp``)."""
    return math.exp(np.float64(x))


def _pow_libm(x, y):
    """x ** y of float64s by the C library (as Numba's ``math.pow``)."""
    return math.pow(np.float64(x), np.float64(y))


def _erf_libm(x):
    """erf of a float64 by the C library (as Numba's ``math.erf``)."""
    return math.erf(np.float64(x))


def _exponential_at(k0, k1, i):
    """Element ``i`` of ``exponential(key, shape)``: ``-log1p(-u)``."""
    b0, b1 = _words_at(k0, k1, i)
    return -_log1p(-_u01(b0, b1))


def _gumbel_low_at(k0, k1, i):
    """Element ``i`` of ``gumbel(key, shape, mode='low')``."""
    u = _uniform_at(k0, k1, i, _TINY, _F(1.0) - _TINY)
    return -_log(-_log(u))


def _gumbel_high_at(k0, k1, i, n):
    """Element ``i`` (of ``n``) of ``gumbel(key, shape, mode='high')``."""
    b0, b1 = _words_at(k0, k1, i)
    high = _u01(b0, b1)
    if not high >= _F(0.5):
        b0, b1 = _words_at(k0, k1, n + i)
        high = high + _EPS * _u01(b0, b1) + _TINY
    return -_log(-_log1p(-high))


def _bernoulli_at(k0, k1, i, n, p, high):
    """Element ``i`` (of ``n``) of ``bernoulli(key, p, shape, mode)``."""
    b0, b1 = _words_at(k0, k1, i)
    u = _u01(b0, b1)
    if not high:
        return u < p
    b0, b1 = _words_at(k0, k1, n + i)
    return _u01(b0, b1) * _EPS < p - u


def _truncated_bounds(lower, upper):
    """(erf(lower/sqrt2), its span, clip low, clip high) for truncated_normal."""
    lower = _F(lower)
    upper = _F(upper)
    a = _F(_erf_libm(lower / _SQRT2))
    b = _F(_erf_libm(upper / _SQRT2))
    lo = np.nextafter(lower, _F(np.inf))
    hi = np.nextafter(upper, _F(-np.inf))
    return a, b - a, lo, hi


def _truncated_normal_at(k0, k1, i, a, span, lo, hi):
    """Element ``i`` of ``truncated_normal``, with the numbers of ``_truncated_bounds``."""
    u = _uniform_at(k0, k1, i, a, span)
    x = _SQRT2 * _erfinv(u)
    if x < lo or lo != lo:     # np.clip: NaN bounds give NaN
        x = lo
    if x > hi or hi != hi:
        x = hi
    return x


def _gamma_one(k0, k1, alpha, log_space):
    """One ``gamma``/``loggamma`` draw of the key (k0, k1): JAX's ``_gamma_one``."""
    one = _F(1.0)
    zero = _F(0.0)
    third = _F(1.0 / 3.0)
    alpha_orig = _F(alpha)
    boost = alpha_orig >= one
    alpha = alpha_orig if boost else alpha_orig + one
    d = alpha - third
    c = third * _F(1.0 / math.sqrt(np.float64(d)))
    key0, key1 = _threefry2x32_pair(k0, k1, 0, 0)
    s0, s1 = _threefry2x32_pair(k0, k1, 0, 1)
    V = one
    while True:
        a0, a1 = _threefry2x32_pair(key0, key1, 0, 0)
        x0, x1 = _threefry2x32_pair(key0, key1, 0, 1)
        u0, u1 = _threefry2x32_pair(key0, key1, 0, 2)
        key0, key1 = a0, a1
        x = zero
        v = -one
        while True:
            y0, y1 = _threefry2x32_pair(x0, x1, 0, 0)
            z0, z1 = _threefry2x32_pair(x0, x1, 0, 1)
            x0, x1 = y0, y1
            x = _normal_at(z0, z1, 0)
            v = _fma(x, c, one)
            if not v <= zero:
                break
        X = x * x
        V = (v * v) * v
        b0, b1 = _threefry2x32_pair(u0, u1, 0, 0)
        U = _u01(b0, b1)
        if not (U >= _fma(_F(-0.0331), X * X, one)
                and _log(U) >= _fma(X, _F(0.5), d * ((one - V) + _log(V)))):
            break
    b0, b1 = _threefry2x32_pair(s0, s1, 0, 0)
    f = _u01(b0, b1)
    if log_space:
        log_samples = _log1p(-f)
        log_boost = zero
        if not (boost or log_samples == zero):
            log_boost = log_samples * (one / alpha_orig)
        return (_log(d) + _log(V)) + log_boost
    samples = one - f
    b = one
    if not boost:
        b = _F(_pow_libm(samples, one / alpha_orig))
    return (d * V) * b


def _beta_from_logs(log_a, log_b):
    """``beta`` from its two log-gamma draws."""
    m = log_a if (log_a >= log_b or log_a != log_a) else log_b
    ga = _F(_exp_libm(log_a - m))
    gb = _F(_exp_libm(log_b - m))
    return ga / (ga + gb)


_exponential_f32_at, _exponential_f64_at = _instantiate(_exponential_at)
_gumbel_low_f32_at, _gumbel_low_f64_at = _instantiate(_gumbel_low_at)
_gumbel_high_f32_at, _gumbel_high_f64_at = _instantiate(_gumbel_high_at)
_bernoulli_f32_at, _bernoulli_f64_at = _instantiate(_bernoulli_at)
_truncated_bounds_f32, _truncated_bounds_f64 = _instantiate(_truncated_bounds)
_truncated_normal_f32_at, _truncated_normal_f64_at = _instantiate(_truncated_normal_at)
_gamma_one_f32, _gamma_one_f64 = _instantiate(_gamma_one)
_beta_from_logs_f32, _beta_from_logs_f64 = _instantiate(_beta_from_logs)
del _exponential_at, _gumbel_low_at, _gumbel_high_at, _bernoulli_at, _truncated_bounds
del _truncated_normal_at, _gamma_one, _beta_from_logs


def _cholesky_lower(a, out):
    """Lower Cholesky factor of the 2-D array ``a`` into ``out`` (Crout order:
    column by column, each sum from k = 0 up).  Not positive definite: NaNs."""
    n = a.shape[0]
    for j in range(n):
        for i in range(j):
            out[i, j] = 0.0
        for i in range(j, n):
            s = a[i, j]
            for k in range(j):
                s = s - out[i, k] * out[j, k]
            if i == j:
                out[j, j] = math.sqrt(s) if s >= 0.0 else np.nan
            else:
                out[i, j] = s / out[j, j]


#: Kernels above that Numba compiles as they are (numba_backend registers them).
JITTABLE_KERNELS = (
    _rotl32, _mix4, _threefry2x32_pair, _counter_words, _bits32_at, _words_at,
    _uniform01_f32_from_words, _uniform01_f64_from_words, _fma_f32, _fma_f64,
    _log_f32, _log_f64, _log1p_f32, _log1p_f64,
    _erfinv_f32_scalar, _erfinv_f64_scalar,
    _uniform_f32_at, _uniform_f64_at, _normal_f32_at, _normal_f64_at,
    _urem32, _randint32_params, _randint32_at, _urem64, _randint64_params, _randint64_at,
    _log_libm, _exp_libm, _pow_libm, _erf_libm,
    _exponential_f32_at, _exponential_f64_at, _gumbel_low_f32_at, _gumbel_low_f64_at,
    _gumbel_high_f32_at, _gumbel_high_f64_at, _bernoulli_f32_at, _bernoulli_f64_at,
    _truncated_bounds_f32, _truncated_bounds_f64,
    _truncated_normal_f32_at, _truncated_normal_f64_at,
    _gamma_one_f32, _gamma_one_f64,
    _beta_from_logs_f32, _beta_from_logs_f64, _cholesky_lower,
)

# --------------------------------------------------------------------------
# Vectorized twins of the kernels (NumPy, uint32 arrays).
# --------------------------------------------------------------------------

_ROT_A = tuple(np.uint32(r) for r in (13, 15, 26, 6))
_ROT_B = tuple(np.uint32(r) for r in (17, 29, 16, 24))


def _threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 over uint32 arrays; keys and counters broadcast together."""
    k0 = np.asarray(k0, dtype=np.uint32)
    k1 = np.asarray(k1, dtype=np.uint32)
    k2 = k0 ^ k1 ^ np.uint32(_KS_PARITY)
    ks = (k0, k1, k2)
    x0 = np.add(np.asarray(x0, dtype=np.uint32), k0)
    x1 = np.add(np.asarray(x1, dtype=np.uint32), k1)
    x0, x1 = np.broadcast_arrays(x0, x1)
    x0 = np.array(x0)
    x1 = np.array(x1)
    tmp = np.empty_like(x1)
    for i in range(5):
        for r in (_ROT_A if i % 2 == 0 else _ROT_B):
            np.add(x0, x1, out=x0)
            np.left_shift(x1, r, out=tmp)
            np.right_shift(x1, np.uint32(32) - r, out=x1)
            np.bitwise_or(x1, tmp, out=x1)
            np.bitwise_xor(x1, x0, out=x1)
        np.add(x0, ks[(i + 1) % 3], out=x0)
        np.add(x1, ks[(i + 2) % 3], out=x1)
        np.add(x1, np.uint32(i + 1), out=x1)
    return x0, x1


def _iota_2x32(size):
    """High and low words of the 64-bit counters 0 .. size-1."""
    if size <= 2 ** 32:
        return np.zeros(size, np.uint32), np.arange(size, dtype=np.uint32)
    i = np.arange(size, dtype=np.uint64)
    return (i >> np.uint64(32)).astype(np.uint32), i.astype(np.uint32)


def _hash_words(k0, k1, shape):
    """The two hash words for every element of an array of ``shape``."""
    size = math.prod(shape)
    hi, lo = _iota_2x32(size)
    b0, b1 = _threefry2x32(k0, k1, hi, lo)
    return b0.reshape(shape), b1.reshape(shape)


def _bits_from_words(b0, b1, nbits):
    """JAX's partitionable ``random_bits`` from the two hash words."""
    if nbits == 64:
        return (b0.astype(np.uint64) << np.uint64(32)) | b1.astype(np.uint64)
    b = b0 ^ b1
    if nbits == 32:
        return b
    return b.astype(np.dtype(f"uint{nbits}"))


def _uniform01_from_words(b0, b1, dtype):
    """[0, 1) floats of ``dtype`` from hash words (vectorized)."""
    if dtype == np.float64:
        m = (_bits_from_words(b0, b1, 64) >> np.uint64(12)).astype(np.float64)
        return m * _F64_ULP1
    if dtype == np.float32:
        return ((b0 ^ b1) >> np.uint32(9)).astype(np.float32) * _F32_ULP1
    if dtype == np.float16:
        m = (((b0 ^ b1) & np.uint32(0xFFFF)) >> np.uint32(6)).astype(np.float16)
        return m * np.float16(2.0 ** -10)
    raise ValueError(f"unsupported float dtype {dtype}")


def _round_odd_sum(p, c):
    """float64 ``p + c`` rounded to odd (see ``_fma_f32``)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = np.asarray(p + c)
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        fix = (err != 0) & np.isfinite(s) & ((s.view(np.int64) & 1) == 0)
        if fix.any():
            s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s


def _fma_vec(a, b, c, dt):
    """Vectorized twin of ``_fma_f32`` / ``_fma_f64`` for ``dt``."""
    if dt != np.float64:
        return _round_odd_sum(np.asarray(a, np.float64) * np.asarray(b, np.float64),
                              np.asarray(c, np.float64)).astype(dt)
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * b
        s = p + c
        t = 134217729.0 * a
        ah = t - (t - a)
        al = a - ah
        t = 134217729.0 * b
        bh = t - (t - b)
        bl = b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        fused = s + (t + e)
        ok = (np.abs(a) < 1e300) & (np.abs(b) < 1e300) & (np.abs(p) < 1e300) & \
            (np.abs(s) < 1e300)
    return np.where(ok, fused, s)


def _horner_fma(coefs, w, dt):
    """Horner's rule with a fused multiply-add at each step (as XLA)."""
    if dt == np.float64:
        # Split w once for Dekker's product; each step then costs ~18 flops.
        with np.errstate(over="ignore", invalid="ignore"):
            t = 134217729.0 * w
            wh = t - (t - w)
            wl = w - wh
            p = np.full_like(w, coefs[0])
            for c in coefs[1:]:
                prod = p * w
                s = prod + c
                t = 134217729.0 * p
                ph = t - (t - p)
                pl = p - ph
                e = ((ph * wh - prod) + ph * wl + pl * wh) + pl * wl
                bb = s - prod
                p = s + (((prod - (s - bb)) + (c - bb)) + e)
        return p
    w64 = w.astype(np.float64)
    p = np.full_like(w64, coefs[0])
    for c in coefs[1:]:
        p = _round_odd_sum(p * w64, np.float64(c)).astype(dt).astype(np.float64)
    return p.astype(dt)


def _log_vec(y):
    """Vectorized twin of ``_log_f32`` / ``_log_f64`` (float16 via float32)."""
    y = np.asarray(y)
    dt = y.dtype
    if dt == np.float16:
        return _log_vec(y.astype(np.float32)).astype(np.float16)
    shape = y.shape
    y = y.reshape(-1)
    ok = (y > 0) & (y < np.inf)
    out = np.where(y == 0, dt.type(-np.inf), np.where(y == np.inf, y, dt.type(np.nan)))
    if dt == np.float64:
        yy = y[ok]
        out[ok] = np.fromiter(map(math.log, yy.tolist()), np.float64, yy.size)
        return out.reshape(shape)
    if dt != np.float32:
        raise ValueError(f"log: unsupported dtype {dt}")
    yy = np.maximum(y[ok], _LOGF_MIN_NORMAL)
    m, e = np.frexp(yy)
    ef = e.astype(np.float32)
    low = m < _LOGF_SQRTHF
    x = (m - np.float32(1.0)) + np.where(low, m, np.float32(0.0))
    ef = ef - np.where(low, np.float32(1.0), np.float32(0.0))
    z = x * x
    x3 = z * x
    c = _LOGF_C
    f = np.float32
    pa = _fma_vec(_fma_vec(x, c[0], c[1], f), x, c[6], f)
    pb = _fma_vec(_fma_vec(x, c[2], c[3], f), x, c[7], f)
    pc = _fma_vec(_fma_vec(x, c[4], c[5], f), x, c[8], f)
    t = _fma_vec(_fma_vec(pa, x3, pb, f), x3, pc, f)
    tail = _fma_vec(t, x3, ef * _LOGF_LN2_LO, f)
    head = _fma_vec(-z, np.float32(0.5), x, f)
    out[ok] = _fma_vec(ef, _LOGF_LN2_HI, head + tail, f)
    return out.reshape(shape)


def _log1p_vec(x):
    """Vectorized twin of ``_log1p_f32`` / ``_log1p_f64`` (float16 via float32)."""
    x = np.asarray(x)
    dt = x.dtype
    if dt == np.float16:
        return _log1p_vec(x.astype(np.float32)).astype(np.float16)
    if dt not in (np.float32, np.float64):
        raise ValueError(f"log1p: unsupported dtype {dt}")
    shape = x.shape
    x = x.reshape(-1)
    thr, Q, P = ((_LOG1P_THRESHOLD, _LOG1P_Q, _LOG1P_P) if dt == np.float64 else
                 (_LOG1PF_THRESHOLD, _LOG1PF_Q, _LOG1PF_P))
    small = np.abs(x) < thr
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = _log_vec(x + dt.type(1.0))
        xs = x[small]
        x2 = xs * xs
        q = _horner_fma(np.concatenate([[1.0], Q]).astype(dt), xs, dt)
        p = _horner_fma(P, xs, dt)
        out[small] = xs + _fma_vec(x2, dt.type(-0.5), (xs * x2) * (p / q), dt)
    return out.reshape(shape)


def _erfinv(x):
    """Vectorized twin of ``_erfinv_f32_scalar`` / ``_erfinv_f64_scalar``."""
    x = np.asarray(x)
    dtype = x.dtype
    if dtype == np.float16:
        return _erfinv(x.astype(np.float32)).astype(np.float16)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"erfinv: unsupported dtype {dtype}")
    shape = x.shape
    x = x.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = -_log1p_vec(x * -x)
        if dtype == np.float32:
            lt = w < np.float32(5.0)
            p = _horner_fma(_ERFINV_F32_LT5, w - np.float32(2.5), dtype)
            if not lt.all():
                far = ~lt
                p[far] = _horner_fma(_ERFINV_F32_GE5, np.sqrt(w[far]) - np.float32(3.0),
                                     dtype)
        else:
            lt = w < 6.25
            p = _horner_fma(_ERFINV_F64_LT6_25, w - 3.125, dtype)
            if not lt.all():
                mid = ~lt & (w < 16.0)
                p[mid] = _horner_fma(_ERFINV_F64_LT16, np.sqrt(w[mid]) - 3.25, dtype)
                far = ~(w < 16.0)
                p[far] = _horner_fma(_ERFINV_F64_GE16, np.sqrt(w[far]) - 5.0, dtype)
        out = p * x
        edge = np.abs(x) == 1
        if edge.any():
            out = np.where(edge, x * dtype.type(np.inf), out)
    return out.reshape(shape)


def _libm_map(fn, x):
    """``fn`` (a float64 function of the C library) over ``x``, in the dtype of
    ``x`` (float32/float16 rounded from float64).  Not NumPy's SIMD versions,
    whose last bit depends on the machine: the compiled kernels call the same C
    library functions."""
    x = np.asarray(x)
    out = np.fromiter(map(fn, x.reshape(-1).astype(np.float64).tolist()), np.float64, x.size)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _exp(x):
    """exp in the dtype of ``x``: the C library's, rounded from float64."""
    return _libm_map(math.exp, x)


def _erf(x):
    """erf in the dtype of ``x``: the C library's, rounded from float64."""
    return _libm_map(math.erf, x)


def _pow(x, y):
    """x ** y in the dtype of ``x``: float64 by the C library (as XLA's CPU
    backend), float32/float16 rounded from float64."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y, dtype=np.asarray(x).dtype))
    out = np.fromiter(map(math.pow, x.reshape(-1).astype(np.float64).tolist(),
                          y.reshape(-1).astype(np.float64).tolist()), np.float64, x.size)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _cholesky_vec(a):
    """Vectorized twin of ``_cholesky_lower`` over a stack of matrices (..., n, n)."""
    a = np.asarray(a)
    n = a.shape[-1]
    out = np.zeros(a.shape, a.dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            s = a[..., j:, j].copy()
            for k in range(j):
                s = s - out[..., j:, k] * out[..., j, k, None]
            d = s[..., 0]
            d = np.where(d >= 0, np.sqrt(np.where(d >= 0, d, 0).astype(np.float64)),
                         np.nan).astype(a.dtype)
            out[..., j, j] = d
            out[..., j + 1:, j] = s[..., 1:] / d[..., None]
    return out


# --------------------------------------------------------------------------
# Argument checking
# --------------------------------------------------------------------------

def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of dtype {x.dtype} and shape {x.shape}"
    return f"{type(x).__name__} {x!r}"[:200]


def _key_array(k, fname, argname="key", batched=False):
    """Check a key (or a batch of keys) and return it as a uint32 ndarray."""
    if isinstance(k, (bool, int, float, complex, np.generic, list, tuple, str, bytes)) \
            or k is None or not hasattr(k, "__array__"):
        hint = " (make one with srctrans.random.key(seed))" if isinstance(
            k, (int, np.integer)) else ""
        raise TypeError(
            f"{fname}: argument {argname!r} must be a PRNG key, a uint32 array of "
            f"shape {'(..., 2)' if batched else '(2,)'}; got {_describe(k)}{hint}")
    arr = np.asarray(k)
    if arr.dtype != np.uint32:
        raise TypeError(
            f"{fname}: argument {argname!r} must be a PRNG key, a uint32 array of "
            f"shape {'(..., 2)' if batched else '(2,)'}; got {_describe(arr)}")
    if (batched and (arr.ndim == 0 or arr.shape[-1] != 2)) or \
            (not batched and arr.shape != (2,)):
        more = ("; sampling functions take a single key, use vmap or a loop for a "
                "batch of keys" if not batched and arr.ndim > 1 and arr.shape[-1] == 2
                else "")
        raise TypeError(
            f"{fname}: argument {argname!r} must be a PRNG key of shape "
            f"{'(..., 2)' if batched else '(2,)'}, got shape {arr.shape}{more}")
    return arr


def _key_words(k, fname, argname="key"):
    arr = _key_array(k, fname, argname)
    return np.uint32(arr[0]), np.uint32(arr[1])


def _index(x, fname, argname, what="an integer"):
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{fname}: argument {argname!r} must be {what}, got {_describe(x)}")
    try:
        return operator.index(x)
    except TypeError:
        if isinstance(x, np.ndarray) and x.ndim == 0 and np.issubdtype(x.dtype, np.integer):
            return int(x)
        raise TypeError(
            f"{fname}: argument {argname!r} must be {what}, got {_describe(x)}") from None


def _shape(shape, fname, argname="shape"):
    """Canonical shape tuple: an int or a sequence of non-negative ints."""
    what = "a shape: an int or a tuple of ints"
    if isinstance(shape, (bool, np.bool_)) or shape is None or isinstance(shape, (str, bytes)):
        raise TypeError(f"{fname}: argument {argname!r} must be {what}, got {_describe(shape)}")
    if isinstance(shape, np.ndarray):
        if shape.ndim > 1 or not np.issubdtype(shape.dtype, np.integer):
            raise TypeError(
                f"{fname}: argument {argname!r} must be {what}, got {_describe(shape)}")
        shape = shape.tolist() if shape.ndim == 1 else int(shape)
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            items = list(shape)
        except TypeError:
            raise TypeError(
                f"{fname}: argument {argname!r} must be {what}, got {_describe(shape)}"
            ) from None
        dims = tuple(_index(d, fname, argname, what) for d in items)
    for d in dims:
        if d < 0:
            raise ValueError(f"{fname}: argument {argname!r} has a negative dimension: {dims}")
    return dims


def _float_dtype(dtype, fname):
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt not in (np.float16, np.float32, np.float64):
        raise ValueError(f"{fname}: dtype must be float16, float32 or float64, got {dt}")
    return dt


def _finish(out, shape, dt):
    """``out`` as a writable array of exactly ``shape`` and ``dt``."""
    out = np.asarray(out, dtype=dt)
    if out.shape != tuple(shape):
        out = np.broadcast_to(out, shape).copy()
    return out


def _check_result_shape(fname, shape, *param_shapes):
    if param_shapes:
        full = np.broadcast_shapes(shape, *param_shapes)
        if full != tuple(shape):
            raise ValueError(
                f"{fname}: parameter shapes {param_shapes} must broadcast to the "
                f"shape argument {tuple(shape)}, got {full}")


# --------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------

def key(seed):
    """A key from an integer seed: ``[seed >> 32, seed & 0xFFFFFFFF]`` as uint32.

    The seed is a 64-bit integer, in ``[-2**63, 2**64)``; as in JAX with x64.
    """
    if isinstance(seed, np.ndarray):
        if seed.ndim != 0:
            raise TypeError(f"key: argument 'seed' must be a scalar integer, got {_describe(seed)}")
        seed = seed[()]
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"key: argument 'seed' must be an integer, got {_describe(seed)}")
    s = int(seed)
    if not -2 ** 63 <= s < 2 ** 64:
        raise OverflowError(f"key: seed {s} does not fit in 64 bits")
    s &= 0xFFFFFFFFFFFFFFFF
    return np.array([s >> 32, s & _MASK32], dtype=np.uint32)


PRNGKey = key


def key_data(keys):
    """The uint32 data of a key or a batch of keys (shape ``(..., 2)``)."""
    return np.array(_key_array(keys, "key_data", "keys", batched=True))


def wrap_key_data(key_bits_array):
    """A key (batch) from its uint32 data; keys *are* their data here."""
    return np.array(_key_array(key_bits_array, "wrap_key_data", "key_bits_array",
                               batched=True))


def split(key, num=2):
    """``num`` new keys (``num`` an int or a shape tuple): shape ``(*num, 2)``."""
    k0, k1 = _key_words(key, "split")
    shape = _shape(num, "split", "num")
    b0, b1 = _hash_words(k0, k1, shape)
    return np.stack([b0, b1], axis=-1)


def _fold_in_data(data):
    if isinstance(data, np.ndarray):
        if data.ndim:
            raise TypeError(
                f"fold_in: argument 'data' must be a scalar integer, got {_describe(data)}")
        data = data[()]
    if isinstance(data, (bool, np.bool_)) or not isinstance(data, (int, np.integer)):
        raise TypeError(f"fold_in: argument 'data' must be an integer, got {_describe(data)}")
    if isinstance(data, np.integer):
        return np.uint32(np.asarray(data).astype(np.uint32))
    if not 0 <= data < 2 ** 32:
        raise OverflowError(f"fold_in: data {data} out of bounds for uint32")
    return np.uint32(data)


def fold_in(key, data):
    """A new key from ``key`` and a 32-bit integer ``data``: hash of (0, data)."""
    k0, k1 = _key_words(key, "fold_in")
    d = _fold_in_data(data)
    b0, b1 = _threefry2x32(k0, k1, np.uint32(0), d)
    return np.array([b0, b1], dtype=np.uint32)


def _split_words(k0, k1, num):
    """Vectorized ``split`` of arrays of keys: list of ``num`` (k0, k1) pairs."""
    zero = np.zeros(np.shape(k0), np.uint32)
    return [_threefry2x32(k0, k1, zero, zero + np.uint32(i)) for i in range(num)]


# --------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------

def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers (default ``uint32``)."""
    k0, k1 = _key_words(key, "bits")
    shape = _shape(shape, "bits")
    dt = np.dtype(np.uint32 if dtype is None else dtype)
    if dt.kind != "u":
        raise ValueError(f"bits: dtype must be an unsigned integer dtype, got {dt}")
    b0, b1 = _hash_words(k0, k1, shape)
    return np.asarray(_bits_from_words(b0, b1, dt.itemsize * 8), dtype=dt)


def _uniform(k0, k1, shape, dt, minval, maxval):
    minval = np.asarray(minval).astype(dt)
    maxval = np.asarray(maxval).astype(dt)
    _check_result_shape("uniform", shape, minval.shape, maxval.shape)
    b0, b1 = _hash_words(k0, k1, shape)
    f = _uniform01_from_words(b0, b1, dt)
    if minval.ndim == 0 and maxval.ndim == 0 and minval == 0 and maxval == 1:
        return _finish(f, shape, dt)  # f * 1 + 0 == f, fused or not
    with np.errstate(over="ignore", invalid="ignore"):
        out = _fma_vec(f, maxval - minval, minval, dt)
        out = np.maximum(minval, out)
    return _finish(out, shape, dt)


def _normal(k0, k1, shape, dt):
    b0, b1 = _hash_words(k0, k1, shape)
    f = _uniform01_from_words(b0, b1, dt)
    lo = np.nextafter(dt.type(-1.0), dt.type(0.0))
    u = np.maximum(lo, f * (dt.type(1.0) - lo) + lo)   # the span is exactly 2
    return dt.type(np.sqrt(2.0)) * _erfinv(u)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)`` (default dtype float64)."""
    k0, k1 = _key_words(key, "uniform")
    shape = _shape(shape, "uniform")
    dt = _float_dtype(dtype, "uniform")
    return _uniform(k0, k1, shape, dt, minval, maxval)


def normal(key, shape=(), dtype=None):
    """Standard normal floats: ``sqrt(2) * erfinv(u)`` as JAX (default float64)."""
    k0, k1 = _key_words(key, "normal")
    shape = _shape(shape, "normal")
    dt = _float_dtype(dtype, "normal")
    return np.asarray(_normal(k0, k1, shape, dt), dtype=dt)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normals truncated to the open interval ``(lower, upper)``."""
    k0, k1 = _key_words(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    lower = np.asarray(lower).astype(dt)
    upper = np.asarray(upper).astype(dt)
    if shape is None:
        shape = np.broadcast_shapes(lower.shape, upper.shape)
    else:
        shape = _shape(shape, "truncated_normal")
        _check_result_shape("truncated_normal", shape, lower.shape, upper.shape)
    sqrt2 = dt.type(np.sqrt(2.0))
    a = _erf(lower / sqrt2)      # the C library's erf, as the compiled kernel
    b = _erf(upper / sqrt2)
    u = _uniform(k0, k1, shape, dt, a, b)
    out = sqrt2 * _erfinv(u)
    lo = np.nextafter(lower, dt.type(np.inf))
    hi = np.nextafter(upper, dt.type(-np.inf))
    return np.asarray(np.clip(out, lo, hi), dtype=dt)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p``."""
    k0, k1 = _key_words(key, "bernoulli")
    if mode not in ("low", "high"):
        raise ValueError(f"bernoulli: got mode={mode!r}, expected 'high' or 'low'")
    p = np.asarray(p)
    if not np.issubdtype(p.dtype, np.floating):
        raise TypeError(f"bernoulli: probability 'p' must have a floating dtype, got {p.dtype}")
    dt = p.dtype
    if shape is None:
        shape = p.shape
    else:
        shape = _shape(shape, "bernoulli")
        _check_result_shape("bernoulli", shape, p.shape)
    if mode == "high":
        u = _uniform(k0, k1, (2, *shape), dt, 0.0, 1.0)
        u1, u2 = u[0], u[1] * dt.type(2.0 ** -np.finfo(dt).nmant)
        return np.asarray(u2 < p - u1)
    return np.asarray(_uniform(k0, k1, shape, dt, 0.0, 1.0) < p)


def exponential(key, shape=(), dtype=None):
    """Standard exponential floats: ``-log1p(-u)``."""
    k0, k1 = _key_words(key, "exponential")
    shape = _shape(shape, "exponential")
    dt = _float_dtype(dtype, "exponential")
    u = _uniform(k0, k1, shape, dt, 0.0, 1.0)
    return np.asarray(-_log1p_vec(-u), dtype=dt)


def _gumbel(k0, k1, shape, dt, mode):
    tiny = np.finfo(dt).tiny
    with np.errstate(divide="ignore"):
        if mode == "low":
            u = _uniform(k0, k1, shape, dt, tiny, 1.0)
            return -_log_vec(-_log_vec(u))
        high_low = _uniform(k0, k1, (2, *shape), dt, 0.0, 1.0)
        high, low = high_low[0], high_low[1]
        x = np.where(high >= dt.type(0.5), high,
                     high + dt.type(2.0 ** -np.finfo(dt).nmant) * low + tiny)
        return -_log_vec(-_log1p_vec(-x))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats (``mode`` 'low', the default, or 'high')."""
    k0, k1 = _key_words(key, "gumbel")
    shape = _shape(shape, "gumbel")
    dt = _float_dtype(dtype, "gumbel")
    mode = "low" if mode is None else mode
    if mode not in ("low", "high"):
        raise ValueError(f"gumbel: mode must be 'low' or 'high', got {mode!r}")
    return np.asarray(_gumbel(k0, k1, shape, dt, mode), dtype=dt)


def _top_k_indices(x, k):
    """Indices of the k largest entries along the last axis, as lax.top_k."""
    order = np.argsort(-x, axis=-1, kind="stable")
    return order[..., :k]


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples of category indices with probabilities ``softmax(logits, axis)``."""
    k0, k1 = _key_words(key, "categorical")
    logits = np.asarray(logits)
    if not np.issubdtype(logits.dtype, np.floating):
        logits = logits.astype(np.float64)
    dt = logits.dtype
    mode = "low" if mode is None else mode
    ndim = logits.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"categorical: axis {axis} out of bounds for logits of ndim {ndim}")
    batch_shape = tuple(np.delete(np.array(logits.shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape(shape, "categorical")
        _check_result_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % ndim, logits.shape[axis])
        g = _gumbel(k0, k1, (*prefix, *logits_shape), dt, mode)
        expanded = logits.reshape((1,) * len(prefix) + logits.shape)
        return np.asarray(np.argmax(g + expanded, axis=axis))
    g = logits + _gumbel(k0, k1, logits.shape, dt, mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(
            f"categorical: number of samples without replacement ({k}) cannot exceed "
            f"number of categories ({logits.shape[axis]}).")
    idx = _top_k_indices(np.moveaxis(g, axis, -1), k)
    idx = np.moveaxis(idx, -1, 0)
    return idx.reshape(shape)


def _int_dtype(dtype, fname):
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise TypeError(f"{fname} only accepts integer dtypes, got {dt}")
    return dt


def _convert_and_clip_integer(val, dt):
    info, vinfo = np.iinfo(dt), np.iinfo(val.dtype)
    lo, hi = max(info.min, vinfo.min), min(info.max, vinfo.max)
    return np.clip(val, val.dtype.type(lo), val.dtype.type(hi)).astype(dt)


def _urem(a, b):
    """Unsigned remainder with XLA's convention ``a % 0 == a``."""
    zero = b == 0
    if np.any(zero):
        return np.where(zero, a, a % np.where(zero, b.dtype.type(1), b))
    return a % b


def _randint(k0, k1, shape, minval, maxval, dt):
    minval = np.asarray(minval)
    maxval = np.asarray(maxval)
    _check_result_shape("randint", shape, minval.shape, maxval.shape)
    if not np.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(np.int64)
    if not np.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(np.int64)
    info = np.iinfo(dt)
    maxval_out_of_range = maxval > _convert_and_clip_integer(
        np.asarray(info.max, dt), maxval.dtype)
    minval = _convert_and_clip_integer(minval, dt)
    maxval = _convert_and_clip_integer(maxval, dt)
    nbits = info.bits
    udt = np.dtype(f"uint{nbits}")
    (a0, a1), (c0, c1) = _split_words(k0, k1, 2)
    higher = _bits_from_words(*_hash_words(a0, a1, shape), nbits)
    lower = _bits_from_words(*_hash_words(c0, c1, shape), nbits)
    with np.errstate(over="ignore"):
        span = maxval.astype(udt) - minval.astype(udt)
        span = np.where(maxval <= minval, udt.type(1), span).astype(udt)
        span = np.where(maxval_out_of_range & (maxval > minval), span + udt.type(1),
                        span).astype(udt)
        multiplier = _urem(np.asarray(udt.type(2 ** (nbits // 2))), span)
        multiplier = _urem((multiplier * multiplier).astype(udt), span)
        offset = (_urem(higher, span) * multiplier).astype(udt) + _urem(lower, span)
        offset = _urem(offset.astype(udt), span)
        out = np.asarray(minval.astype(udt) + offset, dtype=udt).view(dt)
    return _finish(out, shape, dt)


def randint(key, shape, minval, maxval, dtype=None):
    """Integers in ``[minval, maxval)`` as JAX (default dtype int64)."""
    k0, k1 = _key_words(key, "randint")
    shape = _shape(shape, "randint")
    dt = _int_dtype(dtype, "randint")
    info = np.iinfo(dt)
    if info.bits < 32:
        minval = np.clip(np.asarray(minval).astype(np.int32), info.min, info.max)
        maxval = np.clip(np.asarray(maxval).astype(np.int32), info.min, info.max + 1)
        return _randint(k0, k1, shape, minval, maxval, np.dtype(np.int32)).astype(dt)
    return _randint(k0, k1, shape, minval, maxval, dt)


def _shuffle(k0, k1, x, axis):
    """JAX's sort-based shuffle: rounds of stable sorts by fresh 32-bit keys."""
    exponent = 3
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(math.ceil(exponent * math.log(max(1, x.size)) / math.log(uint32max)))
    for _ in range(num_rounds):
        (k0, k1), (s0, s1) = _split_words(k0, k1, 2)
        w0, w1 = _hash_words(s0, s1, x.shape)
        sort_keys = w0 ^ w1
        order = np.argsort(sort_keys, axis=axis, kind="stable")
        x = np.take_along_axis(x, order, axis=axis)
    return x


def permutation(key, x, axis=0, independent=False):
    """A shuffled ``arange(x)`` (int ``x``) or a copy of ``x`` shuffled along ``axis``."""
    k0, k1 = _key_words(key, "permutation")
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("permutation: x must be an integer or at least 1-dimensional")
    xa = np.asarray(x)
    if xa.ndim == 0:
        if not np.issubdtype(xa.dtype, np.integer):
            raise TypeError("permutation: x must be an integer or at least 1-dimensional")
        return _shuffle(k0, k1, np.arange(int(xa), dtype=np.int64), 0)
    axis = _index(axis, "permutation", "axis")
    if not -xa.ndim <= axis < xa.ndim:
        raise ValueError(f"permutation: axis {axis} out of bounds for ndim {xa.ndim}")
    axis %= xa.ndim
    if independent or xa.ndim == 1:
        return _shuffle(k0, k1, xa, axis)
    ind = _shuffle(k0, k1, np.arange(xa.shape[axis], dtype=np.int64), 0)
    return np.take(xa, ind, axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """A random sample from ``a`` (an int n means ``arange(n)``), as JAX."""
    k0, k1 = _key_words(key, "choice")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        raise TypeError(f"choice: argument 'shape' must be a sequence, got {shape!r}")
    shape = _shape(shape, "choice")
    arr = np.asarray(a)
    if arr.ndim == 0:
        n_inputs = _index(a if not isinstance(a, np.ndarray) else arr[()], "choice", "a")
    else:
        axis = _index(axis, "choice", "axis") % arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return np.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"choice: cannot take a larger sample (size {n_draws}) than population "
            f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = _randint(k0, k1, shape, 0, n_inputs, np.dtype(np.int64))
            result = ind if arr.ndim == 0 else np.take(arr, ind, axis=axis)
        else:
            if arr.ndim == 0:
                perm = _shuffle(k0, k1, np.arange(n_inputs, dtype=np.int64), 0)
            elif arr.ndim == 1:
                perm = _shuffle(k0, k1, arr, 0)
            else:
                ind = _shuffle(k0, k1, np.arange(n_inputs, dtype=np.int64), 0)
                perm = np.take(arr, ind, axis=axis)
            result = perm[(slice(None),) * (axis if arr.ndim else 0) + (slice(n_draws),)]
    else:
        p_arr = np.asarray(p)
        if not np.issubdtype(p_arr.dtype, np.inexact):
            p_arr = p_arr.astype(np.float64)
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                "choice: p must be None or a 1D vector with the same size as "
                f"a.shape[axis]; p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = np.cumsum(p_arr)
            r = p_cuml[-1] * (1 - _uniform(k0, k1, shape, p_cuml.dtype, 0.0, 1.0))
            ind = np.searchsorted(p_cuml, r, side="left").astype(np.int64)
        else:
            with np.errstate(divide="ignore"):
                g = _gumbel(k0, k1, (n_inputs,), p_arr.dtype,
                            "low" if mode is None else mode) + _log_vec(p_arr)
            ind = _top_k_indices(g, n_draws).astype(np.int64)
        result = ind if arr.ndim == 0 else np.take(arr, ind, axis=axis)
    return result.reshape(shape if arr.ndim == 0 else
                          arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:])


# ---- gamma and beta (Marsaglia-Tsang, per-element keys, as JAX) ------------

def _uniform_scalar_per_key(k0, k1, dt):
    """``uniform(k, (), dt)`` for each key of the arrays (k0, k1)."""
    zero = np.zeros(np.shape(k0), np.uint32)
    b0, b1 = _threefry2x32(k0, k1, zero, zero)
    return _uniform01_from_words(b0, b1, dt)


def _normal_scalar_per_key(k0, k1, dt):
    """``normal(k, (), dt)`` for each key of the arrays (k0, k1)."""
    lo = np.nextafter(dt.type(-1.0), dt.type(0.0))
    f = _uniform_scalar_per_key(k0, k1, dt)
    u = np.maximum(lo, f * (dt.type(1.0) - lo) + lo)
    return dt.type(np.sqrt(2.0)) * _erfinv(u)


def _gamma_one(k0, k1, alpha, log_space):
    """JAX's ``_gamma_one`` for arrays of keys and alphas (one draw each)."""
    dt = alpha.dtype
    t = dt.type
    one, zero, third = t(1.0), t(0.0), t(1.0 / 3.0)
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = np.where(boost_mask, alpha, alpha + one)
    d = alpha - third
    # XLA rewrites a / sqrt(b) as a * rsqrt(b); we round rsqrt once (as XLA does
    # in float64; its float32 rsqrt may differ in the last bit).
    c = third * (1.0 / np.sqrt(d.astype(np.float64))).astype(dt)
    (k0, k1), (s0, s1) = _split_words(k0, k1, 2)
    n = alpha.size
    V = np.ones(n, dt)
    k0 = k0.copy()
    k1 = k1.copy()
    idx = np.arange(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        while idx.size:
            (a0, a1), (x0, x1), (u0, u1) = _split_words(k0[idx], k1[idx], 3)
            k0[idx], k1[idx] = a0, a1
            cc = c[idx]
            x = np.zeros(idx.size, dt)
            v = np.full(idx.size, -one, dt)
            j = np.arange(idx.size)
            while j.size:
                (y0, y1), (z0, z1) = _split_words(x0[j], x1[j], 2)
                x0[j], x1[j] = y0, y1
                xn = _normal_scalar_per_key(z0, z1, dt)
                x[j] = xn
                v[j] = _fma_vec(xn, cc[j], one, dt)
                j = j[v[j] <= zero]
            X = x * x
            Vn = (v * v) * v
            U = _uniform_scalar_per_key(u0, u1, dt)
            V[idx] = Vn
            dd = d[idx]
            again = (U >= _fma_vec(t(-0.0331), X * X, one, dt)) & \
                (_log_vec(U) >= _fma_vec(X, t(0.5), dd * ((one - Vn) + _log_vec(Vn)), dt))
            idx = idx[again]
        if log_space:
            f = _uniform_scalar_per_key(s0, s1, dt)
            log_samples = _log1p_vec(-f)   # JAX: -exponential(subkey) = -(-log1p(-u))
            log_boost = np.where(boost_mask | (log_samples == 0), zero,
                                 log_samples * (one / alpha_orig))
            return (_log_vec(d) + _log_vec(V)) + log_boost
        samples = one - _uniform_scalar_per_key(s0, s1, dt)
        boost = np.where(boost_mask, one, _pow(samples, one / alpha_orig))
        return (d * V) * boost


def _gamma(k0, k1, a, shape, dt, log_space, fname):
    a = np.asarray(a)
    if shape is None:
        shape = a.shape
    else:
        shape = _shape(shape, fname)
        _check_result_shape(fname, shape, a.shape)
    a = np.broadcast_to(a.astype(dt), shape).reshape(-1)
    n = a.size
    if n == 0:
        return np.zeros(shape, dt)
    sub = _hash_words(k0, k1, (n,))
    out = _gamma_one(sub[0], sub[1], a, log_space)
    return out.reshape(shape).astype(dt, copy=False)


def gamma(key, a, shape=None, dtype=None):
    """Standard gamma floats with shape parameter ``a`` (Marsaglia-Tsang)."""
    k0, k1 = _key_words(key, "gamma")
    dt = _float_dtype(dtype, "gamma")
    return _gamma(k0, k1, a, shape, dt, False, "gamma")


def loggamma(key, a, shape=None, dtype=None):
    """Logarithms of standard gamma samples, accurate for small ``a``."""
    k0, k1 = _key_words(key, "loggamma")
    dt = _float_dtype(dtype, "loggamma")
    return _gamma(k0, k1, a, shape, dt, True, "loggamma")


def beta(key, a, b, shape=None, dtype=None):
    """Beta floats, from two log-gamma draws as JAX."""
    k0, k1 = _key_words(key, "beta")
    dt = _float_dtype(dtype, "beta")
    a = np.asarray(a)
    b = np.asarray(b)
    if shape is None:
        shape = np.broadcast_shapes(a.shape, b.shape)
    else:
        shape = _shape(shape, "beta")
        _check_result_shape("beta", shape, a.shape, b.shape)
    (ka0, ka1), (kb0, kb1) = _split_words(k0, k1, 2)
    a = np.broadcast_to(a.astype(dt), shape)
    b = np.broadcast_to(b.astype(dt), shape)
    log_a = _gamma(ka0, ka1, a, shape, dt, True, "beta")
    log_b = _gamma(kb0, kb1, b, shape, dt, True, "beta")
    log_max = np.maximum(log_a, log_b)
    ga = _exp(log_a - log_max)
    gb = _exp(log_b - log_max)
    return np.asarray(ga / (ga + gb), dtype=dt)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal samples: ``mean + factor(cov) @ normal(...)``."""
    k0, k1 = _key_words(key, "multivariate_normal")
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("multivariate_normal: method must be one of 'svd', 'eigh', 'cholesky'")
    mean = np.asarray(mean)
    cov = np.asarray(cov)
    common = np.result_type(mean.dtype, cov.dtype, np.float16)
    if not np.issubdtype(common, np.inexact):
        common = np.dtype(np.float64)
    mean = mean.astype(common)
    cov = cov.astype(common)
    dt = common if dtype is None else _float_dtype(dtype, "multivariate_normal")
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
            f"but got cov.shape == {cov.shape}.")
    if shape is None:
        shape = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        shape = _shape(shape, "multivariate_normal")
        _check_result_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = np.linalg.svd(cov)
        factor = u * np.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = np.linalg.eigh(cov)
        factor = v * np.sqrt(w[..., None, :])
    else:
        factor = _cholesky_vec(cov)     # as the compiled kernel (NaNs if not PD)
    z = _normal(k0, k1, (*shape, n), dt)
    # factor @ z summed in a fixed order (j = 0, 1, ...), as the compiled code
    acc = None
    for j in range(n):
        term = factor[..., :, j] * z[..., j, None]
        acc = term if acc is None else acc + term
    if acc is None:
        acc = np.zeros(np.broadcast_shapes(factor.shape[:-1], z.shape),
                       np.result_type(factor, z))
    return mean + acc
