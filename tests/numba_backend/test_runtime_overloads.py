"""numba_backend.runtime_overloads: each reverse-mode helper of srctrans.runtime, compiled with
numba.njit, against its plain-NumPy version.

Compiles dominate the run time, so each compiled wrapper is built once at module level and
takes everything that varies (shapes, axes, keepdims, ddof, indices) as runtime arguments;
cases are chosen so that many share one type specialization (all six reduction adjoints
compile together, for instance).

The adjoint contract checked throughout: for an array ``x`` the helpers that return "the
adjoint of x" give a C-contiguous array of x's shape with x's dtype when x is inexact, else
float64; for a scalar ``x`` a Python float. The plain-NumPy helpers must agree.
"""

from __future__ import annotations

import os

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

import numba_backend.runtime_overloads  # noqa: F401  (registers the overloads)
import srctrans.runtime as rt

F64, F32, I64 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)


def jit(f):
    return numba.njit(error_model="numpy")(f)  # as srctrans.jit compiles generated files


@jit
def j_grad_seed(out):
    return rt.grad_seed(out)


@jit
def j_zeros_like(x):
    return rt.zeros_like(x)


@jit
def j_unbroadcast(g, x):
    return rt.unbroadcast(g, x)


@jit
def j_reductions(g, x, amax, aprod, astd, axis, ddof, keepdims):
    # every reduction adjoint in one compiled function: one compile per type combination
    return (
        rt.sum_grad(g, x, axis, keepdims),
        rt.mean_grad(g, x, axis, keepdims),
        rt.extremum_grad(g, x, amax, axis, keepdims),
        rt.prod_grad(g, x, aprod, axis, keepdims),
        rt.var_grad(g, x, axis, ddof, keepdims),
        rt.std_grad(g, x, astd, axis, ddof, keepdims),
    )


@jit
def j_reductions_literal(g, x, amax):
    # the way generated code calls them: literal axis, ddof and keepdims
    return (
        rt.sum_grad(g, x, -1, False),
        rt.mean_grad(g, x, 1, False),
        rt.extremum_grad(g, x, amax, -1, False),
        rt.var_grad(g, x, 1, 1, False),
    )


@jit
def j_dot_grads(g, x, y):
    return rt.dot_grad_x(g, x, y), rt.dot_grad_y(g, x, y)


@jit
def j_transpose_grad(g, axes):
    return rt.transpose_grad(g, axes)


@jit
def j_transpose_grad_none(g):
    return rt.transpose_grad(g, None)


@jit
def j_getitem_grad(g, x, index):
    return rt.getitem_grad(g, x, index)


@jit
def j_getitem_grad_rows_col(g, x, n):
    # x[1:n, 0], the index built inside compiled code as generated code does
    return rt.getitem_grad(g, x, (slice(1, n, None), 0))


@jit
def j_masks(x, y):
    return rt.ge_mask(x, y), rt.le_mask(x, y)


@jit
def j_inside_mask(x, lo, hi):
    return rt.inside_mask(x, lo, hi)


@jit
def j_xlogy(a, b):
    return rt.xlogy(a, b)


@jit
def j_sinc_grad(x):
    return rt.sinc_grad(x)


@jit
def j_digamma(x):
    return rt.digamma(x)


@jit
def j_accumulate(g, x):
    b = rt.zeros_like(x)
    for _ in range(3):
        b = b + rt.unbroadcast(g, x)
    return b


@jit
def j_accumulate_mixed(g, x, rows, axis):
    # the shapes of generated adjoint code: helper results of several kinds added into one x_bar
    b = rt.zeros_like(x)
    for _ in range(2):
        b = b + rt.unbroadcast(g, x)
        b = b + rt.sum_grad(rows, x, axis, False)
        b = rt.mean_grad(2.0, x, None, False) + b
        b = b + rt.getitem_grad(x[0], x, 0)
        b = b + rt.dot_grad_x(rows, x, x[0])
    return b


# --- helpers ----------------------------------------------------------------------------


