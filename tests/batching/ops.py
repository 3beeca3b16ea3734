"""One small function per batching rule (some rules have several), for tests/batching/test_rules.py.

``SPECS`` lists ``(rule key, function, example makers, batchable)``: each maker gives one
example of an argument from a random generator; ``batchable`` says which arguments the
rule may see batched (the others are tested unbatched only).
"""

import math

import numpy as np
import scipy.linalg
import scipy.special as sp

import srctrans
import srctrans.runtime as rt
from srctrans.rules.batching import SPECIAL_ELEMENTWISE


def _unary(op):
    def f(x):
        return op(x)

    return f


def _binary(op):
    def f(x, y):
        return op(x, y)

    return f


def vec(n=3, lo=0.2, hi=0.9):
    return lambda r: r.uniform(lo, hi, n)


def mat(a=2, b=3, lo=0.2, hi=0.9):
    return lambda r: r.uniform(lo, hi, (a, b))


def num(lo=0.2, hi=0.9):
    return lambda r: float(r.uniform(lo, hi))


def boolv(n=3):
    return lambda r: r.uniform(0, 1, n) > 0.5


def add_op(x, y):
    return x + y


def sub_op(x, y):
    return x - y


def mul_op(x, y):
    return x * y


def div_op(x, y):
    return x / y


def pow_op(x, y):
    return x ** y


def floordiv_op(x, y):
    return x // y


def mod_op(x, y):
    return x % y


def gt_op(x, y):
    return x > y


def ge_op(x, y):
    return x >= y


def lt_op(x, y):
    return x < y


def le_op(x, y):
    return x <= y


def eq_op(x, y):
    return x == y


def ne_op(x, y):
    return x != y


def neg_op(x):
    return -x


def pos_op(x):
    return +x


def not_op(x):
    return not x


def matmul_op(a, b):
    return a @ b


def where3(c, x, y):
    return np.where(c, x, y)


def clip_const(x):
    return np.clip(x, 0.4, 0.7)


def clip_args(x, lo, hi):
    return np.clip(x, lo, hi)


def builtin_max(x, y):
    return max(x, y)


def builtin_min(x, y):
    return min(x, y)


def builtin_abs(x):
    return abs(x - 0.5)


def builtin_float(x):
    return float(x) * 2.0


def builtin_int(k, x):
    return x * int(k)


def builtin_round(k, x):
    return x * round(k)


def math_floor(k, x):
    return x * math.floor(k)


def math_ceil(k, x):
    return x * math.ceil(k)


def builtin_len(x):
    return x * len(x)


def builtin_range(x):
    s = x[0] * 0.0
    for i in range(len(x)):
        s = s + x[i] * i
    return s


def math_hypot(x, y):
    return math.hypot(x, y)


def math_pow(x, y):
    return math.pow(x, y)


def sum_all(x):
    return np.sum(x)


def sum_axis0(x):
    return np.sum(x, axis=0)


def sum_axis_last(x):
    return np.sum(x, axis=-1)


def mean_keepdims(x):
    return np.mean(x, axis=1, keepdims=True)


def reduce_fn(op, axis):
    if axis is None:
        return _unary(op)

    def f(x):
        return op(x, axis=axis)

    return f


def cumsum_axis(x):
    return np.cumsum(x, axis=1)


def diff_last(x):
    return np.diff(x)


def diff_twice_axis0(x):
    return np.diff(x, 2, axis=0)


def std_ddof(x):
    return np.std(x, axis=0, ddof=1)


def dot_scalar(s, x):
    return np.dot(s, x)


def outer(x, y):
    return np.outer(x, y)


def trace(m):
    return np.trace(m)


def transpose(m):
    return np.transpose(m)


def attr_T(m):
    return m.T


def reshape_fn(x):
    return np.reshape(x, (3, 2))


def reshape_method(x):
    return x.reshape(2, 3)


def ravel_fn(m):
    return np.ravel(m)


def ravel_method(m):
    return m.ravel()


def expand_front(x):
    return np.expand_dims(x, 0)


def expand_back(x):
    return np.expand_dims(x, -1)


def squeeze_fn(m):
    return np.squeeze(m, axis=0)


