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
from srctrans.tree import tree_flatten

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


def test_third_derivatives_of_a_system(mod):
    """Before: refused ("third derivatives"). Each order is one more tangent file, vmapped over
    triples of basis vectors; checked against central differences of the second Jacobian."""
    second = srctrans.jacfwd(srctrans.jacrev(mod.system))
    want = numeric_jacobian(second, X)
    for third in (srctrans.jacfwd(srctrans.jacfwd(srctrans.jacfwd(mod.system))),
                  srctrans.jacrev(srctrans.hessian(mod.system)),
                  srctrans.jit(srctrans.jacfwd(srctrans.jacrev(srctrans.jacfwd(mod.system))))):
        got = third(X)
        assert got.shape == (3, 3, 3, 3)
        np.testing.assert_allclose(got, want, atol=1e-7)


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
    got = srctrans.hessian(srctrans.jacfwd(loop_mod.euler))(x, 0.1)  # before: refused
    np.testing.assert_allclose(got, srctrans.hessian(srctrans.grad(loop_mod.euler))(x, 0.1), rtol=1e-10, atol=1e-12)


def test_a_jacobian_never_stands_for_the_function_it_differentiates(loop_mod):
    """grad of a Jacobian differentiates the Jacobian: a vector-valued one is refused as grad
    refuses any, a scalar one gives the second derivative (before: the first, silently)."""
    x = np.array([0.4, -0.3, 0.8])
    jac = srctrans.jacfwd(loop_mod.euler)
    for transform in (srctrans.grad, srctrans.value_and_grad):
        with pytest.raises(TypeError, match="requires a scalar output"):
            transform(jac)(x, 0.1)
    np.testing.assert_allclose(srctrans.jit(jac)(x, 0.1), jac(x, 0.1), rtol=1e-14)
    d_dt = srctrans.jacfwd(loop_mod.euler, argnums=1)  # a scalar: d euler / d dt
    second = srctrans.grad(d_dt, argnums=1)(x, 0.1)
    want = (d_dt(x, 0.1 + 1e-6) - d_dt(x, 0.1 - 1e-6)) / 2e-6
    np.testing.assert_allclose(second, want, rtol=1e-6)
    value, g = srctrans.value_and_grad(d_dt, argnums=1)(x, 0.1)
    assert value == d_dt(x, 0.1) and g == second


# ---------------------------------------------------------------- the algebra: objects with no one file

ALGEBRA = """
import numpy as np
import srctrans


def loss(w, x):
    return np.sum(np.tanh(x * w) ** 2)


def mapped(w, x):
    return np.sin(w * x) + w[0] * x


def centered(x):
    return x - srctrans.pmean(x, "i")
"""

WS = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])  # two examples
XS = np.array([0.7, -0.4, 0.2])


@pytest.fixture(scope="module")
def alg(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("algebra"), "algebra_user", ALGEBRA) as module:
        yield module


