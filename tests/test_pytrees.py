"""Pytree arguments and results: dicts, lists, tuples, namedtuples and None, as JAX users write them.

A container argument is flattened at the call; its structure picks the generated file and
the generated function takes its leaves (``params["W"]`` -> ``params_W``). Gradients come
back in the argument's structure; returned dicts and lists are rebuilt.
"""

from __future__ import annotations

import collections
import re

import numpy as np
import pytest

import srctrans
from srctrans.tree import tree_leaves, tree_structure

from .conftest import module_from_text

MODEL = """
import numpy as np
from collections import namedtuple

Affine = namedtuple("Affine", ["W", "b"])


def loss(params, x, y):
    W, b = params["W"], params["b"]
    return np.mean((np.tanh(x @ W + b) - y) ** 2)


def mlp(params, x):
    (W1, b1), (W2, b2) = params
    h = np.tanh(x @ W1 + b1)
    return np.sum((h @ W2 + b2) ** 2)


def layers(params, x):
    first = params[0]
    h = np.tanh(x @ first["W"] + first["b"])
    h = np.tanh(h @ params[-1]["W"] + params[1]["b"])
    return np.sum(h * h) / len(params)


def nested(params, x):
    enc = params["enc"]
    h = np.sin(x * enc[0]) + enc[1]
    if params["off"] is None:
        h = h * params["scale"]
    return np.sum(h) + params["extra"][0] * 2.0


def affine(p, x):
    return np.sum(np.tanh(p.W * x + p[1]))


def two_trees(a, b, x):
    return np.sum(a["w"] * x) * b[0] + np.sum(b[1] ** 2)


def with_aux(params, x):
    pred = params["W"] * x
    l = np.sum(pred ** 2)
    return l, {"pred": pred, "scaled": 2.0 * l}


def metrics(params, x):
    l = np.sum(params[0] * x)
    return {"loss": l, "parts": [x, params[1]], "none": None}


def first_row(p, x):
    return np.sum(p[0] * x)


def by_key(d, x):
    return np.sum(d["w"] * x)


scaled = lambda p, x: np.sum(p["w"] * x) * p["s"]
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("pytrees"), "treemodel", MODEL) as module:
        yield module


R = np.random.RandomState(0)
X43 = R.randn(4, 3)
Y42 = R.randn(4, 2)
DICT = {"W": R.randn(3, 2), "b": R.randn(2)}
PAIRS = [(R.randn(3, 5), R.randn(5)), (R.randn(5, 2), R.randn(2))]
LAYERS = [{"W": R.randn(3, 3), "b": R.randn(3)}, {"W": R.randn(3, 2), "b": R.randn(2)}]
NESTED = {"enc": (R.randn(3), R.randn(3)), "scale": 0.7, "extra": [1.5], "off": None}
X3 = R.randn(3)


def cases(m):
    return {
        "dict": (m.loss, (DICT, X43, Y42)),
        "list of tuples": (m.mlp, (PAIRS, X43)),
        "list of dicts": (m.layers, (LAYERS, X43)),
        "nested with float and None": (m.nested, (NESTED, X3)),
        "namedtuple": (m.affine, (m.Affine(R.randn(3), R.randn(3)), X3)),
        "lambda": (m.scaled, ({"w": R.randn(3), "s": 1.3}, X3)),
    }


CASES = ["dict", "list of tuples", "list of dicts", "nested with float and None", "namedtuple", "lambda"]


def assert_trees_close(a, b, rtol=1e-10):
    assert tree_structure(a) == tree_structure(b)
    for x, y in zip(tree_leaves(a), tree_leaves(b)):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_gradients_come_back_in_the_arguments_structure_and_match_central_differences(m, case):
    f, args = cases(m)[case]
    g = srctrans.grad(f)(*args)
    assert tree_structure(g) == tree_structure(args[0])
    srctrans.check_grads(f, args, order=1)
    value = srctrans.jit(f)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)


@pytest.mark.parametrize("case", ["dict", "list of dicts", "nested with float and None"])
def test_compiled_gradients_equal_the_uncompiled_ones(m, case):
    f, args = cases(m)[case]
    g = srctrans.grad(f)
    compiled = srctrans.jit(srctrans.grad(f))
    assert_trees_close(compiled(*args), g(*args))
    assert_trees_close(compiled(*args), g(*args))  # a second call, through the cached specialization


def test_float_leaves_get_float_gradients_and_none_stays_none(m):
    g = srctrans.grad(m.nested)(NESTED, X3)
    assert isinstance(g["scale"], float) and isinstance(g["extra"][0], float)
    assert g["off"] is None and isinstance(g["enc"], tuple)
    assert g["extra"][0] == pytest.approx(2.0)


def test_generated_functions_take_the_leaves_named_after_their_paths(m):
    g = srctrans.grad(m.loss)
    g(DICT, X43, Y42)
    text = srctrans.source(g)
    assert "def loss_grad(params_W, params_b, x, y):" in text
    assert "return out, (params_W_bar, params_b_bar)" in text
    j = srctrans.jit(m.mlp)
    j(PAIRS, X43)
    text = srctrans.source(j)
    assert "# params = [(params_0_0, params_0_1), (params_1_0, params_1_1)]: a pytree argument" in text
    assert "def mlp(params_0_0, params_0_1, params_1_0, params_1_1, x):" in text
    assert "    W1 = params_0_0\n" in text
    body = [line for line in text.split("def mlp(")[1].splitlines() if not line.strip().startswith("#")]
    assert not any(re.search(r"\bparams\b", line) for line in body)  # only its leaves are read


def test_leaf_names_never_collide_with_the_functions_names(make_module):
    mod = make_module(
        """
        import numpy as np

        def f(p, x):
            p_w = p["w"] * 2.0
            return np.sum(p_w * x)
        """
    )
    g = srctrans.grad(mod.f)
    np.testing.assert_allclose(g({"w": X3}, X3)["w"], 2.0 * X3)
    assert "def f_grad(p_w_1, x):" in srctrans.source(g)


def test_argnums_tuple_value_and_grad_and_vjp(m):
    a, b = {"w": X3}, (2.0, R.randn(3))
    ga, gb = srctrans.grad(m.two_trees, argnums=(0, 1))(a, b, X3)
    assert set(ga) == {"w"} and isinstance(gb, tuple) and len(gb) == 2
    np.testing.assert_allclose(ga["w"], 2.0 * X3)
    assert gb[0] == pytest.approx(np.sum(X3 * X3))
    np.testing.assert_allclose(gb[1], 2.0 * b[1])
    value, (gb_only,) = srctrans.value_and_grad(m.two_trees, argnums=(1,))(a, b, X3)
    assert value == pytest.approx(m.two_trees(a, b, X3))
    assert_trees_close(gb_only, gb)
    out, vjp_fn = srctrans.vjp(m.loss, DICT, X43, Y42)
    ct_params, ct_x, ct_y = vjp_fn(1.0)
    assert_trees_close(ct_params, srctrans.grad(m.loss)(DICT, X43, Y42))
    assert ct_x.shape == X43.shape and ct_y.shape == Y42.shape


def test_has_aux_with_a_dict_aux(m):
    params = {"W": X3}
    expected_aux = m.with_aux(params, X3)[1]
    g, aux = srctrans.grad(m.with_aux, has_aux=True)(params, X3)
    np.testing.assert_allclose(g["W"], 2.0 * X3**3)
    assert set(aux) == {"pred", "scaled"}
    assert_trees_close(aux, expected_aux)
    (value, aux2), g2 = srctrans.jit(srctrans.value_and_grad(m.with_aux, has_aux=True))(params, X3)
    assert value == pytest.approx(m.with_aux(params, X3)[0])
    assert_trees_close(aux2, expected_aux)
    assert_trees_close(g2, g)


def test_jit_returns_dicts_and_lists_rebuilt(m):
    j = srctrans.jit(m.metrics)
    args = ((X3, R.randn(3)), X3)
    out = j(*args)
    expected = m.metrics(*args)
    assert type(out) is dict and type(out["parts"]) is list and out["none"] is None
    assert_trees_close(out, expected)
    text = srctrans.source(j)
    assert "return l, (x, params_1)" in text
    assert "# returns {'loss': *, 'none': None, 'parts': [*, *]}" in text


def test_two_structures_get_two_files_and_a_repeat_reuses_its_file(m):
    g = srctrans.grad(m.by_key)
    small, big = {"w": X3}, {"w": X3, "unused": (X3, 1.0)}
    np.testing.assert_allclose(g(small, X3)["w"], X3)
    got = g(big, X3)
    np.testing.assert_allclose(got["w"], X3)
    np.testing.assert_allclose(got["unused"][0], 0.0)
    g(small, X3)
    paths = {spec.gen.path for spec in g._specs.values()}
    assert len(paths) == 2 and all(".tree-" in p.name and p.exists() for p in paths)
    assert all(p.name.startswith("treemodel.by_key.grad.tree-") for p in paths)


def test_a_container_after_an_array_call_gets_its_own_specialization(m):
    j = srctrans.jit(m.first_row)
    assert j(np.ones((2, 3)), X3) == pytest.approx(np.sum(X3))
    assert j(np.ones((2, 3)), X3) == pytest.approx(np.sum(X3))  # the compiled dispatcher's fast path
    assert j((2.0 * X3, X3), X3) == pytest.approx(2.0 * np.sum(X3 * X3))
    assert j([X3], X3) == pytest.approx(np.sum(X3 * X3))


def test_integer_leaves_refused_unless_allowed(m):
    params = {"W": np.ones((3, 2), dtype=np.int64), "b": np.zeros(2)}
    with pytest.raises(TypeError, match=r"with respect to 'params' requires float leaves, got int64 at params\['W'\]"):
        srctrans.grad(m.loss)(params, X43, Y42)
    g = srctrans.grad(m.loss, allow_int=True)(params, X43, Y42)
    assert set(g) == {"W", "b"}


def test_subclasses_of_containers_stay_whole_leaves(m, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    j = srctrans.jit(m.by_key)
    assert j(collections.OrderedDict(w=X3), X3) == pytest.approx(np.sum(X3 * X3))
    assert "def by_key(d, x):" in srctrans.source(j)


REFUSED = """
import numpy as np


