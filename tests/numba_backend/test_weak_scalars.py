"""Compiled generated code gives NumPy 2's dtypes (NEP 50): Python numbers take the array's dtype.

Before: ``jit(lambda x: x * 2.0)(float32_array)`` was float64, ``uint8_array - 1`` int64
(-1 where NumPy wraps to 255), ``jit(grad(f))`` of float32 inputs float64.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numba_backend.cpu  # noqa: F401  (installs the rewrite, as every compile does)
import srctrans

MODEL = """
import numpy as np

SCALE = 0.1

def scaled(x):
    return x * 0.1

def affine(x):
    return np.sin(x) * 3 + x / 2.0 - 1.5

def minus_one(x):
    return x - 1

def times_two(x):
    return x * 2

def plus_300(x):
    return x + 300

def shifted_and_masked(x):
    return (x << 1) & 0xF0

def equals_tenth(x):
    return x == 0.1

def below_300(x):
    return x < 300

def relu(x):
    return np.maximum(x, 0.0)

def where(x):
    return np.where(x > 0.5, x, 0.0)

def clipped(x):
    return np.clip(x, 0.25, 0.75)

def squared(x):
    return x ** 2

def squared_float(x):
    return x ** 2.0

def half_power(x):
    return 2.0 ** x

def complex_shift(x):
    return x + 1j

def global_scale(x):
    return x * SCALE

def local_scale(x):
    scale = 0.3
    return x * scale

def in_place(x):
    y = x.copy()
    y *= 0.1
    y += 1
    return y

def element_loop(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 0.1 + 1
    return out

def loss(w):
    return np.sum((w * 0.5 - 1.0) ** 2)
"""

F32 = np.array([0.1, 0.5, 0.75, 2.0], dtype=np.float32)
U8 = np.array([0, 1, 200, 255], dtype=np.uint8)
I8 = np.array([1, -2, 100, 3], dtype=np.int8)
I32 = np.array([1, 2, 3, 4], dtype=np.int32)

CASES = [
    ("scaled", F32), ("affine", F32), ("minus_one", U8), ("minus_one", F32), ("times_two", U8), ("times_two", I8),
    ("shifted_and_masked", U8), ("equals_tenth", F32), ("below_300", U8), ("relu", F32 - 1), ("where", F32),
    ("clipped", F32), ("squared", F32), ("squared_float", F32), ("half_power", F32), ("complex_shift", F32),
    ("global_scale", F32), ("local_scale", F32), ("in_place", F32), ("element_loop", F32),
    ("scaled", I32), ("scaled", np.float64(F32)),
]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import importlib
    import sys
    import textwrap

    folder = tmp_path_factory.mktemp("weak")
    (folder / "weak_model.py").write_text(textwrap.dedent(MODEL))
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("weak_model")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("weak_model", None)


@pytest.mark.parametrize("name,x", CASES, ids=[f"{n}-{np.asarray(x).dtype}" for n, x in CASES])
def test_compiled_dtypes_and_bits_are_numpys(model, name, x):
    f = getattr(model, name)
    expected = f(x.copy())
    got = srctrans.jit(f)(x.copy())
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


def test_an_int_out_of_the_dtypes_range_raises_as_in_numpy(model):
    with pytest.raises(OverflowError):
        model.plus_300(U8)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        srctrans.jit(model.plus_300)(U8)


def test_float32_gradients(model):
    g = srctrans.grad(model.loss)(F32)
    assert g.dtype == np.float32
    compiled = srctrans.jit(srctrans.grad(model.loss))(F32)
    assert compiled.dtype == np.float32
    np.testing.assert_array_equal(compiled, g)


def test_the_users_own_numba_code_is_left_alone():
    @numba.njit
    def own(x):
        return x * 2.0

    assert own(F32).dtype == np.float64  # Numba's own rule, not ours: the rewrite is for generated files
