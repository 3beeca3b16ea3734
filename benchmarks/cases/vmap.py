"""Case ``vmap``: batched functions from ``srctrans.vmap`` under ``srctrans.jit``, against NumPy and JAX.

Two workloads, srctrans figures under ``srctrans.jit``:

- ``per-example grads``: the gradient of a logistic-regression loss for each of N=1000
  examples of D=20 features, ``vmap(grad(loss), in_axes=(None, 0, 0))`` (the vectorized
  rewrite of the adjoint file, and the per-example loop for reference), against a
  hand-written vectorized NumPy version ``(sigmoid(X @ w) - y)[:, None] * X`` and
  ``jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))``.
- ``per-example grads through your functions``: a 2-layer MLP loss written with a helper
  ``dense(W, x)`` (W1 32x20, W2 1x32), gradients over W1 and W2 for each of N=1000
  examples: ``vmap(grad(net), in_axes=(None, None, 0, 0))``, whose adjoint file calls
  ``dense``'s adjoint (vectorized as a callee), against the same with ``method="loop"``
  and ``jax.jit(jax.vmap(jax.grad(...)))``. Its small products (1000x20 by 20x32) are where
  OpenBLAS's default threads on a small shared machine go wrong: 7.8 ms for one product
  that takes 25 us on one thread (measured in Numba and NumPy alike); run with
  ``OPENBLAS_NUM_THREADS=1`` to see the code rather than the thread pool.
- ``per-example grads of a branch``: the gradient of a Huber loss (``if abs(r) < 1.0``) for
  each of N=10,000 examples of 8 features, ``vmap(grad(huber), in_axes=(None, 0, 0))``: the
  branch on a batched value becomes a masked select (issue 24; it looped over the examples
  before), against the same with ``method="loop"``, hand-written NumPy and JAX's
  ``jax.jit(jax.vmap(jax.grad(...)))`` (``jnp.where`` in place of the ``if``).
- ``tanh(W @ x)``: one tanh layer (W 512x512) over a batch of 1,000 vectors of 512,
  ``vmap(layer, in_axes=(None, 0))``, whose ``W @ x`` becomes one matrix-matrix product,
  against the per-example loop in NumPy, one NumPy matmul ``X @ W.T`` alone, and the
  NumPy batched expression ``np.tanh(X @ W.T)``.

BLAS runs with the thread count the process was started with (set ``OPENBLAS_NUM_THREADS``
for steadier figures on a shared machine). JAX runs in float64 on inputs already on its
device; its rows are skipped with a message when jax does not import.

Goals (issue 5): per-example gradients compiled <= 1.5x the hand-written NumPy version
and faster than JAX's; the batched layer >= 5x faster than the per-example NumPy loop
and within 1.5x of one NumPy matmul.
"""

from __future__ import annotations

import time

import numpy as np
from harness import CaseResult, Row, compare, goal_line

NAME = "vmap"
N, D = 1000, 20
BATCH, WIDTH = 1000, 512


def loss(w, x, y):
    z = np.dot(x, w)
    p = 1.0 / (1.0 + np.exp(-z))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def layer(W, x):
    return np.tanh(W @ x)


def hand_grads(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (p - y)[:, None] * X


def _batched(fn, inner: int):
    def run():
        for _ in range(inner):
            fn()

    return run


def _jax_grads(w, X, y, log):
    try:
        import jax
    except ImportError:
        return None, "jax not installed"
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def jloss(w, x, y):
        p = 1.0 / (1.0 + jnp.exp(-jnp.dot(x, w)))
        return -(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))

    fn = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
    wj, Xj, yj = (jax.device_put(jnp.asarray(a)) for a in (w, X, y))
    start = time.perf_counter()
    fn(wj, Xj, yj).block_until_ready()
    log(f"  jax.jit(vmap(grad)) first call: {time.perf_counter() - start:.2f} s")
    np.testing.assert_allclose(np.asarray(fn(wj, Xj, yj)), hand_grads(w, X, y), rtol=1e-10, atol=1e-12)
    return (lambda: fn(wj, Xj, yj).block_until_ready()), f"jax {jax.__version__}"


def dense(W, x):
    return np.tanh(W @ x)


def net(W1, W2, x, y):
    return np.sum((dense(W2, dense(W1, x)) - y) ** 2)


