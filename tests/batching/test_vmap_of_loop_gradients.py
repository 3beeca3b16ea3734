"""vmap(grad(f)) of loops: the adjoint file vmap batches saves each trip on a tape it indexes.

The oracle is the stacking of per-example gradients. The tapes must give back exactly what each
trip saved, even when a loop's value changes dtype or shape from one trip to the next.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

RNG = np.random.default_rng(5)

FUNCTIONS = '''
import numpy as np
import srctrans

def euler(y0, k):
    y = y0
    for i in range(15):
        y = y + 0.05 * (-k * y * y + np.sin(y))
    return np.sum(y * y)

def int_start(x):
    s = 1
    for i in range(3):
        s = s * np.sum(np.sin(x))
    return s

def int_array_start(x):
    y = np.arange(3)
    for i in range(3):
        y = y * x
    return np.sum(y)

def float32_start(x):
    y = np.ones(3, np.float32)
    for i in range(3):
        y = y * x
    return np.sum(y)

def shape_grows(x):
    y = np.ones(1)
    for i in range(2):
        y = y * x
    return np.sum(y)

def g(x):
    y = x
    for i in range(4):
        y = np.tanh(y) * 1.5
    return np.sum(y)

g_grad = srctrans.grad(g)

def h(X):
    return np.sum(srctrans.vmap(g_grad)(X) ** 2)
'''


@pytest.fixture(scope="module")
def fns(tmp_path_factory):
    import importlib
    import sys

    folder = tmp_path_factory.mktemp("loop_grads")
    (folder / "loop_grad_fns.py").write_text(FUNCTIONS)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("loop_grad_fns")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("loop_grad_fns", None)


CASES = [(n, False) for n in ("euler", "int_start", "int_array_start", "float32_start", "shape_grows")]
CASES += [(n, True) for n in ("euler", "int_start", "shape_grows")]  # (an array changing dtype does not compile)


@pytest.mark.parametrize("name, compiled", CASES)
def test_vmap_of_grad_equals_the_stacked_gradients(fns, name, compiled):
    fn = getattr(fns, name)
    X = RNG.uniform(0.2, 0.9, (4, 3))
    args = (X, 0.7) if name == "euler" else (X,)
    in_axes = (0, None) if name == "euler" else 0
    batched = srctrans.vmap(srctrans.grad(fn), in_axes=in_axes)
    if compiled:
        batched = srctrans.jit(batched)
    want = np.stack([srctrans.grad(fn)(x, *args[1:]) for x in X])
    got = batched(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_gradient_of_a_function_calling_vmap_of_a_loop_gradient(fns):
    X = RNG.uniform(0.2, 0.9, (3, 2))
    for run in (srctrans.grad(fns.h), srctrans.jit(srctrans.grad(fns.h))):
        got = run(X)
        eps = 1e-6
        want = np.zeros_like(X)
        for idx in np.ndindex(X.shape):
            d = np.zeros_like(X)
            d[idx] = eps
            want[idx] = (fns.h(X + d) - fns.h(X - d)) / (2 * eps)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_a_batched_tape_gives_back_what_each_trip_saved():
    import srctrans.runtime as rt

    tape = rt.batch_tape(np.zeros((2, 1)), 3)
    tape[:, 0] = np.zeros((2, 1), np.int64)
    tape[:, 1] = np.ones((2, 3))
    assert tape[:, 0].dtype == np.int64 and tape[:, 1].shape == (2, 3)
    with pytest.raises(IndexError, match=r"\[:, trip\]"):
        tape[0]