def shape_attr(x):
    return x * x.shape[0]


def ndim_attr(x):
    return x * x.ndim


def copy_fn(x):
    return np.copy(x) * 2.0


def copy_method(x):
    y = x.copy()
    return y + 1.0


def astype_method(x):
    return x.astype(np.float32)


def zeros_like_fn(x):
    return np.zeros_like(x) + x


def ones_like_fn(x):
    return np.ones_like(x) * x


def empty_like_fn(x):
    e = np.empty_like(x)
    e[:] = x * 3.0
    return e


def zeros_fn(x):
    z = np.zeros(3)
    z[1] = x
    return z


def ones_fn(x):
    return np.ones((2, 3)) * x


def empty_fn(x):
    e = np.empty(3)
    e[:] = x
    return e


def full_fn(x):
    return np.full(3, 2.0) * x


def arange_fn(x):
    return np.arange(3.0) * x


def linspace_fn(x):
    return np.linspace(0.0, 1.0, 3) * x


def eye_fn(x):
    return np.eye(3) @ x


def identity_fn(x):
    return np.identity(3) @ x


def array_fn(x):
    return np.array([1.0, 2.0, 3.0]) * x


def asarray_fn(x):
    return np.asarray([[1.0], [2.0]]) * x


def index_scalar(x, i):
    return x[i]


def index_pair(m, i, j):
    return m[i, j]


def index_slice(x):
    return x[1:] - x[:-1]


def index_row(m, i):
    return m[i, :]


def index_column(m):
    return m[:, 1]


def index_array(x):
    idx = np.array([2, 0, 2])
    return x[idx]


def seed(x):
    return rt.grad_seed(x) * x


def unbroadcast_scalar(g, x):
    return rt.unbroadcast(g, x)


def rt_zeros_like(x):
    return rt.zeros_like(x) + x


def sum_grad_full(g, x):
    return rt.sum_grad(g, x, None, False)


def dot_grad_x(g, x, y):
    return rt.dot_grad_x(g, x, y)


def dot_grad_y(g, x, y):
    return rt.dot_grad_y(g, x, y)


def tape_filled(v):
    """A tape as adjoint files fill it: made by the first trip, written and read by trip number."""
    trips = 3
    trip = 0
    for i in range(trips):
        if trip == 0:
            t = rt.tape(v, trips)
        t[trip] = v * (trip + 1.0)
        trip += 1
    return t[2] - t[0] * 0.5


def psum_other_axis(x):
    # a collective over another vmap's axis: passed through this one
    return srctrans.psum(x, "elsewhere") * 1.0


def pmean_other_axis(x):
    return srctrans.pmean(x, "elsewhere") * 1.0


def pmax_other_axis(x):
    return srctrans.pmax(x, "elsewhere") * 1.0


def pmin_other_axis(x):
    return srctrans.pmin(x, "elsewhere") * 1.0


def all_gather_other_axis(x):
    return srctrans.all_gather(x, "elsewhere") * 1.0


def axis_index_other_axis(x):
    return x * srctrans.axis_index("elsewhere")


ints = lambda r: int(r.integers(0, 3))  # noqa: E731
counts = lambda r: float(r.integers(1, 4))  # noqa: E731

