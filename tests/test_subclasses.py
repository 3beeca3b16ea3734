"""NumPy array subclasses whose meaning differs are refused by every transformation, naming the
argument; subclasses that only add attributes are computed with as plain arrays.

Before: ``jit(lambda x: x * x)(np.matrix(...))`` gave the elementwise square (NumPy: the
matrix product) and a masked array's mask was silently ignored (vmap, jit after a float64
compile).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srctrans

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # (NumPy advises against np.matrix)
    MATRIX = np.matrix([[1.0, 2.0], [3.0, 4.0]])
MASKED = np.ma.array([1.0, 2.0, 100.0], mask=[False, False, True])


class Tagged(np.ndarray):
    """A subclass that only carries a tag: it means what a plain array means."""

    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", None)

    def describe(self):
        return f"tagged {self.tag}"


class Doubling(np.ndarray):
    def __mul__(self, other):
        return np.multiply(np.asarray(self), other) * 2


def square(x):
    return x * x


def total(x):
    return np.sum(x * x)


CALLS = {
    "jit": lambda a: srctrans.jit(square)(a),
    "jit_pytree": lambda a: srctrans.jit(lambda p: p["w"] * 2.0)({"w": a}),
    "grad": lambda a: srctrans.grad(total)(a),
    "jit_grad": lambda a: srctrans.jit(srctrans.grad(total))(a),
    "jvp": lambda a: srctrans.jvp(total, (a,), (np.ones(a.shape),)),
    "vjp": lambda a: srctrans.vjp(square, a),
    "vmap": lambda a: srctrans.vmap(square)(a),
    "jit_vmap": lambda a: srctrans.jit(srctrans.vmap(square))(a),
    "pmap": lambda a: srctrans.pmap(lambda x: x * 2.0)(a),
}


@pytest.mark.parametrize("value", [MATRIX, MASKED, np.ones(3).view(Doubling)], ids=["matrix", "masked", "overrides_mul"])
@pytest.mark.parametrize("call", list(CALLS), ids=list(CALLS))
def test_subclasses_that_mean_something_else_are_refused(call, value):
    with pytest.raises(TypeError, match=r"argument (.x.|p\['w'\]) of .* is a (numpy\.|.*Doubling)"):
        CALLS[call](value)


def test_the_message_says_why_and_what_to_do():
    with pytest.raises(TypeError, match=r"argument 'x' of square is a numpy\.matrix, whose \* and \*\* are matrix products.*write @"):
        srctrans.jit(square)(MATRIX)
    with pytest.raises(TypeError, match=r"numpy\.ma\.MaskedArray, whose masked elements NumPy leaves out.*filled"):
        srctrans.jit(total)(MASKED)
    with pytest.raises(TypeError, match=r"argument p\['w'\] of"):
        srctrans.jit(lambda p: p["w"] * 2.0)({"w": MATRIX})


def test_uncompiled_too(monkeypatch):  # one program, one meaning, jit or not
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    with pytest.raises(TypeError, match="numpy.matrix"):
        srctrans.jit(square)(MATRIX)


def test_after_a_plain_float64_compile(make_module):
    f = srctrans.jit(total)
    assert f(np.array([1.0, 2.0, 3.0])) == 14.0  # the fast path is set up
    with pytest.raises(TypeError, match="MaskedArray"):
        f(MASKED)


@pytest.mark.parametrize("call", ["jit", "grad", "jvp", "vmap", "pmap"])
def test_subclasses_that_only_add_attributes_are_plain_arrays(call, tmp_path):
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    tagged = x.view(Tagged)
    tagged.tag = "t"
    expected = CALLS[call](x)
    got = CALLS[call](tagged)
    for a, b in zip(np.atleast_1d(got) if call != "jvp" else got, np.atleast_1d(expected) if call != "jvp" else expected):
        np.testing.assert_array_equal(a, b)
    if call == "jit":
        assert type(got) is np.ndarray
    path = tmp_path / "data.bin"
    mm = np.memmap(path, dtype=np.float64, mode="w+", shape=x.shape)
    mm[:] = x
    np.testing.assert_array_equal(srctrans.jit(square)(mm), x * x)
