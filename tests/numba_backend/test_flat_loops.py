"""numba_backend.flat_loops: elementwise code of generated files runs as flat loops, with NumPy's results.

Each expression is compiled twice, in a module named as a generated file's (which gets the
flat loop) and in an ordinary one (Numba's own loop nest), and both are compared bit for bit
with NumPy over shapes that take the flat loop (equal shapes, a trailing bias row, empty
arrays) and shapes that must take Numba's loop nest (an axis of length 1, views with
strides, Fortran order, operands of two lower ranks). Only exact operations here: a line
calling tanh or exp that the flat loop vectorizes calls libmvec's SIMD version (a few ulp
from libm's), which ``test_vector_math.py`` checks against NumPy.
"""

from __future__ import annotations

import platform

import numba
import numpy as np
import pytest

import numba_backend.cpu  # noqa: F401  (installs the flat loops, as every compile does)
from numba_backend import flat_loops

pytestmark = pytest.mark.skipif(not flat_loops.state["installed"], reason=flat_loops.state["reason"])

RNG = np.random.default_rng(7)


def _compiled(params: str, expr: str, module: str):
    namespace = {"np": np, "__name__": module}
    exec(f"def f({params}):\n    return {expr}\n", namespace)
    return numba.njit(error_model="numpy")(namespace["f"])


def _generated(params, expr):
    return _compiled(params, expr, "_srctrans_test_flat_loops")


def _plain(params, expr):
    return _compiled(params, expr, "plain_test_flat_loops")


def _check(params, expr, *args):
    """The flat loop gives Numba's own results bit for bit, and NumPy's values (Numba types a
    float32 array times a Python float as float64, where NumPy keeps float32)."""
    expected = eval(expr, {"np": np}, dict(zip([p.strip() for p in params.split(",")], args)))
    fast, plain = _generated(params, expr)(*args), _plain(params, expr)(*args)
    np.testing.assert_array_equal(fast, plain, strict=True)
    assert np.shape(fast) == np.shape(expected)
    tol = 1e-6 if expected.dtype in (np.float32, np.complex64) else 1e-15
    np.testing.assert_allclose(fast, expected, rtol=tol, atol=0)


def _arrays(*shapes, dtype=np.float64):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


FIVE = "a * b + c * (d - e)"


@pytest.mark.parametrize(
    "shapes",
    [
        [(256, 128)] * 5,  # the flat loop
        [(3, 4, 5)] * 5,
        [(7,)] * 5,
        [(0, 4)] * 5,  # empty
        [(4, 5), (5,), (4, 5), (5,), (4, 5)],  # bias rows
        [(2, 3, 4), (3, 4), (2, 3, 4), (3, 4), (3, 4)],
        [(4, 5), (1, 5), (4, 5), (4, 5), (4, 5)],  # an axis of length 1: Numba's loop nest
        [(4, 5), (4, 1), (4, 5), (4, 5), (4, 5)],
        [(4, 5), (5,), (4, 5), (1, 1), (4, 5)],
        [(2, 3, 4), (3, 4), (4,), (2, 3, 4), (2, 3, 4)],  # two lower ranks: Numba's loop nest
        [(4, 5), (4, 5), (4, 5), (4, 5), (5, 4)],  # shapes that do not broadcast: both raise
    ],
)
def test_five_operands_over_shapes(shapes):
    args = _arrays(*shapes)
    try:
        expected = eval(FIVE, {}, dict(zip("abcde", args)))
    except ValueError:
        for compile_ in (_generated, _plain):
            with pytest.raises(ValueError):
                compile_("a, b, c, d, e", FIVE)(*args)
        return
    _check("a, b, c, d, e", FIVE, *args)
    assert expected.shape == np.broadcast_shapes(*shapes)


def test_views_and_fortran_order_take_numba_loops():
    base = RNG.standard_normal((8, 6))
    _check("a, b", "a * b + 1.0", base[::2], base[:4])  # a strided view (layout A)
    _check("a, b", "a * b + 1.0", np.asfortranarray(base), base)  # Fortran order
    _check("a, b", "a * b + 1.0", base.T, base.T.copy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128])
def test_dtypes_scalars_and_mixed(dtype):
    a, b = _arrays((6, 5), (6, 5), dtype=dtype)
    _check("a, b", "(a - b) * 3 + a", a, b)
    _check("a, b", "a * 2.5 - b", a, b)  # a float scalar may promote
    _check("a, b", "a > b", a, b) if dtype is not np.complex128 else None  # a bool result
    c = _arrays((6, 5))[0]
    _check("a, c", "a + c * c", a, c)  # mixed dtypes


def test_unary_ufuncs_and_zero_dimensional():
    (a,) = _arrays((9, 4))
    _check("a", "np.sqrt(np.abs(a)) + np.negative(a) * a", a)  # (exact ones: libmvec's exp is not libm's)
    _check("a, b", "a * b + b", np.array(2.0), np.array(3.0))  # 0-d arrays


def test_explicit_output_arrays():
    a, b = _arrays((5, 4), (5, 4))
    for compile_ in (_generated, _plain):
        out = np.empty((5, 4))
        namespace = {"np": np, "__name__": "_srctrans_test_out" if compile_ is _generated else "plain_out"}
        exec("def f(a, b, out):\n    np.add(a, b, out)\n    np.multiply(out, a, out)\n    return out\n", namespace)
        got = numba.njit(namespace["f"])(a, b, out)
        np.testing.assert_array_equal(got, (a + b) * a)
        assert got is out or np.shares_memory(got, out)


def test_aliasing_output_with_an_input():
    a, b = _arrays((5, 4), (5, 4))
    f = _generated("a, b", "np.add(a, b, a)")
    expected = a + b
    f(a, b)
    np.testing.assert_array_equal(a, expected)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="vector registers named for x86-64")
def test_five_operand_loop_is_vectorized():
    """The point of the flat loop: LLVM vectorizes five operands (it did not in Numba's loop nest)."""
    args = _arrays(*[(64, 32)] * 5)
    fast, plain = _generated("a, b, c, d, e", FIVE), _plain("a, b, c, d, e", FIVE)
    fast(*args), plain(*args)
    ir_fast = next(iter(fast.inspect_llvm().values()))
    ir_plain = next(iter(plain.inspect_llvm().values()))
    assert "x double>" in ir_fast  # vector registers of doubles
    assert "x double>" not in ir_plain


def test_user_code_keeps_numba_loops():
    """Only generated files and the runtime helpers get the patch: the user's own njit code is untouched."""
    assert any(tag in "_srctrans_x" for tag in flat_loops._OURS)
    assert not any(tag in "mypackage.model" for tag in flat_loops._OURS)
