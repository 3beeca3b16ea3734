"""Every derivative rule, checked against central differences along random directions.

One spec per table entry (``specs.py``); a test asserts the table and the specs
agree, and a planted wrong rule must be caught.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import srctrans
from srctrans.rules import derivatives
from srctrans.rules.derivatives import DERIVATIVES, elementwise

from .specs import SPECS

# Rules whose derivative deliberately differs from central differences, tested elsewhere.
# Rules checked elsewhere: a collective's derivative needs a batch of examples (pmap or vmap).
NOT_NUMERIC = {
    "srctrans.stop_gradient": "tests/test_grad_api.py::test_custom_vjp_and_stop_gradient",
    "srctrans.parallel.collectives.psum": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
    "srctrans.parallel.collectives.pmean": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
    "srctrans.parallel.collectives.all_gather": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
    "srctrans.parallel.collectives.axis_index": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
}

CASES = [
    (key, i, fn, makers)
    for key, entries in SPECS.items()
    if key not in NOT_NUMERIC
    for i, (fn, makers) in enumerate(entries)
]


def test_every_rule_has_a_spec():
    assert set(DERIVATIVES) - set(SPECS) - set(NOT_NUMERIC) == set(), "rules without a spec"
    assert set(SPECS) - set(DERIVATIVES) == set(), "specs without a rule"


# Rules whose adjoint calls a helper without a rule of its own yet: their second order (the
# adjoint file differentiated again) is refused with NoDerivativeError, checked below.
# For the srctrans.runtime helpers, order 2 is the third derivative of the user's function.
FIRST_ORDER_ONLY = {
    "srctrans.runtime.prod_grad_grad": "rt.prod_grad3",
}


def _args(key, i, makers):
    rng = np.random.default_rng(zlib.crc32(f"{key}-{i}".encode()))  # the same point in every process
    return tuple(make(rng) for make in makers)


@pytest.mark.parametrize("key,i,fn,makers", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rule_matches_central_differences(key, i, fn, makers):
    """First and second order: the VJP, then the VJP of the generated adjoint file."""
    order = 1 if key in FIRST_ORDER_ONLY else 2
    srctrans.check_grads(fn, _args(key, i, makers), order=order, modes=("rev",))


@pytest.mark.parametrize("key", sorted(FIRST_ORDER_ONLY))
def test_second_order_without_a_rule_is_refused_not_wrong(key):
    fn, makers = SPECS[key][0]
    with pytest.raises(srctrans.NoDerivativeError, match=FIRST_ORDER_ONLY[key].replace("rt.", "srctrans.runtime.")):
        srctrans.check_grads(fn, _args(key, 0, makers), order=2, modes=("rev",))


def test_a_planted_wrong_rule_is_caught(monkeypatch):
    fn, makers = SPECS["numpy.sin"][0]
    args = tuple(make(np.random.default_rng(0)) for make in makers)
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.sin", elementwise("-np.cos({x})"))
    with pytest.raises(AssertionError, match="reverse mode"):
        srctrans.check_grads(fn, args, order=1, modes=("rev",))
