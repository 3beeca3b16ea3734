"""The reverse-mode API: argnums, has_aux, value_and_grad, vjp, custom_vjp, stop_gradient, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import srctrans
from srctrans.cache import readable_name

from .conftest import module_from_text

MODEL = """
import numpy as np
import srctrans


def loss(w, x, n):
    total = 0.0
    for i in range(n):
        total = total + np.sum(np.tanh(w * x) ** 2) * (i + 1)
    return total


def with_aux(w, x):
    y = np.sin(w) * x
    return np.sum(y), y


def vector_out(x):
    return np.sin(x) * 2.0


def tanh_by_exp(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


@srctrans.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, 0.0


def clip_bwd(res, g):
    return (np.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def clipped(x):
    return np.sum(clip_gradient(x) * 10.0)


def stopped(x):
    return np.sum(srctrans.stop_gradient(x) * x)


def _identity_impl(x):
    return x * 1.0


clip_named_twice = srctrans.custom_vjp(_identity_impl)  # and called by its own name too
clip_named_twice.defvjp(clip_fwd, clip_bwd)


def custom_and_its_function(x):
    return np.sum(clip_named_twice(x) * 10.0 + _identity_impl(x) * 3.0)


def _cube(x):
    return x * x * x


cubed = _cube


def one_function_two_names(x):
    return np.sum(cubed(x) + np.sin(_cube(x)) * 3.0)


from srctrans import stop_gradient as frozen  # noqa: E402


def stopped_by_another_name(w, x):
    return np.sum(frozen(w) * x) + np.sum(w * x)


def no_rule(x):
    return np.sum(np.fft.fft(x).real)


def index_after_break(x):
    y = x
    for i in range(5):
        y = y * 2.0
        if y > 3.0:
            break
    return y * i


def write_through_alias(x):
    y = np.zeros(3)
    z = y
    z[0] = x
    return np.sum(y * x)
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("gradapi"), "gradmodel", MODEL) as module:
        yield module


def test_seed_example_tanh(m):
    assert srctrans.grad(m.tanh_by_exp)(1.0) == pytest.approx(0.4199743, abs=1e-7)


def test_argnums_int_and_tuple(m):
    w, x = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    gw = srctrans.grad(m.loss)(w, x, 3)
    gw2, gx = srctrans.grad(m.loss, argnums=(0, 1))(w, x, 3)
    np.testing.assert_allclose(gw, gw2)
    assert gx.shape == x.shape
    (only,) = srctrans.grad(m.loss, argnums=(1,))(w, x, 3)
    np.testing.assert_allclose(only, gx)
    srctrans.check_grads(lambda w, x: m.loss(w, x, 3), (w, x), order=1) if False else None


def test_value_and_grad_and_has_aux(m):
    w, x = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    value, g = srctrans.value_and_grad(m.loss)(w, x, 2)
    assert value == pytest.approx(m.loss(w, x, 2))
    (value, aux), g2 = srctrans.value_and_grad(m.with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(aux, np.sin(w) * x)
    g3, aux3 = srctrans.grad(m.with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(g3, np.cos(w) * x)
    np.testing.assert_allclose(g2, g3)


def test_vjp_of_a_vector_function(m):
    x = np.array([0.1, 0.5, 1.0])
    out, vjp_fn = srctrans.vjp(m.vector_out, x)
    np.testing.assert_allclose(out, m.vector_out(x))
    (ct,) = vjp_fn(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(ct, np.array([1.0, 0.0, 2.0]) * 2.0 * np.cos(x))


def test_custom_vjp_and_stop_gradient(m):
    x = np.array([0.5, -2.0])
    np.testing.assert_allclose(srctrans.grad(m.clipped)(x), [1.0, 1.0])  # clip(10, -1, 1)
    np.testing.assert_allclose(srctrans.grad(m.stopped)(x), x)
    assert m.clip_gradient(3.0) == 3.0


def test_a_custom_vjp_compiles_and_batches_as_the_function_it_wraps(m):
    """jit and vmap call the wrapped function itself (jit failed to compile: Numba met the
    custom_vjp object); grad, compiled or not, still reads the rule."""
    xs = np.array([[0.5, -2.0], [1.0, 3.0]])
    assert srctrans.jit(m.clipped)(xs[0]) == pytest.approx(m.clipped(xs[0]))
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(m.clipped))(xs), [m.clipped(x) for x in xs])
    np.testing.assert_allclose(srctrans.vmap(m.clipped)(xs), [m.clipped(x) for x in xs])
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(m.clipped))(xs[0]), [1.0, 1.0])  # the rule clips 10 to 1
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(srctrans.grad(m.clipped)))(xs), np.ones((2, 2)))


