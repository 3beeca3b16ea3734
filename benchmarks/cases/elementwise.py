"""Case ``elementwise``: the seed's ``x * x + x * 2.0`` on a 5000x5000 float64 array (200 MB).

Implementations, all returning a freshly allocated 5000x5000 result:

- ``NumPy``: the plain function; three temporaries' worth of memory traffic.
- ``srctrans.jit``: the same function through its generated file and Numba.
- ``hand-written Numba``: ``numba.njit`` explicit loop into ``np.empty_like(x)``, the
  same work written by hand, in the same process, so it shares the allocator hook
  that srctrans's ``numba_backend`` installs (large Numba arrays on huge pages).
- ``hand-written Numba, plain``: the same loop timed in a child process that never
  imports srctrans: Numba as it comes, arrays on ordinary 4 KiB pages.
- ``jax.jit``: float64 (``jax_enable_x64``) on an array already on the JAX device;
  only when jax imports.
- ``copy floor``: ``x.copy()``, reading and writing the same bytes: the memory
  bandwidth floor for any one-pass implementation.

Goals (issue 2): NumPy / srctrans.jit >= 2.5 and srctrans.jit / copy <= 1.5.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
from harness import CaseResult, Row, compare, fmt_time, goal_line, time_process

NAME = "elementwise"
SHAPE = (5000, 5000)
HAND = "hand-written Numba"
PLAIN = "hand-written Numba, plain"


def calc(x):
    return x * x + x * 2.0


def _hand_numba():
    import numba

    @numba.njit(cache=False)
    def calc_loop(x):
        out = np.empty_like(x)
        n, m = x.shape
        for i in range(n):
            for j in range(m):
                v = x[i, j]
                out[i, j] = v * v + v * 2.0
        return out

    return calc_loop


def _jax(x, log):
    """(callable, note) for jax.jit of calc in float64, or (None, reason)."""
    try:
        import jax
    except ImportError:
        return None, "jax not installed"
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    xj = jax.device_put(jnp.asarray(x))
    assert xj.dtype == jnp.float64, xj.dtype
    fn = jax.jit(calc)
    start = time.perf_counter()
    fn(xj).block_until_ready()
    log(f"  jax.jit first call (trace + XLA compile): {time.perf_counter() - start:.2f} s")
    np.testing.assert_allclose(np.asarray(fn(xj)), calc(x), rtol=1e-12, atol=1e-14)  # XLA may fuse into FMA
    return (lambda: fn(xj).block_until_ready()), f"jax {jax.__version__}"


# Hand-written Numba in a process that never imports srctrans, so without the huge-page
# allocator hook that srctrans's numba_backend installs for every Numba array in its process.
PLAIN_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from harness import compare
from cases.elementwise import SHAPE, _hand_numba, calc
assert "srctrans" not in sys.modules and "numba_backend" not in sys.modules
x = np.random.default_rng(0).standard_normal(SHAPE)
hand = _hand_numba()
samples = compare({"NumPy": lambda: calc(x), "hand": lambda: hand(x)}, int(sys.argv[2]))
assert "numba_backend" not in sys.modules
print(json.dumps(samples))
"""


def _plain_process(repeats: int) -> dict[str, list[float]]:
    benchmarks = str(Path(__file__).resolve().parent.parent)
    return time_process(["-c", PLAIN_CHILD, benchmarks, str(repeats)])[1]


def run(repeats: int, log=print) -> CaseResult:
    import srctrans

    x = np.random.default_rng(0).standard_normal(SHAPE)
    expected = calc(x)

    fast = srctrans.jit(calc)
    start = time.perf_counter()
    got = fast(x)
    first = time.perf_counter() - start
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    log(
        f"  srctrans.jit first call (generate + compile, or load caches): {first:.2f} s; generated file: {srctrans.source_path(fast)}"
    )

    hand = _hand_numba()
    np.testing.assert_allclose(hand(x), expected, rtol=1e-12)
    del got, expected

    impls = {
        "NumPy": lambda: calc(x),
        "srctrans.jit": lambda: fast(x),
        HAND: lambda: hand(x),
        "copy floor (x.copy())": lambda: x.copy(),
    }
    jax_fn, jax_note = _jax(x, log)
    if jax_fn is not None:
        impls["jax.jit"] = jax_fn
    else:
        log(f"  {jax_note}")

    samples = compare(impls, repeats)
    rows = [Row(NAME, impl, times) for impl, times in samples.items()]
    if jax_fn is not None:
        rows[-1].note = jax_note
    plain = _plain_process(repeats)
    rows.append(Row(NAME, PLAIN, plain["hand"], note="its own process, no srctrans"))
    result = CaseResult(NAME, rows, baseline="NumPy", ratio_label="NumPy/impl")

    med = {r.impl: r.median for r in rows}
    jit = med["srctrans.jit"]
    result.lines.append("goals:")
    result.lines.append(goal_line("NumPy / srctrans.jit (speed-up over NumPy)", med["NumPy"] / jit, ">=", 2.5))
    result.lines.append(goal_line("srctrans.jit / copy floor", jit / med["copy floor (x.copy())"], "<=", 1.5))
    result.lines.append("for reference:")
    result.lines.append(f"  srctrans.jit / hand-written Numba             {jit / med[HAND]:6.2f}   (same process)")
    result.lines.append(
        f"  srctrans.jit / hand-written Numba             {jit / med[PLAIN]:6.2f}   (plain process: NumPy there"
        f" {fmt_time(statistics.median(plain['NumPy']))}, hand Numba {fmt_time(med[PLAIN])})"
    )
    if "jax.jit" in med:
        result.lines.append(f"  srctrans.jit / jax.jit                        {jit / med['jax.jit']:6.2f}")
    gbytes = 2 * x.nbytes / 1e9  # one read and one write of 200 MB
    result.lines.append(
        f"  copy floor bandwidth: {gbytes / med['copy floor (x.copy())']:.1f} GB/s (read + write); srctrans.jit: {gbytes / jit:.1f} GB/s"
    )
    result.lines.append(
        "  'same process' Numba arrays use the huge-page allocator hook that srctrans's numba_backend installs"
        " (SRCTRANS_HUGEPAGES=0 turns it off); the 'plain process' row is Numba as it comes."
    )
    return result
