"""The corpus under grad: central differences along random directions, uncompiled."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from .corpus import CORPUS

IDS = [f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CORPUS)]


def _args(i, makers):
    rng = np.random.default_rng(1000 + i)
    return tuple(make(rng) for make in makers)


def test_corpus_is_large_enough():
    assert len({fn.__name__ for fn, _ in CORPUS}) >= 80


@pytest.mark.parametrize("i", list(range(len(CORPUS))), ids=IDS)
def test_reverse_mode_matches_central_differences(i):
    fn, makers = CORPUS[i]
    srctrans.check_grads(fn, _args(i, makers), order=1, modes=("rev",))


@pytest.mark.parametrize("i", list(range(len(CORPUS))), ids=IDS)
def test_grad_of_every_argument_agrees_with_vjp(i):
    fn, makers = CORPUS[i]
    args = _args(i, makers)
    if np.ndim(fn(*args)) != 0:
        with pytest.raises(TypeError, match="grad requires a scalar output"):
            srctrans.grad(fn)(*args)
        return
    grads = srctrans.grad(fn, argnums=tuple(range(len(args))))(*args)
    out, vjp_fn = srctrans.vjp(fn, *args)
    cotangents = vjp_fn(1.0)
    for g, c in zip(grads, cotangents, strict=True):
        np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-12)
    value, same = srctrans.value_and_grad(fn, argnums=tuple(range(len(args))))(*args)
    np.testing.assert_allclose(value, fn(*args))


# Second order differentiates the generated adjoint file again, in-place writes included.
SECOND = list(range(len(CORPUS)))


@pytest.mark.parametrize("i", SECOND, ids=[IDS[i] for i in SECOND])
def test_second_order_matches_central_differences(i):
    fn, makers = CORPUS[i]
    srctrans.check_grads(fn, _args(i, makers), order=2, modes=("rev",))


