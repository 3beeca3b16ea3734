"""vmap of the gradient of a function that branches on a value (issue 24).

The adjoint file of ``if abs(r) < 1.0: loss = 0.5 * r * r else: ...`` assigns a temporary in
one branch of the forward sweep (``t4 = 0.5 * r``) and reads it in the same branch of the
backward sweep (``if t3: ... t4 ...``). Batched, both branches run for every example; where
the branch was not taken the temporary is never read, so vmap keeps it as computed instead of
falling back to a loop over the examples. A name read where it may have no value still loops.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

RNG = np.random.default_rng(24)


def huber(w, x, y):
    r = np.dot(w, x) - y
    if abs(r) < 1.0:
        loss = 0.5 * r * r
    else:
        loss = abs(r) - 0.5
    return loss


def two_sided(w, x):
    s = np.sum(w * x)
    if s > 0.0:
        u = np.sin(s) * s
        v = u * 2.0
    else:
        v = s * s * s
    return v * np.cos(s)


def unbound_elsewhere(x):
    if x > 0.0:
        t = x * 2.0
    else:
        t = x - 1.0
    if x > 0.5:
        u = t * t
    return u if x > 0.5 else t  # u read only where it was assigned, but not under the same test


def _stacked(fn, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [fn(*(a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes))) for i in range(n)]
    return np.stack(rows)


CASES = [  # (function, arguments, in_axes, which branch each example takes)
    (huber, lambda: (RNG.standard_normal(6), RNG.standard_normal((40, 6)), 2.0 * RNG.standard_normal(40)), (None, 0, 0),
     lambda w, x, y: np.abs(x @ w - y) < 1.0),
    (two_sided, lambda: (RNG.standard_normal(5), RNG.standard_normal((30, 5))), (None, 0), lambda w, x: x @ w > 0.0),
]


@pytest.mark.parametrize("fn, make, in_axes, taken", CASES, ids=[c[0].__name__ for c in CASES])
def test_vmap_of_grad_of_a_branch_is_vectorized(fn, make, in_axes, taken):
    args = make()
    assert 0 < np.mean(taken(*args)) < 1  # both branches taken
    grad = srctrans.grad(fn)
    want = _stacked(grad, args, in_axes)
    batched = srctrans.vmap(grad, in_axes=in_axes)
    np.testing.assert_allclose(batched(*args), want, rtol=1e-12, atol=1e-12)
    assert batched._last()[0].gen.meta["vmap"]["method"] == "vectorize"
    np.testing.assert_allclose(srctrans.jit(srctrans.vmap(grad, in_axes=in_axes))(*args), want, rtol=1e-12, atol=1e-12)


def test_a_name_read_outside_its_branch_keeps_the_loop():
    x = np.array([-0.3, 0.2, 0.7, 1.4])
    batched = srctrans.vmap(unbound_elsewhere)
    np.testing.assert_allclose(batched(x), [unbound_elsewhere(v) for v in x], rtol=1e-12)
    spec = batched._last()[0]
    assert spec.gen.meta["vmap"]["method"] == "loop"
    header = next(line for line in spec.gen.path.read_text().splitlines() if line.startswith("# vmap method"))
    assert "u is assigned in one branch only" in header
