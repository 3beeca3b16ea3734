"""Case ``gpu``: per-example gradients of logistic regression on a GPU, ``pmap(grad(loss), backend="cuda")``.

Run on a machine with an NVIDIA GPU (``benchmarks/gpu_check.sh`` does)::

    python benchmarks/cases/gpu.py --n 100000 --d 20

Rows (best of ``--repeats``; seconds per call and examples per second):

- ``cuda end to end``: ``pmap(grad(loss), in_axes=(None, 0, 0), backend="cuda")(w, X, y)``:
  X and y copied to the GPU, the generated kernel (one thread per example), the
  gradients copied back;
- ``cuda kernel only``: the same stage on data already on the GPU (``runner.map`` and a
  synchronize), what a training loop that keeps its data there pays;
- ``cpu jit(vmap(grad))``: the compiled vectorized rewrite on this machine's CPU;
- ``numpy by hand``: ``(sigmoid(X @ w) - y)[:, None] * X``.

The first call's time (writing the files and compiling the kernel) is printed apart.
Every figure is checked against the NumPy one first (rtol 1e-9): a wrong answer is
reported, not timed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # srctrans and numba_backend from this checkout


def loss(w, x, y):
    z = np.dot(w, x)
    p = 1.0 / (1.0 + np.exp(-z))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def hand_grads(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (p - y)[:, None] * X


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="examples")
    parser.add_argument("--d", type=int, default=20, help="features")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)

    from numba import cuda

    import srctrans

    if not cuda.is_available():
        print("gpu: no CUDA GPU here (numba.cuda.is_available() is False); nothing to time")
        return 1
    simulated = bool(cuda.config.ENABLE_CUDASIM)
    gpu = cuda.get_current_device()
    name = getattr(gpu, "name", "?")
    name = name.decode() if isinstance(name, bytes) else name
    print(f"gpu: {name} cc={getattr(gpu, 'compute_capability', '?')} simulated={simulated}")
    n, d = (min(args.n, 256), args.d) if simulated else (args.n, args.d)
    rng = np.random.default_rng(0)
    w, X, y = rng.normal(size=d), rng.normal(size=(n, d)), (rng.random(n) > 0.5) * 1.0
    want = hand_grads(w, X, y)

    pm = srctrans.pmap(srctrans.grad(loss), in_axes=(None, 0, 0), backend="cuda")
    t = time.perf_counter()
    got = pm(w, X, y)
    first = time.perf_counter() - t
    ok = np.allclose(got, want, rtol=1e-9, atol=1e-12)
    print(f"first call (files written, kernel compiled): {first:.2f} s; equal to NumPy: {ok}")
    if not ok:
        print(f"gpu: WRONG per-example gradients: max abs error {np.max(np.abs(got - want)):.3e}")
        return 1

    rows = []
    rows.append(("cuda end to end", best(lambda: pm(w, X, y), args.repeats)))

    # the kernel alone, on data already on the GPU
    runner = pm.runner()
    (stage,) = [s for s in pm._last.stages.values()]  # the one map stage of this pmap
    xs, ys, wd = runner.put(X), runner.put(y), runner.to_every_device(w)
    outs = runner.map(stage, (wd, xs, ys), stage.batched)
    np.testing.assert_allclose(runner.get(outs[-1]), want, rtol=1e-9, atol=1e-12)

    def kernel_only():
        runner.map(stage, (wd, xs, ys), stage.batched)
        cuda.synchronize()

    rows.append(("cuda kernel only", best(kernel_only, args.repeats)))
    jv = srctrans.jit(srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0)))
    np.testing.assert_allclose(jv(w, X, y), want, rtol=1e-9, atol=1e-12)
    rows.append(("cpu jit(vmap(grad))", best(lambda: jv(w, X, y), args.repeats)))
    rows.append(("numpy by hand", best(lambda: hand_grads(w, X, y), args.repeats)))

    print(f"\nper-example gradients of logistic regression, N={n}, D={d} (best of {args.repeats})")
    print(f"{'':24s}{'seconds':>12s}{'examples/s':>14s}")
    for name, sec in rows:
        print(f"{name:24s}{sec:12.6f}{n / sec:14.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
