"""check_grads, driven by a small reference forward/reverse mode written here.

srctrans's own ``vjp``/``jvp`` are not needed: the reference below differentiates functions
written with a handful of hand-written derivative rules (``sin``, ``cos``, ``x**n``,
``@``, ``sum``, ``+ - *``) by nested dual numbers tagged with a level, so that it can
also differentiate the derivative functions ``check_grads`` builds for order 2. Its
``vjp`` is assembled from ``jvp`` along basis directions (fine for the tiny arrays here).
Bugs are planted by patching one rule, and ``check_grads`` must catch each in each mode.
"""

from __future__ import annotations

import doctest
import itertools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srctrans
import srctrans.check as check_module
from srctrans.check import DEFAULT_GRADIENT_TOLERANCE, EPS, check_grads, check_jvp, check_vjp, numerical_jvp
from srctrans.tree import tree_flatten, tree_map

# ---------------------------------------------------------------------------------------
# Reference AD: tagged dual numbers; a higher level is a more deeply nested transformation.

_levels = itertools.count(1)


class Dual:
    """``primal + tangent * d_level``; primal and tangent may be Duals of lower levels."""

    __array_ufunc__ = None  # NumPy defers to our reflected operators

    def __init__(self, level: int, primal: Any, tangent: Any) -> None:
        self.level, self.primal, self.tangent = level, primal, tangent

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return add(self, neg(other))

    def __rsub__(self, other):
        return add(other, neg(self))

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return neg(self)

    def __pow__(self, n):
        return power(self, n)


def _shape(x: Any) -> tuple[int, ...]:
    while isinstance(x, Dual):
        x = x.primal
    return np.shape(x)


def _top(*xs: Any) -> int:
    return max((x.level for x in xs if isinstance(x, Dual)), default=0)


def _parts(x: Any, level: int) -> tuple[Any, Any]:
    if isinstance(x, Dual) and x.level == level:
        return x.primal, x.tangent
    return x, None  # constant at this level: zero tangent


def _dual(level: int, primal: Any, terms: list[Any]) -> Dual:
    terms = [t for t in terms if t is not None]
    tangent = None
    for t in terms:
        tangent = t if tangent is None else add(tangent, t)
    if tangent is not None and _shape(tangent) != _shape(primal):
        tangent = add(tangent, np.zeros(_shape(primal)))  # broadcast to the primal's shape
    return Dual(level, primal, tangent)


def add(a, b):
    level = _top(a, b)
    if not level:
        return np.add(a, b)
    (ap, at), (bp, bt) = _parts(a, level), _parts(b, level)
    return _dual(level, add(ap, bp), [at, bt])


def neg(a):
    if not isinstance(a, Dual):
        return np.negative(a)
    return Dual(a.level, neg(a.primal), None if a.tangent is None else neg(a.tangent))


def mul(a, b):
    level = _top(a, b)
    if not level:
        return np.multiply(a, b)
    (ap, at), (bp, bt) = _parts(a, level), _parts(b, level)
    return _dual(level, mul(ap, bp), [None if at is None else mul(at, bp), None if bt is None else mul(ap, bt)])


MATMUL_FACTOR = {"value": 1.0}  # a test sets 1.01 to plant a wrong rule


def matmul(a, b):
    level = _top(a, b)
    if not level:
        return np.matmul(a, b)
    (ap, at), (bp, bt) = _parts(a, level), _parts(b, level)
    c = MATMUL_FACTOR["value"]
    terms = [None if at is None else mul(c, matmul(at, bp)), None if bt is None else mul(c, matmul(ap, bt))]
    return _dual(level, matmul(ap, bp), terms)


def sum_(a):
    if not isinstance(a, Dual):
        return np.sum(a)
    return Dual(a.level, sum_(a.primal), None if a.tangent is None else sum_(a.tangent))


