"""``vmap`` composed with reverse mode, and keyword arguments of a vmapped function.

``grad`` of a function that calls a vmapped function: the adjoint of the batched call is
the vmap of the function's vjp (``batched.vjp`` in the generated file), the cotangents of
unbatched arguments summed over the batch; under ``jit(grad(...))`` the batched call is a loop
over the examples that reverse mode differentiates as any callee and Numba compiles
(:func:`srctrans.nested_calls.differentiable_loop`). Checked against central differences and
against stacking per-example results (JAX's oracle for vmap).
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.errors import UnsupportedSyntaxError

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

columns = srctrans.vmap(per_example_loss, in_axes=(None, 1, 0), out_axes=0)

def loss_columns(w, Xt, y):
    return np.sum(columns(w, Xt, y) * y)

def loss_twice(w, X, y):
    total = 0.0
    for k in range(2):
        v = w * (k + 1.0)
        total = total + np.sum(batched(v, X, y))
    return total

def make_closure():
    inner = srctrans.vmap(per_example_loss, in_axes=(None, 0, 0))

    def closure_loss(w, X, y):
        return np.sum(inner(w, X, y))

    return closure_loss

nested = srctrans.vmap(srctrans.vmap(per_example_loss, in_axes=(None, 0, 0)), in_axes=(None, 0, 0))

def loss_nested(w, X, y):
    return np.sum(nested(w, X, y))

def loss_keyword(w, X, y):
    return np.sum(batched(w, X, y=y))

inner_only = srctrans.vmap(per_example_loss, in_axes=(None, 0, 0))

def loss_inline_of_global(w, X, y):
    return np.sum(srctrans.vmap(inner_only, in_axes=(None, 0, 0))(w, X, y))
"""