def passed_whole(params, x):
    return np.sum(np.stack(params) * x)


def looped(params, x):
    s = 0.0
    for layer in params:
        s = s + np.sum(layer * x)
        if s > 1e300:
            break
    return s


def dynamic_index(params, x):
    s = 0.0
    for i in range(len(params)):
        s = s + np.sum(params[i] * x)
    return s


def written(params, x):
    params["W"] = x
    return np.sum(x)


def rebound(params, x):
    params = x
    return np.sum(params)


def missing_key(params, x):
    return np.sum(params["V"] * x)


def out_of_range(params, x):
    return np.sum(params[5] * x)


def dict_unpacked(params, x):
    W, b = params
    return np.sum(W * x)


def returned_whole(params, x):
    return params


def alias_reassigned(params, x):
    layer = params[0]
    layer = params[1]
    return np.sum(layer[0] * x)


def sliced(params, x):
    n = 1
    a = params[0:n]
    return np.sum(x)


def method_of_dict(params, x):
    return np.sum(params.get("W") * x)


def different_returns(params, x):
    if np.sum(x) > 0.0:
        return {"a": x}
    return {"b": x}
"""

DICT2 = {"W": np.ones(2), "b": np.ones(2)}
LIST2 = [np.ones(2), np.ones(2)]


@pytest.mark.parametrize(
    "name,arg,message,text",
    [
        ("passed_whole", DICT2, "passing params .* to a function is not supported", "params) * x"),
        ("looped", LIST2, r"looping over params \(a list of 2\)", "params:"),
        ("dynamic_index", LIST2, "params .* can only be indexed with a constant", "params[i]"),
        ("written", DICT2, r"writing into params\['W'\]", 'params["W"] = x'),
        ("rebound", DICT2, "assigning to params, a pytree argument", "params = x"),
        ("missing_key", DICT2, r"params has no key 'V'; its keys are \['W', 'b'\]", 'params["V"]'),
        ("out_of_range", LIST2, r"index 5 is out of range for params \(a list of 2\)", "params[5]"),
        ("dict_unpacked", DICT2, "unpacking params .* would give its keys", "W, b = params"),
        ("returned_whole", DICT2, "params .* is used as a whole", "params"),
        ("alias_reassigned", [LIST2, LIST2], "layer names params\\[0\\] .* assigned more than once", "layer = params[0]"),
        ("sliced", LIST2, r"params \(a list of 2\) can only be sliced with constants", "params[0:n]"),
        ("method_of_dict", DICT2, "params.get is not supported", "params.get"),
        ("different_returns", DICT2, "every return must give the same structure", 'return {"b": x}'),
    ],
)
def test_refused_uses_are_located(make_module, name, arg, message, text):
    """Refused for a differentiated argument, and under jit too when it holds a dict (Numba cannot take one)."""
    mod = make_module(REFUSED)
    lines = REFUSED.splitlines()
    for transform in (srctrans.jit, srctrans.grad) if isinstance(arg, dict) else (srctrans.grad,):
        with pytest.raises(srctrans.UnsupportedSyntaxError, match=message) as info:
            transform(getattr(mod, name))(arg, np.ones(2))
        err = info.value
        assert err.filename == mod.__file__
        assert text in lines[err.line - 1] and lines[err.line - 1].index(text) == err.col
        assert "^" in str(err) and err.hint


def test_tuples_and_lists_used_whole_are_passed_whole_unless_differentiated(make_module):
    mod = make_module(REFUSED + """