def test_one_function_called_by_two_names(m):
    """``cubed = _cube`` and both names called: the file wrote one def and left the other name
    undefined (NameError when compiled). Now every call uses the def's name."""
    x, xs = np.array([0.5, -1.25]), np.array([[0.5, -1.25], [0.75, 0.2], [-0.3, 1.1]])
    f = m.one_function_two_names
    assert srctrans.jit(f)(x) == pytest.approx(f(x))
    expected = 3 * x**2 + np.cos(x**3) * 9.0 * x**2
    np.testing.assert_allclose(srctrans.grad(f)(x), expected)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(x), expected)
    np.testing.assert_allclose(srctrans.jvp(f, (x,), (np.ones(2),))[1], expected.sum())
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(f))(xs), [f(r) for r in xs])
    assert "    return np.sum(cubed(x) + np.sin(cubed(x)) * 3.0)" in srctrans.jit(f).source().splitlines()


def test_custom_vjp_and_the_function_it_wraps_both_called(m):
    """jit and vmap write the wrapped function once, under the first name met; grad reads the
    rule for one name and differentiates the other."""
    x, xs = np.array([0.5, -2.0]), np.array([[0.5, -2.0], [1.0, 3.0]])
    f = m.custom_and_its_function
    assert srctrans.jit(f)(x) == pytest.approx(f(x))
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(f))(xs), [f(r) for r in xs])
    np.testing.assert_allclose(srctrans.grad(f)(x), [1.0 + 3.0, 1.0 + 3.0])  # the rule clips 10 to 1, plus 3
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(x), [4.0, 4.0])


def test_stop_gradient_compiles(m):
    """It failed to compile (Numba met the module attribute srctrans.stop_gradient)."""
    x, w, xs = np.array([0.5, -2.0]), np.array([1.5, 0.25]), np.array([[0.5, -2.0], [1.0, 3.0], [0.0, 0.5]])
    assert srctrans.jit(m.stopped)(x) == pytest.approx(m.stopped(x))
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(m.stopped))(x), x)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(m.stopped_by_another_name))(w, x), x)
    per_example = srctrans.jit(srctrans.vmap(srctrans.grad(m.stopped_by_another_name), in_axes=(None, 0)))
    np.testing.assert_allclose(per_example(w, xs), xs)
    batched = srctrans.jit(srctrans.vmap(m.stopped_by_another_name, in_axes=(None, 0)))
    np.testing.assert_allclose(batched(w, xs), [m.stopped_by_another_name(w, r) for r in xs])


def test_non_scalar_output_is_refused(m):
    with pytest.raises(TypeError, match="grad requires a scalar output, got an array of shape \\(3,\\)"):
        srctrans.grad(m.vector_out)(np.ones(3))


def test_argnums_out_of_range(m):
    with pytest.raises(ValueError, match="argnums=3 is out of range for loss, which takes 3 arguments"):
        srctrans.grad(m.loss, argnums=3)


def test_integer_argument_refused_unless_allowed(m):
    with pytest.raises(TypeError, match="with respect to 'x' requires a float argument, got int64"):
        srctrans.grad(m.vector_out)(np.arange(3))
    with pytest.raises(TypeError, match="requires a float argument"):
        srctrans.grad(m.tanh_by_exp)(1)
    assert srctrans.grad(m.tanh_by_exp, allow_int=True)(1) == pytest.approx(0.4199743, abs=1e-7)


def test_compiled_grad_checks_arguments_after_its_first_calls(m):
    # later calls of a compiled grad go straight to the compiled function when the
    # arguments are plain floats; anything else still takes the checked path
    g = srctrans.jit(srctrans.grad(m.loss, argnums=(0, 1)))
    w, x = np.array([0.1, 0.2, 0.3]), np.ones(3)
    first = g(w, x, 3)
    again = g(w, x, 3)
    for a, c in zip(first, again):
        np.testing.assert_array_equal(a, c)
    with pytest.raises(TypeError, match="with respect to 'w' requires a float argument, got int64"):
        g(np.ones(3, dtype=np.int64), x, 3)
    with pytest.raises(TypeError, match="with respect to 'x' requires a float argument"):
        g(w, 1, 3)
    np.testing.assert_array_equal(g(w, x, np.int64(3))[0], first[0])  # not a plain int: the checked path


def test_operation_without_rule_is_named_and_located(m):
    with pytest.raises(srctrans.NoDerivativeError, match="no derivative rule for numpy.fft") as info:
        srctrans.grad(m.no_rule)(np.ones(4))
    assert info.value.line == MODEL.splitlines().index("    return np.sum(np.fft.fft(x).real)") + 1
    assert "custom_vjp" in str(info.value)


