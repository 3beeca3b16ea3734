"""Every derivative rule in forward mode, checked against central differences.

The same spec table as reverse mode (``tests/rules/specs.py``). What
``check_grads(order=2, modes=("fwd", "rev"))`` checks, less what ``tests/rules`` already
does (the VJP and reverse over reverse): the tangent file (JVP), the tangent file's own
tangent file (forward over forward), its adjoint (reverse over forward) and the tangent
file of the adjoint file (forward over reverse: the rules of the runtime helpers). A
planted wrong tangent rule must be caught.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.nesting import tangent_function, vjp_function
from srctrans.rules import derivatives
from srctrans.rules.derivatives import DERIVATIVES, elementwise, vjp

from ..rules.specs import FIRST_ORDER_SPECS, SPECS
from ..rules.test_derivatives import FIRST_ORDER_ONLY, NOT_NUMERIC, _args

# no tangent rule yet: forward mode refuses them with NoDerivativeError (checked below)
NO_TANGENT_RULE: set[str] = set()  # every differentiable rule has a tangent rule

CASES = [
    (key, i, fn, makers)
    for key, entries in SPECS.items()
    if key not in NOT_NUMERIC and key not in NO_TANGENT_RULE
    for i, (fn, makers) in enumerate(entries)
]


# the tangent file calls a helper without a rule of its own: first order only
TANGENT_FIRST_ORDER_ONLY: dict[str, str] = {"numpy.linalg.multi_dot": "rt.multi_dot_jvp", "numpy.linalg.eigh": "rt.eigh_jvp", "numpy.linalg.svd": "rt.svd_jvp", "numpy.linalg.qr": "rt.qr_jvp", "numpy.linalg.lstsq": "rt.lstsq_jvp_a", "numpy.linalg.eig": "rt.eig_jvp", "scipy.linalg.lu": "rt.lu_jvp", "scipy.integrate.odeint": "rt.odeint_jvp"}


@pytest.mark.parametrize("key,i,fn,makers", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rule_in_forward_mode(key, i, fn, makers):
    args = _args(key, i, makers)
    if key in TANGENT_FIRST_ORDER_ONLY or (key in FIRST_ORDER_ONLY and key.startswith("srctrans.runtime.")) or (key, i) in FIRST_ORDER_SPECS:
        srctrans.check_grads(fn, args, order=1, modes=("fwd",))  # a helper's second order: a third derivative
    elif key in FIRST_ORDER_ONLY:  # its adjoint calls a helper without a rule: forward over forward only
        srctrans.check_grads(fn, args, order=2, modes=("fwd",))
    else:  # check_grads(order=2, modes=("fwd", "rev")) less reverse over reverse, which tests/rules checks
        srctrans.check_grads(fn, args, order=2, modes=("fwd",))  # JVP, and JVP of the tangent file
        srctrans.check_grads(tangent_function(fn, len(args)), (*args, *args), order=1, modes=("rev",))
        srctrans.check_grads(vjp_function(fn, len(args)), (*args, fn(*args)), order=1, modes=("fwd",))


@pytest.mark.parametrize("key", sorted(TANGENT_FIRST_ORDER_ONLY))
def test_forward_over_forward_without_a_rule_is_refused_not_wrong(key):
    fn, makers = SPECS[key][0]
    with pytest.raises(srctrans.NoDerivativeError, match=TANGENT_FIRST_ORDER_ONLY[key].replace("rt.", "srctrans.runtime.")):
        srctrans.check_grads(fn, _args(key, 0, makers), order=2, modes=("fwd",))


def test_every_differentiable_rule_has_a_tangent_rule_or_is_listed():
    missing = {k for k, r in DERIVATIVES.items() if r.kind == "vjp" and r.jvp is None}
    assert missing == NO_TANGENT_RULE


@pytest.fixture
def fresh_tangent_files(monkeypatch):
    """``jvp`` keeps each function's tangent file for the process: plant rules in front of new ones."""
    from srctrans import tangents

    monkeypatch.setattr(tangents, "_TANGENT_FILES", {})
    monkeypatch.setattr(tangents, "_VISIBLE", {})


def test_a_planted_wrong_partial_is_caught(monkeypatch, fresh_tangent_files):
    fn, makers = SPECS["numpy.sin"][0]
    args = tuple(make(np.random.default_rng(0)) for make in makers)
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.sin", elementwise("-np.cos({x})"))
    with pytest.raises(AssertionError, match="forward mode"):
        srctrans.check_grads(fn, args, order=1, modes=("fwd",))


def test_a_planted_wrong_tangent_template_is_caught(monkeypatch, fresh_tangent_files):
    fn, makers = SPECS["numpy.linalg.inv"][0]
    args = _args("numpy.linalg.inv", 0, makers)
    rule = DERIVATIVES["numpy.linalg.inv"]
    wrong = vjp("x", jvp=dict(x="{ans} @ {t} @ {ans}"), x=rule.templates["x"])  # sign flipped
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.linalg.inv", wrong)
    with pytest.raises(AssertionError, match="forward mode"):
        srctrans.check_grads(fn, args, order=1, modes=("fwd",))
    srctrans.check_grads(fn, args, order=1, modes=("rev",))  # reverse mode reads its own template
