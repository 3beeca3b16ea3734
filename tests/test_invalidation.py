"""Regeneration: a changed function, callee or global gives a new file and new results,
each seen by a fresh process; an unchanged program reuses the file and Numba's cache."""

from __future__ import annotations

import textwrap

import pytest

pytestmark = pytest.mark.slow

MAIN = """
import numpy as np
import srctrans
from helpers import shift

SCALE = {scale}

def calc(x):
    return x * SCALE + shift(x)
"""
HELPERS = """
def shift(x):
    return x + {offset}
"""
RUN = """
import os, numpy as np, srctrans, model
f = srctrans.jit(model.calc)
print(f(np.array([1.0, 2.0]))[1])
p = srctrans.source_path(f)
print(p.stat().st_mtime_ns)
"""


def _write(folder, scale="2.0", offset="1.0", body="x * SCALE + shift(x)"):
    (folder / "model.py").write_text(textwrap.dedent(MAIN.format(scale=scale)).replace("x * SCALE + shift(x)", body))
    (folder / "helpers.py").write_text(textwrap.dedent(HELPERS.format(offset=offset)))


def _run(python, folder):
    out = python(RUN, cwd=folder)
    assert out.returncode == 0, out.stderr
    value, mtime = out.stdout.split()
    return float(value), int(mtime)


def test_unchanged_program_reuses_the_file(tmp_path, python):
    _write(tmp_path)
    v1, m1 = _run(python, tmp_path)
    v2, m2 = _run(python, tmp_path)
    assert v1 == v2 == 2.0 * 2 + 3.0
    assert m1 == m2


@pytest.mark.parametrize(
    "change,expected",
    [
        ({"body": "x * SCALE - shift(x)"}, 2.0 * 2 - 3.0),  # the function itself
        ({"offset": "10.0"}, 2.0 * 2 + 12.0),  # a function it calls, in another module
        ({"scale": "5.0"}, 5.0 * 2 + 3.0),  # a global it reads
    ],
    ids=["function", "callee", "global"],
)
def test_change_regenerates(tmp_path, python, change, expected):
    _write(tmp_path)
    before, m1 = _run(python, tmp_path)
    assert before == 7.0
    _write(tmp_path, **change)
    after, m2 = _run(python, tmp_path)
    assert after == expected
    assert m2 != m1


def test_a_file_written_by_other_transformations_is_written_again(make_module, monkeypatch):
    # the dependency hash covers srctrans's own source: a file written by another version of
    # the transformations (a fixed bug, even under the same version number) is not reused
    import srctrans
    from srctrans import cache

    mod = make_module("import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x) * x)\n")
    g = srctrans.grad(mod.f)
    g(1.0)
    path = srctrans.source_path(g)
    before = path.read_text()
    monkeypatch.setattr(cache, "_TOOLCHAIN", ["another version"])
    again = srctrans.grad(mod.f)
    again(1.0)
    after = srctrans.source_path(again).read_text()
    import re

    def dependency_hash(text):
        return re.search(r"# dependency hash: (\w+)", text).group(1)

    assert dependency_hash(before) != dependency_hash(after)
    assert before.split("# dependency hash")[1].splitlines()[1:] == after.split("# dependency hash")[1].splitlines()[1:]