@pytest.mark.parametrize("fn,message", [("index_after_break", "loop variable 'i' is read after a loop that breaks"), ("write_through_alias", "writing into z, which another name also refers to")])
def test_unsupported_constructs_refused_with_location(m, fn, message):
    with pytest.raises(srctrans.UnsupportedSyntaxError, match=message) as info:
        srctrans.grad(getattr(m, fn))(1.0)
    assert info.value.filename == m.__file__ and info.value.line is not None


def test_repr_and_source_of_grad(m):
    g = srctrans.grad(m.tanh_by_exp)
    g(0.5)
    assert repr(g).startswith("<srctrans.grad tanh_by_exp -> ")
    assert readable_name(srctrans.source_path(g)) == "gradmodel.tanh_by_exp.grad.py"
    assert "def tanh_by_exp_grad(x):" in srctrans.source(g)


REFUSED = """
import numpy as np


def loop_over_array(x):
    s = 0.0
    for v in reversed(x):
        s = s + v * v
    return s


def loop_variable_clash(x):
    i = x * 2.0
    for i in range(3):
        pass
    return i * x


def aliased_update(x):
    y = x
    y *= 2.0
    return np.sum(y * x)


def carried_from_earlier_iteration(x):
    s = 0.0
    for i in range(3):
        if i > 0:
            s = s + p * x
        p = x * i
    return s
"""


@pytest.mark.parametrize(
    "name,message",
    [
        ("loop_over_array", "looping over a differentiated array"),
        ("loop_variable_clash", "the loop variable 'i' also holds a differentiated value"),
        ("aliased_update", "updates an array another name also refers to"),
        ("carried_from_earlier_iteration", "'p' is read in a loop iteration before the loop assigns it"),
    ],
)
def test_constructs_that_would_give_wrong_gradients_are_refused(make_module, name, message):
    mod = make_module(REFUSED)
    arg = np.array([1.0, 2.0]) if name in ("loop_over_array", "aliased_update") else 0.7
    with pytest.raises(srctrans.UnsupportedSyntaxError, match=message) as info:
        srctrans.grad(getattr(mod, name))(arg)
    assert info.value.filename == mod.__file__


def test_grad_of_a_numpy_function_itself():
    import math

    assert srctrans.grad(np.sin)(1.0) == pytest.approx(np.cos(1.0))
    assert srctrans.grad(srctrans.grad(np.tanh))(1.0) == pytest.approx(-0.6396999, abs=2e-7)
    np.testing.assert_allclose(srctrans.grad(np.sum)(np.ones(3)), np.ones(3))
    assert srctrans.jit(srctrans.grad(math.exp))(1.0) == pytest.approx(math.e)
    with pytest.raises(TypeError, match="derivative rule for"):
        srctrans.grad(np.fft.fft)


def test_grad_of_grad_to_third_order_and_its_limits(m):
    d3 = srctrans.grad(srctrans.grad(srctrans.grad(m.tanh_by_exp)))
    t = np.tanh(1.0)
    assert d3(1.0) == pytest.approx(-2.0 * (1.0 - t * t) * (1.0 - 3.0 * t * t), rel=1e-9)
    with pytest.raises(TypeError, match="value_and_grad returns a pair"):
        srctrans.grad(srctrans.value_and_grad(m.tanh_by_exp))


TUPLES = """
import numpy as np


def stacked(x, y):
    return np.sum(np.stack((x, y * y), axis=0) ** 2)


def joined(x, y):
    return np.sum(np.concatenate([x, y]) ** 3)


def product(pair):
    a, b = pair
    return np.sum(a * b)


def through_callee(x, y):
    return product((x, y * 2.0))


def added(x, y):
    return np.sum(np.add((x, y), 1.0))


def nested(x, y):
    return np.sum(np.stack(((x, y), (y, x))))
"""


