"""Static arguments are keyed by their value, the same in every process; functions may be static.

A file's name and hash say which static value it was made for by its content
(:mod:`srctrans.statics`), never by an address that changes from process to process, so a
program run again finds its files instead of adding new ones. An object whose content
cannot be read is keyed by its type: one file per type, its value bound at load time and
compiled without Numba's disk cache.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import srctrans
from srctrans.statics import key_text, opaque, value_key

MODEL = """
import threading
import numpy as np

class Config:  # hashable by value; its repr holds its address
    def __init__(self, scale, name="c"):
        self.scale = scale
        self.name = name
    def __hash__(self):
        return hash(self.scale)
    def __eq__(self, other):
        return isinstance(other, Config) and other.scale == self.scale

class Holder:  # no content srctrans can read: a lock
    def __init__(self, scale):
        self.scale = scale
        self.lock = threading.Lock()

def scaled(x, cfg):
    return x * cfg.scale

def act(x):
    return np.tanh(x)

def other_act(x):
    return np.sin(x)

def apply(x, fn):
    return fn(x) * 2.0
"""

RUN = """
import json, os, sys
import numpy as np
import srctrans, model

x = np.array([0.5, 1.0])
out = {}
srctrans.config.update("disable_jit", True)  # (an object's attributes are read by the uncompiled file)
f = srctrans.jit(model.scaled, static_argnums=1)
out["config"] = [f(x, model.Config(2.0)).tolist(), os.path.basename(str(srctrans.source_path(f)))]
g = srctrans.jit(model.scaled, static_argnums=1)
out["holder"] = [g(x, model.Holder(3.0)).tolist(), os.path.basename(str(srctrans.source_path(g)))]
srctrans.config.update("disable_jit", False)
h = srctrans.jit(model.apply, static_argnums=1)
out["function"] = [h(x, model.act).tolist(), os.path.basename(str(srctrans.source_path(h)))]
print(json.dumps(out))
"""


def _run(python, folder):
    out = python(RUN, cwd=folder)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_a_second_process_finds_the_same_files(tmp_path, python):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    first = _run(python, tmp_path)
    second = _run(python, tmp_path)
    assert first == second
    x = np.array([0.5, 1.0])
    assert first["config"][0] == (x * 2.0).tolist()
    assert first["holder"][0] == (x * 3.0).tolist()
    np.testing.assert_allclose(first["function"][0], np.tanh(x) * 2.0)
    files = sorted(p.name for p in (tmp_path / "__srctrans__").glob("*.py"))
    assert len(files) == 3, files  # one per static value, not one more per process


def test_keys_read_content_not_addresses(make_module):
    m = make_module(MODEL)
    assert value_key(m.Config(2.0)) == f"{m.__name__}.Config(name='c', scale=2.0)"
    assert value_key(m.Config(2.0)) != value_key(m.Config(3.0))
    assert value_key(m.Holder(1.0)) is None and opaque({"h": m.Holder(1.0)})
    assert key_text(m.Holder(1.0)) == f"<opaque {m.__name__}.Holder>"
    assert value_key(np.float32(1.5)) == "numpy.float32(1.5)"
    assert value_key(np.tanh) == "numpy.tanh"
    assert value_key((1, "a", frozenset({"b", "a"}))) == "(1, 'a', frozenset({'a', 'b'}))"
    assert value_key(m.act, fingerprints=False) == f"{m.__name__}.act"
    assert value_key(m.act).startswith(f"{m.__name__}.act#")  # and the fingerprint of its source


def test_opaque_values_of_one_type_share_a_file_and_keep_their_values(make_module, monkeypatch):
    m = make_module(MODEL)
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    f = srctrans.jit(m.scaled, static_argnums=1)
    x = np.array([1.0, 2.0])
    a, b = m.Holder(2.0), m.Holder(5.0)
    np.testing.assert_allclose(f(x, a), x * 2.0)
    path = srctrans.source_path(f)
    np.testing.assert_allclose(f(x, b), x * 5.0)
    np.testing.assert_allclose(f(x, a), x * 2.0)
    assert len(list(path.parent.glob("*.scaled.jit.*.py"))) == 1
    assert "static arguments: cfg=<opaque" in path.read_text()


def test_functions_as_static_arguments(make_module):
    m = make_module(MODEL)
    h = srctrans.jit(m.apply, static_argnums=1)
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(h(x, m.act), np.tanh(x) * 2.0)
    text = srctrans.source(h)
    assert "def fn(x):" in text and "np.tanh(x)" in text  # written into the file as a callee
    np.testing.assert_allclose(h(x, m.other_act), np.sin(x) * 2.0)
    np.testing.assert_allclose(h(x, np.cos), np.cos(x) * 2.0)  # a library function: imported
    np.testing.assert_allclose(h(x, m.act), np.tanh(x) * 2.0)


def test_a_function_static_follows_edits_of_its_source(tmp_path, python):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    code = """
    import numpy as np, srctrans, model
    print(srctrans.jit(model.apply, static_argnums=1)(np.array([0.5]), model.act)[0])
    """
    out = python(code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(np.tanh(0.5) * 2.0)
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL).replace("np.tanh(x)", "np.tanh(x) + 1.0"))
    out = python(code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx((np.tanh(0.5) + 1.0) * 2.0)