_UNARY = {
    "numpy.negative": None, "numpy.positive": None, "numpy.square": None, "numpy.sqrt": None, "numpy.cbrt": None,
    "numpy.reciprocal": None, "numpy.exp": None, "numpy.exp2": None, "numpy.expm1": None, "numpy.log": None,
    "numpy.log2": None, "numpy.log10": None, "numpy.log1p": None, "numpy.sin": None, "numpy.cos": None,
    "numpy.tan": None, "numpy.arcsin": None, "numpy.arccos": None, "numpy.arctan": None, "numpy.sinh": None,
    "numpy.cosh": None, "numpy.tanh": None, "numpy.arcsinh": None, "numpy.arccosh": (1.2, 2.0),
    "numpy.arctanh": None, "numpy.abs": (-1.0, 1.0), "numpy.absolute": (-1.0, 1.0), "numpy.fabs": (-1.0, 1.0),
    "numpy.sign": (-1.0, 1.0), "numpy.floor": (-2.0, 2.0), "numpy.ceil": (-2.0, 2.0),
    "numpy.trunc": (-2.0, 2.0), "numpy.rint": (-2.0, 2.0), "numpy.fix": (-2.0, 2.0), "numpy.sinc": None,
    "numpy.deg2rad": None, "numpy.rad2deg": None, "numpy.isnan": None, "numpy.isfinite": None,
    "numpy.radians": None, "numpy.degrees": None, "numpy.real": None, "numpy.imag": None, "numpy.conj": None,
    "numpy.conjugate": None,
}
_BINARY = [
    "numpy.add", "numpy.subtract", "numpy.multiply", "numpy.divide", "numpy.true_divide", "numpy.power",
    "numpy.float_power", "numpy.floor_divide", "numpy.remainder", "numpy.maximum", "numpy.minimum", "numpy.fmax",
    "numpy.fmin", "numpy.hypot", "numpy.arctan2", "numpy.logaddexp", "numpy.logaddexp2", "numpy.greater",
    "numpy.greater_equal", "numpy.less", "numpy.less_equal", "numpy.equal", "numpy.not_equal",
]
_MATH = {"math.sin": math.sin, "math.cos": math.cos, "math.tan": math.tan, "math.exp": math.exp, "math.log": math.log,
         "math.sqrt": math.sqrt, "math.tanh": math.tanh, "math.atan": math.atan, "math.fabs": math.fabs}
_REDUCTIONS = ["numpy.sum", "numpy.mean", "numpy.max", "numpy.min", "numpy.amax", "numpy.amin", "numpy.prod",
               "numpy.var", "numpy.std", "numpy.all", "numpy.any", "numpy.argmax", "numpy.argmin", "numpy.cumsum",
               "numpy.cumprod"]


def _np(key):
    return getattr(np, key.split(".")[1])


SPECS = []
for key, dom in _UNARY.items():
    lo, hi = dom or (0.2, 0.9)
    SPECS.append((key, _unary(_np(key)), [mat(2, 3, lo, hi)], None))
for key in _BINARY:
    SPECS.append((key, _binary(_np(key)), [mat(2, 3), vec(3)], None))
SPECS += [
    ("numpy.add", add_op, [vec(3), num()], None),
    ("numpy.subtract", sub_op, [mat(2, 3), vec(3)], None),
    ("numpy.multiply", mul_op, [num(), mat(2, 3)], None),
    ("numpy.divide", div_op, [vec(3), mat(2, 3)], None),
    ("numpy.power", pow_op, [vec(3), num()], None),
    ("numpy.floor_divide", floordiv_op, [vec(3, 1, 5), num(0.5, 1.0)], None),
    ("numpy.remainder", mod_op, [vec(3, 1, 5), num(0.5, 1.0)], None),
    ("numpy.greater", gt_op, [vec(3), num()], None),
    ("numpy.greater_equal", ge_op, [vec(3), num()], None),
    ("numpy.less", lt_op, [vec(3), num()], None),
    ("numpy.less_equal", le_op, [vec(3), num()], None),
    ("numpy.equal", eq_op, [lambda r: r.integers(0, 2, 3), ints], None),
    ("numpy.not_equal", ne_op, [lambda r: r.integers(0, 2, 3), ints], None),
    ("numpy.negative", neg_op, [vec(3)], None),
    ("numpy.positive", pos_op, [num()], None),
    ("numpy.logical_not", not_op, [lambda r: bool(r.uniform() > 0.5)], None),
    ("numpy.logical_not", _unary(np.logical_not), [boolv(3)], None),
    ("numpy.logical_and", _binary(np.logical_and), [boolv(3), boolv(3)], None),
    ("numpy.logical_or", _binary(np.logical_or), [boolv(3), boolv(3)], None),
    ("numpy.where", where3, [boolv(3), vec(3), num()], None),
    ("numpy.clip", clip_const, [mat(2, 3)], None),
    ("numpy.clip", clip_args, [vec(3), num(0.2, 0.4), num(0.6, 0.8)], None),
    ("builtins.abs", builtin_abs, [num()], None),
    ("builtins.max", builtin_max, [num(), num()], None),
    ("builtins.min", builtin_min, [num(), num()], None),
    ("builtins.float", builtin_float, [num()], None),
    ("builtins.int", builtin_int, [counts, vec(3)], [False, True]),
    ("builtins.round", builtin_round, [counts, vec(3)], [False, True]),
    ("math.floor", math_floor, [counts, vec(3)], [False, True]),
    ("math.ceil", math_ceil, [counts, vec(3)], [False, True]),
    ("builtins.len", builtin_len, [vec(3)], None),
    ("builtins.range", builtin_range, [vec(4)], None),
    ("math.hypot", math_hypot, [num(), num()], None),
    ("math.pow", math_pow, [num(), num()], None),
]
for key, op in _MATH.items():
    SPECS.append((key, _unary(op), [num()], None))
