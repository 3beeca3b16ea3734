"""jit: compiled results equal the uncompiled function; specialization; static arguments; options."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.cache import readable_name

from .conftest import module_from_text

MODEL = """
import math
import numpy as np

def calc(x):
    return x * x + x * 2.0

def loops(x, n):
    total = 0.0
    for i in range(n):
        if i % 2 == 0:
            total += np.sum(x) * i
        else:
            total -= math.sqrt(i)
    k = 0
    while total > 100.0 and k < 50:
        total = total / 2.0
        k += 1
    return total, k

def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)

def with_defaults(x, scale=2.0, *, shift=1.0):
    return x * scale + shift

def mode_switch(x, mode):
    if mode == "square":
        return x * x
    return x + x

def shape_from(x, dims):
    return np.zeros(dims) + np.sum(x)

def talk(x):
    print("value", x)
    return x + 1.0

def inplace(y, v):
    for i in range(y.shape[0]):
        y[i] += v
    return y
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("jitmodel"), "jitmodel", MODEL) as module:
        yield module


def test_decorator_forms(model):
    a = srctrans.jit(model.calc)
    b = srctrans.jit()(model.calc)
    c = srctrans.jit(fastmath=True)(model.calc)
    x = np.arange(4.0)
    for f in (a, b, c):
        np.testing.assert_allclose(f(x), model.calc(x))


def test_control_flow_matches_python(model):
    f = srctrans.jit(model.loops)
    for n in (0, 3, 10, 40):
        x = np.linspace(0, 1, 5)
        assert f(x, n) == pytest.approx(model.loops(x, n))


def test_recursion(model):
    assert srctrans.jit(model.fact)(10) == model.fact(10)


def test_specializes_on_dtype_and_ndim(model):
    f = srctrans.jit(model.calc)
    results = [f(np.arange(3.0)), f(np.arange(3, dtype=np.int32)), f(np.ones((2, 2))), f(3), f(2.5)]
    np.testing.assert_allclose(results[1], [0.0, 3.0, 8.0])
    assert results[2].shape == (2, 2)
    assert results[3] == 15 and results[4] == 11.25
    assert len(f._simple.compiled.signatures) == 5


def test_defaults_and_keyword_arguments(model):
    f = srctrans.jit(model.with_defaults)
    assert f(1.0) == 3.0
    assert f(1.0, 3.0) == 4.0
    assert f(1.0, shift=0.0) == 2.0
    assert f(x=1.0, scale=1.0, shift=1.0) == 2.0
    with pytest.raises(TypeError, match="with_defaults"):
        f(1.0, 2.0, 3.0)


def test_static_argument_one_file_per_value(model):
    f = srctrans.jit(model.mode_switch, static_argnums=1)
    assert f(3.0, "square") == 9.0
    assert f(3.0, "double") == 6.0
    assert f(3.0, mode="square") == 9.0
    paths = {spec.gen.path for spec in f._specs.values()}
    assert len(paths) == 2
    texts = [p.read_text() for p in paths]
    assert any("mode = 'square'  # static argument" in t for t in texts)
    assert all("def mode_switch(x):" in t for t in texts)


def test_static_argnames_and_tuple_values(model):
    f = srctrans.jit(model.shape_from, static_argnames="dims")
    out = f(np.ones(3), (2, 3))
    assert out.shape == (2, 3) and out[0, 0] == 3.0
    assert f(np.ones(3), dims=(4,)).shape == (4,)


def test_static_arguments_must_be_hashable(model):
    f = srctrans.jit(model.shape_from, static_argnums=(1,))
    with pytest.raises(TypeError, match="static argument 'dims' .* must be hashable, got list"):
        f(np.ones(3), [2, 3])


def test_static_argnums_checked(model):
    with pytest.raises(ValueError, match="static_argnums=5 is out of range for calc, which takes 1 arguments"):
        srctrans.jit(model.calc, static_argnums=5)
    with pytest.raises(ValueError, match="static_argnames: calc has no parameter named 'y'"):
        srctrans.jit(model.calc, static_argnames="y")
    with pytest.raises(TypeError, match="static_argnums"):
        srctrans.jit(model.calc, static_argnums=1.5)


def test_unsupported_target(model):
    with pytest.raises(ValueError, match="target='gpu'"):
        srctrans.jit(model.calc, target="gpu")


