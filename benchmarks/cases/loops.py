"""Case ``loops``: the gradient of a recurrence that reads one row of its input per step.

``rnn(W, xs, h)``: ``h = np.tanh(W @ h + xs[t])`` for every row of ``xs`` (W 64x64, xs
(T, 64)), then ``np.sum(h * h)``; gradient with respect to W and xs. Each step's read
``xs[t]`` has an adjoint that is one row of xs's; the adjoint file adds it into that row in
place (``rt.getitem_grad_add``), where adding a whole array per step made the backward
loop O(T) per step, O(T^2) in all. Rows, for T = 250, 1000 and 4000:
``srctrans.jit(rnn)``, ``srctrans.jit(srctrans.grad(rnn, argnums=(0, 1)))``, a hand-written
Numba adjoint (the forward loop saving h, the backward loop), and
``jax.jit(jax.grad)`` of the same recurrence written with ``jax.lax.scan``.

Goals: none in an issue; the gradient's time per step stays flat as T grows (it is linear),
and the gradient / primal ratio is near the hand-written Numba adjoint's.
Standalone: ``python benchmarks/cases/loops.py``.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np
from harness import CaseResult, Row, compare

NAME = "loops"
LENGTHS = (250, 1000, 4000)


def rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h * h)


def _hand_numba():
    import numba

    @numba.njit(cache=False)
    def hand_grad(W, xs, h0):
        T, n = xs.shape
        hs = np.empty((T + 1, n))
        hs[0] = h0
        for t in range(T):
            hs[t + 1] = np.tanh(W @ hs[t] + xs[t])
        out = np.sum(hs[T] * hs[T])
        W_bar = np.zeros_like(W)
        xs_bar = np.zeros_like(xs)
        h_bar = 2.0 * hs[T]
        for t in range(T - 1, -1, -1):
            pre_bar = h_bar * (1.0 - hs[t + 1] * hs[t + 1])
            xs_bar[t] = pre_bar
            W_bar += np.outer(pre_bar, hs[t])
            h_bar = W.T @ pre_bar
        return out, (W_bar, xs_bar)

    return hand_grad


def _jax(W, xs, h, log):
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    except Exception as err:  # noqa: BLE001 - any import failure skips the JAX rows
        log(f"  (JAX rows skipped: {type(err).__name__}: {err})")
        return None

    def rnn_scan(W, xs, h):
        def step(h, x):
            return jnp.tanh(W @ h + x), None

        h, _ = jax.lax.scan(step, h, xs)
        return jnp.sum(h * h)

    fn = jax.jit(jax.value_and_grad(rnn_scan, argnums=(0, 1)))
    args = tuple(jnp.asarray(a) for a in (W, xs, h))
    return lambda: jax.block_until_ready(fn(*args))


def run(repeats: int, log=print) -> CaseResult:
    import srctrans

    rng = np.random.default_rng(0)
    n = 64
    W = rng.standard_normal((n, n)) / np.sqrt(n)
    h = 0.1 * rng.standard_normal(n)
    primal = srctrans.jit(rnn)
    grad = srctrans.jit(srctrans.grad(rnn, argnums=(0, 1)))
    hand = _hand_numba()
    rows: list[Row] = []
    lines: list[str] = []
    per_step = {}
    for T in LENGTHS:
        xs = 0.5 * rng.standard_normal((T, n))
        expected = hand(W, xs, h)
        got = grad(W, xs, h)
        np.testing.assert_allclose(got[0], expected[1][0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got[1], expected[1][1], rtol=1e-9, atol=1e-12)
        impls = {
            "srctrans.jit primal": lambda xs=xs: primal(W, xs, h),
            "srctrans.jit(grad)": lambda xs=xs: grad(W, xs, h),
            "hand-written Numba adjoint": lambda xs=xs: hand(W, xs, h),
        }
        jax_fn = _jax(W, xs, h, log)
        if jax_fn is not None:
            impls["jax.jit(jax.value_and_grad) (lax.scan)"] = jax_fn
        samples = compare(impls, repeats)
        for impl, s in samples.items():
            rows.append(Row(f"rnn T={T}", impl, s))
        med = {impl: sorted(s)[len(s) // 2] for impl, s in samples.items()}
        p = med["srctrans.jit primal"]
        per_step[T] = med["srctrans.jit(grad)"] / T
        parts = [f"grad / primal {med['srctrans.jit(grad)'] / p:.2f}", f"hand Numba adjoint / primal {med['hand-written Numba adjoint'] / p:.2f}"]
        if "jax.jit(jax.value_and_grad) (lax.scan)" in med:
            parts.append(f"JAX / srctrans grad {med['jax.jit(jax.value_and_grad) (lax.scan)'] / med['srctrans.jit(grad)']:.2f}")
        lines.append(f"T={T}: " + "; ".join(parts) + f"; grad per step {per_step[T] * 1e6:.2f} us")
    lines.append(
        f"grad time per step, T={LENGTHS[-1]} / T={LENGTHS[0]}: {per_step[LENGTHS[-1]] / per_step[LENGTHS[0]]:.2f} (1.0: linear in T)"
    )
    return CaseResult(NAME, rows, lines=lines)  # (ratios in the lines: each length has its own primal)


if __name__ == "__main__":
    from harness import print_table

    print_table(run(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