for key in _REDUCTIONS:
    for axis in (None, 1):
        SPECS.append((key, reduce_fn(_np(key), axis), [mat(2, 3)], None))
SPECS += [
    ("numpy.sum", sum_all, [lambda r: r.uniform(0, 1, (2, 3, 2))], None),
    ("numpy.sum", sum_axis0, [mat(2, 3)], None),
    ("numpy.sum", sum_axis_last, [mat(2, 3)], None),
    ("numpy.mean", mean_keepdims, [mat(2, 3)], None),
    ("numpy.std", std_ddof, [mat(3, 2)], None),
    ("numpy.cumsum", cumsum_axis, [mat(2, 3)], None),
    ("numpy.diff", diff_last, [mat(2, 3)], None),
    ("numpy.diff", diff_twice_axis0, [mat(3, 2)], None),
    ("numpy.matmul", matmul_op, [mat(2, 3), vec(3)], None),
    ("numpy.matmul", matmul_op, [vec(2), mat(2, 3)], None),
    ("numpy.matmul", matmul_op, [vec(3), vec(3)], None),
    ("numpy.matmul", matmul_op, [mat(2, 3), mat(3, 4)], None),
    ("numpy.matmul", _binary(np.matmul), [mat(2, 3), vec(3)], None),
    ("numpy.dot", _binary(np.dot), [mat(2, 3), vec(3)], None),
    ("numpy.dot", _binary(np.dot), [vec(3), vec(3)], None),
    ("numpy.dot", _binary(np.dot), [vec(2), mat(2, 3)], None),
    ("numpy.dot", dot_scalar, [num(), vec(3)], None),
    ("numpy.vdot", _binary(np.vdot), [vec(3), vec(3)], None),
    ("numpy.outer", outer, [vec(3), vec(2)], None),
    ("numpy.trace", trace, [mat(3, 3)], None),
    ("numpy.transpose", transpose, [mat(2, 3)], None),
    ("ndarray.T", attr_T, [lambda r: r.uniform(0, 1, (2, 3, 4))], None),
    ("numpy.reshape", reshape_fn, [vec(6)], None),
    ("ndarray.reshape", reshape_method, [mat(3, 2)], None),
    ("numpy.ravel", ravel_fn, [mat(2, 3)], None),
    ("ndarray.ravel", ravel_method, [mat(2, 3)], None),
    ("numpy.expand_dims", expand_front, [vec(3)], None),
    ("numpy.expand_dims", expand_back, [vec(3)], None),
    ("numpy.squeeze", squeeze_fn, [mat(1, 3)], None),
    ("ndarray.shape", shape_attr, [vec(3)], None),
    ("ndarray.ndim", ndim_attr, [mat(2, 3)], None),
    ("numpy.copy", copy_fn, [vec(3)], None),
    ("ndarray.copy", copy_method, [vec(3)], None),
    ("ndarray.astype", astype_method, [vec(3)], None),
    ("numpy.zeros_like", zeros_like_fn, [vec(3)], None),
    ("numpy.ones_like", ones_like_fn, [mat(2, 3)], None),
    ("numpy.empty_like", empty_like_fn, [vec(3)], None),
    ("numpy.zeros", zeros_fn, [num()], None),
    ("numpy.ones", ones_fn, [vec(3)], None),
    ("numpy.empty", empty_fn, [vec(3)], None),
    ("numpy.full", full_fn, [vec(3)], None),
    ("numpy.arange", arange_fn, [vec(3)], None),
    ("numpy.linspace", linspace_fn, [num()], None),
    ("numpy.eye", eye_fn, [vec(3)], None),
    ("numpy.identity", identity_fn, [vec(3)], None),
    ("numpy.array", array_fn, [vec(3)], None),
    ("numpy.asarray", asarray_fn, [vec(3)], None),
    ("getitem", index_scalar, [vec(4), ints], None),
    ("getitem", index_pair, [mat(3, 3), ints, ints], None),
    ("getitem", index_slice, [vec(4)], None),
    ("getitem", index_row, [mat(3, 2), ints], None),
    ("getitem", index_column, [mat(2, 3)], None),
    ("getitem", index_array, [vec(3)], None),
    ("srctrans.runtime.grad_seed", seed, [num()], None),
    ("srctrans.runtime.unbroadcast", unbroadcast_scalar, [vec(3), num()], None),
    ("srctrans.runtime.unbroadcast", unbroadcast_scalar, [num(), num()], None),
    ("srctrans.runtime.unbroadcast", unbroadcast_scalar, [mat(2, 3), vec(3)], None),
    ("srctrans.runtime.unbroadcast", unbroadcast_scalar, [mat(2, 3), mat(2, 1)], None),
    ("srctrans.runtime.unbroadcast", unbroadcast_scalar, [vec(3), mat(2, 3)], None),
    ("srctrans.runtime.unbroadcast", unbroadcast_scalar, [vec(3), vec(3)], None),
    ("srctrans.runtime.dot_grad_x", dot_grad_x, [num(), vec(3), vec(3)], None),
    ("srctrans.runtime.dot_grad_y", dot_grad_y, [num(), vec(3), vec(3)], None),
    ("srctrans.runtime.dot_grad_x", dot_grad_x, [vec(2), mat(2, 3), vec(3)], None),
    ("srctrans.runtime.dot_grad_y", dot_grad_y, [vec(2), mat(2, 3), vec(3)], None),
    # a layer applied to one example (v @ A), and a matrix product per example
    ("srctrans.runtime.dot_grad_x", dot_grad_x, [vec(3), vec(2), mat(2, 3)], None),
    ("srctrans.runtime.dot_grad_y", dot_grad_y, [vec(3), vec(2), mat(2, 3)], None),
    ("srctrans.runtime.dot_grad_x", dot_grad_x, [mat(2, 4), mat(2, 3), mat(3, 4)], None),
    ("srctrans.runtime.dot_grad_y", dot_grad_y, [mat(2, 4), mat(2, 3), mat(3, 4)], None),
    ("srctrans.runtime.tape", tape_filled, [vec(3)], None),
    ("srctrans.runtime.tape", tape_filled, [num()], None),
    ("srctrans.runtime.zeros_like", rt_zeros_like, [vec(3)], None),
    ("srctrans.runtime.zeros_like", rt_zeros_like, [num()], None),
    ("srctrans.runtime.sum_grad", sum_grad_full, [num(), mat(2, 3)], None),
    ("srctrans.runtime.sum_grad", sum_grad_full, [num(), vec(3)], None),
]
# --- array functions and reductions (issue 20) ---
NAN_AT = np.array([[True, False, False], [False, False, True]])


