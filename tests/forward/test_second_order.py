"""Second order: ``hessian`` (forward over reverse) against finite differences of the gradient,
``jvp(grad(f))`` against ``hessian(f) @ v``, compiled and uncompiled."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from ..functions.corpus import euler_ode, euler_vector, gmm_like, mlp


def _hessian_by_differences(f, args, argnum, h=1e-6):
    """Central differences of srctrans.grad (checked against central differences in tests/functions)."""
    g = srctrans.grad(f, argnums=argnum)
    x = np.asarray(args[argnum], dtype=float)
    cols = []
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        a_up = list(args)
        a_down = list(args)
        a_up[argnum] = up if x.shape else float(up)
        a_down[argnum] = down if x.shape else float(down)
        cols.append((np.asarray(g(*a_up)) - np.asarray(g(*a_down))) / (2 * h))
    return np.moveaxis(np.array(cols).reshape(x.shape + x.shape), list(range(x.ndim)), list(range(x.ndim, 2 * x.ndim)))


def _gmm_args():
    rng = np.random.default_rng(7)
    return rng.standard_normal(3), rng.standard_normal((3, 2)), rng.standard_normal((5, 2))


@pytest.mark.parametrize("argnum", [0, 1])
def test_hessian_of_gmm_matches_differences_of_the_gradient(argnum):
    args = _gmm_args()
    H = srctrans.hessian(gmm_like, argnums=argnum)(*args)
    shape = np.shape(args[argnum])
    assert H.shape == shape + shape
    np.testing.assert_allclose(H, _hessian_by_differences(gmm_like, args, argnum), rtol=1e-5, atol=1e-6)
    flat = H.reshape(np.prod(shape), -1)
    np.testing.assert_allclose(flat, flat.T, atol=1e-10)


def test_hessian_of_euler_ode_with_two_arguments():
    args = (0.6, 1.1)
    H = srctrans.hessian(euler_ode, argnums=(0, 1))(*args)
    assert len(H) == 2 and len(H[0]) == 2
    for i in range(2):
        for j in range(2):
            g = srctrans.grad(euler_ode, argnums=i)
            h = 1e-6
            up = list(args)
            down = list(args)
            up[j] += h
            down[j] -= h
            expected = (g(*up) - g(*down)) / (2 * h)
            np.testing.assert_allclose(H[i][j], expected, rtol=1e-6, atol=1e-8)


def test_hessian_of_vector_euler_ode():
    k, y0 = 0.4, np.array([0.3, -0.5, 1.2])
    H = srctrans.hessian(euler_vector, argnums=1)(k, y0)
    np.testing.assert_allclose(H, _hessian_by_differences(euler_vector, (k, y0), 1), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("argnum", [0, 2])
def test_jvp_of_grad_is_the_hessian_vector_product(argnum):
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((2, 4)), rng.standard_normal(3))
    H = srctrans.hessian(mlp, argnums=argnum)(*args)
    v = rng.standard_normal(np.shape(args[argnum]))
    tangents = tuple(v if k == argnum else np.zeros_like(a) for k, a in enumerate(args))
    g, hv = srctrans.jvp(srctrans.grad(mlp, argnums=argnum), args, tangents)
    np.testing.assert_allclose(g, srctrans.grad(mlp, argnums=argnum)(*args), rtol=1e-12)
    n = v.size
    np.testing.assert_allclose(hv, (H.reshape(n, n) @ v.ravel()).reshape(v.shape), rtol=1e-9, atol=1e-12)


def test_jvp_of_grad_along_a_non_differentiated_argument_is_a_mixed_derivative():
    # d/dy of grad_x f: the tangent file of the adjoint file sees y vary too
    def f(x, y):
        return np.sum(np.sin(x) * y ** 2)

    x, y = np.array([0.3, 1.0]), np.array([0.5, -0.2])
    v = np.array([1.0, 2.0])
    _, mixed = srctrans.jvp(srctrans.grad(f), (x, y), (np.zeros(2), v))
    np.testing.assert_allclose(mixed, np.cos(x) * 2 * y * v, rtol=1e-12)


@pytest.mark.slow
def test_compiled_hessian_and_hvp_equal_uncompiled():
    args = _gmm_args()
    expected = srctrans.hessian(gmm_like, argnums=1)(*args)
    got = srctrans.hessian(srctrans.jit(gmm_like), argnums=1)(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    v = np.ones_like(args[1])
    tangents = (np.zeros(3), v, np.zeros_like(args[2]))
    hv = srctrans.jvp(srctrans.jit(srctrans.grad(gmm_like, argnums=1)), args, tangents)[1]
    np.testing.assert_allclose(hv, np.tensordot(expected, v, axes=2), rtol=1e-10, atol=1e-12)