def test_tuples_and_lists_written_inside_a_call_pass_their_adjoints(make_module):
    mod = make_module(TUPLES)
    x, y = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    gx, gy = srctrans.grad(mod.stacked, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * x)
    np.testing.assert_allclose(gy, 4 * y**3)
    gx, gy = srctrans.grad(mod.joined, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 3 * x**2)
    np.testing.assert_allclose(gy, 3 * y**2)
    gx, gy = srctrans.grad(mod.through_callee, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * y)
    np.testing.assert_allclose(gy, 2 * x)
    compiled = srctrans.jit(srctrans.grad(mod.stacked, argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(compiled[1], 4 * y**3)
    # a tuple where a ufunc takes an array is the array NumPy makes of it (np.array((x, y)))
    gx, gy = srctrans.grad(mod.added, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.ones(2))
    np.testing.assert_allclose(gy, np.ones(2))


@pytest.mark.parametrize("name", ["nested"])
def test_tuples_inside_a_call_that_cannot_pass_adjoints_are_refused(make_module, name):
    mod = make_module(TUPLES)
    with pytest.raises(srctrans.UnsupportedSyntaxError, match="written inside the call"):
        srctrans.grad(getattr(mod, name))(np.ones(2), np.ones(2))


STATEMENT_FORMS = """
import numpy as np


def whole(x): return np.sum(np.sin(x) * x[0])


def semicolons(x):
    a = x * 2.0; b = a + np.cos(x)
    return np.sum(b * b)


def _parts(x):
    return np.sin(x), (x * 2.0, np.cos(x))


def nested_unpacking(x):
    a, (b, c) = _parts(x)
    d, (e, (g, h)) = x * 1.0, (np.sin(x), (x ** 2, 3.0))
    z = np.zeros(2)
    s, (z[0], z[1]) = np.sum(x), (x[0] * 2.0, x[1])
    return np.sum(a * b + c) + np.sum(d * e + g * h) + s * z[0] + z[1]


def array_methods(x):
    y = x.reshape(1, 3)
    z = y.flatten()
    z[0] = 7.0  # a copy: y is left alone
    return np.sum(z * x) + np.sum(y.swapaxes(0, 1) ** 2) + np.sum(y.squeeze(0) * x)


def one_line_blocks(x):
    s = 0.0
    for i in range(3): s = s + x[i] ** 2
    if s > 1.0: s = s * 2.0
    else: s = s - 1.0
    while s > 100.0: s = s / 2.0
    return s
"""


@pytest.mark.parametrize("name", ["whole", "semicolons", "one_line_blocks", "nested_unpacking", "array_methods"])
def test_statement_forms_grad_and_jvp_refused(make_module, name):
    """``def f(x): return ...`` and ``if c: y = 1``: grad and jvp refused them ("the function
    must end with a return statement"); jit and vmap took them. And ``a, (b, c) = ...``,
    which grad and jvp refused ("unpack ... into plain names, one level deep"), and the array
    methods ``flatten``, ``swapaxes``, ``squeeze`` (NoDerivativeError)."""
    from .conftest import central_differences

    mod = make_module(STATEMENT_FORMS)
    f = getattr(mod, name)
    for x in (np.array([0.3, 0.8, -0.5]), np.array([0.1, 0.2, 0.05])):  # both branches of the if
        expected = central_differences(f, (x,), 0)
        np.testing.assert_allclose(srctrans.grad(f)(x), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(x), expected, rtol=1e-6, atol=1e-8)
        direction = np.array([0.5, -1.0, 2.0])
        np.testing.assert_allclose(srctrans.jvp(f, (x,), (direction,))[1], expected @ direction, rtol=1e-6, atol=1e-8)
    text = srctrans.grad(f).source_path().read_text()
    assert f"{Path(mod.__file__).name}:" in text  # the statements keep their origin comments


TWO_NAMES = """
import numpy as np


def _cube(x):
    return x * x * x


cubed = _cube


def inner(x):
    return cubed(x) * 2.0


def alias_met_in_a_callee_first(x):
    return np.sum(inner(x) + _cube(x))


def alias_met_in_the_entry_first(x):
    return np.sum(_cube(x) + inner(x))


def unbatched_alias(x, w):
    return np.sum(inner(x) + _cube(w) * x)
"""


@pytest.mark.parametrize("name", ["alias_met_in_a_callee_first", "alias_met_in_the_entry_first"])
def test_a_function_with_two_names_called_from_several_functions(make_module, name):
    """The review found that renaming in one place was not enough: jvp refused
    ``_cube(x)`` ("cannot differentiate a call of cubed") and grad raised NameError when a
    callee met the other name; vmap's file called a name it did not define."""
    from .conftest import central_differences

    mod = make_module(TWO_NAMES)
    f = getattr(mod, name)
    x, xs = np.array([0.5, -1.25, 0.3]), np.array([[0.5, -1.25, 0.3], [0.2, 0.1, -0.4]])
    expected = central_differences(f, (x,), 0)
    np.testing.assert_allclose(expected, 9 * x**2, rtol=1e-6)
    assert srctrans.jit(f)(x) == pytest.approx(f(x))
    np.testing.assert_allclose(srctrans.grad(f)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(x), expected, rtol=1e-6)
    np.testing.assert_allclose(srctrans.jvp(f, (x,), (np.ones(3),))[1], expected.sum(), rtol=1e-6)
    np.testing.assert_allclose(srctrans.vmap(srctrans.grad(f))(xs), 9 * xs**2, rtol=1e-12)
    w = np.array([1.5, -0.5, 2.0])
    batched = [mod.unbatched_alias(r, w) for r in xs]
    np.testing.assert_allclose(srctrans.vmap(mod.unbatched_alias, in_axes=(0, None))(xs, w), batched)
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(mod.unbatched_alias, in_axes=(0, None)))(xs, w), batched)


