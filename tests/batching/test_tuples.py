"""vmap of functions that build tuples, lists and dicts of batched values: vectorized, equal to stacked examples."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from tests.parallel import pmap_functions as fns


def pair_and_dict(x, w):
    a = x * w
    pair = (a, np.sum(a))
    u, v = pair
    return pair[0] + v, {"s": v}


def nested(x, w):
    a = x * w
    d = {"a": a, "s": np.sum(a)}
    parts = [a, 2.0]
    ((p, q), r) = ((a, w), 3.0)
    nest = ((a, 1.0), d["s"])
    return d["a"] + parts[0] + parts[-1] + nest[0][0] * d["s"] + p * q + r, nest


def loop_state(x, w):
    state = (x, np.sum(x))
    for _ in range(3):
        state = (state[0] * w + state[1], state[1] * 0.5 + np.sum(state[0]))
    h, c = state
    return h - c


def swapped(x, w):
    a = x * w
    b = w + 1.0
    a, b = b, a
    return a - b, (b, a)


def read_after_the_loop(x, w):
    s = 0.0 * x
    for i in range(3):
        p = (x * i, w)
        s = s + p[0] * p[1]
    return s, p


def _stacked(fn, xs, w):
    per_example = [fn(x, w) for x in xs]
    return srctrans.tree.tree_map(lambda *vs: np.stack(vs), *per_example)


def _assert_tree_close(got, want):
    assert srctrans.tree.tree_structure(got) == srctrans.tree.tree_structure(want)
    for g, w in zip(srctrans.tree.tree_leaves(got), srctrans.tree.tree_leaves(want), strict=True):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [pair_and_dict, nested, loop_state, swapped, read_after_the_loop])
@pytest.mark.parametrize("size", [1, 4])
def test_tuples_of_batched_values_are_vectorized(fn, size):
    rng = np.random.default_rng(20 + size)
    xs, w = rng.normal(size=(size, 3)), rng.normal(size=3)
    batched = srctrans.vmap(fn, in_axes=(0, None))
    _assert_tree_close(batched(xs, w), _stacked(fn, xs, w))
    assert batched._last()[0].gen.meta["vmap"]["method"] == "vectorize"
    assert batched.source().splitlines()[3] == "# vmap method: vectorized (every statement has a batching rule)"


def test_the_tuples_are_gone_from_the_vectorized_file():
    batched = srctrans.vmap(pair_and_dict, in_axes=(0, None))
    batched(np.ones((2, 3)), np.ones(3))
    body = batched.source().split("def pair_and_dict_vmap", 1)[1]
    code = [line.strip() for line in body.splitlines() if not line.strip().startswith("#")]
    assert not any("pair" in line for line in code)  # no line builds, unpacks or indexes the tuple
    assert "t1 = np.sum(a, axis=1)" in code


def test_jit_of_the_vectorized_tuples():
    rng = np.random.default_rng(3)
    xs, w = rng.normal(size=(5, 3)), rng.normal(size=3)
    batched = srctrans.jit(srctrans.vmap(nested, in_axes=(0, None)))
    _assert_tree_close(batched(xs, w), _stacked(nested, xs, w))
    assert "vmap method: vectorized" in batched.source().splitlines()[3]


def test_pytree_results_with_a_collective_are_vectorized():
    """pmap's ``tree`` case under vmap(axis_name="i"): it used to fall to the loop, where pmean is unbound."""
    rng = np.random.default_rng(4)
    a, xs = rng.normal(size=3), rng.normal(size=(5, 3))
    batched = srctrans.vmap(fns.tree, in_axes=(None, 0), axis_name="i")
    got = batched({"a": a, "b": 0.5}, xs)
    y = a * xs + 0.5
    _assert_tree_close(got, {"y": y, "mean": np.broadcast_to(y.mean(axis=0), y.shape), "pair": (y, 2.0 * y)})
    assert batched._last()[0].gen.meta["vmap"]["method"] == "vectorize"


def halving_then_psum(x):
    s = np.sum(x)
    while s > 1.0:
        s = s / 2.0
    m = srctrans.psum(s, "i")
    return x * m


def test_a_collective_where_vmap_must_loop_is_refused_at_its_line():
    with pytest.raises(srctrans.SrcTransError, match=r'psum\(s, "i"\) needs every example.*while loop') as err:
        srctrans.vmap(halving_then_psum, axis_name="i")(np.ones((2, 3)))
    assert err.value.line == halving_then_psum.__code__.co_firstlineno + 4
    assert "unbound" not in str(err.value)
