"""In-place writes and JAX's functional updates under grad, uncompiled and under jit."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from .conftest import central_differences, module_from_text

MODEL = '''
import numpy as np


def scale_first(x, w):
    x[0] = x[0] * w
    x[1:] += w * x[:-1]
    return np.sum(x ** 2)


def through_callee(x, w):
    return scale_first(np.copy(x), w)


def functional(x, w):
    y = x.at[1].set(x[0] * w)
    y = y.at[2:].add(x[:2] * 2.0)
    y = y.at[0].multiply(w)
    y = y.at[np.array([0, 0, 3])].add(w)
    return np.sum(y * x)


def functional_reference(x, w):
    y = x.copy()
    y[1] = x[0] * w
    y = y.copy()
    y[2:] += x[:2] * 2.0
    y = y.copy()
    y[0] *= w
    y = y.copy()
    np.add.at(y, np.array([0, 0, 3]), w)
    return np.sum(y * x)


def repeated_write(x):
    y = np.zeros(4)
    y[np.array([1, 1])] = x
    return np.sum(y)


def written_in_a_loop(w):
    y = np.ones(4)
    for i in range(1, 4):
        y[i] = np.sin(w * y[i - 1]) + w
    y[1:3] *= w
    return np.sum(y * y)


def filled_buffer(x):
    out = np.empty_like(x)
    out[:] = np.sin(x)
    out[0] = x[1] * 3.0
    return np.sum(out * x)


def repeated_write_scalar(w):
    y = np.zeros(4)
    y[np.array([1, 1])] = w * np.array([1.0, 2.0])
    return np.sum(y * y) * w
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("inplace"), "inplacemodel", MODEL) as module:
        yield module


X = np.array([0.5, 1.2, -0.3, 0.8])


@pytest.mark.parametrize("compiled", [False, True])
def test_writes_into_an_argument_leave_the_callers_array_alone(m, compiled):
    x = X.copy()
    g = srctrans.grad(m.scale_first, argnums=(0, 1))
    if compiled:
        g = srctrans.jit(g)
    gx, gw = g(x, 0.7)
    np.testing.assert_array_equal(x, X)  # the caller's array never changes
    np.testing.assert_allclose(gx, central_differences(m.scale_first, (X, 0.7), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, central_differences(m.scale_first, (X, 0.7), 1), rtol=1e-6)


def test_a_callee_that_writes_into_its_argument(m):
    gx, gw = srctrans.grad(m.through_callee, argnums=(0, 1))(X, 0.7)
    np.testing.assert_allclose(gx, central_differences(m.through_callee, (X, 0.7), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, central_differences(m.through_callee, (X, 0.7), 1), rtol=1e-6)
    srctrans.check_grads(m.through_callee, (X, 0.7), order=1)


@pytest.mark.parametrize("compiled", [False, True])
def test_at_set_add_multiply_like_jax(m, compiled):
    value = srctrans.jit(m.functional)(X, 0.7)
    assert value == pytest.approx(m.functional_reference(X, 0.7))
    g = srctrans.value_and_grad(m.functional, argnums=(0, 1))
    if compiled:
        g = srctrans.jit(g)
    out, (gx, gw) = g(X, 0.7)
    assert out == pytest.approx(m.functional_reference(X, 0.7))
    np.testing.assert_allclose(gx, central_differences(m.functional_reference, (X, 0.7), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, central_differences(m.functional_reference, (X, 0.7), 1), rtol=1e-6)
    assert "rt.at_set(x, 1, t2)" in srctrans.source(srctrans.grad(m.functional))


@pytest.mark.parametrize("compiled", [False, True])
def test_writing_twice_through_a_repeated_index_is_refused(m, compiled):
    g = srctrans.grad(m.repeated_write)
    if compiled:
        g = srctrans.jit(g)
    with pytest.raises(ValueError, match="repeated entries"):
        g(np.array([1.0, 2.0]))


def test_the_adjoint_file_reads_like_the_writes(m):
    text = srctrans.source(srctrans.grad(m.scale_first, argnums=(0, 1)))
    assert "x = np.copy(x)" in text
    assert "rt.setitem_grad(x_bar, 0, " in text


@pytest.mark.parametrize("compiled", [False, True])
def test_at_set_through_a_repeated_index_is_refused(compiled):
    def repeated_at(x, w):
        return np.sum(x.at[np.array([0, 0])].set(w) * x)

    g = srctrans.grad(repeated_at, argnums=1)
    if compiled:
        g = srctrans.jit(g)
    with pytest.raises(ValueError, match="repeated entries"):
        g(np.ones(3), 2.0)


@pytest.mark.parametrize("compiled", [False, True])
def test_second_derivative_through_writes_in_place(m, compiled):
    d2 = srctrans.grad(srctrans.grad(m.written_in_a_loop))
    if compiled:
        d2 = srctrans.jit(d2)
    d1 = srctrans.grad(m.written_in_a_loop)
    w, eps = 0.7, 1e-5
    assert d2(w) == pytest.approx((d1(w + eps) - d1(w - eps)) / (2 * eps), rel=1e-6)
    assert "rt.setitem_grad" in srctrans.source(d1)  # first order: zeroed in place, in one call


def test_second_derivative_through_a_repeated_index_is_refused(m):
    with pytest.raises(ValueError, match="repeated entries"):
        srctrans.grad(srctrans.grad(m.repeated_write_scalar))(0.5)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_buffer_made_by_empty_like_and_filled(m, compiled):
    """np.empty_like had no derivative rule (NoDerivativeError); its values are never read."""
    f = m.filled_buffer
    grad = srctrans.jit(srctrans.grad(f)) if compiled else srctrans.grad(f)
    expected = central_differences(f, (X,), 0)
    np.testing.assert_allclose(grad(X), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srctrans.jvp(f, (X,), (np.ones(4),))[1], expected.sum(), rtol=1e-6)
