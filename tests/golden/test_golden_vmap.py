"""Golden vmap files: the vectorized and the looped version of representative functions, also executed.

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
CASES = sorted(p.stem for p in (HERE / "vmap_cases").glob("*.py"))
LOOP_ONLY = {"batched_newton_while"}


@pytest.fixture(scope="module")
def on_path():
    sys.path.insert(0, str(HERE / "vmap_cases"))
    yield
    sys.path.remove(str(HERE / "vmap_cases"))


def test_at_least_six_cases():
    assert len(CASES) - len(LOOP_ONLY) >= 6


def _stacked(fn, in_axes, args):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    rows = [fn(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)]) for i in range(n)]
    return np.stack([np.asarray(r) for r in rows])


@pytest.mark.parametrize("method", ["vectorize", "loop"])
@pytest.mark.parametrize("case", CASES)
def test_golden_vmap(case, method, on_path, tmp_path, monkeypatch, request):
    monkeypatch.setattr("srctrans.config.cache_dir", str(tmp_path))
    module = importlib.import_module(case)
    batched = srctrans.vmap(module.f, in_axes=module.IN_AXES, method="auto" if case in LOOP_ONLY else method)
    for args in module.INPUTS:
        np.testing.assert_allclose(batched(*args), _stacked(module.f, module.IN_AXES, args), rtol=1e-12)
    text = batched.source()
    why = [line for line in text.splitlines() if line.startswith("# vmap method")]
    body = "\n".join(why) + "\n\n" + _body(text)
    if case in LOOP_ONLY:
        assert "a loop over the examples" in why[0]
        if method == "vectorize":
            return
    expected_path = HERE / "vmap_expected" / f"{case}.{method}.py"
    if request.config.getoption("--update-golden"):
        old = expected_path.read_text() if expected_path.exists() else ""
        if old != body:
            expected_path.write_text(body)
            print("".join(difflib.unified_diff(old.splitlines(True), body.splitlines(True), str(expected_path), "new")))
    assert body == expected_path.read_text(), f"generated vmap file differs from {expected_path}"
