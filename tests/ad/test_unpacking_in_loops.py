"""``p, q = pair(x)`` inside a loop: the targets of an unpacking are assigned, not read.

Also elements as targets: ``z[0], z[1] = e1, e2`` and ``a, z[1] = pair(x)`` gave zero
derivatives (the write was not seen); they are lowered to one store per element.

grad refused it before with "'p' is read in a loop iteration before the loop assigns it".
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


def unpacked_each_trip(x):
    s = 0.0
    for i in range(3):
        p, q = pair(x * (i + 1))
        s = s + np.sum(p * q)
    return s


def carried_pair(x):
    p = x
    q = x
    for i in range(3):
        p, q = q * 0.5, np.sin(p)
    return np.sum(p * q)


def into_elements(x):
    z = np.zeros(3)
    z[0], z[1] = np.sin(x[0]), x[1] * x[2]
    return np.sum(z * z)


def elements_swapped(x):
    z = x * 1.0
    z[0], z[1] = z[1], z[0] * 2.0
    return np.sum(z * np.arange(1.0, 4.0))


def unpacked_into_elements(x):
    z = np.zeros(2)
    a, z[1] = pair(x[0] * x[1])
    return np.sum(z) * a


def swapped(x):
    a = x
    b = x * x
    for i in range(3):
        a, b = b, a + np.sin(b)
    return np.sum(a * b)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("unpack"), "unpackmodel", MODEL) as module:
        yield module


X = np.array([0.3, 0.7, -0.2])


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(
    "name", ["unpacked_each_trip", "carried_pair", "swapped", "into_elements", "elements_swapped", "unpacked_into_elements"]
)
def test_unpacking_in_a_loop_is_differentiated(m, name, compiled):
    f = getattr(m, name)
    g = srctrans.grad(f)
    if compiled:
        g = srctrans.jit(g)
    np.testing.assert_allclose(g(X), central_differences(f, (X,), 0), rtol=1e-7, atol=1e-9)
    tangent = srctrans.jvp(f, (X,), (np.ones(3),))[1]
    np.testing.assert_allclose(tangent, np.sum(central_differences(f, (X,), 0)), rtol=1e-7)


def test_a_swap_keeps_its_meaning_under_vmap_and_jit(m):
    xs = np.stack([X, 2 * X, -X])
    want = np.stack([m.swapped(x) for x in xs])
    np.testing.assert_allclose(srctrans.vmap(m.swapped)(xs), want, rtol=1e-12)
    np.testing.assert_allclose(srctrans.jit(m.swapped)(X), m.swapped(X), rtol=1e-12)