def _callee_grads(rng, repeats: int, log) -> list[Row]:
    import srctrans

    W1, W2 = rng.normal(size=(32, D)) / np.sqrt(D), rng.normal(size=(1, 32)) / np.sqrt(32)
    X, y = rng.normal(size=(N, D)), rng.normal(size=(N, 1))
    axes = (None, None, 0, 0)
    vectorized = srctrans.jit(srctrans.vmap(srctrans.grad(net, argnums=(0, 1)), in_axes=axes))
    looped = srctrans.jit(srctrans.vmap(srctrans.grad(net, argnums=(0, 1)), in_axes=axes, method="loop"))
    one = srctrans.grad(net, argnums=(0, 1))
    got, again = vectorized(W1, W2, X, y), looped(W1, W2, X, y)
    for k in (0, N - 1):
        for a, b, c in zip(got, again, one(W1, W2, X[k], y[k])):
            np.testing.assert_allclose(a[k], c, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(b[k], c, rtol=1e-10, atol=1e-12)
    method = srctrans.vmap(srctrans.grad(net, argnums=(0, 1)), in_axes=axes)
    method(W1, W2, X, y)
    log(f"  per-example grads through dense: vmap method {method._last()[0].gen.meta['vmap']['method']}")
    impls = {
        "srctrans.jit(vmap(grad(net)))": (lambda: vectorized(W1, W2, X, y)),
        "srctrans.jit(vmap(grad(net))), loop": (lambda: looped(W1, W2, X, y)),
    }
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def jnet(W1, W2, x, y):
            return jnp.sum((jnp.tanh(W2 @ jnp.tanh(W1 @ x)) - y) ** 2)

        jfn = jax.jit(jax.vmap(jax.grad(jnet, argnums=(0, 1)), in_axes=axes))
        jargs = tuple(jnp.asarray(a) for a in (W1, W2, X, y))
        np.testing.assert_allclose(np.asarray(jfn(*jargs)[0]), got[0], rtol=1e-9, atol=1e-12)
        impls["jax.jit(vmap(grad(net)))"] = lambda: jax.block_until_ready(jfn(*jargs))
    except Exception as err:  # noqa: BLE001 - any JAX failure skips its row
        log(f"  (JAX row skipped: {type(err).__name__}: {err})")
    samples = compare(impls, repeats)
    return [Row(f"{NAME}/callee_grads", k, v) for k, v in samples.items()]


def huber(w, x, y):
    r = np.dot(w, x) - y
    if abs(r) < 1.0:
        loss = 0.5 * r * r
    else:
        loss = abs(r) - 0.5
    return loss


def hand_huber_grads(w, X, y):
    r = X @ w - y
    return np.where(np.abs(r) < 1.0, r, np.sign(r))[:, None] * X


def _branch_grads(rng, repeats: int, log) -> list[Row]:
    import srctrans

    n, d = 10_000, 8
    w, X, y = rng.normal(size=d), rng.normal(size=(n, d)), 2.0 * rng.normal(size=n)
    axes = (None, 0, 0)
    vectorized = srctrans.jit(srctrans.vmap(srctrans.grad(huber), in_axes=axes))
    looped = srctrans.jit(srctrans.vmap(srctrans.grad(huber), in_axes=axes, method="loop"))
    want = hand_huber_grads(w, X, y)
    np.testing.assert_allclose(vectorized(w, X, y), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(looped(w, X, y), want, rtol=1e-12, atol=1e-12)
    method = srctrans.vmap(srctrans.grad(huber), in_axes=axes)
    method(w, X, y)
    log(f"  per-example grads of a branch: vmap method {method._last()[0].gen.meta['vmap']['method']}")
    impls = {
        "hand-written NumPy": (lambda: hand_huber_grads(w, X, y)),
        "srctrans.jit(vmap(grad(huber)))": (lambda: vectorized(w, X, y)),
        "srctrans.jit(vmap(grad(huber))), loop": (lambda: looped(w, X, y)),
    }
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def jhuber(w, x, y):
            r = jnp.dot(w, x) - y
            return jnp.where(jnp.abs(r) < 1.0, 0.5 * r * r, jnp.abs(r) - 0.5)

        jfn = jax.jit(jax.vmap(jax.grad(jhuber), in_axes=axes))
        jargs = tuple(jnp.asarray(a) for a in (w, X, y))
        np.testing.assert_allclose(np.asarray(jfn(*jargs)), want, rtol=1e-12, atol=1e-12)
        impls["jax.jit(vmap(grad(huber)))"] = lambda: jax.block_until_ready(jfn(*jargs))
    except Exception as err:  # noqa: BLE001 - any JAX failure skips its row
        log(f"  (JAX row skipped: {type(err).__name__}: {err})")
    samples = compare(impls, repeats)
    return [Row(f"{NAME}/branch_grads", k, v) for k, v in samples.items()]


def run(repeats: int, log=print) -> CaseResult:
    import srctrans

    rng = np.random.default_rng(0)
    w, X = rng.normal(size=D), rng.normal(size=(N, D))
    y = (rng.uniform(size=N) > 0.5) * 1.0
    expected = hand_grads(w, X, y)
    grads = srctrans.jit(srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0)))
    looped = srctrans.jit(srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0), method="loop"))
    start = time.perf_counter()
    np.testing.assert_allclose(grads(w, X, y), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(looped(w, X, y), expected, rtol=1e-10, atol=1e-12)
    log(f"  srctrans first calls (generate + compile, or load caches): {time.perf_counter() - start:.2f} s")
    log(f"  generated file: {grads.source_path()}")

    inner = 20
    impls = {
        "hand-written NumPy": (lambda: hand_grads(w, X, y)),
        "srctrans.jit(vmap(grad))": (lambda: grads(w, X, y)),
        "srctrans.jit(vmap(grad)), loop": (lambda: looped(w, X, y)),
    }
    jax_fn, jax_note = _jax_grads(w, X, y, log)
    if jax_fn is not None:
        impls["jax.jit(vmap(grad))"] = jax_fn
    else:
        log(f"  {jax_note}")
    samples = compare({k: _batched(f, inner) for k, f in impls.items()}, repeats)
    rows = [Row(f"{NAME}/grads", k, [t / inner for t in v]) for k, v in samples.items()]
    if jax_fn is not None:
        rows[-1].note = jax_note

    W = rng.normal(size=(WIDTH, WIDTH)) / np.sqrt(WIDTH)
    xs = rng.normal(size=(BATCH, WIDTH))
    batched_layer = srctrans.jit(srctrans.vmap(layer, in_axes=(None, 0)))
    plain_layer = srctrans.vmap(layer, in_axes=(None, 0))
    np.testing.assert_allclose(batched_layer(W, xs), np.tanh(xs @ W.T), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(plain_layer(W, xs), np.tanh(xs @ W.T), rtol=1e-10, atol=1e-12)
    layer_impls = {
        "NumPy per-example loop": (lambda: np.stack([layer(W, x) for x in xs])),
        "srctrans.jit(vmap(layer))": (lambda: batched_layer(W, xs)),
        "srctrans.vmap(layer), uncompiled": (lambda: plain_layer(W, xs)),
        "one NumPy matmul (xs @ W.T)": (lambda: xs @ W.T),
        "NumPy np.tanh(xs @ W.T)": (lambda: np.tanh(xs @ W.T)),
    }
    samples = compare(layer_impls, repeats)
    rows += [Row(f"{NAME}/layer", k, v) for k, v in samples.items()]
    rows += _callee_grads(rng, repeats, log)
    rows += _branch_grads(rng, repeats, log)

    result = CaseResult(NAME, rows, baseline=None)
    med = {r.impl: r.median for r in rows}
    g = med["srctrans.jit(vmap(grad))"]
    result.lines.append("goals:")
    result.lines.append(goal_line("grads: srctrans / hand-written NumPy", g / med["hand-written NumPy"], "<=", 1.5))
    if jax_fn is not None:
        result.lines.append(goal_line("grads: jax / srctrans", med["jax.jit(vmap(grad))"] / g, ">=", 1.0))
    lay = med["srctrans.jit(vmap(layer))"]
    result.lines.append(goal_line("layer: NumPy per-example loop / srctrans", med["NumPy per-example loop"] / lay, ">=", 5))
    result.lines.append(goal_line("layer: srctrans / one NumPy matmul", lay / med["one NumPy matmul (xs @ W.T)"], "<=", 1.5))
    from numba_backend import vector_math

    result.lines.append(f"for reference (compiled tanh: {vector_math.describe()}; the uncompiled file runs NumPy's):")
    plain = med["srctrans.vmap(layer), uncompiled"]
    result.lines.append(goal_line("layer: NumPy loop / srctrans uncompiled", med["NumPy per-example loop"] / plain, ">=", 5))
    result.lines.append(goal_line("layer: srctrans uncompiled / one matmul", plain / med["one NumPy matmul (xs @ W.T)"], "<=", 1.5))
    v = med["srctrans.jit(vmap(grad(net)))"]
    parts = [f"loop / vectorized {med['srctrans.jit(vmap(grad(net))), loop'] / v:.2f}"]
    if "jax.jit(vmap(grad(net)))" in med:
        parts.append(f"jax / srctrans {med['jax.jit(vmap(grad(net)))'] / v:.2f}")
    result.lines.append("per-example grads through dense (no goal): " + "; ".join(parts))
    b = med["srctrans.jit(vmap(grad(huber)))"]
    parts = [f"loop / vectorized {med['srctrans.jit(vmap(grad(huber))), loop'] / b:.1f}"]
    if "jax.jit(vmap(grad(huber)))" in med:
        result.lines.append(goal_line("branch grads: jax / srctrans", med["jax.jit(vmap(grad(huber)))"] / b, ">=", 1.0))
    result.lines.append("per-example grads of a branch: " + "; ".join(parts))
    return result
