"""Case ``gradients``: reverse mode under ``jit``: gradient time against primal time, and against JAX.

Three functions, every srctrans figure under ``srctrans.jit``:

- ``euler``: a 1000-step explicit-Euler ODE written as a plain Python loop (scalar
  ``k``, ``y0``). Rows: ``srctrans.jit(euler)``, ``srctrans.jit(srctrans.grad(euler,
  argnums=(0, 1)))``, a hand-written Numba primal and adjoint (forward loop saving ``y``
  into an array, backward loop), ``jax.jit(jax.grad)`` of the same computation written
  with ``jax.lax.fori_loop``, and of ``euler`` itself (JAX unrolls the Python loop while
  tracing). Then the first call in fresh processes: ``srctrans.jit(srctrans.grad(euler))``
  with an empty ``SRCTRANS_CACHE_DIR`` and a fresh ``NUMBA_CACHE_DIR`` against
  ``jax.jit(jax.grad(euler))``.
- ``gmm``: the ADBench GMM objective (d=10, K=25, n=1000) from ``examples/gmm_gradient.py``,
  gradient with respect to alphas, means and icf; a ``jax.numpy`` port for reference.
- ``gmm_loops``: the same objective written with loops (``gmm_objective_loops``: factors built
  entry by entry, a loop over the points and one over the components), gradient / its own
  primal (issue 24's goal, <= 3); checked against the vectorized form's gradient. No JAX
  row: JAX would unroll 25,000 iterations of Python loop while tracing.
- ``mlp``: a 2-layer tanh MLP loss, x (256, 64), W1 (64, 128), W2 (128, 10), gradient with
  respect to W1, b1, W2, b2; a ``jax.numpy`` port for reference.

The MLP is timed in a child process whose BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1``
unless the caller set it): with OpenBLAS's default thread pools (NumPy's and SciPy's, which
Numba's ``@`` calls, are two separate libraries) on a small machine shared with other work,
its medians were 10-50x worse than the minimum and erratic, for NumPy as much as for srctrans.

Calls that take microseconds are timed in batches (``inner`` calls per sample, the sample
divided by ``inner``) so that the timer's resolution and jitter do not dominate.
JAX runs in float64 (``jax_enable_x64``) on inputs already on its device, results waited for
with ``jax.block_until_ready``. JAX rows are skipped with a message when jax does not import.

Goals (issue 3): gradient / primal <= 3 for all three; the Euler gradient >= 2x faster than
JAX's ``fori_loop`` version at steady state; its first call (transform + compile) faster than
JAX's first call of the Python-loop version.
"""

from __future__ import annotations

import inspect
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
from harness import CaseResult, Row, compare, fmt_time, goal_line, in_child, subprocess_env, time_process

NAME = "gradients"
REPO = Path(__file__).resolve().parents[2]
GMM_FILE = REPO.parent / "shared/data/adbench/gmm/1k/gmm_d10_K25.txt"
STEPS = 1000


def euler(k, y0):
    y = y0
    for i in range(1000):
        y = y + 0.01 * (-k * y + np.sin(0.01 * i))
    return y * y


def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def _hand_euler():
    """A hand-written Numba primal and adjoint of ``euler``: the forward loop saves y, the backward loop walks it back."""
    import numba

    @numba.njit(cache=False, error_model="numpy")
    def primal(k, y0):
        y = y0
        for i in range(1000):
            y = y + 0.01 * (-k * y + np.sin(0.01 * i))
        return y * y

    @numba.njit(cache=False, error_model="numpy")
    def adjoint(k, y0):
        ys = np.empty(1000)
        y = y0
        for i in range(1000):
            ys[i] = y
            y = y + 0.01 * (-k * y + np.sin(0.01 * i))
        y_bar = 2.0 * y
        k_bar = 0.0
        factor = 1.0 - 0.01 * k  # d y_next / d y
        for i in range(999, -1, -1):
            k_bar -= 0.01 * ys[i] * y_bar  # d y_next / d k = -0.01 y
            y_bar *= factor
        return k_bar, y_bar

    return primal, adjoint


def _batched(fn, inner):
    if inner == 1:
        return fn

    def many():
        for _ in range(inner):
            fn()

    return many


