"""Transformations of transformations that JAX users write: Jacobians of Jacobians.

``jacfwd(jacfwd(f))``, ``jacrev(jacrev(f))`` and the mixed pairs give every second derivative
of a vector-valued ``f``: the vmap, over pairs of basis vectors, of the tangent file of ``f``'s
tangent file. Checked against the Hessian of each output and against central differences of
the first Jacobian.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from .conftest import module_from_text

CODE = """
import numpy as np


def system(x):
    return np.array([x[0] * x[1], np.sin(x[2]), x[0] ** 2 + x[2] * x[1]])


def stacked_system(x):
    return np.stack([x[0] * x[1], np.sin(x[2]), x[0] ** 2 + x[2] * x[1]])


def component(x, k):
    return system(x)[k]


def functional_update(x):
    y = x.at[1].set(x[0] * 2.0)
    return y ** 2


def mixed(x, w):
    return np.tanh(w @ x) * x[0]
"""

X = np.array([0.3, 0.5, 0.7])
W = np.array([[0.2, -0.4, 0.1], [0.5, 0.3, -0.2]])


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("compositions"), "compositions_user", CODE) as module:
        yield module


def numeric_jacobian(f, x, eps=1e-6):
    cols = []
    for k in np.ndindex(np.shape(x)):
        d = np.zeros_like(x)
        d[k] = eps
        cols.append((np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + np.shape(x))


PAIRS = {
    "jacfwd(jacfwd)": lambda f: srctrans.jacfwd(srctrans.jacfwd(f)),
    "jacrev(jacrev)": lambda f: srctrans.jacrev(srctrans.jacrev(f)),
    "jacfwd(jacrev)": lambda f: srctrans.jacfwd(srctrans.jacrev(f)),
    "jacrev(jacfwd)": lambda f: srctrans.jacrev(srctrans.jacfwd(f)),
    "jit(jacfwd(jacrev))": lambda f: srctrans.jit(srctrans.jacfwd(srctrans.jacrev(f))),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_jacobian_of_a_jacobian(mod, pair):
    got = PAIRS[pair](mod.system)(X)
    assert got.shape == (3, 3, 3)
    first = srctrans.jacfwd(mod.system)
    np.testing.assert_allclose(got, numeric_jacobian(first, X), atol=1e-7)
    for k in range(3):  # each output's Hessian
        hess = srctrans.hessian(mod.component)(X, k)
        np.testing.assert_allclose(got[k], hess, atol=1e-12)


def test_mixed_arguments_and_float32(mod):
    j = srctrans.jacfwd(srctrans.jacrev(mod.mixed, argnums=1), argnums=0)
    got = j(X, W)
    assert got.shape == (2, 2, 3, 3)
    first = srctrans.jacrev(mod.mixed, argnums=1)
    np.testing.assert_allclose(got, numeric_jacobian(lambda x: first(x, W), X), atol=1e-7)
    got32 = srctrans.jacfwd(srctrans.jacfwd(mod.system))(X.astype(np.float32))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, srctrans.jacfwd(srctrans.jacfwd(mod.system))(X), atol=1e-6)


def test_third_derivatives_say_so(mod):
    with pytest.raises(TypeError, match="third derivatives"):
        srctrans.jacfwd(srctrans.jacfwd(srctrans.jacfwd(mod.system)))(X)


def test_jacrev_of_a_function_using_at_updates(mod):
    """jacrev evaluates the function through its generated file, where ``x.at[i].set`` is NumPy."""
    want = np.array([[2 * X[0], 0.0, 0.0], [8 * X[0], 0.0, 0.0], [0.0, 0.0, 2 * X[2]]])
    for j in (srctrans.jacrev, srctrans.jacfwd):
        np.testing.assert_allclose(j(mod.functional_update)(X), want, atol=1e-14)


def test_a_system_written_with_stack_of_numbers_compiles(mod):
    """``np.stack([scalars])``, the usual way to write a small system, under jit and its Jacobians."""
    want = srctrans.jacfwd(mod.system)(X)
    np.testing.assert_allclose(srctrans.jit(mod.stacked_system)(X), mod.system(X), rtol=1e-15)
    for j in (srctrans.jacfwd, srctrans.jacrev):
        np.testing.assert_allclose(srctrans.jit(j(mod.stacked_system))(X), want, atol=1e-14)
    np.testing.assert_allclose(srctrans.jit(srctrans.jacfwd(srctrans.jacfwd(mod.stacked_system)))(X),
                               srctrans.jacfwd(srctrans.jacfwd(mod.system))(X), atol=1e-12)


LOOP = """
import numpy as np


def euler(x, dt):
    state = x
    for _ in range(4):
        state = state + dt * (np.sin(state) - 0.5 * state ** 3)
    return np.sum(state ** 2)
"""


@pytest.fixture(scope="module")
def loop_mod(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("compositions_loop"), "compositions_loop_user", LOOP) as module:
        yield module


def test_vjp_of_a_grad_pulls_back_through_the_gradient(loop_mod):
    """Before: ``vjp(grad(f))`` differentiated ``f`` itself, so its pullback gave the gradient
    (times the cotangent), not the Hessian-vector product."""
    x = np.array([0.4, -0.3, 0.8])
    g = srctrans.grad(loop_mod.euler)
    out, pullback = srctrans.vjp(g, x, 0.1)
    np.testing.assert_allclose(out, g(x, 0.1), rtol=1e-14)
    v = np.array([1.0, -2.0, 0.5])
    hess = numeric_jacobian(lambda z: g(z, 0.1), x)
    np.testing.assert_allclose(pullback(v)[0], v @ hess, rtol=1e-6, atol=1e-8)


def test_third_derivatives_of_a_grad(loop_mod):
    """Before: ``jacfwd(jacfwd(grad(f)))`` gave f's Hessian ((3, 3)), and ``hessian(jacfwd(f))``
    too: the Jacobian of a Jacobian read the function under the inner grad or Jacobian."""
    x = np.array([0.4, -0.3, 0.8])
    second = srctrans.hessian(loop_mod.euler)
    want = numeric_jacobian(lambda z: second(z, 0.1), x)
    for third in (srctrans.jacfwd(srctrans.jacfwd(srctrans.grad(loop_mod.euler))),
                  srctrans.jacrev(srctrans.jacfwd(srctrans.grad(loop_mod.euler))),
                  srctrans.hessian(srctrans.grad(loop_mod.euler))):
        got = third(x, 0.1)
        assert got.shape == (3, 3, 3)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match="third derivatives"):
        srctrans.hessian(srctrans.jacfwd(loop_mod.euler))(x, 0.1)


def test_a_jacobian_never_stands_for_the_function_it_differentiates(loop_mod):
    """A transformation of a Jacobian with no path for it yet refuses, naming the Jacobian (jit has one)."""
    x = np.array([0.4, -0.3, 0.8])
    jac = srctrans.jacfwd(loop_mod.euler)
    for transform in (srctrans.grad, srctrans.value_and_grad):
        with pytest.raises(TypeError, match="cannot transform the Jacobian or Hessian 'euler'"):
            transform(jac)(x, 0.1)
    np.testing.assert_allclose(srctrans.jit(jac)(x, 0.1), jac(x, 0.1), rtol=1e-14)
