"""Case ``gpu_jit``: ``jit(..., target="cuda")`` of array code, gradients and batches, beside JAX on the same GPU.

Run on a machine with an NVIDIA GPU, CuPy and JAX (``benchmarks/gpu_check.sh`` does)::

    python benchmarks/cases/gpu_jit.py

Four programs, float64 throughout (JAX with ``jax_enable_x64``; float32 matrix products
would let JAX use TF32 and compare different arithmetic):

- ``poly``: ``x * x + x * 2.0`` on a 5000 x 5000 array (one fused kernel);
- ``mlp``: per-example gradients of a 2-layer MLP loss for 10^5 examples,
  ``vmap(grad(loss), in_axes=(None, 0, 0))`` with the parameters as a tuple;
- ``euler``: ``vmap(grad)`` of a 500-step Euler loop for 10^4 initial conditions
  (JAX's twin writes the loop with ``lax.fori_loop``);
- ``layer``: the gradient of ``sum(tanh(X @ W + b))`` with respect to ``W``, 4096 x 4096.

Inputs live on the GPU for the steady-state rows (a CuPy array for srctrans, a JAX array
for JAX); each row is the median of ``--repeats`` calls, each ended by a synchronize. The
first call (generating the files, compiling the kernels; JAX's trace and XLA compile) is
timed apart. ``mlp`` and ``euler`` are also run by srctrans on one CPU core (``jit`` of the
same vmap on the CPU, ``NUMBA_NUM_THREADS=1``) for the "x one core" column. Every result
is checked against JAX's first (rtol 1e-9): a wrong answer is reported, not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # CuPy shares the GPU's memory
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # srctrans and numba_backend from this checkout

import numpy as np  # noqa: E402


def poly(x):
    return x * x + x * 2.0


def mlp_loss(params, x, t):
    W1, b1, W2, b2 = params
    h = np.tanh(x @ W1 + b1)
    o = h @ W2 + b2
    return np.sum((o - t) ** 2)


STEPS = 500


def euler(y0, k):
    y = y0
    for i in range(STEPS):  # noqa: B007 - (as users write it)
        y = y + 0.002 * (-k * y * y + np.sin(y))
    return y * y


def layer(W, X, b):
    return np.sum(np.tanh(X @ W + b))


def median_time(fn, sync, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[-1] - times[0]


def first_time(fn, sync) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - t, out


def jax_twins():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def jpoly(x):
        return x * x + x * 2.0

    def jmlp(params, x, t):
        W1, b1, W2, b2 = params
        h = jnp.tanh(x @ W1 + b1)
        o = h @ W2 + b2
        return jnp.sum((o - t) ** 2)

    def jeuler(y0, k):
        def step(i, y):
            return y + 0.002 * (-k * y * y + jnp.sin(y))

        y = jax.lax.fori_loop(0, STEPS, step, y0)
        return y * y

    def jlayer(W, X, b):
        return jnp.sum(jnp.tanh(X @ W + b))

    return jax, {
        "poly": jax.jit(jpoly),
        "mlp": jax.jit(jax.vmap(jax.grad(jmlp), in_axes=(None, 0, 0))),
        "euler": jax.jit(jax.vmap(jax.grad(jeuler), in_axes=(0, None))),
        "layer": jax.jit(jax.grad(jlayer)),
    }


def inputs(rng, quick: bool) -> dict:
    n_poly = 1000 if quick else 5000
    n_mlp, d, h, o = (2000 if quick else 100_000), 16, 32, 4
    n_euler = 1000 if quick else 10_000
    n_layer = 512 if quick else 4096
    params = (rng.standard_normal((d, h)) / 4, rng.standard_normal(h) / 4, rng.standard_normal((h, o)) / 4, rng.standard_normal(o) / 4)
    return {
        "poly": (rng.standard_normal((n_poly, n_poly)),),
        "mlp": (params, rng.standard_normal((n_mlp, d)), rng.standard_normal((n_mlp, o))),
        "euler": (rng.uniform(0.1, 1.0, n_euler), 0.7),
        "layer": (rng.standard_normal((n_layer, n_layer)) / 64, rng.standard_normal((n_layer, n_layer)), rng.standard_normal(n_layer) / 8),
    }


def srctrans_functions(target: str) -> dict:
    import srctrans

    return {
        "poly": srctrans.jit(poly, target=target),
        "mlp": srctrans.jit(srctrans.vmap(srctrans.grad(mlp_loss), in_axes=(None, 0, 0)), target=target),
        "euler": srctrans.jit(srctrans.vmap(srctrans.grad(euler), in_axes=(0, None)), target=target),
        "layer": srctrans.jit(srctrans.grad(layer), target=target),
    }


def cpu_one_core(case: str, args, repeats: int) -> float:
    """srctrans's jit of the same program on one CPU core (a child process, one thread)."""
    import subprocess

    code = f"""
import os, sys, time, pickle
sys.path.insert(0, {HERE!r}); sys.path.insert(0, {os.path.dirname(os.path.dirname(HERE))!r})
import numpy as np
import gpu_jit
args = pickle.loads(sys.stdin.buffer.read())
f = gpu_jit.srctrans_functions("cpu")[{case!r}]
f(*args)
times = []
for _ in range({repeats}):
    t = time.perf_counter(); f(*args); times.append(time.perf_counter() - t)
print(sorted(times)[len(times) // 2])
"""
    import pickle

    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(args), capture_output=True, env=env, timeout=150)
    if proc.returncode:
        raise RuntimeError(proc.stderr.decode()[-2000:])
    return float(proc.stdout.decode().split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--cases", default="poly,mlp,euler,layer")
    parser.add_argument("--no-cpu", action="store_true", help="skip the one-core CPU column")
    parser.add_argument("--json", help="write the rows to this file too")
    args = parser.parse_args(argv)

    import cupy

    import srctrans

    def sync():
        cupy.cuda.runtime.deviceSynchronize()

    jax, twins = jax_twins()
    jdev = jax.devices()[0]
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}; JAX {jax.__version__} on {jdev}; CuPy {cupy.__version__}")
    data = inputs(np.random.default_rng(0), args.quick)
    ours = srctrans_functions("cuda")
    rows = []
    status = 0
    for case in args.cases.split(","):
        host_args = data[case]
        dev_args = srctrans.device_put(host_args, srctrans.devices("cuda")[0])
        jax_args = jax.device_put(host_args, jdev)
        jfn, fn = twins[case], ours[case]

        j_first = time.perf_counter()
        ref = jax.block_until_ready(jfn(*jax_args))
        j_first = time.perf_counter() - j_first
        s_first, out = first_time(lambda f=fn, a=dev_args: f(*a), sync)
        want = [np.asarray(r) for r in jax.tree_util.tree_leaves(ref)]
        got = [np.asarray(srctrans.device_get(r)) for r in srctrans.tree.tree_leaves(out)]
        ok = len(want) == len(got) and all(g.shape == w.shape and np.allclose(g, w, rtol=1e-9, atol=1e-12) for g, w in zip(got, want))
        if not ok:
            status = 1
            err = max((float(np.max(np.abs(g - w))) if g.shape == w.shape else float("inf")) for g, w in zip(got, want))
            print(f"{case}: WRONG against JAX (max abs difference {err:.3g}); not timed")
            rows.append({"case": case, "ok": False})
            continue
        s_med, s_spread = median_time(lambda f=fn, a=dev_args: f(*a), sync, args.repeats)
        j_med, j_spread = median_time(lambda f=jfn, a=jax_args: jax.block_until_ready(f(*a)), lambda: None, args.repeats)
        row = {"case": case, "ok": True, "srctrans_s": s_med, "srctrans_spread_s": s_spread, "jax_s": j_med,
               "jax_spread_s": j_spread, "first_srctrans_s": s_first, "first_jax_s": j_first}
        if case in ("mlp", "euler") and not args.no_cpu:
            try:
                row["cpu_one_core_s"] = cpu_one_core(case, host_args, max(3, args.repeats // 5))
            except Exception as err:  # noqa: BLE001 - reported, the GPU rows stand
                print(f"{case}: the one-core CPU run failed: {err}")
        rows.append(row)
        print(f"{case}: srctrans {s_med * 1e3:.3f} ms, JAX {j_med * 1e3:.3f} ms (first calls {s_first:.2f} s / {j_first:.2f} s)", flush=True)
    print()
    print(f"{'case':8} {'srctrans ms':>12} {'JAX ms':>10} {'JAX/ours':>9} {'goal':>6} {'1 core ms':>10} {'x 1 core':>9} {'goal':>6} {'first s (ours/JAX)':>20}")
    for r in rows:
        if not r["ok"]:
            print(f"{r['case']:8} WRONG")
            continue
        ratio = r["jax_s"] / r["srctrans_s"]
        core = r.get("cpu_one_core_s")
        core_txt = f"{core * 1e3:10.1f} {core / r['srctrans_s']:9.1f} {'>=50':>6}" if core else f"{'':10} {'':9} {'':6}"
        print(f"{r['case']:8} {r['srctrans_s'] * 1e3:12.3f} {r['jax_s'] * 1e3:10.3f} {ratio:9.2f} {'>=0.67':>6} {core_txt} "
              f"{r['first_srctrans_s']:9.2f} / {r['first_jax_s']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
