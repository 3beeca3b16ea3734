"""Golden pmap files: functions split at their collectives into stages and a driver, also executed.

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

from .test_golden import _body

HERE = Path(__file__).parent
CASES = sorted(p.stem for p in (HERE / "pmap_cases").glob("*.py"))


@pytest.fixture(scope="module")
def on_path():
    sys.path.insert(0, str(HERE / "pmap_cases"))
    yield
    sys.path.remove(str(HERE / "pmap_cases"))


def test_at_least_three_cases_with_two_stages_or_more():
    assert len(CASES) >= 3


@pytest.mark.parametrize("case", CASES)
def test_golden_pmap(case, on_path, tmp_path, monkeypatch, request):
    monkeypatch.setattr("srctrans.config.cache_dir", str(tmp_path))
    monkeypatch.setattr("srctrans.config.disable_jit", True)  # the reference runner: the same stages, in Python
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "2")
    module = importlib.import_module(case)
    fn = srctrans.grad(module.f) if module.GRAD else module.f
    mapped = srctrans.pmap(fn, axis_name="i", in_axes=module.IN_AXES)
    for args in module.INPUTS:
        got, want = mapped(*args), module.expected(*args)
        for g, e in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    text = mapped.source()
    assert text.count("_stage") >= 2 and "def f" in text
    body = _body(text)
    expected_path = HERE / "pmap_expected" / f"{case}.py"
    if request.config.getoption("--update-golden"):
        old = expected_path.read_text() if expected_path.exists() else ""
        if old != body:
            expected_path.write_text(body)
            print("".join(difflib.unified_diff(old.splitlines(True), body.splitlines(True), str(expected_path), "new")))
    assert body == expected_path.read_text(), f"generated pmap file differs from {expected_path}"
