"""``scipy.linalg.expm`` under ``numba.njit``, and ``srctrans.runtime.expm`` (a plain wrapper of
it, which the derivative rules of both call on the block matrix ``[[a, e], [0, a]]``).

Numba knows no SciPy function: a generated file's ``scipy.linalg.expm(a)`` stopped with
"Unknown attribute 'expm'". Importing this module registers an overload of each, computed by
scaling and squaring with Padé approximants (Higham 2005, "The scaling and squaring method for
the matrix exponential revisited", Algorithm 2.3): the degree ``m`` in (3, 5, 7, 9) is the first
whose ``theta_m`` bounds the 1-norm of the matrix; past ``theta_9``, degree 13 at
``A / 2**s`` with ``2**s`` the least power of two that brings the norm under ``theta_13``,
squared ``s`` times. SciPy (Al-Mohy and Higham's 2009 variant) gives the same numbers to
rounding: to ~1e-15 at 1-norms up to 5; beyond, SciPy squares fewer times and is the less
accurate of the two (normwise, against 40-digit mpmath at norm 50: SciPy up to 3e-12, this
1e-14). Products are BLAS's (``@``); the sums of powers and the solve of ``Q X = P`` (Gaussian
elimination with partial pivoting, as LAPACK's ``gesv``) are loops, which compile in a
fraction of the time of array expressions and ``np.linalg.solve``. As SciPy:

- a diagonal matrix (1x1 ones included) gives the exponentials of its diagonal exactly; a
  triangular one keeps the other triangle zero, and when squared, takes its diagonal and first
  off-diagonal from their closed forms at each step (Higham 2009, Code Fragment 2.1);
- a stack ``(..., n, n)`` gives the exponential of each matrix; ``(0, 0)`` matrices an empty result;
- integer and boolean matrices give float64, float32 float32 (computed in float64 and
  rounded), float64 float64; a number, a 0-d array or a 1-d array of one element ``x`` gives
  ``[[exp(x)]]`` in float64;
- a matrix, not diagonal, that holds a NaN or an infinity gives NaNs (zeros off the triangle
  of a triangular one);
- a 1-d array of another size, or last two dimensions that differ, raise ``LinAlgError``
  (a ``ValueError``) when called. Complex and float16 arrays raise ``TypingError``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.linalg as _linalg
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numpy.linalg import LinAlgError

from srctrans import runtime as rt

__all__: list[str] = []


def _pade_coefficients(m: int) -> np.ndarray:
    """b_j = (2m - j)! m! / ((2m)! j! (m - j)!), j = 0..m: the numerator of the [m/m] Padé
    approximant of exp (its denominator has the same ones at -x), each rounded once."""
    f = math.factorial
    return np.array([float(Fraction(f(2 * m - j) * f(m), f(2 * m) * f(j) * f(m - j))) for j in range(m + 1)])


_B3, _B5, _B7, _B9, _B13 = (_pade_coefficients(m) for m in (3, 5, 7, 9, 13))
# Higham 2005, Table 2.3: the largest 1-norm for which r_m's backward error is at most 2**-53
_THETA3, _THETA5, _THETA7, _THETA9 = (
    1.495585217958292e-2,
    2.539398330063230e-1,
    9.504178996162932e-1,
    2.097847961257068e0,
)
_THETA13 = 5.371920351148152e0


@register_jitable
def _norm1(a):
    """The largest column sum of |a|; NaN where ``a`` holds a NaN."""
    n = a.shape[0]
    best = 0.0
    for j in range(n):
        s = 0.0
        for i in range(n):
            s += abs(a[i, j])
        if not s <= best:
            best = s
    return best


@register_jitable
def _add(out, c, x):
    """out += c * x (loops: each array expression would be a kernel of its own to compile)."""
    n = out.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] += c * x[i, j]


@register_jitable
def _add_identity(out, c):
    for i in range(out.shape[0]):
        out[i, i] += c


@register_jitable
def _pade_low(a, b):
    """U, V of r_m(a) = (V - U) \\ (V + U) for an odd degree m = len(b) - 1 <= 9: V the even
    terms of p_m(a), U the odd ones, written with the even powers of a."""
    n = a.shape[0]
    a2 = a @ a
    v = np.zeros((n, n))
    u = np.zeros((n, n))
    _add_identity(v, b[0])
    _add_identity(u, b[1])
    power = a2
    for k in range(1, (len(b) - 1) // 2 + 1):
        if k > 1:
            power = power @ a2
        _add(v, b[2 * k], power)
        _add(u, b[2 * k + 1], power)
    return a @ u, v


@register_jitable
def _pade13(a):
    """U, V of r_13(a), with six products: a2, a4, a6 and one more each for U and V."""
    b = _B13
    n = a.shape[0]
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    high = np.zeros((n, n))
    _add(high, b[13], a6)
    _add(high, b[11], a4)
    _add(high, b[9], a2)
    inner = a6 @ high
    _add(inner, b[7], a6)
    _add(inner, b[5], a4)
    _add(inner, b[3], a2)
    _add_identity(inner, b[1])
    u = a @ inner
    high[:, :] = 0.0
    _add(high, b[12], a6)
    _add(high, b[10], a4)
    _add(high, b[8], a2)
    v = a6 @ high
    _add(v, b[6], a6)
    _add(v, b[4], a4)
    _add(v, b[2], a2)
    _add_identity(v, b[0])
    return u, v


@register_jitable
def _pade_solve(u, v):
    """(V - U) \\ (V + U): Gaussian elimination with partial pivoting (as LAPACK's gesv) on
    V - U, applied to the columns of V + U; U and V are overwritten."""
    n = u.shape[0]
    q = v
    p = u
    for i in range(n):
        for j in range(n):
            q[i, j], p[i, j] = v[i, j] - u[i, j], v[i, j] + u[i, j]
    for j in range(n):
        pivot = j
        for i in range(j + 1, n):
            if abs(q[i, j]) > abs(q[pivot, j]):
                pivot = i
        if pivot != j:
            for c in range(n):
                q[j, c], q[pivot, c] = q[pivot, c], q[j, c]
                p[j, c], p[pivot, c] = p[pivot, c], p[j, c]
        d = q[j, j]
        for i in range(j + 1, n):
            f = q[i, j] / d
            if f != 0.0:
                for c in range(j + 1, n):
                    q[i, c] -= f * q[j, c]
                for c in range(n):
                    p[i, c] -= f * p[j, c]
    for j in range(n - 1, -1, -1):
        d = q[j, j]
        for c in range(n):
            p[j, c] /= d
        for i in range(j):
            f = q[i, j]
            if f != 0.0:
                for c in range(n):
                    p[i, c] -= f * p[j, c]
    return p


@register_jitable
def _divided_exp(x, y):
    """(exp(y) - exp(x)) / (y - x), and exp(x) where x == y, without cancellation:
    exp of the mean times sinh(d) / d, with d half the difference."""
    d = 0.5 * (y - x)
    mean = 0.5 * (x + y)
    if d == 0.0:
        return math.exp(mean)
    return math.exp(mean) * (math.sinh(d) / d)


@register_jitable
def _triangular_fix(x, a, scale, upper):
    """Sets the diagonal of x (the exponential of scale * a, a triangular) to exp(scale * a_ii)
    and its first super- (upper) or subdiagonal (lower) to the closed form of the 2x2 blocks."""
    n = a.shape[0]
    for i in range(n):
        x[i, i] = math.exp(scale * a[i, i])
    for i in range(n - 1):
        if upper:
            x[i, i + 1] = scale * a[i, i + 1] * _divided_exp(scale * a[i, i], scale * a[i + 1, i + 1])
        else:
            x[i + 1, i] = scale * a[i + 1, i] * _divided_exp(scale * a[i, i], scale * a[i + 1, i + 1])


@register_jitable
def _scaling_and_squaring(a, norm, triangular, upper):
    """exp(a) for a float64 matrix ``a`` of finite 1-norm ``norm`` (Higham 2005, Algorithm 2.3);
    ``triangular``: ``a`` is upper (``upper``) or lower triangular."""
    n = a.shape[0]
    s = 0
    if norm <= _THETA3:
        u, v = _pade_low(a, _B3)
    elif norm <= _THETA5:
        u, v = _pade_low(a, _B5)
    elif norm <= _THETA7:
        u, v = _pade_low(a, _B7)
    elif norm <= _THETA9:
        u, v = _pade_low(a, _B9)
    else:
        s = max(0, int(math.ceil(math.log2(norm / _THETA13))))
        scaled = np.zeros((n, n))
        _add(scaled, 0.5**s, a)  # exact: a power of two
        u, v = _pade13(scaled)
    x = _pade_solve(u, v)
    if triangular and s > 0:
        _triangular_fix(x, a, 0.5**s, upper)
    for k in range(s - 1, -1, -1):
        x = x @ x
        if triangular:
            _triangular_fix(x, a, 0.5**k, upper)
    return x


@register_jitable
def _expm_matrix(a):
    """The exponential of one float64 matrix ``a`` (n, n), C-contiguous."""
    n = a.shape[0]
    upper = True  # zero below the diagonal
    lower = True  # zero above it
    for i in range(n):
        for j in range(n):
            if a[i, j] != 0.0:
                if i > j:
                    upper = False
                elif i < j:
                    lower = False
    if upper and lower:
        out = np.zeros((n, n))
        for i in range(n):
            out[i, i] = math.exp(a[i, i])
        return out
    norm = _norm1(a)
    if math.isfinite(norm):
        x = _scaling_and_squaring(a, norm, upper or lower, upper)
    else:
        x = np.full((n, n), np.nan)  # as SciPy: NaN, and zero off a triangular matrix's triangle
    if upper or lower:
        for i in range(n):
            for j in range(n):
                if (upper and i > j) or (lower and i < j):
                    x[i, j] = 0.0
    return x


@register_jitable
def _expm_stack(a, dt):
    """The exponential of each matrix of ``a`` (..., n, n), square, in ``dt``. Copied in and
    out by loops: an array assigned to a slice would compile Numba's shape-mismatch message."""
    n = a.shape[-1]
    count = 1
    for i in range(a.ndim - 2):
        count *= a.shape[i]
    matrices = np.ascontiguousarray(a).reshape((count, n, n))
    out = np.empty((count, n, n), dt)
    work = np.empty((n, n))
    for k in range(count):
        for i in range(n):
            for j in range(n):
                work[i, j] = matrices[k, i, j]
        e = _expm_matrix(work)
        for i in range(n):
            for j in range(n):
                out[k, i, j] = e[i, j]
    return out.reshape(a.shape)


def _register(fn, fname: str) -> None:
    square_message = f"{fname}: the last 2 dimensions of the array must be square"
    flat_message = f"{fname}: the input array must be at least two-dimensional (or hold one number)"

    @overload(fn)
    def _ov_expm(A):
        dtype = A.dtype if isinstance(A, types.Array) else A
        if not isinstance(dtype, (types.Integer, types.Boolean)) and dtype not in (types.float32, types.float64):
            raise TypingError(
                f"{fname}: under jit, arrays of float64, float32, integers or booleans "
                f"(matrices or stacks of them), got {A}"
            )
        if not isinstance(A, types.Array):
            return lambda A: np.full((1, 1), math.exp(np.float64(A)))
        if A.ndim == 0:
            return lambda A: np.full((1, 1), math.exp(np.float64(A.item())))
        if A.ndim == 1:

            def impl_flat(A):
                if A.size != 1:
                    raise LinAlgError(flat_message)
                return np.full((1, 1), math.exp(np.float64(A[0])))

            return impl_flat
        dt = np.float32 if dtype == types.float32 else np.float64

        def impl(A):
            if A.shape[-2] != A.shape[-1]:
                raise LinAlgError(square_message)
            return _expm_stack(A, dt)

        return impl


_register(_linalg.expm, "scipy.linalg.expm")
_register(rt.expm, "srctrans.runtime.expm")
