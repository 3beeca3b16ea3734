"""The forward-mode API: jvp, linearize, jacfwd/jacrev shapes and pytrees, custom_jvp,
compiled against uncompiled, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from ..functions.corpus import CORPUS, euler_ode


def f_vec(x, W):
    return np.tanh(W @ x) * x[0]


def test_jvp_matches_the_jacobian_product():
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal(3), rng.standard_normal((4, 3))
    u, U = rng.standard_normal(3), rng.standard_normal((4, 3))
    out, t = srctrans.jvp(f_vec, (x, W), (u, U))
    np.testing.assert_allclose(out, f_vec(x, W))
    Jx, JW = srctrans.jacrev(f_vec, argnums=(0, 1))(x, W)
    assert Jx.shape == (4, 3) and JW.shape == (4, 4, 3)
    np.testing.assert_allclose(t, Jx @ u + np.tensordot(JW, U, axes=2), rtol=1e-12)


def test_jvp_generated_file_names_tangents_and_keeps_comments():
    gen = srctrans.tangents.tangents_for(f_vec, ("x", "W"), False).runner._any_spec().gen
    text = gen.path.read_text()
    assert "def f_vec_jvp(x, W, x_dot, W_dot):" in text
    assert "# test_forward_api.py:" in text and "return np.tanh(W @ x) * x[0]" in text


def test_linearize():
    out, f_jvp = srctrans.linearize(euler_ode, 0.5, 1.0)
    assert out == pytest.approx(euler_ode(0.5, 1.0))
    assert f_jvp(1.0, 0.0) == pytest.approx(srctrans.grad(euler_ode)(0.5, 1.0), rel=1e-12)
    assert f_jvp(0.0, 2.0) == pytest.approx(2.0 * srctrans.grad(euler_ode, argnums=1)(0.5, 1.0), rel=1e-12)


def loss_tree(params, x):
    h = np.tanh(params["W"] @ x + params["b"])
    return {"sum": np.sum(h), "first": h[:2]}


def test_pytrees_in_and_out():
    rng = np.random.default_rng(1)
    params = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(3)}
    x = rng.standard_normal(2)
    dparams = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(3)}
    out, t = srctrans.jvp(loss_tree, (params, x), (dparams, np.zeros(2)))
    assert set(t) == {"sum", "first"} and t["first"].shape == (2,)
    fwd = srctrans.jacfwd(loss_tree)(params, x)
    rev = srctrans.jacrev(loss_tree)(params, x)
    assert fwd["first"]["W"].shape == (2, 3, 2) and fwd["sum"]["b"].shape == (3,)
    for key in ("sum", "first"):
        for leaf in ("W", "b"):
            np.testing.assert_allclose(fwd[key][leaf], rev[key][leaf], rtol=1e-12, atol=1e-14)
    expected = np.sum(fwd["first"]["W"] * dparams["W"], axis=(1, 2)) + fwd["first"]["b"] @ dparams["b"]
    np.testing.assert_allclose(t["first"], expected, rtol=1e-12)


def with_aux(x):
    y = np.sin(x)
    return y * 2.0, np.sum(y)


def test_has_aux():
    x = np.array([0.1, 0.2])
    out, t, aux = srctrans.jvp(with_aux, (x,), (np.ones(2),), has_aux=True)
    np.testing.assert_allclose(t, 2.0 * np.cos(x))
    assert aux == pytest.approx(np.sum(np.sin(x)))
    jac, aux2 = srctrans.jacfwd(with_aux, has_aux=True)(x)
    np.testing.assert_allclose(jac, np.diag(2.0 * np.cos(x)))
    jac_r, _ = srctrans.jacrev(with_aux, has_aux=True)(x)
    np.testing.assert_allclose(jac_r, jac)


@srctrans.custom_jvp
def clipped_identity(x):
    return x


@clipped_identity.defjvp
def clipped_identity_jvp(primals, tangents):
    (x,) = primals
    (t,) = tangents
    return x, np.clip(t, -1.0, 1.0)


def uses_custom(x):
    return clipped_identity(x * 3.0) + x


def test_custom_jvp_rule_is_used_and_grad_refuses_it():
    x = np.array([0.1, -0.2])
    _, t = srctrans.jvp(uses_custom, (x,), (np.array([1.0, 0.1]),))
    np.testing.assert_allclose(t, [1.0 + 1.0, 0.3 + 0.1])  # the rule clips 3.0 to 1.0
    assert uses_custom(x) == pytest.approx(4.0 * x)
    with pytest.raises(srctrans.NoDerivativeError, match="clipped_identity"):
        srctrans.grad(lambda x: np.sum(uses_custom(x)))(x)


def test_custom_jvp_compiles_and_batches_as_the_function_it_wraps():
    """jit and vmap call the wrapped function itself (jit failed to compile: Numba met the
    custom_jvp object); jvp still reads the rule."""
    xs = np.array([[0.1, -0.2], [0.5, 0.25], [1.0, 2.0]])
    want = np.stack([uses_custom(x) for x in xs])
    np.testing.assert_allclose(srctrans.jit(uses_custom)(xs[0]), want[0])
    np.testing.assert_allclose(srctrans.vmap(uses_custom)(xs), want)
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(uses_custom))(xs), want)
    _, t = srctrans.jvp(uses_custom, (xs[0],), (np.array([1.0, 0.1]),))
    np.testing.assert_allclose(t, [1.0 + 1.0, 0.3 + 0.1])


def test_integer_arguments_carry_no_tangent():
    def f(x, n):
        return x * n

    out, t = srctrans.jvp(f, (np.array([1.0, 2.0]), 3), (np.array([1.0, 1.0]), 0))
    np.testing.assert_allclose(t, [3.0, 3.0])
    with pytest.raises(ValueError, match="n is int64, which has no derivative"):
        srctrans.jvp(f, (np.array([1.0, 2.0]), 3), (np.array([1.0, 1.0]), 1))


@pytest.mark.parametrize(
    "tangents,error,match",
    [
        ((np.ones(3), np.ones((4, 3))), ValueError, r"tangent of x has shape \(3,\), its primal \(2,\)"),
        ((np.ones(2, dtype=np.float32), np.ones((4, 3))), TypeError, r"tangent of x has dtype float32"),
        (((np.ones(2),), np.ones((4, 3))), TypeError, r"tangent of argument 'x' has structure"),
        ((np.ones(2),), TypeError, r"1 tangents"),
        ([np.ones(2), np.ones((4, 3))], ValueError, r"tangent of W has shape"),
    ],
)
def test_bad_tangents_name_the_argument(tangents, error, match):
    x, W = np.ones(2), np.ones((4, 2))
    with pytest.raises(error, match=match):
        srctrans.jvp(f_vec, (x, W), tangents)


def test_bad_tangents_in_a_pytree_name_the_leaf():
    params = {"W": np.ones((3, 2)), "b": np.ones(3)}
    with pytest.raises(ValueError, match=r"params\['b'\]"):
        srctrans.jvp(loss_tree, (params, np.ones(2)), ({"W": np.ones((3, 2)), "b": np.ones(4)}, np.zeros(2)))
    with pytest.raises(TypeError, match="primals must be a tuple"):
        srctrans.jvp(f_vec, np.ones(2), (np.ones(2),))
    with pytest.raises(TypeError, match="jacfwd requires floating-point inputs"):
        srctrans.jacfwd(f_vec)(np.ones(2, dtype=int), np.ones((4, 2)))


def test_no_dead_tangent_code():
    def f(x, y):
        a = np.sin(x)
        b = np.cos(x) * 3.0  # never reaches the result
        c = a * y
        if np.sum(b) > 100.0:  # b decides, but carries no derivative to the result
            c = c * 2.0
        return c

    runner = srctrans.tangents.tangents_for(f, ("x",), False).runner
    text = runner._any_spec().gen.path.read_text()
    assert "a_dot" in text and "c_dot" in text
    assert "b_dot" not in text and "y_dot" not in text


# compiled: a few representative functions (a loop, a network, in-place writes, break and continue);
# tests/forward/test_second_order.py compiles the GMM objective's Hessian
COMPILED = ["euler_ode", "mlp", "trajectory_buffer", "while_break_continue"]


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPILED)
def test_compiled_tangent_file_equals_uncompiled(name):
    i = next(k for k, (fn, _) in enumerate(CORPUS) if fn.__name__ == name)
    fn, makers = CORPUS[i]
    rng = np.random.default_rng(1000 + i)
    args = tuple(make(rng) for make in makers)
    tangents = tuple(np.asarray(rng.standard_normal(np.shape(a))) if np.ndim(a) else float(rng.standard_normal()) for a in args)
    tangents = tuple(t if np.asarray(a).dtype.kind == "f" else np.zeros_like(a) for a, t in zip(args, tangents))
    expected = srctrans.jvp(fn, args, tangents)
    got = srctrans.jvp(srctrans.jit(fn), args, tangents)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-10, atol=1e-12)


def test_tangents_never_share_storage_the_values_do_not():
    def f(x):
        z = +x  # a new array, whose tangent would be x_dot itself
        x[0] = 5.0  # the caller's x changes, as the function says; z does not
        return z * x

    x, t = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    _, tz = srctrans.jvp(f, (x.copy(),), (t.copy(),))
    np.testing.assert_allclose(tz, [5.0 * 1.0 + 1.0 * 0.0, 2.0 + 2.0])
    np.testing.assert_allclose(t, [1.0, 1.0])  # the caller's tangent is untouched


def test_writing_into_a_view_is_refused():
    def f(x):
        v = x[1:]
        v[0] = x[0] * 2.0
        return x * 1.0

    with pytest.raises(srctrans.UnsupportedSyntaxError, match="a view of x"):
        srctrans.jvp(f, (np.array([1.0, 2.0, 3.0]),), (np.ones(3),))


@srctrans.custom_vjp
def vjp_only(x):
    return x * 2.0


vjp_only.defvjp(lambda x: (x * 2.0, None), lambda res, g: (2.0 * g,))


def calls_vjp_only(x):
    return vjp_only(x) + 1.0


def test_forward_mode_of_a_custom_vjp_is_refused_at_the_line():
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="custom_vjp.*forward-mode") as info:
        srctrans.jvp(calls_vjp_only, (np.ones(2),), (np.ones(2),))
    assert "test_forward_api.py" in str(info.value)


def stacks(x, flag):
    stack = []
    stack.append(x * 2.0)
    stack.append(x * 3.0)
    a = stack.pop()
    b = stack.pop()  # not needed when flag > 0: its tangent is still popped, in step
    if flag > 0.0:
        return a + np.sum(a)
    return np.sin(b)


def test_lists_used_as_stacks():
    x, t = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    assert srctrans.jvp(stacks, (x, 1.0), (t, 0.0))[1] == pytest.approx(3.0 * t + 3.0 * np.sum(t))
    assert srctrans.jvp(stacks, (x, -1.0), (t, 0.0))[1] == pytest.approx(2.0 * np.cos(2.0 * x) * t)


def _scaled_root(x, y, w):
    return np.sqrt(x) * y + np.sum(w * y)


@pytest.mark.parametrize("compiled", [False, True])
def test_all_zero_tangents_are_symbolic_zeros(compiled):
    f = srctrans.jit(_scaled_root) if compiled else _scaled_root
    x, y, w = 0.0, 2.0, np.array([0.5, -1.0])
    # sqrt's derivative is infinite at 0: computing with the zero tangent of x would give nan;
    # a zero tangent is not differentiated, as JAX does for a value the function closes over
    out, t = srctrans.jvp(f, (x, y, w), (0.0, 1.0, np.zeros(2)))
    assert out == 2.0 * 0.0 + np.sum(w * y) and t == np.sqrt(0.0) + np.sum(w)
    # the patterns of zeros alternate between calls (the fast path picks each pattern's file)
    x = 0.8
    for tangents in [(1.0, 0.0, np.zeros(2)), (0.0, 0.0, np.array([1.0, 2.0])), (1.0, -1.0, np.array([0.0, 3.0]))] * 2:
        tx, ty, tw = tangents
        expected = 0.5 / np.sqrt(x) * tx * y + np.sqrt(x) * ty + np.sum(tw * y) + np.sum(w * ty)
        assert np.isclose(srctrans.jvp(f, (x, y, w), tangents)[1], expected, rtol=1e-13)
    # nothing varies: the function's value and zeros shaped like it
    out, t = srctrans.jvp(f, (x, y, w), (0.0, 0.0, np.zeros(2)))
    assert out == _scaled_root(x, y, w) and t == 0.0
    # a nan tangent is not zero
    assert np.isnan(srctrans.jvp(f, (x, y, w), (np.nan, 0.0, np.zeros(2)))[1])


def _negative_base(x):
    return np.sum((-2) ** 2 * x)


def _update_through_a_view(x):
    y = x * 1.0
    a = y[1:]
    a += 1.0
    return np.sum(y * y)


def _mismatched(x, y):
    a = np.sin(x) * 2.0
    d = -x ** 2 + (x + y) ** 2
    return np.sum(d + a)


def test_a_parenthesized_negative_base_keeps_its_parentheses():
    # (-2) ** 2 is 4; written without its parentheses it would be -(2 ** 2)
    x = np.array([0.3, -0.7, 1.1])
    t = np.array([1.0, -0.5, 0.25])
    out, tangent = srctrans.jvp(_negative_base, (x,), (t,))
    assert np.isclose(out, 4 * np.sum(x)) and np.isclose(tangent, 4 * np.sum(t))
    np.testing.assert_allclose(srctrans.grad(_negative_base)(x), np.full(3, 4.0))
    np.testing.assert_allclose(srctrans.vmap(_negative_base)(np.stack([x, t])), [4 * np.sum(x), 4 * np.sum(t)])


@pytest.mark.parametrize("how", ["jvp", "grad"])
def test_an_update_through_a_view_is_refused_at_its_line(how):
    x = np.array([0.3, -0.7, 1.1])
    with pytest.raises(srctrans.UnsupportedSyntaxError, match=r"a \+= \.\.\. updates an array .*a view of another array"):
        if how == "jvp":
            srctrans.jvp(_update_through_a_view, (x,), (x,))
        else:
            srctrans.grad(_update_through_a_view)(x)


def test_an_error_in_an_inlined_line_names_that_line():
    # the tangent file inlines temporaries; each statement keeps the origin comment of its line
    with pytest.raises(ValueError) as info:
        srctrans.jvp(_mismatched, (np.ones(3), np.ones(2)), (np.ones(3), np.ones(2)))
    assert f"in your code: {__file__}:" in "\n".join(info.value.__notes__)
    assert "d = -x ** 2 + (x + y) ** 2" in "\n".join(info.value.__notes__)


def _carried_state(xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h * xs[t] + 1.0)
    return np.sum(h)


@pytest.mark.parametrize("compiled", [False, True])
def test_an_argument_not_differentiated_that_a_loop_makes_varying(compiled):
    """``h`` has no tangent (zero, dropped), but after one trip it depends on ``xs``."""
    rng = np.random.default_rng(5)
    xs, h, v = 0.5 * rng.standard_normal((4, 3)), 0.3 * rng.standard_normal(3), rng.standard_normal((4, 3))
    fn = srctrans.jit(_carried_state) if compiled else _carried_state
    out, t = srctrans.jvp(fn, (xs, h), (v, np.zeros(3)))
    eps = 1e-6
    numeric = (_carried_state(xs + eps * v, h) - _carried_state(xs - eps * v, h)) / (2 * eps)
    assert out == pytest.approx(_carried_state(xs, h), rel=1e-14)
    assert t == pytest.approx(numeric, rel=1e-7, abs=1e-9)