def test_value_and_grad_is_two_outputs_under_every_transformation(alg):
    """Before: refused under vmap, pmap, jacfwd, jacrev, hessian, jvp and vjp."""
    vg = srctrans.value_and_grad(alg.loss)
    values, grads = srctrans.vmap(vg, in_axes=(0, None))(WS, XS)
    np.testing.assert_allclose(values, [alg.loss(w, XS) for w in WS], rtol=1e-14)
    np.testing.assert_allclose(grads, [srctrans.grad(alg.loss)(w, XS) for w in WS], rtol=1e-14)
    d_value, d_grad = srctrans.jacfwd(vg)(WS[0], XS)
    np.testing.assert_allclose(d_value, srctrans.grad(alg.loss)(WS[0], XS), rtol=1e-12)
    np.testing.assert_allclose(d_grad, srctrans.hessian(alg.loss)(WS[0], XS), rtol=1e-12)
    v = np.array([1.0, -1.0, 0.5])
    (value, g), (t_value, t_grad) = srctrans.jvp(vg, (WS[0], XS), (v, np.zeros(3)))
    assert t_value == pytest.approx(g @ v, rel=1e-12)
    np.testing.assert_allclose(t_grad, srctrans.hessian(alg.loss)(WS[0], XS) @ v, rtol=1e-12)
    out, pullback = srctrans.vjp(vg, WS[0], XS)
    bar_w, _ = pullback((2.0, v))
    np.testing.assert_allclose(bar_w, 2.0 * g + srctrans.hessian(alg.loss)(WS[0], XS) @ v, rtol=1e-12)
    with pytest.raises(ValueError, match="out_axes has 3 entries"):
        srctrans.vmap(vg, in_axes=(0, None), out_axes=(0, 0, 0))(WS, XS)


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_jacobian_of_a_vmap_puts_examples_on_the_diagonal(alg, jac):
    """Before: refused. D(vmap f) = vmap(D f), each example's block on the diagonal of the batch
    axes of the output and of the batched argument; a shared argument gets every example's block."""
    d = getattr(srctrans, jac)
    vm = srctrans.vmap(alg.mapped, in_axes=(0, None), out_axes=1)  # out (3, B)
    got_w = d(vm)(WS, XS)
    assert got_w.shape == (3, 2, 2, 3)
    np.testing.assert_allclose(got_w, numeric_jacobian(lambda w: vm(w, XS), WS), atol=1e-8)
    got_x = d(vm, argnums=1)(WS, XS)
    np.testing.assert_allclose(got_x, numeric_jacobian(lambda x: vm(WS, x), XS), atol=1e-8)
    second = srctrans.hessian(srctrans.vmap(alg.loss, in_axes=(0, None)))(WS, XS)
    assert second.shape == (2, 2, 3, 2, 3)
    first = srctrans.jacrev(srctrans.vmap(alg.loss, in_axes=(0, None)))
    np.testing.assert_allclose(second, numeric_jacobian(lambda w: first(w, XS), WS), atol=1e-7)


def test_jvp_vjp_and_grad_of_a_vmap_and_of_a_jacobian(alg):
    """Before: refused ("srctrans transforms Python functions", "cannot transform the Jacobian")."""
    vm = srctrans.vmap(alg.mapped, in_axes=(0, None))
    t = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]])
    out, tangent = srctrans.jvp(vm, (WS, XS), (t, np.zeros(3)))
    np.testing.assert_allclose(out, vm(WS, XS), rtol=1e-15)
    np.testing.assert_allclose(tangent, np.tensordot(numeric_jacobian(lambda w: vm(w, XS), WS), t, axes=2), atol=1e-8)
    ct = np.arange(6.0).reshape(2, 3)
    _, pullback = srctrans.vjp(vm, WS, XS)
    bar_w, bar_x = pullback(ct)
    np.testing.assert_allclose(bar_w, np.tensordot(ct, numeric_jacobian(lambda w: vm(w, XS), WS), axes=2), atol=1e-7)
    np.testing.assert_allclose(bar_x, np.tensordot(ct, numeric_jacobian(lambda x: vm(WS, x), XS), axes=2), atol=1e-7)
    jac = srctrans.jacfwd(alg.loss)
    v = np.array([0.2, -0.1, 0.3])
    _, hv = srctrans.jvp(jac, (WS[0], XS), (v, np.zeros(3)))
    np.testing.assert_allclose(hv, srctrans.hessian(alg.loss)(WS[0], XS) @ v, rtol=1e-12)
    _, pullback = srctrans.vjp(jac, WS[0], XS)
    np.testing.assert_allclose(pullback(v)[0], srctrans.hessian(alg.loss)(WS[0], XS) @ v, rtol=1e-12)


def test_pmap_of_a_vmap_or_a_jacobian_runs_as_vmap_on_the_cpu(alg, monkeypatch):
    """Before: refused ("pmap takes a plain function, a jit or a grad"). Collectives included.
    (On the CUDA and Dask backends: tests/parallel/test_dask.py and test_cuda_cases.py.)"""
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "2")
    xs = np.arange(12.0).reshape(2, 2, 3)
    got = srctrans.pmap(srctrans.vmap(alg.centered, axis_name="j"), axis_name="i")(xs)
    np.testing.assert_allclose(got, xs - xs.mean(axis=0), rtol=1e-15)
    jac = srctrans.pmap(srctrans.jacfwd(alg.loss), in_axes=(0, None))(WS, XS)
    np.testing.assert_allclose(jac, [srctrans.grad(alg.loss)(w, XS) for w in WS], rtol=1e-12)
    with pytest.raises(ValueError, match="do not split evenly over 2 devices"):
        srctrans.pmap(srctrans.jacfwd(alg.loss), in_axes=(0, None))(np.ones((3, 3)), XS)


