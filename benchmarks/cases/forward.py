"""Case ``forward``: forward mode and second order under ``jit``, against the primal and against JAX.

- ``euler``: the 1000-step Euler ODE of ``gradients`` (scalar ``k``, ``y0``): the compiled
  primal, ``srctrans.jvp`` of ``srctrans.jit(euler)`` along ``(1, 0)`` (the public call,
  with its argument checks) and the compiled tangent file called directly, and the
  Hessian-vector product ``jvp(jit(grad(euler)))`` (forward over reverse).
- ``mlp``: the 2-layer tanh MLP loss of ``gradients`` (x (256, 64), W1 (64, 128), W2
  (128, 10)): the same rows, tangents along all four parameters and zero tangents for the
  data x, y (the public call drops zero tangents, as JAX does for closed-over values); JAX
  side by side with the same six tangents passed to its jitted jvp.
- ``hessian100``: ``srctrans.hessian`` of ``jit(f)`` for a 100-parameter function
  (``f(x) = sum(tanh(A @ x) ** 2) + 0.5 * sum(x ** 4)``, A (50, 100)): all 100 basis
  vectors at once through the compiled vmap file of the tangent file of the adjoint file
  (its header says whether it vectorized or loops over the basis vectors in compiled
  code); beside the Python loop over basis vectors it replaced (100 calls of the compiled
  tangent file) and ``jax.jit(jax.hessian(f))``.

Goals (issue 4): jvp / primal <= 2 on the Euler ODE and the MLP; HVP / primal <= 5.
Calls that take microseconds are timed in batches. Standalone: ``python benchmarks/cases/forward.py``.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # one BLAS thread, as gradients' MLP child process (set before NumPy loads)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import math

import numpy as np
from harness import CaseResult, Row, compare, goal_line

NAME = "forward"


def euler(k, y0):
    y = y0
    for i in range(1000):
        y = y + 0.01 * (-k * y + np.sin(0.01 * i))
    return y * y


def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def hundred(x, A):
    return np.sum(np.tanh(A @ x) ** 2) + 0.5 * np.sum(x ** 4)


def _timed(impls: dict, repeats: int) -> dict[str, list[float]]:
    """``compare`` over ``{name: (fn, inner)}``; samples are per call."""

    def batched(fn, inner):
        def many():
            for _ in range(inner):
                fn()

        return many

    samples = compare({name: batched(fn, inner) for name, (fn, inner) in impls.items()}, repeats)
    return {name: [s / impls[name][1] for s in samples[name]] for name in impls}


def _tangent_file(fn, wrt):
    """The compiled tangent file's dispatcher (what ``srctrans.jvp`` runs after its checks)."""
    import srctrans
    from srctrans.tangents import tangents_for as _tangents_for

    runner = _tangents_for(srctrans.jit(fn) if not hasattr(fn, "_compile") else fn, wrt, False).runner
    spec = runner._any_spec()
    return spec.compiled


def _euler(repeats, rows, lines, log):
    import srctrans

    k, y0 = 0.7, 1.2
    fast = srctrans.jit(euler)
    jvp_direct = _tangent_file(fast, ("k", "y0"))
    hvp_fn = srctrans.jit(srctrans.grad(euler, argnums=(0, 1)))
    expected = srctrans.jvp(euler, (k, y0), (1.0, 0.0))
    got = srctrans.jvp(fast, (k, y0), (1.0, 0.0))
    assert np.allclose(got, expected, rtol=1e-12)
    assert np.allclose(jvp_direct(k, y0, 1.0, 0.0), expected, rtol=1e-12)
    srctrans.jvp(hvp_fn, (k, y0), (1.0, 0.0))
    inner = 200
    impls = {
        "srctrans.jit primal": (lambda: fast(k, y0), inner),
        "srctrans.jvp(jit) (public call)": (lambda: srctrans.jvp(fast, (k, y0), (1.0, 0.0)), inner),
        "compiled tangent file (direct)": (lambda: jvp_direct(k, y0, 1.0, 0.0), inner),
        "HVP: srctrans.jvp(jit(grad)) (public call)": (lambda: srctrans.jvp(hvp_fn, (k, y0), (1.0, 0.0)), inner),
    }
    med = _record("euler", _timed(impls, repeats), rows)
    p = med["srctrans.jit primal"]
    lines.append(f"euler (1000-step Euler ODE; {inner} calls per sample):")
    lines.append(goal_line("euler: jvp (tangent file) / primal", med["compiled tangent file (direct)"] / p, "<=", 2))
    lines.append(goal_line("euler: jvp (public call) / primal", med["srctrans.jvp(jit) (public call)"] / p, "<=", 2))
    lines.append(goal_line("euler: HVP (public call) / primal", med["HVP: srctrans.jvp(jit(grad)) (public call)"] / p, "<=", 5))


