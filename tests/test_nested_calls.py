"""Calls of srctrans transformations inside a transformed function (srctrans.nested_calls).

``srctrans.jvp(f, (x,), (v,))`` written inside a function becomes a call of ``f``'s tangent
file, ``srctrans.grad(f)(x)`` a call of the grad's adjoint file, ``srctrans.jit(f)(x)`` a
call of ``f``: grad, value_and_grad, jvp, vjp and jit of the function then read them as
ordinary callees (grad of a jvp, as JAX users write it). A call of a vmapped function
compiles under jit as a loop over the examples calling the function batched.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import srctrans
from srctrans.errors import UnsupportedSyntaxError

MODEL = """
import numpy as np
import srctrans
import srctrans as st
from srctrans import jvp, grad

def f(x):
    return np.sum(np.sin(x) * x) * x[0]

def f2(a, b):
    return np.sum(np.tanh(a * b) + a ** 2)

def helper(x, v):
    return jvp(f, (x,), (v,))[1]

gf = srctrans.grad(f)
vgf = srctrans.value_and_grad(f)

def directional(x, v):
    out, out_dot = srctrans.jvp(f, (x,), (v,))
    return out_dot

def directional_with_value(x, v):
    out, out_dot = st.jvp(f, [x], [v])
    return out * out_dot

def directional_two(a, b, ta, tb):
    out, out_dot = jvp(f2, (a, b), (ta, tb))
    return out_dot * out

def through_helper(x, v):
    return helper(x, v) + helper(2.0 * x, v)

def hvp_of_grad(x, v):
    g, g_dot = srctrans.jvp(gf, (x,), (v,))
    return np.sum(g_dot * v) + np.sum(g)

def hvp_of_inline_grad(x, v):
    g, g_dot = srctrans.jvp(srctrans.grad(f), (x,), (v,))
    return np.sum(g_dot)

def inline_grad(x, v):
    return np.sum(srctrans.grad(f)(x) * v)

def inline_grad_argnums(a, b):
    return np.sum(grad(f2, argnums=1)(a, b) ** 2)

def inline_jit(x, v):
    return srctrans.jit(f)(x * v)

def computed_function(x, v):
    g = f
    return srctrans.jvp(g, (x,), (v,))[1]

def primals_not_written(x, v):
    primals = (x,)
    return srctrans.jvp(f, primals, (v,))[1]

def with_aux(x, v):
    return srctrans.jvp(f, (x,), (v,), has_aux=True)[1]

def wrong_count(x, v):
    return srctrans.jvp(f2, (x,), (v,))[1]

def calls_vjp(x, v):
    out, pullback = srctrans.vjp(f, x)
    return np.sum(pullback(v)[0])

def inline_value_and_grad(x):
    value, g = srctrans.value_and_grad(f)(x)
    return value + np.sum(g)

def inline_value_and_grads_unpacked(x, v):
    value, (gx, gv) = srctrans.value_and_grad(f2, argnums=(0, 1))(x, v)
    return value + np.sum(gx * gv)

def inline_hessian(x):
    return np.sum(srctrans.hessian(f)(x))

lam = lambda x: np.sum(np.sin(x) * x) * x[0]

def via_lambda(x, v):
    return jvp(lam, (x,), (v,))[1]
