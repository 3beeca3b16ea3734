"""numba_backend.overloads: every gap filler, compiled with numba.njit, against NumPy itself.

Compiles dominate the run time, so each compiled function is built once (cached by what it
computes) and takes the varying parts (axis, shapes, data) as runtime arguments: one test
loops over shapes and axes inside a single compiled specialization.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numba
import numpy as np
import pytest
from numba.core import types
from numba.core.errors import TypingError

import numba_backend.overloads  # noqa: F401  (registers the overloads)
from srctrans import runtime

F64, F32, I64 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)
SHAPES = {
    1: [(5,), (1,)],
    2: [(3, 4), (1, 4), (3, 1)],
    3: [(2, 3, 4), (2, 1, 3)],
    4: [(2, 3, 1, 2)],
}


def make(shape: tuple[int, ...], dtype: np.dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tol(dtype: np.dtype) -> dict[str, float]:
    return {"rtol": 2e-4, "atol": 1e-5} if dtype in (np.float32, np.complex64) else {"rtol": 1e-10, "atol": 1e-12}


def check(got, want, dtype: np.dtype = F64) -> None:
    """Same shape, same dtype, same values (NaN where NumPy has NaN).

    Numba returns scalars as Python floats and ints, so a scalar's dtype is its kind only.
    """
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.ndim == 0:
        assert got.dtype.kind == want.dtype.kind, (got.dtype, want.dtype)
    else:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, equal_nan=True, **tol(dtype))


def axes_of(ndim: int) -> range:
    return range(-ndim, ndim)


# --- reductions with axis/keepdims ---

REDUCTIONS = ["sum", "prod", "mean", "std", "var", "max", "min", "all", "any", "argmax", "argmin"]
# Every op on float64 and float32, a few on integers; the shape logic, shared by all ops,
# on every ndim for two of them. (Each configuration costs a compile of about a second.)
PER_OP_CONFIGS = [(True, F64, 3), (False, F32, 2)]
NUMBAS_OWN = {"sum", "argmax", "argmin"}  # with an int axis and no keepdims: not ours to test
INTEGER_OPS = ["sum", "mean", "argmin"]
NDIM_SWEEP = [("mean", True, (1, 2, 4)), ("max", False, (1, 4))]


@functools.cache
def reducer(name: str, keepdims: bool, ddof: int | None = None, dtype: type | None = None) -> Callable:
    """njit(a, axis) -> np.<name>(a, axis=axis, keepdims=keepdims[, ddof=...][, dtype=...])."""
    fn = getattr(np, name)
    if ddof is not None:
        return numba.njit(lambda a, axis: fn(a, axis=axis, keepdims=keepdims, ddof=ddof))
    if dtype is not None:
        return numba.njit(lambda a, axis: fn(a, axis=axis, keepdims=keepdims, dtype=dtype))
    return numba.njit(lambda a, axis: fn(a, axis=axis, keepdims=keepdims))


def reduction_cases() -> Iterator:
    def case(name: str, keepdims: bool, dtype: np.dtype, ndim: int):
        label = f"{name}-{'keepdims-' if keepdims else ''}{dtype}-{ndim}d"
        return pytest.param(name, keepdims, dtype, ndim, id=label)

    for name in REDUCTIONS:
        for keepdims, dtype, ndim in PER_OP_CONFIGS:
            if keepdims or name not in NUMBAS_OWN:
                yield case(name, keepdims, dtype, ndim)
    for name in INTEGER_OPS:
        yield case(name, True, I64, 2)
    for name, keepdims, ndims in NDIM_SWEEP:
        for ndim in ndims:  # 3-d is among PER_OP_CONFIGS
            yield case(name, keepdims, F64, ndim)
    for name in ("all", "any"):
        yield case(name, True, np.dtype(np.bool_), 2)


@pytest.mark.parametrize(("name", "keepdims", "dtype", "ndim"), list(reduction_cases()))
def test_reduction_every_axis(name: str, keepdims: bool, dtype: np.dtype, ndim: int) -> None:
    compiled = reducer(name, keepdims)
    for shape in SHAPES[ndim]:
        a = make(shape, dtype)
        for axis in axes_of(ndim):
            got = compiled(a, axis)
            check(got, getattr(np, name)(a, axis=axis, keepdims=keepdims), dtype)


@pytest.mark.parametrize("name", ["sum", "var"])
def test_reduction_axis_none_keepdims(name: str) -> None:
    fn = getattr(np, name)
    compiled = numba.njit(lambda a: fn(a, axis=None, keepdims=True))
    for shape in SHAPES[3]:
        a = make(shape, F64)
        check(compiled(a), fn(a, axis=None, keepdims=True))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_whole_array_reductions_take_the_scalar_path_with_the_same_bits(name: str) -> None:
    """np.sum(x), np.max(x) ... of a whole array run one scalar loop (they allocated a (1, 1)
    result and took 9x Numba's own time for np.max in a loop): the same numbers, bit for bit, as
    the general kernel over every axis, NaN propagated, an empty max refused."""
    fn = getattr(np, name)
    whole = numba.njit(lambda a: fn(a))
    every_axis = numba.njit(lambda a: fn(a, axis=(0, 1)))
    rng = np.random.default_rng(4)
    for a in (
        rng.standard_normal((7, 13)),
        rng.standard_normal((7, 13)).astype(np.float32),
        rng.standard_normal((13, 7)).T,  # not contiguous
        rng.integers(-50, 50, (6, 5)),
        np.array([[1.0, np.nan], [3.0, -2.0]]),
    ):
        got = whole(a)  # (a number: Numba returns a float32 as a Python float)
        assert got == every_axis(a) or (np.isnan(got) and np.isnan(every_axis(a)))
        np.testing.assert_allclose(got, fn(a), rtol=1e-6 if a.dtype == np.float32 else 1e-13)
    if name in ("max", "min"):
        with pytest.raises(ValueError, match="zero-size array"):
            whole(np.zeros((0, 3)))


def test_matmul_of_float_matrices_and_vectors_is_left_to_numba() -> None:
    """Our '@' is for what Numba's own cannot take; registered first, it took every '@'."""
    from numba_backend.overloads import _ov_matmul_operator

    f64, f32 = types.Array(types.float64, 2, "C"), types.Array(types.float32, 1, "A")
    assert _ov_matmul_operator(f64, types.Array(types.float64, 1, "C")) is None
    assert _ov_matmul_operator(types.Array(types.float32, 2, "C"), f32) is None
    assert _ov_matmul_operator(types.Array(types.float64, 3, "C"), f64) is not None  # a stack
    assert _ov_matmul_operator(types.Array(types.int64, 2, "C"), types.Array(types.int64, 2, "C")) is not None


@pytest.mark.parametrize(("name", "keepdims"), [("sum", True), ("mean", False), ("max", True)])
def test_reduction_tuple_axis(name: str, keepdims: bool) -> None:
    compiled = reducer(name, keepdims)
    fn = getattr(np, name)
    for shape in SHAPES[3]:
        a = make(shape, F64)
        for axis in [(0, 2), (-1, 0), (1, 2), (0, 1)]:
            check(compiled(a, axis), fn(a, axis=axis, keepdims=keepdims))
    with pytest.raises(ValueError, match="duplicate"):
        compiled(make((2, 3, 4), F64), (0, -3))


def test_reduction_literal_and_positional_axis() -> None:
    @numba.njit
    def f(a):
        return (
            np.sum(a, 1, keepdims=True),
            np.mean(a, -1, keepdims=True),
            np.var(a, 1, ddof=1, keepdims=True),
            np.argmax(a, -1, keepdims=True),
        )

    a = make((3, 4, 5), F64)
    want = (
        np.sum(a, 1, keepdims=True),
        np.mean(a, -1, keepdims=True),
        np.var(a, 1, ddof=1, keepdims=True),
        np.argmax(a, -1, keepdims=True),
    )
    for got, expected in zip(f(a), want, strict=True):
        check(got, expected)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns on ddof >= n
@pytest.mark.parametrize(("name", "keepdims"), [("std", True), ("var", False)])
def test_std_var_ddof(name: str, keepdims: bool) -> None:
    compiled = reducer(name, keepdims, ddof=1)
    fn = getattr(np, name)
    for shape in SHAPES[2] + [(1, 1)]:
        a = make(shape, F64)
        for axis in axes_of(2):  # size-1 axes give ddof >= n: inf/nan as in NumPy
            check(compiled(a, axis), fn(a, axis=axis, keepdims=keepdims, ddof=1))


def test_dtype_argument() -> None:
    sum32 = reducer("sum", True, dtype=np.float32)
    mean64 = reducer("mean", True, dtype=np.float64)
    a_int, a32 = make((3, 4), I64), make((3, 4), F32)
    for axis in axes_of(2):
        check(sum32(a_int, axis), np.sum(a_int, axis=axis, keepdims=True, dtype=np.float32), F32)
        check(mean64(a32, axis), np.mean(a32, axis=axis, keepdims=True, dtype=np.float64), F32)


def test_complex_variance() -> None:
    a = make((3, 4), np.dtype(np.complex128))
    compiled = reducer("var", True)
    for axis in axes_of(2):
        check(compiled(a, axis), np.var(a, axis=axis, keepdims=True))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_nan_propagates_like_numpy(name: str) -> None:
    compiled = reducer(name, True)
    a = make((3, 4), F64)
    a[1, 2] = a[2, 0] = a[0, 3] = np.nan
    for axis in axes_of(2):
        check(compiled(a, axis), getattr(np, name)(a, axis=axis, keepdims=True))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns on the mean of nothing
def test_empty_reductions() -> None:
    a = np.zeros((0, 3))
    check(reducer("sum", True)(a, 0), np.sum(a, axis=0, keepdims=True))
    check(reducer("mean", True)(a, 0), np.mean(a, axis=0, keepdims=True))
    check(reducer("max", True)(a, 1), np.max(a, axis=1, keepdims=True))  # nothing to reduce per row
    with pytest.raises(ValueError, match="zero-size"):
        reducer("max", True)(a, 0)
    with pytest.raises(ValueError, match="empty"):
        reducer("argmin", True)(a, 0)


def test_axis_out_of_bounds_raises() -> None:
    with pytest.raises(ValueError, match="out of bounds"):
        reducer("mean", True)(make((3, 4), F64), 2)


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin_aliases(name: str) -> None:
    compiled = reducer(name, False)
    a = make((2, 3, 4), F64)
    for axis in axes_of(3):
        check(compiled(a, axis), getattr(np, name)(a, axis=axis))


def test_keepdims_must_be_a_constant() -> None:
    @numba.njit
    def f(a, keep):
        return np.mean(a, axis=0, keepdims=keep)

    with pytest.raises(TypingError, match="keepdims= must be a constant"):
        f(np.ones((2, 2)), True)


def test_argmax_rejects_tuple_axis() -> None:
    with pytest.raises(TypingError, match="axis= must be None or an int"):
        reducer("argmax", True)(np.ones((2, 2)), (0, 1))


# --- np.linalg.norm with axis ---


def test_norm_axis_keepdims() -> None:
    plain = numba.njit(lambda x, axis: np.linalg.norm(x, axis=axis))
    kept = numba.njit(lambda x, axis: np.linalg.norm(x, axis=axis, keepdims=True))
    for shape in SHAPES[3]:
        x = make(shape, F64)
        for axis in axes_of(3):
            check(plain(x, axis), np.linalg.norm(x, axis=axis))
            check(kept(x, axis), np.linalg.norm(x, axis=axis, keepdims=True))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy: 0.0 ** -1 in ord=-1
def test_norm_orders() -> None:
    compiled = numba.njit(lambda x, ord, axis: np.linalg.norm(x, ord=ord, axis=axis))
    x = make((3, 4), F64)
    x[0, 1] = 0.0
    for ord in (1.0, 2.0, 3.0, -1.0, 0.0, np.inf, -np.inf):
        for axis in axes_of(2):
            check(compiled(x, ord, axis), np.linalg.norm(x, ord=ord, axis=axis))


def test_norm_frobenius_and_nd() -> None:
    fro = numba.njit(lambda x: np.linalg.norm(x, axis=(0, 2)))
    flat = numba.njit(lambda x: np.linalg.norm(x))
    x = make((2, 3, 4), F32)
    check(fro(x), np.linalg.norm(x, axis=(0, 2)), F32)
    check(flat(x), np.linalg.norm(x), F32)


# --- matmul (srctrans.runtime.matmul, the '@' operator) ---

compiled_matmul = numba.njit(lambda a, b: runtime.matmul(a, b))
compiled_at = numba.njit(lambda a, b: a @ b)

MATMUL_SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4, 2)),
    ((4,), (4, 2)),
    ((3, 4), (4,)),
    ((5, 3, 4), (4, 2)),
    ((3, 4), (5, 4, 2)),
    ((5, 3, 4), (5, 4, 2)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((5, 3, 4), (4,)),
    ((1, 1), (1, 1)),
    ((3, 0), (0, 2)),
]


