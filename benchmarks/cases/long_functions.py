"""Case ``long``: the first call of ``srctrans.jit`` on long functions, in fresh processes.

A generated function of N lines, each a line of arithmetic on the previous ones (``np.sin``,
``np.tanh``, products, quotients), on 50-element arrays and on floats. Numba compiles each
array line as a loop of its own and LLVM optimizes the function with all of them inlined:
superlinear in N. A compile whose estimate exceeds ``srctrans.config.compile_budget`` (60 s)
runs uncompiled instead, with a ``CompileBudgetWarning`` (numba_backend/compile_budget.py).

Each row is one fresh process with an empty cache (``--runs`` of them, at most 3): the time
of the first call (generate, type, compile or fall back, run), then the median of later calls.

Goal (issue 21 §3): 2,000 statements under ``jit`` within 60 s.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

from harness import CaseResult, Row, goal_line, subprocess_env, time_process

NAME = "long"

LINES = {
    0: "    t{i} = np.sin(t{a}) * 0.5 + t{c}",
    1: "    t{i} = t{a} * t{b} - 0.25 * t{c}",
    2: "    t{i} = np.tanh(t{a} + t{b})",
    3: "    t{i} = t{a} / (1.0 + t{b} * t{b})",
}

DRIVER = """\
import json, sys, time, warnings
import numpy as np
import srctrans
sys.path.insert(0, '.')
import {module} as m
x = {x}
y = x + 1.0
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fast = srctrans.jit(m.f)
    t0 = time.perf_counter()
    out = fast(x, y)
    first = time.perf_counter() - t0
later = []
for _ in range(5):
    t0 = time.perf_counter()
    fast(x, y)
    later.append(time.perf_counter() - t0)
assert np.allclose(out, m.f(x, y))
print(json.dumps({{"first": first, "later": sorted(later)[2],
                  "uncompiled": any("runs uncompiled" in str(w.message) for w in caught)}}))
"""


def module_text(n: int) -> str:
    lines = ["import numpy as np", "", "", "def f(x, y):", "    t0 = x", "    t1 = y", "    t2 = x * y"]
    for i in range(3, n):
        lines.append(LINES[i % 4].format(i=i, a=i - 1, b=i - 2, c=i - 3))
    lines.append(f"    return np.sum(t{n - 1})")
    return "\n".join(lines) + "\n"


def _one(root: Path, n: int, kind: str) -> dict:
    folder = root / f"{kind}{n}"
    folder.mkdir(parents=True)
    module = f"long_{kind}_{n}"
    (folder / f"{module}.py").write_text(module_text(n))
    x = "np.linspace(0.0, 1.0, 50)" if kind == "array" else "0.3"
    (folder / "driver.py").write_text(DRIVER.format(module=module, x=x))
    env = subprocess_env(SRCTRANS_CACHE_DIR=str(folder / "cache"))
    return time_process(["driver.py"], cwd=str(folder), env=env)[1]


def run(runs: int, log=print) -> CaseResult:
    rows: list[Row] = []
    result = CaseResult(NAME, rows, ratio_label="", speedup=False)
    tmp = Path(tempfile.mkdtemp(prefix="srctrans-bench-long-"))
    summary = {}
    try:
        for n, kind in ((300, "array"), (2000, "array"), (2000, "scalar")):
            reports = [_one(tmp / f"run{r}", n, kind) for r in range(max(1, min(runs, 3)))]
            how = "uncompiled" if all(r["uncompiled"] for r in reports) else "compiled"
            label = f"{n} {kind} lines: first call ({how})"
            rows.append(Row(NAME, label, [r["first"] for r in reports]))
            rows.append(Row(NAME, f"{n} {kind} lines: later calls", [r["later"] for r in reports]))
            summary[(n, kind)] = statistics.median(r["first"] for r in reports)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result.lines.append("goals:")
    result.lines.append(goal_line("2,000 array lines: first call (s)", summary[(2000, "array")], "<=", 60))
    result.lines.append(goal_line("2,000 scalar lines: first call (s)", summary[(2000, "scalar")], "<=", 60))
    return result