"""

X = np.array([0.3, -1.2, 2.0])
V = np.array([1.0, 0.5, -0.7])
W = np.array([0.4, 0.1, -0.3])


@pytest.fixture
def model(make_module, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    return make_module(MODEL)


def _f(x):
    return np.sum(np.sin(x) * x) * x[0]


def _grad_f(x):
    g = (np.sin(x) + x * np.cos(x)) * x[0]
    g[0] += np.sum(np.sin(x) * x)
    return g


def _hess_f(x):
    """Hessian of sum(sin(x) * x) * x[0]."""
    s = np.sin(x) + x * np.cos(x)
    h = np.diag((2 * np.cos(x) - x * np.sin(x)) * x[0])
    h[0, :] += s
    h[:, 0] += s
    return h


def _numeric_grad(fn, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (fn(x + e) - fn(x - e)) / (2 * h)
    return out


# --- grad of a jvp -------------------------------------------------------------------------


def test_a_function_calling_jvp_runs_as_written(model):
    assert np.isclose(model.directional(X, V), _grad_f(X) @ V)


def test_grad_of_a_jvp_is_a_hessian_vector_product(model):
    g = srctrans.grad(model.directional)(X, V)
    np.testing.assert_allclose(g, _hess_f(X) @ V, rtol=1e-12)
    np.testing.assert_allclose(g, _numeric_grad(lambda x: model.directional(x, V), X), rtol=1e-7)


def test_grad_of_a_jvp_with_respect_to_the_tangent_is_the_gradient(model):
    np.testing.assert_allclose(srctrans.grad(model.directional, argnums=1)(X, V), _grad_f(X), rtol=1e-12)


def test_value_and_grad_of_a_jvp(model):
    value, g = srctrans.value_and_grad(model.directional_with_value, argnums=(0, 1))(X, V)
    fx, dfx = _f(X), _grad_f(X) @ V
    assert np.isclose(value, fx * dfx)
    np.testing.assert_allclose(g[0], dfx * _grad_f(X) + fx * (_hess_f(X) @ V), rtol=1e-12)
    np.testing.assert_allclose(g[1], fx * _grad_f(X), rtol=1e-12)


def test_jvp_of_a_jvp(model):
    out, out_dot = srctrans.jvp(model.directional, (X, V), (W, np.zeros(3)))
    assert np.isclose(out, _grad_f(X) @ V)
    assert np.isclose(out_dot, W @ _hess_f(X) @ V)


@pytest.mark.parametrize("name", ["directional", "directional_with_value", "through_helper", "hvp_of_grad"])
def test_derivatives_match_central_differences(model, name):
    srctrans.check_grads(getattr(model, name), (X, V), order=2, modes=("fwd", "rev"))


def test_two_arguments_flattened_in_order(model):
    a, b = X, V
    ta, tb = W, np.array([0.2, -0.1, 0.3])
    fn = model.directional_two
    args = (a, b, ta, tb)
    srctrans.check_grads(fn, args, order=1, modes=("fwd", "rev"))
    grads = srctrans.grad(fn, argnums=(0, 1, 2, 3))(*args)
    for k in range(4):
        def along(x, k=k):
            return fn(*args[:k], x, *args[k + 1:])

        np.testing.assert_allclose(grads[k], _numeric_grad(along, args[k]), rtol=1e-6, atol=1e-9)


def test_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def jf(x):
        return jnp.sum(jnp.sin(x) * x) * x[0]

    expected = jax.grad(lambda x, v: jax.jvp(jf, (x,), (v,))[1])(X, V)
    np.testing.assert_allclose(srctrans.grad(lambda x, v: srctrans.jvp(_f, (x,), (v,))[1])(X, V), expected, rtol=1e-12)


def test_the_generated_file_calls_the_tangent_function(model):
    text = srctrans.grad(model.directional).source()
    assert "def f_jvp(x, x_dot):" in text
    assert "t1 = f_jvp(x, v)" in text
    assert "srctrans.jvp(f, (x,), (v,))" in text  # the user's line, as the comment above
    assert "import srctrans\n" not in text


def test_jit_of_a_function_calling_jvp(model):
    srctrans.config.update("disable_jit", False)
    for name in ("directional", "through_helper", "hvp_of_grad", "inline_grad"):
        fn = getattr(model, name)
        assert np.isclose(srctrans.jit(fn)(X, V), fn(X, V), rtol=1e-13), name
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(model.directional))(X, V), _hess_f(X) @ V, rtol=1e-12)


def test_vmap_of_a_function_calling_jvp(model):
    xs = np.stack([X, 2 * X, -X])
    out = srctrans.vmap(model.directional, in_axes=(0, None))(xs, V)
    np.testing.assert_allclose(out, [_grad_f(x) @ V for x in xs], rtol=1e-12)


# --- a jvp of a grad, and grad written inline -------------------------------------------------


def test_jvp_of_a_lambda(model):
    np.testing.assert_allclose(srctrans.grad(model.via_lambda)(X, V), _hess_f(X) @ V, rtol=1e-12)
    assert "def fn_jvp(x, x_dot):" in srctrans.grad(model.via_lambda).source()


def test_jvp_of_a_grad_object_inside(model):
    expected = V @ _hess_f(X) @ V + np.sum(_grad_f(X))
    assert np.isclose(model.hvp_of_grad(X, V), expected)
    np.testing.assert_allclose(srctrans.grad(model.hvp_of_grad, argnums=1)(X, V), 2 * _hess_f(X) @ V, rtol=1e-12)


def test_jvp_of_an_inline_grad(model):
    assert np.isclose(srctrans.jit(model.hvp_of_inline_grad)(X, V), np.sum(_hess_f(X) @ V))


def test_inline_grad(model):
    assert np.isclose(srctrans.jit(model.inline_grad)(X, V), _grad_f(X) @ V)
    np.testing.assert_allclose(srctrans.grad(model.inline_grad)(X, V), _hess_f(X) @ V, rtol=1e-12)
    _, t = srctrans.jvp(model.inline_grad, (X, V), (W, np.zeros(3)))
    assert np.isclose(t, W @ _hess_f(X) @ V)


def test_inline_grad_with_argnums(model):
    a, b = X, V
    value = srctrans.jit(model.inline_grad_argnums)(a, b)
    db = a * (1 - np.tanh(a * b) ** 2)
    assert np.isclose(value, np.sum(db**2))
    srctrans.check_grads(model.inline_grad_argnums, (a, b), order=1, modes=("fwd", "rev"))


def test_inline_jit_calls_the_function(model):
    assert np.isclose(srctrans.jit(model.inline_jit)(X, V), _f(X * V))
    np.testing.assert_allclose(srctrans.grad(model.inline_jit)(X, V), _grad_f(X * V) * V, rtol=1e-12)


# --- refusals, located at the user's line ---------------------------------------------------


@pytest.mark.parametrize(
    "name, message",
    [
        ("computed_function", "must be known before the function runs"),
        ("primals_not_written", "primals and tangents written out as tuples"),
        ("with_aux", "has_aux is not supported yet"),
        ("wrong_count", "takes 2 arguments, got 1"),
        ("calls_vjp", "srctrans.vjp inside the function is not supported yet"),
        ("inline_hessian", "grad through srctrans.hessian"),
    ],
)
def test_what_cannot_be_read_is_refused_with_the_line(model, name, message):
    fn = getattr(model, name)
    args = (X, V) if name != "inline_hessian" else (X,)
    with pytest.raises(UnsupportedSyntaxError, match=message) as info:
        srctrans.grad(fn)(*args)
    assert info.value.line is not None
    assert "srctrans." in (info.value.source_line or "")


def test_an_inline_value_and_grad_is_a_call_of_the_adjoint_file(model):
    """It was refused; the adjoint file returns (value, gradient) as value_and_grad does."""
    fn = model.inline_value_and_grad
    want = fn(X)
    np.testing.assert_allclose(srctrans.jit(fn)(X), want, rtol=1e-13)
    numeric = np.array([(fn(X + 1e-6 * e) - fn(X - 1e-6 * e)) / 2e-6 for e in np.eye(X.size)])
    np.testing.assert_allclose(srctrans.grad(fn)(X), numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srctrans.jvp(fn, (X,), (V,))[1], numeric @ V, rtol=1e-6)
    assert "f_value_and_grad(x)" in srctrans.jit(fn).source()


def test_an_inline_value_and_grad_unpacked_into_a_nested_tuple(model):
    """``value, (gx, gv) = value_and_grad(f2, argnums=(0, 1))(x, v)``, as JAX users write it:
    it was refused ("unpack a differentiated value into plain names, one level deep")."""
    fn = model.inline_value_and_grads_unpacked
    want = fn(X, V)
    np.testing.assert_allclose(srctrans.jit(fn)(X, V), want, rtol=1e-13)
    for k in (0, 1):
        steps = np.eye(X.size) * 1e-6
        numeric = np.array([(fn(*[a + e if i == k else a for i, a in enumerate((X, V))]) -
                             fn(*[a - e if i == k else a for i, a in enumerate((X, V))])) / 2e-6 for e in steps])
        np.testing.assert_allclose(srctrans.grad(fn, argnums=k)(X, V), numeric, rtol=1e-6, atol=1e-8)
        tangents = (V, np.zeros(3)) if k == 0 else (np.zeros(3), V)
        np.testing.assert_allclose(srctrans.jvp(fn, (X, V), tangents)[1], numeric @ V, rtol=1e-6, atol=1e-8)


def test_a_refused_call_still_runs_uncompiled(model):
    assert np.isclose(srctrans.jit(model.primals_not_written)(X, V), _grad_f(X) @ V)


# --- jit of a function calling a vmapped function: a loop over the examples in the file ------

VMAP_MODEL = """
import numpy as np
import srctrans

