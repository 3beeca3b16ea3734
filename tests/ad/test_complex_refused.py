"""Complex values where derivatives flow are refused, never differentiated wrongly.

The derivative rules hold for real values. Before, ``grad`` of ``np.sum(np.abs(x + 1j * x**2))``
returned complex numbers and ``jvp`` a complex tangent of a real function, silently.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.errors import UnsupportedSyntaxError

from ..conftest import module_from_text

MODEL = '''
import numpy as np


def imaginary_literal(x):
    z = x + 1j * x**2
    return np.sum(np.abs(z))


def complex_dtype(x):
    z = x.astype(np.complex128) * 2.0
    return np.sum(np.abs(z))


def complex_in_a_write(x):
    z = np.zeros(3, dtype="complex128")
    z[0] = x[0] * 2.0
    return np.sum(np.abs(z))


def complex_constant_made_real(x):
    c = np.array([1.0 + 2.0j, 3.0, -1.0j]) * 2.0
    return np.sum(x * np.abs(c))


def real_input(z):
    return np.sum(np.abs(z))


PHASES = np.exp(1j * np.arange(3.0))


def complex_global(x):
    return np.sum(np.abs(x * PHASES))


def complex_argument(x, z):
    return np.sum(np.abs(x * z) ** 2)
'''

X = np.array([0.3, 0.5, -0.4])


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("complex"), "complexmodel", MODEL) as module:
        yield module


def _jvp(f):
    return lambda x: srctrans.jvp(f, (x,), (np.ones_like(x),))


@pytest.mark.parametrize("transform", [srctrans.grad, _jvp], ids=["grad", "jvp"])
@pytest.mark.parametrize(
    "name, line", [("imaginary_literal", 6), ("complex_dtype", 11), ("complex_in_a_write", 16), ("complex_global", 34)]
)
def test_a_complex_value_that_derivatives_reach_is_a_located_error(m, transform, name, line):
    with pytest.raises(UnsupportedSyntaxError, match="complex value where derivatives flow") as info:
        transform(getattr(m, name))(X)
    assert info.value.filename.endswith("complexmodel.py") and info.value.line == line


def test_a_complex_constant_made_real_is_differentiated(m):
    f = m.complex_constant_made_real
    want = np.abs(np.array([1.0 + 2.0j, 3.0, -1.0j]) * 2.0)
    np.testing.assert_allclose(srctrans.grad(f)(X), want, rtol=1e-12)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(X), want, rtol=1e-12)
    np.testing.assert_allclose(_jvp(f)(X)[1], np.sum(want), rtol=1e-12)


def test_complex_arguments_are_refused_by_name(m):
    z = np.array([1.0 + 1.0j, 2.0 - 1.0j])
    with pytest.raises(TypeError, match="with respect to 'z': srctrans differentiates real values only"):
        srctrans.grad(m.real_input)(z)
    with pytest.raises(TypeError, match="jvp: z: srctrans differentiates real values only"):
        srctrans.jvp(m.real_input, (z,), (np.ones_like(z),))
    np.testing.assert_allclose(srctrans.grad(m.real_input)(np.array([1.0, -2.0])), [1.0, -1.0])


def test_complex_values_are_refused_wherever_they_are_passed(m):
    """A complex argument that is not differentiated meets a differentiated one: refused too."""
    f = m.complex_argument
    z = np.array([1.0 + 1.0j, 2.0, -1.0j])
    attempts = [
        ("grad of complex_argument argument 'z'", lambda: srctrans.grad(f)(X, z)),
        ("grad of complex_argument with respect to 'z'", lambda: srctrans.grad(f, argnums=1, allow_int=True)(X, z)),
        ("vjp: z", lambda: srctrans.vjp(f, X, z)[1](1.0)),
        ("vjp: the cotangent", lambda: srctrans.vjp(m.real_input, X)[1](1.0j)),
        ("jacfwd: z", lambda: srctrans.jacfwd(f)(X, z)),
        ("jacrev: z", lambda: srctrans.jacrev(f)(X, z)),
        ("jacfwd: z", lambda: srctrans.hessian(f, argnums=1)(X, z)),  # (forward over the adjoint)
    ]
    for message, attempt in attempts:
        with pytest.raises(TypeError, match=f"{message}: srctrans differentiates real values only"):
            attempt()
    with pytest.raises(TypeError, match="argument 'z'"):
        srctrans.jit(srctrans.grad(f))(X, z)
