"""The second-order rules of cumprod, einsum, cholesky, prod, sinc and digamma, compiled.

``test_derivatives.py`` checks them against central differences in plain Python; here the
files that call their helpers (``linrec``, ``shift_right``, ``einsum_grad_y``,
``half_tril``, ``prod_grad3``, ``sinc_derivative``, ``polygamma`` ...) are compiled by Numba
and must give the numbers the plain files give, zeros in cumprod's and prod's input included.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numba_backend.runtime_overloads  # noqa: F401  (registers the overloads)
import srctrans
import srctrans.runtime as rt

pytestmark = pytest.mark.slow  # compiles

W = np.array([[0.3, -0.7, 1.1], [0.2, 0.5, -1.3], [0.9, 0.1, 0.4]])
ONE_ZERO_IN_TWO = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
ZEROS = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])  # 1, 2 and 0 zeros per column


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _cumprod_helpers(g, x):
    # Numba's np.cumprod takes no axis: the flat order
    return np.sum(rt.cumprod_grad(g, x, np.cumprod(x), None) ** 2) + np.sum(rt.cumprod_jvp(x, x, np.cumprod(x), None) * g)


def _cholesky(x):
    return np.sum(np.linalg.cholesky(x @ x.T + 3.0 * np.eye(3)) * W)


def _einsum_grads(g, x, y):
    return np.sum(rt.einsum_grad_x("ij,jk->ik", g, x, y, None) ** 2) + np.sum(rt.einsum_grad_y("ij,jk->ik", g, x, y, None) * y)


def _prod_sinc_digamma(u, g, x):
    return np.sum(rt.prod_grad(u[0], x, np.prod(x, axis=0), 0, False) * g) + np.sum(rt.sinc_grad2(x)) + np.sum(rt.trigamma(x + 1.0))


def _tangents(args, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(np.shape(a)) for a in args)


def _hessian_vector_products_agree(f, args):
    """``jvp(grad(f))``: the tangent file of the adjoint file, compiled and in plain Python."""
    argnums = tuple(range(len(args)))
    tangents = _tangents(args, 1)
    got = srctrans.jvp(srctrans.jit(srctrans.grad(f, argnums=argnums)), args, tangents)[1]
    want = srctrans.jvp(srctrans.grad(f, argnums=argnums), args, tangents)[1]
    for a, b in zip(got, want):
        close(a, b)


def test_cumprod_rules_compiled_through_zeros():
    rng = np.random.default_rng(0)
    _hessian_vector_products_agree(_cumprod_helpers, (rng.standard_normal(6), rng.standard_normal(6) * ONE_ZERO_IN_TWO))


def test_prod_sinc_digamma_rules_compiled():
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((3, 4)), rng.standard_normal(4), rng.uniform(0.5, 1.5, (3, 4)) * ZEROS)
    _hessian_vector_products_agree(_prod_sinc_digamma, args)


def test_cholesky_rules_compiled():
    x = np.random.default_rng(3).standard_normal((3, 3))
    t = _tangents((x,), 4)
    close(srctrans.jit(srctrans.grad(_cholesky))(x), srctrans.grad(_cholesky)(x))
    close(srctrans.jvp(srctrans.jit(_cholesky), (x,), t)[1], srctrans.jvp(_cholesky, (x,), t)[1])


def test_einsum_rules_compiled():
    rng = np.random.default_rng(5)
    _hessian_vector_products_agree(_einsum_grads, (rng.standard_normal((3, 2)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))))


@numba.njit(error_model="numpy")
def _j_special(n, x):
    return rt.polygamma(n, x), rt.sinc_derivative(n, x), rt.polygamma(n, 2.5), rt.sinc_derivative(n, 0.7)


def test_polygamma_and_sinc_derivative_compiled():
    # poles, infinities, negative points, and sinc's series near 0 against its closed form
    x = np.array([-2.3, -0.5, -1e-3, 0.0, 1e-4, 0.3, 1.7, 4.9, 12.0, 40.0, np.inf, -np.inf, np.nan, -3.0])
    for n in (1, 2, 3, 6):
        pg, sd, pg1, sd1 = _j_special(n, x)
        np.testing.assert_allclose(pg, rt.polygamma(n, x), rtol=1e-11)
        finite = np.isfinite(x)
        np.testing.assert_allclose(sd[finite], rt.sinc_derivative(n, x[finite]), rtol=1e-11, atol=1e-13)
        assert pg1 == pytest.approx(rt.polygamma(n, 2.5), rel=1e-12)
        assert sd1 == pytest.approx(rt.sinc_derivative(n, 0.7), rel=1e-12)
    h = 1e-6  # each derivative is the derivative of the one before
    y = np.array([-1.3, -0.004, 0.002, 0.6, 3.1])
    for n in (2, 3, 5):
        np.testing.assert_allclose(rt.sinc_derivative(n, y), (rt.sinc_derivative(n - 1, y + h) - rt.sinc_derivative(n - 1, y - h)) / (2 * h), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rt.polygamma(n, y + 2.0), (rt.polygamma(n - 1, y + 2.0 + h) - rt.polygamma(n - 1, y + 2.0 - h)) / (2 * h), rtol=1e-6)


@numba.njit(error_model="numpy")
def _j_lines(b, a, ans, axis):
    return (
        rt.linrec(b, a, axis),
        rt.linrec_rev(b, a, axis),
        rt.shift_right(a, axis, 1.0),
        rt.shift_left(a, axis),
        rt.cumprod_jvp(b, a, ans, axis),
    )


def test_recurrences_compiled_along_an_axis():
    rng = np.random.default_rng(6)
    b, a = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    a[1, 2] = a[0, 0] = 0.0
    for axis in (0, 1, -1):
        ans = np.cumprod(a, axis)
        want = (rt.linrec(b, a, axis), rt.linrec_rev(b, a, axis), rt.shift_right(a, axis, 1.0), rt.shift_left(a, axis), rt.cumprod_jvp(b, a, ans, axis))
        for got, w in zip(_j_lines(b, a, ans, axis), want):
            close(got, w)
    # the tangent of cumprod, against central differences through zeros
    for axis in (0, 1):
        h = 1e-6
        want = (np.cumprod(a + h * b, axis) - np.cumprod(a - h * b, axis)) / (2 * h)
        np.testing.assert_allclose(rt.cumprod_jvp(b, a, np.cumprod(a, axis), axis), want, rtol=1e-7, atol=1e-9)


# --- linear algebra (issue 20) ---


def _matrix_power_pinv(x):
    return np.sum(np.linalg.matrix_power(x, 3) * W) + np.sum(np.linalg.matrix_power(x, -2) * W.T) + np.sum(np.linalg.pinv(x[:2]) * W[:, :2])


def test_matrix_power_and_pinv_rules_compiled():
    """Their rules' matrix power of a 2 x 2 block matrix (rt.put_block, rt.block_of) and pinv's
    products, compiled: first and second order as in plain Python."""
    x = np.random.default_rng(5).standard_normal((3, 3)) + 3.0 * np.eye(3)
    close(srctrans.jit(srctrans.grad(_matrix_power_pinv))(x), srctrans.grad(_matrix_power_pinv)(x))
    _hessian_vector_products_agree(_matrix_power_pinv, (x,))


def test_matrix_power_compiled_as_numpy_computes_it():
    """numba_backend's np.linalg.matrix_power (Numba's own is typed optional): NumPy's products, on stacks too."""
    import numba_backend.overloads  # noqa: F401

    power = numba.njit(lambda a, n: np.linalg.matrix_power(a, n))
    rng = np.random.default_rng(6)
    for n in range(-3, 7):
        for a in (rng.standard_normal((3, 3)) + 2.0 * np.eye(3), rng.standard_normal((2, 2, 3, 3)) + 2.0 * np.eye(3)):
            np.testing.assert_allclose(power(a, n), np.linalg.matrix_power(a, n), rtol=1e-12, atol=1e-12)


