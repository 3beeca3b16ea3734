"""A loop's reads ``x[i]`` add their adjoints into rows of one array, in place.

Functionally, each read's adjoint is a whole array (``x_bar = x_bar + rt.getitem_grad(g,
x, i)``), so a loop over the rows of ``x`` cost O(rows) per trip: quadratic in the loop's
length. Adjoint files that no other transformation reads now add into ``x_loop_bar`` in place
(``rt.getitem_grad_add``) and add it to ``x_bar`` once after the loop. Every function here is
checked against central differences, uncompiled and compiled; the files other
transformations read (``hessian``, ``vmap(grad)``) keep the functional form and are checked too.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans


def _numeric_grad(f, args, i, eps=1e-6):
    x = np.array(args[i], dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(g.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (f(*args[:i], up, *args[i + 1 :]) - f(*args[:i], down, *args[i + 1 :])) / (2 * eps)
    return g


def _numeric_jacobian(grad_fn, xs, h, eps=1e-6):
    """Central differences of ``grad_fn(xs, h)`` along each entry of xs: shape ``xs.shape * 2``."""
    numeric = np.zeros(xs.shape + xs.shape)
    for idx in np.ndindex(xs.shape):
        e = np.zeros_like(xs)
        e[idx] = eps
        numeric[(...,) + idx] = (grad_fn(xs + e, h) - grad_fn(xs - e, h)) / (2 * eps)
    return numeric


def rnn(xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h * xs[t] + 1.0)
    return np.sum(h)


def rows_and_whole(xs, h):
    for t in range(xs.shape[0]):
        h = np.sin(h + xs[t]) + 0.1 * np.sum(xs)  # a whole read of xs in the loop as well
    return np.sum(h * h)


def slices(xs, h):
    for t in range(xs.shape[0] - 1):
        h = h + np.sum(xs[t : t + 2] ** 2, axis=0) * h
    return np.sum(h)


def elements(A, s):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s = s * 0.5 + np.sin(A[i, j]) * s + A[i, j]
    return s


def index_arrays(xs, h, idx):
    for t in range(3):
        h = h + np.sum(xs[idx] ** 2, axis=0) * (t + 1)  # idx repeats rows: their adjoints add up
    return np.sum(h)


def masks(xs, h, mask):
    for _ in range(2):
        h = h * np.sum(xs[mask]) + h
    return np.sum(h)


def while_rows(xs, h):
    t = 0
    while t < xs.shape[0]:
        h = np.cos(h) * xs[t]
        t += 1
    return np.sum(h)


def local_rows(xs, h):
    ys = xs * 2.0  # a name assigned once, before the loop
    for t in range(ys.shape[0]):
        h = np.tanh(h + ys[t])
    return np.sum(h)


def written_rows(xs, h):
    ys = xs * 1.0
    for t in range(ys.shape[0]):
        h = np.tanh(h + ys[t])
        ys[t] = h  # written in place: its adjoint must not be gathered apart
    return np.sum(h) + np.sum(ys)


def reassigned_after(xs, h):
    ys = xs
    for t in range(ys.shape[0]):
        h = h * ys[t] + 1.0
    ys = xs[:1] * 3.0
    return np.sum(h) + np.sum(ys)


def invariant_inside(xs, k, h):
    for _ in range(2):
        ys = xs * k  # assigned in the outer loop, the same value every trip
        for t in range(ys.shape[0]):
            h = np.tanh(h + ys[t])
    return np.sum(h)


def two_loops(xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h + xs[t])
    for t in range(xs.shape[0]):
        h = h * xs[xs.shape[0] - 1 - t]
    return np.sum(h)


RNG = np.random.default_rng(3)
XS, H = 0.5 * RNG.standard_normal((5, 3)), 0.3 * RNG.standard_normal(3)
CASES = [
    (rnn, (XS, H), True),
    (rows_and_whole, (XS, H), True),
    (slices, (XS, H), True),
    (elements, (XS, 0.2), True),
    (index_arrays, (XS, H, np.array([0, 2, 2, 4])), True),
    (masks, (XS, H, np.array([True, False, True, True, False])), True),
    (while_rows, (XS, H), True),
    (local_rows, (XS, H), True),
    (written_rows, (XS, H), False),
    (reassigned_after, (XS, H), False),  # ys is rebound after the loop: not gathered apart
    (two_loops, (XS, H), True),
]
INVARIANT = (invariant_inside, (XS, 1.5, H))


@pytest.mark.parametrize("fn, args, gathers", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_match_central_differences(fn, args, gathers):
    numeric = [_numeric_grad(fn, args, i) for i in (0, 1)]
    plain = srctrans.grad(fn, argnums=(0, 1))(*args)
    compiled = srctrans.jit(srctrans.grad(fn, argnums=(0, 1)))(*args)
    for got in (plain, compiled):
        for g, n in zip(got, numeric):
            np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(compiled[0], plain[0], rtol=1e-12, atol=1e-14)
    text = srctrans.source(srctrans.grad(fn, argnums=(0, 1)))
    assert ("rt.getitem_grad_add(" in text) == gathers


@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_a_name_assigned_in_an_outer_loop_adds_into_rows_in_the_inner_one(argnum):
    fn, args = INVARIANT
    numeric = _numeric_grad(fn, args, argnum)
    for g in (srctrans.grad(fn, argnums=argnum), srctrans.jit(srctrans.grad(fn, argnums=argnum))):
        np.testing.assert_allclose(g(*args), numeric, rtol=1e-6, atol=1e-8)


def test_the_file_adds_rows_in_place_once_per_loop():
    text = srctrans.source(srctrans.grad(rnn, argnums=(0, 1)))
    lines = [line.strip() for line in text.splitlines()]
    assert "xs_loop_bar = rt.zeros_like(xs)" in lines  # made before the backward loop
    assert "xs_bar = xs_bar + xs_loop_bar" in lines  # added once, after it
    assert lines.index("xs_loop_bar = rt.zeros_like(xs)") < lines.index("xs_bar = xs_bar + xs_loop_bar")
    assert not any("rt.getitem_grad(" in line for line in lines)


def test_nested_loops_share_the_outer_loops_rows():
    text = srctrans.source(srctrans.grad(elements, argnums=(0, 1)))
    assert text.count("A_loop_bar = rt.zeros_like(A)") == 1


def test_files_other_transformations_read_stay_functional():
    """hessian (forward over the adjoint file) and vmap(grad) read the grads-only file."""
    xs, h = XS, H
    hess = srctrans.hessian(rnn, argnums=0)(xs, h)
    grad0 = srctrans.grad(rnn, argnums=0)
    np.testing.assert_allclose(hess, _numeric_jacobian(grad0, xs, h), rtol=1e-5, atol=1e-7)
    batch = 0.5 * RNG.standard_normal((4, 5, 3))
    per_example = srctrans.vmap(srctrans.grad(rnn), in_axes=(0, None))(batch, h)
    stacked = np.stack([grad0(b, h) for b in batch])
    np.testing.assert_allclose(per_example, stacked, rtol=1e-12, atol=1e-14)


def test_an_empty_loop_adds_nothing():
    xs = np.zeros((0, 3))
    for g in (srctrans.grad(rnn, argnums=(0, 1)), srctrans.jit(srctrans.grad(rnn, argnums=(0, 1)))):
        gx, gh = g(xs, H)
        assert gx.shape == (0, 3)
        np.testing.assert_array_equal(gh, np.ones(3))  # h passes through untouched


def _carried(x, h):
    for _ in range(3):
        h = np.tanh(h * x)
    return np.sum(h)


_grad_rnn = srctrans.grad(rnn)
_grad_carried = srctrans.grad(_carried)


def _sum_grad_rnn(xs, h):
    return np.sum(_grad_rnn(xs, h))


def _sum_grad_carried(x, h):
    return np.sum(_grad_carried(x, h))


@pytest.mark.parametrize("fn, x", [(_sum_grad_rnn, XS), (_sum_grad_carried, XS[0])], ids=["rows", "carried"])
def test_reverse_over_reverse_through_a_carried_argument(fn, x):
    """``h`` is not differentiated but carries differentiated values from the first trip on:
    its adjoint must start at zero before the loop (the second-order adjoint lost it)."""
    numeric = _numeric_grad(fn, (x, H), 0)
    np.testing.assert_allclose(srctrans.grad(fn)(x, H), numeric, rtol=1e-6, atol=1e-8)


def test_jacobians_of_a_gradient_through_a_carried_argument():
    grad0 = srctrans.grad(rnn)
    numeric = _numeric_jacobian(grad0, XS, H)
    for jac in (srctrans.jacrev, srctrans.jacfwd):
        np.testing.assert_allclose(jac(grad0)(XS, H), numeric, rtol=1e-5, atol=1e-7)


# --- every contribution of a loop to a value it does not change adds in place ----------------


def matvec_rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h * h)


def matmat_loop(W, X, a):
    H = X
    for _ in range(3):
        H = np.sin(np.dot(W, H) * a) + X
    return np.sum(H)


def scalar_and_vector(a, v, h):
    for t in range(4):
        h = np.cos(h * a + v * t)  # a a number, v a vector: both add into loop sinks
    return np.sum(h)


MATRIX_CASES = [
    (matvec_rnn, (0.4 * RNG.standard_normal((3, 3)), XS, H)),
    (matmat_loop, (0.4 * RNG.standard_normal((3, 3)), RNG.standard_normal((3, 2)), 0.7)),
    (scalar_and_vector, (0.8, RNG.standard_normal(3), H)),
]


@pytest.mark.parametrize("fn, args", MATRIX_CASES, ids=[c[0].__name__ for c in MATRIX_CASES])
def test_products_and_other_reads_add_into_the_loops_sink(fn, args):
    numeric = [_numeric_grad(fn, args, i) for i in (0, 1, 2)]
    plain = srctrans.grad(fn, argnums=(0, 1, 2))(*args)
    compiled = srctrans.jit(srctrans.grad(fn, argnums=(0, 1, 2)))(*args)
    for got in (plain, compiled):
        for g, n in zip(got, numeric):
            np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)
    for g, c in zip(plain, compiled):
        np.testing.assert_allclose(c, g, rtol=1e-12, atol=1e-14)
    text = srctrans.source(srctrans.grad(fn, argnums=(0, 1, 2)))
    first = fn.__code__.co_varnames[0]
    assert f"{first}_loop_bar = rt.zeros_like({first})" in text and f"{first}_bar = {first}_bar + {first}_loop_bar" in text
    if fn is not scalar_and_vector:
        assert f"{first}_loop_bar = rt.dot_grad_x_add({first}_loop_bar, " in text


@pytest.mark.parametrize("shapes", [((4, 3), (3,)), ((4, 3), (3, 2)), ((3,), (3, 2)), ((), (3,))])
def test_dot_grad_x_add_is_dot_grad_x_added(shapes):
    """The runtime helper, uncompiled and compiled, against out + dot_grad_x (in place for arrays)."""
    import numba

    from srctrans import runtime as rt

    x = RNG.standard_normal(shapes[0]) if shapes[0] else 0.5
    y = RNG.standard_normal(shapes[1])
    g = RNG.standard_normal(np.shape(np.dot(x, y)))
    out = RNG.standard_normal(np.shape(x)) if np.ndim(x) else 0.25
    want = out + rt.dot_grad_x(g, x, y)
    compiled = numba.njit(lambda o, g, x, y: rt.dot_grad_x_add(o, g, x, y))
    for fn in (rt.dot_grad_x_add, compiled):
        start = np.copy(out) if np.ndim(x) else out
        got = fn(start, g, x, y)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
        if np.ndim(x):
            assert got is start or np.shares_memory(got, start)  # added in place


@pytest.mark.parametrize("index", ["x[None, :]", "x[:, None]", "x[0, None]", "x[None, 1:, None]"])
def test_new_axes_in_an_index_compile(tmp_path, index):
    """``x[None, :]`` under jit(grad): getitem_grad takes None (a new axis) in a basic index."""
    import importlib.util

    (tmp_path / "newaxis_model.py").write_text(
        f"import numpy as np\n\n\ndef f(x, y):\n    return np.sum(np.sin({index}) * y)\n"
    )
    spec = importlib.util.spec_from_file_location("newaxis_model", tmp_path / "newaxis_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    y = 1.0 + np.arange(3.0)
    plain = srctrans.grad(module.f)(x, y)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(module.f))(x, y), plain, rtol=1e-13)
    np.testing.assert_allclose(plain, _numeric_grad(module.f, (x, y), 0), rtol=1e-6, atol=1e-8)


# --- the rule table's accumulate templates: each one checked in a loop, and a wrong one caught --

def rows_read(x, s):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + np.sum(x[i] * s)
    return total


ACCUMULATING = {  # rule key -> a loop that reads a value it never changes through that rule
    "numpy.matmul": (matvec_rnn, (0.4 * RNG.standard_normal((3, 3)), XS, H)),
    "numpy.dot": (matmat_loop, (0.4 * RNG.standard_normal((3, 3)), RNG.standard_normal((3, 2)), 0.7)),
    "getitem": (rows_read, (RNG.standard_normal((4, 3)), RNG.standard_normal(3))),
}


def test_every_accumulate_template_has_a_loop_case():
    from srctrans.rules.derivatives import DERIVATIVES

    assert {key for key, rule in DERIVATIVES.items() if rule.accumulate} == set(ACCUMULATING)


@pytest.mark.parametrize("key", sorted(ACCUMULATING))
def test_accumulate_templates_match_central_differences(key):
    from srctrans.rules.derivatives import DERIVATIVES

    fn, args = ACCUMULATING[key]
    g = srctrans.grad(fn, argnums=0)
    template = DERIVATIVES[key].accumulate["x"].split(" = ")[-1].split("(")[0]
    assert template in srctrans.source(g)  # the loop really took the template
    for got in (g(*args), srctrans.jit(g)(*args)):
        np.testing.assert_allclose(got, _numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-8)


def test_a_planted_wrong_accumulate_template_is_caught(monkeypatch):
    import dataclasses

    from srctrans.rules import derivatives

    rule = derivatives.DERIVATIVES["getitem"]
    wrong = dataclasses.replace(rule, accumulate={"x": "rt.getitem_grad_add({sink}, 2.0 * {g}, {index})"})
    monkeypatch.setitem(derivatives.DERIVATIVES, "getitem", wrong)
    fn, args = ACCUMULATING["getitem"]
    got = srctrans.grad(fn, argnums=0)(*args)
    assert not np.allclose(got, _numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-8)