def test_functions_of_your_own_called_through_their_module(make_module, tmp_path):
    """``helpers.norm2(x)`` with ``import helpers``: jit failed to compile it ("Unknown attribute
    'norm2' of type Module"); the function is now written into the file and called by its name."""
    from .conftest import central_differences

    helpers = make_module(
        """
        import numpy as np
        import srctrans

        def norm2(x):
            return np.sum(x * x)

        @srctrans.custom_vjp
        def scaled_grad(x):
            return x * 1.0

        scaled_grad.defvjp(lambda x: (x * 1.0, None), lambda res, g: (g * 10.0,))
        """,
        folder=tmp_path / "lib",
    )
    mod = make_module(
        f"""
        import numpy as np
        import {helpers.__name__}
        import {helpers.__name__} as h

        def norm2(x):  # a function of the same name in this module: another function
            return np.sum(np.abs(x))

        def f(x):
            return {helpers.__name__}.norm2(np.sin(x)) * 2.0 + h.norm2(x) + norm2(x)

        def with_a_rule(x):
            return np.sum(h.scaled_grad(x) * x)
        """,
        folder=tmp_path / "lib",
    )
    x, xs = np.array([0.5, -1.25, 0.3]), np.array([[0.5, -1.25, 0.3], [0.2, 0.1, -0.4]])
    expected = central_differences(mod.f, (x,), 0)
    assert srctrans.jit(mod.f)(x) == pytest.approx(mod.f(x))
    np.testing.assert_allclose(srctrans.grad(mod.f)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(mod.f))(x), expected, rtol=1e-6)
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(mod.f))(xs), [mod.f(r) for r in xs])
    ruled = mod.with_a_rule
    assert srctrans.jit(ruled)(x) == pytest.approx(ruled(x))  # (a custom_vjp through a module: the same)
    np.testing.assert_allclose(srctrans.grad(ruled)(x), 11.0 * x)  # the rule's 10 g, plus d(x)/dx * x
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(ruled))(x), 11.0 * x)
    text = srctrans.jit(mod.f).source()
    assert text.count("def norm2(") == 1 and f"{helpers.__name__}.norm2(" not in text.split("def f(")[1].split("\n", 2)[2]


def test_a_jacobian_called_inside_a_compiled_function_is_refused_at_the_users_line(make_module):
    """It raised a SourceUnavailableError about srctrans's own api.py ("the file may have
    changed since it was imported"): srctrans read the Jacobian's wrapper as the user's code."""
    mod = make_module(
        """
        import numpy as np
        import srctrans

        def f(x):
            return np.tanh(x) * x[0]

        jac = srctrans.jacfwd(f)

        def g(x):
            return np.sum(jac(x) ** 2)
        """
    )
    x = np.array([0.5, -1.25, 0.3])
    assert np.isfinite(mod.g(x))
    with pytest.raises(srctrans.CompileError) as info:
        srctrans.jit(mod.g)(x)
    assert (info.value.filename, info.value.line) == (mod.__file__, 11)  # return np.sum(jac(x) ** 2)
    assert "jac" in str(info.value)


def test_np_diff_compiled_and_batched(make_module):
    """np.diff had no derivative rule (a total-variation penalty raised NoDerivativeError);
    its adjoint rt.diff_grad has a Numba overload; np.diff has a batching rule."""
    from .conftest import central_differences

    mod = make_module(
        """
        import numpy as np

        def total_variation(x):
            return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, 2) * x[:-2])
        """
    )
    f = mod.total_variation
    xs = np.random.default_rng(5).normal(size=(3, 12))
    expected = np.stack([central_differences(f, (x,), 0) for x in xs])
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(xs[0]), expected[0], rtol=1e-6, atol=1e-8)
    batched = srctrans.vmap(srctrans.grad(f))
    np.testing.assert_allclose(batched(xs), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(srctrans.grad(f)))(xs), expected, rtol=1e-6, atol=1e-8)
    # (the vmap of the adjoint loops over the examples: rt.diff_grad has no batching rule yet)