def _timed(impls: dict, repeats: int) -> dict[str, list[float]]:
    """``compare`` over ``{name: (fn, inner)}``; samples are per call (each batch divided by its size)."""
    samples = compare({name: _batched(fn, inner) for name, (fn, inner) in impls.items()}, repeats)
    return {name: [s / impls[name][1] for s in samples[name]] for name in impls}


def _import_jax():
    """(jax, None) with float64 on, or (None, why not)."""
    try:
        import jax
    except ImportError as err:
        return None, f"jax not importable ({err}); JAX rows skipped"
    jax.config.update("jax_enable_x64", True)
    return jax, None


def _first_call(label: str, log, fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    log(f"  {label} first call in this process: {time.perf_counter() - start:.2f} s")
    return out


def _failed(what: str, log, lines: list[str]) -> None:
    """Report a failure (the exception being handled) and carry on with the rest of the case."""
    err = sys.exc_info()[1]
    text = f"{type(err).__name__}: {err}"
    log(f"  FAILED: {what}: {text}")
    log("  " + traceback.format_exc().rstrip().replace("\n", "\n  "))
    lines.append(f"  FAILED: {what}: {text.splitlines()[0] if text else ''}")


# ----------------------------------------------------------------------------- euler

EULER_MODULE = "import numpy as np\n\n\n" + inspect.getsource(euler)

SRCTRANS_CHILD = """\
import time
t0 = time.perf_counter()
import json
import numpy as np
t1 = time.perf_counter()
import srctrans
t2 = time.perf_counter()
import euler_mod
g = srctrans.jit(srctrans.grad(euler_mod.euler, argnums=(0, 1)))
out = g(0.5, 1.5)
t3 = time.perf_counter()
print(json.dumps({"import": t2 - t1, "first_call": t3 - t2, "total": t3 - t1, "grad": [float(v) for v in out]}))
"""

JAX_CHILD = """\
import time
t0 = time.perf_counter()
import json
import numpy as np
t1 = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
t2 = time.perf_counter()
import euler_mod
g = jax.jit(jax.grad(euler_mod.euler, argnums=(0, 1)))
out = jax.block_until_ready(g(0.5, 1.5))
t3 = time.perf_counter()
print(json.dumps({"import": t2 - t1, "first_call": t3 - t2, "total": t3 - t1, "grad": [float(v) for v in out]}))
"""


def _fresh_first_calls(runs: int, with_jax: bool) -> dict[str, list[dict]]:
    """Each run: a fresh folder with the module, an empty SRCTRANS_CACHE_DIR and NUMBA_CACHE_DIR, one child per library."""
    reports: dict[str, list[dict]] = {"srctrans": [], "jax": []}
    for _ in range(runs):
        root = Path(tempfile.mkdtemp(prefix="srctrans-bench-gradients-"))
        try:
            (root / "euler_mod.py").write_text(EULER_MODULE)
            (root / "srctrans_child.py").write_text(SRCTRANS_CHILD)
            (root / "jax_child.py").write_text(JAX_CHILD)
            (root / "srctrans-cache").mkdir()
            (root / "numba-cache").mkdir()
            env = subprocess_env(
                SRCTRANS_CACHE_DIR=str(root / "srctrans-cache"), NUMBA_CACHE_DIR=str(root / "numba-cache")
            )
            env.pop("JAX_COMPILATION_CACHE_DIR", None)
            wall, report = time_process(["srctrans_child.py"], cwd=str(root), env=env)
            reports["srctrans"].append(dict(report, wall=wall))
            if with_jax:
                wall, report = time_process(["jax_child.py"], cwd=str(root), env=env)
                reports["jax"].append(dict(report, wall=wall))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return reports


def _euler(repeats: int, runs: int, log, rows: list[Row], lines: list[str]) -> None:
    import srctrans

    case = "euler"
    k, y0 = 0.5, 1.5
    primal, adjoint = _hand_euler()
    expected = adjoint(k, y0)
    np.testing.assert_allclose(primal(k, y0), euler(k, y0), rtol=1e-12)

    fast = srctrans.jit(euler)
    np.testing.assert_allclose(_first_call("srctrans.jit(euler)", log, fast, k, y0), euler(k, y0), rtol=1e-12)
    fast_grad = srctrans.jit(srctrans.grad(euler, argnums=(0, 1)))
    got = _first_call("srctrans.jit(srctrans.grad(euler))", log, fast_grad, k, y0)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    log(f"  generated adjoint: {srctrans.source_path(fast_grad)}")

    inner = 200
    impls = {
        "srctrans.jit primal": (lambda: fast(k, y0), inner),
        "srctrans.jit grad": (lambda: fast_grad(k, y0), inner),
        "hand-written Numba primal": (lambda: primal(k, y0), inner),
        "hand-written Numba adjoint": (lambda: adjoint(k, y0), inner),
    }
    jax, why = _import_jax()
    if jax is not None:
        import jax.numpy as jnp
        from jax import lax

        def euler_fori(k, y0):
            def body(i, y):
                return y + 0.01 * (-k * y + jnp.sin(0.01 * i))

            y = lax.fori_loop(0, STEPS, body, y0)
            return y * y

        kj, yj = jax.device_put(jnp.asarray(k)), jax.device_put(jnp.asarray(y0))
        assert kj.dtype == jnp.float64
        jax_fori = jax.jit(jax.grad(euler_fori, argnums=(0, 1)))
        got = _first_call("jax.jit(jax.grad(fori_loop version))", log, lambda: jax.block_until_ready(jax_fori(kj, yj)))
        np.testing.assert_allclose([float(v) for v in got], expected, rtol=1e-10)
        jax_unrolled = jax.jit(jax.grad(euler, argnums=(0, 1)))
        got = _first_call(
            "jax.jit(jax.grad(euler)), Python loop unrolled", log, lambda: jax.block_until_ready(jax_unrolled(kj, yj))
        )
        np.testing.assert_allclose([float(v) for v in got], expected, rtol=1e-10)
        impls["jax.jit(jax.grad), lax.fori_loop"] = (lambda: jax.block_until_ready(jax_fori(kj, yj)), inner)
        impls["jax.jit(jax.grad), Python loop unrolled"] = (lambda: jax.block_until_ready(jax_unrolled(kj, yj)), inner)
    else:
        log(f"  {why}")

    samples = _timed(impls, repeats)
    med = {name: statistics.median(s) for name, s in samples.items()}
    primal_t = med["srctrans.jit primal"]
    for name, s in samples.items():
        note = f"{med[name] / primal_t:.2f}x srctrans primal" if name != "srctrans.jit primal" else ""
        rows.append(Row(f"{NAME}/{case}", name, s, note=note))

    grad_t = med["srctrans.jit grad"]
    lines.append(f"euler (1000-step Euler ODE, Python loop; {inner} calls per sample):")
    lines.append(goal_line("euler: srctrans grad / srctrans primal", grad_t / primal_t, "<=", 3))
    lines.append(
        f"  for reference: hand-written Numba adjoint / primal {med['hand-written Numba adjoint'] / med['hand-written Numba primal']:.2f};"
        f" srctrans grad / hand adjoint {grad_t / med['hand-written Numba adjoint']:.2f}"
    )

    report = _fresh_first_calls(runs, jax is not None)
    for label, key in (("srctrans", "srctrans"), ("jax", "jax")):
        if not report[key]:
            continue
        for got in report[key]:
            np.testing.assert_allclose(got["grad"], expected, rtol=1e-10)
        what = (
            "import srctrans + jit(grad) + 1st call, cold"
            if key == "srctrans"
            else "import jax + jit(grad) + 1st call (loop unrolled)"
        )
        rows.append(
            Row(
                f"{NAME}/{case}",
                f"first call, {label}: {what}",
                [r["total"] for r in report[key]],
                note="fresh processes",
            )
        )
    if jax is not None:
        fori_t = med["jax.jit(jax.grad), lax.fori_loop"]
        lines.append(goal_line("euler: jax fori_loop grad / srctrans grad", fori_t / grad_t, ">=", 2))
        lines.append(
            f"  for reference: jax unrolled-loop grad / srctrans grad {med['jax.jit(jax.grad), Python loop unrolled'] / grad_t:.2f}"
        )
        s_total = statistics.median(r["total"] for r in report["srctrans"])
        j_total = statistics.median(r["total"] for r in report["jax"])
        lines.append(goal_line("euler first call: jax / srctrans (import+compile)", j_total / s_total, ">=", 1))
        s_call = statistics.median(r["first_call"] for r in report["srctrans"])
        j_call = statistics.median(r["first_call"] for r in report["jax"])
        lines.append(
            f"  first call without the import (medians of {runs} fresh processes): srctrans jit(grad) + 1st call"
            f" {fmt_time(s_call)} (numba is imported here, on the first call), jax {fmt_time(j_call)} (jax imported"
            f" before: {fmt_time(statistics.median(r['import'] for r in report['jax']))}); whole processes: srctrans"
            f" {fmt_time(statistics.median(r['wall'] for r in report['srctrans']))}, jax"
            f" {fmt_time(statistics.median(r['wall'] for r in report['jax']))}"
        )
    else:
        lines.append(f"  {why}")


# ----------------------------------------------------------------------------- gmm


def _gmm_jax(jnp):
    """``gmm_objective`` written with ``jax.numpy``, line for line."""

    def gmm_objective_jax(alphas, means, icf, x, index, mask, wishart_gamma, wishart_m):
        n = x.shape[0]
        d = x.shape[1]
        log_diag = icf[:, :d]
        q_diag = jnp.exp(log_diag)
        sum_log_diag = jnp.sum(log_diag, axis=1)
        L = jnp.where(mask, icf.T[index], 0.0)
        centered = jnp.expand_dims(x, 2) - jnp.expand_dims(means.T, 0)
        lower = jnp.sum(jnp.expand_dims(L, 0) * jnp.expand_dims(centered, 1), axis=2)
        scaled = jnp.expand_dims(q_diag.T, 0) * centered + lower
        main = alphas + sum_log_diag - 0.5 * jnp.sum(scaled * scaled, axis=1)
        biggest = jnp.max(main, axis=1, keepdims=True)
        log_likelihood = jnp.sum(jnp.log(jnp.sum(jnp.exp(main - biggest), axis=1)) + biggest[:, 0])
        top = jnp.max(alphas)
        log_mix = top + jnp.log(jnp.sum(jnp.exp(alphas - top)))
        prior = 0.5 * wishart_gamma * wishart_gamma * (jnp.sum(q_diag * q_diag) + jnp.sum(L * L))
        prior = prior - wishart_m * jnp.sum(sum_log_diag)
        constant = -n * d * 0.5 * math.log(2.0 * math.pi)
        return constant + log_likelihood - n * log_mix + prior

    return gmm_objective_jax


def _gmm_example(log, lines: list[str]):
    """``examples/gmm_gradient.py`` as a module, or None (said in ``lines``) when ADBench's file is missing."""
    if not GMM_FILE.exists():
        log(f"  {GMM_FILE} is missing; skipped")
        lines.append(f"  skipped: {GMM_FILE} is missing")
        return None
    sys.path.insert(0, str(REPO / "examples"))
    try:
        import gmm_gradient
    finally:
        sys.path.remove(str(REPO / "examples"))
    return gmm_gradient


def _gmm(repeats: int, log, rows: list[Row], lines: list[str]) -> None:
    import srctrans

    case = "gmm"
    lines.append("gmm (ADBench GMM objective, d=10 K=25 n=1000):")
    example = _gmm_example(log, lines)
    if example is None:
        return
    gmm_objective = example.gmm_objective
    alphas, means, icf, x, gamma, m = example.read_gmm(GMM_FILE)
    index, mask = example.lower_triangle_index(x.shape[1])
    args = (alphas, means, icf, x, index, mask, gamma, m)
    assert (x.shape[1], alphas.shape[0], x.shape[0]) == (10, 25, 1000), (x.shape, alphas.shape)
    value = gmm_objective(*args)

    impls = {}
    fast = srctrans.jit(gmm_objective)
    try:
        np.testing.assert_allclose(_first_call("srctrans.jit(gmm_objective)", log, fast, *args), value, rtol=1e-12)
        impls["srctrans.jit primal"] = (lambda: fast(*args), 1)
    except Exception:
        _failed("srctrans.jit(gmm_objective)", log, lines)
    fast_grad = srctrans.jit(srctrans.grad(gmm_objective, argnums=(0, 1, 2)))
    expected = None
    try:
        expected = _first_call("srctrans.jit(srctrans.grad(gmm_objective))", log, fast_grad, *args)
        log(f"  generated adjoint: {srctrans.source_path(fast_grad)}")
        impls["srctrans.jit grad"] = (lambda: fast_grad(*args), 1)
    except Exception:
        _failed("srctrans.jit(srctrans.grad(gmm_objective, argnums=(0, 1, 2)))", log, lines)

    jax, why = _import_jax()
    if jax is not None:
        import jax.numpy as jnp

        jargs = tuple(jax.device_put(jnp.asarray(a)) for a in args[:6]) + (gamma, m)
        jax_grad = jax.jit(jax.grad(_gmm_jax(jnp), argnums=(0, 1, 2)))
        got = _first_call(
            "jax.jit(jax.grad(gmm, jax.numpy port))", log, lambda: jax.block_until_ready(jax_grad(*jargs))
        )
        if expected is None:
            expected = srctrans.grad(gmm_objective, argnums=(0, 1, 2))(*args)  # uncompiled, for the check only
        for a, b in zip(got, expected):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-8, atol=1e-8)
        impls["jax.jit(jax.grad), jax.numpy port"] = (lambda: jax.block_until_ready(jax_grad(*jargs)), 1)
    else:
        log(f"  {why}")
    if not impls:
        return

    samples = _timed(impls, repeats)
    med = {name: statistics.median(s) for name, s in samples.items()}
    primal_t = med.get("srctrans.jit primal")
    for name, s in samples.items():
        note = f"{med[name] / primal_t:.2f}x srctrans primal" if primal_t and name != "srctrans.jit primal" else ""
        rows.append(Row(f"{NAME}/{case}", name, s, note=note))
    if primal_t and "srctrans.jit grad" in med:
        lines.append(goal_line("gmm: srctrans grad / srctrans primal", med["srctrans.jit grad"] / primal_t, "<=", 3))
        lines.append("  for reference: ADBench's hand-written C++ 1.9-7.2, Tapenade 3.7-15.5 (gradient / objective)")
    if "jax.jit(jax.grad), jax.numpy port" in med and "srctrans.jit grad" in med:
        lines.append(
            f"  for reference: jax grad / srctrans grad {med['jax.jit(jax.grad), jax.numpy port'] / med['srctrans.jit grad']:.2f}"
        )