def _mlp(repeats, rows, lines, log):
    import srctrans

    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 64))
    y = rng.standard_normal((256, 10))
    W1 = rng.standard_normal((64, 128)) / 8.0
    b1 = 0.1 * rng.standard_normal(128)
    W2 = rng.standard_normal((128, 10)) / math.sqrt(128)
    b2 = 0.1 * rng.standard_normal(10)
    args = (W1, b1, W2, b2, x, y)
    tangents = tuple(rng.standard_normal(a.shape) for a in args[:4]) + (np.zeros_like(x), np.zeros_like(y))
    fast = srctrans.jit(mlp_loss)
    jvp_direct = _tangent_file(fast, ("W1", "b1", "W2", "b2"))
    hvp_fn = srctrans.jit(srctrans.grad(mlp_loss, argnums=(0, 1, 2, 3)))
    expected = srctrans.jvp(mlp_loss, args, tangents)
    assert np.allclose(srctrans.jvp(fast, args, tangents), expected, rtol=1e-10)
    srctrans.jvp(hvp_fn, args, tangents)
    inner = 20
    impls = {
        "srctrans.jit primal": (lambda: fast(*args), inner),
        "srctrans.jvp(jit) (public call)": (lambda: srctrans.jvp(fast, args, tangents), inner),
        "compiled tangent file (direct)": (lambda: jvp_direct(*args, *tangents[:4]), inner),
        "HVP: srctrans.jvp(jit(grad)) (public call)": (lambda: srctrans.jvp(hvp_fn, args, tangents), inner),
        "NumPy primal (plain function)": (lambda: mlp_loss(*args), inner),
    }
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def mlp_jax(W1, b1, W2, b2, x, y):
            h = jnp.tanh(x @ W1 + b1)
            return jnp.mean((h @ W2 + b2 - y) ** 2)

        jargs = tuple(jnp.asarray(a) for a in args)
        jtans = tuple(jnp.asarray(t) for t in tangents)  # arguments of the jitted call, as srctrans gets them
        j_primal = jax.jit(mlp_jax)
        j_jvp = jax.jit(lambda a, t: jax.jvp(mlp_jax, a, t))
        j_hvp = jax.jit(lambda a, t: jax.jvp(jax.grad(mlp_jax, argnums=(0, 1, 2, 3)), a, t))
        assert np.allclose(j_jvp(jargs, jtans)[1], expected[1], rtol=1e-9)
        hv = srctrans.jvp(hvp_fn, args, tangents)[1]
        assert all(np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(j_hvp(jargs, jtans)[1], hv))
        impls["jax.jit primal"] = (lambda: j_primal(*jargs).block_until_ready(), inner)
        impls["jax.jit(jax.jvp) (same six tangents)"] = (lambda: jax.block_until_ready(j_jvp(jargs, jtans)), inner)
        impls["jax.jit HVP: jvp(grad) (same six tangents)"] = (lambda: jax.block_until_ready(j_hvp(jargs, jtans)), inner)
    except Exception as err:  # pragma: no cover - benchmarks report, never fail
        log(f"  jax rows skipped: {err!r}")
    med = _record("mlp", _timed(impls, repeats), rows)
    p = med["srctrans.jit primal"]
    lines.append(f"mlp (x 256x64, W1 64x128, W2 128x10; {inner} calls per sample):")
    lines.append(goal_line("mlp: jvp (tangent file) / primal", med["compiled tangent file (direct)"] / p, "<=", 2))
    lines.append(goal_line("mlp: jvp (public call) / primal", med["srctrans.jvp(jit) (public call)"] / p, "<=", 2))
    lines.append(goal_line("mlp: HVP (public call) / primal", med["HVP: srctrans.jvp(jit(grad)) (public call)"] / p, "<=", 5))
    if "jax.jit primal" in med:
        jp = med["jax.jit primal"]
        lines.append(
            f"mlp, JAX side by side: jvp / primal {med['jax.jit(jax.jvp) (same six tangents)'] / jp:.2f}, "
            f"HVP / primal {med['jax.jit HVP: jvp(grad) (same six tangents)'] / jp:.2f}; "
            f"srctrans / JAX: primal {p / jp:.2f}, jvp {med['srctrans.jvp(jit) (public call)'] / med['jax.jit(jax.jvp) (same six tangents)']:.2f}, "
            f"HVP {med['HVP: srctrans.jvp(jit(grad)) (public call)'] / med['jax.jit HVP: jvp(grad) (same six tangents)']:.2f}"
        )


