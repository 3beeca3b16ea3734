"""vmap's API: the seed case, in_axes/out_axes forms, nesting, pytrees, jit, methods, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans


def l1_distance(x, y):
    return np.sum(np.abs(x - y))


def affine(W, b, x):
    return np.tanh(W @ x + b)


def two_outputs(x, y):
    return np.sum(x * y), x - y


def with_pytree(params, x):
    return np.sum(params["w"] * x) + params["b"]


def data_dependent_while(x):
    s = x
    k = 0
    while s < 10.0 and k < 50:
        s = s * 1.5 + 0.1
        k += 1
    return s


def prints(x):
    print("value", x)
    return x * 2.0


def constant_output(x, y):
    return np.sum(y), x * 2.0


def test_seed_case_pairwise_l1_distances():
    xs = np.random.default_rng(0).normal(size=(100, 3))
    pairwise = srctrans.vmap(srctrans.vmap(l1_distance, (0, None)), (None, 0))
    got = pairwise(xs, xs)
    assert got.shape == (100, 100)
    np.testing.assert_allclose(got, np.sum(np.abs(xs[None, :, :] - xs[:, None, :]), axis=-1), rtol=1e-12)
    assert "loop" not in pairwise.sources()[0].splitlines()[3]  # both levels vectorized
    assert all("vmap method: vectorized" in s for s in pairwise.sources())


def test_seed_case_compiled():
    xs = np.random.default_rng(1).normal(size=(20, 3))
    pairwise = srctrans.jit(srctrans.vmap(srctrans.vmap(l1_distance, (0, None)), (None, 0)))
    np.testing.assert_allclose(pairwise(xs, xs), np.sum(np.abs(xs[None, :, :] - xs[:, None, :]), axis=-1), rtol=1e-12)


def test_matrix_vector_product_becomes_one_matrix_product():
    rng = np.random.default_rng(2)
    W, b, xs = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(5, 3))
    batched = srctrans.vmap(affine, in_axes=(None, None, 0))
    np.testing.assert_allclose(batched(W, b, xs), np.tanh(xs @ W.T + b), rtol=1e-12)
    assert "x @ np.transpose(W)" in batched.source()


def test_in_axes_negative_and_out_axes():
    rng = np.random.default_rng(3)
    W, b, xs = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(3, 5))
    got = srctrans.vmap(affine, in_axes=(None, None, -1), out_axes=1)(W, b, xs)
    assert got.shape == (4, 5)
    np.testing.assert_allclose(got, np.tanh(W @ xs + b[:, None]), rtol=1e-12)


def test_tuple_out_axes_and_unbatched_output():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(3, 2)), rng.normal(size=2)
    s, d = srctrans.vmap(two_outputs, in_axes=(0, None), out_axes=(0, 1))(x, y)
    np.testing.assert_allclose(s, x @ y)
    np.testing.assert_allclose(d, (x - y).T)
    total, doubled = srctrans.vmap(constant_output, in_axes=(0, None), out_axes=(None, 0))(x, y)
    assert np.ndim(total) == 0
    np.testing.assert_allclose(total, np.sum(y))
    with pytest.raises(ValueError, match="out_axes=None for output 1"):
        srctrans.vmap(constant_output, in_axes=(0, None), out_axes=None)(x, y)


def test_pytree_arguments_and_in_axes():
    rng = np.random.default_rng(5)
    params = {"w": rng.normal(size=3), "b": 0.5}
    xs = rng.normal(size=(4, 3))
    got = srctrans.vmap(with_pytree, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(got, xs @ params["w"] + 0.5)
    ws = rng.normal(size=(4, 3))
    got = srctrans.vmap(with_pytree, in_axes=({"w": 0, "b": None}, 0))({"w": ws, "b": 0.5}, xs)
    np.testing.assert_allclose(got, np.sum(ws * xs, axis=1) + 0.5)


def test_axis_size_when_nothing_is_batched():
    got = srctrans.vmap(l1_distance, in_axes=None, axis_size=3)(np.ones(2), np.zeros(2))
    np.testing.assert_allclose(got, [2.0, 2.0, 2.0])


def test_auto_loops_over_a_data_dependent_while_and_says_why():
    xs = np.array([0.5, 3.0, 20.0])
    batched = srctrans.vmap(data_dependent_while)
    np.testing.assert_allclose(batched(xs), [data_dependent_while(v) for v in xs])
    header = batched.source().splitlines()[:6]
    assert any("a loop over the examples, because" in line and "while" in line for line in header)
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="vmap cannot vectorize"):
        srctrans.vmap(data_dependent_while, method="vectorize")(xs)


def test_side_effects_run_once_per_example(capsys):
    got = srctrans.vmap(prints)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, [2.0, 4.0])
    assert capsys.readouterr().out.count("value") == 2


def test_empty_batch_with_the_loop():
    got = srctrans.vmap(data_dependent_while)(np.zeros(0))
    assert got.shape == (0,)


def test_loop_compiled_in_parallel():
    xs = np.linspace(0.1, 5.0, 50)
    batched = srctrans.jit(srctrans.vmap(data_dependent_while), parallel=True)
    np.testing.assert_allclose(batched(xs), [data_dependent_while(v) for v in xs])
    assert "rt.prange(1, n)" in batched.source()


def test_per_example_gradients_vectorized():
    def loss(w, x, y):
        p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
        return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))

    rng = np.random.default_rng(6)
    w, X, y = rng.normal(size=4), rng.normal(size=(6, 4)), (rng.uniform(size=6) > 0.5) * 1.0
    per_example = srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0))
    p = 1.0 / (1.0 + np.exp(-X @ w))
    np.testing.assert_allclose(per_example(w, X, y), (p - y)[:, None] * X, rtol=1e-12)
    assert "vmap method: vectorized" in per_example.source()


# --- bad input ----------------------------------------------------------------------------


def test_in_axes_length_mismatch():
    with pytest.raises(ValueError, match="in_axes has 3 entries but .* 2 arguments"):
        srctrans.vmap(l1_distance, in_axes=(0, 0, 0))(np.ones((2, 3)), np.ones((2, 3)))


def test_in_axes_structure_mismatch():
    with pytest.raises(ValueError, match=r"in_axes for argument 'params' is a dict with keys \['w'\]"):
        srctrans.vmap(with_pytree, in_axes=({"w": 0}, 0))({"w": np.ones((2, 3)), "b": 1.0}, np.ones((2, 3)))


def test_axis_out_of_range():
    with pytest.raises(ValueError, match=r"in_axes=2 is out of range for argument 'x', which has shape \(2, 3\)"):
        srctrans.vmap(l1_distance, in_axes=(2, None))(np.ones((2, 3)), np.ones(3))


def test_batch_sizes_disagree():
    with pytest.raises(ValueError, match=r"argument 'x' has size 2 along axis 0; argument 'y' has size 4 along axis 0"):
        srctrans.vmap(l1_distance)(np.ones((2, 3)), np.ones((4, 3)))


def test_axis_size_missing():
    with pytest.raises(ValueError, match="every in_axes is None.*pass axis_size"):
        srctrans.vmap(l1_distance, in_axes=None)(np.ones(3), np.ones(3))


def test_out_axes_mismatch_and_range():
    x, y = np.ones((3, 2)), np.ones(2)
    with pytest.raises(ValueError, match="out_axes for the result has 3 entries, but the value has 2 entries"):
        srctrans.vmap(two_outputs, in_axes=(0, None), out_axes=(0, 0, 0))(x, y)
    with pytest.raises(ValueError, match="out_axes=2 is out of range for output 0"):
        srctrans.vmap(two_outputs, in_axes=(0, None), out_axes=2)(x, y)


def test_bad_arguments_of_vmap_itself():
    with pytest.raises(ValueError, match="method must be one of"):
        srctrans.vmap(l1_distance, method="fast")
    with pytest.raises(TypeError, match="in_axes must be an int, None"):
        srctrans.vmap(l1_distance, in_axes="0")


# --- collectives over a named axis ----------------------------------------------------------


def normalized(x):
    return x / srctrans.psum(x, "batch")


def centered(x):
    return x - srctrans.pmean(x, "batch")


def outer_total(x):
    return srctrans.psum(x, "rows") * 1.0


def test_psum_and_pmean_over_the_batch():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    got = srctrans.vmap(normalized, axis_name="batch")(x)
    np.testing.assert_allclose(got, x / x.sum(axis=0))
    np.testing.assert_allclose(srctrans.vmap(centered, axis_name="batch")(x), x - x.mean(axis=0))
    compiled = srctrans.jit(srctrans.vmap(centered, axis_name="batch"))
    np.testing.assert_allclose(compiled(x), x - x.mean(axis=0))


def test_psum_of_an_outer_axis_passes_through_an_inner_vmap():
    x = np.arange(6.0).reshape(2, 3)
    inner = srctrans.vmap(outer_total, axis_name="cols")
    got = srctrans.vmap(inner, axis_name="rows")(x)
    np.testing.assert_allclose(got, np.broadcast_to(x.sum(axis=0), x.shape))


def test_psum_outside_its_vmap_is_an_error():
    with pytest.raises(NameError, match="unbound axis name 'batch'"):
        normalized(np.ones(3))
    # the per-example loop cannot give a collective the batch: refused at its line, never "unbound"
    with pytest.raises(srctrans.SrcTransError, match=r'psum\(x, "batch"\) needs every example.*method=.loop. was asked') as err:
        srctrans.vmap(normalized, axis_name="batch", method="loop")(np.ones((2, 3)))
    assert err.value.line == normalized.__code__.co_firstlineno + 1


def returns_dict(params, x):
    return {"s": np.sum(params["w"] * x) + params["b"], "d": x * 2.0}


def test_nested_vmap_with_pytrees_and_dict_out_axes():
    rng = np.random.default_rng(8)
    W, xs = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    inner = srctrans.vmap(returns_dict, in_axes=(None, 0))
    both = srctrans.vmap(inner, in_axes=({"w": 0, "b": None}, None))
    out = both({"w": W, "b": 0.5}, xs)
    np.testing.assert_allclose(out["s"], W @ xs.T + 0.5)
    assert out["d"].shape == (4, 5, 3)
    moved = srctrans.vmap(returns_dict, in_axes=(None, 0), out_axes={"s": 0, "d": 1})({"w": W[0], "b": 0.5}, xs)
    np.testing.assert_allclose(moved["d"], (2.0 * xs).T)
    looped = srctrans.vmap(returns_dict, in_axes=(None, 0), method="loop")({"w": W[0], "b": 0.5}, xs)
    np.testing.assert_allclose(looped["s"], xs @ W[0] + 0.5)


def trace_of(m):
    return np.trace(m)


def test_jit_falls_back_to_the_loop_when_numba_refuses_the_rewrite():
    m = np.random.default_rng(9).normal(size=(4, 3, 3))
    batched = srctrans.jit(srctrans.vmap(trace_of))  # np.trace(x, axis1=1, axis2=2): not in Numba
    np.testing.assert_allclose(batched(m), np.trace(m, axis1=1, axis2=2))
    assert "Numba could not compile the vectorized rewrite" in batched.source().splitlines()[3]
    with pytest.raises(srctrans.CompileError, match="Numba could not compile"):
        srctrans.jit(srctrans.vmap(trace_of, method="vectorize"))(m)


def test_loop_with_two_outputs_compiled_and_vmap_of_jit():
    x, y = np.random.default_rng(10).normal(size=(2, 4, 3))
    s, d = srctrans.jit(srctrans.vmap(two_outputs, method="loop"))(x, y)
    np.testing.assert_allclose(s, np.sum(x * y, axis=1))
    np.testing.assert_allclose(d, x - y)
    batched = srctrans.vmap(srctrans.jit(l1_distance), in_axes=(0, None))
    np.testing.assert_allclose(batched(x, y[0]), np.sum(np.abs(x - y[0]), axis=1))
    assert srctrans.source_path(batched) == batched.source_path()
    assert "jit(vmap)" in repr(batched)


def nested_results(x, W):
    h = np.tanh(W @ x)
    return {"h": h, "s": np.sum(h * h)}, (h[0], (x * 2.0, 3.0 * h[1]))


@pytest.mark.parametrize("method", ["auto", "loop"])
@pytest.mark.parametrize("compiled", [False, True])
def test_nested_pytree_results(method, compiled):
    rng = np.random.default_rng(11)
    xs, W = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    batched = srctrans.vmap(nested_results, in_axes=(0, None), method=method)
    if compiled:
        batched = srctrans.jit(batched)
    got = batched(xs, W)
    per_example = [nested_results(x, W) for x in xs]
    want = srctrans.tree.tree_map(lambda *vs: np.stack(vs), *per_example)
    assert srctrans.tree.tree_structure(got) == srctrans.tree.tree_structure(want)
    for g, w in zip(srctrans.tree.tree_leaves(got), srctrans.tree.tree_leaves(want), strict=True):
        assert type(g) is np.ndarray and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12)
    empty = batched(xs[:0], W)  # no example: each result still has its per-example shape
    assert [np.shape(v) for v in srctrans.tree.tree_leaves(empty)] == [(0,) + np.shape(v)[1:] for v in srctrans.tree.tree_leaves(want)]


def layer_out(W, x):
    return np.tanh(W @ x) * x[0]


def params_loss(params, x):
    return np.sum(np.sin(params["w"] * x)) + params["b"] ** 2 * np.sum(x)


@pytest.mark.parametrize("jacobian", ["jacfwd", "jacrev"])
def test_vmap_of_a_jacobian_stacks_per_example_jacobians(jacobian):
    """Per-example Jacobians, as in JAX: vmap(jacfwd(f)) raised a SourceUnavailableError that
    blamed the user's file (it read the source of srctrans's own wrapper)."""
    rng = np.random.default_rng(3)
    W, xs = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    jac = getattr(srctrans, jacobian)(layer_out, argnums=1)
    per_example = np.stack([jac(W, x) for x in xs])
    assert per_example.shape == (5, 4, 3)
    np.testing.assert_allclose(srctrans.vmap(jac, in_axes=(None, 0))(W, xs), per_example, rtol=1e-12)
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(jac, in_axes=(None, 0)))(W, xs), per_example, rtol=1e-10)
    np.testing.assert_allclose(srctrans.vmap(jac, in_axes=(None, 1), out_axes=2)(W, xs.T),
                               np.moveaxis(per_example, 0, 2), rtol=1e-12)
    x0 = xs[0]  # the Jacobian itself, by central differences along the coordinates
    steps = [(layer_out(W, x0 + 1e-6 * e) - layer_out(W, x0 - 1e-6 * e)) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(per_example[0], np.stack(steps, axis=-1), rtol=1e-6, atol=1e-8)


def test_vmap_of_a_hessian_and_of_a_pytree_jacobian():
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(6, 3))
    params = {"w": rng.normal(size=3), "b": np.float64(0.7)}
    hess = srctrans.hessian(params_loss, argnums=1)
    np.testing.assert_allclose(srctrans.vmap(hess, in_axes=(None, 0))(params, xs),
                               np.stack([hess(params, x) for x in xs]), rtol=1e-12)
    jac = srctrans.jacrev(params_loss)  # a dict of Jacobians per example
    got = srctrans.vmap(jac, in_axes=(None, 0))(params, xs)
    for key in ("w", "b"):
        np.testing.assert_allclose(got[key], np.stack([jac(params, x)[key] for x in xs]), rtol=1e-12)
    nested = srctrans.vmap(srctrans.vmap(hess, in_axes=(None, 0)), in_axes=(None, 0))
    np.testing.assert_allclose(nested(params, xs.reshape(2, 3, 3)),
                               np.stack([hess(params, x) for x in xs]).reshape(2, 3, 3, 3), rtol=1e-12)


def test_vmap_of_a_jacobian_bad_input():
    jac = srctrans.jacfwd(layer_out, argnums=1)
    W = np.ones((4, 3))
    with pytest.raises(ValueError, match="different batch sizes"):
        srctrans.vmap(jac, in_axes=(0, 0))(np.ones((2, 4, 3)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="over 0 examples"):
        srctrans.vmap(jac, in_axes=(None, 0))(W, np.ones((0, 3)))
    with pytest.raises(ValueError, match="out_axes=None for output 0 of layer_out, but it differs between examples"):
        srctrans.vmap(jac, in_axes=(None, 0), out_axes=None)(W, np.arange(6.0).reshape(2, 3))


class Interval:
    """A class of the user's with methods named like ndarray's, and meanings of its own."""

    def __init__(self, v):
        self.v = v

    def clip(self, lo, hi):
        return self.v + lo + hi

    def round(self):
        return self.v * 3.0


def own_methods(x):
    return Interval(x).clip(1.0, 2.0) + Interval(x).round()


def clip_below(x):
    return np.sum(x.clip(0.0) ** 2)


def test_methods_named_like_numpys_keep_their_meaning():
    """A review found two regressions of a desugaring later withdrawn: x.clip(0.0) became
    np.clip(x, 0.0), which needs both bounds, and a user's own clip/round became NumPy's."""
    xs = np.array([[-1.0, 0.5, 2.0], [0.3, -0.2, 1.5]])
    np.testing.assert_allclose(srctrans.vmap(own_methods)(xs), [own_methods(x) for x in xs])
    np.testing.assert_allclose(srctrans.vmap(clip_below)(xs), [clip_below(x) for x in xs])
    assert srctrans.jit(clip_below)(xs[0]) == pytest.approx(clip_below(xs[0]))