def make(shape, dtype=F64, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def grad_dtype(x) -> np.dtype:
    return x.dtype if x.dtype.kind in "fc" else F64


def tol(*args):
    """rtol for results computed from ``args``: looser when any of them is float32."""
    return 2e-5 if any(np.asarray(a).dtype == F32 for a in args) else None


def close(got, want, rtol=None):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if rtol is None:
        rtol = 2e-5 if F32 in (got.dtype, want.dtype) else 1e-10
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


def check_adjoint(got, want, x, rtol=None):
    """``got`` (compiled) equals ``want`` (Python), and both follow the adjoint contract for x."""
    if isinstance(x, np.ndarray):
        for r in (got, want):
            assert isinstance(r, np.ndarray), type(r)
            assert r.shape == x.shape, (r.shape, x.shape)
            assert r.dtype == grad_dtype(x), (r.dtype, x.dtype)
            assert r.flags.c_contiguous
    else:
        assert type(got) is float, type(got)
        assert type(want) is float, type(want)
    close(got, want, rtol)


# --- grad_seed, zeros_like -----------------------------------------------------------------


def test_grad_seed():
    for out in (3.5, 2, np.float32(1.5), np.array(2.0), np.array(3, np.int64)):
        got, want = j_grad_seed(out), rt.grad_seed(out)
        assert got == want == 1.0
    assert np.asarray(j_grad_seed(np.array(1.0, F32))).dtype.kind == "f"
    with pytest.raises(TypeError, match="scalar output"):
        j_grad_seed(np.ones(3))
    with pytest.raises(TypeError, match="scalar output"):
        rt.grad_seed(np.ones(3))


def test_zeros_like():
    xs = [make((5,)), make((3, 4)), make((2, 3, 4), F32), make((3, 4), I64), make((4,), np.bool_), np.zeros((0, 3))]
    for x in xs:
        check_adjoint(j_zeros_like(x), rt.zeros_like(x), x)
    for x in (2.5, 3, True):
        check_adjoint(j_zeros_like(x), rt.zeros_like(x), x)


# --- unbroadcast ------------------------------------------------------------------------------


UNBROADCAST = [
    # (g shape, x shape): g is the adjoint of a result that x was broadcast into
    ((3, 4), (3, 4)),
    ((3, 4), (1, 4)),
    ((3, 4), (3, 1)),
    ((3, 4), (1, 1)),
    ((2, 1), (2, 3)),  # g with a size-1 axis: broadcast up
    ((0, 4), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((2, 3, 4), (1, 4)),
    ((2, 3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 4), (1,)),
    ((4,), (3, 4)),  # g with fewer axes
    ((), (1, 3)),  # a 0-d g
]


def test_unbroadcast_shapes():
    for gshape, xshape in UNBROADCAST:
        g, x = make(gshape, seed=1), make(xshape)
        check_adjoint(j_unbroadcast(g, x), rt.unbroadcast(g, x), x)


def test_unbroadcast_dtypes_layouts_scalars():
    cases = [
        (make((3, 4)), make((3, 4), F32)),  # float64 adjoint of a float32 operand
        (make((3, 4)), make((3, 1), I64)),  # integer operand: float64 adjoint
        (make((4, 3)).T, make((3, 4))),  # non-contiguous g, same shape
        (make((4, 3)).T, make((3, 1))),
        (2.5, make((3, 1))),  # scalar g
        (make((3, 4)), 1.5),  # scalar x: the sum of g
        (2.5, 1.5),
    ]
    for g, x in cases:
        check_adjoint(j_unbroadcast(g, x), rt.unbroadcast(g, x), x, rtol=tol(g, x))


def test_unbroadcast_copies_unless_g_already_is_the_adjoint():
    g = make((3, 4))
    out = j_unbroadcast(g[:, ::2], make((3, 2)))
    assert out.flags.c_contiguous and out.flags.writeable
    np.testing.assert_array_equal(out, g[:, ::2])


def test_unbroadcast_incompatible_shapes():
    with pytest.raises(ValueError):
        j_unbroadcast(make((3, 4)), make((3, 5)))


# --- reductions ---------------------------------------------------------------------------------


def ties(shape, dtype=F64, seed=0):
    """Small integers: maxima and minima are attained more than once."""
    return np.random.default_rng(seed).integers(-2, 3, shape).astype(dtype)


def with_zeros():
    x = ties((4, 5)) + 3.0
    x[0, 1] = 0.0  # one zero in row 0
    x[2, 1] = x[2, 3] = 0.0  # two in row 2; three in column 1
    return x


# Each group shares one type combination of j_reductions (one compile): (x, axis, keepdims) ...
REDUCTIONS = {
    "2d-int": [(x, a, False) for x in (ties((3, 4)), with_zeros(), ties((1, 4))) for a in range(-2, 2)],
    "2d-int-keepdims": [(ties((3, 4)), a, True) for a in range(-2, 2)],
    "2d-none": [(ties((3, 4)), None, False), (with_zeros(), None, False)],
    "3d-int": [(x, a, False) for x in (ties((2, 3, 4)), ties((2, 1, 3))) for a in range(-3, 3)],
    "3d-tuple": [(make((2, 3, 4)), axis, False) for axis in ((0, 2), (-1, 0), (2, 1))],
    "float32": [(ties((3, 4), F32), a, False) for a in (0, -1)],
}


def reduction_args(x, axis, keepdims):
    """The adjoint g and the results max, prod, std, all of g's type (one compile for all)."""
    ans = [f(x, axis=axis, keepdims=keepdims) for f in (np.max, np.prod, np.std)]
    g = make(np.shape(ans[0]), seed=2)
    if g.ndim == 0:
        return float(g), *(float(a) for a in ans)
    return g, *(np.asarray(a, F64) for a in ans)


def python_reductions(g, x, amax, aprod, astd, axis, ddof, keepdims):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (
            rt.sum_grad(g, x, axis, keepdims),
            rt.mean_grad(g, x, axis, keepdims),
            rt.extremum_grad(g, x, amax, axis, keepdims),
            rt.prod_grad(g, x, aprod, axis, keepdims),
            rt.var_grad(g, x, axis, ddof, keepdims),
            rt.std_grad(g, x, astd, axis, ddof, keepdims),
        )


NAMES = ("sum_grad", "mean_grad", "extremum_grad", "prod_grad", "var_grad", "std_grad")


@pytest.mark.parametrize("group", REDUCTIONS)
def test_reduction_grads(group):
    for x, axis, keepdims in REDUCTIONS[group]:
        for ddof in (0, 1):
            g, *ans = reduction_args(x, axis, keepdims)
            got = j_reductions(g, x, *ans, axis, ddof, keepdims)
            want = python_reductions(g, x, *ans, axis, ddof, keepdims)
            for name, r, w in zip(NAMES, got, want):
                try:
                    check_adjoint(r, w, x, rtol=1e-4 if x.dtype == F32 else None)
                except AssertionError as e:
                    raise AssertionError(f"{name} axis={axis} keepdims={keepdims} ddof={ddof}: {e}") from None
            assert np.all(np.isfinite(want[3])), "prod_grad with zeros"


def test_reduction_grads_scalar_operand():
    got = j_reductions(2.0, 1.5, 1.5, 1.5, 0.0, None, 0, False)
    want = python_reductions(2.0, 1.5, 1.5, 1.5, 0.0, None, 0, False)
    for r, w in zip(got, want):
        check_adjoint(r, w, 1.5)


def test_reduction_grads_literal_arguments():
    x = ties((3, 4))
    g, amax = make((3,)), np.max(x, axis=-1)
    got = j_reductions_literal(g, x, amax)
    want = (
        rt.sum_grad(g, x, -1, False),
        rt.mean_grad(g, x, 1, False),
        rt.extremum_grad(g, x, amax, -1, False),
        rt.var_grad(g, x, 1, 1, False),
    )
    for r, w in zip(got, want):
        check_adjoint(r, w, x)


def test_prod_grad_of_a_zero_is_the_product_of_the_others():
    x = np.array([[2.0, 0.0, 3.0]])
    np.testing.assert_allclose(rt.prod_grad(1.0, x, 0.0, None, False), [[0.0, 6.0, 0.0]])
    np.testing.assert_allclose(j_reductions(1.0, x, 0.0, 0.0, 0.0, None, 0, False)[3], [[0.0, 6.0, 0.0]])


def test_reduction_grad_wrong_adjoint_size():
    x = make((3, 4))
    with pytest.raises(ValueError):
        j_reductions(make((5,)), x, make((5,)), make((5,)), make((5,)), 0, 0, False)
    with pytest.raises(ValueError, match="axis"):
        j_reductions(make((3,)), x, make((3,)), make((3,)), make((3,)), 2, 0, False)


# --- dot, transpose, getitem ---------------------------------------------------------------------


DOT_SHAPES = [
    ((), (3,)),
    ((2, 3), ()),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
]


def operand(shape, dtype=F64, seed=0):
    return float(make((), seed=seed)) if shape == () else make(shape, dtype, seed)


def test_dot_grads():
    for xs, ys in DOT_SHAPES:
        x, y = operand(xs), operand(ys, seed=1)
        g = operand(np.shape(np.dot(x, y)), seed=2)
        gx, gy = j_dot_grads(g, x, y)
        check_adjoint(gx, rt.dot_grad_x(g, x, y), x)
        check_adjoint(gy, rt.dot_grad_y(g, x, y), y)


def test_dot_grads_of_a_stack_of_rows_mixed_dtypes():
    x, y = make((2, 3, 4), F32), make((4, 5), seed=1)  # x @ y: every row of x against y
    g = make((2, 3, 5), seed=2)
    gx, gy = j_dot_grads(g, x, y)
    check_adjoint(gx, rt.dot_grad_x(g, x, y), x, rtol=tol(x))
    check_adjoint(gy, rt.dot_grad_y(g, x, y), y, rtol=tol(x))
    close(gy, np.einsum("bij,bik->jk", x, g), rtol=tol(x))
    # and the Python helper against a vector y
    y1, g1 = make((4,), seed=1), make((2, 3), seed=2)
    close(rt.dot_grad_y(g1, x, y1), np.einsum("bij,bi->j", x, g1), rtol=tol(x))


def test_dot_grads_ambiguous_stack():
    # a matrix times a stack: g's shape (2, 2, 4) fits both x @ y and np.dot(x, y), as without jit
    with pytest.raises(NotImplementedError, match="cannot tell"):
        j_dot_grads(make((2, 2, 4)), make((2, 3)), make((2, 3, 4)))
    with pytest.raises(NotImplementedError, match="cannot tell"):
        rt.dot_grad_x(make((2, 2, 4)), make((2, 3)), make((2, 3, 4)))


def test_transpose_grad():
    x = make((2, 3, 4))
    for axes in ((1, 0, 2), (2, 0, 1), (-1, 0, 1), (0, -1, -2)):
        g = make(np.transpose(x, axes).shape, seed=1)
        got, want = j_transpose_grad(g, axes), rt.transpose_grad(g, axes)
        assert got.shape == x.shape and got.flags.c_contiguous
        close(got, want)
    close(j_transpose_grad_none(x), rt.transpose_grad(x, None))
    # negative axes (fixed in the Python helper): the adjoint of x.transpose(-1, 0) is g.T
    g2 = make((4, 3))
    close(rt.transpose_grad(g2, (-1, 0)), g2.T)
    with pytest.raises(ValueError):
        j_transpose_grad(x, (0, 0, 1))


def basic_g(x, index):
    g = np.asarray(x[index]) * 2.0 + 1.0
    return float(g) if g.ndim == 0 else g


def test_getitem_grad_basic_indices():
    x = make((5, 3))
    indices = [
        2,
        -1,
        slice(1, 4, None),
        slice(None, None, -2),
        (1, 2),
        (-1, -3),
        (slice(1, 4, None), 0),
        (Ellipsis, 1),
    ]
    for index in indices:
        g = basic_g(x, index)
        check_adjoint(j_getitem_grad(g, x, index), rt.getitem_grad(g, x, index), x)
    g = make((3,), seed=1)
    check_adjoint(j_getitem_grad_rows_col(g, x, 4), rt.getitem_grad(g, x, (slice(1, 4, None), 0)), x)


def test_getitem_grad_array_indices():
    x, x1 = make((5, 3)), make((6,))
    repeated = np.array([0, 2, 2, -1, 0, 4])  # repeated indices add up
    cases = [
        (make((6,)), x1, repeated),
        (make((6, 3)), x, repeated),
        (make((2, 2)), x1, np.array([[0, 1], [1, -6]])),
        (make((int((x > 0).sum()),)), x, x > 0),  # a boolean mask of x's shape
        (make((3, 3)), x, np.array([True, False, True, True, False])),  # a mask of rows
    ]
    for g, xx, index in cases:
        check_adjoint(j_getitem_grad(g, xx, index), rt.getitem_grad(g, xx, index), xx)
    with pytest.raises(IndexError):
        j_getitem_grad(make((1,)), x1, np.array([6]))


def test_getitem_grad_unsupported_index():
    with pytest.raises(TypingError, match="not supported"):
        j_getitem_grad(make((2,)), make((5, 3)), (slice(0, 2), np.array([1, 2])))


# --- elementwise helpers --------------------------------------------------------------------------


def test_masks():
    a, b = make((3, 4)), make((4,), seed=1)
    b[1] = a[0, 1]  # a tie
    for x, y in ((a, b), (a, 0.0), (1.0, 2.0), (2.0, 2.0), (3, 2.0)):
        ge, le = j_masks(x, y)
        close(ge, rt.ge_mask(x, y))
        close(le, rt.le_mask(x, y))
    cases = [
        (a, -0.5, 0.5),
        (a, None, 0.5),
        (a, b - 1, b + 1),
        (0.3, -0.5, 0.5),
        (0.7, -0.5, 0.5),
        (0.7, None, None),
    ]
    for x, lo, hi in cases:
        close(j_inside_mask(x, lo, hi), rt.inside_mask(x, lo, hi))


def test_xlogy():
    a = np.array([0.0, 1.5, 2.0, 0.0, 3.0])
    b = np.array([0.0, 2.0, 0.5, 4.0, 1.0])
    for x, y in ((a, b), (0.0, b), (2.0, b), (0.0, 0.0), (2.0, 3.0), (a.astype(F32), b.astype(F32))):
        with np.errstate(divide="ignore"):
            want = rt.xlogy(x, y)
        got = j_xlogy(x, y)
        close(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype


def test_sinc_grad():
    x = np.array([0.0, 0.5, -1.0, 2.25, 1e-3, -3.7])
    close(j_sinc_grad(x), rt.sinc_grad(x))
    close(j_sinc_grad(x.reshape(2, 3).T), rt.sinc_grad(x.reshape(2, 3).T))
    for v in (0.0, 0.3, -2.0):
        close(j_sinc_grad(v), rt.sinc_grad(v))


def test_digamma():
    pytest.importorskip("scipy")
    special = [1e-8, 1.4616321449683622, 1e5, 0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan]
    x = np.concatenate([np.linspace(-7.9, 30.0, 157), special])
    with np.errstate(all="ignore"):
        want = rt.digamma(x)
    got = j_digamma(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13, equal_nan=True)  # infinities of the same sign
    assert j_digamma(x.astype(F32)).dtype == rt.digamma(x.astype(F32)).dtype
    close(j_digamma(2.5), rt.digamma(2.5))
    close(j_digamma(3), rt.digamma(3))


# --- type stability: the shapes of generated adjoint code -------------------------------------------


def test_accumulation_keeps_the_adjoint_type():
    x32, x64 = make((3, 4), F32), make((3, 4))
    cases = [
        (make((2, 3, 4), F32), x32),
        (make((3, 4)), x32),  # a float64 g does not turn a float32 adjoint into float64
        (1.5, x32),
        (make((3, 1)), x64),
        (make((3, 4)), make((1, 4))),
    ]
    for g, x in cases:
        b = j_accumulate(g, x)
        assert b.dtype == x.dtype and b.flags.c_contiguous
        close(b, 3 * rt.unbroadcast(g, x), rtol=tol(x))
    for g, x in ((2.5, 1.5), (np.float32(2.5), np.float32(1.5)), (make((3,)), 1.5)):
        b = j_accumulate(g, x)
        assert type(b) is float
        close(b, 3 * rt.unbroadcast(g, x))


def test_accumulation_of_several_helpers():
    x, g, rows = make((3, 4), F32), make((3, 4), F32, seed=1), make((3,), seed=2)
    b = j_accumulate_mixed(g, x, rows, 1)
    assert b.dtype == F32 and b.flags.c_contiguous
    want = rt.zeros_like(x)
    for _ in range(2):
        want = want + rt.unbroadcast(g, x)
        want = want + rt.sum_grad(rows, x, 1, False)
        want = rt.mean_grad(2.0, x, None, False) + want
        want = want + rt.getitem_grad(x[0], x, 0)
        want = want + rt.dot_grad_x(rows, x, x[0])
    assert want.dtype == F32
    close(b, want, rtol=1e-4)


def test_python_helpers_follow_the_adjoint_contract():
    """The plain-NumPy helpers give the types the compiled ones do (no compiling here)."""
    for x in (make((3, 4), F32), make((3, 4), I64), make((3, 1))):
        results = [
            rt.unbroadcast(make((3, 4)), x),
            rt.sum_grad(1.0, x, None, False),
            rt.mean_grad(np.ones(x.shape[1]), x, 0, False),
            rt.var_grad(1.0, x),
            rt.std_grad(1.0, x, 2.0),
            rt.prod_grad(1.0, x, 2.0),
            rt.extremum_grad(1.0, x, np.max(x)),
            rt.getitem_grad(1.0, x, (0, 0)),
            rt.dot_grad_x(np.ones(3), x, np.ones(x.shape[1])),
        ]
        for r in results:
            assert r.dtype == grad_dtype(x) and r.shape == x.shape and r.flags.c_contiguous
    scalars = [
        rt.unbroadcast(np.float32(2.0), 1.0),
        rt.unbroadcast(np.ones(3), 1.0),
        rt.sum_grad(np.float64(2.0), 1.0),
        rt.mean_grad(2.0, 1.0),
        rt.extremum_grad(2.0, 1.0, 1.0),
        rt.prod_grad(2.0, 1.0, 1.0),
        rt.var_grad(2.0, 1.0),
        rt.dot_grad_x(np.ones(3), 2.0, np.ones(3)),
    ]
    for r in scalars:
        assert type(r) is float


def test_diag_grad_matches_python():
    import numba

    @numba.njit
    def run(g, x, k):
        return rt.diag_grad(g, x, k)

    rng = np.random.default_rng(3)
    for x, k in [(rng.standard_normal(3), 0), (rng.standard_normal(3), 1), (rng.standard_normal((3, 4)), 1), (rng.standard_normal((4, 3)), -1)]:
        g = rng.standard_normal(np.diag(x, k).shape)
        np.testing.assert_allclose(run(g, x, k), rt.diag_grad(g, x, k))


# --- rules for the helpers themselves (second order) -----------------------------------------------


@jit
def j_ones_like(x):
    return rt.ones_like(x)


@jit
def j_sum_to(h, g, axis):
    return rt.sum_to(h, g, axis, False)


@jit
def j_dot(x, y):
    return rt.dot(x, y)


@jit
def j_transpose(x, axes):
    return rt.transpose(x, axes)


@jit
def j_transpose_reversed(x):
    return rt.transpose(x, None), rt.transpose(x, ())


@jit
def j_prod_grad_grad(u, g, x, axis, keepdims):
    return rt.prod_grad_grad(u, g, x, axis, keepdims)


@jit
def j_sinc_grad2(x):
    return rt.sinc_grad2(x)


@jit
def j_trigamma(x):
    return rt.trigamma(x)


def _adjoint_typed(got, like):
    """``got`` has the adjoint type of ``like``: a float for a number, else a C array of its shape."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        assert type(got) is float, type(got)
    else:
        assert got.shape == np.shape(like) and got.flags.c_contiguous and got.dtype == grad_dtype(np.asarray(like))


def test_ones_like_and_sum_to():
    for x in (make((3, 4), F32), make((2,), I64), 2.5):
        got = j_ones_like(x)
        close(got, rt.ones_like(x))
        _adjoint_typed(got, x)
    h = make((3, 4))
    for g, axis in ((make((3,)), 1), (make((4,)), -2), (make((1, 1)), None), (make((3, 1)), 1), (1.5, None), (make((1,)), (0, 1))):
        got = j_sum_to(h, g, axis)
        close(got, rt.sum_to(h, g, axis))
        _adjoint_typed(got, g)
    h3 = make((2, 3, 4), F32)
    close(j_sum_to(h3, make((3,)), (0, 2)), rt.sum_to(h3, make((3,)), (0, 2)), rtol=1e-5)
    assert j_sum_to(2.5, 1.0, None) == 2.5


def test_dot():
    cases = [
        (make((3, 4)), make((4, 2))),
        (make((3, 4)), make((4,))),
        (make((4,)), make((4, 2))),
        (make((4,)), make((4,))),
        (make((2, 3, 4)), make((4, 2))),
        (2.0, make((3,))),
        (make((3, 4), I64), make((4,))),
    ]
    for x, y in cases:
        close(j_dot(x, y), rt.dot(x, y))
    with pytest.raises(TypingError):
        j_dot(make((4,)), make((2, 4, 3)))


def test_transpose():
    x = make((2, 3, 4))
    for axes in ((1, 2, 0), (2, 0, 1), (-1, 0, 1), (0, 1, 2)):
        got = j_transpose(x, axes)
        close(got, rt.transpose(x, axes))
        assert got.flags.c_contiguous
        close(rt.transpose_grad(got, axes), x)  # transpose and transpose_grad undo each other
    a, b = j_transpose_reversed(x)
    close(a, rt.transpose(x, None))
    close(b, rt.transpose(x, ()))
    with pytest.raises(ValueError):
        j_transpose(x, (0, 0, 1))


def _prod_hessian_vector(u, x):
    """sum over i != k of u_i * prod(x_j, j != i, k), for 1-D x, by brute force."""
    n = x.size
    return np.array([sum(u[i] * np.prod(np.delete(x, [i, k])) for i in range(n) if i != k) for k in range(n)])


def test_prod_grad_grad():
    # columns with no, one, two and three zeros
    x = np.abs(make((3, 4))) + 0.5
    x *= np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    u, g = make((3, 4), seed=1), make((4,), seed=2)
    want = np.stack([g[c] * _prod_hessian_vector(u[:, c], x[:, c]) for c in range(4)], axis=1)
    close(rt.prod_grad_grad(u, g, x, 0, False), want)
    got = j_prod_grad_grad(u, g, x, 0, False)
    close(got, want)
    _adjoint_typed(got, x)
    close(j_prod_grad_grad(u.T.copy(), g[:, None], x.T.copy(), 1, True), want.T)
    close(j_prod_grad_grad(u, 2.0, x, None, False), rt.prod_grad_grad(u, 2.0, x, None, False))
    close(j_prod_grad_grad(u, g, x, (0,), False), want)
    assert j_prod_grad_grad(1.0, 2.0, 3.0, None, False) == 0.0 == rt.prod_grad_grad(1.0, 2.0, 3.0)


def test_sinc_grad2():
    x = np.array([0.0, 1e-9, -2e-3, 3.1e-3, 0.5, -1.0, 2.25, -3.7])
    got = j_sinc_grad2(x)
    close(got, rt.sinc_grad2(x))
    close(j_sinc_grad2(x.reshape(2, 4).T), rt.sinc_grad2(x.reshape(2, 4).T))
    for v in (0.0, 0.3, -2.0):
        close(j_sinc_grad2(v), rt.sinc_grad2(v))
    # the derivative of sinc_grad, away from 0 (where sinc_grad's closed form cancels)
    y = np.array([0.4, -1.3, 2.7])
    np.testing.assert_allclose(rt.sinc_grad2(y), (rt.sinc_grad(y + 1e-6) - rt.sinc_grad(y - 1e-6)) / 2e-6, rtol=1e-7)


def test_trigamma():
    pytest.importorskip("scipy")
    special = [1e-8, 1e-300, 1e5, 1e12, 0.0, -0.0, -1.0, -3.0, -2.5, np.inf, -np.inf, np.nan]
    x = np.concatenate([np.linspace(-7.9, 30.0, 157), special])
    with np.errstate(all="ignore"):
        want = rt.trigamma(x)
    got = j_trigamma(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13, equal_nan=True)
    assert j_trigamma(x.astype(F32)).dtype == rt.trigamma(x.astype(F32)).dtype
    close(j_trigamma(2.5), rt.trigamma(2.5))
    close(j_trigamma(3), rt.trigamma(3))
    # the derivative of digamma
    y = np.array([0.3, 1.7, 12.0, -0.4])
    np.testing.assert_allclose(rt.trigamma(y), (rt.digamma(y + 1e-6) - rt.digamma(y - 1e-6)) / 2e-6, rtol=1e-7)


@jit
def j_take_sorted(u, x, axis):
    return rt.take_sorted(u, x, axis)


def test_take_sorted():
    x = make((3, 4))
    x[1, 2] = x[1, 0]  # a tie: both orders keep it stable
    u = make((3, 4), seed=1)
    for axis in (0, 1, -1, None):
        got = j_take_sorted(u, x, axis)
        close(got, rt.take_sorted(u, x, axis))
        close(rt.sort_grad(got, x, axis), u)  # sort_grad puts them back
    close(j_take_sorted(u[0], x[0], 0), rt.take_sorted(u[0], x[0], 0))


def _rule_function(key, params, values):
    """A function returning the vjp templates of rule ``key``, filled as reverse mode fills them."""
    from srctrans.rules.derivatives import DERIVATIVES

    rule = DERIVATIVES[key]
    fill = dict(values)
    fill.update(g="cot", ans="ans")
    exprs = []
    for template in rule.templates.values():
        for name, text in fill.items():
            template = template.replace("{" + name + "}", text)
        exprs.append(template)
    source = f"def f({', '.join(params)}):\n    return ({', '.join(exprs)},)\n"
    scope = {"np": np, "rt": rt}
    exec(source, scope)
    return scope["f"]


@pytest.mark.slow
def test_rule_templates_compile_and_agree():
    """The templates of the second-order rules, compiled, against the same code in plain Python."""
    import numba

    import numba_backend.overloads  # noqa: F401  (np.tile, np.inner, np.tensordot in templates)
    from srctrans.rules.derivatives import DERIVATIVES

    x, xz = make((3, 4)), np.abs(make((3, 4))) + 0.5
    xz[0, 1] = xz[1, 2] = xz[2, 2] = 0.0
    std1 = np.std(x, axis=1)
    cases = [
        # key, names bound to arguments, text of the other parameters, arguments (the incoming
        # adjoint, then the names)
        ("srctrans.runtime.unbroadcast", ["g_", "x"], {}, (make((4,)), make((3, 4)), x[0])),
        ("srctrans.runtime.sum_grad", ["g_", "x"], {"axis": "1", "keepdims": "False"}, (x, make((3,)), x)),
        ("srctrans.runtime.mean_grad", ["g_", "x"], {"axis": "None", "keepdims": "False"}, (x, 1.5, x)),
        ("srctrans.runtime.extremum_grad", ["g_", "x", "ans_"], {"axis": "1", "keepdims": "False"}, (x, make((3,)), x, np.max(x, axis=1))),
        ("srctrans.runtime.prod_grad", ["g_", "x", "ans_"], {"axis": "0", "keepdims": "False"}, (x, make((4,)), xz, np.prod(xz, axis=0))),
        ("srctrans.runtime.var_grad", ["g_", "x"], {"axis": "None", "ddof": "1", "keepdims": "False"}, (x, 0.7, x)),
        ("srctrans.runtime.std_grad", ["g_", "x", "ans_"], {"axis": "1", "ddof": "0", "keepdims": "False"}, (x, make((3,)), x, std1)),
        ("srctrans.runtime.dot_grad_x", ["g_", "x", "y"], {}, (x, make((3, 2)), x, make((4, 2)))),
        ("srctrans.runtime.dot_grad_y", ["g_", "x", "y"], {}, (make((4,)), make((3,)), x, make((4,)))),
        ("srctrans.runtime.transpose_grad", ["g_"], {"axes": "(1, 2, 0)"}, (make((4, 2, 3)), make((2, 3, 4)))),
        ("srctrans.runtime.diag_grad", ["g_", "x"], {"k": "1"}, (make((4,)), make((5, 5)), make((4,)))),
        ("srctrans.runtime.getitem_grad", ["g_", "x"], {"index": "(slice(1, None, None), 0)"}, (x, make((2,)), x)),
        ("srctrans.runtime.sum_to", ["h", "g_"], {"axis": "1", "keepdims": "False"}, (make((3,)), x, make((3,)))),
        ("srctrans.runtime.xlogy", ["a", "b"], {}, (x, xz, np.abs(x) * (xz != 0))),
        ("srctrans.runtime.sinc_grad", ["x"], {}, (x, x)),
        ("srctrans.runtime.digamma", ["x"], {}, (x, xz + 0.5)),
        # the adjoints of shape and linear-algebra functions
        ("srctrans.runtime.cumsum_grad", ["g_", "x"], {"axis": "0"}, (x, make((3, 4)), x)),
        ("srctrans.runtime.roll_grad", ["g_", "x"], {"shift": "-1", "axis": "1"}, (x, make((3, 4)), x)),
        ("srctrans.runtime.tile_grad", ["g_", "x"], {"reps": "(2, 1)"}, (x, make((6, 4)), x)),
        ("srctrans.runtime.sort_grad", ["g_", "x"], {"axis": "0"}, (x, make((3, 4)), x)),
        ("srctrans.runtime.take_sorted", ["u", "x"], {"axis": "None"}, (make((12,)), make((3, 4)), x)),
        ("srctrans.runtime.take_along_axis_grad", ["g_", "x"], {"indices": "np.array([[3, 0], [1, 1], [0, 2]])", "axis": "1"}, (x, make((3, 2)), x)),
        ("srctrans.runtime.inner_grad_x", ["g_", "x", "y"], {}, (x, make((3, 2)), x, make((2, 4)))),
        ("srctrans.runtime.tensordot_grad_y", ["g_", "x", "y"], {"axes": "1"}, (make((4, 2)), make((3, 2)), x, make((4, 2)))),
        ("srctrans.runtime.solve_grad_b", ["g_", "a", "b"], {}, (make((3,)), make((3,)), make((3, 3)) + 3.0 * np.eye(3), make((3,)))),
        ("srctrans.runtime.norm_grad", ["g_", "x", "ans_"], {"ord": "None", "axis": "1", "keepdims": "False"}, (x, make((3,)), x, np.linalg.norm(x, axis=1))),
        ("srctrans.runtime.logsumexp_grad", ["g_", "x", "ans_"], {"axis": "0", "keepdims": "False", "b": "None"}, (x, make((4,)), x, make((4,)))),
    ]
    for key, names, texts, args in cases:
        cot, *rest = args
        ans = _result_of(getattr(rt, key.rsplit(".", 1)[1]), dict(zip(names, rest)), texts)
        f = _rule_function(key, ["cot", *names, "ans"], {**{n: n for n in names}, **texts})
        want = f(cot, *rest, ans)
        got = numba.njit(error_model="numpy")(f)(cot, *rest, ans)
        for param, a, b in zip(DERIVATIVES[key].templates, got, want):
            close(a, b)
            _adjoint_typed(a, dict(zip(names, rest))[param])  # the adjoint type of its parameter


def _result_of(fn, call, texts):
    """The helper's own result (``{ans}``) for the arguments of a case."""
    import inspect

    args = []
    for p in inspect.signature(fn).parameters:
        name = {"g": "g_", "ans": "ans_"}.get(p, p)
        if name in call:
            args.append(call[name])
        elif p in texts:
            args.append(eval(texts[p]))
        else:
            break
    return fn(*args)


# --- rules for shape and linear-algebra functions ----------------------------------------------
# Shapes and argument types are those the jit(grad(f)) checks below produce, so that those
# reuse these compiles: 2-D float64 operands, int axes, C-contiguous adjoints.


@jit
def j_inner_grads(g, x, y):
    return rt.inner_grad_x(g, x, y), rt.inner_grad_y(g, x, y)


@jit
def j_tensordot_grads(g, x, y, axes):
    return rt.tensordot_grad_x(g, x, y, axes), rt.tensordot_grad_y(g, x, y, axes)


@jit
def j_einsum_grads(g, x, y):
    # literal subscripts and operand numbers, as generated code passes them
    return rt.einsum_grad(g, "ij,kj->ik", 0, x, y, None), rt.einsum_grad(g, "ij,kj->ik", 1, x, y, None)


@jit
def j_einsum_repeated(g, x, y, z):
    return rt.einsum_grad(g, "iij,j,k->ik", 0, x, y, z), rt.einsum_grad(g, "iij,j,k->ik", 2, x, y, z)


@jit
def j_along_axis(g, x, ans, axis):
    return (
        rt.cumsum_grad(g, x, axis),
        rt.cumprod_grad(g, x, ans, axis),
        rt.sort_grad(g, x, axis),
        rt.flip_grad(g, x, axis),
        rt.roll_grad(g, x, -2, axis),
    )


@jit
def j_along_flat(g, x, ans):
    # axis=None: cumsum, cumprod and sort flatten, flip and roll keep the shape
    gf = g.ravel()
    return (
        rt.cumsum_grad(gf, x, None),
        rt.cumprod_grad(gf, x, ans, None),
        rt.sort_grad(gf, x, None),
        rt.flip_grad(g, x, None),
        rt.roll_grad(g, x, 5, None),
    )


@jit
def j_norm_logsumexp(g, x, norm, lse, axis, keepdims):
    return rt.norm_grad(g, x, norm, None, axis, keepdims), rt.logsumexp_grad(g, x, lse, axis, keepdims, None)


@jit
def j_diagonal_grad(g, x, offset, axis1, axis2):
    return rt.diagonal_grad(g, x, offset, axis1, axis2)


@jit
def j_copies(g_tile, g_repeat, g_pad, x, reps, repeats, axis):
    # tile, repeat and pad: the copies of x in g summed, or the part of g over x
    return rt.tile_grad(g_tile, x, reps), rt.repeat_grad(g_repeat, x, repeats, axis), rt.pad_grad(g_pad, x, ((1, 0), (0, 2)), "constant")


@jit
def j_take_grads(g, x, indices, axis):
    return rt.take_grad(g, x, indices, axis)


@jit
def j_take_along_axis_grad(g, x, indices, axis):
    return rt.take_along_axis_grad(g, x, indices, axis)


@jit
def j_solve_grads(g, a, b, ans):
    return rt.solve_grad_a(g, a, b, ans), rt.solve_grad_b(g, a, b)


@jit
def j_cholesky_grad(g, x, ans):
    return rt.cholesky_grad(g, x, ans)


@jit
def j_sequence_grads(g_cat, g_stack, g_h, g_v, a, b):
    return (
        rt.concatenate_grad(g_cat, (a, b), 1),
        rt.stack_grad(g_stack, (a, a), -1),
        rt.hstack_grad(g_h, (a, b)),
        rt.vstack_grad(g_v, (a, a[0])),
    )


@jit
def j_sequence_grads_of_lists(g_cat, g_stack, a, b):
    return rt.concatenate_grad(g_cat, [a, b], None), rt.stack_grad(g_stack, [a, b], 0)


def check_all(got, want, xs):
    assert len(got) == len(want) == len(xs)
    for r, w, x in zip(got, want, xs):
        check_adjoint(r, w, x)


def test_inner_tensordot_einsum_grads():
    x, y = make((3, 4)), make((2, 4), seed=1)
    g = make((3, 2), seed=2)
    check_all(j_inner_grads(g, x, y), (rt.inner_grad_x(g, x, y), rt.inner_grad_y(g, x, y)), (x, y))
    check_all(j_einsum_grads(g, x, y), (rt.einsum_grad(g, "ij,kj->ik", 0, x, y), rt.einsum_grad(g, "ij,kj->ik", 1, x, y)), (x, y))
    v, w = make((4,), seed=1), make((4,), seed=2)
    check_all(j_inner_grads(1.5, v, w), (rt.inner_grad_x(1.5, v, w), rt.inner_grad_y(1.5, v, w)), (v, w))
    yt = np.ascontiguousarray(y.T)
    for axes, yy in ((1, yt), (((1,), (0,)), yt), (((0,), (1,)), make((2, 3), seed=1))):
        gg = make(np.tensordot(x, yy, axes).shape, seed=3)
        want = (rt.tensordot_grad_x(gg, x, yy, axes), rt.tensordot_grad_y(gg, x, yy, axes))
        check_all(j_tensordot_grads(gg, x, yy, axes), want, (x, yy))
    with pytest.raises(ValueError, match="tensordot"):
        j_tensordot_grads(g, x, yt, 3)
    x3, z = make((3, 3, 4)), make((2,), seed=1)
    g2 = make((3, 2), seed=2)
    want = (rt.einsum_grad(g2, "iij,j,k->ik", 0, x3, v, z), rt.einsum_grad(g2, "iij,j,k->ik", 2, x3, v, z))
    check_all(j_einsum_repeated(g2, x3, v, z), want, (x3, z))


def test_grads_along_an_axis():
    x = make((3, 5))
    x[0, 2] = x[1, 1] = x[1, 3] = 0.0  # cumprod through zeros: one and two in a row
    g = make((3, 5), seed=1)
    for axis in (0, 1, -1):
        ans = np.cumprod(x, axis)
        want = (rt.cumsum_grad(g, x, axis), rt.cumprod_grad(g, x, ans, axis), rt.sort_grad(g, x, axis), rt.flip_grad(g, x, axis), rt.roll_grad(g, x, -2, axis))
        check_all(j_along_axis(g, x, ans, axis), want, (x,) * 5)
    ans = np.cumprod(x)
    want = (rt.cumsum_grad(g.ravel(), x), rt.cumprod_grad(g.ravel(), x, ans), rt.sort_grad(g.ravel(), x, None), rt.flip_grad(g, x), rt.roll_grad(g, x, 5))
    check_all(j_along_flat(g, x, ans), want, (x,) * 5)


def test_norm_and_logsumexp_grads():
    from scipy import special

    x = make((3, 4))
    for axis, keepdims in ((None, False), (1, False), (0, True), (-1, True)):
        norm, lse = np.linalg.norm(x, axis=axis, keepdims=keepdims), special.logsumexp(x, axis=axis, keepdims=keepdims)
        g = make(np.shape(norm), seed=1)
        if np.ndim(norm) == 0:
            g, norm, lse = float(g), float(norm), float(lse)
        want = (rt.norm_grad(g, x, norm, None, axis, keepdims), rt.logsumexp_grad(g, x, lse, axis, keepdims))
        check_all(j_norm_logsumexp(g, x, norm, lse, axis, keepdims), want, (x, x))
    xz = x.copy()
    xz[1] = 0.0  # a zero row: its norm is 0, and so is the adjoint
    norm = np.linalg.norm(xz, axis=1)
    close(j_norm_logsumexp(np.ones(3), xz, norm, norm, 1, False)[0][1], np.zeros(4))
    with pytest.raises(TypingError, match="ord"):  # matrix orders of a stack: plain Python only
        numba.njit(lambda g, x, n: rt.norm_grad(g, x, n, 2, (1, 2), False))(np.ones(2), make((2, 3, 4)), np.ones(2))


@numba.njit
def j_norm_grad(g, x, ans, ord, axis, keepdims):
    return rt.norm_grad(g, x, ans, ord, axis, keepdims)


def test_norm_grad_of_other_orders():
    """Vector p-norms along an axis (ties and zeros included) and one matrix's norms, as in plain Python."""
    x = make((3, 4))
    x[0, 1], x[1, 2], x[2] = -x[0, 0], 0.0, 0.0  # a tie for inf, a zero, a zero row
    for ord in (1, 3, 0.5, -1, np.inf, -np.inf, 0, 2):
        for axis, keepdims in ((1, False), (0, True), (-1, True)):
            norm = np.linalg.norm(x, ord, axis, keepdims)
            g = make(np.shape(norm), seed=1)
            close(j_norm_grad(g, x, norm, ord, axis, keepdims), rt.norm_grad(g, x, norm, ord, axis, keepdims))
        close(j_norm_grad(1.5, x[0], np.linalg.norm(x[0], ord), ord, None, False), rt.norm_grad(1.5, x[0], np.linalg.norm(x[0], ord), ord, None, False))
    y = make((3, 4))
    y[:, 3] = -y[:, 0]  # columns 0 and 3 tie (rows of y.T)
    for ord in (2, -2, 1, -1, np.inf, -np.inf):
        for m in (y, y.T, y.astype(np.float32)):
            got, want = j_norm_grad(0.7, m, np.linalg.norm(m, ord), ord, None, False), rt.norm_grad(0.7, m, np.linalg.norm(m, ord), ord, None, False)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@jit
def j_moveaxis_grad(g, x, source, destination):
    return rt.moveaxis_grad(g, x, source, destination)


def test_moveaxis_grad():
    x = make((2, 3, 4))
    for source, destination in (((2, 0), (0, 1)), ((0, 1), (2, 0)), ((-1, 0), (0, 2))):
        g = make(np.moveaxis(x, source, destination).shape, seed=1)
        check_adjoint(j_moveaxis_grad(g, x, source, destination), rt.moveaxis_grad(g, x, source, destination), x)
    g = make((3, 2, 4), seed=1)
    check_adjoint(numba.njit(lambda g, x: rt.moveaxis_grad(g, x, 0, 1))(g, x), rt.moveaxis_grad(g, x, 0, 1), x)
    with pytest.raises(ValueError, match="repeated"):
        j_moveaxis_grad(g, x, (0, 0), (1, 2))


def test_diagonal_grad():
    x = make((2, 3, 4))
    for offset, axis1, axis2 in ((0, 0, 1), (1, 2, 0), (-1, 1, 2), (5, 1, 2)):
        g = make(np.diagonal(x, offset, axis1, axis2).shape, seed=1)
        check_adjoint(j_diagonal_grad(g, x, offset, axis1, axis2), rt.diagonal_grad(g, x, offset, axis1, axis2), x)


def test_tile_repeat_pad_grads():
    x = make((3, 4))
    repeats = np.array([1, 0, 3, 2])
    g_tile, g_repeat, g_pad = make((2, 3, 12), seed=1), make((3, 6), seed=2), make((4, 6), seed=3)
    want = (rt.tile_grad(g_tile, x, (2, 1, 3)), rt.repeat_grad(g_repeat, x, repeats, 1), rt.pad_grad(g_pad, x, ((1, 0), (0, 2))))
    check_all(j_copies(g_tile, g_repeat, g_pad, x, (2, 1, 3), repeats, 1), want, (x,) * 3)
    g_repeat = make((3, 4), seed=2)
    want = (rt.tile_grad(g_tile, x, (2, 1, 3)), rt.repeat_grad(g_repeat, x, np.array([1, 2, 0]), 0), want[2])
    check_all(j_copies(g_tile, g_repeat, g_pad, x, (2, 1, 3), np.array([1, 2, 0]), 0), want, (x,) * 3)
    with pytest.raises(TypingError, match="constant"):
        numba.njit(lambda g, x: rt.pad_grad(g, x, 1, "reflect"))(make((5, 6)), x)


def test_take_grads():
    x = make((3, 4))
    index = np.array([[0, 2], [2, -1]])  # repeated and negative indices
    for axis in (0, 1, -1):
        g = make(np.take(x, index, axis=axis).shape, seed=1)
        check_adjoint(j_take_grads(g, x, index, axis), rt.take_grad(g, x, index, axis), x)
    g = make((3, 4), seed=1)
    along = np.array([[0, 0, 3, 3], [1, 2, 2, 0], [3, 3, 3, -1]])
    check_adjoint(j_take_along_axis_grad(g, x, along, 1), rt.take_along_axis_grad(g, x, along, 1), x)
    rows = np.array([[0, 2, 1, 1]])
    check_adjoint(j_take_along_axis_grad(g[:1], x, rows, 0), rt.take_along_axis_grad(g[:1], x, rows, 0), x)
    with pytest.raises(IndexError):
        j_take_grads(make((3, 1)), x, np.array([4]), 1)


def test_solve_and_cholesky_grads():
    a = make((3, 3)) + 3.0 * np.eye(3)
    for b in (make((3,), seed=1), make((3, 2), seed=1)):
        ans = np.linalg.solve(a, b)
        g = make(ans.shape, seed=2)
        check_all(j_solve_grads(g, a, b, ans), (rt.solve_grad_a(g, a, b, ans), rt.solve_grad_b(g, a, b)), (a, b))
    s = a @ a.T
    ans, g = np.linalg.cholesky(s), make((3, 3), seed=2)
    check_adjoint(j_cholesky_grad(g, s, ans), rt.cholesky_grad(g, s, ans), s)


def test_sequence_grads():
    a, b = make((3, 4)), make((3, 2), seed=1)
    g_cat, g_stack, g_h, g_v = make((3, 6), seed=2), make((3, 4, 2), seed=3), make((3, 6), seed=4), make((4, 4), seed=5)
    got = j_sequence_grads(g_cat, g_stack, g_h, g_v, a, b)
    want = (
        rt.concatenate_grad(g_cat, (a, b), 1),
        rt.stack_grad(g_stack, (a, a), -1),
        rt.hstack_grad(g_h, (a, b)),
        rt.vstack_grad(g_v, (a, a[0])),
    )
    for r, w, xs in zip(got, want, ((a, b), (a, a), (a, b), (a, a[0]))):
        assert isinstance(r, tuple) and isinstance(w, tuple)
        check_all(r, w, xs)
    c = make((3, 4), seed=1)
    got = j_sequence_grads_of_lists(make((24,), seed=2), make((2, 3, 4), seed=3), a, c)
    want = (rt.concatenate_grad(make((24,), seed=2), [a, c], None), rt.stack_grad(make((2, 3, 4), seed=3), [a, c], 0))
    for r, w in zip(got, want):
        check_all(list(r), w, (a, c))  # a list of adjoints for a list of arrays
    with pytest.raises(ValueError, match="fit"):
        j_sequence_grads(make((3, 7)), g_stack, g_h, g_v, a, b)


# srctrans.jit(srctrans.grad(f)) for a function using each rule whose forward op compiles


def uses_inner(x, y):
    return np.sum(np.inner(x, y) ** 2)


def uses_tensordot(x, y):
    return np.sum(np.tensordot(x, np.transpose(y), axes=1) ** 2)


def uses_einsum(x, y):
    return np.sum(np.einsum("ij,kj->ik", x, y) ** 2)


def uses_cumsum_cumprod(x):
    return np.sum(np.cumsum(x, axis=1) ** 2) + np.sum(np.cumprod(x) * 2.0)


def uses_norm(x):
    return np.sum(np.linalg.norm(x, axis=1, keepdims=True) * x)


def uses_flip_roll(x):  # (np.moveaxis compiles, but takes Numba ~10 s: its helper is tested above)
    return np.sum(np.flip(x) * np.roll(x, 2) * x)


def uses_tile_repeat(x):
    return np.sum(np.tile(x, (2, 1)) ** 2) + np.sum(np.repeat(x, 2) ** 3)


def uses_sort_take(x, i):
    return np.sum(np.sort(x) * np.take(x, np.array([0, 2, 2, 1]), axis=1) * np.take_along_axis(x, i, axis=1))


def uses_solve_cholesky(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2) + np.sum(np.linalg.cholesky(a @ np.transpose(a)) ** 2)


def uses_no_derivative(x):
    k = np.searchsorted(np.array([-0.5, 0.0, 0.5]), x) + np.argwhere(x > 0.0).shape[0] + np.nonzero(x > 0.5)[0].shape[0]
    e = np.eye(3, 4) + np.identity(4)[:3] + np.full((3, 4), 2.0) + np.full_like(x, 1.5)
    return np.sum(x * x * e * k)


def uses_sequences(x, y):
    return np.sum(np.stack([x, y], axis=1) ** 2) + np.sum(np.concatenate([x, y]) * x[0]) + np.sum(np.hstack([x, y]) ** 2) + np.sum(np.vstack([x, y]) ** 3)


# Each compiles for seconds. JIT_GRAD covers what the direct tests above cannot (what generated
# code passes: literal None axes, default arguments, einsum strings, list displays); the rest
# (whose helpers get the same argument types above) run with SRCTRANS_ALL_JIT_GRAD=1.
_SQUARE = make((3, 3), seed=7) + 3.0 * np.eye(3)
JIT_GRAD = [
    (uses_einsum, (make((3, 4)), make((2, 4), seed=1))),
    (uses_cumsum_cumprod, (make((3, 4)),)),
    (uses_norm, (make((3, 4)),)),
    (uses_flip_roll, (make((3, 4)),)),
    (uses_tile_repeat, (make((3, 4)),)),
    (uses_sort_take, (make((3, 4)), np.array([[0, 0, 3, 3], [1, 2, 2, 0], [3, 3, 3, 1]]))),
    (uses_sequences, (make((3, 4)), make((3, 4), seed=1))),
]
MORE_JIT_GRAD = [
    (uses_inner, (make((3, 4)), make((2, 4), seed=1))),
    (uses_tensordot, (make((3, 4)), make((2, 4), seed=1))),
    (uses_solve_cholesky, (_SQUARE, make((3, 2), seed=1))),
    (uses_no_derivative, (make((3, 4)),)),
]


_ALL_JIT_GRAD = [
    *JIT_GRAD,
    *(
        pytest.param(*c, marks=pytest.mark.skipif(not os.environ.get("SRCTRANS_ALL_JIT_GRAD"), reason="set SRCTRANS_ALL_JIT_GRAD=1"))
        for c in MORE_JIT_GRAD
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,args", _ALL_JIT_GRAD, ids=[c[0].__name__ for c in JIT_GRAD + MORE_JIT_GRAD])
def test_jit_of_grad_compiles(fn, args):
    import srctrans

    argnums = tuple(i for i, a in enumerate(args) if a.dtype.kind == "f")
    want = srctrans.grad(fn, argnums=argnums)(*args)  # the generated file run as Python
    got = srctrans.jit(srctrans.grad(fn, argnums=argnums))(*args)
    assert len(got) == len(want) == len(argnums)
    for r, w in zip(got, want):
        close(r, w, rtol=1e-9)


# --- linspace, traces, one number per matrix, solve's columns, stacks of matrices ------------------


@jit
def j_matrix_helpers(s, m, v, b, c):
    return (
        rt.scale_matrices(s, m), rt.matrix_inner(m, m), rt.zeros_per_matrix(m), rt.matrix_transpose(m),
        rt.from_columns(rt.as_columns(v, b), b), rt.as_columns(v, c),
    )


@jit
def j_linspace_and_trace(g, x, endpoint, at_stop, t, offset, axis1, axis2):
    return (
        rt.linspace_grad(g, x, endpoint, at_stop), rt.linspace_spread(x, g, endpoint, at_stop),
        rt.trace_grad(x, t, offset, axis1, axis2),
    )


def test_matrix_helpers_compiled_on_stacks():
    rng = np.random.default_rng(7)
    for s, m in ((rng.standard_normal(2), rng.standard_normal((2, 3, 3))), (rng.standard_normal((2, 2)), rng.standard_normal((2, 2, 3, 4)))):
        v, b, c = rng.standard_normal(s.shape + (3,)), rng.standard_normal(3), rng.standard_normal((3, 2))
        for got, want in zip(j_matrix_helpers(s, m, v, b, c), (
            rt.scale_matrices(s, m), rt.matrix_inner(m, m), rt.zeros_per_matrix(m), rt.matrix_transpose(m),
            rt.from_columns(rt.as_columns(v, b), b), rt.as_columns(v, c),
        )):
            np.testing.assert_allclose(got, want, rtol=1e-12)
            assert np.shape(got) == np.shape(want)


def test_linspace_and_trace_adjoints_compiled():
    rng = np.random.default_rng(8)
    t = rng.standard_normal((3, 4))
    for n in (1, 2, 5):
        g = rng.standard_normal(n)
        for endpoint in (True, False):
            for at_stop in (True, False):
                for offset, axis1, axis2 in ((0, 0, 1), (1, 0, 1), (-2, 1, 0), (5, 0, 1)):
                    got = j_linspace_and_trace(g, 0.7, endpoint, at_stop, t, offset, axis1, axis2)
                    want = (
                        rt.linspace_grad(g, 0.7, endpoint, at_stop), rt.linspace_spread(0.7, g, endpoint, at_stop),
                        rt.trace_grad(0.7, t, offset, axis1, axis2),
                    )
                    for a, b in zip(got, want):
                        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@jit
def j_float32_helpers(x, y, z):
    return rt.ge_mask(x, y), rt.le_mask(x, 0.5), rt.inside_mask(x, -0.5, 0.5), rt.sinc_grad(x), rt.trigamma(z)


def test_float32_helpers_stay_float32_compiled():
    x = np.linspace(-1.0, 1.0, 5, dtype=F32)
    y, z = x[::-1].copy(), x + F32.type(2.0)
    want = (rt.ge_mask(x, y), rt.le_mask(x, 0.5), rt.inside_mask(x, -0.5, 0.5), rt.sinc_grad(x), rt.trigamma(z))
    for got, w in zip(j_float32_helpers(x, y, z), want):
        assert got.dtype == w.dtype == F32
        np.testing.assert_allclose(got, w, rtol=1e-6)
