"""Second order: ``hessian`` (forward over reverse) against finite differences of the gradient,
``jvp(grad(f))`` against ``hessian(f) @ v``, compiled and uncompiled."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.tree import tree_leaves

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


# --- pytree arguments -------------------------------------------------------------------


def _tree_loss(p, s):
    h = np.tanh(p["w"] * p["b"][0])
    return np.sum(h ** 2) * p["b"][1] + s["k"] * np.sum(p["w"] ** 3)


def _tree_args():
    rng = np.random.default_rng(3)
    return {"w": rng.standard_normal(3), "b": (0.7, -0.4)}, {"k": 1.3}


def _flat_loss(w, b0, b1, k):  # _tree_loss over flat arguments
    h = np.tanh(w * b0)
    return np.sum(h ** 2) * b1 + k * np.sum(w ** 3)


def _flat_hessian(p, s):
    """Every block by central differences of the gradient of the same loss over flat arguments."""
    args = [p["w"], p["b"][0], p["b"][1], s["k"]]
    blocks = {}
    for i in range(3):
        for j in range(3):
            g = srctrans.grad(_flat_loss, argnums=i)
            x = np.asarray(args[j], dtype=float)
            cols = []
            for idx in np.ndindex(*x.shape):
                up, down = [a for a in args], [a for a in args]
                step = np.zeros(x.shape)
                step[idx] = 1e-6
                up[j], down[j] = (x + step, x - step) if x.shape else (float(x) + 1e-6, float(x) - 1e-6)
                cols.append((np.asarray(g(*up)) - np.asarray(g(*down))) / 2e-6)
            out_shape = np.shape(args[i])
            blocks[i, j] = np.moveaxis(np.array(cols).reshape(x.shape + out_shape), list(range(x.ndim)), list(range(len(out_shape), len(out_shape) + x.ndim)))
    return blocks


@pytest.mark.parametrize("compiled", [False, True])
def test_hessian_of_a_pytree_argument_matches_differences_and_nests_like_jax(compiled):
    p, s = _tree_args()
    f = srctrans.jit(_tree_loss) if compiled else _tree_loss
    H = srctrans.hessian(f)(p, s)
    # the gradient's structure (p's), each leaf holding p's structure: H["w"]["b"][0] is d2f / dw db0
    assert set(H) == {"w", "b"} and set(H["w"]) == {"w", "b"} and len(H["b"]) == 2 and set(H["b"][1]) == {"w", "b"}
    leaf = {0: ("w",), 1: ("b", 0), 2: ("b", 1)}
    expected = _flat_hessian(p, s)

    def at(tree, path):
        for key in path:
            tree = tree[key]
        return tree

    for (i, j), block in expected.items():
        got = at(at(H, leaf[i]), leaf[j])
        assert np.shape(got) == block.shape
        np.testing.assert_allclose(got, block, rtol=1e-6, atol=1e-6)


def test_hessian_of_pytrees_with_tuple_argnums_and_jit_of_hessian():
    p, s = _tree_args()
    H = srctrans.hessian(_tree_loss, argnums=(0, 1))(p, s)
    # a tuple per gradient leaf: (p's structure, s's structure), as jax.hessian(argnums=(0, 1))
    assert isinstance(H, tuple) and len(H) == 2
    d2_dk_dw = H[1]["k"][0]["w"]
    np.testing.assert_allclose(d2_dk_dw, 3 * p["w"] ** 2, rtol=1e-12)
    np.testing.assert_allclose(H[0]["w"][1]["k"], 3 * p["w"] ** 2, rtol=1e-12)
    assert np.shape(H[1]["k"][1]["k"]) == () and abs(H[1]["k"][1]["k"]) < 1e-12
    compiled = srctrans.jit(srctrans.hessian(_tree_loss, argnums=(0, 1)))(p, s)
    for a, b in zip(tree_leaves(compiled), tree_leaves(H)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_hessian_of_a_pytree_with_an_integer_leaf_names_it():
    with pytest.raises(TypeError, match=r"hessian.*p\['n'\]"):
        srctrans.hessian(lambda p: np.sum(p["w"] ** 2) * p["n"])({"w": np.ones(2), "n": 3})
