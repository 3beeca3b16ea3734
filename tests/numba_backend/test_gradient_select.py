"""np.gradient and np.select under Numba (numba_backend.overloads), against NumPy itself, and their
gradients compiled (``srctrans.vjp(srctrans.jit(f), ...)``) against the uncompiled ones.

Compiles dominate the run time: each jitted function below checks many forms at once.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

import numba_backend.overloads  # noqa: F401  (registers the overloads)
import numba_backend.runtime_overloads  # noqa: F401
import srctrans
from numba_backend.cpu import _NEEDS
from srctrans import runtime as rt

pytestmark = pytest.mark.slow  # compiles

RNG = np.random.default_rng(7)
XC = np.array([0.0, 0.4, 1.1, 1.5, 2.6])  # uneven coordinates
YC = np.array([0.0, 1.0, 3.0, 4.5])
EVEN = np.array([0.0, 0.5, 1.0, 1.5, 2.0])  # even coordinates (NumPy then uses the even formulas)
B = np.array([0.3, -0.7, 1.1, 0.2])


def same(got, want, exact: bool = True) -> None:
    """Same structure (an array, or a tuple of arrays), shapes, dtypes and values."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (type(got), got)
        for g, w in zip(got, want):
            same(g, w, exact)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


# --- np.gradient --------------------------------------------------------------------------------


@numba.njit
def _gradient_forms(f, m, x, y, even):
    return (
        np.gradient(f),
        np.gradient(f, 0.5, edge_order=2),
        np.gradient(f, x),
        np.gradient(f, x, edge_order=2),
        np.gradient(f, even, edge_order=2),
        np.gradient(m),  # a tuple: one array per axis
        np.gradient(m, 2, edge_order=2),
        np.gradient(m, axis=1, edge_order=2),
        np.gradient(m, axis=-2),
        np.gradient(m, x, 0.3, edge_order=2),  # coordinates for axis 0, a spacing for axis 1
        np.gradient(m, axis=(1, 0)),
        np.gradient(m, y, axis=(-1,)),  # one axis in a tuple: one array
    )


@numba.njit
def _gradient_dtypes(i, f32, x32, c):
    return (
        np.gradient(i),  # integers: float64
        np.gradient(i, 0.5, edge_order=2),
        np.gradient(f32, 0.3),  # float32 stays float32
        np.gradient(f32, x32, edge_order=2),
        np.gradient(c, 0.7, edge_order=2),
    )


@numba.njit
def _gradient_coordinates(f, x, edge_order):
    return np.gradient(f, x, edge_order=edge_order)


@numba.njit
def _gradient_short(f):
    return np.gradient(f)


@numba.njit
def _gradient_matrix_one_array(m, x):
    return np.gradient(m, x)


@numba.njit
def _gradient_axes(m):
    return np.gradient(m, axis=(0, -2))


def test_gradient_forms():
    f = RNG.standard_normal(5)
    m = RNG.standard_normal((5, 4))
    same(_gradient_forms(f, m, XC, YC, EVEN), _gradient_forms.py_func(f, m, XC, YC, EVEN))


def test_gradient_dtypes():
    args = (
        np.array([1, 4, 9, 16, 30]),
        (RNG.standard_normal(5) * 3).astype(np.float32),
        XC.astype(np.float32),
        RNG.standard_normal(5) + 1j * RNG.standard_normal(5),
    )
    got, want = _gradient_dtypes(*args), _gradient_dtypes.py_func(*args)
    same(got, want)
    assert [a.dtype for a in got] == [np.float64, np.float64, np.float32, np.float32, np.complex128]


@pytest.mark.parametrize(
    ("n", "n_x", "edge_order", "error", "message"),
    [
        (2, 2, 2, ValueError, "too small"),  # edge_order 2 needs three points
        (3, 3, 2, None, None),
        (1, 1, 1, IndexError, "out of bounds"),  # (NumPy reads the first step of the coordinates first)
        (5, 5, 3, ValueError, "greater than 2"),
        (5, 4, 1, ValueError, "must match the length"),
    ],
)
def test_gradient_errors(n, n_x, edge_order, error, message):
    f, x = np.arange(float(n)) ** 3, np.arange(float(n_x)) ** 2
    if error is None:
        same(_gradient_coordinates(f, x, edge_order), _gradient_coordinates.py_func(f, x, edge_order))
        return
    with pytest.raises(error, match=message):
        _gradient_coordinates.py_func(f, x, edge_order)
    with pytest.raises(error, match=message):
        _gradient_coordinates(f, x, edge_order)