def _hessian100(repeats, rows, lines, log):
    import srctrans

    rng = np.random.default_rng(1)
    x = rng.standard_normal(100) * 0.3
    A = rng.standard_normal((50, 100)) / 10.0
    hess = srctrans.hessian(srctrans.jit(hundred))
    H = hess(x, A)
    assert H.shape == (100, 100) and np.allclose(H, H.T, atol=1e-10)
    assert not hess._srctrans_state.get("python_loop")
    how = hess.source().splitlines()[3].lstrip("# ")
    log(f"  hessian100: {how}")
    looped = srctrans.hessian(srctrans.jit(hundred))
    looped._srctrans_state["python_loop"] = "the previous way, for comparison"
    assert np.allclose(looped(x, A), H, rtol=1e-12, atol=1e-14)
    main = "srctrans.hessian(jit(f)): vmap of the tangent file"
    impls = {
        main: (lambda: hess(x, A), 1),
        "Python loop: 100 jvp(grad) calls": (lambda: looped(x, A), 1),
    }
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def hundred_jax(x, A):
            return jnp.sum(jnp.tanh(A @ x) ** 2) + 0.5 * jnp.sum(x ** 4)

        jh = jax.jit(jax.hessian(hundred_jax))
        xj, Aj = jnp.asarray(x), jnp.asarray(A)
        HJ = np.asarray(jh(xj, Aj))
        assert np.allclose(H, HJ, rtol=1e-9, atol=1e-12)
        impls["jax.jit(jax.hessian(f))"] = (lambda: jax.block_until_ready(jh(xj, Aj)), 1)
    except Exception as err:  # pragma: no cover - benchmarks report, never fail
        log(f"  jax row skipped: {err!r}")
    med = _record("hessian100", _timed(impls, repeats), rows)
    if "jax.jit(jax.hessian(f))" in med:
        ratio = med[main] / med["jax.jit(jax.hessian(f))"]
        lines.append(f"hessian100 (100 parameters): srctrans / jax = {ratio:.1f}x (side by side, no goal)")
    speedup = med["Python loop: 100 jvp(grad) calls"] / med[main]
    lines.append(f"hessian100: vmap of the basis vectors is {speedup:.1f}x the Python loop over them ({how})")


def _record(case, samples, rows):
    med = {}
    for name, s in samples.items():
        rows.append(Row(f"{NAME}/{case}", name, s))
        med[name] = float(np.median(s))
    return med


def run(repeats: int, log=print) -> CaseResult:
    """Timed in a child whose BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1`` unless set already),
    as the MLP of ``gradients``: the MLP's figures depend on it, and its goals were set with it."""
    from harness import case_from_data, in_child

    threads = os.environ.get("OPENBLAS_NUM_THREADS", "1")
    report = in_child("cases.forward", "measure", repeats, OPENBLAS_NUM_THREADS=threads)
    result = case_from_data(NAME, report, log)
    result.lines.insert(0, f"(one child process, OPENBLAS_NUM_THREADS={threads})")
    return result


def measure(repeats: int) -> dict:
    """Every part, in this process, as plain data (for :func:`run`'s child)."""
    from harness import case_data

    return case_data(run_here, repeats)


def run_here(repeats: int, log=print) -> CaseResult:
    rows: list[Row] = []
    lines: list[str] = []
    for part in (_euler, _mlp, _hessian100):
        try:
            part(repeats, rows, lines, log)
        except Exception as err:  # benchmarks report, never fail the build
            import traceback

            log(f"{part.__name__[1:]} failed: {err!r}")
            traceback.print_exc()
    return CaseResult(NAME, rows, baseline=None, lines=lines)


if __name__ == "__main__":
    import harness

    harness.print_environment(harness.environment())
    harness.print_table(run_here(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
