"""Statement-level preaccumulation in reverse mode (srctrans/ad/preaccumulate.py).

A recurrence in a loop (``y = y + dt * (-k * y + s)``) gets its line's local partials
first and passes ``y_bar`` on with one multiply. These tests check the form of the
generated adjoint and, above all, its values: against central differences (first and
second order, forward and reverse), with broadcasting between the operands, compiled and
not, and through tapes that are pushed and popped.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans


def euler(k, y0):
    y = y0
    for i in range(50):
        y = y + 0.01 * (-k * y + np.sin(0.01 * i))
    return np.sum(y * y)


def many_paths(k, y0):
    y = y0
    for _ in range(6):
        y = y * y * 0.1 + np.sin(y) * k - np.exp(-y) / (1.0 + y * y)
    return np.sum(y)


def newton(a):
    x = a
    n = 0
    while n < 6:
        x = 0.5 * (x + a / x)
        n += 1
    return np.sum(x)


def augmented(x):
    y = x + 0.0  # a new array: += on y must not write into x
    for _ in range(4):
        y += 0.5 * np.tanh(y) * x
    return np.sum(y)


def straight(k, y):
    y = y + 0.01 * (-k * y)
    return np.sum(y * y)


def _source(fn, argnums):
    g = srctrans.grad(fn, argnums=argnums)
    return g, srctrans.source(g)


def test_recurrence_passes_the_adjoint_on_with_one_multiply():
    g, text = _source(euler, (0, 1))
    g(0.3, 1.2)
    assert "y_bar = rt.unbroadcast(y_bar_1 * (1.0 + 0.01 * t1), y_2)" in text
    assert "k_loop_bar += rt.unbroadcast(-y_bar_1 * (0.01 * y_2), k)" in text  # k does not change in the loop
    assert "t5_bar" not in text and "t2_bar" not in text  # no operation-by-operation chain left


def test_a_line_outside_loops_keeps_its_operation_by_operation_adjoint():
    g, text = _source(straight, (0, 1))
    g(0.3, 1.2)
    assert "t1_bar" in text  # nothing is carried from iteration to iteration: nothing to gain


@pytest.mark.parametrize(
    "k, y0",
    [
        (0.3, 1.2),
        (np.array([0.3, -0.2, 0.5]), 1.2),  # y becomes an array after the first step
        (0.3, np.array([1.2, -0.4])),
        (np.array([[0.3], [0.1]]), np.array([1.2, -0.4, 0.8])),  # both broadcast
    ],
)
def test_euler_values_first_and_second_order(k, y0):
    srctrans.check_grads(euler, (k, y0), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("k, y0", [(0.7, 0.4), (np.array([0.7, -0.3]), np.array([[0.4], [0.2], [-0.1]]))])
def test_an_input_reached_by_several_paths(k, y0):
    _, text = _source(many_paths, (0, 1))
    assert "y_bar = rt.unbroadcast(y_bar_1 * dy_dy, y_2)" in text  # preaccumulated, its long partial named
    srctrans.check_grads(many_paths, (k, y0), order=2, modes=("rev",))


def test_popped_tapes_of_a_while_loop():
    a = np.array([2.0, 0.5, 3.0])
    _, text = _source(newton, 0)
    assert "a_loop_bar += rt.unbroadcast(x_bar_1 * (0.5 / x_" in text
    srctrans.check_grads(newton, (a,), order=2, modes=("rev",))
    np.testing.assert_allclose(srctrans.grad(newton)(a), 0.5 / np.sqrt(a), rtol=1e-10)


def test_augmented_assignment():
    srctrans.check_grads(augmented, (np.array([0.3, -1.1]),), order=2, modes=("rev",))
    srctrans.check_grads(augmented, (0.8,), order=2, modes=("rev",))


@pytest.mark.parametrize("k, y0", [(0.3, 1.2), (np.array([0.3, -0.2, 0.5]), np.array([1.2, 0.1, -0.7]))])
def test_compiled_adjoint_agrees_with_python(k, y0):
    python = srctrans.grad(euler, argnums=(0, 1))(k, y0)
    compiled = srctrans.jit(srctrans.grad(euler, argnums=(0, 1)))(k, y0)
    for p, c in zip(python, compiled, strict=True):
        np.testing.assert_allclose(c, p, rtol=1e-13, atol=0.0)


def test_float32_adjoints_stay_float32():
    k = np.array([0.3, -0.2], dtype=np.float32)
    y0 = np.array([1.2, 0.4], dtype=np.float32)
    gk, gy = srctrans.grad(euler, argnums=(0, 1))(k, y0)
    assert gk.dtype == np.float32 and gy.dtype == np.float32
    ref = srctrans.grad(euler, argnums=(0, 1))(k.astype(np.float64), y0.astype(np.float64))
    np.testing.assert_allclose(gk, ref[0], rtol=1e-4)
    np.testing.assert_allclose(gy, ref[1], rtol=1e-4)


@pytest.mark.parametrize(
    "partial, negative, text",
    [
        ("-1.0", True, None),
        ("1.0", False, None),
        ("-t / y", True, "t / y"),
        ("-a * b / c", True, "a * b / c"),
        ("-a + b", False, "-a + b"),  # the minus is not the whole sum's
        ("b * -a", False, "b * -a"),
        ("-x ** 2", True, "x ** 2"),
    ],
)
def test_a_partial_s_sign_is_taken_out_only_when_it_is_the_whole_partial_s(partial, negative, text):
    from srctrans.ad.preaccumulate import _signed

    got = _signed(partial)
    assert (got.negative, got.text) == (negative, text)
    if text is not None:  # the same number either way
        env = {"t": 3.0, "y": 7.0, "a": 1.1, "b": -2.3, "c": 0.7, "x": 1.9}
        assert eval(partial, env) == (-1.0 if negative else 1.0) * eval(text, env)
