"""The composition matrix (``tests/composition_matrix.py``) in the suite: a stable sample of it.

The whole matrix -- 8 base functions x every composition of depth <= 3 that JAX allows (2362)
-- runs as a script (``python -m tests.composition_matrix [--compiled] [--backend ...]``) in
several minutes. Here every composition of depth 1, one in 8 of depth 2 and one in 30 of
depth 3 (the same ones each run) are checked as Python, grouped by their outer layer, and a
few compiled against their uncompiled run. Each must pass: match its layer's meaning (central
differences, stacking of per-example results, the uncompiled file), not be refused.
"""

from __future__ import annotations

import os

import pytest

import srctrans

from . import composition_matrix as cm
from .conftest import module_from_text


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    before = os.environ.get("SRCTRANS_CPU_DEVICES")
    os.environ["SRCTRANS_CPU_DEVICES"] = str(cm.PMAP_SIZE)
    try:
        with module_from_text(tmp_path_factory.mktemp("matrix"), "matrix_suite_user", cm.CODE) as mod:
            yield mod
    finally:
        if before is None:
            os.environ.pop("SRCTRANS_CPU_DEVICES", None)
        else:
            os.environ["SRCTRANS_CPU_DEVICES"] = before


EVERY = {1: 1, 2: 8, 3: 30}  # one composition in N of each depth


def _sample(module):
    by_depth: dict[int, list] = {1: [], 2: [], 3: []}
    for base, comp in cm.all_cases(module):
        by_depth[len(comp)].append((base, comp))
    return [case for depth, cases in by_depth.items() for case in cases[:: EVERY[depth]]]


@pytest.fixture(scope="module")
def sample(module):
    return _sample(module)


def test_the_matrix_has_every_composition_jax_allows(module):
    """Its size: a change to what counts as valid (and so to what is checked) shows here."""
    cases = list(cm.all_cases(module))
    assert len(cases) == 2362
    counts = {d: sum(len(c) == d for _, c in cases) for d in (1, 2, 3)}
    assert counts == {1: 76, 2: 432, 3: 1854}
    assert {c[0] for _, c in cases} == set(cm.LAYERS)


@pytest.mark.parametrize("outer", cm.LAYERS)
def test_sampled_compositions_as_python(module, sample, as_python, outer):
    matrix = cm.Matrix(module)
    outcomes = [cm.run_case(matrix, base, comp) for base, comp in sample if comp[0] == outer]
    assert outcomes, f"no sampled composition has {outer} outermost"
    failed = [f"{o.status}: {o.name}: {o.detail}" for o in outcomes if o.status != "pass"]
    assert not failed, "\n".join(failed)


COMPILED = [
    ("mlp", ("jit", "vmap", "grad")),
    ("euler", ("hessian",)),
    ("euler", ("vmap", "jacrev")),
    ("system", ("jacrev", "jacfwd")),
    ("system", ("jvp", "vmap")),
    ("scalar_loop", ("jit", "grad", "grad")),
    ("updated", ("jit", "value_and_grad")),
]


def _written(name, comp):
    for layer in reversed(comp):
        name = f"{layer}({name})"
    return name


@pytest.mark.slow
@pytest.mark.parametrize("name,comp", COMPILED, ids=[_written(n, c) for n, c in COMPILED])
def test_compiled_compositions_agree_with_their_uncompiled_run(module, name, comp):
    base = cm.BASES[name]
    assert cm.valid(base, comp, getattr(module, name))
    srctrans.config.update("disable_jit", True)
    try:
        uncompiled = cm.Matrix(module).function(base, comp)(*cm._args(base, comp))
    finally:
        srctrans.config.update("disable_jit", False)
    outcome = cm.run_case(cm.Matrix(module), base, comp, uncompiled)
    assert outcome.status == "pass", f"{outcome.name}: {outcome.detail}"
