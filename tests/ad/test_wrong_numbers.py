"""Gradients that once came back silently wrong (issue 20), each against numbers worked out apart.

- ``np.linspace(x, y, n)`` differentiated with respect to its endpoints gave zeros;
- ``np.linalg.inv`` and ``np.linalg.det`` of a stack of matrices transposed the whole stack;
- a float32 argument cast inside the function got a float64 gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

RNG = np.random.default_rng(20)
STACK = RNG.standard_normal((4, 4, 4)) + 3.0 * np.eye(4)  # four well-conditioned matrices
W = RNG.standard_normal((4, 4, 4))
POINTS = np.array([0.3, -1.2, 0.7, 2.0, -0.4])


def central(f, x, h=1e-6):
    """Every partial derivative of ``f`` at ``x`` (an array), by central differences."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        grad[i] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


def linspace_sum(x, y):
    return np.sum(np.linspace(x, y, 5) * POINTS)


def linspace_open(x, y):
    return np.sum(np.linspace(x, y, 5, endpoint=False) ** 2)


def test_linspace_endpoints_have_gradients():
    share = np.linspace(0.0, 1.0, 5)  # each point is x (1 - share) + y share
    gx, gy = srctrans.grad(linspace_sum, argnums=(0, 1))(1.0, 2.0)
    assert gx == pytest.approx(np.sum(POINTS * (1.0 - share)))
    assert gy == pytest.approx(np.sum(POINTS * share))
    _, tangent = srctrans.jvp(linspace_sum, (1.0, 2.0), (1.0, 0.5))
    assert tangent == pytest.approx(gx + 0.5 * gy)
    srctrans.check_grads(linspace_open, (0.4, -1.3), order=2, modes=("fwd", "rev"))


def test_linspace_endpoints_compiled():
    got = srctrans.jit(srctrans.grad(linspace_sum, argnums=(0, 1)))(1.0, 2.0)
    want = srctrans.grad(linspace_sum, argnums=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def inv_stack(a):
    return np.sum(np.linalg.inv(a) * W)


def det_stack(a):
    return np.sum(np.linalg.det(a) * np.array([0.5, -1.0, 2.0, 0.25]))


def slogdet_stack(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.sum(logdet * np.array([0.5, -1.0, 2.0, 0.25]) + sign)


@pytest.mark.parametrize("f", [inv_stack, det_stack, slogdet_stack])
def test_linalg_of_a_stack_of_matrices(f):
    np.testing.assert_allclose(srctrans.grad(f)(STACK), central(f, STACK), rtol=1e-6, atol=1e-6)
    srctrans.check_grads(f, (STACK,), order=2, modes=("fwd", "rev"))


def solve_stack(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2)


@pytest.mark.parametrize("f", [inv_stack, det_stack, slogdet_stack])
def test_linalg_of_a_stack_compiled(f):
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(STACK), srctrans.grad(f)(STACK), rtol=1e-10)


@pytest.mark.parametrize("b", [W[:, :, :2], W[0, 0]], ids=["a stack of matrices", "one vector for every matrix"])
def test_solve_on_a_stack_compiled(b):
    grad = srctrans.grad(solve_stack, argnums=(0, 1))
    for got, want in zip(srctrans.jit(grad)(STACK, b), grad(STACK, b)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    srctrans.check_grads(solve_stack, (STACK, b), order=1, modes=("fwd", "rev"))


def cast_inside(x):
    return np.sum(np.sin(x.astype("float64")))


def test_float32_argument_gets_a_float32_gradient():
    x = np.array([0.1, 0.5, -2.0], dtype=np.float32)
    g = srctrans.grad(cast_inside)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.cos(x.astype(np.float64)), rtol=1e-6)
    assert srctrans.jit(srctrans.grad(cast_inside))(x).dtype == np.float32
    out, vjp_fn = srctrans.vjp(cast_inside, x)
    (ct,) = vjp_fn(1.0)
    assert ct.dtype == np.float32
    primal, tangent = srctrans.jvp(cast_inside, (x,), (np.ones(3, np.float32),))
    assert np.asarray(tangent).dtype == np.asarray(primal).dtype == np.float64  # the output's dtype, as in JAX


def mixed_precision(x, w):
    return np.sum(x * w)  # float32 times float64: computed in float64


def test_a_gradient_has_its_arguments_dtype_whatever_the_computation_promoted_to():
    x, w = np.ones(3, np.float32), np.arange(3.0)
    gx, gw = srctrans.grad(mixed_precision, argnums=(0, 1))(x, w)
    assert (gx.dtype, gw.dtype) == (np.float32, np.float64)
    gx = srctrans.grad(mixed_precision)(np.float32(2.0), 3.0)
    assert type(gx) is np.float32 and gx == 3.0


# A loop reading rows of a value no trip changes adds their adjoints into an array of its own,
# in place (rt.getitem_grad_add), where no other transformation reads the file. A callee's
# adjoint did so even in a file another transformation reads (nested: jvp of a vjp), whose
# forward mode does not see writes in place: the second derivatives through that loop were 0.
def _rows_weighted(w, x):
    s = 0.0
    for k in range(3):
        s = s + np.sum(np.sin(w[k]) * x)
    return s


def calls_a_loop_over_rows(w, x):
    return _rows_weighted(w, x) * 2.0


def test_second_derivatives_through_a_callees_loop_over_rows():
    w, x = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    hessian = srctrans.jacfwd(srctrans.grad(calls_a_loop_over_rows))(w, x)
    want = np.zeros((3, 4, 3, 4))  # d2/dw2 of 2 sum_k sum_j sin(w[k, j]) x[j]: diagonal, -2 sin(w) x
    for k, j in np.ndindex(3, 4):
        want[k, j, k, j] = -2.0 * np.sin(w[k, j]) * x[j]
    np.testing.assert_allclose(hessian, want, rtol=1e-12, atol=1e-14)
    srctrans.check_grads(calls_a_loop_over_rows, (w, x), order=2, modes=("fwd", "rev"))
