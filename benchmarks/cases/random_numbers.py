"""Case ``random``: 10 million standard normals from an explicit key (issue 7).

Implementations, each returning a fresh array of 1e7 draws:

- ``srctrans.jit``: a function calling ``srctrans.random.normal(key, (n,), dtype)``
  through its generated file and Numba (Threefry-2x32 and JAX's inverse-erf transform,
  the same bits as JAX), float64 and float32.
- ``NumPy``: ``Generator.standard_normal`` (PCG64 and the ziggurat method: a different
  and cheaper algorithm; no key, a mutable state), float64 and float32.
- ``jax.random.normal`` under ``jax.jit`` on CPU, float64 (``jax_enable_x64``) and float32,
  when jax imports; its result is checked equal to srctrans's.

Goal (issue 7): srctrans.jit within 2x of NumPy (float64, ratio of medians).
"""

from __future__ import annotations

import time

import numpy as np
from harness import CaseResult, Row, compare, goal_line

from srctrans import random

NAME = "random"
N = 10_000_000


def draw(key, n):
    return random.normal(key, (n,))


def draw32(key, n):
    return random.normal(key, (n,), np.float32)


def _jax(n, log):
    try:
        import jax
    except ImportError:
        return {}, "jax not installed"
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    key = jax.random.key(0)
    fns = {}
    for dtype in (jnp.float64, jnp.float32):
        fn = jax.jit(lambda k, dtype=dtype: jax.random.normal(k, (n,), dtype))
        start = time.perf_counter()
        fn(key).block_until_ready()
        log(f"  jax.jit(jax.random.normal) {np.dtype(dtype).name} first call: {time.perf_counter() - start:.2f} s")
        fns[np.dtype(dtype).name] = (lambda fn=fn: fn(key).block_until_ready(), fn, key)
    return fns, f"jax {jax.__version__}"


def run(repeats: int, log=print) -> CaseResult:
    import srctrans

    key = random.key(0)
    fast = srctrans.jit(draw)
    fast32 = srctrans.jit(draw32)
    start = time.perf_counter()
    got64 = fast(key, N)
    got32 = fast32(key, N)
    log(f"  srctrans.jit first calls (generate + compile, or load caches): {time.perf_counter() - start:.2f} s")
    np.testing.assert_array_equal(got64[:100_000], random.normal(key, (N,))[:100_000])  # compiled = uncompiled

    rng = np.random.default_rng(0)
    impls = {
        "NumPy standard_normal float64": lambda: rng.standard_normal(N),
        "srctrans.jit float64": lambda: fast(key, N),
        "NumPy standard_normal float32": lambda: rng.standard_normal(N, dtype=np.float32),
        "srctrans.jit float32": lambda: fast32(key, N),
    }
    jax_fns, jax_note = _jax(N, log)
    for dtype, (timed, fn, jkey) in jax_fns.items():
        want = got64 if dtype == "float64" else got32
        same = np.array_equal(np.asarray(fn(jkey)), want)
        log(f"  jax.random.normal {dtype} equals srctrans's, bit for bit: {same}")
        impls[f"jax.random.normal float{dtype[-2:]}"] = timed
    if not jax_fns:
        log(f"  {jax_note}")
    del got64, got32

    samples = compare(impls, repeats)
    rows = [Row(NAME, impl, times) for impl, times in samples.items()]
    result = CaseResult(NAME, rows, baseline="NumPy standard_normal float64", ratio_label="NumPy f64/impl")
    med = {r.impl: r.median for r in rows}
    result.lines.append("goal (issue 7):")
    ratio = med["srctrans.jit float64"] / med["NumPy standard_normal float64"]
    result.lines.append(goal_line("srctrans.jit / NumPy, float64", ratio, "<=", 2.0))
    result.lines.append("for reference:")
    ratio32 = med["srctrans.jit float32"] / med["NumPy standard_normal float32"]
    result.lines.append(f"  srctrans.jit / NumPy, float32                 {ratio32:6.2f}")
    for dtype in ("float64", "float32"):
        jax_row = f"jax.random.normal {dtype}"
        if jax_row in med:
            result.lines.append(f"  jax / srctrans.jit, {dtype}                    {med[jax_row] / med['srctrans.jit ' + dtype]:6.2f}")
    result.lines.append(f"  ns per draw, srctrans.jit float64: {med['srctrans.jit float64'] / N * 1e9:.1f}")
    return result
