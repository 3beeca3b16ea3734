"""Forward mode composed with the other transformations.

``jvp`` of a function that calls a vmapped function (its tangent is the vmap of the
function's tangent function, ``batched.jvp`` in the generated file); a function that calls
a ``srctrans.grad`` object, transformed through the grad's adjoint file (never the function
it differentiates); and ``grad`` of a function that calls ``srctrans.jvp`` (through the
tangent file of the function it is given, :mod:`srctrans.nested_calls`).
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.errors import CompileError, UnsupportedSyntaxError

MODEL = """
import numpy as np
import srctrans

def per_example_loss(w, x, y):
    p = np.tanh(np.dot(x, w))
    return (p - y) ** 2

batched = srctrans.vmap(per_example_loss, in_axes=(None, 0, 0))

def loss(w, X, y):
    return np.mean(batched(w, X, y))

def loss_inline(w, X, y):
    return np.mean(srctrans.vmap(per_example_loss, in_axes=(None, 0, 0))(w, X, y))

def f(x):
    return np.sum(np.sin(x) * x)

gf = srctrans.grad(f)
vgf = srctrans.value_and_grad(f)
gf_tuple = srctrans.grad(f, argnums=(0,))
v = np.array([1.0, 2.0, 0.5])

def calls_grad(x):
    return np.sum(gf(x) * v)

def calls_value_and_grad(x):
    value, g = vgf(x)
    return value + np.sum(g)

def calls_grad_tuple(x):
    (g,) = gf_tuple(x)
    return np.sum(g * v)

def directional(x):
    out, out_dot = srctrans.jvp(f, (x,), (v,))
    return out_dot