def _eigh(x):
    w, v = np.linalg.eigh(x)
    return np.sum(w * W[0]) + np.sum(v * W)


def test_eigh_rules_compiled():
    """eigh's adjoint and tangent (first order), compiled, in float64 and float32."""
    x = np.random.default_rng(7).standard_normal((3, 3))
    t = _tangents((x,), 8)
    close(srctrans.jit(srctrans.grad(_eigh))(x), srctrans.grad(_eigh)(x))
    close(srctrans.jvp(srctrans.jit(_eigh), (x,), t)[1], srctrans.jvp(_eigh, (x,), t)[1])
    x32 = x.astype(np.float32)
    got = srctrans.jit(srctrans.grad(_eigh))(x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, srctrans.grad(_eigh)(x), rtol=1e-3, atol=1e-4)


def _svd(x):
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return np.sum(u * W[: u.shape[0], : u.shape[1]]) + np.sum(s * W[0, : s.shape[0]]) + np.sum(vt * W[: vt.shape[0], : vt.shape[1]])


@pytest.mark.parametrize("shape", [(3, 3), (3, 2), (2, 3)])
def test_svd_rules_compiled(shape):
    """svd's adjoint and tangent (first order), compiled: square, tall and wide."""
    x = np.random.default_rng(9).standard_normal(shape)
    t = _tangents((x,), 10)
    close(srctrans.jit(srctrans.grad(_svd))(x), srctrans.grad(_svd)(x))
    close(srctrans.jvp(srctrans.jit(_svd), (x,), t)[1], srctrans.jvp(_svd, (x,), t)[1])


def _qr(x):
    q, r = np.linalg.qr(x)
    return np.sum(q * W[: q.shape[0], : q.shape[1]]) + np.sum(r * W[: r.shape[0], : r.shape[1]] ** 2)


@pytest.mark.parametrize("shape", [(3, 3), (3, 2)])
def test_qr_rules_compiled(shape):
    """qr's adjoint and tangent (first order), compiled: square and tall."""
    x = np.random.default_rng(11).standard_normal(shape)
    t = _tangents((x,), 12)
    close(srctrans.jit(srctrans.grad(_qr))(x), srctrans.grad(_qr)(x))
    close(srctrans.jvp(srctrans.jit(_qr), (x,), t)[1], srctrans.jvp(_qr, (x,), t)[1])


def _eig(x):
    w, v = np.linalg.eig(x)
    return np.sum(w * W[0]) + np.sum(v * W)


def test_eig_rules_compiled():
    """eig's adjoint and tangent for a real spectrum (first order), compiled."""
    b = np.random.default_rng(13).standard_normal((3, 3)) + 3.0 * np.eye(3)
    x = b @ np.diag([1.0, 2.5, -1.7]) @ np.linalg.inv(b)
    t = _tangents((x,), 14)
    close(srctrans.jit(srctrans.grad(_eig))(x), srctrans.grad(_eig)(x))
    close(srctrans.jvp(srctrans.jit(_eig), (x,), t)[1], srctrans.jvp(_eig, (x,), t)[1])