def f(w, x):
    return np.tanh(w @ x)

def pair(w, x):
    y = w @ x
    return np.sin(y), np.sum(y * y)

def loss(w, x, y):
    return np.sum((np.tanh(w @ x) - y) ** 2)

bf = srctrans.vmap(f, in_axes=(None, 0))
by_columns = srctrans.vmap(f, in_axes=(None, 1), out_axes=1)
bpair = srctrans.vmap(pair, in_axes=(None, 0))
per_example_grads = srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0))
shared = srctrans.vmap(f, in_axes=(0, None), out_axes=-1)
unbatched_out = srctrans.vmap(f, in_axes=(None, 0), out_axes=None)
sines = srctrans.vmap(lambda x: np.sin(x) * x)

def g(w, xs):
    return bf(w, xs).sum()

def g_columns(w, xs):
    return by_columns(w, xs)

def g_pair(w, xs):
    s, q = bpair(w, xs)
    return np.sum(s) + np.sum(q)

def g_twice(w, xs):
    return g(w, xs) + np.sum(bf(w, 2.0 * xs)) + np.sum(f(w, xs[0]))

def g_grads(w, xs, ys):
    return per_example_grads(w, xs, ys)

def g_shared(ws, x):
    return shared(ws, x)

def g_unbatched(w, xs):
    return unbatched_out(w, xs)

