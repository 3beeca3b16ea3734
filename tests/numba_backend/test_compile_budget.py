"""A function whose compile would exceed ``srctrans.config.compile_budget`` runs uncompiled,
with a warning naming it; everything under the budget compiles as before.

The budgets here are small so that a few dozen array lines are "too long" (a 2,000-line
function is the real case: benchmarks/cases/long_functions.py)."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import srctrans
from numba_backend import compile_budget
from srctrans import CompileBudgetWarning


def _long_text(n: int, name: str = "f") -> str:
    lines = [f"def {name}(x, y):", "    t0 = x", "    t1 = y", "    t2 = x * y"]
    for i in range(3, n):
        lines.append(
            [f"    t{i} = np.sin(t{i - 1}) * 0.5 + t{i - 3}", f"    t{i} = t{i - 1} * t{i - 2} - 0.25 * t{i - 3}",
             f"    t{i} = np.tanh(t{i - 1} + t{i - 2})", f"    t{i} = t{i - 1} / (1.0 + t{i - 2} * t{i - 2})"][i % 4]
        )
    lines.append(f"    return np.sum(t{n - 1})")
    return "\n".join(lines) + "\n"


MODULE = "import numpy as np\n\n\n" + _long_text(40, "long") + """

def short(x, y):
    return np.sum(np.sin(x) * y)


def calls_long(x, y):
    return 2.0 * long(x, y)


def calls_short(x, y):
""" + "\n".join(_long_text(40, "_").splitlines()[1:-1]) + """
    return short(t39, y)
"""


@pytest.fixture
def budget():
    """Set the budget for one test; the default comes back after it."""
    before = srctrans.config.compile_budget
    yield lambda seconds: srctrans.config.update("compile_budget", seconds)
    srctrans.config.update("compile_budget", before)


@pytest.fixture
def m(make_module):
    return make_module(MODULE)


def _args():
    x = np.linspace(0.0, 1.0, 7)
    return x, x + 1.0


def _dispatcher(fast):
    (spec,) = fast._specs.values() if fast._specs else (fast._simple,)
    return spec.compiled


def test_a_function_over_the_budget_runs_uncompiled_with_a_warning_naming_it(m, budget):
    budget(0.5)  # 40 array lines: about 2 s estimated
    fast = srctrans.jit(m.long)
    with pytest.warns(CompileBudgetWarning) as caught:
        got = fast(*_args())
    assert got == m.long(*_args())  # the generated file, run by NumPy: the same operations
    (w,) = caught.list
    message = str(w.message)
    assert "long (usermod_" in message and ".py:" in message  # the user's function and line
    assert "runs uncompiled" in message and "array expressions" in message and "compile_budget" in message
    assert w.filename == __file__  # the warning points at the user's call
    assert not _dispatcher(fast).signatures  # nothing was compiled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once; later calls neither warn nor type it again
        start = time.perf_counter()
        for _ in range(20):
            assert fast(*_args()) == got
        assert time.perf_counter() - start < 0.5


def test_under_the_budget_or_with_none_it_compiles(m, budget):
    budget(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileBudgetWarning)
        fast = srctrans.jit(m.long)
        assert fast(*_args()) == pytest.approx(m.long(*_args()), rel=1e-12)
        assert _dispatcher(fast).signatures
        budget(60)
        short = srctrans.jit(m.short)
        assert short(*_args()) == pytest.approx(m.short(*_args()), rel=1e-12)
        assert _dispatcher(short).signatures


def test_a_long_callee_runs_uncompiled_and_a_short_callee_compiles(m, budget):
    budget(0.5)
    with pytest.warns(CompileBudgetWarning, match=r"calls_long \(usermod_") as caught:
        fast = srctrans.jit(m.calls_long)
        assert fast(*_args()) == m.calls_long(*_args())
    # the caller went over with its callee; run uncompiled, it calls the callee, which is over on its own
    assert any(str(w.message).startswith("long (usermod_") for w in caught.list)

    with pytest.warns(CompileBudgetWarning, match=r"calls_short \(usermod_"):
        fast = srctrans.jit(m.calls_short)
        assert fast(*_args()) == pytest.approx(m.calls_short(*_args()), rel=1e-12)
    callee = _dispatcher(fast).py_func.__globals__["short"]
    assert callee.signatures  # the short callee compiled on its own


def test_a_gradient_over_the_budget_is_still_the_gradient(m, budget):
    budget(0.5)
    x, y = _args()
    with pytest.warns(CompileBudgetWarning, match="long_grad"):
        g = srctrans.jit(srctrans.grad(m.long))(x, y)
    eps = 1e-6
    e = np.zeros_like(x)
    e[3] = eps
    assert g[3] == pytest.approx((m.long(x + e, y) - m.long(x - e, y)) / (2 * eps), rel=1e-6)


def test_the_estimate_grows_faster_than_the_lines():
    assert compile_budget.estimate(0, 9000) == pytest.approx(22.5)  # 2,000 scalar lines: compiled
    assert compile_budget.estimate(300, 800) < 60 < compile_budget.estimate(2000, 5500)
    assert compile_budget.estimate(600, 0) > 2 * compile_budget.estimate(300, 0)


@pytest.mark.parametrize("value", [-1, "soon", [1]])
def test_a_budget_that_is_not_seconds_is_refused(value, budget):
    with pytest.raises(ValueError, match="compile_budget"):
        budget(value)


def test_the_budget_from_the_environment(monkeypatch):
    from srctrans.config import Config

    monkeypatch.setenv("SRCTRANS_COMPILE_BUDGET", "12.5")
    assert Config().compile_budget == 12.5
    monkeypatch.setenv("SRCTRANS_COMPILE_BUDGET", "0")
    assert Config().compile_budget is None
    monkeypatch.delenv("SRCTRANS_COMPILE_BUDGET")
    assert Config().compile_budget == compile_budget.DEFAULT_BUDGET
