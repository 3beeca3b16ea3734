"""numba_backend.matrix_exponential: ``scipy.linalg.expm`` and ``srctrans.runtime.expm`` under
``numba.njit``, against SciPy and against exponentials known in closed form, and the compiled
gradient of a function calling expm.

Compiles dominate the run time: one jitted function returns both overloads' results, so each
dtype and number of dimensions compiles once.

SciPy's own expm (Al-Mohy and Higham 2009) squares fewer times than Higham 2005's algorithm
used here; against mpmath at 40 digits its normwise error on random matrices of 1-norm 50 reached
3e-12 (ours 1e-14), so there the comparison with SciPy is at 1e-11, and exponentials known in
closed form are checked at 1e-13.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
import scipy.linalg
from numba.core.errors import TypingError

import numba_backend.matrix_exponential  # noqa: F401  (registers the overloads)
import srctrans
from srctrans import runtime as rt

pytestmark = pytest.mark.slow  # compiles


@numba.njit(error_model="numpy")  # as srctrans.jit compiles generated files
def j_expm(a):
    return scipy.linalg.expm(a), rt.expm(a)


def expm(a):
    """The compiled scipy.linalg.expm(a), after checking that srctrans.runtime.expm gives the same bits."""
    out, via_runtime = j_expm(a)
    np.testing.assert_array_equal(out, via_runtime)
    return out


def normwise(x, y):
    return np.max(np.abs(x - y)) / np.max(np.abs(y))


def with_norm(a, norm):
    return a * (norm / np.max(np.sum(np.abs(a), axis=0)))


def test_float64_matrices_against_scipy():
    rng = np.random.default_rng(7)
    for n in (2, 3, 4, 6):
        for norm in (0.01, 0.2, 0.9, 2.0, 4.0):  # each Pade degree 3, 5, 7, 9, 13 without squaring
            a = with_norm(rng.standard_normal((n, n)), norm)
            np.testing.assert_allclose(expm(a), scipy.linalg.expm(a), rtol=1e-12, atol=1e-15)
        for norm in (12.0, 50.0):  # degree 13, squared 2 and 4 times
            a = with_norm(rng.standard_normal((n, n)), norm)
            assert normwise(expm(a), scipy.linalg.expm(a)) < 1e-11
    a = rng.standard_normal((5, 5))[::2, ::2]  # not contiguous
    np.testing.assert_allclose(expm(a), scipy.linalg.expm(a), rtol=1e-12)


def test_exponentials_in_closed_form_with_scaling_and_squaring():
    t = 50.0  # a rotation's generator: norm 50, squared 4 times
    rotation = expm(np.array([[0.0, -t], [t, 0.0]]))
    exact = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    assert normwise(rotation, exact) < 1e-13
    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    lam = np.array([-30.0, -4.0, 2.0, 15.0])
    assert normwise(expm((q * lam) @ q.T), (q * np.exp(lam)) @ q.T) < 1e-13
    nilpotent = 20.0 * np.triu(rng.standard_normal((4, 4)), 1)  # norm ~27: the triangular path
    exact = np.eye(4) + nilpotent + nilpotent @ nilpotent / 2 + nilpotent @ nilpotent @ nilpotent / 6
    got = expm(nilpotent)
    assert np.max(np.abs(got - exact) / np.maximum(np.abs(exact), 1.0)) < 1e-14
    assert np.all(np.tril(got, -1) == 0.0)
    np.testing.assert_allclose(got, scipy.linalg.expm(nilpotent), rtol=1e-12, atol=1e-14)
    lower = 8.0 * np.tril(rng.standard_normal((4, 4)))
    np.testing.assert_allclose(expm(lower), scipy.linalg.expm(lower), rtol=1e-12, atol=1e-15)
    assert np.all(np.triu(expm(lower), 1) == 0.0)


def test_diagonal_identity_zero_and_small_matrices():
    d = np.diag([1.5, -2.0, 30.0])
    np.testing.assert_array_equal(expm(d), np.diag(np.exp(np.diag(d))))
    np.testing.assert_array_equal(expm(np.eye(3)), math.e * np.eye(3))
    np.testing.assert_array_equal(expm(np.zeros((3, 3))), np.eye(3))
    np.testing.assert_array_equal(expm(np.array([[2.0]])), [[math.exp(2.0)]])
    assert expm(np.zeros((0, 0))).shape == (0, 0)
    np.testing.assert_array_equal(expm(np.array([[1.0, np.nan], [0.5, 1.0]])), np.full((2, 2), np.nan))


def test_stacks():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 3))
    a[1] *= 10.0
    got = expm(a)
    assert got.shape == (2, 3, 3)
    for k in range(2):
        np.testing.assert_array_equal(got[k], expm(a[k]))
        assert normwise(got[k], scipy.linalg.expm(a[k])) < 1e-12
    assert expm(np.zeros((2, 0, 0))).shape == (2, 0, 0)


def test_dtypes_follow_scipy():
    rng = np.random.default_rng(11)
    a = (0.7 * rng.standard_normal((4, 4))).astype(np.float32)
    got = expm(a)
    assert got.dtype == np.float32 == scipy.linalg.expm(a).dtype
    np.testing.assert_array_equal(got, expm(a.astype(np.float64)).astype(np.float32))  # rounded once
    assert normwise(got, scipy.linalg.expm(a)) < 1e-6
    ints = np.array([[1, 2], [0, -1]])
    assert expm(ints).dtype == np.float64 == scipy.linalg.expm(ints).dtype
    np.testing.assert_allclose(expm(ints), scipy.linalg.expm(ints), rtol=1e-14)


def test_what_is_not_a_square_matrix():
    with pytest.raises(np.linalg.LinAlgError, match="expm: the last 2 dimensions of the array must be square"):
        j_expm(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="expm"):  # LinAlgError is a ValueError
        j_expm(np.zeros((2, 3, 2)))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        j_expm(np.zeros(3))
    np.testing.assert_array_equal(j_expm(np.array([3.0]))[0], scipy.linalg.expm(np.array([3.0])))  # as SciPy
    with pytest.raises(TypingError, match="scipy.linalg.expm: under jit, arrays of float64"):
        j_expm(np.eye(2, dtype=np.complex128))


V = np.array([0.5, -1.2, 0.8])


def expm_applied(a):
    return np.sum(scipy.linalg.expm(a) @ V)


def test_compiled_gradient_agrees_with_the_uncompiled_one():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 3))  # a stack: rt.expm of (2, 6, 6) block matrices
    a[1] *= 4.0  # norm ~10: the blocks are squared
    compiled = srctrans.jit(expm_applied)
    want = srctrans.grad(expm_applied)(a)
    np.testing.assert_allclose(srctrans.grad(compiled)(a), want, rtol=1e-10)