def g_lambda(w, xs):
    return np.sum(sines(xs))
"""


@pytest.fixture
def vmodel(make_module):
    return make_module(VMAP_MODEL)


def _vdata(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 3))


@pytest.mark.parametrize("name", ["g", "g_pair", "g_twice", "g_lambda"])
def test_jit_of_a_call_of_a_vmapped_function(vmodel, name):
    w, xs, _ = _vdata()
    fn = getattr(vmodel, name)
    assert np.isclose(srctrans.jit(fn)(w, xs), fn(w, xs), rtol=1e-13)
    assert np.isclose(srctrans.jit(fn)(w, xs[:2]), fn(w, xs[:2]), rtol=1e-13)  # another batch size


def test_jit_honours_in_axes_and_out_axes(vmodel):
    w, xs, _ = _vdata()
    out = srctrans.jit(vmodel.g_columns)(w, xs.T)
    assert out.shape == (3, 5)
    np.testing.assert_allclose(out, vmodel.g_columns(w, xs.T), rtol=1e-13)
    np.testing.assert_allclose(out, np.tanh(w @ xs.T), rtol=1e-13)
    ws = np.stack([w, 2 * w])
    out = srctrans.jit(vmodel.g_shared)(ws, xs[0])
    np.testing.assert_allclose(out, np.stack([np.tanh(w @ xs[0]), np.tanh(2 * w @ xs[0])], axis=-1), rtol=1e-13)


def test_jit_of_a_call_of_a_vmapped_grad(vmodel):
    w, xs, ys = _vdata()
    out = srctrans.jit(vmodel.g_grads)(w, xs, ys)
    expected = [srctrans.grad(vmodel.loss)(w, x, y) for x, y in zip(xs, ys)]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_the_jit_file_holds_the_loop(vmodel):
    text = srctrans.jit(vmodel.g_columns).source()
    assert "def by_columns(w, x):" in text
    assert "x = np.ascontiguousarray(np.moveaxis(x, 1, 0))" in text
    assert "np.moveaxis(out_batch, 0, 1)" in text
    assert "by_columns = srctrans.vmap(f, in_axes=(None, 1))" in text


def test_a_changed_vmap_regenerates_the_jit_file(make_module):
    mod = make_module(VMAP_MODEL)
    w, xs, _ = _vdata()
    first = srctrans.jit(mod.g)(w, xs)
    mod.bf = srctrans.vmap(mod.f, in_axes=(None, 1))  # the same function, other axes
    second = srctrans.jit(mod.g)(w, xs.T)
    assert np.isclose(first, second, rtol=1e-13)
    assert "in_axes=(None, 1)" in srctrans.jit(mod.g).source()


def test_out_axes_none_is_refused_at_the_call(vmodel):
    w, xs, _ = _vdata()
    with pytest.raises(UnsupportedSyntaxError, match=r"vmapped unbatched_out inside a compiled function: out_axes=None") as err:
        srctrans.jit(vmodel.g_unbatched)(w, xs)
    assert err.value.line is not None and "return unbatched_out(w, xs)" in err.value.source_line
    assert "out_axes=0" in str(err.value)  # what to write instead


NOT_LOOPED = """
import numpy as np
import srctrans