def _data(n=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal(n)


def _differences(f, args, argnum, h=1e-6):
    x = np.asarray(args[argnum], dtype=float)
    out = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        a_up, a_down = list(args), list(args)
        a_up[argnum], a_down[argnum] = up, down
        out[idx] = (f(*a_up) - f(*a_down)) / (2 * h)
    return out


@pytest.fixture
def model(make_module, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    return make_module(MODEL)


@pytest.mark.parametrize("name", ["loss", "loss_inline", "loss_twice"])
def test_grad_of_a_function_calling_vmap_matches_differences(model, name):
    f = getattr(model, name)
    args = _data()
    gw, gX = srctrans.grad(f, argnums=(0, 1))(*args)
    np.testing.assert_allclose(gw, _differences(f, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gX, _differences(f, args, 1), rtol=1e-6, atol=1e-8)


def test_grad_through_vmap_equals_the_mean_of_per_example_gradients(model):
    w, X, y = _data(n=7)
    per_example = [srctrans.grad(model.per_example_loss)(w, X[i], y[i]) for i in range(7)]
    np.testing.assert_allclose(srctrans.grad(model.loss)(w, X, y), np.mean(per_example, axis=0), rtol=1e-12)


def test_grad_through_vmap_with_a_batch_axis_other_than_zero(model):
    w, X, y = _data()
    args = (w, np.ascontiguousarray(X.T), y)
    gw, gXt = srctrans.grad(model.loss_columns, argnums=(0, 1))(*args)
    assert gXt.shape == (3, 5)
    np.testing.assert_allclose(gw, _differences(model.loss_columns, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gXt, _differences(model.loss_columns, args, 1), rtol=1e-6, atol=1e-8)


def test_grad_through_a_vmapped_closure_value(model):
    f = model.make_closure()
    args = _data()
    np.testing.assert_allclose(srctrans.grad(f)(*args), _differences(f, args, 0), rtol=1e-6, atol=1e-8)


def test_the_adjoint_file_calls_the_vmap_of_the_vjp(model):
    g = srctrans.grad(model.loss)
    g(*_data())
    text = g.source()
    assert "t1 = batched(w, X, y)" in text
    # only w is differentiated: only its cotangent is asked for, summed over the batch by vjp
    assert "batched_w_bar, = batched.vjp((w, X, y), t1_bar, argnums=(0,))" in text


def test_the_compiled_adjoint_file_differentiates_a_loop_over_the_examples(model):
    g = srctrans.jit(srctrans.grad(model.loss))
    g(*_data())
    text = g.source()
    assert "t1 = batched(w, X, y)" in text
    assert "def batched(w, x, y):" in text and "def batched_vjp_w(w, x, y, out_bar):" in text
    assert "batched.vjp(" not in text


def test_a_vmap_made_in_the_function_goes_through_the_vjp_method(make_module):
    mod = make_module(MODEL + "\ndef loss_made(w, X, y):\n    b = srctrans.vmap(per_example_loss, in_axes=(None, 0, 0))\n"
                      "    return np.mean(b(w, X, y))\n")
    g = srctrans.grad(mod.loss_made)
    args = _data()
    np.testing.assert_allclose(g(*args), srctrans.grad(mod.loss)(*args), rtol=1e-12)
    assert "b_w_bar, = b.vjp((w, X, y), t1_bar, argnums=(0,))" in g.source()


def test_a_batch_of_zero_examples_gives_zero_gradients(model):
    w, X, y = _data(n=0)
    np.testing.assert_array_equal(srctrans.grad(lambda w: np.sum(model.batched(w, X, y)))(w), np.zeros(3))


def test_vjp_method_sums_unbatched_cotangents_and_stacks_batched_ones(model):
    w, X, y = _data()
    g = np.arange(5.0)
    bar_w, bar_X = model.batched.vjp((w, X, y), g, argnums=(0, 1))
    rows = [srctrans.vjp(model.per_example_loss, w, X[i], y[i])[1](g[i]) for i in range(5)]
    np.testing.assert_allclose(bar_w, sum(r[0] for r in rows), rtol=1e-12)
    np.testing.assert_allclose(bar_X, np.stack([r[1] for r in rows]), rtol=1e-12)


def test_grad_through_a_compiled_vmap(make_module):
    """grad (uncompiled) of a function calling jit(vmap(...)): the vmap of the vjp is compiled too."""
    mod = make_module(MODEL + "\ncompiled = srctrans.jit(batched)\n\ndef loss_compiled(w, X, y):\n"
                      "    return np.mean(compiled(w, X, y))\n")
    args = _data()
    expected = _differences(mod.loss_compiled, args, 0)
    np.testing.assert_allclose(srctrans.grad(mod.loss_compiled)(*args), expected, rtol=1e-6, atol=1e-8)
    assert mod.compiled._derived("vjp", (0,))._jit is not None


def test_jit_of_grad_through_vmap_compiles(model):
    srctrans.config.update("disable_jit", False)
    w, X, y = _data(n=7)
    per_example = [srctrans.grad(model.per_example_loss)(w, X[i], y[i]) for i in range(7)]
    for fn in (model.loss, model.loss_inline):
        np.testing.assert_allclose(srctrans.jit(srctrans.grad(fn))(w, X, y), np.mean(per_example, axis=0), rtol=1e-12)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", ["loss_nested", "loss_inline_of_global"])
def test_grad_and_jvp_through_a_nested_vmap_are_loops_of_loops(model, name, compiled):
    f = getattr(model, name)
    w, X, y = _data(n=6)
    X2, y2 = X.reshape((2, 3) + X.shape[1:]), y.reshape((2, 3) + y.shape[1:])
    g = srctrans.grad(f)
    got = (srctrans.jit(g) if compiled else g)(w, X2, y2)
    expected = _differences(f, (w, X2, y2), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    if not compiled:
        tangent = srctrans.jvp(f, (w, X2, y2), (np.ones_like(w), np.zeros_like(X2), np.zeros_like(y2)))[1]
        np.testing.assert_allclose(tangent, np.sum(expected), rtol=1e-6)


def test_grad_through_a_keyword_call_of_a_vmapped_function_is_refused(model):
    with pytest.raises(UnsupportedSyntaxError, match="keyword arguments"):
        srctrans.grad(model.loss_keyword)(*_data())


# --- keyword arguments: batched along axis 0, in_axes for the positional ones (JAX's rule) ---


def _stack(f, w, X, y):
    return np.stack([f(w, X[i], y[i]) for i in range(len(X))])


def test_keyword_arguments_are_batched_along_axis_zero(model):
    w, X, y = _data()
    expected = _stack(model.per_example_loss, w, X, y)
    only_w = srctrans.vmap(model.per_example_loss, in_axes=(None,))
    np.testing.assert_allclose(only_w(w, x=X, y=y), expected, rtol=1e-12)
    # in_axes=None applies to the positional arguments only; y by keyword is still batched
    np.testing.assert_allclose(srctrans.vmap(model.per_example_loss, in_axes=(None, 0))(w, X, y=y), expected)
    all_zero = srctrans.vmap(model.per_example_loss)
    np.testing.assert_allclose(all_zero(np.tile(w, (5, 1)), X, y=y), expected, rtol=1e-12)


def test_keyword_arguments_are_batched_even_when_in_axes_is_none(model):
    w, X, y = _data()
    f = srctrans.vmap(model.per_example_loss, in_axes=None)
    np.testing.assert_allclose(f(w, X[0], y=y), np.stack([model.per_example_loss(w, X[0], yi) for yi in y]))


def test_keyword_arguments_under_jit(model):
    srctrans.config.update("disable_jit", False)
    w, X, y = _data()
    f = srctrans.jit(srctrans.vmap(model.per_example_loss, in_axes=(None, 0)))
    np.testing.assert_allclose(f(w, X, y=y), _stack(model.per_example_loss, w, X, y), rtol=1e-12)


def test_keyword_argument_errors_name_the_argument(model):
    w, X, y = _data()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        model.batched(w, X, y=y, z=1.0)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        model.batched(w, X, x=X)
    with pytest.raises(TypeError, match="missing the argument 'y'"):
        model.batched(w, x=X)
    with pytest.raises(ValueError, match="in_axes has 3 entries .* 2 positional arguments"):
        model.batched(w, X, y=y)
    with pytest.raises(ValueError, match="different batch sizes"):
        srctrans.vmap(model.per_example_loss, in_axes=(None, 0))(w, X, y=y[:3])


def test_keyword_arguments_of_nested_vmaps_are_batched_at_every_level(model):
    rng = np.random.default_rng(3)
    W, X, y = rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal((2, 4))
    inner = srctrans.vmap(model.per_example_loss, in_axes=(None, 0))  # y, by keyword, batched
    outer = srctrans.vmap(inner, in_axes=(0, None))  # and batched again here
    expected = [[model.per_example_loss(W[i], X[j], y[i, j]) for j in range(4)] for i in range(2)]
    np.testing.assert_allclose(outer(W, X, y=y), expected, rtol=1e-12)
