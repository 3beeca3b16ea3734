"""Peer coverage (issue 20): every NumPy and SciPy function whose gradient autograd's or JAX's
tests check (``peers.PEERS``) has a rule, and its cases (``peers.cases``) pass:

- central differences, forward and reverse mode, in float64;
- float32: the adjoint and tangent files keep float32 and agree with float64 (``check_float32``);
- compiled (slow): the JVP of ``srctrans.jit`` of each peer function's case equals the plain one
  (the compiled VJP of every rule is tests/numba_backend/test_compile_status.py's, which also
  keeps ``numba_backend.coverage`` honest). One function per peer function sums ``sin`` of its
  output (groups of several functions compiled together cost more than each alone: Numba's
  compile time grows faster than the size of a function). A function listed in
  ``numba_backend.coverage.NOT_COMPILED`` or ``PARTLY`` may raise ``CompileError`` instead;
  any other must compile.

``GAPS``: the peer functions without a rule yet, and why.
"""

from __future__ import annotations

import importlib
import sys
import zlib

import numpy as np
import pytest

import srctrans
from numba_backend.coverage import FORWARD_NOT_COMPILED, LIBRARY_NOT_COMPILED, NOT_COMPILED, PARTLY
from srctrans import library
from srctrans.rules import object_named
from srctrans.rules.derivatives import DERIVATIVES

from .peers import PEERS, REFUSED, cases
from .specs import SPECS
from .test_derivatives import check_float32

GAPS: dict[str, str] = {}
# what srctrans differentiates through its source in srctrans.library (scipy.stats' densities)
LIBRARY = library.covered()


def _rule_key(key: str) -> str | None:
    """The table entry that differentiates what ``key`` names (np.mod: numpy.remainder's), or None."""
    from srctrans.rules.lookup import rule_keys_by_id

    if key in DERIVATIVES:
        return key
    obj = object_named(key)
    return None if obj is None else rule_keys_by_id().get(id(obj))


COVERED = [k for k in PEERS if k not in GAPS]


def test_the_peers_are_counted():
    autograd = {k for k, who in PEERS.items() if "autograd" in who}
    jax = {k for k, who in PEERS.items() if "jax" in who}
    assert autograd | jax == set(PEERS) and len(autograd) > 100 and len(jax) > 60


def test_every_peer_function_has_a_rule():
    """And every gap is one: a key that gains a rule leaves GAPS (its cases are then checked)."""
    assert set(GAPS) <= set(PEERS), "GAPS names a function the peers do not test"
    assert [k for k in COVERED if _rule_key(k) is None and k not in LIBRARY] == [], "peer functions without a rule"
    assert [k for k in GAPS if _rule_key(k) is not None or k in LIBRARY] == [], "GAPS names functions that have a rule: check them"
    assert set(LIBRARY) <= set(PEERS), "srctrans.library writes a function no peer tests: give it cases here"


def _args(key: str, i: int, makers) -> tuple:
    rng = np.random.default_rng(zlib.crc32(f"peer-{key}-{i}".encode()))
    return tuple(make(rng) for make in makers)


def _cases(key: str) -> list[tuple]:
    return cases(key, _rule_key(key))


@pytest.mark.parametrize("key", COVERED)
def test_peer_function_matches_central_differences(key):
    """Forward and reverse mode, in float64, on every case (stacks where the function takes them)."""
    found = _cases(key)
    assert found, f"{key}: no case"
    for i, (fn, makers) in enumerate(found):
        srctrans.check_grads(fn, _args(key, i, makers), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("key", COVERED)
def test_peer_function_in_float32(key):
    for i, (fn, makers) in enumerate(_cases(key)):
        args = _args(key, i, makers)
        if any(isinstance(a, np.ndarray) for a in args) and key != "ndarray.astype":
            check_float32(fn, args)


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_what_srctrans_refuses_is_refused_not_wrong(key):
    fn, makers, why = REFUSED[key]
    with pytest.raises(NotImplementedError, match=why):
        srctrans.check_grads(fn, _args(key, 0, makers), order=1, modes=("rev",))


# --- compiled -------------------------------------------------------------------------------------

GROUP_SIZE = 1


def _jit_case(key: str):
    """The first case of ``key`` (then of the specs of its rule) with one array (or number) for
    output, and its arguments."""
    for i, (fn, makers) in enumerate(_cases(key) + SPECS.get(_rule_key(key), [])):
        args = _args(key, i, makers)
        if isinstance(fn(*args), (np.ndarray, float)):
            return fn, args
    raise AssertionError(f"{key}: no case returns one array")


def _group_module(tmp_path_factory, name: str, keys: list[str]):
    """A module with ``group(*args)``: the sum of ``np.sum(np.sin(f(...)))`` over the cases of ``keys``."""
    members = [_jit_case(k) for k in keys]
    params, terms, args = [], [], []
    for j, (_, a) in enumerate(members):
        names = [f"a{len(params) + m}" for m in range(len(a))]
        params += names
        args += a
        terms.append(f"np.sum(np.sin(F{j}({', '.join(names)})))")
    folder = tmp_path_factory.mktemp("peer_groups")
    (folder / f"{name}.py").write_text(
        "import numpy as np\n\n" + "\n".join(f"F{j} = None" for j in range(len(members)))
        + f"\n\n\ndef group({', '.join(params)}):\n    return " + " + ".join(terms) + "\n"
    )
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
    for j, (fn, _) in enumerate(members):
        setattr(module, f"F{j}", fn)
    return module.group, tuple(args)


# compiled, but to other numbers than NumPy's, rightly
COMPILED_OTHERWISE = {
    "numpy.partition": "Numba's np.partition arranges the elements around the k-th otherwise than NumPy's: "
    "tests/rules/test_array_functions_compiled.py checks the compiled gradient against the compiled function",
}
COMPILED = [k for k in COVERED if k not in COMPILED_OTHERWISE]
GROUPS = [COMPILED[i:i + GROUP_SIZE] for i in range(0, len(COMPILED), GROUP_SIZE)]


@pytest.mark.slow
@pytest.mark.parametrize("keys", GROUPS, ids=[" ".join(g) for g in GROUPS])
def test_compiled_jvp_matches_the_plain_one(tmp_path_factory, keys):
    name = "peer_group_" + "_".join(k.split(".")[-1] for k in keys[:2]) + f"_{zlib.crc32(' '.join(keys).encode())}"
    group, args = _group_module(tmp_path_factory, name, keys)
    rng = np.random.default_rng(1)
    tangents = tuple(rng.standard_normal(np.shape(a)) if isinstance(a, np.ndarray) else float(rng.standard_normal()) for a in args)
    _, t_want = srctrans.jvp(group, args, tangents)
    try:
        _, t_got = srctrans.jvp(srctrans.jit(group), args, tangents)
    except srctrans.CompileError:
        listed = [k for k in keys if _rule_key(k) in {**NOT_COMPILED, **PARTLY, **FORWARD_NOT_COMPILED} or k in LIBRARY_NOT_COMPILED]
        assert listed, f"{keys}: Numba refused, and numba_backend.coverage does not say so"
        return
    assert not set(keys) & set(LIBRARY_NOT_COMPILED), f"{keys} compiled: take it out of LIBRARY_NOT_COMPILED"
    np.testing.assert_allclose(t_got, t_want, rtol=1e-10, atol=1e-12, err_msg=f"JVP of {keys}")