def reshaped(x, shape):
    return np.sum(np.reshape(x, shape)[0]) * shape[1]
""")
    looped = srctrans.jit(mod.looped)
    assert looped((X3, 2.0 * X3), X3) == pytest.approx(3.0 * np.sum(X3 * X3))
    assert "def looped(params, x):" in srctrans.source(looped)
    g = srctrans.grad(mod.looped, argnums=1)([X3, 2.0 * X3], X3)
    np.testing.assert_allclose(g, 3.0 * X3)
    reshaped = srctrans.jit(mod.reshaped)
    assert reshaped(np.arange(6.0), (2, 3)) == pytest.approx(9.0)
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="looping over params"):
        srctrans.grad(mod.looped)([X3, 2.0 * X3], X3)


def test_vjp_takes_a_cotangent_shaped_like_a_dict_or_list_result(make_module):
    mod = make_module(
        "import numpy as np\n\n"
        "def f(x, w):\n"
        "    return {'a': np.sin(x) * w, 'b': [x * x, w * 2.0]}\n"
    )
    x, w = np.array([0.3, 0.7]), 1.5
    out, vjp_fn = srctrans.vjp(mod.f, x, w)
    assert set(out) == {"a", "b"} and isinstance(out["b"], list)
    ct = {"a": np.array([1.0, 2.0]), "b": [np.array([0.5, -1.0]), 3.0]}
    gx, gw = vjp_fn(ct)
    np.testing.assert_allclose(gx, np.cos(x) * w * ct["a"] + 2 * x * ct["b"][0])
    np.testing.assert_allclose(gw, np.sum(np.sin(x) * ct["a"]) + 2.0 * 3.0)
    with pytest.raises(TypeError, match="cotangent must be a dict with keys"):
        vjp_fn({"a": np.ones(2)})
    with pytest.raises(TypeError, match=r"cotangent\['b'\] must be a list of 2"):
        vjp_fn({"a": np.ones(2), "b": [np.ones(2)]})
