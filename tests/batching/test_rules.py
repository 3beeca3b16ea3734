"""Every batching rule against JAX's oracle: vmap(op) equals the per-example results stacked.

For each spec (tests/batching/ops.py) every in_axes combination (None, or each axis of the
batched array, per argument), batch sizes 0, 1 and 3, with the vectorized rewrite (which
must not fall back to the loop), and a moved out_axes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

import srctrans
from srctrans.rules.batching import BATCHING

from .ops import PASS_THROUGH, SPECS
from .oracle import axes_choices, check

IDS = [f"{key}-{fn.__name__}-{i}" for i, (key, fn, _, _) in enumerate(SPECS)]


def test_every_rule_has_a_spec():
    assert set(BATCHING) <= {key for key, *_ in SPECS} | {key for key, _ in PASS_THROUGH}


@pytest.mark.parametrize("key, fn", PASS_THROUGH)
def test_collective_of_another_axis_is_left_in_place(key, fn):
    batched = srctrans.vmap(fn, axis_name="mine")
    with pytest.raises(NameError, match="unbound axis name 'elsewhere'"):
        batched(np.ones((2, 3)))
    assert "srctrans." in batched.source().split("def ")[-1]


@pytest.mark.parametrize("i", range(len(SPECS)), ids=IDS)
def test_rule_matches_stacked_examples(i):
    key, fn, makers, batchable = SPECS[i]
    for in_axes in axes_choices(makers, batchable, seed=i):
        # nothing batched: axis_size is part of the file, so one size is enough
        for size in (3, 1, 0) if any(a is not None for a in in_axes) else (3,):
            check(fn, makers, in_axes, size, seed=100 * i + size, method="vectorize")
    batched = tuple(None if b is False else 0 for b in (batchable or [True] * len(makers)))
    check(fn, makers, batched, 2, seed=7 * i, method="vectorize", out_axes=-1)
    check(fn, makers, batched, 2, seed=7 * i, method="loop", out_axes=-1)


UNBROADCAST_TO_ARRAYS = [i for i, (key, _, makers, _) in enumerate(SPECS) if key == "srctrans.runtime.unbroadcast" and len(makers) == 2]


@pytest.mark.parametrize("i", UNBROADCAST_TO_ARRAYS)
def test_unbroadcast_to_arrays_compiled(i):
    """rt.batch_unbroadcast and rt.batch_unbroadcast_to have Numba overloads of their own.

    Compiled: the batch axis first (contiguous arrays) for each choice of batched arguments, and
    last for all of them (the overloads on non-contiguous views); every other axis runs as Python
    in test_rule_matches_stacked_examples (the boundary moves it to the front either way)."""
    key, fn, makers, batchable = SPECS[i]
    choices = axes_choices(makers, batchable, seed=i)
    last = max(choices, key=lambda axes: sum(-1 if a is None else a for a in axes))
    for in_axes in [c for c in choices if set(c) <= {None, 0}] + [last]:
        if any(a is not None for a in in_axes):
            check(fn, makers, in_axes, 3, seed=11 * i, method="vectorize", compiled=True)


def _linear_algebra(a, b, c):
    x = np.linalg.solve(a, b) + np.linalg.solve(c, b)  # a batch of matrices a; one matrix c, all of b
    return np.linalg.det(a) * np.sum(np.linalg.inv(a) @ x) + np.sum(scipy.linalg.expm(0.1 * a)) + np.sum(
        np.linalg.cholesky(a @ a.T) @ np.linalg.matrix_power(a, 2)
    )


@pytest.mark.slow
def test_linear_algebra_on_a_batch_compiles_as_one_call():
    """The batching rules of np.linalg's functions on stacks (and scipy.linalg.expm) write one call
    on the whole batch, which compiles (Numba's stack overloads) and equals the stacked examples."""
    r = np.random.default_rng(5)
    a = r.uniform(-0.5, 0.5, (4, 3, 3)) + 2.0 * np.eye(3)
    b, c = r.normal(size=(4, 3)), r.uniform(-0.5, 0.5, (3, 3)) + 2.0 * np.eye(3)
    want = np.array([_linear_algebra(a[k], b[k], c) for k in range(4)])
    batched = srctrans.vmap(_linear_algebra, in_axes=(0, 0, None))
    np.testing.assert_allclose(batched(a, b, c), want, rtol=1e-12)
    body = batched.source().split("def ")[-1]
    assert "for " not in body and "solve(a, b[:, :, None])[:, :, 0]" in body, body
    np.testing.assert_allclose(srctrans.jit(batched)(a, b, c), want, rtol=1e-12)


def _along_axes(x, s):
    y = np.swapaxes(x, 0, 1) + np.moveaxis(x, 0, 1) + np.roll(np.fliplr(np.flipud(x)), 1, axis=0).T
    z = np.sort(x, axis=0) + np.take(x, [0, 2, 1], axis=1) + np.round(np.full_like(x, 0.25), 1)
    w = np.repeat(np.diagonal(np.tril(x) + np.triu(x, 1)), 2, axis=0) * np.sum(np.cross(x, x[0] + 1.0))
    return np.sum(y) + np.sum(np.ascontiguousarray(z)) * math.erf(s) + np.sum(w) * math.lgamma(2.0 + s) + np.sum(np.argsort(x, axis=0))


@pytest.mark.slow
def test_functions_along_axes_on_a_batch_compile():
    r = np.random.default_rng(6)
    x, s = r.normal(size=(4, 3, 3)), r.uniform(0.2, 0.9, 4)
    want = np.array([_along_axes(x[k], s[k]) for k in range(4)])
    batched = srctrans.vmap(_along_axes)
    np.testing.assert_allclose(batched(x, s), want, rtol=1e-12)
    assert "for " not in batched.source().split("def ")[-1]
    np.testing.assert_allclose(srctrans.jit(batched)(x, s), want, rtol=1e-12)


def _sort_flat(x):
    return np.sort(x, axis=None)


def _argsort_flat(x):
    return np.argsort(x, None)


def _cross_first_axis(a):
    return np.cross(a, a[::-1] + 1.0, axis=0)


def _full_like_other_shape(x):
    return np.full_like(x, 2.0, shape=(2,)) * np.sum(x)


def _zeros_like_other_shape(x):
    return np.zeros_like(x, float, "K", True, (2,)) + np.sum(x)


@pytest.mark.parametrize("fn", [_sort_flat, _argsort_flat, _cross_first_axis, _full_like_other_shape, _zeros_like_other_shape])
def test_forms_a_rule_does_not_cover_equal_the_stacked_examples(fn):
    """axis=None flattens, cross along the first axis, shape= gives another shape: the rules refuse
    these forms (the batch loops over the examples), never a batched call of another meaning."""
    x = np.random.default_rng(8).normal(size=(4, 3, 3))
    want = np.stack([fn(x[k]) for k in range(4)])
    np.testing.assert_array_equal(srctrans.vmap(fn)(x), want)
