"""vmap of a function that calls your own functions with batched arguments: the callees are vectorized too.

``dense(W, x)`` called with a batched ``x`` becomes ``dense_vmap_u2_b1(W, x)``, written into
the same file; results equal stacked per-example results, uncompiled and compiled. A callee
that cannot be vectorized (a tuple result, recursion, a data-dependent loop) sends the entry
to the per-example loop, with the reason in the file's header.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans


def dense(W, x):
    return np.tanh(W @ x)


def net(W1, W2, x):
    h = dense(W1, x)
    return np.sum(dense(W2, h) ** 2)


def scale(x, s):
    return x * s


def mixed(x, s):
    a = scale(x, 2.0)  # batched x, constant s
    b = scale(np.ones(3), s)  # unbatched x, batched s
    c = scale(x, s)  # both batched
    return a + b + c


def inner(x):
    return np.sin(x) + 1.0


def middle(x, k):
    return inner(x) * k


def outer(x, k):
    return middle(x, k) - inner(x)


def moments(x):
    return np.mean(x), np.var(x)


def uses_tuple(x):
    m, v = moments(x)
    return (x - m) / np.sqrt(v + 1e-9)


def parts(x, k):
    return x * k, (np.sum(x), x + k)


def nested_results(x, k):
    a, (s, b) = parts(x, k)
    pair = parts(b, 2.0)  # held whole, then unpacked
    c, inner = pair
    t, d = inner
    return a * s + b + c + t * d


def uses_tuple_badly(x):
    pair = moments(x)  # (pair[0] and len(pair) alone would be read as an unpacking)
    same = pair
    return x * pair[0] + same[1]


def countdown(x, n):
    if n == 0:
        return x
    return countdown(x * 0.5, n - 1) + x


def recursive(x):
    return countdown(x, 3)


def halve_until_small(x):
    while np.sum(x * x) > 1.0:
        x = x * 0.5
    return x


def data_loop(x):
    return halve_until_small(x) + 1.0


def centered(x):
    return x - srctrans.pmean(x, "i")


def with_collective(x):
    return centered(x) * 2.0


def _stacked(fn, in_axes, args):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = []
    for k in range(size):
        rows.append(fn(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, in_axes)]))
    return np.stack(rows)


RNG = np.random.default_rng(11)
CASES = [
    (net, (None, None, 0), (RNG.standard_normal((8, 5)), RNG.standard_normal((3, 8)), RNG.standard_normal((6, 5)))),
    (mixed, (0, 0), (RNG.standard_normal((4, 3)), RNG.standard_normal(4))),
    (outer, (0, None), (RNG.standard_normal((5, 2)), 1.5)),
    (outer, (1, 0), (RNG.standard_normal((2, 5)), RNG.standard_normal(5))),
    (uses_tuple, (0,), (RNG.standard_normal((4, 3)),)),
    (nested_results, (0, None), (RNG.standard_normal((4, 3)), 0.5)),
]


@pytest.mark.parametrize("fn, in_axes, args", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_callees_are_vectorized(fn, in_axes, args):
    want = _stacked(fn, in_axes, args)
    batched = srctrans.vmap(fn, in_axes=in_axes)
    np.testing.assert_allclose(batched(*args), want, rtol=1e-12, atol=1e-12)
    spec = batched._last()[0]
    assert spec.gen.meta["vmap"]["method"] == "vectorize"
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(fn, in_axes=in_axes))(*args), want, rtol=1e-12, atol=1e-12)


def test_the_file_holds_one_batched_version_per_combination():
    batched = srctrans.vmap(mixed)
    batched(RNG.standard_normal((4, 3)), RNG.standard_normal(4))
    text = batched._last()[0].gen.path.read_text()
    assert "def scale_vmap_b1_u0(" in text  # scale(x, 2.0)
    assert "def scale_vmap_u1_b0(" in text  # scale(np.ones(3), s)
    assert "def scale_vmap_b1_b0(" in text  # scale(x, s)
    assert "def scale(" not in text  # the plain function is called nowhere: not written
    assert "a = scale_vmap_b1_u0(x, 2.0)" in text


def test_callees_of_callees():
    batched = srctrans.vmap(outer, in_axes=(0, None))
    x = RNG.standard_normal((5, 2))
    batched(x, 1.5)
    text = batched._last()[0].gen.path.read_text()
    assert "def middle_vmap_b1_u" in text and "def inner_vmap_b1(" in text
    assert text.count("def inner_vmap_b1(") == 1  # called from two places, written once


@pytest.mark.parametrize(
    "fn, reason",
    [
        (uses_tuple_badly, "the tuple pair (returned by your function) used other than by unpacking it"),
        (recursive, "countdown"),
        (data_loop, "while loop"),
    ],
)
def test_callees_that_cannot_be_vectorized_loop_with_the_reason(fn, reason):
    x = RNG.standard_normal((4, 3))
    batched = srctrans.vmap(fn)
    np.testing.assert_allclose(batched(x), _stacked(fn, (0,), (x,)), rtol=1e-12, atol=1e-12)
    spec = batched._last()[0]
    assert spec.gen.meta["vmap"]["method"] == "loop"
    header = next(line for line in spec.gen.path.read_text().splitlines() if line.startswith("# vmap method"))
    assert reason in header
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(fn))(x), _stacked(fn, (0,), (x,)), rtol=1e-12, atol=1e-12)


def test_a_collective_in_a_callee_sees_the_whole_batch():
    x = RNG.standard_normal((6, 2))
    got = srctrans.vmap(with_collective, axis_name="i")(x)
    np.testing.assert_allclose(got, (x - x.mean(axis=0)) * 2.0, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("compiled", [False, True])
def test_per_example_gradients_through_a_callee(compiled):
    """The adjoint file calls dense's adjoint, which returns (out, (W_bar, x_bar)): vectorized too."""
    W1, W2, X = CASES[0][2]
    per_example = srctrans.vmap(srctrans.grad(net, argnums=(0, 1)), in_axes=(None, None, 0))
    grads = (srctrans.jit(per_example) if compiled else per_example)(W1, W2, X)
    if not compiled:
        assert per_example._last()[0].gen.meta["vmap"]["method"] == "vectorize"
    one = srctrans.grad(net, argnums=(0, 1))
    for k, x in enumerate(X):
        g1, g2 = one(W1, W2, x)
        np.testing.assert_allclose(grads[0][k], g1, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grads[1][k], g2, rtol=1e-12, atol=1e-12)


