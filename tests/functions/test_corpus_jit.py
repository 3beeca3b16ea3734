"""The corpus under ``jit(grad)``: the compiled adjoint equals the uncompiled one, function by function."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from .corpus import CORPUS

pytestmark = pytest.mark.slow

SCALAR = []
for _i, (_fn, _makers) in enumerate(CORPUS):
    _args = tuple(make(np.random.default_rng(1000 + _i)) for make in _makers)
    if np.ndim(_fn(*_args)) == 0:
        SCALAR.append(_i)


@pytest.mark.parametrize("i", SCALAR, ids=[f"{CORPUS[i][0].__name__}-{i}" for i in SCALAR])
def test_compiled_adjoint_equals_the_generated_python(i):
    fn, makers = CORPUS[i]
    args = tuple(make(np.random.default_rng(1000 + i)) for make in makers)
    argnums = tuple(range(len(args)))
    expected = srctrans.value_and_grad(fn, argnums=argnums)(*args)
    got = srctrans.jit(srctrans.value_and_grad(fn, argnums=argnums))(*args)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
    for g, e in zip(got[1], expected[1], strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


# grad(grad(f)) with respect to a scalar argument, for every corpus function taking one
SCALAR_FIRST = [
    i for i in SCALAR
    if isinstance(CORPUS[i][1][0](np.random.default_rng(1000 + i)), float)
    and CORPUS[i][0].__name__ not in ("mutated_after_use", "trajectory_buffer")
]


def _second_derivative_by_differences(fn, args, h=1e-5):
    first = srctrans.grad(fn)
    up = (args[0] + h, *args[1:])
    down = (args[0] - h, *args[1:])
    return (first(*up) - first(*down)) / (2 * h)


@pytest.mark.parametrize("i", SCALAR_FIRST, ids=[f"{CORPUS[i][0].__name__}-{i}" for i in SCALAR_FIRST])
def test_grad_of_grad_uncompiled_and_compiled(i):
    fn, makers = CORPUS[i]
    args = tuple(make(np.random.default_rng(1000 + i)) for make in makers)
    second = srctrans.grad(srctrans.grad(fn))
    expected = _second_derivative_by_differences(fn, args)
    got = second(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(srctrans.jit(second)(*args), got, rtol=1e-10, atol=1e-12)


def test_at_least_ten_functions_under_grad_of_grad():
    assert len({CORPUS[i][0].__name__ for i in SCALAR_FIRST}) >= 10