def _gmm_loops(repeats: int, log, rows: list[Row], lines: list[str]) -> None:
    """The GMM objective written with loops (``gmm_objective_loops``): its gradient against its
    own primal, and against the vectorized form's gradient for the check."""
    import srctrans

    case = "gmm_loops"
    lines.append("gmm_loops (the same objective written with loops over points and components):")
    example = _gmm_example(log, lines)
    if example is None:
        return
    gmm_objective, gmm_objective_loops = example.gmm_objective, example.gmm_objective_loops
    alphas, means, icf, x, gamma, m = example.read_gmm(GMM_FILE)
    args = (alphas, means, icf, x, gamma, m)
    index, mask = example.lower_triangle_index(x.shape[1])
    want = srctrans.grad(gmm_objective, argnums=(0, 1, 2))(alphas, means, icf, x, index, mask, gamma, m)
    fast = srctrans.jit(gmm_objective_loops)
    fast_grad = srctrans.jit(srctrans.grad(gmm_objective_loops, argnums=(0, 1, 2)))
    np.testing.assert_allclose(
        _first_call("srctrans.jit(gmm_objective_loops)", log, fast, *args),
        gmm_objective(alphas, means, icf, x, index, mask, gamma, m),
        rtol=1e-12,
    )
    got = _first_call("srctrans.jit(srctrans.grad(gmm_objective_loops))", log, fast_grad, *args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    log(f"  generated adjoint: {srctrans.source_path(fast_grad)}")
    samples = _timed({"srctrans.jit primal": (lambda: fast(*args), 1), "srctrans.jit grad": (lambda: fast_grad(*args), 1)}, repeats)
    med = {name: statistics.median(s) for name, s in samples.items()}
    for name, s in samples.items():
        note = f"{med[name] / med['srctrans.jit primal']:.2f}x srctrans primal" if name != "srctrans.jit primal" else ""
        rows.append(Row(f"{NAME}/{case}", name, s, note=note))
    lines.append(
        goal_line("gmm_loops: srctrans grad / srctrans primal", med["srctrans.jit grad"] / med["srctrans.jit primal"], "<=", 3)
    )


# ----------------------------------------------------------------------------- mlp


def _mlp_measure(repeats: int) -> dict:
    """The MLP timings, in the process that calls it: {"samples": ..., "log": [...], "inner": n, "jax": note}."""
    import srctrans

    messages: list[str] = []
    log = messages.append
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 64))
    y = rng.standard_normal((256, 10))
    W1 = rng.standard_normal((64, 128)) / 8.0
    b1 = 0.1 * rng.standard_normal(128)
    W2 = rng.standard_normal((128, 10)) / math.sqrt(128)
    b2 = 0.1 * rng.standard_normal(10)
    args = (W1, b1, W2, b2, x, y)

    fast = srctrans.jit(mlp_loss)
    np.testing.assert_allclose(_first_call("srctrans.jit(mlp_loss)", log, fast, *args), mlp_loss(*args), rtol=1e-12)
    fast_grad = srctrans.jit(srctrans.grad(mlp_loss, argnums=(0, 1, 2, 3)))
    expected = _first_call("srctrans.jit(srctrans.grad(mlp_loss))", log, fast_grad, *args)
    log(f"  generated adjoint: {srctrans.source_path(fast_grad)}")
    inner = 20
    impls = {
        "srctrans.jit primal": (lambda: fast(*args), inner),
        "srctrans.jit grad": (lambda: fast_grad(*args), inner),
        "NumPy primal (plain function)": (lambda: mlp_loss(*args), inner),
    }
    jax, why = _import_jax()
    if jax is not None:
        import jax.numpy as jnp

        def mlp_loss_jax(W1, b1, W2, b2, x, y):
            h = jnp.tanh(x @ W1 + b1)
            out = h @ W2 + b2
            return jnp.mean((out - y) ** 2)

        jargs = tuple(jax.device_put(jnp.asarray(a)) for a in args)
        jax_grad = jax.jit(jax.grad(mlp_loss_jax, argnums=(0, 1, 2, 3)))
        got = _first_call(
            "jax.jit(jax.grad(mlp_loss, jax.numpy port))", log, lambda: jax.block_until_ready(jax_grad(*jargs))
        )
        for a, b in zip(got, expected):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-9, atol=1e-12)
        impls["jax.jit(jax.grad), jax.numpy port"] = (lambda: jax.block_until_ready(jax_grad(*jargs)), inner)
    else:
        log(f"  {why}")
    return {"samples": _timed(impls, repeats), "log": messages, "inner": inner, "jax": why}


