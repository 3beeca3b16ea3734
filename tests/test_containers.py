"""Containers as values: pytree arguments handed on to your functions, looped over, used whole.

ML code keeps parameters in a tuple, list or dict and hands them to a ``predict`` helper; JAX's
tutorials loop over a list of layers (``for w, b in params[:-1]``). Every transformation reads
such code: a helper given a part of a pytree argument gets a version of its own that takes the
part's leaves (``predict_leaves``), a loop over a part is written out once per entry, and a
tuple or list used whole (given to NumPy, returned) is rebuilt from its leaves.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.check import check_grads
from srctrans.tree import tree_flatten, tree_unflatten

from .conftest import module_from_text

CODE = """
import collections

import numpy as np

import srctrans


def predict(params, x):
    W1, b1, W2, b2 = params
    return np.tanh(x @ W1 + b1) @ W2 + b2


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def relu(x):
    return np.maximum(0.0, x)


def predict_layers(params, image):
    activations = image
    for w, b in params[:-1]:
        activations = relu(np.dot(w, activations) + b)
    final_w, final_b = params[-1]
    logits = np.dot(final_w, activations) + final_b
    return logits - np.log(np.sum(np.exp(logits)))


def loss_layers(params, image, label):
    return -np.sum(predict_layers(params, image) * label)


def loss_enumerated(params, x):
    for i, layer in enumerate(params):
        W, b = layer
        x = np.tanh(x @ W + b) * (i + 1.0)
    return np.sum(x)