def test_print_runs_on_every_compiled_call(model, capfd):
    f = srctrans.jit(model.talk)
    for v in (1.0, 2.0, 3.0):
        assert f(v) == v + 1.0
    out = capfd.readouterr().out
    assert out.count("value") == 3
    assert "value 3.0" in out


def test_in_place_writes_reach_the_caller(model):
    y = np.zeros(3)
    out = srctrans.jit(model.inplace)(y, 2.0)
    np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])
    assert out is not None


def test_parallel_and_no_cache_options(model):
    f = srctrans.jit(model.calc, parallel=True, cache=False)
    np.testing.assert_allclose(f(np.arange(5.0)), model.calc(np.arange(5.0)))
    assert readable_name(srctrans.source_path(f)) == "jitmodel.calc.jit_parallel.py"


def test_disable_jit_runs_the_generated_python(model, monkeypatch):
    f = srctrans.jit(model.calc)
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    assert f(3.0) == 15.0
    assert f._simple._compiled is None  # nothing was compiled
    # the code that ran is the generated file's, not the original
    assert f._simple.python.__code__.co_filename == str(srctrans.source_path(f))


def test_config_update_validates():
    with pytest.raises(ValueError, match="unknown srctrans setting 'nope'"):
        srctrans.config.update("nope", 1)


def test_source_needs_a_transformed_function():
    with pytest.raises(TypeError, match="expected a function made by a srctrans transformation"):
        srctrans.source(len)


GAPS = """
import numpy as np


def reductions(x):
    return np.mean(x, axis=0) + x.max(axis=1).sum() + np.std(x, axis=-1, keepdims=True)[0, 0]


def products(a, b):
    return np.matmul(a, b).sum() + np.einsum("bij,bjk->bik", a, b).sum() + np.tensordot(a, b, axes=((2,), (1,))).sum()


def joins(x):
    parts = [x, x * 2.0, x * 3.0]
    return np.stack(parts, axis=1).sum(axis=0) + np.concatenate(parts).sum() + np.tile(x, 2)[: x.shape[0]]


def scatter(x, idx):
    out = np.zeros(4)
    np.add.at(out, idx, x)
    return np.squeeze(out.reshape(1, 4), axis=0)
"""


def test_ordinary_numpy_that_numba_lacks_compiles_through_jit(make_module):
    mod = make_module(GAPS)
    x = np.arange(12.0).reshape(3, 4)
    a, b = np.ones((2, 3, 4)), np.arange(40.0).reshape(2, 4, 5)
    np.testing.assert_allclose(srctrans.jit(mod.reductions)(x), mod.reductions(x))
    np.testing.assert_allclose(srctrans.jit(mod.products)(a, b), mod.products(a, b))
    np.testing.assert_allclose(srctrans.jit(mod.joins)(np.arange(3.0)), mod.joins(np.arange(3.0)))
    idx = np.array([0, 0, 3])
    np.testing.assert_allclose(srctrans.jit(mod.scatter)(np.ones(3), idx), mod.scatter(np.ones(3), idx))
    assert "rt.matmul(a, b)" in srctrans.source(srctrans.jit(mod.products))


RECURSIVE = """
import numpy as np

def countdown(x, n):
    if n == 0:
        return x
    return countdown(x * 0.5, n - 1) + x

def recursive(x):
    return countdown(x, 3)
"""


def test_recursive_functions_survive_a_second_process(tmp_path):
    """Numba loads a cached recursive function into a segmentation fault (numba/numba#6061):
    recursive functions, and those calling one, are compiled in each process instead."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "recmodel.py").write_text(RECURSIVE)
    script = (
        "import numpy as np, srctrans, recmodel\n"
        "print(srctrans.jit(recmodel.recursive)(np.ones(3))[0], srctrans.jit(srctrans.vmap(recmodel.recursive))(np.ones((2, 3)))[1, 0])\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, str(tmp_path)])}
    for _ in range(2):  # the second process finds the first one's generated files and Numba cache
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == ["1.875", "1.875"]


def test_which_functions_are_not_cached():
    from numba_backend.cpu import recursive_reach

    text = (
        "def a(x):\n    return b(x)\n"
        "def b(x):\n    return a(x) if x else c(x)\n"
        "def c(x):\n    return x\n"
        "def d(x):\n    return d(x - 1) if x else 0\n"
        "def e(x):\n    return a(x) + c(x)\n"
        "def f(x):\n    return c(x)\n"
    )
    assert recursive_reach(text, ["a", "b", "c", "d", "e", "f"]) == {"a", "b", "d", "e"}