def h(w, x):
    return np.tanh(w @ x)

def hp(p, x):
    return np.tanh(p["w"] @ x)

def centered(x):
    return x - srctrans.pmean(x, "i")

nest = srctrans.vmap(srctrans.vmap(h, in_axes=(None, 0)), in_axes=(None, 0))
by_dict = srctrans.vmap(hp, in_axes=({"w": None}, 0))
named = srctrans.vmap(centered, axis_name="i")

def g_nest(w, xss):
    return np.sum(nest(w, xss))

def g_dict(w, xs):
    return np.sum(by_dict({"w": w}, xs))

def g_named(xs):
    return np.sum(named(xs))

def g_inline(w, xs):
    return np.sum(srctrans.vmap(h, (None, 1), 1)(w, xs))
"""


@pytest.mark.parametrize("name, option", [("g_dict", "in_axes=({'w': None}, 0)"), ("g_named", "axis_name='i'")])
def test_what_a_compiled_loop_cannot_do_is_refused_naming_the_option(make_module, name, option):
    mod = make_module(NOT_LOOPED)
    w, xs, _ = _vdata()
    args = {"g_nest": (w, xs[None]), "g_dict": (w, xs), "g_named": (xs,)}[name]
    np.asarray(getattr(mod, name)(*args))  # uncompiled, it runs
    with pytest.raises(UnsupportedSyntaxError, match=re.escape(option)) as err:
        srctrans.jit(getattr(mod, name))(*args)
    assert err.value.line == next(i for i, t in enumerate(NOT_LOOPED.splitlines(), 1) if f"def {name}(" in t) + 1


def test_a_nest_of_vmaps_compiles_as_loops_of_loops(make_module):
    mod = make_module(NOT_LOOPED)
    w, xs, _ = _vdata()
    xss = np.stack([xs, 2.0 * xs])
    want = sum(np.sum(mod.h(w, x)) for x in xss.reshape(-1, xs.shape[-1]))
    assert np.isclose(srctrans.jit(mod.g_nest)(w, xss), want, rtol=1e-13)
    assert np.isclose(mod.g_nest(w, xss), want, rtol=1e-13)


def test_the_seeds_pairwise_distances_inside_a_compiled_function(make_module):
    mod = make_module("""
import numpy as np
import srctrans

def l1_distance(x, y):
    return np.sum(np.abs(x - y))

def pairwise(xs):
    return srctrans.vmap(srctrans.vmap(l1_distance, (0, None)), (None, 0))(xs, xs)
