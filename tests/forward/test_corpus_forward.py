"""The function corpus in forward mode: the forward Jacobian equals the reverse one, function by function.

``jacfwd`` pushes every basis tangent at once through ``vmap`` of the generated tangent
file; ``jacrev`` pulls every basis cotangent at once through ``vmap`` of the vjp file
(``tests/forward/test_jacobian_batched.py`` checks both against the loop over basis
vectors they replaced). They share no
code beyond the rule table's elementwise partials, so agreement on every corpus function
(branches, loops, early returns, in-place writes, callees, tuples) tests forward mode
against reverse mode, which ``tests/functions`` checks against central differences.
Forward mode is also checked on its own against central differences, at order 1.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.tree import tree_leaves

from ..functions.corpus import CORPUS

IDS = [f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CORPUS)]


def _args(i, makers):
    rng = np.random.default_rng(1000 + i)
    return tuple(make(rng) for make in makers)


def _float_args(args):
    return tuple(k for k, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


@pytest.mark.parametrize("i", list(range(len(CORPUS))), ids=IDS)
def test_forward_jacobian_equals_reverse_jacobian(i):
    fn, makers = CORPUS[i]
    args = _args(i, makers)
    nums = _float_args(args)
    fwd = srctrans.jacfwd(fn, argnums=nums)(*args)
    rev = srctrans.jacrev(fn, argnums=nums)(*args)
    out = fn(*args)
    leaves_f, leaves_r = tree_leaves(fwd), tree_leaves(rev)
    assert len(leaves_f) == len(leaves_r) == len(nums) * len(tree_leaves(out))
    for f, r in zip(leaves_f, leaves_r, strict=True):
        assert f.shape == r.shape
        np.testing.assert_allclose(f, r, rtol=1e-9, atol=1e-10)
    # JAX's shapes: out.shape + in.shape
    if not isinstance(out, (tuple, list, dict)):
        for k, block in zip(nums, fwd if isinstance(fwd, tuple) else (fwd,)):
            assert np.shape(block) == np.shape(out) + np.shape(args[k])


@pytest.mark.parametrize("i", list(range(len(CORPUS))), ids=IDS)
def test_forward_mode_matches_central_differences(i):
    fn, makers = CORPUS[i]
    args = _args(i, makers)
    nums = _float_args(args)
    if len(nums) != len(args):
        pytest.skip("integer arguments (check_grads wants floats): covered by the Jacobian comparison")
    srctrans.check_grads(fn, args, order=1, modes=("fwd",))


# check_grads(order=2, modes=("fwd", "rev")) on every corpus function takes minutes (it passed on
# all 121 when this was written; reverse over reverse of in-place writes is refused, see
# tests/functions): here a representative few, both modes, order 2
BOTH_MODES = ["euler_ode", "gmm_like", "mlp", "while_break_continue", "rnn_step", "newton_sqrt", "unpack_results"]
FORWARD_ONLY = ["trajectory_buffer", "slice_updates"]  # in-place writes: forward over forward


@pytest.mark.parametrize("name", BOTH_MODES + FORWARD_ONLY)
def test_order_two_in_both_modes(name):
    i = next(k for k, (fn, _) in enumerate(CORPUS) if fn.__name__ == name)
    fn, makers = CORPUS[i]
    modes = ("fwd",) if name in FORWARD_ONLY else ("fwd", "rev")
    srctrans.check_grads(fn, _args(i, makers), order=2, modes=modes)
