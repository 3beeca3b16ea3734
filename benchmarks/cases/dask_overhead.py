"""Case ``dask_overhead``: what one call of a tiny pmapped function costs on Dask, beside the CPU backend.

A 2-worker ``LocalCluster`` on loopback (``srctrans.distributed.connect()``: worker
processes with one thread each) against 2 logical CPU devices (``SRCTRANS_CPU_DEVICES=2``,
the compiled prange runner), both compiled. The work is negligible (16 numbers), so each
figure is the per-call overhead of the backend:

- ``centered``: ``x - pmean(x, "i")``: a map, a reduction over all examples, a map, get.
- ``scale``: ``sin(x) * w``, no collective: one map and get.
- ``new array``: ``centered`` on a fresh array each call, which ``put`` scatters again (the
  other rows reuse the blocks already on the workers).
- ``Dask round trip``: ``client.submit(f, x).result()`` for a trivial ``f``: the floor that
  any one synchronous Dask step pays on this machine.

The first call (Numba compiling the shipped files on each worker) is timed once and
printed, not counted. Needs ``dask[distributed]``; skipped with a message without it.
"""

from __future__ import annotations

import os
import time

import numpy as np
from harness import CaseResult, Row, compare

import srctrans
from srctrans import pmean

NAME = "dask_overhead"
N = 16


def centered(x):
    return x - pmean(x, "i")


def scale(x, w):
    return np.sin(x) * w


def _noop(x):
    return x


def run(repeats: int, log=print) -> CaseResult:
    try:
        import distributed  # noqa: F401
    except ImportError:
        result = CaseResult(NAME, [])
        result.lines.append("  skipped: dask[distributed] is not installed (pip install 'srctrans[dask]')")
        return result
    from srctrans import distributed as sd

    x = np.linspace(0.0, 1.0, N)
    w = 0.5
    start = time.perf_counter()
    client = sd.connect()
    log(f"  LocalCluster with 2 worker processes started and connected in {time.perf_counter() - start:.2f} s")
    old = os.environ.get("SRCTRANS_CPU_DEVICES")
    os.environ["SRCTRANS_CPU_DEVICES"] = "2"
    try:
        on = {
            backend: (
                srctrans.pmap(centered, axis_name="i", backend=backend),
                srctrans.pmap(scale, in_axes=(0, None), backend=backend),
            )
            for backend in ("dask", "cpu")
        }
        for backend, (c, s) in on.items():
            start = time.perf_counter()
            np.testing.assert_allclose(c(x), x - x.mean(), rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(s(x, w), np.sin(x) * w, rtol=1e-12)
            log(f"  {backend}: first calls (compile) {time.perf_counter() - start:.2f} s")
        fresh = [x + k for k in range(repeats + 2)]
        taken = iter(fresh)
        impls = {
            "dask centered": lambda: on["dask"][0](x),
            "cpu centered": lambda: on["cpu"][0](x),
            "dask scale": lambda: on["dask"][1](x, w),
            "cpu scale": lambda: on["cpu"][1](x, w),
            "dask centered, new array": lambda: on["dask"][0](next(taken)),
            "Dask round trip": lambda: client.submit(_noop, x, pure=False).result(),
        }
        samples = compare(impls, repeats)
    finally:
        if old is None:
            os.environ.pop("SRCTRANS_CPU_DEVICES", None)
        else:
            os.environ["SRCTRANS_CPU_DEVICES"] = old
        sd.close()
    rows = [
        Row(f"{NAME}/{name.split()[1].rstrip(',') if name.startswith(('dask', 'cpu')) else 'floor'}", name, v)
        for name, v in samples.items()
    ]
    result = CaseResult(NAME, rows, baseline="cpu centered", ratio_label="x cpu centered", speedup=False)
    med = {r.impl: r.median for r in rows}
    result.lines.append(
        f"  per-call overhead of backend='dask' over 'cpu': centered {1e3 * (med['dask centered'] - med['cpu centered']):.1f} ms, "
        f"scale {1e3 * (med['dask scale'] - med['cpu scale']):.1f} ms; one Dask round trip {1e3 * med['Dask round trip']:.1f} ms"
    )
    return result