"""


def _data(n=5, d=3, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal(n)


def _along(f, args, tangents, h=1e-6):
    up = [a + h * t for a, t in zip(args, tangents)]
    down = [a - h * t for a, t in zip(args, tangents)]
    return (f(*up) - f(*down)) / (2 * h)


@pytest.fixture
def model(make_module, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    return make_module(MODEL)


@pytest.mark.parametrize("name", ["loss", "loss_inline"])
def test_jvp_of_a_function_calling_vmap_matches_differences(model, name):
    f = getattr(model, name)
    args = _data()
    rng = np.random.default_rng(2)
    for tangents in [
        (rng.standard_normal(3), np.zeros((5, 3)), np.zeros(5)),
        (rng.standard_normal(3), rng.standard_normal((5, 3)), rng.standard_normal(5)),
    ]:
        out, out_dot = srctrans.jvp(f, args, tangents)
        assert out == f(*args)
        np.testing.assert_allclose(out_dot, _along(f, args, tangents), rtol=1e-6, atol=1e-9)


def test_jvp_through_vmap_agrees_with_grad(model):
    args = _data()
    t = np.array([0.5, -1.0, 2.0])
    _, out_dot = srctrans.jvp(model.loss, args, (t, np.zeros((5, 3)), np.zeros(5)))
    np.testing.assert_allclose(out_dot, srctrans.grad(model.loss)(*args) @ t, rtol=1e-12)


def test_the_tangent_file_calls_the_vmap_of_the_tangent_function(model):
    from pathlib import Path

    from srctrans.nesting import tangent_function

    tangents_of_w = tangent_function(model.loss, 3, wrt=("w",))
    text = Path(tangents_of_w.__code__.co_filename).read_text()
    # X and y are held constant: None tangents, and only w's tangent function is batched
    assert "t1, t1_dot = batched.jvp((w, X, y), (w_dot, None, None))" in text
    np.testing.assert_allclose(tangents_of_w(*_data(), np.ones(3))[1], srctrans.grad(model.loss)(*_data()).sum())


def test_vmapped_jvp_holds_none_tangents_constant(model):
    w, X, y = _data()
    t = np.ones(3)
    out, out_dot = model.batched.jvp((w, X, y), (t, None, None))
    rows = [srctrans.jvp(model.per_example_loss, (w, X[i], y[i]), (t, np.zeros(3), 0.0)) for i in range(5)]
    np.testing.assert_allclose(out, [r[0] for r in rows], rtol=1e-12)
    np.testing.assert_allclose(out_dot, [r[1] for r in rows], rtol=1e-12)


def test_jvp_through_vmap_under_jit_refuses_with_the_line(model):
    srctrans.config.update("disable_jit", False)
    with pytest.raises(CompileError, match="batched"):
        srctrans.jvp(srctrans.jit(model.loss), _data(), (np.ones(3), np.zeros((5, 3)), np.zeros(5)))


# --- a function calling a srctrans.grad object: transformed through the grad's adjoint file ---


def _hvp(x, v):
    return (2 * np.cos(x) - x * np.sin(x)) * v  # the Hessian of sum(sin(x) * x) is diagonal


X0 = np.array([0.3, -1.2, 2.0])


@pytest.mark.parametrize("compiled", [False, True])
def test_a_function_calling_grad_runs_the_gradient(model, compiled):
    srctrans.config.update("disable_jit", not compiled)
    expected = np.sum((np.sin(X0) + X0 * np.cos(X0)) * model.v)
    assert np.isclose(model.calls_grad(X0), expected)
    assert np.isclose(srctrans.jit(model.calls_grad)(X0), expected)


def test_grad_of_a_function_calling_grad_is_a_hessian_vector_product(model):
    np.testing.assert_allclose(srctrans.grad(model.calls_grad)(X0), _hvp(X0, model.v), rtol=1e-12)


def test_jvp_of_a_function_calling_grad(model):
    _, out_dot = srctrans.jvp(model.calls_grad, (X0,), (model.v,))
    np.testing.assert_allclose(out_dot, _hvp(X0, model.v) @ model.v, rtol=1e-12)


def test_grad_of_a_function_calling_value_and_grad_is_refused(model):
    with pytest.raises(UnsupportedSyntaxError, match="vgf, a srctrans.grad"):
        srctrans.grad(model.calls_value_and_grad)(X0)


def test_a_grad_returning_a_tuple_of_one_runs_as_python_and_is_refused_by_grad(model):
    expected = np.sum((np.sin(X0) + X0 * np.cos(X0)) * model.v)
    assert np.isclose(model.calls_grad_tuple(X0), expected)
    with pytest.raises(UnsupportedSyntaxError, match="gf_tuple, a srctrans.grad"):
        srctrans.grad(model.calls_grad_tuple)(X0)


def test_grad_of_a_function_calling_jvp_is_a_hessian_vector_product(model):
    # the call of srctrans.jvp reads as a call of f's tangent file (srctrans.nested_calls)
    np.testing.assert_allclose(srctrans.grad(model.directional)(X0), _hvp(X0, model.v), rtol=1e-12)
    _, hvp = srctrans.jvp(model.gf, (X0,), (model.v,))  # the other nesting order agrees
    np.testing.assert_allclose(hvp, _hvp(X0, model.v), rtol=1e-12)


def test_jvp_of_a_function_calling_jvp(model):
    out, out_dot = srctrans.jvp(model.directional, (X0,), (model.v,))
    np.testing.assert_allclose(out, (np.sin(X0) + X0 * np.cos(X0)) @ model.v, rtol=1e-12)
    np.testing.assert_allclose(out_dot, _hvp(X0, model.v) @ model.v, rtol=1e-12)


def _scaled_sin(x, n):
    return np.sin(x) * n


def _directional(x):
    # an integer argument inside a nested jvp: its tangent is the integer 0
    return srctrans.jvp(_scaled_sin, (x, 3), (np.ones_like(x), 0))[1].sum()


def test_nested_jvp_with_an_integer_argument():
    x = np.array([0.2, 0.5])
    np.testing.assert_allclose(srctrans.grad(_directional)(x), -np.sin(x) * 3, rtol=1e-13)
    assert np.isclose(srctrans.jit(_directional)(x), np.sum(np.cos(x) * 3), rtol=1e-13)
