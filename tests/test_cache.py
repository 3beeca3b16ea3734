"""The cache runs only what the current source says."""

from __future__ import annotations

import importlib
import textwrap

import numpy as np

import srctrans

EDITABLE = """
import numpy as np

def helper(x):
    return x + {offset}

def f(x):
    return helper(x) * {factor}
"""


def _rewrite(module, text: str) -> None:
    """Write the module's file anew (another size, so Python's own bytecode cache sees the edit) and reload it."""
    with open(module.__file__, "w") as fh:
        fh.write(textwrap.dedent(text))
    importlib.reload(module)


def test_reloaded_module_runs_its_new_code(make_module, tmp_path, monkeypatch):
    mod = make_module(EDITABLE.format(offset="1.0", factor="2.0"))
    monkeypatch.syspath_prepend(str(tmp_path))  # for importlib.reload
    x = np.array([1.0])
    assert srctrans.jit(mod.f)(x)[0] == 4.0
    assert srctrans.grad(lambda x: mod.f(x)[0])(x)[0] == 2.0
    _rewrite(mod, EDITABLE.format(offset="10.0", factor="2.0"))  # the callee changed
    assert srctrans.jit(mod.f)(x)[0] == mod.f(x)[0] == 22.0
    _rewrite(mod, "\n\n\n" + EDITABLE.format(offset="100.0", factor="3.0"))  # both, on shifted lines
    assert srctrans.jit(mod.f)(x)[0] == mod.f(x)[0] == 303.0
    assert srctrans.grad(lambda x: mod.f(x)[0])(x)[0] == 3.0