def dense(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def loss_dict(p, x):
    return np.sum(dense(p, x) ** 2)


def loss_keyword(p, x):
    return np.sum(dense(p=p, x=x) ** 2)


def power(params, x, n):
    if n == 0:
        return np.sum(x)
    return power(params, np.tanh(x @ params[0] + params[1]), n - 1)


def loss_recursive(params, x):
    return power(params, x, 3)


def total(xs):
    return np.sum(np.concatenate(xs) ** 2)


def stacked(xs, w):
    return np.sum(np.stack(xs) * w)


def norm_of(v):
    s = 0.0
    for a in v:
        s = s + np.sum(a * a)
    return s


def two_structures(a, b):
    return norm_of(a) + norm_of(b)


Layer = collections.namedtuple("Layer", "W b")


def apply(layer, x):
    return np.tanh(x @ layer.W + layer.b)


def loss_namedtuple(layer, x):
    return np.sum(apply(layer, x) ** 2)


def mlp(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return x @ W + b


def mse(params, x, y):
    return np.mean((mlp(params, x) - y) ** 2)


def sgd_step(params, x, y):
    (gW0, gb0), (gW1, gb1) = srctrans.grad(mse)(params, x, y)
    (W0, b0), (W1, b1) = params
    return [(W0 - 0.1 * gW0, b0 - 0.1 * gb0), (W1 - 0.1 * gW1, b1 - 0.1 * gb1)]


def data_parallel_step(params, x, y):
    (gW0, gb0), (gW1, gb1) = srctrans.grad(mse)(params, x, y)
    (W0, b0), (W1, b1) = params
    return [
        (W0 - 0.1 * srctrans.pmean(gW0, "devices"), b0 - 0.1 * srctrans.pmean(gb0, "devices")),
        (W1 - 0.1 * srctrans.pmean(gW1, "devices"), b1 - 0.1 * srctrans.pmean(gb1, "devices")),
    ]


def keyed(p, k):
    return p[k]


def loss_dynamic_key(p, x):
    return np.sum(keyed(p, "W") * x)
"""

RNG = np.random.default_rng(7)
MLP = (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(4, 2)), RNG.normal(size=2))
X = RNG.normal(size=(5, 3))
Y = RNG.normal(size=(5, 2))
LAYERS = [(RNG.normal(size=(n, m)), RNG.normal(size=n)) for m, n in [(4, 5), (5, 5), (5, 3)]]
IMAGES = RNG.normal(size=(6, 4))
LABELS = np.eye(3)[[0, 1, 2, 0, 1, 2]]
DENSE = {"W": RNG.normal(size=(3, 3)), "b": RNG.normal(size=3)}


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("containers"), "containers_user", CODE) as module:
        yield module


def numeric_grad(f, args, i, eps=1e-6):
    """Central differences of scalar ``f(*args)`` with respect to every leaf of ``args[i]``."""
    leaves, treedef = tree_flatten(args[i])
    out = []
    for j, leaf in enumerate(leaves):
        g = np.zeros_like(leaf)
        for k in np.ndindex(np.shape(leaf)):
            values = []
            for sign in (1.0, -1.0):
                moved = [np.array(v, dtype=float) for v in leaves]
                moved[j][k] += sign * eps
                given = list(args)
                given[i] = tree_unflatten(treedef, moved)
                values.append(f(*given))
            g[k] = (values[0] - values[1]) / (2 * eps)
        out.append(g)
    return tree_unflatten(treedef, out)


def assert_trees_close(got, want, **tol):
    got_leaves, got_def = tree_flatten(got)
    want_leaves, want_def = tree_flatten(want)
    assert got_def == want_def, f"{got_def} != {want_def}"
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(g, w, **tol)


def per_example(fn, params, *batched):
    """``vmap(fn, in_axes=(None, 0, ...))`` by stacking per-example results."""
    results = [fn(params, *(b[i] for b in batched)) for i in range(len(batched[0]))]
    leaves = [tree_flatten(r)[0] for r in results]
    return tree_unflatten(tree_flatten(results[0])[1], [np.stack(column) for column in zip(*leaves)])


# --- a helper given the parameters ---------------------------------------------------------------


def test_params_tuple_handed_to_predict(mod):
    want = numeric_grad(mod.loss, (MLP, X, Y), 0)
    for g in (srctrans.grad(mod.loss), srctrans.jit(srctrans.grad(mod.loss))):
        got = g(MLP, X, Y)
        assert isinstance(got, tuple) and len(got) == 4
        assert_trees_close(got, want, rtol=1e-6, atol=1e-8)
    value, got = srctrans.value_and_grad(mod.loss)(MLP, X, Y)
    assert value == pytest.approx(mod.loss(MLP, X, Y))
    g = srctrans.grad(mod.loss)
    g(MLP, X, Y)
    text = srctrans.source(g)
    assert "def predict_leaves(params_0, params_1, params_2, params_3, x):" in text
    assert "predict_leaves(params_0, params_1, params_2, params_3, x)" in text


def test_compiled_and_uncompiled_agree(mod):
    plain = srctrans.grad(mod.loss_dict)(DENSE, X)
    compiled = srctrans.jit(srctrans.grad(mod.loss_dict))(DENSE, X)
    assert_trees_close(compiled, plain, rtol=1e-13, atol=1e-15)  # (Numba's tanh and matmul, NumPy's: ulps apart)


def test_per_example_gradients_of_a_params_tuple(mod):
    want = per_example(srctrans.grad(mod.loss), MLP, X, Y)
    for v in (srctrans.vmap(srctrans.grad(mod.loss), in_axes=(None, 0, 0)),
              srctrans.jit(srctrans.vmap(srctrans.grad(mod.loss), in_axes=(None, 0, 0)))):
        assert_trees_close(v(MLP, X, Y), want, rtol=1e-12, atol=1e-12)


def test_jax_tutorial_mlp_list_of_layers(mod):
    """``for w, b in params[:-1]`` in the helper: written out once per layer."""
    args = (LAYERS, IMAGES[0], LABELS[0])
    want = numeric_grad(mod.loss_layers, args, 0)
    for g in (srctrans.grad(mod.loss_layers), srctrans.jit(srctrans.grad(mod.loss_layers))):
        got = g(*args)
        assert isinstance(got, list) and all(isinstance(layer, tuple) for layer in got)
        assert_trees_close(got, want, rtol=1e-5, atol=1e-7)
    want = per_example(srctrans.grad(mod.loss_layers), LAYERS, IMAGES, LABELS)
    for v in (srctrans.vmap(srctrans.grad(mod.loss_layers), in_axes=(None, 0, 0)),
              srctrans.jit(srctrans.vmap(srctrans.grad(mod.loss_layers), in_axes=(None, 0, 0)))):
        got = v(LAYERS, IMAGES, LABELS)
        assert isinstance(got, list)
        assert_trees_close(got, want, rtol=1e-12, atol=1e-12)
    g = srctrans.grad(mod.loss_layers)
    g(*args)
    text = srctrans.source(g)
    helper = text.split("def predict_layers_leaves(")[1].split("\ndef ")[0]
    code = [line for line in helper.splitlines() if not line.strip().startswith("#")]
    assert not any(line.strip().startswith("for ") for line in code)  # the loop over the layers, written out
    assert "w = params_1_0" in helper


def test_loop_over_enumerate_of_the_argument(mod):
    params = LAYERS[1:2] * 2
    x = RNG.normal(size=5)
    want = numeric_grad(mod.loss_enumerated, (params, x), 0)
    for g in (srctrans.grad(mod.loss_enumerated), srctrans.jit(srctrans.grad(mod.loss_enumerated))):
        assert_trees_close(g(params, x), want, rtol=1e-6, atol=1e-8)


def test_dict_params_in_every_transformation(mod):
    x = X[0]
    want = numeric_grad(mod.loss_dict, (DENSE, x), 0)
    assert_trees_close(srctrans.grad(mod.loss_dict)(DENSE, x), want, rtol=1e-6, atol=1e-8)
    assert_trees_close(srctrans.grad(mod.loss_keyword)(DENSE, x), want, rtol=1e-6, atol=1e-8)
    assert_trees_close(srctrans.jacrev(mod.loss_dict)(DENSE, x), want, rtol=1e-6, atol=1e-8)
    assert_trees_close(srctrans.jacfwd(mod.loss_dict)(DENSE, x), want, rtol=1e-6, atol=1e-8)
    tangent = {"W": np.ones((3, 3)), "b": np.zeros(3)}
    _, t = srctrans.jvp(mod.loss_dict, (DENSE, x), (tangent, np.zeros(3)))
    assert t == pytest.approx(np.sum(want["W"]))
    want_v = per_example(srctrans.grad(mod.loss_dict), DENSE, X)
    assert_trees_close(srctrans.vmap(srctrans.grad(mod.loss_dict), in_axes=(None, 0))(DENSE, X), want_v,
                       rtol=1e-12, atol=1e-12)
    check_grads(mod.loss_dict, (DENSE, x), order=1, modes=("fwd", "rev"))


def test_recursion_hands_on_the_same_structure(mod):
    params = (RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3))
    x = X[1]
    want = numeric_grad(mod.loss_recursive, (params, x), 0)
    for g in (srctrans.grad(mod.loss_recursive), srctrans.jit(srctrans.grad(mod.loss_recursive))):
        assert_trees_close(g(params, x), want, rtol=1e-6, atol=1e-8)


def test_one_version_per_structure(mod):
    a = (X[0], X[1])
    b = [X[2], X[3], X[4]]
    g = srctrans.grad(mod.two_structures, argnums=(0, 1))
    ga, gb = g(a, b)
    assert_trees_close(ga, tuple(2 * v for v in a))
    assert_trees_close(gb, [2 * v for v in b])
    import re

    text = srctrans.source(g)
    two = re.findall(r"def (norm_of_leaves\w*)\(v_0, v_1\):", text)
    three = re.findall(r"def (norm_of_leaves\w*)\(v_0, v_1, v_2\):", text)
    assert len(two) == len(three) == 1 and two != three


# --- a tuple or list used whole -------------------------------------------------------------------


def test_tuple_given_to_numpy_is_rebuilt(mod):
    xs = (X[0], X[1][:2])
    for g in (srctrans.grad(mod.total), srctrans.jit(srctrans.grad(mod.total))):
        assert_trees_close(g(xs), tuple(2 * v for v in xs))
    g = srctrans.grad(mod.total)
    g(xs)
    assert "xs = xs_0, xs_1" in srctrans.source(g)
    w = RNG.normal(size=(2, 3))
    got = srctrans.grad(mod.stacked)([X[0], X[1]], w)
    assert_trees_close(got, [w[0], w[1]])


# --- what is refused, and where ------------------------------------------------------------------


def test_a_helper_reading_a_dict_with_a_variable_key_is_refused_at_its_line(mod):
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="can only be indexed with a constant") as info:
        srctrans.grad(mod.loss_dynamic_key)(DENSE, np.ones(3))
    err = info.value
    assert err.filename == mod.__file__
    assert CODE.splitlines()[err.line - 1].strip() == "return p[k]"


def test_nested_grad_of_a_namedtuple_says_so(mod):
    layer = mod.Layer(DENSE["W"], DENSE["b"])
    g = srctrans.grad(mod.loss_namedtuple)(layer, X[0])
    assert isinstance(g, mod.Layer)
    assert_trees_close(g, numeric_grad(mod.loss_namedtuple, (layer, X[0]), 0), rtol=1e-6, atol=1e-8)
    with pytest.raises(TypeError, match="namedtuple"):
        srctrans.vmap(srctrans.grad(mod.loss_namedtuple), in_axes=(None, 0))(layer, X)


# --- lists written in a call, lists grown with append ------------------------------------------------

DISPLAYS = {  # NumPy given a list or tuple where it takes an array: the array NumPy makes
    "max": "np.max([a * 2, b])",
    "min": "np.min([a * 2, b])",
    "prod": "np.prod([a, b, 3.0])",
    "std": "np.std([a, b, 1.0])",
    "var_tuple": "np.var((a, b, 1.0))",
    "mean": "np.mean([a, b * b])",
    "median": "np.median([a, b, 0.1])",
    "sum": "np.sum([1, a * a, b])",
    "norm": "np.linalg.norm([a, b])",
    "exp": "np.log(np.sum(np.exp([a, b])))",
    "cumsum": "np.sum(np.cumsum([a, b]) ** 2)",
    "dot": "np.dot([a, b], [b, 2.0])",
    "sort": "np.sum(np.sort([b, a]) * np.array([1.0, 2.0]))",
    "where": "np.sum(np.where([True, False], [a, b], [b, a]))",
    "clip": "np.sum(np.clip([a, b], 0.5, 1.0))",
    "average": "np.average([a, b], weights=[1.0, 3.0])",
    "max_2d": "np.sum(np.max([[a, b], [b * 3, 1.0]], axis=1))",
}
NOT_UNDER_JIT = {"average", "max_2d"}  # (Numba: np.average's list weights; np.array of nested lists)


@pytest.fixture(scope="module")
def displays(tmp_path_factory):
    text = "import numpy as np\n" + "".join(f"\n\ndef f_{k}(a, b):\n    return {e}\n" for k, e in DISPLAYS.items())
    with module_from_text(tmp_path_factory.mktemp("displays"), "displays_user", text) as module:
        yield module


@pytest.mark.parametrize("name", sorted(DISPLAYS))
def test_list_written_in_a_numpy_call(displays, name):
    f = getattr(displays, f"f_{name}")
    a, b = 0.7, 0.4
    want = (numeric_grad(f, (a, b), 0), numeric_grad(f, (a, b), 1))
    g = srctrans.grad(f, argnums=(0, 1))
    np.testing.assert_allclose(g(a, b), want, atol=1e-7)
    if name not in NOT_UNDER_JIT:
        np.testing.assert_allclose(srctrans.jit(g)(a, b), want, atol=1e-7)
    assert "np.array(" in srctrans.source(g)


def test_list_grown_with_append_then_stacked(make_module):
    m = make_module("""
import numpy as np


def f(x):
    out = []
    for i in range(3):
        out.append(x * i)
    return np.sum(np.stack(out) ** 2) + np.sum(np.stack(out) * x)
""")
    x = np.array([0.3, 0.5, 0.7])
    want = numeric_grad(m.f, (x,), 0)
    for g in (srctrans.grad(m.f), srctrans.jit(srctrans.grad(m.f))):
        np.testing.assert_allclose(g(x), want, rtol=1e-6)


# --- grad inside a step, pmap over devices ---------------------------------------------------------

NET = [(RNG.normal(size=(3, 8)) * 0.3, np.zeros(8)), (RNG.normal(size=(8, 2)) * 0.3, np.zeros(2))]
SHARDS_X = RNG.normal(size=(4, 16, 3))
SHARDS_Y = RNG.normal(size=(4, 16, 2))


def test_grad_called_inside_a_step_with_the_params_list(mod):
    g = srctrans.grad(mod.mse)(NET, SHARDS_X[0], SHARDS_Y[0])
    want = [(W - 0.1 * gW, b - 0.1 * gb) for (W, b), (gW, gb) in zip(NET, g)]
    for step in (mod.sgd_step, srctrans.jit(mod.sgd_step)):
        got = step(NET, SHARDS_X[0], SHARDS_Y[0])
        assert isinstance(got, list)
        assert_trees_close(got, want, rtol=1e-12, atol=1e-14)


def test_pmap_of_the_grad_and_of_a_step_with_pmean(mod, monkeypatch):
    """The stages run as Python (compiled, the same files: examples/mlp_data_parallel.py runs them)."""
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "4")
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    per_device = srctrans.pmap(srctrans.grad(mod.mse), axis_name="devices", in_axes=(None, 0, 0))(NET, SHARDS_X, SHARDS_Y)
    for d in range(4):
        one = srctrans.grad(mod.mse)(NET, SHARDS_X[d], SHARDS_Y[d])
        assert_trees_close([(gW[d], gb[d]) for gW, gb in per_device], one, rtol=1e-12, atol=1e-14)
    step = srctrans.pmap(mod.data_parallel_step, axis_name="devices", in_axes=(None, 0, 0))
    got = step(NET, SHARDS_X, SHARDS_Y)
    whole = srctrans.grad(mod.mse)(NET, SHARDS_X.reshape(-1, 3), SHARDS_Y.reshape(-1, 2))  # equal shards: the mean
    want = [(W - 0.1 * gW, b - 0.1 * gb) for (W, b), (gW, gb) in zip(NET, whole)]
    assert isinstance(got, list) and isinstance(got[0], tuple)
    for d in range(4):
        assert_trees_close([(W[d], b[d]) for W, b in got], want, rtol=1e-12, atol=1e-14)