TREES = """
import numpy as np


def predict(params, x):
    W, b = params
    return np.tanh(x @ W + b)


def tuple_loss(params, x):
    return np.sum(predict(params, x) ** 2)


def dict_loss(params, x):
    h = np.tanh(x @ params["layer"]["W"] + params["layer"]["b"])
    return np.sum((h * params["scale"]) ** 2)
"""


@pytest.fixture(scope="module")
def trees_mod(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("compositions_trees"), "compositions_trees_user", TREES) as module:
        yield module


def _leaves(tree):
    return tree_flatten(tree)[0]


def test_jacobians_of_jacobians_of_pytree_arguments(trees_mod):
    """Before: refused ("takes arrays and numbers as arguments, not pytrees, yet"). The blocks
    nest as JAX's: the output's structure, holding the first argument's, holding the second's."""
    r = np.random.default_rng(5)
    params = (r.normal(size=(3, 2)) * 0.5, r.normal(size=2) * 0.1)
    x = np.array([0.3, -0.2, 0.5])
    got = srctrans.jacrev(srctrans.jacfwd(trees_mod.tuple_loss))(params, x)
    want = srctrans.hessian(trees_mod.tuple_loss)(params, x)
    assert isinstance(got, tuple) and isinstance(got[0], tuple) and got[0][1].shape == (3, 2, 2)
    for g, w in zip(_leaves(got), _leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    third = srctrans.jacfwd(srctrans.jacfwd(srctrans.grad(trees_mod.tuple_loss)), argnums=1)(params, x)
    hess = srctrans.hessian(trees_mod.tuple_loss)
    eps = 1e-6
    for i in range(3):
        d = np.zeros(3)
        d[i] = eps
        num = [(a - b) / (2 * eps) for a, b in zip(_leaves(hess(params, x + d)), _leaves(hess(params, x - d)))]
        for g, n in zip(_leaves(third), num):
            np.testing.assert_allclose(g[..., i], n, rtol=1e-6, atol=1e-8)


def test_derivatives_of_a_grad_of_dict_params(trees_mod):
    """Before: refused inside srctrans's own grad file ("passing params (a dict ...) to a function")."""
    params = {"layer": {"W": np.array([[0.2, -0.1], [0.4, 0.3], [-0.5, 0.1]]), "b": np.array([0.1, -0.2])},
              "scale": np.array([1.5, 0.5])}
    x = np.array([0.3, -0.2, 0.5])
    g = srctrans.grad(trees_mod.dict_loss)
    hess = srctrans.hessian(trees_mod.dict_loss)(params, x)
    for jac in (srctrans.jacfwd, srctrans.jacrev):
        got = jac(g)(params, x)
        assert set(got) == {"layer", "scale"} and set(got["layer"]["W"]) == {"layer", "scale"}
        for a, b in zip(_leaves(got), _leaves(hess)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    t = {"layer": {"W": np.ones((3, 2)), "b": np.zeros(2)}, "scale": np.array([1.0, -1.0])}
    _, hv = srctrans.jvp(g, (params, x), (t, np.zeros(3)))
    _, pullback = srctrans.vjp(g, params, x)
    vh = pullback(t)[0]
    flat_t = np.concatenate([np.ravel(v) for v in _leaves(t)])
    sizes = [np.size(v) for v in _leaves(params)]
    dense = np.block([[np.reshape(hess_block, (a, b)) for hess_block, b in zip(_leaves(row), sizes)]
                      for row, a in zip([hess["layer"]["W"], hess["layer"]["b"], hess["scale"]], sizes)])
    np.testing.assert_allclose(np.concatenate([np.ravel(v) for v in _leaves(hv)]), dense @ flat_t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.concatenate([np.ravel(v) for v in _leaves(vh)]), flat_t @ dense, rtol=1e-12, atol=1e-14)
