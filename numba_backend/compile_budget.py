"""A bound on the time one compile of a generated file may take.

Numba compiles every array expression of a function as a subroutine of its own, and LLVM
then optimizes the whole function with every such loop inlined into it: a function of a few
hundred lines of array arithmetic took 45 s (300 lines) and did not finish in 600 s (2,000
lines), where the same 2,000 lines on scalars compile in 20 s. Typing a function is cheap
by comparison (4 s for 2,000 lines), and after typing Numba knows which lines became array
expressions.

So a pass placed right after Numba's rewrites (when array expressions have been formed)
estimates what lowering and optimizing will cost, and adds it to the running total of the
compile in progress (a function and the callees compiled with it). When the total exceeds
``srctrans.config.compile_budget`` (60 s unless set; ``SRCTRANS_COMPILE_BUDGET``, 0 for no
bound), it stops the compile; :mod:`numba_backend.cpu` then runs that function from its
generated file uncompiled (NumPy does the array work), with a :class:`CompileBudgetWarning`
naming the function and the estimate, and its callees compile on their own when it calls
them. The estimate (seconds on one core of the machine the model was measured on)::

    0.045 * arrays + 0.00034 * arrays**2 + 0.0025 * statements

``arrays`` counts array expressions, ``statements`` Numba IR statements. Measured: 100
array lines 7.9 s (model 8.4), 300 array lines 44 s (45.7), 2,000 scalar lines 22 s (22.5).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from srctrans.errors import CompileBudgetWarning  # noqa: F401 - raised by numba_backend.cpu

DEFAULT_BUDGET = 60.0  # seconds of estimated compile, per compile of one function and its callees

_local = threading.local()


class TooLongToCompile(Exception):
    """Raised by :class:`EstimateCompileTime` to stop a compile that would exceed the budget."""

    def __init__(self, function: str, estimate: float, arrays: int, statements: int, budget: float) -> None:
        super().__init__(f"compiling {function} would take about {estimate:.0f} s (budget {budget:.0f} s)")
        self.function, self.estimate, self.arrays, self.statements, self.budget = function, estimate, arrays, statements, budget


def budget() -> float | None:
    """The budget in seconds, or None for no bound (``srctrans.config.compile_budget``)."""
    try:
        from srctrans.config import config

        value = config.compile_budget
    except (ImportError, AttributeError):  # pragma: no cover - numba_backend used without srctrans
        value = os.environ.get("SRCTRANS_COMPILE_BUDGET", DEFAULT_BUDGET)
    return float(value) if value else None


def estimate(arrays: int, statements: int) -> float:
    """Estimated seconds to lower and optimize a function with these counts (see the module's docstring)."""
    return 0.045 * arrays + 0.00034 * arrays * arrays + 0.0025 * statements


def count(func_ir) -> tuple[int, int]:
    """(array expressions, statements) of a typed, rewritten Numba IR."""
    from numba.core import ir

    arrays = statements = 0
    for block in func_ir.blocks.values():
        for inst in block.body:
            statements += 1
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) and inst.value.op == "arrayexpr":
                arrays += 1
    return arrays, statements


@contextmanager
def session():
    """One compile and the callees compiled with it: their estimates add up. Yields the state
    whose ``exceeded`` is the :class:`TooLongToCompile` that stopped it, if one did."""
    outer = getattr(_local, "state", None)
    if outer is not None:  # a compile inside a compile: the outer total goes on
        yield outer
        return
    state = _local.state = _State()
    try:
        yield state
    finally:
        _local.state = None


class _State:
    def __init__(self) -> None:
        self.total = 0.0
        self.exceeded: TooLongToCompile | None = None


def _make_pass():
    from numba.core.compiler_machinery import AnalysisPass, register_pass

    @register_pass(mutates_CFG=False, analysis_only=True)
    class EstimateCompileTime(AnalysisPass):
        """Adds this function's estimated compile time to the session's total; stops the
        compile when the total is over the budget."""

        _name = "srctrans_estimate_compile_time"

        def __init__(self) -> None:
            AnalysisPass.__init__(self)

        def run_pass(self, state) -> bool:
            limit = budget()
            current = getattr(_local, "state", None)
            if limit is None or current is None:
                return False
            arrays, statements = count(state.func_ir)
            current.total += estimate(arrays, statements)
            if current.total > limit:
                name = state.func_id.func_qualname
                current.exceeded = TooLongToCompile(name, current.total, arrays, statements, limit)
                raise current.exceeded
            return False

    return EstimateCompileTime


_pipeline_class = None


def pipeline_class():
    """Numba's nopython compiler with :class:`EstimateCompileTime` after its rewrites."""
    global _pipeline_class
    if _pipeline_class is None:
        from numba.core.compiler import CompilerBase, DefaultPassBuilder
        from numba.core.typed_passes import NopythonRewrites

        estimate_pass = _make_pass()

        class BudgetedCompiler(CompilerBase):
            def define_pipelines(self):
                if self.state.flags.force_pyobject:
                    return [DefaultPassBuilder.define_objectmode_pipeline(self.state)]
                pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
                pm.add_pass_after(estimate_pass, NopythonRewrites)
                pm.finalize()
                return [pm]

        _pipeline_class = BudgetedCompiler
    return _pipeline_class
