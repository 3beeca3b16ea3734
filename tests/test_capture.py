"""Capture: every kind of callable reaches its source, and the generated file computes the same."""

from __future__ import annotations

import functools
import linecache

import numpy as np
import pytest

import srctrans
from srctrans.cache import readable_name
from srctrans.capture import capture


def test_plain_function(make_module):
    mod = make_module(
        """
        import numpy as np

        def f(x):
            return np.sin(x) * 2.0
        """
    )
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(srctrans.jit(mod.f)(x), mod.f(x))
    assert "def f(x):" in srctrans.source(srctrans.jit(mod.f))


def test_nested_function_and_closure(make_module):
    mod = make_module(
        """
        import numpy as np

        def make(w, scale):
            def inner(x):
                return w @ x * scale
            return inner
        """
    )
    w = np.arange(6.0).reshape(2, 3)
    inner = mod.make(w, 0.5)
    fast = srctrans.jit(inner)
    x = np.ones(3)
    np.testing.assert_allclose(fast(x), inner(x))
    text = srctrans.source(fast)
    assert "scale = 0.5  # closure value of make.<locals>.inner" in text
    assert "#   w (closure value of make.<locals>.inner): numpy.ndarray float64 (2, 3)" in text
    assert readable_name(srctrans.source_path(fast)).endswith(".make.inner.jit.py")


def test_two_closures_with_different_values_do_not_collide(make_module):
    mod = make_module(
        """
        def make(w):
            def inner(x):
                return w * x
            return inner
        """
    )
    import numpy as np

    a = srctrans.jit(mod.make(np.full(3, 2.0)))
    b = srctrans.jit(mod.make(np.full(3, 5.0)))
    assert a(np.ones(3))[0] == 2.0
    assert b(np.ones(3))[0] == 5.0
    assert a(np.ones(3))[0] == 2.0
    assert srctrans.source_path(a) != srctrans.source_path(b)


def test_lambda_found_on_its_line(make_module):
    mod = make_module(
        """
        square = lambda x: x * x
        pair = [lambda y: y + 1.0, lambda y: y + 2.0]
        """
    )
    assert srctrans.jit(mod.square)(3.0) == 9.0
    assert srctrans.jit(mod.pair[0])(1.0) == 2.0
    assert srctrans.jit(mod.pair[1])(1.0) == 3.0
    text = srctrans.source(srctrans.jit(mod.pair[1]))
    assert "def lambda_L3_C" in text and "return y + 2.0" in text


def test_lambda_written_in_the_test_file():
    fast = srctrans.jit(lambda x: x * x)
    assert fast(4.0) == 16.0


def test_method_reads_attributes_at_every_call(make_module):
    mod = make_module(
        """
        import numpy as np

        class Model:
            def __init__(self):
                self.w = np.ones(3)
                self.b = 1.0

            def predict(self, x):
                return self.w @ x + self.b
        """
    )
    m = mod.Model()
    fast = srctrans.jit(m.predict)
    x = np.arange(3.0)
    assert fast(x) == 4.0
    m.w = np.zeros(3)
    assert fast(x) == 1.0
    assert "def predict(self_b, self_w, x):" in srctrans.source(fast)


def test_jit_as_method_decorator(make_module):
    mod = make_module(
        """
        import srctrans

        class Scaler:
            factor = 3.0

            @srctrans.jit
            def apply(self, x):
                return x * self.factor
        """
    )
    assert mod.Scaler().apply(2.0) == 6.0


def test_functools_partial(make_module):
    mod = make_module(
        """
        def power(x, n):
            out = x
            for i in range(n - 1):
                out = out * x
            return out
        """
    )
    fast = srctrans.jit(functools.partial(mod.power, n=3))
    assert fast(2.0) == 8.0
    assert capture(functools.partial(mod.power, n=3)).kind == "partial"


def test_notebook_cell_source_from_linecache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    name = "<ipython-input-7-0a1b2c3d>"
    text = "import numpy as np\n\ndef cell_fn(x):\n    return np.cos(x) + 1.0\n"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    try:
        namespace: dict = {"__name__": "__main__"}
        exec(compile(text, name, "exec"), namespace)
        fast = srctrans.jit(namespace["cell_fn"])
        np.testing.assert_allclose(fast(np.zeros(2)), [2.0, 2.0])
        path = srctrans.source_path(fast)
        assert str(path).startswith(str(tmp_path / "cache" / "srctrans"))
        assert readable_name(path) == "ipython_input_7_0a1b2c3d.cell_fn.jit.py"
    finally:
        linecache.cache.pop(name, None)


def test_function_made_by_exec_has_no_source():
    namespace: dict = {}
    exec("def ghost(x):\n    return x\n", namespace)
    with pytest.raises(srctrans.SourceUnavailableError, match="cannot find the source of ghost"):
        srctrans.jit(namespace["ghost"])(1.0)


def test_not_a_function():
    with pytest.raises(TypeError, match="jit expects a function"):
        srctrans.jit(3)
    with pytest.raises(TypeError, match="srctrans transforms Python functions"):
        capture(np.fft.fft)  # a NumPy function without a derivative rule (np.sin has one)


def test_globals_become_imports_when_importable(make_module):
    helper = make_module(
        """
        OFFSET = 0.25

        def shift(x):
            return x + OFFSET
        """
    )
    mod = make_module(
        f"""
        import numpy as np
        from numpy import tanh as expit
        from {helper.__name__} import shift, OFFSET as OFF

        SCALE = 2.0

        def f(x):
            return shift(expit(x) * SCALE) + OFF
        """
    )
    fast = srctrans.jit(mod.f)
    x = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(fast(x), mod.f(x))
    text = srctrans.source(fast)
    assert "from numpy import tanh as expit" in text
    assert f"from {mod.__name__} import SCALE" in text
    assert f"from {mod.__name__} import OFF" in text
    assert f"from {helper.__name__} import OFFSET" in text  # the callee's own global
    assert "def shift(x):" in text  # a user callee is emitted into the file, before its caller
    assert text.index("def shift(x):") < text.index("def f(x):")


def test_unresolvable_name_is_located(make_module):
    mod = make_module(
        """
        def f(x):
            return x + undefined_thing
        """
    )
    with pytest.raises(srctrans.UnresolvedNameError) as info:
        srctrans.jit(mod.f)(1.0)
    err = info.value
    assert err.line == 3 and err.col == 15
    assert "name 'undefined_thing' is not defined" in str(err)
    assert "return x + undefined_thing" in str(err)


def test_a_file_is_read_for_its_definitions_once(make_module, monkeypatch):
    """Every lambda and function of one file is found from one index of the parsed file (walking an
    800-line file's tree for each of its lambdas took 1.7 s per lambda), and each is the right one."""
    from srctrans import parse

    mod = make_module(
        """
        import numpy as np

        SQUARE = lambda x: x * x
        CUBE = lambda x: x * x * x


        def twice(x):
            return 2.0 * x


        @staticmethod
        def decorated(x):
            return np.sin(x)
        """
    )
    monkeypatch.setattr(parse, "_DEFINITIONS", {})
    found = [parse.parse_function(capture(f)) for f in (mod.SQUARE, mod.CUBE, mod.twice, mod.decorated.__func__)]
    assert [type(p.node).__name__ for p in found] == ["Lambda", "Lambda", "FunctionDef", "FunctionDef"]
    assert [p.line_of(p.node) for p in found] == [4, 5, 8, 13]
    assert len(parse._DEFINITIONS) == 1
    assert srctrans.grad(mod.CUBE)(2.0) == 12.0 and srctrans.grad(mod.twice)(1.0) == 2.0
