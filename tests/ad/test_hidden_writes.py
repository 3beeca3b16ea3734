"""Calls that write into an array where derivatives flow are refused at the user's line.

``np.add(y, x, out=y)``, ``y.sort()``, ``y.fill(v)``, ``np.copyto(y, x)`` and ``np.add.at(y, i, x)``
change ``y`` without an assignment; grad and jvp used to run them in the primal and
differentiate as if ``y`` had not changed (wrong gradients, silently). Where nothing
differentiated is involved they still run as written.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.errors import UnsupportedSyntaxError

from ..conftest import module_from_text

MODEL = '''
import numpy as np


def out_keyword(x):
    y = x * 2.0
    np.add(y, x, out=y)
    return np.sum(y * y)


def out_by_position(x):
    y = x * 2.0
    np.multiply(y, x, y)
    return np.sum(y)


def sorted_in_place(x):
    y = x * 1.0
    y.sort()
    return np.sum(y * np.arange(3.0))


def filled(x):
    y = x * 1.0
    y.fill(2.0)
    return np.sum(y * x)


def copied_into(x):
    y = np.zeros(3)
    np.copyto(y, x)
    return np.sum(y * y)


def added_at(x):
    y = np.zeros(3)
    np.add.at(y, np.array([0, 0, 2]), x)
    return np.sum(y * y)


def constant_buffer(x):
    k = np.arange(3.0)
    k.sort()
    np.multiply(k, 2.0, out=k)
    print("k", k)
    return np.sum(x * k)
'''

WRITES = {
    "out_keyword": "np.add(y, x, out=y)",
    "out_by_position": "np.multiply(y, x, y)",
    "sorted_in_place": "y.sort()",
    "filled": "y.fill(2.0)",
    "copied_into": "np.copyto(y, x)",
    "added_at": "np.add.at(y, np.array([0, 0, 2]), x)",
}
CASES = {name: MODEL.splitlines().index("    " + text) + 1 for name, text in WRITES.items()}
X = np.array([0.3, -0.7, 0.2])


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("hidden"), "hiddenmodel", MODEL) as module:
        yield module


@pytest.mark.parametrize("transform", ["grad", "jvp", "jit(grad)"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_write_the_derivative_cannot_see_is_refused(m, name, transform):
    f = getattr(m, name)
    run = {
        "grad": lambda: srctrans.grad(f)(X),
        "jvp": lambda: srctrans.jvp(f, (X,), (np.ones(3),)),
        "jit(grad)": lambda: srctrans.jit(srctrans.grad(f))(X),
    }[transform]
    with pytest.raises(UnsupportedSyntaxError, match="the derivative would not see the change") as info:
        run()
    assert info.value.filename.endswith("hiddenmodel.py") and info.value.line == CASES[name]


def test_writes_into_constants_run_as_written(m, capsys):
    f = m.constant_buffer
    np.testing.assert_allclose(srctrans.grad(f)(X), [0.0, 2.0, 4.0])
    np.testing.assert_allclose(srctrans.jvp(f, (X,), (np.ones(3),))[1], 6.0)
    assert "k [0. 2. 4.]" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["out_keyword", "out_by_position", "constant_buffer"])
def test_jit_compiles_a_ufuncs_out(m, name):
    """Numba takes a ufunc's out by position only: the generated file passes it so."""
    f = getattr(m, name)
    np.testing.assert_allclose(srctrans.jit(f)(X.copy()), f(X.copy()), rtol=1e-14)