""")
    xs = np.random.default_rng(3).standard_normal((100, 3))
    want = np.sum(np.abs(xs[None, :, :] - xs[:, None, :]), axis=-1)
    np.testing.assert_allclose(srctrans.jit(mod.pairwise)(xs), want, rtol=1e-13)
    np.testing.assert_allclose(mod.pairwise(xs), want, rtol=1e-13)


def test_jit_of_a_vmap_made_in_the_call(make_module):
    mod = make_module(NOT_LOOPED)
    w, xs, _ = _vdata()
    got = srctrans.jit(mod.g_inline)(w, xs.T)
    assert np.isclose(got, sum(np.sum(mod.h(w, x)) for x in xs), rtol=1e-13)
    assert "def h_batched(w, x):" in srctrans.jit(mod.g_inline).source()


def test_grad_and_jvp_of_a_call_of_a_vmapped_function_keep_their_route(vmodel, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    w, xs, _ = _vdata()
    g = srctrans.grad(vmodel.g)(w, xs)
    np.testing.assert_allclose(g, (1 - np.tanh(xs @ w.T) ** 2).T @ xs, rtol=1e-12)
    assert "bf.vjp(" in srctrans.grad(vmodel.g).source()  # uncompiled: the vmap of the vjp (vectorized)
    text = srctrans.jit(srctrans.grad(vmodel.g)).source()  # compiled: a loop, differentiated
    assert "def bf(w, x):" in text and "def bf_vjp_w(" in text and "bf.vjp(" not in text


GRAD_MODEL = """
import numpy as np
import srctrans

def h(w, x):
    return np.tanh(w @ x)

def two(w, x):
    y = w @ x
    return np.sin(y), np.sum(y * y)

hv = srctrans.vmap(h, in_axes=(None, 0))
by_columns = srctrans.vmap(h, in_axes=(None, 1), out_axes=1)
twos = srctrans.vmap(two, in_axes=(None, 0))

def g_global(w, xs):
    return np.sum(hv(w, xs))

def g_inline(w, xs):
    return np.sum(srctrans.vmap(h, in_axes=(None, 0))(w, xs))

def g_columns(w, xs):
    return np.sum(by_columns(w, xs.T) ** 2)

def g_two(w, xs):
    s, q = twos(w, xs)
    return np.sum(s) + np.sum(q)