def _mlp(repeats: int, log, rows: list[Row], lines: list[str]) -> None:
    """Timed in a child whose BLAS runs on one thread (OPENBLAS_NUM_THREADS=1 unless set already): see the module doc."""
    case = "mlp"
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "1")
    lines.append(
        f"mlp (2-layer tanh MLP loss, x (256, 64), W1 (64, 128), W2 (128, 10); OPENBLAS_NUM_THREADS={threads}):"
    )
    report = in_child("cases.gradients", "_mlp_measure", repeats, OPENBLAS_NUM_THREADS=threads)
    for message in report["log"]:
        log(message)
    samples = report["samples"]
    med = {name: statistics.median(s) for name, s in samples.items()}
    primal_t = med["srctrans.jit primal"]
    for name, s in samples.items():
        note = f"{med[name] / primal_t:.2f}x srctrans primal" if name != "srctrans.jit primal" else ""
        rows.append(Row(f"{NAME}/{case}", name, s, note=note))
    lines.append(goal_line("mlp: srctrans grad / srctrans primal", med["srctrans.jit grad"] / primal_t, "<=", 3))
    jax_name = "jax.jit(jax.grad), jax.numpy port"
    lines.append(
        f"  for reference: srctrans primal / NumPy primal {primal_t / med['NumPy primal (plain function)']:.2f}"
        + (f"; jax grad / srctrans grad {med[jax_name] / med['srctrans.jit grad']:.2f}" if jax_name in med else "")
        + f" ({report['inner']} calls per sample)"
    )
    if report["jax"]:
        lines.append(f"  {report['jax']}")


def run(repeats: int, log=print, runs: int = 3) -> CaseResult:
    rows: list[Row] = []
    lines: list[str] = ["goals (issue 3), ratios of medians:"]
    for label, part in (
        ("euler", lambda: _euler(repeats, runs, log, rows, lines)),
        ("gmm", lambda: _gmm(repeats, log, rows, lines)),
        ("gmm_loops", lambda: _gmm_loops(repeats, log, rows, lines)),
        ("mlp", lambda: _mlp(repeats, log, rows, lines)),
    ):
        log(f"-- {label}")
        start = time.perf_counter()
        try:
            part()
        except Exception:
            _failed(label, log, lines)
        log(f"  ({label}: {time.perf_counter() - start:.0f} s)")
    return CaseResult(NAME, rows, baseline=None, lines=lines)
