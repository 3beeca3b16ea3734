"""Seeing and debugging: pdb in the generated file, disable_jit, located runtime and compile errors."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import srctrans

DEBUG_MODEL = """
import numpy as np

def calc(x):
    y = x * 2.0
    breakpoint()
    return y + 1.0
"""


@pytest.mark.slow
def test_pdb_stops_in_the_generated_file(tmp_path, python):
    (tmp_path / "dbgmodel.py").write_text(textwrap.dedent(DEBUG_MODEL))
    out = python(
        """
        import numpy as np, srctrans, dbgmodel
        print("result", srctrans.jit(dbgmodel.calc)(np.ones(2)))
        """,
        cwd=tmp_path,
        env={"SRCTRANS_DISABLE_JIT": "1", "PYTHONBREAKPOINT": "pdb.set_trace"},
        stdin="where\nlist\np y\ncontinue\n",
    )
    assert out.returncode == 0, out.stderr
    generated = tmp_path / "__srctrans__" / "dbgmodel.calc.jit."
    assert re.search(rf"{re.escape(str(generated))}[0-9a-f]{{12}}\.py\(", out.stdout)  # pdb's frame line names the generated file
    assert "# dbgmodel.py:6  breakpoint()" in out.stdout  # `list` shows the generated text
    assert "array([2., 2.])" in out.stdout  # `p y` sees the generated function's local
    assert "result [3. 3.]" in out.stdout


RAISING = """
import numpy as np

def pick(x, i):
    y = x * 2.0
    z = y[i]
    return z

def checked(x):
    if x > 1.0:
        raise ValueError("x must be at most 1")
    return x
"""


@pytest.fixture
def raising(make_module):
    return make_module(RAISING)


def test_python_exception_names_the_users_line(raising, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    with pytest.raises(IndexError) as info:
        srctrans.jit(raising.pick)(np.ones(3), 7)
    note = "\n".join(info.value.__notes__)
    assert f"in your code: {raising.__file__}:6  z = y[i]" in note
    assert re.search(r"\.pick\.jit\.[0-9a-f]{12}\.py:", note)


def test_compiled_exception_names_the_users_line(raising):
    f = srctrans.jit(raising.checked)
    assert f(0.5) == 0.5
    with pytest.raises(ValueError, match="x must be at most 1") as info:
        f(3.0)
    assert f"in your code: {raising.__file__}:11  raise ValueError(\"x must be at most 1\")" in "\n".join(info.value.__notes__)


def test_numba_typing_failure_is_reported_at_the_users_line(make_module):
    mod = make_module(
        """
        def bad(x):
            y = x + 1.0
            return y + "text"
        """
    )
    with pytest.raises(srctrans.CompileError) as info:
        srctrans.jit(mod.bad)(1.0)
    err = info.value
    assert (err.filename, err.line) == (mod.__file__, 4)
    text = str(err)
    assert text.startswith(f"{mod.__file__}:4:5: Numba could not compile this line")
    assert 'return y + "text"' in text
    assert re.search(r"\.bad\.jit\.[0-9a-f]{12}\.py:", text)  # and where in the generated file
    assert "During:" not in text  # Numba's own traceback noise is left out


@pytest.mark.parametrize(
    ("line", "inside"),
    [
        ("v = h.view()", "ValueError inside Numba"),  # Numba's typing unpacks a dtype it was not given
        ("v = h.astype(np.float64, copy=False)", "AssertionError inside Numba"),  # it asserts no keywords
    ],
)
def test_error_inside_numbas_typing_is_reported_at_the_users_line(make_module, line, inside):
    # Numba raises a plain ValueError / AssertionError here, which names no line; it was
    # reported as if the compiled code had raised it, with no line of the user's.
    mod = make_module(
        f"""
        import numpy as np

        def odd(h):
            {line}
            return v + 1.0
        """
    )
    assert np.allclose(mod.odd(np.arange(3.0)), np.arange(3.0) + 1.0)  # NumPy runs it
    with pytest.raises(srctrans.CompileError) as info:
        srctrans.jit(mod.odd)(np.arange(3.0))
    err = info.value
    assert (err.filename, err.line) == (mod.__file__, 5)
    text = str(err)
    assert text.startswith(f"{mod.__file__}:5:5: Numba could not compile this line:\n{inside}")
    assert line in text
    assert re.search(r"\.odd\.jit\.[0-9a-f]{12}\.py:", text)


def test_environment_variable_disables_jit(tmp_path, python):
    (tmp_path / "envjit.py").write_text("def f(x):\n    return x * 2\n")
    out = python(
        """
        import srctrans, envjit
        f = srctrans.jit(envjit.f)
        print(srctrans.config.disable_jit, f(21), f._simple._compiled is None, "numba" in __import__("sys").modules)
        """,
        cwd=tmp_path,
        env={"SRCTRANS_DISABLE_JIT": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "42", "True", "False"]


def test_srctrans_imports_without_numba(tmp_path, python):
    """The transformation package knows nothing of Numba: it imports and runs with Numba blocked."""
    (tmp_path / "nonumba.py").write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x) * 2\n")
    out = python(
        """
        import sys
        sys.modules["numba"] = None  # any import of numba now fails
        import srctrans, nonumba
        srctrans.config.update("disable_jit", True)
        print(srctrans.jit(nonumba.f)([1.0, 2.0]))
        print(open(srctrans.source_path(srctrans.jit(nonumba.f))).read().count("def f(x):"))
        """,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6.0", "1"]


def test_compiled_index_out_of_range_raises_like_numpy(raising):
    f = srctrans.jit(raising.pick)
    assert f(np.ones(3), 2) == 2.0
    with pytest.raises(IndexError) as info:
        f(np.ones(3), 7)
    assert "disable_jit" in "\n".join(info.value.__notes__)
    unchecked = srctrans.jit(raising.pick, boundscheck=False)
    assert re.search(r"\.pick\.jit_noboundscheck\.[0-9a-f]{12}\.py$", srctrans.source_path(unchecked).name)
    assert unchecked(np.ones(3), 1) == 2.0
