"""Parameter defaults are the values bound when ``def`` ran, as in Python, under every transformation.

The generated file writes each default as the function object holds it (``__defaults__``,
``__kwdefaults__``): a literal, or a name the loader binds to the value. A global rebound
after the ``def`` changes nothing, and the factory idiom ``def inner(x, k=k)`` loads.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

MODEL = """
import numpy as np

EPS = 2.0
W = np.array([1.0, 2.0, 3.0])

def helper(x, eps=EPS):
    return x * eps

def uses_helper(x):
    return np.sum(helper(x))

def keyword_helper(x, *, eps=EPS):
    return x * eps

def uses_keyword_helper(x):
    return np.sum(keyword_helper(x))

def entry(x, eps=EPS):
    return np.sum(x * eps)

def weighted(x, w=W):
    return x * w

def uses_weighted(x):
    return np.sum(weighted(x))

def factory(k):
    def inner(x, k=k):
        return np.sum(x * k)
    return inner

EPS = 5.0
W = np.zeros(3)
"""


@pytest.fixture
def model(make_module):
    return make_module(MODEL)


X = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("name", ["uses_helper", "entry", "uses_weighted"])
def test_jit_uses_the_defaults_bound_at_def(model, name):
    f = getattr(model, name)
    expected = f(X)
    assert srctrans.jit(f)(X) == expected
    assert srctrans.jit(f)(X) == expected  # a second wrapper reuses the file, bound values included


def test_the_file_writes_the_values(model):
    f = srctrans.jit(model.uses_helper)
    f(X)
    text = srctrans.source(f)
    assert "def helper(x, eps=2.0):" in text
    assert "EPS" not in text
    g = srctrans.jit(model.uses_weighted)
    g(X)
    assert "def weighted(x, w=weighted_w_default):" in srctrans.source(g)
    assert "weighted_w_default (default of weighted's parameter w)" in srctrans.source(g)


@pytest.mark.parametrize("name", ["uses_helper", "uses_keyword_helper", "entry"])
def test_grad_jvp_vmap_use_the_defaults_bound_at_def(model, name):
    f = getattr(model, name)
    compiled = name != "uses_keyword_helper"  # (Numba does not take keyword-only parameters)
    np.testing.assert_allclose(srctrans.grad(f)(X), np.full(3, 2.0))
    out, tangent = srctrans.jvp(f, (X,), (np.ones(3),))
    assert (out, tangent) == (12.0, 6.0)
    batch = np.stack([X, 2 * X])
    np.testing.assert_allclose(srctrans.vmap(f)(batch), [12.0, 24.0])
    if compiled:
        np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(X), np.full(3, 2.0))
        np.testing.assert_allclose(srctrans.jit(srctrans.vmap(f))(batch), [12.0, 24.0])


def test_the_closure_idiom_k_equals_k(model):
    inner = model.factory(3.0)
    assert inner(X) == 18.0
    assert srctrans.jit(inner)(X) == 18.0
    np.testing.assert_allclose(srctrans.grad(inner)(X), np.full(3, 3.0))
    np.testing.assert_allclose(srctrans.vmap(inner)(np.stack([X, X])), [18.0, 18.0])
    assert srctrans.jvp(inner, (X,), (np.ones(3),)) == (18.0, 9.0)
    other = model.factory(4.0)  # the same code, another default: another file
    assert srctrans.jit(other)(X) == 24.0
    assert srctrans.jit(inner)(X) == 18.0


def test_vmap_batches_only_the_arguments_given(model):
    f = srctrans.vmap(model.entry, in_axes=(0,))
    np.testing.assert_allclose(f(np.stack([X, X])), [12.0, 12.0])
    np.testing.assert_allclose(srctrans.vmap(model.entry, in_axes=(0, None))(np.stack([X, X]), 1.0), [6.0, 6.0])
