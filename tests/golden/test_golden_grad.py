"""Golden adjoints: the generated reverse-mode file of representative functions, also executed.

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
from srctrans.check import numerical_jvp

from .test_golden import _body

HERE = Path(__file__).parent
CASES = sorted(p.stem for p in (HERE / "grad_cases").glob("*.py"))


@pytest.fixture(scope="module")
def on_path():
    sys.path.insert(0, str(HERE / "grad_cases"))
    yield
    sys.path.remove(str(HERE / "grad_cases"))


def _numeric_grad(f, args, i):
    base = [np.asarray(a, dtype=float) for a in args]
    g = np.zeros_like(base[i])
    for k in np.ndindex(g.shape):
        tangent = [np.zeros_like(a) for a in base]
        tangent[i][k] = 1.0
        primals = [a if np.ndim(a) else float(a) for a in base]
        tangents = [t if np.ndim(t) else float(t) for t in tangent]
        d = numerical_jvp(f, primals, tangents, 1e-6)
        g[k] = d
    return g


def test_at_least_ten_cases():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES)
def test_golden_adjoint(case, on_path, tmp_path, monkeypatch, request):
    monkeypatch.setattr("srctrans.config.cache_dir", str(tmp_path))
    module = importlib.import_module(case)
    grad = srctrans.grad(module.f, argnums=module.ARGNUMS)
    path = srctrans.source_path(grad) if grad._simple else None
    for args in module.INPUTS:
        got = grad(*args)
        nums = (module.ARGNUMS,) if isinstance(module.ARGNUMS, int) else module.ARGNUMS
        got = (got,) if isinstance(module.ARGNUMS, int) else got
        for g, i in zip(got, nums, strict=True):
            np.testing.assert_allclose(g, _numeric_grad(module.f, args, i), rtol=1e-6, atol=1e-7)
    path = srctrans.source_path(grad)
    body = _body(path.read_text())
    expected_path = HERE / "grad_expected" / f"{case}.grad.py"
    if request.config.getoption("--update-golden"):
        old = expected_path.read_text() if expected_path.exists() else ""
        if old != body:
            expected_path.write_text(body)
            print("".join(difflib.unified_diff(old.splitlines(True), body.splitlines(True), str(expected_path), "new")))
    assert body == expected_path.read_text(), f"generated adjoint differs from {expected_path}"