@pytest.mark.parametrize(("shape_a", "shape_b"), MATMUL_SHAPES, ids=str)
def test_matmul_shapes(shape_a: tuple, shape_b: tuple) -> None:
    a, b = make(shape_a, F64, 1), make(shape_b, F64, 2)
    check(compiled_matmul(a, b), np.matmul(a, b))


def test_matmul_more_batch_shapes_same_specialization() -> None:
    for shape_a, shape_b in [((1, 3, 4), (6, 4, 2)), ((6, 3, 4), (1, 4, 2)), ((2, 1, 4), (2, 4, 1))]:
        a, b = make(shape_a, F64, 1), make(shape_b, F64, 2)
        check(compiled_matmul(a, b), np.matmul(a, b))


@pytest.mark.parametrize(("dtype_a", "dtype_b"), [(F32, F32), (I64, I64), (F32, F64)], ids=lambda d: str(d))
def test_matmul_dtypes(dtype_a: np.dtype, dtype_b: np.dtype) -> None:
    a, b = make((2, 3, 4), dtype_a, 1), make((4, 5), dtype_b, 2)
    check(compiled_matmul(a, b), np.matmul(a, b), np.result_type(dtype_a, dtype_b))


def test_matmul_non_contiguous_operands() -> None:
    a = make((4, 6, 8), F64)[:, ::2, 1::2]
    b = make((3, 4), F64).T
    check(compiled_matmul(a, b), np.matmul(a, b))


