"""Every function with a derivative rule also compiles (issue 20 §2): for each case,
``srctrans.jit(f)`` equals ``f`` and ``srctrans.jit(srctrans.grad(g))`` equals
``srctrans.grad(g)``, where ``f`` returns the operation's result and ``g = np.sum(f(x) ** 2)``.

Bit for bit where the compiled code does the same arithmetic; where it calls another BLAS,
LAPACK or ``exp`` (``@`` on stacks, ``np.linalg.cholesky``, the ``exp`` in the adjoints of
``erf`` and ``logsumexp``, the digamma of ``gammaln``'s adjoint), to a few units in the last
place. Pure data movement (repeat, indexing, pad ...) is the same code for every dtype, so
float32 is tried where the dtype changes the arithmetic. Each case compiles two
functions (four with float32), so the inputs are small and shared.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.special as sp

import srctrans

RNG = np.random.default_rng(20)
A3 = RNG.standard_normal((2, 3, 3))
B3 = RNG.standard_normal((2, 3, 4))
M = RNG.standard_normal((3, 3))
X = RNG.standard_normal(5)
SPD = A3 @ np.swapaxes(A3, -1, -2) + 3.0 * np.eye(3)


# --- the operations (f) and the scalars differentiated (g) ----------------------------------


def matmul_f(a):
    return np.matmul(a, B3)


def matmul_g(a):
    return np.sum(np.matmul(a, B3) ** 2)


def matop_f(a):
    return a @ B3


def matop_g(a):
    return np.sum((a @ B3) ** 2)


def matmul_y_f(b):
    return M @ b


def matmul_y_g(b):
    return np.sum((M @ b) ** 2)


def dot3_f(a):
    return np.dot(a, M)


def dot3_g(a):
    return np.sum(np.dot(a, M) ** 2)


def dot_float_f(x):
    return np.dot(x, 2.0)


def dot_float_g(x):
    return np.sum(np.dot(x, 2.0) ** 2)


def gammaln_f(x):
    return sp.gammaln(x * x + 1.0)


def gammaln_g(x):
    return np.sum(sp.gammaln(x * x + 1.0))


def erf_f(x):
    return sp.erf(x)


def erf_g(x):
    return np.sum(sp.erf(x))


def expit_f(x):
    return sp.expit(x)


def expit_g(x):
    return np.sum(sp.expit(x))


def logsumexp_f(a):
    return sp.logsumexp(a, axis=0)


def logsumexp_g(x):
    return sp.logsumexp(x)


def repeat_f(a):
    return np.repeat(a, 2, axis=0)


def repeat_g(a):
    return np.sum(np.repeat(a, 2, axis=0) ** 2)


def fancy_f(a):
    return a[np.arange(3), np.array([0, 2, 1])]


def fancy_g(a):
    return np.sum(a[np.arange(3), np.array([0, 2, 1])] ** 2)


def fancy_repeated_g(a):
    return np.sum(a[np.array([0, 2, 0]), np.array([1, 1, 1])] ** 2)


def list_f(x):
    return x[[0, 2]]


def list_g(x):
    return np.sum(x[[0, 2, 0]] ** 2)


def squeeze_axis_f(a):
    return np.squeeze(a, axis=0)


def squeeze_axis_g(a):
    return np.sum(np.squeeze(a, axis=0) ** 2)


def diff_f(a):
    return np.diff(a, axis=0)


def diff_g(a):
    return np.sum(np.diff(a, axis=0) ** 2)


def diagonal_f(a):
    return np.diagonal(a, axis1=1, axis2=2)


def diagonal_g(a):
    return np.sum(np.diagonal(a, axis1=1, axis2=2) ** 2)


def pad_f(x):
    return np.pad(x, 1)


def pad_g(x):
    return np.sum(np.pad(x, 1) ** 2)


def roll_f(a):
    return np.roll(a, 1, axis=0)


def roll_g(a):
    return np.sum(np.roll(a, 1, axis=0) * M)


def cholesky_f(a):
    return np.linalg.cholesky(a)


def cholesky_g(a):
    return np.sum(np.linalg.cholesky(a) ** 2)


def atleast_f(x):
    return np.atleast_1d(x[0])


def atleast_g(x):
    return np.sum(np.atleast_1d(x[0]) ** 2)


# (name, f, g, input, float32 too, exact forward, exact gradient)
CASES = [
    ("matmul", matmul_f, matmul_g, A3, False, False, False),
    ("matmul_operator", matop_f, matop_g, A3, True, False, False),
    ("matmul_stack_y", matmul_y_f, matmul_y_g, B3, False, False, False),
    ("dot_3d", dot3_f, dot3_g, A3, False, False, False),
    ("dot_float", dot_float_f, dot_float_g, X, True, True, True),
    ("gammaln", gammaln_f, gammaln_g, X, True, True, False),
    ("erf", erf_f, erf_g, X, True, True, False),
    ("expit", expit_f, expit_g, X, True, True, True),
    ("logsumexp", logsumexp_f, logsumexp_g, M, True, True, False),
    ("repeat", repeat_f, repeat_g, M, False, True, True),
    ("fancy", fancy_f, fancy_g, M, False, True, True),
    ("fancy_repeated", fancy_f, fancy_repeated_g, M, False, True, True),
    ("list", list_f, list_g, X, False, True, True),
    ("squeeze_axis", squeeze_axis_f, squeeze_axis_g, M[None], False, True, True),
    ("diff", diff_f, diff_g, M, False, True, True),
    ("diagonal", diagonal_f, diagonal_g, A3, True, True, True),
    ("pad", pad_f, pad_g, X, False, True, True),
    ("roll", roll_f, roll_g, M, False, True, True),
    ("cholesky", cholesky_f, cholesky_g, SPD, True, False, False),
    ("atleast_1d", atleast_f, atleast_g, X, False, True, True),
]


def _cases():
    for name, f, g, x, f32, exact_f, exact_g in CASES:
        yield pytest.param(f, g, x, exact_f, exact_g, id=f"{name}-float64")
        if f32:
            yield pytest.param(f, g, x.astype(np.float32), exact_f, exact_g, id=f"{name}-float32")


def _same(got, want, exact: bool) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.ndim:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.slow
@pytest.mark.parametrize(("f", "g", "x", "exact_f", "exact_g"), _cases())
def test_jit_equals_uncompiled(f, g, x, exact_f, exact_g):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Numba's performance notes on small arrays)
        _same(srctrans.jit(f)(x), f(x), exact_f)
        grad = srctrans.grad(g)
        _same(srctrans.jit(grad)(x), grad(x), exact_g)


def test_the_gradients_are_right():
    """The uncompiled gradients these compare against, against central differences."""
    for name, _, g, x, *_ in CASES:
        grad = srctrans.grad(g)(x)
        direction = np.random.default_rng(1).standard_normal(x.shape)
        if name == "cholesky":  # stay symmetric: NumPy reads only the lower triangle
            direction = np.tril(direction)
        eps = 1e-6
        slope = (g(x + eps * direction) - g(x - eps * direction)) / (2 * eps)
        np.testing.assert_allclose(np.sum(grad * direction), slope, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_jit_jvp_of_pad():
    # the tangent file calls rt.pad_tangent, which had no overload
    v = np.random.default_rng(2).standard_normal(X.shape)
    want = srctrans.jvp(pad_f, (X,), (v,))
    got = srctrans.jvp(srctrans.jit(pad_f), (X,), (v,))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