def test_grad_of_a_function_that_vmaps_a_function_with_callees():
    W1, W2, X = CASES[0][2]
    batched = srctrans.vmap(net, in_axes=(None, None, 0))

    def total(W1, W2, X):
        return np.sum(batched(W1, W2, X))

    got = srctrans.grad(total, argnums=0)(W1, W2, X)
    want = sum(srctrans.grad(net, argnums=0)(W1, W2, x) for x in X)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def fill(out, x):
    out[:] = x * 2.0  # writes into its argument
    return np.sum(out)


def writes_through_a_callee(x):
    buf = np.zeros_like(x)
    s = fill(buf, x)  # noqa: F841 (s unused: the call still runs)
    return buf + 1.0


def pick(x):
    buf = np.zeros_like(x)
    if np.sum(x) > 0.0:  # a batched test: a masked select computes both branches
        s = fill(buf, x)
    else:
        s = np.sum(x)
    return buf + s


def test_a_callee_that_writes_is_run_one_example_at_a_time():
    """It would run for both branches of a masked select: the entry loops over the examples."""
    x = RNG.standard_normal((6, 3))
    for fn in (writes_through_a_callee, pick):
        want = np.stack([fn(e) for e in x])
        batched = srctrans.vmap(fn)
        np.testing.assert_allclose(batched(x), want, rtol=1e-12, atol=1e-12)
        header = next(line for line in batched._last()[0].gen.path.read_text().splitlines() if line.startswith("# vmap method"))
        assert "fill writes into an array" in header
        np.testing.assert_allclose(srctrans.jit(srctrans.vmap(fn))(x), want, rtol=1e-12, atol=1e-12)


# --- your functions called with unbatched arguments: run once, as written, their rank known ---

def norm_rows(W):
    return W / np.sqrt(np.sum(W * W, axis=1, keepdims=True))


def total(W):
    return np.sum(W * W)


def first_column(W):
    return W[:, 0]


def normalized_layer(W, x):
    Wn = norm_rows(W)  # unbatched: the result's rank decides how Wn @ x batches
    return np.tanh(Wn @ x) * total(W) + first_column(W) * (x @ x)


def gram(W):
    return W.T @ W


def through_two(W, x):
    return x @ gram(norm_rows(W)) @ x


UNBATCHED_CASES = [
    (normalized_layer, (None, 0), (RNG.standard_normal((4, 3)), RNG.standard_normal((6, 3)))),
    (through_two, (None, 0), (RNG.standard_normal((4, 3)), RNG.standard_normal((6, 3)))),
    (through_two, (None, 1), (RNG.standard_normal((4, 3)), RNG.standard_normal((3, 5)))),
]


@pytest.mark.parametrize("fn, in_axes, args", UNBATCHED_CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(UNBATCHED_CASES)])
def test_unbatched_calls_of_your_functions_keep_the_rewrite(fn, in_axes, args):
    """The rank of their result was unknown, and the entry looped over the examples."""
    want = _stacked(fn, in_axes, args)
    batched = srctrans.vmap(fn, in_axes=in_axes)
    np.testing.assert_allclose(batched(*args), want, rtol=1e-12, atol=1e-12)
    spec = batched._last()[0]
    assert spec.gen.meta["vmap"]["method"] == "vectorize"
    assert "_vmap_u" not in spec.gen.path.read_text().split("def " + fn.__name__ + "_vmap")[0]  # called as written
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(fn, in_axes=in_axes))(*args), want, rtol=1e-12, atol=1e-12)
    empty = [a if ax is None else np.take(a, [], axis=ax) for a, ax in zip(args, in_axes)]
    assert batched(*empty).shape[0] == 0


def test_per_example_gradients_through_an_unbatched_call():
    W, xs = RNG.standard_normal((4, 3)), RNG.standard_normal((6, 3))
    loss = lambda W, x: np.sum(normalized_layer(W, x) ** 2)  # noqa: E731
    per_example = srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0))
    want = np.stack([srctrans.grad(loss)(W, x) for x in xs])
    np.testing.assert_allclose(per_example(W, xs), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srctrans.jit(per_example)(W, xs), want, rtol=1e-12, atol=1e-12)