def test_at_operator_nd_and_integers() -> None:
    a, b = make((5, 3, 4), F64, 1), make((5, 4, 2), F64, 2)
    check(compiled_at(a, b), a @ b)
    ai, bi = make((3, 4), I64, 1), make((4, 2), I64, 2)
    check(compiled_at(ai, bi), ai @ bi, I64)


def test_matmul_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="core dimension"):
        compiled_matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="broadcast"):
        compiled_matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))


def test_np_matmul_refused_with_directions() -> None:
    # np.matmul is a ufunc: Numba would compile it elementwise; the front end rewrites it.
    with pytest.raises(TypingError, match="srctrans.runtime.matmul"):
        numba.njit(lambda a, b: np.matmul(a, b))(np.ones((2, 2)), np.ones((2, 2)))
    assert runtime.NUMPY_REWRITES["numpy.matmul"] == "matmul"
    assert getattr(runtime, runtime.NUMPY_REWRITES["numpy.matmul"]) is runtime.matmul


def test_runtime_matmul_is_plain_numpy() -> None:
    a, b = make((2, 3, 4), F64), make((4, 5), F64)
    np.testing.assert_array_equal(runtime.matmul(a, b), np.matmul(a, b))


# --- einsum ---

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("i,i->", [(6,), (6,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
    ("Ij , jK -> KI", [(3, 4), (4, 2)]),
]


@functools.cache
def einsum_fn(subscripts: str, n_operands: int) -> Callable:
    if n_operands == 1:
        return numba.njit(lambda a: np.einsum(subscripts, a))
    if n_operands == 2:
        return numba.njit(lambda a, b: np.einsum(subscripts, a, b))
    return numba.njit(lambda a, b, c: np.einsum(subscripts, a, b, c))


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> None:
    operands = [make(s, F64, i) for i, s in enumerate(shapes)]
    check(einsum_fn(subscripts, len(shapes))(*operands), np.einsum(subscripts, *operands))


@pytest.mark.parametrize("dtype", [F32, I64], ids=str)
def test_einsum_dtypes(dtype: np.dtype) -> None:
    a, b = make((3, 4), dtype, 1), make((4, 5), dtype, 2)
    check(einsum_fn("ij,jk->ik", 2)(a, b), np.einsum("ij,jk->ik", a, b), dtype)


def test_einsum_size_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="subscript 'j'"):
        einsum_fn("ij,jk->ik", 2)(np.ones((2, 3)), np.ones((4, 2)))


@pytest.mark.parametrize(
    ("subscripts", "message"),
    [("...ij,jk->ik", "ellipsis"), ("ij,jk->iz", "not in the inputs"), ("i,j,k->i", "names 3 operands")],
)
def test_einsum_bad_subscripts_are_typing_errors(subscripts: str, message: str) -> None:
    with pytest.raises(TypingError, match=message):
        numba.njit(lambda a, b: np.einsum(subscripts, a, b))(np.ones((2, 2)), np.ones((2, 2)))


def test_einsum_needs_constant_subscripts() -> None:
    with pytest.raises(TypingError, match="constant string"):
        numba.njit(lambda s, a: np.einsum(s, a))("ii", np.ones((2, 2)))


# --- tensordot ---

TENSORDOT_CASES = [
    ("axes=2", lambda a, b: np.tensordot(a, b), (3, 4, 5), (4, 5, 2)),
    ("axes=0", lambda a, b: np.tensordot(a, b, axes=0), (2, 3), (4,)),
    ("pair", lambda a, b: np.tensordot(a, b, axes=(0, 1)), (4, 3), (5, 4)),
    ("tuples", lambda a, b: np.tensordot(a, b, axes=((2, 0), (0, 1))), (3, 4, 5), (5, 3, 2)),
    ("full", lambda a, b: np.tensordot(a, b, axes=((0, 1), (1, 0))), (3, 4), (4, 3)),
]


@pytest.mark.parametrize(
    ("fn", "shape_a", "shape_b"), [c[1:] for c in TENSORDOT_CASES], ids=[c[0] for c in TENSORDOT_CASES]
)
def test_tensordot(fn: Callable, shape_a: tuple, shape_b: tuple) -> None:
    a, b = make(shape_a, F64, 1), make(shape_b, F64, 2)
    got = numba.njit(fn)(a, b)
    want = fn(a, b)
    if want.ndim == 0:  # a full contraction compiles to a scalar
        want = want[()]
    check(got, want)


def test_tensordot_runtime_tuple_axes_and_int_dtype() -> None:
    compiled = numba.njit(lambda a, b, axes: np.tensordot(a, b, axes))
    a, b = make((3, 4, 5), I64, 1), make((5, 4, 2), I64, 2)
    for axes in [((1, 2), (1, 0)), ((-1, -2), (0, 1)), ((2, 1), (0, 1))]:
        check(compiled(a, b, axes), np.tensordot(a, b, axes), I64)
    with pytest.raises(ValueError, match="shape mismatch"):
        compiled(a, b, ((0, 1), (0, 1)))


def test_tensordot_needs_constant_int_axes() -> None:
    with pytest.raises(TypingError, match="constant integer"):
        numba.njit(lambda a, b, n: np.tensordot(a, b, n))(np.ones((2, 2)), np.ones((2, 2)), 1)


# --- squeeze ---


def test_squeeze_axis() -> None:
    compiled = numba.njit(lambda a, axis: np.squeeze(a, axis=axis))
    a = make((1, 3, 1, 4), F64)
    for axis in (0, 2, -2, -4):
        check(compiled(a, axis), np.squeeze(a, axis=axis))
    with pytest.raises(ValueError, match="size not equal to one"):
        compiled(a, 1)


def test_squeeze_tuple_axis_method_and_views() -> None:
    tup = numba.njit(lambda a: np.squeeze(a, (0, -2)))
    method = numba.njit(lambda a: a.squeeze(1))
    a = make((1, 3, 1, 4), F32)
    check(tup(a), np.squeeze(a, (0, -2)), F32)
    strided = make((3, 2, 4), F64)[:, :1, ::2]  # non-contiguous: squeezed as a view
    got = method(strided)
    check(got, strided.squeeze(1))
    got[0, 0] = 100.0
    assert strided[0, 0, 0] == 100.0
    check(numba.njit(lambda a: np.squeeze(a, axis=0))(np.ones((1, 1))), np.ones(1))


def test_squeeze_without_axis_is_a_typing_error() -> None:
    with pytest.raises(TypingError, match="pass axis="):
        numba.njit(lambda a: np.squeeze(a))(np.ones((1, 3)))


# --- tile ---

TILE_CASES = [
    ("int", lambda a: np.tile(a, 3), [(2, 3), (1, 1)]),
    ("short tuple", lambda a: np.tile(a, (2,)), [(2, 3)]),
    ("longer tuple", lambda a: np.tile(a, (2, 1, 3)), [(3,), (1,)]),
]


@pytest.mark.parametrize(("fn", "shapes"), [c[1:] for c in TILE_CASES], ids=[c[0] for c in TILE_CASES])
def test_tile(fn: Callable, shapes: list[tuple[int, ...]]) -> None:
    compiled = numba.njit(fn)
    for shape in shapes:
        a = make(shape, F64)
        check(compiled(a), fn(a))


def test_tile_integers_runtime_reps_and_views() -> None:
    compiled = numba.njit(lambda a, reps: np.tile(a, reps))
    for shape in [(2, 3), (1, 2)]:
        a = make(shape, F64)
        for reps in [(2, 3), (1, 1), (0, 2), (3, 0)]:
            check(compiled(a, reps), np.tile(a, reps))
    a = make((2, 3), I64)
    for reps in [(1, 2, 2), (3, 1, 1), (2, 2, 2)]:
        check(compiled(a, reps), np.tile(a, reps), I64)
    strided = make((4, 6), F64)[::2, 1::2]
    check(numba.njit(lambda a: np.tile(a, (2, 2)))(strided), np.tile(strided, (2, 2)))


# --- joining lists of arrays ---


@numba.njit
def _appended(a, n):
    out = []
    for i in range(n):
        out.append(a + i)
    return out


def test_stack_list_every_axis() -> None:
    compiled = numba.njit(lambda a, b, c, axis: np.stack([a, b, c], axis=axis))
    for shape in [(3, 4), (1, 4)]:
        a, b, c = (make(shape, F64, s) for s in range(3))
        for axis in range(-3, 3):
            check(compiled(a, b, c, axis), np.stack([a, b, c], axis=axis))
    with pytest.raises(ValueError, match="same shape"):
        compiled(np.ones((3, 4)), np.ones((3, 4)), np.ones((4, 3)), 0)


def test_concatenate_list_every_axis() -> None:
    compiled = numba.njit(lambda a, b, axis: np.concatenate([a, b], axis=axis))
    for shape_a, shape_b, axes in [((2, 3, 4), (2, 3, 4), range(-3, 3)), ((2, 3, 4), (2, 5, 4), (1, -2))]:
        a, b = make(shape_a, F32, 1), make(shape_b, F32, 2)
        for axis in axes:
            check(compiled(a, b, axis), np.concatenate([a, b], axis=axis), F32)
    with pytest.raises(ValueError, match="must match"):
        compiled(np.ones((2, 3, 4)), np.ones((2, 5, 4)), 0)


def test_concatenate_list_default_and_none_axis() -> None:
    default = numba.njit(lambda a, b: np.concatenate([a, b]))
    flat = numba.njit(lambda a, b: np.concatenate([a, b], axis=None))
    a, b = make((2, 3), I64, 1), make((4, 3), I64, 2)
    check(default(a, b), np.concatenate([a, b]), I64)
    check(flat(a, b), np.concatenate([a, b], axis=None), I64)


def test_hstack_vstack_lists() -> None:
    h = numba.njit(lambda a, b: np.hstack([a, b]))
    v = numba.njit(lambda a, b: np.vstack([a, b]))
    for shape in [(3,), (2, 3)]:
        a, b = make(shape, F64, 1), make(shape, F64, 2)
        check(h(a, b), np.hstack([a, b]))
        check(v(a, b), np.vstack([a, b]))


def test_lists_built_by_append() -> None:
    stack_appended = numba.njit(lambda a, n: np.stack(_appended(a, n), axis=-1))
    array_appended = numba.njit(lambda a, n: np.array(_appended(a, n)))
    a = make((2, 3), F64)
    expected = [a + i for i in range(4)]
    check(stack_appended(a, 4), np.stack(expected, axis=-1))
    check(array_appended(a, 4), np.array(expected))
    with pytest.raises(ValueError, match="at least one array"):
        stack_appended(a, 0)


def test_tuples_still_use_numbas_own_join() -> None:
    compiled = numba.njit(lambda a, b: (np.stack((a, b), axis=1), np.concatenate((a, b), axis=0)))
    a, b = make((2, 3), F64, 1), make((2, 3), F64, 2)
    got = compiled(a, b)
    check(got[0], np.stack((a, b), axis=1))
    check(got[1], np.concatenate((a, b), axis=0))


# --- ufunc.at ---


def _at(name: str) -> Callable:
    ufunc = getattr(np, name)

    def at(a, indices, b):
        ufunc.at(a, indices, b)
        return a

    return at


@pytest.mark.parametrize(
    ("name", "shape", "indices", "b"),
    [
        ("add", (5,), np.array([0, 1, 1, 4, 1, -1]), np.arange(6.0)),
        ("add", (5,), np.array([[0, 3], [3, 3]]), 2.0),
        ("add", (4, 3), np.array([2, 0, 2]), np.arange(9.0).reshape(3, 3)),
        ("add", (4, 3), np.array([2, 0, 2]), np.arange(3.0)),
        ("add", (4, 3), (np.array([0, 0, 3]), np.array([1, 1, -1])), np.array([1.0, 2.0, 3.0])),
        ("add", (4, 3), 2, np.arange(3.0)),
        ("subtract", (5,), np.array([1, 1, 2]), np.array([1.0, 2.0, 3.0])),
        ("maximum", (5,), np.array([1, 1, 2]), np.array([5.0, -2.0, 3.0])),
        ("minimum", (4, 3), np.array([0, 0]), np.array([[-1.0, 5.0, 0.0], [2.0, -3.0, 0.0]])),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_ufunc_at(name: str, shape: tuple, indices, b) -> None:
    a = make(shape, F64)
    got = numba.njit(_at(name))(a.copy(), indices, b)
    check(got, _at(name)(a.copy(), indices, b))


def test_add_at_integer_array_and_bounds() -> None:
    compiled = numba.njit(_at("add"))
    a = np.zeros(3, np.int64)
    check(compiled(a, np.array([0, 0, 2, 0]), 1), np.array([3, 0, 1]), I64)
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(a, np.array([3]), 1)


def test_add_at_rejects_float_indices() -> None:
    with pytest.raises(TypingError, match="indices must be ints"):
        numba.njit(_at("add"))(np.zeros(3), np.array([0.0, 1.0]), 1.0)


def test_inner_matches_numpy():
    import numba

    @numba.njit
    def inner(a, b):
        return np.inner(a, b)

    rng = np.random.default_rng(5)
    for sa, sb in [((4,), (4,)), ((3, 4), (4,)), ((4,), (2, 4)), ((3, 4), (2, 4))]:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        np.testing.assert_allclose(inner(a, b), np.inner(a, b))


# --- np.linalg on stacks of matrices ---


@numba.njit
def _j_linalg_stack(a, b, v, m):
    sign, logdet = np.linalg.slogdet(a)
    return np.linalg.inv(a), np.linalg.det(a), sign, logdet, np.linalg.solve(a, b), np.linalg.solve(a, v), np.linalg.solve(a, m)


@pytest.mark.parametrize("dtype", [F64, F32])
def test_linalg_on_stacks_of_matrices(dtype):
    rng = np.random.default_rng(3)
    for lead in ((2,), (2, 3)):
        a = (rng.standard_normal(lead + (3, 3)) + 3.0 * np.eye(3)).astype(dtype)
        b, v, m = (rng.standard_normal(s).astype(dtype) for s in (lead + (3, 2), (3,), (3, 4)))
        sign, logdet = np.linalg.slogdet(a)
        want = (np.linalg.inv(a), np.linalg.det(a), sign, logdet, np.linalg.solve(a, b), np.linalg.solve(a, v), np.linalg.solve(a, m))
        for got, w in zip(_j_linalg_stack(a, b, v, m), want):
            assert got.shape == w.shape and got.dtype == w.dtype
            np.testing.assert_allclose(got, w, rtol=1e-4 if dtype == F32 else 1e-10)


# --- along an axis (repeat, diff, roll), diagonal, pad, atleast_nd, list indices, dot ---


@numba.njit
def _j_along(a, reps, shift, n):
    return (
        np.repeat(a, 2, axis=0), np.repeat(a, reps, axis=-1), np.roll(a, shift, axis=1), np.diff(a, n, axis=-2),
        np.diagonal(a, 1, 0, 2), np.diagonal(a, -1, axis1=2, axis2=1),
    )


def test_repeat_roll_diff_diagonal_every_dtype():
    for dtype in (F64, F32, I64, np.dtype(np.uint8), np.dtype(np.bool_)):
        a = make((2, 3, 4), dtype)
        reps = np.array([1, 0, 2, 3])
        for shift, n in ((1, 1), (-7, 2), (0, 0), (13, 4)):
            want = (
                np.repeat(a, 2, axis=0), np.repeat(a, reps, axis=-1), np.roll(a, shift, axis=1), np.diff(a, n, axis=-2),
                np.diagonal(a, 1, 0, 2), np.diagonal(a, -1, axis1=2, axis2=1),
            )
            for got, w in zip(_j_along(a, reps, shift, n), want):
                assert got.shape == w.shape and got.dtype == w.dtype, (dtype, got.shape, w.shape, got.dtype, w.dtype)
                np.testing.assert_array_equal(got, w)


def test_along_refusals():
    a = make((2, 3, 4), F64)
    with pytest.raises(ValueError, match="negative"):
        _j_along(a, np.array([1, -1, 2, 3]), 1, 1)
    with pytest.raises(ValueError, match="broadcast"):
        _j_along(a, np.array([1, 2]), 1, 1)
    with pytest.raises(ValueError, match="non-negative"):
        _j_along(a, np.array([1, 1, 1, 1]), 1, -1)

    @numba.njit
    def same_axes(a):
        return np.diagonal(a, 0, 1, -2)

    with pytest.raises(ValueError, match="cannot be the same"):
        same_axes(a)


@numba.njit
def _j_pad(x, a):
    return np.pad(x, 1), np.pad(a, (1, 2)), np.pad(a, ((0, 1), (2, 0)), constant_values=3.5), np.pad(x, ((2, 3),))


def test_pad_constant():
    for dtype in (F64, F32, I64):
        x, a = make((5,), dtype), make((3, 4), dtype)
        want = (np.pad(x, 1), np.pad(a, (1, 2)), np.pad(a, ((0, 1), (2, 0)), constant_values=3.5), np.pad(x, ((2, 3),)))
        for got, w in zip(_j_pad(x, a), want):
            assert got.dtype == w.dtype
            np.testing.assert_array_equal(got, w)

    @numba.njit
    def reflect(x):
        return np.pad(x, 1, mode="reflect")

    with pytest.raises(TypingError, match="only mode='constant'"):
        reflect(make((5,), F64))


def test_atleast_nd_of_a_number_and_list_indices():
    @numba.njit
    def f(x):
        return np.atleast_1d(x[0]), np.atleast_2d(x[1]), np.atleast_3d(2), x[[0, 2, -1]], x[[True, False, True, False, True]]

    x = make((5,), F64)
    want = (np.atleast_1d(x[0]), np.atleast_2d(x[1]), np.atleast_3d(2), x[[0, 2, -1]], x[[True, False, True, False, True]])
    for got, w in zip(f(x), want):
        assert got.shape == w.shape and got.dtype == w.dtype
        np.testing.assert_array_equal(got, w)


def test_dot_with_a_number_and_with_stacks():
    @numba.njit
    def f(a, m, v, s):
        return np.dot(a, m), np.dot(v, a), np.dot(a, v), np.dot(s, 2.0), np.dot(3, s)

    rng = np.random.default_rng(8)
    a, m, v = rng.standard_normal((2, 3, 3)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    for s in (v.astype(np.float32), np.arange(3, dtype=np.int8), v):
        want = (np.dot(a, m), np.dot(v, a), np.dot(a, v), np.dot(s, 2.0), np.dot(3, s))
        for got, w in zip(f(a, m, v, s), want):
            assert got.shape == w.shape and got.dtype == w.dtype, (got.dtype, w.dtype)  # NumPy's strong promotion
            np.testing.assert_allclose(got, w, rtol=1e-12)


def test_a_generated_file_calling_an_overloaded_numpy_function_imports_its_module():
    """numba_backend.cpu imports numba_backend.overloads for a generated file whose text names one
    of its functions; a name missing there left Numba's own implementation in place in a fresh
    process (np.linalg.matrix_power typed as optional, which the adjoint helpers refuse)."""
    import re
    from pathlib import Path

    import numba_backend.overloads as module
    from numba_backend.cpu import _NEEDS

    text = Path(module.__file__).read_text()
    targets = re.findall(r"@overload(?:_method)?\((np(?:\.linalg)?\.\w+)\)", text)
    assert len(targets) > 30
    missing = [t for t in targets if not _NEEDS["overloads"].search(f"y = {t}(x)")]
    assert not missing, missing


def test_matrix_power_is_ours_whichever_linalg_was_registered_first(tmp_path):
    """A process that compiled np.linalg before importing these overloads got Numba's own
    matrix_power (typed optional), and the compiled vjp of ``matrix_power(x, 3)`` refused it
    (a failure that depended on which tests had run before in the process)."""
    from tests.conftest import run_python

    (tmp_path / "cubes.py").write_text("import numpy as np\n\n\ndef cube(x):\n    return np.linalg.matrix_power(x, 3)\n")
    done = run_python(
        """
        import numba, numpy as np
        numba.njit(lambda a: np.linalg.matrix_power(a, 3))(np.eye(3))  # Numba's linalg registered first
        import srctrans
        from cubes import cube
        x = np.arange(9.0).reshape(3, 3) / 10.0
        out, vjp = srctrans.vjp(srctrans.jit(cube), x)
        (got,) = vjp(np.ones((3, 3)))
        g = np.ones((3, 3))
        want = g @ (x @ x).T + x.T @ g @ x.T + (x @ x).T @ g
        np.testing.assert_allclose(got, want, rtol=1e-12)
        print("ok")
        """,
        tmp_path,
        env={"SRCTRANS_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