# Derivatives of the elementwise functions, as functions of the argument. Tests patch entries.
DERIVATIVES: dict[str, Callable[[Any], Any]] = {
    "sin": lambda x: cos(x),
    "cos": lambda x: neg(sin(x)),
}


def _elementwise(name: str, np_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def fn(a):
        if not isinstance(a, Dual):
            return np_fn(a)
        tangent = None if a.tangent is None else mul(a.tangent, DERIVATIVES[name](a.primal))
        return Dual(a.level, fn(a.primal), tangent)

    return fn


sin = _elementwise("sin", np.sin)
cos = _elementwise("cos", np.cos)


def power(a, n: int):
    if not isinstance(a, Dual):
        return np.power(a, n)
    tangent = None if a.tangent is None else mul(a.tangent, mul(float(n), power(a.primal, n - 1)))
    return Dual(a.level, power(a.primal, n), tangent)


def ref_jvp(f, primals, tangents):
    """Reference ``jvp(f, primals, tangents) -> (out, tangent_out)``."""
    level = next(_levels)
    out = f(*tree_map(lambda p, t: Dual(level, p, t), tuple(primals), tuple(tangents)))

    def primal(o):
        return o.primal if isinstance(o, Dual) and o.level == level else o

    def tangent(o):
        if isinstance(o, Dual) and o.level == level and o.tangent is not None:
            t = o.tangent
            return t if _shape(t) == _shape(o) else add(t, np.zeros(_shape(o)))
        return np.zeros(_shape(o))

    return tree_map(primal, out), tree_map(tangent, out)


def ref_vjp(f, *primals):
    """Reference ``vjp(f, *primals) -> (out, vjp_fn)``: ``vjp_fn(ct)`` sums ``<ct, J e_i> e_i``."""
    out = f(*primals)
    leaves, treedef = tree_flatten(primals)

    def vjp_fn(ct):
        cts = []
        for i, leaf in enumerate(leaves):
            acc = np.zeros(_shape(leaf))
            for idx in np.ndindex(_shape(leaf)):
                e = np.zeros(_shape(leaf))
                e[idx] = 1.0
                tangents = [e if j == i else np.zeros(_shape(x)) for j, x in enumerate(leaves)]
                _, t_out = ref_jvp(f, primals, treedef.unflatten(tangents))
                projection = 0.0
                for c, t in zip(tree_flatten(ct)[0], tree_flatten(t_out)[0]):
                    projection = add(projection, sum_(mul(c, t)))
                acc = add(acc, mul(e, projection))
            cts.append(acc)
        return tuple(treedef.unflatten(cts))

    return out, vjp_fn


# ---------------------------------------------------------------------------------------
# Functions under test

rng = np.random.RandomState(42)
X3 = rng.randn(3)
A23, B32 = rng.randn(2, 3), rng.randn(3, 2)
PARAMS = {"w": rng.randn(3), "b": 0.7}


def f_sin(x):
    return sin(x)


def f_cube(x):
    return x**3


def f_matmul(a, b):
    return a @ b


def f_dict(params):
    w, b = params["w"], params["b"]
    return {"loss": sum_(sin(w) * b), "extra": (w * w, None)}


def f_mixed(a, b):
    return sum_(cos(a @ b) * (a @ b) ** 2)


CASES = {
    "sin": (f_sin, (X3,)),
    "cube": (f_cube, (X3,)),
    "matmul": (f_matmul, (A23, B32)),
    "dict": (f_dict, (PARAMS,)),
    "mixed": (f_mixed, (A23, B32)),
}
REF = {"_vjp": ref_vjp, "_jvp": ref_jvp}


@pytest.fixture
def planted(monkeypatch):
    """``planted(name, rule)`` replaces one derivative rule for the test."""

    def plant(name: str, rule: Callable[[Any], Any]) -> None:
        monkeypatch.setitem(DERIVATIVES, name, rule)

    return plant


# ---------------------------------------------------------------------------------------
# (a) correct derivatives pass


def test_reference_ad_is_right():
    """The reference itself agrees with the closed forms."""
    out, t = ref_jvp(f_sin, (X3,), (np.ones(3),))
    np.testing.assert_allclose(out, np.sin(X3))
    np.testing.assert_allclose(t, np.cos(X3))
    _, vjp_fn = ref_vjp(f_matmul, A23, B32)
    ct = np.ones((2, 2))
    ga, gb = vjp_fn(ct)
    np.testing.assert_allclose(ga, ct @ B32.T)
    np.testing.assert_allclose(gb, A23.T @ ct)
    _, t2 = ref_jvp(lambda x: ref_jvp(f_sin, (x,), (np.ones(3),))[1], (X3,), (np.ones(3),))
    np.testing.assert_allclose(t2, -np.sin(X3))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("modes", [("fwd",), ("rev",)])
@pytest.mark.parametrize("order", [1, 2])
def test_correct_derivatives_pass(name, modes, order):
    f, args = CASES[name]
    check_grads(f, args, order=order, modes=modes, **REF)


def test_both_modes_together_order_2():
    check_grads(f_mixed, (A23, B32), order=2, modes=("fwd", "rev"), **REF)


def test_defaults_are_order_2_reverse_mode():
    seen = []

    def spy_vjp(f, *primals):
        seen.append(f.__name__)
        return ref_vjp(f, *primals)

    check_grads(f_sin, (X3,), _vjp=spy_vjp)
    assert seen[0] == "f_sin"
    assert "vjp_applied" in seen  # the order-2 check differentiates the derivative function


def test_python_float_arguments_and_scalar_output():
    check_grads(lambda x, y: sum_(sin(x * y)), (0.3, 1.7), order=2, modes=("fwd", "rev"), **REF)


def test_float32_with_default_tolerances():
    x = X3.astype(np.float32)

    def jvp32(f, primals, tangents):
        out, t = ref_jvp(f, primals, tangents)
        return out, np.asarray(t, dtype=np.float32)

    check_grads(f_sin, (x,), order=1, modes=("fwd", "rev"), _vjp=ref_vjp, _jvp=jvp32)


def test_uses_srctrans_transformations_by_default(monkeypatch):
    monkeypatch.setattr(srctrans, "vjp", ref_vjp, raising=False)
    monkeypatch.setattr(srctrans, "jvp", ref_jvp, raising=False)
    check_grads(f_cube, (X3,), order=2, modes=("fwd", "rev"))


def test_missing_transformation_is_named(monkeypatch):
    from srctrans import faces

    monkeypatch.delitem(faces._registered, "vjp")
    with pytest.raises(NotImplementedError, match=r"srctrans\.vjp.*_vjp="):
        check_grads(f_sin, (X3,))
    # reverse mode alone never asks for jvp
    monkeypatch.delitem(faces._registered, "jvp")
    check_grads(f_sin, (X3,), order=1, _vjp=ref_vjp)


# ---------------------------------------------------------------------------------------
# (b) planted wrong derivatives are caught, in each mode


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_wrong_sign_of_sin_derivative_is_caught(mode, planted):
    planted("sin", lambda x: neg(cos(x)))
    with pytest.raises(AssertionError, match=rf"{'forward' if mode == 'fwd' else 'reverse'} mode .*order 1"):
        check_grads(f_sin, (X3,), order=1, modes=(mode,), **REF)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_one_percent_error_in_matmul_is_caught(mode, monkeypatch):
    monkeypatch.setitem(MATMUL_FACTOR, "value", 1.01)
    with pytest.raises(AssertionError, match="does not match central differences"):
        check_grads(f_matmul, (A23, B32), order=1, modes=(mode,), **REF)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_wrong_rule_deep_in_a_pytree_function_is_caught(mode, planted):
    planted("sin", lambda x: mul(1.01, cos(x)))
    with pytest.raises(AssertionError):
        check_grads(f_dict, (PARAMS,), order=1, modes=(mode,), **REF)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_wrong_second_derivative_is_caught_only_at_order_2(mode, planted):
    planted("cos", lambda x: sin(x))  # d/dx cos = -sin; sin's first derivative stays right
    check_grads(f_sin, (X3,), order=1, modes=(mode,), **REF)
    label = "JVP of JVP" if mode == "fwd" else "VJP of VJP"
    with pytest.raises(AssertionError, match=rf"order 2 \({label}\)"):
        check_grads(f_sin, (X3,), order=2, modes=(mode,), **REF)


def test_bug_in_vjp_fn_only_is_caught_in_reverse_mode_only():
    def scaled_vjp(f, *primals):
        out, vjp_fn = ref_vjp(f, *primals)
        return out, lambda ct: tuple(1.01 * c for c in vjp_fn(ct))

    check_grads(f_sin, (X3,), order=2, modes=("fwd",), _jvp=ref_jvp, _vjp=scaled_vjp)
    with pytest.raises(AssertionError, match="reverse mode"):
        check_grads(f_sin, (X3,), order=1, modes=("rev",), _jvp=ref_jvp, _vjp=scaled_vjp)


def test_message_names_mode_order_and_both_numbers(planted):
    planted("sin", lambda x: neg(cos(x)))
    with pytest.raises(AssertionError) as info:
        check_grads(f_sin, (X3,), order=1, modes=("rev",), **REF)
    msg = str(info.value)
    assert msg.startswith("check_grads: reverse mode (VJP), order 1: cotangent projection")
    auto = float(re.search(r"automatic <u, vjp\(v\)>\s+= (\S+)", msg).group(1))
    numeric = float(re.search(r"central differences <jvp\(u\), v> = (\S+)", msg).group(1))
    assert auto == pytest.approx(-numeric, rel=1e-6)  # the planted sign error

    with pytest.raises(AssertionError) as info:
        check_grads(f_sin, (X3,), order=1, modes=("fwd",), **REF)
    msg = str(info.value)
    assert msg.startswith("check_grads: forward mode (JVP), order 1: tangent output")
    assert "automatic (jvp)" in msg and "central differences" in msg and "worst element" in msg


def test_message_names_the_leaf_of_a_pytree_output(planted):
    planted("sin", lambda x: neg(cos(x)))
    with pytest.raises(AssertionError, match=r"tangent output .* at \['loss'\]"):
        check_grads(f_dict, (PARAMS,), order=1, modes=("fwd",), **REF)


def test_wrong_primal_output_is_caught():
    def bad_jvp(f, primals, tangents):
        out, t = ref_jvp(f, primals, tangents)
        return out + 1e-3, t

    with pytest.raises(AssertionError, match="primal output of the JVP"):
        check_grads(f_sin, (X3,), order=1, modes=("fwd",), _jvp=bad_jvp)


def test_cotangents_must_have_the_arguments_structure():
    def list_vjp(f, *primals):
        out, vjp_fn = ref_vjp(f, *primals)
        return out, lambda ct: list(vjp_fn(ct))

    with pytest.raises(AssertionError, match="one per argument"):
        check_grads(f_matmul, (A23, B32), order=1, _vjp=list_vjp)

    def transposed_vjp(f, *primals):
        out, vjp_fn = ref_vjp(f, *primals)
        return out, lambda ct: tuple(c.T for c in vjp_fn(ct))

    with pytest.raises(AssertionError, match=r"args\[0\] has shape \(3, 2\)"):
        check_grads(f_matmul, (A23, B32), order=1, _vjp=transposed_vjp)


def test_tangent_dtype_must_match_primal_dtype():
    def jvp64(f, primals, tangents):
        out, t = ref_jvp(f, primals, tangents)
        return out, np.asarray(t, dtype=np.float64)

    with pytest.raises(AssertionError, match="tangent dtype float64 differs from primal output dtype float32"):
        check_grads(f_sin, (X3.astype(np.float32),), order=1, modes=("fwd",), _jvp=jvp64)


# ---------------------------------------------------------------------------------------
# Tolerances and arguments


def test_loose_tolerance_accepts_a_small_error(monkeypatch):
    monkeypatch.setitem(MATMUL_FACTOR, "value", 1.01)
    check_grads(f_matmul, (A23, B32), order=1, modes=("fwd", "rev"), atol=0.1, rtol=0.1, **REF)
    check_grads(f_matmul, (A23, B32), order=1, atol={np.float64: 0.1}, rtol={"float64": 0.1}, **REF)


def test_jax_default_tolerances_and_step():
    assert EPS == 1e-4
    assert DEFAULT_GRADIENT_TOLERANCE[np.dtype(np.float64)] == 1e-5
    assert DEFAULT_GRADIENT_TOLERANCE[np.dtype(np.float32)] == 2e-3


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown mode"):
        check_grads(f_sin, (X3,), modes=("lin",), **REF)
    with pytest.raises(ValueError, match="order"):
        check_grads(f_sin, (X3,), order=0, **REF)
    with pytest.raises(TypeError, match=r"args\[1\]\['n'\] has dtype int64"):
        check_grads(lambda x, d: x, (X3, {"n": 3}), **REF)


def test_complex_arguments_follow_jax_conventions():
    z = np.array([0.5 + 1.0j, -0.3 + 0.2j])

    def square_jvp(f, primals, tangents):
        (x,), (t,) = primals, tangents
        return x * x, 2 * x * t

    def square_vjp(f, x):
        return x * x, lambda ct: (ct * 2 * x,)  # JAX: ct times f'(z) for holomorphic f

    check_grads(lambda x: x * x, (z,), order=1, modes=("fwd", "rev"), _jvp=square_jvp, _vjp=square_vjp)
    with pytest.raises(AssertionError, match="reverse mode"):
        check_grads(lambda x: x * x, (z,), order=1, _vjp=lambda f, x: (x * x, lambda ct: (ct * 2 * np.conj(x),)))


def test_integer_outputs_have_zero_derivative():
    def f(x):
        return {"y": sin(x), "k": np.argmax(_shape(x))}

    check_grads(f, (X3,), order=1, modes=("fwd", "rev"), **REF)


def test_check_jvp_and_check_vjp_take_partial_transformations():
    check_jvp(f_cube, lambda p, t: ref_jvp(f_cube, p, t), (X3,))
    check_vjp(f_cube, lambda *p: ref_vjp(f_cube, *p), (X3,))


# ---------------------------------------------------------------------------------------
# numerical_jvp


def test_numerical_jvp_matches_closed_form_and_keeps_types():
    t = numerical_jvp(np.sin, (X3,), (np.ones(3),))
    np.testing.assert_allclose(t, np.cos(X3), rtol=1e-7)
    scalar = numerical_jvp(lambda x: x * x, (1.5,), (1.0,))
    assert type(scalar) is float and scalar == pytest.approx(3.0)
    t32 = numerical_jvp(np.sin, (X3.astype(np.float32),), (np.ones(3, np.float32),), eps=1e-2)
    assert t32.dtype == np.float32


def test_numerical_jvp_pytrees_integers_and_infinities():
    out = numerical_jvp(
        lambda d: {"y": d["a"] * 2.0, "i": np.argmax(d["a"]), "inf": np.full(2, np.inf)},
        ({"a": np.array([1.0, 3.0])},),
        ({"a": np.array([1.0, -1.0])},),
    )
    np.testing.assert_allclose(out["y"], [2.0, -2.0])
    assert out["i"] == 0.0
    np.testing.assert_array_equal(out["inf"], [0.0, 0.0])


def test_doctests():
    result = doctest.testmod(check_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
