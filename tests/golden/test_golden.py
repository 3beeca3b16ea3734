"""Golden files for the normalizing passes and jit: input -> expected generated text, also executed.

Regenerate after a deliberate change with ``pytest tests/golden --update-golden``;
the test then prints the diff of every file it rewrote.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from srctrans.cache import HASH_PREFIX, load_module
from srctrans.pipeline import Transform, generate

HERE = Path(__file__).parent
CASES = sorted(p.stem for p in (HERE / "cases").glob("*.py"))
PASSES = ["desugar", "anf", "jit"]


def _body(text: str) -> str:
    """Everything after the header (the header holds machine-specific paths and hashes)."""
    lines = text.split("\n")
    end = next(i for i, line in enumerate(lines) if line.startswith(HASH_PREFIX))
    return "\n".join(lines[end + 1 :]).lstrip("\n")


@pytest.fixture(scope="module")
def cases_on_path(tmp_path_factory, monkeypatch_module=None):
    sys.path.insert(0, str(HERE / "cases"))
    yield
    sys.path.remove(str(HERE / "cases"))


@pytest.mark.parametrize("pass_name", PASSES)
@pytest.mark.parametrize("case", CASES)
def test_golden(case, pass_name, cases_on_path, tmp_path, request, monkeypatch):
    monkeypatch.setattr("srctrans.config.cache_dir", str(tmp_path))
    module = importlib.import_module(case)
    gen = generate(module.f, Transform(pass_name))
    body = _body(gen.path.read_text())
    expected_path = HERE / "expected" / f"{case}.{pass_name}.py"
    if request.config.getoption("--update-golden"):
        old = expected_path.read_text() if expected_path.exists() else ""
        if old != body:
            expected_path.write_text(body)
            diff = "".join(difflib.unified_diff(old.splitlines(True), body.splitlines(True), str(expected_path), "new"))
            print(diff)
    assert body == expected_path.read_text(), f"generated text differs from {expected_path}"

    # the generated file is real code: it computes what the original computes
    generated = load_module(gen.path, gen.module_name + "_golden", gen.bound)
    fn = getattr(generated, gen.entry)
    for args in module.INPUTS:
        expected = module.f(*args)
        got = fn(*args)
        if isinstance(expected, tuple):
            for e, g in zip(expected, got, strict=True):
                np.testing.assert_allclose(g, e)
        else:
            np.testing.assert_allclose(got, expected)


def test_every_case_has_inputs():
    for case in CASES:
        assert (HERE / "cases" / f"{case}.py").read_text().count("INPUTS = ") == 1
