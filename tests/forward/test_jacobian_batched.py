"""``jacfwd``/``jacrev``/``hessian`` push every basis vector at once through ``vmap`` of the
generated tangent (or vjp) file: the vmap file is what runs, its results equal the
one-basis-vector-at-a-time Python loop (the last resort, forced here through the
Jacobian's state), and the shapes are JAX's for pytrees, ``argnums`` and ``has_aux``."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.batching import VMapped
from srctrans.tree import tree_leaves, tree_structure

from ..functions.corpus import euler_ode, gmm_like


def layer(x, W):
    return np.tanh(W @ x)


def _looped(make):
    """The same Jacobian, forced onto the Python loop over basis vectors (the previous behaviour)."""
    jac = make()
    jac._srctrans_state["python_loop"] = "forced by the test"
    return jac


def _assert_same(got, expected, rtol=1e-12, atol=1e-14):
    assert tree_structure(got) == tree_structure(expected)
    for g, e in zip(tree_leaves(got), tree_leaves(expected), strict=True):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def _ran_vmap(jac) -> str:
    state = jac._srctrans_state
    assert not state.get("python_loop"), state.get("python_loop")
    assert isinstance(state["vmapped"], VMapped)
    return jac.source()


def test_jacfwd_runs_the_vectorized_vmap_file_of_the_tangent_file():
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal(3), rng.standard_normal((4, 3))
    jac = srctrans.jacfwd(layer)
    J = jac(x, W)
    text = _ran_vmap(jac)
    header = text.splitlines()[:6]
    assert any("jvp" in line and "vmap(method='auto', batched=(False, False, True)" in line for line in header)
    assert "# vmap method: vectorized" in text
    assert "def layer_jvp_vmap(x, W, x_dot):" in text
    assert srctrans.source(jac) == text
    assert jac.source_path().exists()
    np.testing.assert_allclose(J, (1.0 - np.tanh(W @ x) ** 2)[:, None] * W, rtol=1e-12)
    _assert_same(J, _looped(lambda: srctrans.jacfwd(layer))(x, W))


def test_jacrev_runs_the_vmap_file_of_the_vjp_file():
    rng = np.random.default_rng(1)
    x, W = rng.standard_normal(3), rng.standard_normal((4, 3))
    jac = srctrans.jacrev(layer, argnums=(0, 1))
    Jx, JW = jac(x, W)
    text = _ran_vmap(jac)
    assert "vjp" in text.splitlines()[0] and "# vmap method:" in text
    assert Jx.shape == (4, 3) and JW.shape == (4, 4, 3)
    _assert_same((Jx, JW), _looped(lambda: srctrans.jacrev(layer, argnums=(0, 1)))(x, W))
    _assert_same((Jx, JW), srctrans.jacfwd(layer, argnums=(0, 1))(x, W), rtol=1e-11, atol=1e-13)


def tree_fn(params, x, scale):
    h = np.tanh(params["W"] @ x + params["b"]) * scale
    return {"sum": np.sum(h), "rows": (h[:2], h * x[0])}


def _tree_args():
    rng = np.random.default_rng(2)
    params = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(3)}
    return params, rng.standard_normal(2), 0.7


@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_pytree_inputs_and_outputs_have_jax_shapes(which):
    params, x, scale = _tree_args()
    make = lambda: getattr(srctrans, which)(tree_fn, argnums=(0, 2))  # noqa: E731
    jac = make()
    got = jac(params, x, scale)
    if which == "jacrev":  # the vjp file returns the flat cotangents; jacfwd's tangent file returns
        _ran_vmap(jac)  # (out, out_dot) nested, which vmap cannot batch yet: the Python loop runs
    # out.shape + in.shape for each output leaf and input leaf, inputs nested in outputs
    assert got["sum"][0]["W"].shape == (3, 2) and got["sum"][0]["b"].shape == (3,) and np.shape(got["sum"][1]) == ()
    first, second = got["rows"]
    assert first[0]["W"].shape == (2, 3, 2) and first[1].shape == (2,)
    assert second[0]["b"].shape == (3, 3) and second[1].shape == (3,)
    _assert_same(got, _looped(make)(params, x, scale))


def tree_in(params, x, scale):
    return np.tanh(params["W"] @ x + params["b"]) * scale


@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_pytree_inputs_through_the_vmap_file(which):
    params, x, scale = _tree_args()
    make = lambda: getattr(srctrans, which)(tree_in, argnums=(0, 1, 2))  # noqa: E731
    jac = make()
    got = jac(params, x, scale)
    _ran_vmap(jac)
    assert got[0]["W"].shape == (3, 3, 2) and got[0]["b"].shape == (3, 3)
    assert got[1].shape == (3, 2) and got[2].shape == (3,)
    _assert_same(got, _looped(make)(params, x, scale))


def test_jacfwd_and_jacrev_of_a_pytree_agree():
    args = _tree_args()
    fwd = srctrans.jacfwd(tree_fn, argnums=(0, 1, 2))(*args)
    rev = srctrans.jacrev(tree_fn, argnums=(0, 1, 2))(*args)
    _assert_same(fwd, rev, rtol=1e-11, atol=1e-13)


def with_aux(x, y):
    z = np.sin(x) * y
    return z * 2.0, {"total": np.sum(z), "y": y}


@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_has_aux_through_the_vmap_file(which):
    x, y = np.array([0.1, 0.2, 0.3]), 1.5
    make = lambda: getattr(srctrans, which)(with_aux, argnums=(0, 1), has_aux=True)  # noqa: E731
    jac = make()
    (Jx, Jy), aux = jac(x, y)
    _ran_vmap(jac)
    np.testing.assert_allclose(Jx, np.diag(2.0 * np.cos(x) * y), rtol=1e-12)
    np.testing.assert_allclose(Jy, 2.0 * np.sin(x), rtol=1e-12)
    assert set(aux) == {"total", "y"} and aux["total"] == pytest.approx(np.sum(np.sin(x) * y)) and aux["y"] == y
    (Lx, Ly), laux = _looped(make)(x, y)
    _assert_same((Jx, Jy), (Lx, Ly))
    assert aux["total"] == pytest.approx(laux["total"], rel=1e-14)


def test_scalar_arguments_and_output():
    jac = srctrans.jacfwd(euler_ode, argnums=(0, 1))
    got = jac(0.6, 1.1)
    _ran_vmap(jac)
    assert all(np.shape(g) == () for g in got)
    _assert_same(got, _looped(lambda: srctrans.jacfwd(euler_ode, argnums=(0, 1)))(0.6, 1.1), rtol=1e-12)
    _assert_same(got, tuple(srctrans.grad(euler_ode, argnums=(0, 1))(0.6, 1.1)), rtol=1e-10)


def test_hessian_runs_the_vmap_file_of_the_tangent_file_of_the_adjoint_file():
    rng = np.random.default_rng(3)
    A, x = rng.standard_normal((5, 6)), rng.standard_normal(6) * 0.5

    def f(x, A):
        return np.sum(np.tanh(A @ x) ** 2)

    hess = srctrans.hessian(f)
    H = hess(x, A)
    text = _ran_vmap(hess)
    assert "grad" in text.splitlines()[0] and "jvp" in text.splitlines()[0]
    assert "# vmap method: vectorized" in text  # A.T @ g over the basis becomes one g @ A
    assert "@ A" in text
    t = np.tanh(A @ x)
    expected = A.T @ np.diag(2.0 * (1.0 - t**2) * (1.0 - 3.0 * t**2)) @ A
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-12)
    _assert_same(H, _looped(lambda: srctrans.hessian(f))(x, A))


def _gmm_args():
    rng = np.random.default_rng(7)
    return rng.standard_normal(3), rng.standard_normal((3, 2)), rng.standard_normal((5, 2))


@pytest.mark.slow
def test_compiled_jacobians_compile_the_vmap_file():
    args = _gmm_args()
    expected = srctrans.hessian(gmm_like, argnums=1)(*args)
    for hess in (srctrans.hessian(srctrans.jit(gmm_like), argnums=1), srctrans.jit(srctrans.hessian(gmm_like, argnums=1))):
        np.testing.assert_allclose(hess(*args), expected, rtol=1e-12, atol=1e-12)
        vm = hess._srctrans_state["vmapped"]
        assert vm._jit is not None and not hess._srctrans_state.get("python_loop")
        assert "jit(vmap)" in repr(vm)
    rng = np.random.default_rng(4)
    x, W = rng.standard_normal(3), rng.standard_normal((4, 3))
    for which in ("jacfwd", "jacrev"):
        plain = getattr(srctrans, which)(layer, argnums=(0, 1))(x, W)
        for jac in (getattr(srctrans, which)(srctrans.jit(layer), argnums=(0, 1)), srctrans.jit(getattr(srctrans, which)(layer, argnums=(0, 1)))):
            _assert_same(jac(x, W), plain, rtol=1e-12, atol=1e-13)
            assert jac._srctrans_state["vmapped"]._jit is not None


def test_python_loop_is_the_last_resort_when_vmap_refuses(monkeypatch):
    rng = np.random.default_rng(5)
    x, W = rng.standard_normal(3), rng.standard_normal((4, 3))
    expected_f = srctrans.jacfwd(layer, argnums=(0, 1))(x, W)
    expected_r = srctrans.jacrev(layer, argnums=(0, 1))(x, W)

    def refuse(self, *args, **kwargs):
        raise RuntimeError("vmap refuses this file")

    monkeypatch.setattr(VMapped, "__call__", refuse)
    for which, expected in (("jacfwd", expected_f), ("jacrev", expected_r)):
        jac = getattr(srctrans, which)(layer, argnums=(0, 1))
        _assert_same(jac(x, W), expected)
        assert "vmap refuses this file" in jac._srctrans_state["python_loop"]
        _assert_same(jac(x, W), expected)  # later calls go to the loop directly


def test_an_error_in_the_function_is_still_raised():
    def bad(x):
        return np.tanh(x) @ np.ones(3)  # (2,) @ (3,)

    for which in ("jacfwd", "jacrev"):
        with pytest.raises(ValueError):
            getattr(srctrans, which)(bad)(np.ones(2))


def test_an_empty_input_gives_an_empty_block():
    jac = srctrans.jacfwd(layer)
    J = jac(np.zeros(0), np.zeros((4, 0)))
    assert J.shape == (4, 0)
    Jr = srctrans.jacrev(layer)(np.zeros(0), np.zeros((4, 0)))
    assert Jr.shape == (4, 0)
    both = srctrans.jacfwd(layer, argnums=(0, 1))(np.zeros(0), np.zeros((4, 0)))
    looped = _looped(lambda: srctrans.jacfwd(layer, argnums=(0, 1)))(np.zeros(0), np.zeros((4, 0)))
    assert both[0].shape == looped[0].shape == (4, 0) and both[1].shape == looped[1].shape == (4, 4, 0)
    x, W = np.zeros(0), np.zeros((0, 0))  # empty in and out
    assert srctrans.jacfwd(layer)(x, W).shape == (0, 0) and srctrans.jacrev(layer)(x, W).shape == (0, 0)


def dict_and_tuple_results(x, W):
    h = np.tanh(W @ x)
    return {"h": h, "s": np.sum(h * h)}, h[0]


@pytest.mark.parametrize("make", [srctrans.jacfwd, srctrans.jacrev])
def test_container_results_run_the_vmap_file(make):
    rng = np.random.default_rng(12)
    x, W = rng.standard_normal(3), rng.standard_normal((4, 3))
    jac = make(dict_and_tuple_results)
    J = jac(x, W)
    _ran_vmap(jac)
    d = 1.0 - np.tanh(W @ x) ** 2
    h = np.tanh(W @ x)
    np.testing.assert_allclose(J[0]["h"], d[:, None] * W, rtol=1e-12)
    np.testing.assert_allclose(J[0]["s"], 2.0 * (h * d) @ W, rtol=1e-12)
    np.testing.assert_allclose(J[1], d[0] * W[0], rtol=1e-12)
    _assert_same(J, _looped(lambda: make(dict_and_tuple_results))(x, W))
