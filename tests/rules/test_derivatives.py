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
NOT_NUMERIC = {"srctrans.stop_gradient": "tests/test_grad_api.py::test_custom_vjp_and_stop_gradient"}

CASES = [
    (key, i, fn, makers)
    for key, entries in SPECS.items()
    if key not in NOT_NUMERIC
    for i, (fn, makers) in enumerate(entries)
]


def test_every_rule_has_a_spec():
    assert set(DERIVATIVES) - set(SPECS) - set(NOT_NUMERIC) == set(), "rules without a spec"
    assert set(SPECS) - set(DERIVATIVES) == set(), "specs without a rule"


@pytest.mark.parametrize("key,i,fn,makers", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rule_matches_central_differences(key, i, fn, makers):
    rng = np.random.default_rng(zlib.crc32(f"{key}-{i}".encode()))  # the same point in every process
    args = tuple(make(rng) for make in makers)
    srctrans.check_grads(fn, args, order=1, modes=("rev",))


def test_a_planted_wrong_rule_is_caught(monkeypatch):
    fn, makers = SPECS["numpy.sin"][0]
    args = tuple(make(np.random.default_rng(0)) for make in makers)
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.sin", elementwise("-np.cos({x})"))
    with pytest.raises(AssertionError, match="reverse mode"):
        srctrans.check_grads(fn, args, order=1, modes=("rev",))
