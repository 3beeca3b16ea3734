"""``pair(x)[1]``: a tuple your function returns, indexed with a number, is read as an unpacking.

grad and jvp raised "indexing a tuple or list of differentiated values is not differentiated"
(an unlocated TypeError at run time), and vmap sent the function to its per-example loop.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from ..conftest import central_differences, module_from_text

MODEL = '''
import numpy as np


def pair(x):
    return x * 2.0, np.sin(x)


def pair_branches(x):
    if np.sum(x) > 100.0:
        return x, x
    return x * 2.0, np.sin(x)


def indexed_inline(x):
    return np.sum(pair(x)[1] * pair(x)[0])


def indexed_name(x):
    r = pair_branches(x)
    return np.sum(r[0] * np.cos(r[-1]))


def indexed_in_a_loop(x):
    s = 0.0
    for i in range(3):
        r = pair(x * (i + 1.0))
        s = s + np.sum(r[1])
    return s


def used_whole(x):
    r = pair(x)
    a, b = r
    return np.sum(a * b) + np.sum(r[0])
'''

X = np.array([0.3, 0.7, -0.2])
NAMES = ["indexed_inline", "indexed_name", "indexed_in_a_loop"]


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("indexed"), "indexedmodel", MODEL) as module:
        yield module


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_grad_and_jvp_of_an_indexed_result(m, name, compiled):
    f = getattr(m, name)
    g = srctrans.grad(f)
    if compiled:
        g = srctrans.jit(g)
    want = central_differences(f, (X,), 0)
    np.testing.assert_allclose(g(X), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(srctrans.jvp(f, (X,), (np.ones(3),))[1], np.sum(want), rtol=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_vmap_and_per_example_gradients_of_an_indexed_result(m, name):
    f = getattr(m, name)
    xs = np.stack([X, 2.0 * X, -X])
    batched = srctrans.vmap(f)
    np.testing.assert_allclose(batched(xs), [f(x) for x in xs], rtol=1e-12)
    if name != "indexed_name":  # (vmap loops over a callee that returns in several places)
        assert batched._last()[0].gen.meta["vmap"]["method"] == "vectorize"
    np.testing.assert_allclose(srctrans.vmap(srctrans.grad(f))(xs), [central_differences(f, (x,), 0) for x in xs], rtol=1e-6, atol=1e-9)


def test_the_adjoint_file_unpacks_the_tuple(m):
    text = srctrans.grad(m.indexed_name).source()
    assert "r_0, r_1 = r" in text and "r_bar = (r_0_bar, r_1_bar)" in text


def test_a_tuple_also_used_whole_is_left_as_written(m):
    f = m.used_whole
    np.testing.assert_allclose(srctrans.jit(f)(X), f(X), rtol=1e-12)
    assert "r_0, r_1 = r" not in srctrans.jit(f).source()
