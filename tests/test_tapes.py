"""Tapes in adjoint files: preallocated for range loops, lists elsewhere; and which values are
saved only for their shape (:mod:`srctrans.analysis.shapes`)."""

from __future__ import annotations

import libcst as cst
import numpy as np
import pytest

import srctrans
from srctrans.analysis.shapes import same_shapes


def _numeric_grad(f, args, i, eps=1e-6):
    args = [np.array(a, dtype=float) for a in args]
    x = args[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[i][idx] += eps
        down[i][idx] -= eps
        g[idx] = (f(*up) - f(*down)) / (2 * eps)
    return g


def euler(k, y0):
    y = y0
    for i in range(200):
        y = y + 0.01 * (-k * y + np.sin(0.01 * i))
    return np.sum(y * y)


def while_loop(x):
    y = x
    while np.sum(y) < 10.0:
        y = y * 1.5 + 0.1
    return np.sum(y)


def nested(A):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            total = total + np.sin(A[i, j]) * total + A[i, j]
    return total


def no_trips(x, n):
    y = x
    for _ in range(n):
        y = np.tanh(y) * x
    return np.sum(y)


def branch_in_loop(x):
    y = x
    for i in range(6):
        if i % 2 == 0:
            y = np.sin(y) * x
        else:
            y = y * y
    return np.sum(y)


def test_range_loop_saves_into_one_preallocated_tape():
    g = srctrans.grad(euler, argnums=(0, 1))
    g(0.5, 1.0)
    text = srctrans.source(g)
    assert text.count("rt.tape(") == 1  # y alone: k * y and the rest have the result's shape
    assert "y_tape = rt.tape(y, trips)" in text
    assert ".append(" not in text and ".pop()" not in text
    assert "trips = len(range(200))" in text
    assert "for trip in range(trips - 1, -1, -1):" in text


@pytest.mark.parametrize(
    "k, y0",
    [
        (0.5, 1.0),
        (np.array([0.5, 0.7, 1.1]), 1.0),  # y becomes an array in the first trip
        (0.5, np.array([[1.0], [2.0]])),
        (np.array([0.5, 0.7]), np.array([[1.0], [2.0]])),  # broadcast to (2, 2)
    ],
)
def test_euler_gradient_with_broadcasting(k, y0):
    gk, gy = srctrans.grad(euler, argnums=(0, 1))(k, y0)
    np.testing.assert_allclose(gk, _numeric_grad(euler, [k, y0], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, _numeric_grad(euler, [k, y0], 1), rtol=1e-6, atol=1e-8)
    assert np.shape(gk) == np.shape(k) and np.shape(gy) == np.shape(y0)


def reductions_and_broadcasting(x, w):
    s = np.sum(x)  # a number: w's adjoint needs no unbroadcast in s * w
    col = np.sum(x, axis=0)  # not a number: (3,) against w's (2, 3) in col * w
    keep = np.mean(x, keepdims=True)  # not a number either: (1, 1)
    return np.sum(s * w + col * w + keep * w) + np.linalg.norm(w) * s


@pytest.mark.parametrize("compiled", [False, True])
def test_full_reductions_against_broadcasting(compiled):
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((2, 3))
    grad = srctrans.grad(reductions_and_broadcasting, argnums=(0, 1))
    if compiled:
        grad = srctrans.jit(grad)
    gx, gw = grad(x, w)
    np.testing.assert_allclose(gx, _numeric_grad(reductions_and_broadcasting, [x, w], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, _numeric_grad(reductions_and_broadcasting, [x, w], 1), rtol=1e-6, atol=1e-8)
    text = srctrans.source(grad)
    assert "w_bar = w_bar + t1_bar * s\n" in text  # s * w: s is a number, w has the result's shape
    assert "rt.unbroadcast(t2_bar * col, w)" in text and "rt.unbroadcast(t4_bar * keep, w)" in text


@pytest.mark.parametrize("k, y0", [(0.5, 1.0), (np.array([0.5, 0.7]), np.array([1.0, 2.0]))])
def test_compiled_preallocated_tape_agrees(k, y0):
    python = srctrans.grad(euler, argnums=(0, 1))(k, y0)
    compiled = srctrans.jit(srctrans.grad(euler, argnums=(0, 1)))(k, y0)
    for a, b in zip(python, compiled):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_while_loop_keeps_a_growable_tape():
    g = srctrans.grad(while_loop)
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(g(x), _numeric_grad(while_loop, [x], 0), rtol=1e-6)
    text = srctrans.source(g)
    assert "rt.tape(" not in text and ".append(" in text


def test_nested_loops_inner_tapes_are_lists():
    g = srctrans.grad(nested)
    A = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    np.testing.assert_allclose(g(A), _numeric_grad(nested, [A], 0), rtol=1e-6)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(nested))(A), g(A), rtol=1e-12)
    assert "rt.tape(" not in srctrans.source(g)  # every save is inside the inner loop


@pytest.mark.parametrize("compiled", [False, True])
def test_a_range_loop_that_runs_no_trips(compiled):
    g = srctrans.grad(no_trips)
    if compiled:
        g = srctrans.jit(g)
    x = np.array([0.3, -0.2])
    assert "rt.tape(" in srctrans.source(g)
    np.testing.assert_allclose(g(x, 0), np.ones(2))  # nothing saved, nothing read
    np.testing.assert_allclose(g(x, 3), _numeric_grad(lambda v: no_trips(v, 3), [x], 0), rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
def test_values_saved_in_a_branch_inside_a_range_loop(compiled):
    g = srctrans.grad(branch_in_loop)
    if compiled:
        g = srctrans.jit(g)
    x = np.array([0.3, 0.9])
    np.testing.assert_allclose(g(x), _numeric_grad(branch_in_loop, [x], 0), rtol=1e-6, atol=1e-9)
    text = srctrans.source(g)
    assert "rt.tape(" in text and ".append(" in text  # the test on every trip; y in one branch


def test_second_order_through_a_range_loop_uses_lists():
    hess = srctrans.grad(srctrans.grad(no_trips))
    x = 0.4
    eps = 1e-5
    first = srctrans.grad(no_trips)
    expected = (first(x + eps, 4) - first(x - eps, 4)) / (2 * eps)
    np.testing.assert_allclose(hess(x, 4), expected, rtol=1e-6)


def test_the_tape_helper_compiled_equals_python():
    import numba

    import numba_backend  # noqa: F401 - registers the overloads
    from srctrans import runtime as rt

    @numba.njit
    def fill(v, n):
        tape = rt.tape(v, n)
        for i in range(n):
            tape[i] = v * (i + 1)
        return tape

    np.testing.assert_array_equal(fill(2.5, 4), np.array(rt.tape(2.5, 4)) * np.arange(1, 5))
    assert fill(2.5, 4).dtype == np.float64 and fill(3, 2).dtype == np.int64
    arrays = fill(np.ones(2), 3)
    assert [a.tolist() for a in arrays] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


# --- the shape analysis ---------------------------------------------------------------------

def _kind_of(value):
    """Operators and ``sin`` are elementwise, ``total`` gives a number, any other call (``sum``) is opaque."""
    if isinstance(value, cst.BinaryOperation):
        return "elementwise", {"x": value.left, "y": value.right}
    if isinstance(value, cst.UnaryOperation):
        return "elementwise", {"x": value.expression}
    if isinstance(value, cst.Call):
        name = value.func.value
        kind = {"sin": "elementwise", "total": "number"}.get(name, "other")
        return kind, {"x": value.args[0].value}
    return None


def _analyse(src: str):
    body = list(cst.parse_module(src).body)
    found = same_shapes(body, _kind_of, lambda loop: True)
    statements = {}

    def walk(stmts):
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    if id(small) in found:
                        statements[cst.Module([s]).code.strip()] = found[id(small)]
            else:
                walk(s.body.body)

    walk(body)
    return statements


def test_shape_analysis_on_straight_line_code():
    got = _analyse("t1 = a * b\nt2 = sin(a)\nt3 = t1 + t2\nt4 = 2.0 * t3\nt5 = sum(t4)\nt6 = t5 * a\n")
    assert "t1 = a * b" not in got  # a and b may broadcast each other: both keep unbroadcast
    assert got["t3 = t1 + t2"] == {"x": None, "y": "a"}  # t1 has the result's shape; t2 has a's
    assert got["t4 = 2.0 * t3"] == {"y": None}  # a number broadcasts nothing
    assert "t6 = t5 * a" not in got  # t5 is opaque (a reduction): both keep unbroadcast


def test_shape_analysis_full_reductions_are_numbers():
    got = _analyse("t1 = total(a)\nt2 = t1 * a\nt3 = t1 + t1\nt4 = b + t1\n")
    assert got["t2 = t1 * a"] == {"y": None}  # a has the result's shape; t1 (a number) keeps unbroadcast
    assert got["t3 = t1 + t1"] == {"x": None, "y": None}  # numbers all round
    assert got["t4 = b + t1"] == {"x": None}


def test_shape_analysis_loops_and_branches():
    src = (
        "y = y0\n"
        "for i in range(n):\n"
        "    t = k * y\n"
        "    y = y + t\n"
        "    u = y + i\n"
        "if c:\n"
        "    y = y * k\n"
        "z = y + k\n"
    )
    got = _analyse(src)
    assert got["y = y + t"] == {"y": None}  # t = k * y: the result's shape; y (carried) may broadcast
    assert got["u = y + i"] == {"x": None}  # the loop variable is a number
    assert "y = y * k" not in got  # y (after the loop) and k may broadcast each other
    assert "z = y + k" not in got  # after the branch, y is whatever it became: general


def diagonals(ab):
    """A loop whose saved values change shape from trip to trip (diagonals of decreasing length)."""
    a = np.zeros((4, 4))
    for k in range(1, 3):
        a = a + np.diag(np.sin(ab[k, : 4 - k]), -k)
    return np.sum(a * a)


def test_second_order_through_a_loop_of_values_of_changing_shapes():
    """The adjoint file's backward loop pops each trip's values; its own adjoint (reverse over
    reverse) restarts a popped value's adjoint at zeros of that trip's shape, not the last one's
    (a ValueError, shapes (2,) and (3,), before)."""
    ab = np.random.default_rng(3).standard_normal((3, 4))
    srctrans.check_grads(diagonals, (ab,), order=2, modes=("rev",))
    hessian = srctrans.jacrev(srctrans.grad(diagonals))(ab)
    want = np.zeros((3, 4, 3, 4))  # sum over the band of sin(ab[k, j])**2: its second derivative is 2 cos(2 ab)
    for k in (1, 2):
        for j in range(4 - k):
            want[k, j, k, j] = 2.0 * np.cos(2.0 * ab[k, j])
    np.testing.assert_allclose(hessian, want, rtol=1e-10, atol=1e-12)


def _gmm_loops():
    """``examples/gmm_gradient.py``'s GMM objective written with loops: it builds its factors
    ``Ls`` in place (``pos = d``, ``pos += 1``: an int counter, once refused as an array
    shared with ``d``), then a loop over points and components only reads them."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "gmm_gradient.py"
    spec = importlib.util.spec_from_file_location("gmm_gradient", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gmm_objective_loops


def rewritten_after_the_loop(icf, x):
    """As above, but the factors are written again after the loop that reads them: that loop's
    reads must be saved as they were, not read from the final array."""
    d = x.shape[0]
    Ls = np.zeros((icf.shape[0], d, d))
    for k in range(icf.shape[0]):
        Ls[k, 1, 0] = icf[k, d]
        Ls[k, 2, 0] = icf[k, d + 1]
        Ls[k, 2, 1] = icf[k, d + 2]
    total = 0.0
    for k in range(icf.shape[0]):
        z = Ls[k] @ x
        total = total + np.dot(z, z) * icf[k, 0]
    Ls[0] = Ls[0] * 3.0
    return total + np.sum(Ls * Ls)


@pytest.mark.parametrize("compiled", [False, True])
def test_an_array_built_in_place_then_only_read(compiled):
    gmm = _gmm_loops()
    rng = np.random.default_rng(7)
    d, k, n = 3, 4, 5
    args = [rng.standard_normal(k), rng.standard_normal((k, d)), 0.3 * rng.standard_normal((k, d * (d + 1) // 2))]
    args += [rng.standard_normal((n, d)), 1.2, 0.7]
    g = srctrans.grad(gmm, argnums=(0, 1, 2))
    got = (srctrans.jit(g) if compiled else g)(*args)
    for i in range(3):
        np.testing.assert_allclose(got[i], _numeric_grad(gmm, args, i), rtol=1e-6, atol=1e-7)
    text = srctrans.source(g)
    # nothing writes Ls after the loop that builds it: read, never taped nor copied
    assert "Ls_tape" not in text and "snapshot" not in text
    assert "rt.getitem_grad_add(Ls_loop_bar," in text  # the rows' adjoints add into one array
    # reads of arrays never written again are read again on the way back, not taped
    assert "means[k" in text.split("# --- backward ---")[1] and ".append(t" in text


@pytest.mark.parametrize("compiled", [False, True])
def test_an_array_written_again_after_the_loop_that_reads_it(compiled):
    fn = rewritten_after_the_loop
    rng = np.random.default_rng(7)
    icf, x = rng.standard_normal((4, 6)), rng.standard_normal(3)
    g = srctrans.grad(fn, argnums=(0, 1))
    got = (srctrans.jit(g) if compiled else g)(icf, x)
    np.testing.assert_allclose(got[0], _numeric_grad(fn, [icf, x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[1], _numeric_grad(fn, [icf, x], 1), rtol=1e-6, atol=1e-8)
    text = srctrans.source(g)
    assert "Ls_tape" in text or "snapshot" in text  # Ls[0] = ... after the reads: each read is saved
