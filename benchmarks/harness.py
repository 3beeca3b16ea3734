"""Shared benchmark harness: timing, subprocess timing, tables, the environment header, plots.

Every figure is a median. In-process figures come from :func:`compare`: each
implementation is called once to warm up (compiles, caches, first-touch page
faults; that call is not counted), then ``repeats`` rounds call every
implementation once each, round-robin, so that noise from the rest of the
machine spreads over all of them alike. Subprocess figures come from
:func:`time_process`: the wall-clock time of a whole fresh interpreter.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    """One line of a result table: a case, an implementation and its timings (seconds)."""

    case: str
    impl: str
    samples: list[float]
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass
class CaseResult:
    """What a case hands back: its rows, which row the ratios are taken against, and summary lines."""

    name: str
    rows: list[Row]
    baseline: str | None = None  # impl name of the row the ratio column compares with
    ratio_label: str = "ratio"
    speedup: bool = True  # True: ratio = baseline / row (bigger is faster); False: row / baseline
    lines: list[str] = field(default_factory=list)  # goals, notes, printed under the table

    def row(self, impl: str) -> Row | None:
        return next((r for r in self.rows if r.impl == impl), None)


def compare(impls: dict[str, Callable[[], Any]], repeats: int, warmup: int = 1) -> dict[str, list[float]]:
    """Time each zero-argument callable ``repeats`` times, round-robin, after ``warmup`` calls each."""
    for fn in impls.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(repeats):
        for name, fn in impls.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return samples


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python: this checkout importable, srctrans settings cleared."""
    env = dict(os.environ)
    for key in ("SRCTRANS_DISABLE_JIT", "SRCTRANS_CACHE_DIR"):
        env.pop(key, None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


def time_process(args: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None) -> tuple[float, dict]:
    """Run ``python *args`` once; wall-clock seconds and the JSON object on its last stdout line, if any."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env or subprocess_env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child python {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    report: dict = {}
    lines = proc.stdout.strip().splitlines()
    if lines and lines[-1].startswith("{"):
        report = json.loads(lines[-1])
    return wall, report


_CHILD = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
measure = getattr(importlib.import_module(sys.argv[3]), sys.argv[4])
print(json.dumps(measure(*json.loads(sys.argv[5]))))
"""


def in_child(module: str, function: str, *args: Any, **env: str) -> dict:
    """``module.function(*args)`` in a fresh interpreter, ``env`` added to its environment; what it returned.

    For figures that what ran before in this process disturbs: BLAS thread pools that keep
    spinning after a call (OpenBLAS's for some 0.1 s), JAX's threads, a warm or cold cache.
    The function returns plain data (JSON), such as :func:`case_data` makes.
    """
    benchmarks = str(Path(__file__).resolve().parent)
    return time_process(["-c", _CHILD, benchmarks, str(REPO), module, function, json.dumps(args)],
                        env=subprocess_env(**env))[1]


def case_data(run: Callable[..., CaseResult], *args: Any) -> dict:
    """``run(*args, log=...)`` as plain data for :func:`in_child`: its rows, lines and log messages."""
    messages: list[str] = []
    result = run(*args, log=messages.append)
    return {"rows": [(r.case, r.impl, r.samples, r.note) for r in result.rows], "lines": result.lines,
            "log": messages, "baseline": result.baseline}


def case_from_data(name: str, report: dict, log=print) -> CaseResult:
    """The :class:`CaseResult` that :func:`case_data` made in a child; its log messages go to ``log``."""
    for message in report["log"]:
        log(message)
    rows = [Row(case, impl, samples, note) for case, impl, samples, note in report["rows"]]
    return CaseResult(name, rows, baseline=report["baseline"], lines=list(report["lines"]))


def fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def print_table(result: CaseResult) -> None:
    """Columns: case, implementation, median (with min-max spread and sample count), ratio."""
    base = result.row(result.baseline) if result.baseline else None
    header = ["case", "implementation", "median", "min .. max", "n", result.ratio_label]
    body = []
    for r in result.rows:
        ratio = ""
        if base is not None and r.median > 0:
            value = base.median / r.median if result.speedup else r.median / base.median
            ratio = f"{value:.2f}x"
        spread = f"{fmt_time(min(r.samples))} .. {fmt_time(max(r.samples))}"
        body.append(
            [
                r.case,
                r.impl + (f"  ({r.note})" if r.note else ""),
                fmt_time(r.median),
                spread,
                str(len(r.samples)),
                ratio,
            ]
        )
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    align = ["<", "<", ">", ">", ">", ">"]

    def render(cells: list[str]) -> str:
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths)).rstrip()

    print(render(header))
    print("  ".join("-" * w for w in widths))
    for line in body:
        print(render(line))
    for line in result.lines:
        print(line)


def goal_line(label: str, value: float, op: str, target: float) -> str:
    met = value >= target if op == ">=" else value <= target
    return f"  {label:<44} {value:6.2f}   goal {op} {target:<4}  {'MET' if met else 'MISSED'}"


def _version(name: str) -> str:
    try:
        module = __import__(name)
    except Exception:
        return "not installed"
    return getattr(module, "__version__", "?")


def environment() -> dict[str, str]:
    """Versions and machine facts printed at the top of every run."""
    info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu count": f"{os.cpu_count()} (usable by this process: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'})",
    }
    if hasattr(os, "getloadavg"):
        info["load average"] = (
            "{:.2f} {:.2f} {:.2f}  (1, 5, 15 min; above the cpu count means other work competes)".format(
                *os.getloadavg()
            )
        )
    sys.path.insert(0, str(REPO))
    for name in ("numpy", "numba", "llvmlite", "srctrans", "jax", "jaxlib"):
        info[name] = _version(name)
    for key in ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "SRCTRANS_HUGEPAGES"):
        if os.environ.get(key):
            info[key] = os.environ[key] + (
                "  (no BLAS in these cases: irrelevant)" if key == "OPENBLAS_CORETYPE" else ""
            )
    try:
        thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
        info["transparent huge pages"] = thp
    except OSError:
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def print_environment(info: dict[str, str]) -> None:
    width = max(len(k) for k in info)
    for key, value in info.items():
        print(f"{key:<{width}}  {value}")


def plot(results: list[CaseResult], out: str) -> None:
    """A horizontal bar chart of medians, one panel per case; a message if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot {out}: matplotlib is not installed; skipping the chart (pip install matplotlib)")
        return
    results = [r for r in results if r.rows]
    if not results:
        print("--plot: nothing to draw")
        return
    fig, axes = plt.subplots(
        len(results), 1, figsize=(9, 1.0 + 0.45 * sum(len(r.rows) for r in results) + 0.8 * len(results)), squeeze=False
    )
    for ax, result in zip(axes[:, 0], results):
        labels = [r.impl for r in result.rows]
        values = [r.median * 1e3 for r in result.rows]
        colors = ["tab:orange" if "srctrans" in label else "tab:gray" for label in labels]
        bars = ax.barh(range(len(values)), values, color=colors)
        ax.set_yticks(range(len(values)), labels)
        ax.invert_yaxis()
        ax.set_xlabel("median, ms (shorter is better)")
        ax.set_title(result.name)
        for bar, value in zip(bars, values):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {value:.1f}", va="center", fontsize=8)
        ax.set_xlim(0, max(values) * 1.15)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"chart written to {out}")