def test_gradient_too_short():
    with pytest.raises(ValueError, match="too small"):
        np.gradient(np.ones(1))
    with pytest.raises(ValueError, match="too small"):
        _gradient_short(np.ones(1))


def test_gradient_refusals():
    with pytest.raises(ValueError, match="repeated axis"):
        _gradient_axes(np.ones((3, 3)))
    with pytest.raises(TypeError, match="invalid number of arguments"):  # NumPy's
        _gradient_matrix_one_array.py_func(np.ones((5, 4)), XC)
    with pytest.raises(TypingError, match="invalid number of arguments"):
        _gradient_matrix_one_array(np.ones((5, 4)), XC)


# --- np.select ----------------------------------------------------------------------------------


@numba.njit
def _select_forms(x, y, i):
    return (
        np.select([x > 0.5, x < -0.5], [x * x, y], 0.0),  # choices of different shapes
        np.select([x > 0.3, x > -0.3], [x, 2.0], y),  # a number among the choices, an array default
        np.select([x > 0.3, y > 0], [i, 2], 0.5),  # integers and a float default: float64
        np.select((x > 0.3, True), (i, y), -1),  # tuples, a bool condition
        np.select([y > 0, x > 0], [i, i], x),  # conditions of different shapes
        np.select([x > 0.5, x < 0.5], [y, y], x),  # two lists of one type each, an array default
        np.select([x > 0.0], [i]),  # default 0: integers stay integers
        np.select([True, False], [1.0, 2.0], 3),  # numbers only: a 0-d array
    )


@numba.njit
def _select_lengths(x, y):
    return np.select([x > 0.5, x < -0.5, x > 2.0], [x * x, y], 0.0)


def test_select_forms():
    x, y, i = RNG.standard_normal((3, 4)), RNG.standard_normal(4), np.arange(4)
    got, want = _select_forms(x, y, i), _select_forms.py_func(x, y, i)
    same(got, want)
    assert [a.dtype for a in got] == [np.float64] * 6 + [np.int64, np.float64]


def test_select_lengths_differ():
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    for fn in (_select_lengths.py_func, _select_lengths):
        with pytest.raises(ValueError, match="same length"):
            fn(x, y)


@numba.njit
def _select_helpers(g, x, y):
    conds = [y > 0.0, x > 0.0]  # conditions of different shapes: a LiteralList
    a, b = rt.select_grad(g, conds, [x, 2.0])
    return a, b, rt.select_default(conds, g)


def test_select_helpers_take_literal_lists():
    g, x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    same(_select_helpers(g, x, y), _select_helpers.py_func(g, x, y))


# --- their gradients, compiled ------------------------------------------------------------------


def gradient_fn(f):
    a, b = np.gradient(f * f, 0.7, edge_order=2)
    c = np.gradient(f[0], XC)
    d = np.gradient(f, axis=-1, edge_order=2)
    return np.sum(a * b) + np.sum(c**3) + np.sum(d * B[:1])


def select_fn(x, y):
    first = np.select([x > 0.5, x < -0.5], [x * x, y], 0.0) * B
    return first + np.select([x > 0.3, x > -0.3], [x, 2.0], y) ** 2


def _vjps(fn, *args):
    out, plain = srctrans.vjp(fn, *args)
    out_c, compiled = srctrans.vjp(srctrans.jit(fn), *args)
    cotangent = np.ones_like(out) if np.ndim(out) else 1.0
    same(out_c, out, exact=False)
    return compiled(cotangent), plain(cotangent)


def test_gradient_vjp_compiled():
    got, want = _vjps(gradient_fn, RNG.standard_normal((3, 5)))
    same(tuple(got), tuple(want), exact=False)


def test_select_vjp_compiled():
    got, want = _vjps(select_fn, RNG.standard_normal((3, 4)), RNG.standard_normal(4))
    same(tuple(got), tuple(want), exact=False)


def test_generated_files_import_the_overloads():
    assert _NEEDS["overloads"].search("t2 = np.gradient(f, 0.5)")
    assert _NEEDS["overloads"].search("t5 = np.select(t3, t4, 0.0)")
