"""Golden tangent files: the generated forward-mode file of representative functions, also executed.

Regenerate after a deliberate change with ``pytest tests/golden --update-golden``.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import srctrans
from srctrans.tangents import tangents_for as _tangents_for
from srctrans.check import numerical_jvp

from .test_golden import _body

HERE = Path(__file__).parent
CASES = sorted(p.stem for p in (HERE / "jvp_cases").glob("*.py"))


@pytest.fixture(scope="module")
def on_path():
    sys.path.insert(0, str(HERE / "jvp_cases"))
    yield
    sys.path.remove(str(HERE / "jvp_cases"))


def test_at_least_six_cases():
    assert len(CASES) >= 6


@pytest.mark.parametrize("case", CASES)
def test_golden_tangent_file(case, on_path, tmp_path, monkeypatch, request):
    monkeypatch.setattr("srctrans.config.cache_dir", str(tmp_path))
    module = importlib.import_module(case)
    nums = (module.ARGNUMS,) if isinstance(module.ARGNUMS, int) else module.ARGNUMS
    names = [p for k, p in enumerate(module.f.__code__.co_varnames[: module.f.__code__.co_argcount]) if k in nums]
    rng = np.random.default_rng(0)
    for args in module.INPUTS:
        tangents = tuple(
            (rng.standard_normal(np.shape(a)) if np.ndim(a) else float(rng.standard_normal())) if k in nums
            else (np.zeros(np.shape(a)) if np.ndim(a) else 0.0)
            for k, a in enumerate(args)
        )
        out, t = srctrans.jvp(module.f, args, tangents)
        np.testing.assert_allclose(out, module.f(*args))
        np.testing.assert_allclose(t, numerical_jvp(module.f, args, tangents, 1e-6), rtol=1e-6, atol=1e-7)
    path = _tangents_for(module.f, tuple(names), False).runner.source_path()
    body = _body(path.read_text())
    expected_path = HERE / "jvp_expected" / f"{case}.jvp.py"
    if request.config.getoption("--update-golden"):
        old = expected_path.read_text() if expected_path.exists() else ""
        if old != body:
            expected_path.write_text(body)
            print("".join(difflib.unified_diff(old.splitlines(True), body.splitlines(True), str(expected_path), "new")))
    assert body == expected_path.read_text(), f"generated tangent file differs from {expected_path}"
