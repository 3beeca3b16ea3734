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


def test_dot_grads_unsupported_ndim():
    with pytest.raises(TypingError, match="not supported"):
        j_dot_grads(make((2, 2, 4)), make((2, 3)), make((2, 3, 4)))


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
        j_getitem_grad(make((2,)), make((5, 3)), (np.array([0, 1]), np.array([1, 2])))


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
