"""Shared fixtures: user modules written to temporary folders, and fresh Python processes."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.compile_settings import use_suite_settings

use_suite_settings()  # LLVM at -O1, machine code at -O0, unless NUMBA_OPT is set (see there)

import pytest  # noqa: E402

import srctrans  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
_counter = itertools.count()


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch):
    """Each test starts with jit on and the default cache placement."""
    monkeypatch.setattr(srctrans.config, "disable_jit", False)
    monkeypatch.setattr(srctrans.config, "cache_dir", None)


@contextlib.contextmanager
def module_from_text(folder: Path, name: str, text: str):
    """Write ``text`` to ``folder/name.py``, import it, and forget it afterwards."""
    (folder / f"{name}.py").write_text(textwrap.dedent(text))
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)


@pytest.fixture
def make_module(tmp_path):
    """``make_module(text)`` writes ``text`` to a fresh module file in ``tmp_path`` and imports it."""
    made: list[str] = []

    def make(text: str, name: str | None = None, folder: Path | None = None):
        name = name or f"usermod_{os.getpid()}_{next(_counter)}"
        where = folder or tmp_path
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{name}.py").write_text(textwrap.dedent(text))
        sys.path.insert(0, str(where))
        try:
            module = importlib.import_module(name)
        finally:
            sys.path.remove(str(where))
        made.append(name)
        return module

    yield make
    for name in made:
        sys.modules.pop(name, None)


@pytest.fixture
def as_python():
    """Generated files run as Python (``disable_jit``: no Numba compile)."""
    was = srctrans.config.disable_jit
    srctrans.config.update("disable_jit", True)
    yield
    srctrans.config.update("disable_jit", was)


def central_differences(f, args, i, eps=1e-6):
    """The gradient of a scalar ``f(*args)`` with respect to ``args[i]`` by central differences
    (every argument copied, so ``f`` may write into them)."""
    import numpy as np

    base = [np.array(a, dtype=float) for a in args]
    out = np.zeros_like(base[i])
    for k in np.ndindex(out.shape):
        plus = [b.copy() for b in base]
        minus = [b.copy() for b in base]
        plus[i][k] += eps
        minus[i][k] -= eps
        numbers = [[a if a.ndim else float(a) for a in side] for side in (plus, minus)]  # scalars stay floats
        out[k] = (f(*numbers[0]) - f(*numbers[1])) / (2 * eps)
    return out


def run_python(code: str, cwd: Path, env: dict | None = None, timeout: float = 180, stdin: str | None = None):
    """Run ``code`` in a fresh interpreter with the repository importable; returns the CompletedProcess."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SRCTRANS_")}
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(cwd), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )


@pytest.fixture
def python():
    return run_python


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/expected and show the diffs")
