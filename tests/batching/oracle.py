"""JAX's vmap oracle: a batched call equals the per-example results stacked."""

from __future__ import annotations

import itertools

import numpy as np

import srctrans


def example_sets(makers, size: int, seed: int) -> list[list]:
    rng = np.random.default_rng(seed)
    shared = [make(rng) for make in makers]  # the value of an argument that is not batched
    return shared, [[make(rng) for make in makers] for _ in range(max(size, 1))][:size]


def axes_choices(makers, batchable, seed: int) -> list[tuple]:
    """Every in_axes combination: None or each axis of the batched array, per argument."""
    rng = np.random.default_rng(seed)
    options = []
    for k, make in enumerate(makers):
        nd = np.ndim(make(rng))
        allowed = batchable is None or batchable[k]
        options.append([None] + (list(range(nd + 1)) if allowed else []))
    return list(itertools.product(*options))


def stack_along(values, axis: int, template) -> np.ndarray:
    if not values:
        return np.moveaxis(np.zeros((0,) + np.shape(template), dtype=np.asarray(template).dtype), 0, axis)
    return np.stack([np.asarray(v) for v in values], axis=axis)


def check(fn, makers, in_axes: tuple, size: int, seed: int, method: str, out_axes=0, compiled: bool = False) -> None:
    shared, examples = example_sets(makers, size, seed)
    args = []
    for k, a in enumerate(in_axes):
        if a is None:
            args.append(shared[k])
        else:
            args.append(stack_along([e[k] for e in examples], a, shared[k]))
    per_example = [[shared[k] if a is None else e[k] for k, a in enumerate(in_axes)] for e in examples]
    with np.errstate(all="ignore"):
        expected = [np.asarray(fn(*a)) for a in per_example]
        template = np.asarray(fn(*shared))
    batched = srctrans.vmap(fn, in_axes=in_axes, out_axes=out_axes, method=method,
                            axis_size=size if all(a is None for a in in_axes) else None)
    if compiled:
        batched = srctrans.jit(batched)
    with np.errstate(all="ignore"):
        got = np.asarray(batched(*args))
    if out_axes is None:
        want = template
    else:
        want = stack_along(expected, 0, template)
        want = np.moveaxis(want, 0, out_axes % (want.ndim))
    assert got.shape == want.shape, (got.shape, want.shape, in_axes)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