def nan_to_num_op(x):
    return np.nan_to_num(np.where(NAN_AT, np.nan, x), nan=0.5)


def nanmean_nans_op(x):
    return np.nanmean(np.where(NAN_AT, np.nan, x), axis=0)


def nanmax_nans_op(x):
    return np.nanmax(np.where(NAN_AT, np.nan, x))


def nansum_keepdims_op(x):
    return np.nansum(np.where(NAN_AT, np.nan, x), axis=-1, keepdims=True)


SPECS += [
    ("numpy.nan_to_num", _unary(np.nan_to_num), [mat(2, 3)], None),
    ("numpy.nan_to_num", nan_to_num_op, [mat(2, 3)], None),
    ("numpy.nanmean", nanmean_nans_op, [mat(2, 3)], None),
    ("numpy.nanmax", nanmax_nans_op, [mat(2, 3)], None),
    ("numpy.nansum", nansum_keepdims_op, [mat(2, 3)], None),
]
SPECS += [
    ("numpy.real_if_close", _unary(np.real_if_close), [mat(2, 3)], None),
    ("numpy.angle", _unary(np.angle), [mat(2, 3)], None),
]
for key in ["numpy.nansum", "numpy.nanmean", "numpy.nanmax", "numpy.nanmin", "numpy.nanvar", "numpy.nanstd"]:
    for axis in (None, 1):
        SPECS.append((key, reduce_fn(_np(key), axis), [mat(2, 3)], None))
