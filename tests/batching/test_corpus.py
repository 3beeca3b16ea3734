"""The function corpus under vmap (the rewrite and the loop) and under vmap(grad), against stacked examples."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from tests.functions.corpus import CORPUS

IDS = [f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CORPUS)]
BATCH = 3


def _examples(i, makers):
    rng = np.random.default_rng(5000 + i)
    return [tuple(make(rng) for make in makers) for _ in range(BATCH)]


def _stacked(results):
    if isinstance(results[0], tuple):
        return tuple(np.stack([np.asarray(r[k]) for r in results]) for k in range(len(results[0])))
    return np.stack([np.asarray(r) for r in results])


def _close(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def _columns(examples):
    return tuple(np.stack([np.asarray(e[k]) for e in examples]) for k in range(len(examples[0])))


METHODS: dict[str, str] = {}


@pytest.mark.parametrize("i", range(len(CORPUS)), ids=IDS)
def test_vmap_matches_stacked_examples(i):
    fn, makers = CORPUS[i]
    examples = _examples(i, makers)
    want = _stacked([fn(*e) for e in examples])
    for method in ("auto", "loop"):
        batched = srctrans.vmap(fn, method=method)
        _close(batched(*_columns(examples)), want)
        if method == "auto":
            METHODS[fn.__name__ + str(i)] = batched._last()[0].gen.meta["vmap"]["method"]


def _auto_method(i: int) -> str:
    """The method vmap(method="auto") chooses for corpus entry ``i`` (recorded by the test above)."""
    fn, makers = CORPUS[i]
    key = fn.__name__ + str(i)
    if key not in METHODS:  # run alone (-k): choose it here; the generated files make it quick
        batched = srctrans.vmap(fn)
        batched(*_columns(_examples(i, makers)))
        METHODS[key] = batched._last()[0].gen.meta["vmap"]["method"]
    return METHODS[key]


def test_most_of_the_corpus_is_vectorized():
    methods = [_auto_method(i) for i in range(len(CORPUS))]
    vectorized = sum(1 for m in methods if m == "vectorize")
    assert vectorized >= 105, f"only {vectorized} of {len(methods)} corpus functions vectorized"


SCALAR = [i for i, (fn, makers) in enumerate(CORPUS) if np.ndim(fn(*_examples(i, makers)[0])) == 0]


@pytest.mark.parametrize("i", SCALAR, ids=[IDS[i] for i in SCALAR])
def test_vmap_of_grad_gives_per_example_gradients(i):
    fn, makers = CORPUS[i]
    examples = _examples(i, makers)
    argnums = tuple(range(len(makers)))
    want = _stacked([srctrans.grad(fn, argnums=argnums)(*e) for e in examples])
    got = srctrans.vmap(srctrans.grad(fn, argnums=argnums))(*_columns(examples))
    _close(tuple(got), want)


# compiled: a few functions (each compile takes seconds)
JIT = ["mlp", "branch_sign", "while_until", "logistic_loss"]


@pytest.mark.slow
@pytest.mark.parametrize("name", JIT)
def test_jit_vmap_and_vmap_grad_compile(name):
    i = next(k for k, (fn, _) in enumerate(CORPUS) if fn.__name__ == name)
    fn, makers = CORPUS[i]
    examples = _examples(i, makers)
    cols = _columns(examples)
    _close(srctrans.jit(srctrans.vmap(fn))(*cols), _stacked([fn(*e) for e in examples]))
    argnums = tuple(range(len(makers)))
    want = _stacked([srctrans.grad(fn, argnums=argnums)(*e) for e in examples])
    _close(tuple(srctrans.jit(srctrans.vmap(srctrans.grad(fn, argnums=argnums)))(*cols)), want)
