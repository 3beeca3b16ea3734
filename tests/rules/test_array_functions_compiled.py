"""The gradients of the array functions and reductions of issue 20, compiled.

``test_derivatives.py`` checks their rules against central differences in plain Python; here
``srctrans.jit(srctrans.grad(f))`` (the adjoint file compiled by Numba, with the overloads of
the helpers it calls) must give the numbers ``srctrans.grad(f)`` gives. What does not compile
is listed in numba_backend/coverage.py (tests/numba_backend/test_compile_status.py checks
every rule's first spec compiled).
"""

from __future__ import annotations

import numpy as np
import pytest

import numba_backend.runtime_overloads  # noqa: F401  (registers the overloads)
import srctrans

pytestmark = pytest.mark.slow  # compiles

B = np.array([0.3, -0.7, 1.1, 0.2])
NANS = np.array([[True, False, False, False], [False, True, False, True], [False, False, False, False]])
XP = np.array([-1.0, -0.2, 0.5, 0.9, 2.0])
XS = np.array([-1.5, -1.0, -0.6, 0.0, 0.5, 0.7, 1.9, 2.0, 2.5])


def _clip(x):
    return np.sum(np.clip(x, a_min=-0.5, a_max=0.5) * x)


def _nan_to_num(x):
    return np.sum(np.nan_to_num(np.where(NANS, np.nan, x)) * x)


def _nanmin(x):
    return np.nanmin(x) * x[0, 0]


def _average(x, w):
    return np.average(x, weights=w) * 2.0 + np.average(x) ** 2


def _median(x):
    return np.median(x) * x[0, 0]


def _append(x, y):
    return np.sum(np.append(x, y) ** 2) + np.sum(np.append(x, y[None, :], axis=0) ** 2 * B)


def _column_stack(x, y):
    return np.sum(np.column_stack((x, y)) ** 3)


def _kron(a, b):
    return np.sum(np.kron(a, b) ** 2) + np.sum(np.kron(a[0], np.ascontiguousarray(b[:, 0])) * 2.0)


def _cross(x):
    return np.sum(np.cross(x[:, :3], x[:, 1:]) ** 2)


def _select(x):
    xx = x * x
    return np.sum(np.select([x > 0.5, x < -0.5], [xx, x], 0.0) * B)


def _array_split(x):
    a, b = np.array_split(x, 2, axis=1)
    return np.sum(a * a) + np.sum(b * 2.0)


def _splits(x):
    a, b = np.hsplit(x, 2)
    c, d = np.vsplit(x, 2)
    return np.sum(a * b * b) + np.sum(c * d)


def _convolve(a, v):
    return np.sum(np.convolve(a, v) ** 2)


def _interp(fp):
    return np.sum(np.interp(XS, XP, fp) ** 2) + np.interp(0.3, XP, fp) * 2.0


CASES = [
    (_clip, ((3, 4),)), (_nan_to_num, ((3, 4),)), (_nanmin, ((3, 4),)), (_average, ((3, 4), (3, 4))), (_median, ((3, 4),)),
    (_append, ((3, 4), (4,))), (_column_stack, ((3, 2), (3,))), (_kron, ((2, 3), (2, 2))), (_cross, ((3, 4),)),
    (_select, ((3, 4),)), (_array_split, ((3, 4),)), (_splits, ((4, 4),)), (_convolve, ((5,), (3,))), (_interp, ((5,),)),
]


@pytest.mark.parametrize("f,shapes", CASES, ids=[c[0].__name__.lstrip("_") for c in CASES])
def test_compiled_gradient_matches_the_plain_one(f, shapes):
    rng = np.random.default_rng(len(shapes) + sum(map(len, shapes)))
    args = tuple(rng.uniform(0.5, 1.5, s) if f is _average and k == 1 else rng.standard_normal(s) for k, s in enumerate(shapes))
    argnums = tuple(range(len(args)))
    got = srctrans.jit(srctrans.grad(f, argnums=argnums))(*args)
    want = srctrans.grad(f, argnums=argnums)(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _partition(x):
    return np.sum(np.partition(x, 2) * B) + np.sum(np.partition(x.ravel(), 5) * np.arange(12.0))


def test_compiled_partition_gradient_follows_the_compiled_partition():
    """Numba's np.partition may arrange the elements around the k-th otherwise than NumPy's: the
    compiled gradient is that of the compiled function (central differences of it)."""
    x = np.random.default_rng(7).standard_normal((3, 4))
    f = srctrans.jit(_partition)
    got = srctrans.jit(srctrans.grad(_partition))(x)
    h = 1e-6
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = h
        assert got[index] == pytest.approx((f(x + e) - f(x - e)) / (2 * h), abs=1e-6)