# psum/pmean over this vmap's own axis are tested in test_api.py (their result is not
# per-example); these only check that another axis's collective is left for its vmap.
PASS_THROUGH = [
    ("srctrans.parallel.collectives.psum", psum_other_axis),
    ("srctrans.parallel.collectives.pmean", pmean_other_axis),
    ("srctrans.parallel.collectives.pmax", pmax_other_axis),
    ("srctrans.parallel.collectives.pmin", pmin_other_axis),
    ("srctrans.parallel.collectives.all_gather", all_gather_other_axis),
    ("srctrans.parallel.collectives.axis_index", axis_index_other_axis),
]


# scipy.special's functions of numbers and the helpers of their derivatives: elementwise
def _nary(op, n):
    def f1(x):
        return op(x)

    def f3(x, y, z):
        return op(x, y, z)

    def f4(a, b, c, x):
        return op(a, b, c, x)

    return {1: f1, 2: _binary(op), 3: f3, 4: f4}[n]


def _special_spec(name):
    fn = getattr(sp, name)
    n = getattr(fn, "nin", None) or {"factorial": 1, "hyp1f1": 3, "hyp2f1": 4, "zeta": 2}.get(name, 2)
    makers = [mat(2, 3)] + [vec(3)] * (n - 1)
    if name == "zeta":
        makers = [mat(2, 3, 1.5, 3.0), vec(3)]
    return _nary(fn, n), makers


def _yn2(x):
    return sp.yn(2, x)


def _polygamma2(x):
    return sp.polygamma(2, x)


def _rt_yn2(x):
    return rt.yn(2, x)


def _rt_polygamma3(x):
    return rt.polygamma(3, x)


for _name in SPECIAL_ELEMENTWISE:
    if _name == "yn":
        SPECS.append(("scipy.special.yn", _yn2, [mat(2, 3)], None))
    elif _name == "polygamma":
        SPECS.append(("scipy.special.polygamma", _polygamma2, [mat(2, 3)], None))
    else:
        SPECS.append((f"scipy.special.{_name}", *_special_spec(_name), None))
SPECS.append(("numpy.i0", _unary(np.i0), [mat(2, 3)], None))
for _name, _n in {"jv": 2, "yv": 2, "iv": 2, "ive": 2, "kv": 2, "kve": 2, "gammaln": 1, "erf": 1, "hyp1f1": 3, "hyp2f1": 4, "digamma": 1, "trigamma": 1}.items():
    SPECS.append((f"srctrans.runtime.{_name}", _nary(getattr(rt, _name), _n), [mat(2, 3)] + [vec(3)] * (_n - 1), None))
SPECS.append(("srctrans.runtime.zeta", _nary(rt.zeta, 2), [mat(2, 3, 1.5, 3.0), vec(3)], None))
SPECS.append(("srctrans.runtime.polygamma", _rt_polygamma3, [mat(2, 3)], None))
SPECS.append(("srctrans.runtime.yn", _rt_yn2, [mat(2, 3)], None))


# --- linear algebra on stacks of matrices: well-conditioned (diagonally dominant) and positive
# definite examples


def square(n=3):
    return lambda r: r.uniform(-0.5, 0.5, (n, n)) + 2.0 * np.eye(n)


def spd(n=3):
    def make(r):
        m = r.uniform(-0.5, 0.5, (n, n))
        return m @ m.T + np.eye(n)

    return make


def _matrix_cube(a):
    return np.linalg.matrix_power(a, 3)


def _det_of_stack(a):
    return np.linalg.det(a)