def per_example_sum(w, xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s = s + np.sum(h(w, xs[i]))
    return s

def per_example_squares(w, xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s = s + np.sum(h(w, xs[i]) ** 2)
    return s
"""


@pytest.mark.parametrize("name, oracle", [
    ("g_global", "per_example_sum"), ("g_inline", "per_example_sum"), ("g_columns", "per_example_squares"),
])
def test_grad_and_jit_grad_of_a_call_of_a_vmapped_function(make_module, name, oracle):
    mod = make_module(GRAD_MODEL)
    w, xs, _ = _vdata(3)
    want = srctrans.grad(getattr(mod, oracle))(w, xs)
    fn = getattr(mod, name)
    np.testing.assert_allclose(srctrans.grad(fn)(w, xs), want, rtol=1e-12, atol=1e-12)
    compiled = srctrans.jit(srctrans.grad(fn))
    np.testing.assert_allclose(compiled(w, xs), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled(w, xs[:2]), srctrans.grad(getattr(mod, oracle))(w, xs[:2]), rtol=1e-12, atol=1e-12)


def test_grad_through_an_empty_batch_and_of_several_outputs(make_module):
    mod = make_module(GRAD_MODEL)
    w, xs, _ = _vdata(4)
    np.testing.assert_array_equal(srctrans.grad(mod.g_global)(w, xs[:0]), np.zeros_like(w))
    # several outputs: one loop function per output, each unpacking the example's tuple
    y = xs @ w.T
    want = (np.cos(y) + 2.0 * y).T @ xs
    np.testing.assert_allclose(srctrans.grad(mod.g_two)(w, xs), want, rtol=1e-12)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(mod.g_two))(w, xs), want, rtol=1e-12)
    assert "def twos_output1(w, x):" in srctrans.jit(srctrans.grad(mod.g_two)).source()


def test_a_jvp_of_a_jvp_inside_matches_jax(make_module):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    mod = make_module(MODEL + '''
def second(x, v, w):
    return jvp(helper, (x, v), (w, np.zeros_like(v)))[1]

def make(v, fn):
    def h(x):
        return jvp(fn, (x,), (v,))[1]
    return h
''')

    def jf(x):
        return jnp.sum(jnp.sin(x) * x) * x[0]

    def jsecond(x, v, w):
        return jax.jvp(lambda x, v: jax.jvp(jf, (x,), (v,))[1], (x, v), (w, jnp.zeros_like(v)))[1]

    np.testing.assert_allclose(srctrans.grad(mod.second)(X, V, W), jax.grad(jsecond)(X, V, W), rtol=1e-12)
    assert np.isclose(srctrans.jit(mod.second)(X, V, W), W @ _hess_f(X) @ V)
    closure = mod.make(V, mod.f)  # the function and the tangent: closure values
    np.testing.assert_allclose(srctrans.grad(closure)(X), _hess_f(X) @ V, rtol=1e-12)


# --- jit(vmap(f)) where f calls vmapped functions: the compiled vmap file holds their loops ----

VMAP_INSIDE = """
import numpy as np
import srctrans

def l1(x, y):
    return np.sum(np.abs(x - y))

def inline(xs, y):
    d = srctrans.vmap(l1, in_axes=(0, None))(xs, y)
    return np.sum(d * d)

by_rows = srctrans.vmap(l1, in_axes=(0, None))

def through_a_global(xs, y):
    return np.sum(np.sin(by_rows(xs, y)))

def helper(xs, y):
    return srctrans.vmap(l1, in_axes=(0, None))(xs, y)

def through_a_helper(xs, y):
    return np.sum(helper(xs, y) ** 2)
"""


def _pairs(seed=4):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((5, 3)), rng.standard_normal((4, 3))


@pytest.mark.parametrize("method", ["auto", "loop"])
@pytest.mark.parametrize("name", ["inline", "through_a_global", "through_a_helper"])
def test_jit_of_a_vmap_of_a_function_calling_vmap(make_module, name, method):
    """It failed to compile (Numba met ``srctrans.vmap`` in the file); now its loops are in the file."""
    mod = make_module(VMAP_INSIDE)
    fn = getattr(mod, name)
    xs, ys = _pairs()
    want = np.stack([fn(xs, y) for y in ys])
    batched = srctrans.vmap(fn, in_axes=(None, 0), method=method)
    np.testing.assert_allclose(srctrans.jit(batched)(xs, ys), want, rtol=1e-13)
    np.testing.assert_allclose(batched(xs, ys), want, rtol=1e-13)  # uncompiled: the vmap called at run time
    assert srctrans.jit(batched)(xs, ys[:0]).shape == (0,)


def test_jit_of_a_vmap_of_a_grad_of_a_function_calling_vmap(make_module):
    mod = make_module(VMAP_INSIDE)
    xs, ys = _pairs()
    per_example = srctrans.jit(srctrans.vmap(srctrans.grad(mod.inline), in_axes=(None, 0)))
    got = per_example(xs, ys)
    want = np.stack([srctrans.grad(mod.inline)(xs, y) for y in ys])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    eps = 1e-6
    for k, y in enumerate(ys[:2]):  # and central differences, element by element
        numeric = np.zeros_like(xs)
        for idx in np.ndindex(xs.shape):
            up, down = xs.copy(), xs.copy()
            up[idx] += eps
            down[idx] -= eps
            numeric[idx] = (mod.inline(up, y) - mod.inline(down, y)) / (2 * eps)
        np.testing.assert_allclose(got[k], numeric, rtol=1e-6, atol=1e-8)


CUSTOM_INSIDE = """
import numpy as np
import srctrans

@srctrans.custom_vjp
def clipped(x):
    return x * 1.0

def clipped_fwd(x):
    return x * 1.0, 0.0

def clipped_bwd(res, g):
    return (np.clip(g, -1.0, 1.0),)

clipped.defvjp(clipped_fwd, clipped_bwd)

def f(x):
    return np.sum(clipped(x) * 10.0)

def value_only(x):
    v, g = srctrans.value_and_grad(f)(x)
    return v
"""


def test_an_inline_value_and_grad_keeps_the_custom_rule_of_the_value(make_module):
    """Differentiated, the value is a call of f itself, whose custom_vjp gives its derivative (the
    adjoint file's forward pass gave the plain derivative, 10 where the rule says 1). Refused is
    acceptable; the plain derivative is not."""
    mod = make_module(CUSTOM_INSIDE)
    x = np.array([0.5, -2.0, 3.0])
    try:
        got = srctrans.grad(mod.value_only)(x)
    except srctrans.SrcTransError:
        return
    np.testing.assert_allclose(got, srctrans.grad(mod.f)(x))
