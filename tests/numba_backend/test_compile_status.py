"""Every function with a derivative rule compiles under ``srctrans.jit`` (issue 20), except what
``numba_backend.coverage`` lists.

For each NumPy, SciPy, ``math`` and built-in rule with a spec (``tests/rules/specs.py``), the
vjp of its first spec, compiled (``srctrans.vjp(srctrans.jit(f), ...)``), must give the
cotangents the uncompiled vjp gives; a key in ``NOT_COMPILED`` must instead stop with a
``CompileError`` that gives the list's reason (so the list cannot go stale), and a key in ``PARTLY`` must compile its
first spec and fail on the spec ``PARTLY_FAILS`` names. One compile per key: the adjoint file
holds the primal too (see ``_adjoint_only``).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import srctrans
from numba_backend.coverage import DIFFERENT, FORWARD_NOT_COMPILED, NOT_COMPILED, PARTLY
from srctrans.rules.derivatives import DERIVATIVES
from srctrans.tree import tree_flatten, tree_map
from tests.rules.specs import SPECS

pytestmark = pytest.mark.slow  # compiles

LIBRARIES = ("numpy.", "scipy.", "math.", "builtins.")
KEYS = sorted(k for k in DERIVATIVES if k.startswith(LIBRARIES) and k in SPECS)

# PARTLY's keys -> the index of a spec of theirs that does not compile
PARTLY_FAILS: dict[str, int] = {
    "numpy.clip": 4,
    "numpy.vdot": 1,
    "numpy.trace": 1,
    "numpy.inner": 2,
    "numpy.linalg.pinv": 3,
    "numpy.linalg.norm": 13,
    "numpy.linalg.eigh": 1,
    "numpy.linalg.svd": 3,
    "numpy.linalg.qr": 3,
    "numpy.linalg.eig": 2,
    "numpy.flip": 1,
    "numpy.sort": 2,
    "numpy.linspace": 2,
    "numpy.average": 1,
    "numpy.partition": 1,
    "numpy.interp": 1,
    "scipy.linalg.solve_sylvester": 1,
    "scipy.linalg.sqrtm": 1,
    "scipy.linalg.lu": 1,
}


def _args(key, i, makers):
    rng = np.random.default_rng(zlib.crc32(f"{key}-{i}".encode()))  # tests/rules' points
    return tuple(make(rng) for make in makers)


def _ones(out):
    return tree_map(lambda o: np.ones_like(np.asarray(o, dtype=float)) if np.ndim(o) else 1.0, out)


def _compiled_vjp(key, i):
    fn, makers = SPECS[key][i]
    args = _args(key, i, makers)
    out, plain = srctrans.vjp(fn, *args)
    cotangent = _ones(out)
    _, compiled = srctrans.vjp(_adjoint_only(srctrans.jit(fn), fn), *args)
    return compiled(cotangent), plain(cotangent)


def _adjoint_only(jitted, fn):
    """``jitted`` whose own call runs ``fn`` uncompiled: srctrans.vjp calls it for the primal
    output, and the compiled adjoint file holds the primal computation anyway (one compile per
    key, not two)."""
    jitted.__class__ = type("AdjointOnly", (type(jitted),), {"__call__": lambda self, *args: fn(*args)})
    return jitted


def test_the_lists_name_rules():
    named = set(NOT_COMPILED) | set(PARTLY) | set(DIFFERENT)
    assert named <= set(KEYS), named - set(KEYS)
    assert not set(NOT_COMPILED) & (set(PARTLY) | set(DIFFERENT))
    assert set(PARTLY_FAILS) == set(PARTLY)


@pytest.mark.parametrize("key", KEYS)
def test_compiles_or_is_listed(key):
    if key in NOT_COMPILED:  # refused, at the user's line, with the reason coverage gives
        with pytest.raises(srctrans.CompileError, match=f"srctrans: {key} does not compile under jit: "):
            _compiled_vjp(key, 0)
        return
    got, want = _compiled_vjp(key, 0)
    got, want = tree_flatten(got)[0], tree_flatten(want)[0]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        if key not in DIFFERENT:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    if key in PARTLY:
        with pytest.raises(srctrans.CompileError):
            _compiled_vjp(key, PARTLY_FAILS[key])


def test_nuclear_norm_compiles():
    """ord='nuc' of one matrix (Numba's own np.linalg.norm typed it, then raised ValueError when it ran)."""
    got, want = _compiled_vjp("numpy.linalg.norm", 12)
    for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("key", sorted(FORWARD_NOT_COMPILED))
def test_forward_mode_listed_as_not_compiled_is_refused_with_the_reason(key):
    fn, makers = SPECS[key][0]
    args = _args(key, 0, makers)
    tangents = tuple(np.ones_like(a) for a in args)
    srctrans.jvp(fn, args, tangents)  # runs uncompiled
    with pytest.raises(srctrans.CompileError, match="jvp is not compiled yet"):
        srctrans.jvp(srctrans.jit(fn), args, tangents)