SPECS += [
    ("numpy.linalg.inv", _unary(np.linalg.inv), [square()], None),
    ("numpy.linalg.inv", _unary(np.linalg.inv), [lambda r: np.stack([square(2)(r), square(2)(r)])], None),
    ("numpy.linalg.det", _unary(np.linalg.det), [square()], None),
    ("numpy.linalg.det", _det_of_stack, [lambda r: np.stack([square(2)(r), square(2)(r)])], None),
    ("numpy.linalg.cholesky", _unary(np.linalg.cholesky), [spd()], None),
    ("numpy.linalg.matrix_power", _matrix_cube, [square()], None),
    ("numpy.linalg.solve", _binary(np.linalg.solve), [square(), vec(3)], None),
    ("numpy.linalg.solve", _binary(np.linalg.solve), [square(), mat(3, 2)], [True, False]),
    ("scipy.linalg.expm", _unary(scipy.linalg.expm), [square()], None),
    ("srctrans.runtime.expm", _unary(rt.expm), [square(2)], None),
]


# --- functions along axes


def _cube(shape=(2, 3, 2)):
    return lambda r: r.uniform(0.2, 0.9, shape)


def _swap01(x):
    return np.swapaxes(x, 0, 1)


def _swap_from_end(x):
    return np.swapaxes(x, -1, 0)


def _move(x):
    return np.moveaxis(x, 0, -1)


def _move_tuple(x):
    return np.moveaxis(x, (0, 1), (2, 0))


def _roll0(x):
    return np.roll(x, 1, axis=0)


def _sort0(x):
    return np.sort(x, axis=0)


def _argsort0(x):
    return np.argsort(x, axis=0, kind="stable")


def _repeat1(x):
    return np.repeat(x, 2, axis=1)


def _take1(x):
    return np.take(x, [0, 2], axis=1)


def _take_one(x):
    return np.take(x, 1, axis=0)


def _diagonal(x):
    return np.diagonal(x)


def _diagonal_of_planes(x):
    return np.diagonal(x, 1, 1, 2)


def _triu1(x):
    return np.triu(x, 1)


def _round2(x):
    return np.round(x, 2)


def _full_like(x):
    return np.full_like(x, 2.0)


SPECS += [
    ("numpy.swapaxes", _swap01, [mat(2, 3)], None),
    ("numpy.swapaxes", _swap_from_end, [_cube()], None),
    ("numpy.moveaxis", _move, [_cube()], None),
    ("numpy.moveaxis", _move_tuple, [_cube()], None),
    ("numpy.roll", _roll0, [mat(3, 2)], None),
    ("numpy.sort", _unary(np.sort), [mat(2, 3)], None),
    ("numpy.sort", _sort0, [mat(3, 2)], None),
    ("numpy.argsort", _argsort0, [mat(3, 2)], None),
    ("numpy.repeat", _repeat1, [mat(2, 3)], None),
    ("numpy.take", _take1, [mat(2, 3)], None),
    ("numpy.take", _take_one, [mat(2, 3)], None),
    ("numpy.diagonal", _diagonal, [mat(3, 3)], None),
    ("numpy.diagonal", _diagonal_of_planes, [_cube((2, 3, 3))], None),
    ("numpy.flipud", _unary(np.flipud), [mat(2, 3)], None),
    ("numpy.fliplr", _unary(np.fliplr), [mat(2, 3)], None),
    ("numpy.round", _round2, [mat(2, 3)], None),
    ("numpy.tril", _unary(np.tril), [mat(3, 3)], None),
    ("numpy.triu", _triu1, [_cube((2, 3, 3))], None),
    ("numpy.cross", _binary(np.cross), [vec(3), vec(3)], None),
    ("numpy.cross", _binary(np.cross), [vec(3), mat(2, 3)], None),
    ("numpy.full_like", _full_like, [mat(2, 3)], None),
    ("numpy.ascontiguousarray", _unary(np.ascontiguousarray), [mat(2, 3)], None),
    ("math.erf", _unary(math.erf), [num()], None),
    ("math.lgamma", _unary(math.lgamma), [num(1.5, 3.0)], None),
]
