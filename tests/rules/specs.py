"""One spec per derivative rule: a function exercising it and a point in its domain.

Each entry of ``srctrans.rules.derivatives.DERIVATIVES`` has a spec here (a test
checks that). Functions are plain module-level lambdas, one per line, so srctrans
finds their source; arguments come from ``ARGS`` makers seeded per test.
"""

import math

import numpy as np
import scipy.integrate
import scipy.linalg
from scipy import special

import srctrans.runtime as rt

B = np.array([0.3, -0.7, 1.1, 0.2])  # a constant broadcast against (3, 4) inputs
# columns with no, one, two and three zeros (rows with three, two and one)
ZEROS = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])


def pos(rng, *shape):
    return rng.uniform(0.5, 1.5, shape)


def unit(rng, *shape):
    return rng.uniform(-0.8, 0.8, shape)


def normal(rng, *shape):
    return rng.standard_normal(shape)


def above1(rng, *shape):
    return rng.uniform(1.2, 2.0, shape)


def _sici(x):
    si, ci = special.sici(x)
    return si * ci + ci


def _sici_si(x):
    si, _ = special.sici(x)  # (the cosine integral unused)
    return si * si


def _fresnel(x):
    s, c = special.fresnel(x)
    return s * c + s


def _frexp(x):
    m, e = np.frexp(x)
    return m * m * e + np.sin(m)


def _frexp_mantissa(x):
    m, _ = np.frexp(x)
    return m * B[:3]


def _away_from_powers_of_two(rng, *shape):
    """Numbers whose mantissas lie inside (0.55, 0.95): frexp is smooth there."""
    return rng.uniform(1.1, 1.9, shape) * 2.0 ** rng.integers(-3, 4, shape) * rng.choice([-1.0, 1.0], shape)


def _decay(y, t, a1, a2):
    """autograd's right-hand side in its odeint test."""
    return -np.sqrt(t) - y + a1 - np.mean((y + a2) ** 2)


def _odeint(y0, t, a1, a2):
    return scipy.integrate.odeint(_decay, y0, t, args=(a1, a2), rtol=1e-12, atol=1e-12)


def _growth(t, y, k):
    return -k * y * t


def _odeint_tfirst(y0, k):
    return scipy.integrate.odeint(_growth, y0, np.array([0.0, 0.5, 1.0]), (k,), rtol=1e-12, atol=1e-12, tfirst=True) ** 2


def _lu(a):
    p, low, up = scipy.linalg.lu(a)
    return low @ np.sin(up) + p @ up


def _lu_permuted(a):
    pl, u = scipy.linalg.lu(a, permute_l=True)
    return pl * pl + u


def wellposed(rng, *shape):
    """Matrices (a stack of them, for more than two axes) far from singular."""
    return rng.standard_normal(shape) + 3.0 * np.eye(shape[-1])


def _slogdet_spec(x):
    sign, logdet = np.linalg.slogdet(x)
    return logdet * 2.0 + sign


def _astype_round_trip(x):
    """float32 in float32 out: x's adjoint is float32, whatever the float64 inside (float64 in: float64)."""
    y = np.sin(x.astype(np.float64))
    return y.astype(x.dtype)


def _eigh_spec(x):
    w, v = np.linalg.eigh(x)
    return w * 2.0 + np.sum(v * v, axis=-2) + v[..., 0, :]  # the eigenvectors' sign as LAPACK picks it


def _eigh_upper_spec(x):
    w, v = np.linalg.eigh(x, UPLO="U")
    return w * w, v


def _eigenvalues_spec(x):
    w, _ = np.linalg.eigh(x)
    return w


def _svd_spec(x):
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return u * 2.0, s * s, vt


def _svd_square_spec(x):
    u, s, vt = np.linalg.svd(x)  # full_matrices=True: the same for a square matrix
    return (u * s) @ vt[:, :1] + u[:, :1] * vt[0]


def _qr_spec(x):
    q, r = np.linalg.qr(x)
    return q * 2.0, r


def _qr_r_spec(x):
    _, r = np.linalg.qr(x)
    return r * r


def _lstsq_spec(a, b):
    x, residuals, rank, sv = np.linalg.lstsq(a, b, rcond=None)
    return x * 2.0, residuals, sv


def _lstsq_solution_spec(a, b):
    x, _, _, _ = np.linalg.lstsq(a, b)
    return x


def real_spectrum(rng, *shape):
    """Matrices (a stack of them) with the real eigenvalues 1, 2.5, -1.7: b diag b^-1."""
    b = wellposed(rng, *shape)
    return b @ np.diag([1.0, 2.5, -1.7]) @ np.linalg.inv(b)


def _eig_spec(x):
    w, v = np.linalg.eig(x)
    return w * w, v * 2.0


def _eigenvalues_of_eig_spec(x):
    w, _ = np.linalg.eig(x)
    return w


def _split_spec(x):
    a, b = np.split(x, 2, axis=1)
    return a * a + 2.0 * b


# key -> list of (function, argument makers)
SPECS = {
    # --- binary arithmetic --------------------------------------------------------
    "numpy.add": [
        (lambda x, y: np.add(x, y) * B, (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda x, y: x + y, (lambda r: normal(r, 3), lambda r: float(normal(r)))),
    ],
    "numpy.subtract": [(lambda x, y: np.subtract(x, y) - y, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 1)))],
    "numpy.multiply": [(lambda x, y: np.multiply(x, y) * x, (lambda r: normal(r, 3, 4), lambda r: normal(r, 4)))],
    "numpy.divide": [(lambda x, y: np.divide(x, y) / y, (lambda r: normal(r, 2, 3), lambda r: pos(r, 3)))],
    "numpy.true_divide": [(lambda x, y: np.true_divide(x, y), (lambda r: normal(r, 3), lambda r: pos(r, 3)))],
    "numpy.power": [
        (lambda x, y: np.power(x, y), (lambda r: pos(r, 3, 2), lambda r: normal(r, 2))),
        (lambda x: x ** 3 + x ** 2.5, (lambda r: pos(r, 4),)),
    ],
    "numpy.float_power": [(lambda x, y: np.float_power(x, y), (lambda r: pos(r, 3), lambda r: normal(r, 3)))],
    "numpy.floor_divide": [(lambda x, y: x * np.floor_divide(x, y), (lambda r: r.uniform(2.2, 2.7, 3), lambda r: r.uniform(1.0, 1.05, 3)))],
    "numpy.remainder": [(lambda x, y: np.remainder(x, y) * x, (lambda r: r.uniform(2.2, 2.7, 3), lambda r: r.uniform(1.0, 1.05, 3)))],
    "numpy.maximum": [
        (lambda x, y: np.maximum(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda x: np.maximum(x, 0.1) * x, (lambda r: normal(r, 5),)),  # a Python float: float32 stays float32
    ],
    "numpy.minimum": [
        (lambda x, y: np.minimum(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda x: np.minimum(0.1, x) * x, (lambda r: normal(r, 5),)),
    ],
    "numpy.fmax": [(lambda x, y: np.fmax(x, y), (lambda r: normal(r, 5), lambda r: normal(r, 5)))],
    "numpy.fmin": [(lambda x, y: np.fmin(x, y), (lambda r: normal(r, 5), lambda r: normal(r, 5)))],
    "numpy.hypot": [(lambda x, y: np.hypot(x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.arctan2": [(lambda x, y: np.arctan2(x, y), (lambda r: normal(r, 3), lambda r: pos(r, 3)))],
    "numpy.logaddexp": [(lambda x, y: np.logaddexp(x, y), (lambda r: normal(r, 3, 2), lambda r: normal(r, 2)))],
    "numpy.logaddexp2": [(lambda x, y: np.logaddexp2(x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    # --- unary elementwise ----------------------------------------------------------
    "numpy.negative": [(lambda x: np.negative(x) * x, (lambda r: normal(r, 3),))],
    "numpy.positive": [(lambda x: np.positive(x) * x, (lambda r: normal(r, 3),))],
    "numpy.square": [(lambda x: np.square(x), (lambda r: normal(r, 3, 2),))],
    "numpy.sqrt": [(lambda x: np.sqrt(x), (lambda r: pos(r, 4),))],
    "numpy.cbrt": [(lambda x: np.cbrt(x), (lambda r: pos(r, 4),))],
    "numpy.reciprocal": [(lambda x: np.reciprocal(x), (lambda r: pos(r, 4),))],
    "numpy.exp": [(lambda x: np.exp(x), (lambda r: normal(r, 3, 2),))],
    "numpy.exp2": [(lambda x: np.exp2(x), (lambda r: normal(r, 3),))],
    "numpy.expm1": [(lambda x: np.expm1(x), (lambda r: normal(r, 3),))],
    "numpy.log": [(lambda x: np.log(x), (lambda r: pos(r, 4),))],
    "numpy.log2": [(lambda x: np.log2(x), (lambda r: pos(r, 4),))],
    "numpy.log10": [(lambda x: np.log10(x), (lambda r: pos(r, 4),))],
    "numpy.log1p": [(lambda x: np.log1p(x), (lambda r: pos(r, 4),))],
    "numpy.sin": [(lambda x: np.sin(x), (lambda r: normal(r, 3, 2),))],
    "numpy.cos": [(lambda x: np.cos(x), (lambda r: normal(r, 3),))],
    "numpy.tan": [(lambda x: np.tan(x), (lambda r: unit(r, 3),))],
    "numpy.arcsin": [(lambda x: np.arcsin(x), (lambda r: unit(r, 3),))],
    "numpy.arccos": [(lambda x: np.arccos(x), (lambda r: unit(r, 3),))],
    "numpy.arctan": [(lambda x: np.arctan(x), (lambda r: normal(r, 3),))],
    "numpy.sinh": [(lambda x: np.sinh(x), (lambda r: normal(r, 3),))],
    "numpy.cosh": [(lambda x: np.cosh(x), (lambda r: normal(r, 3),))],
    "numpy.tanh": [(lambda x: np.tanh(x), (lambda r: normal(r, 3),))],
    "numpy.arcsinh": [(lambda x: np.arcsinh(x), (lambda r: normal(r, 3),))],
    "numpy.arccosh": [(lambda x: np.arccosh(x), (lambda r: above1(r, 3),))],
    "numpy.arctanh": [(lambda x: np.arctanh(x), (lambda r: unit(r, 3),))],
    "numpy.abs": [(lambda x: np.abs(x), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.absolute": [(lambda x: np.absolute(x), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.fabs": [(lambda x: np.fabs(x), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.deg2rad": [(lambda x: np.deg2rad(x), (lambda r: normal(r, 3),))],
    "numpy.rad2deg": [(lambda x: np.rad2deg(x), (lambda r: normal(r, 3),))],
    "numpy.radians": [(lambda x: np.radians(x), (lambda r: normal(r, 3),))],
    "numpy.degrees": [(lambda x: np.degrees(x), (lambda r: normal(r, 3),))],
    "numpy.real": [(lambda x: np.real(x) * x, (lambda r: normal(r, 3),))],
    "numpy.conj": [(lambda x: np.conj(x) * x, (lambda r: normal(r, 3),))],
    "numpy.conjugate": [(lambda x: np.conjugate(x) * x, (lambda r: normal(r, 3),))],
    "numpy.imag": [(lambda x: np.imag(x) + x * x, (lambda r: normal(r, 3),))],
    "numpy.sinc": [(lambda x: np.sinc(x), (lambda r: normal(r, 3) + 0.05,))],
    "numpy.clip": [
        (lambda x: np.clip(x, -0.5, 0.5), (lambda r: normal(r, 6),)),
        (lambda x: np.clip(x, a_min=-0.5, a_max=0.5) * x, (lambda r: normal(r, 6),)),
        (lambda x: np.clip(x, a_min=None, a_max=0.3) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.clip(x, None, 0.3) ** 2, (lambda r: normal(r, 5),)),
        (lambda x: np.clip(x, min=-0.3) * x, (lambda r: normal(r, 5),)),
        (lambda x: np.clip(x, min=-0.3, max=0.4) ** 2, (lambda r: normal(r, 3, 4),)),
    ],
    # --- Python builtins and math -----------------------------------------------------
    "builtins.abs": [(lambda x: abs(x) * 2.0, (lambda r: float(normal(r)) + 0.1,))],
    "builtins.max": [(lambda x, y: max(x, y) * x, (lambda r: float(normal(r)), lambda r: float(normal(r))))],
    "builtins.min": [(lambda x, y: min(x, y) * y, (lambda r: float(normal(r)), lambda r: float(normal(r))))],
    "builtins.float": [(lambda x: float(x) * x, (lambda r: float(normal(r)),))],
    "math.sin": [(lambda x: math.sin(x), (lambda r: float(normal(r)),))],
    "math.cos": [(lambda x: math.cos(x), (lambda r: float(normal(r)),))],
    "math.tan": [(lambda x: math.tan(x), (lambda r: float(unit(r)),))],
    "math.exp": [(lambda x: math.exp(x), (lambda r: float(normal(r)),))],
    "math.log": [(lambda x: math.log(x), (lambda r: float(pos(r)),))],
    "math.sqrt": [(lambda x: math.sqrt(x), (lambda r: float(pos(r)),))],
    "math.tanh": [(lambda x: math.tanh(x), (lambda r: float(normal(r)),))],
    "math.atan": [(lambda x: math.atan(x), (lambda r: float(normal(r)),))],
    "math.erf": [(lambda x: math.erf(x), (lambda r: float(normal(r)),))],
    "math.lgamma": [(lambda x: math.lgamma(x), (lambda r: float(pos(r)) + 1.0,))],
    "math.pow": [(lambda x, y: math.pow(x, y), (lambda r: float(pos(r)), lambda r: float(normal(r))))],
    "math.fabs": [(lambda x: math.fabs(x), (lambda r: float(normal(r)) + 0.1,))],
    "scipy.special.expit": [(lambda x: special.expit(x), (lambda r: normal(r, 4),))],
    "scipy.special.erf": [(lambda x: special.erf(x), (lambda r: normal(r, 4),))],
    "scipy.special.gammaln": [(lambda x: special.gammaln(x), (lambda r: pos(r, 4) + 0.5,))],
    "math.hypot": [(lambda x, y: math.hypot(x, y), (lambda r: float(normal(r)), lambda r: float(normal(r))))],
    # --- reductions -------------------------------------------------------------------
    "numpy.sum": [
        (lambda x: np.sum(x), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.sum(x, axis=0), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.sum(x, axis=-1, keepdims=True), (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.mean": [
        (lambda x: np.mean(x), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.mean(x, axis=1), (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.max": [(lambda x: np.max(x, axis=0), (lambda r: normal(r, 3, 4),)), (lambda x: np.max(x), (lambda r: normal(r, 5),))],
    "numpy.min": [(lambda x: np.min(x, axis=1), (lambda r: normal(r, 3, 4),))],
    "numpy.amax": [(lambda x: np.amax(x), (lambda r: normal(r, 3, 4),))],
    "numpy.amin": [(lambda x: np.amin(x, axis=-1), (lambda r: normal(r, 3, 4),))],
    "numpy.prod": [(lambda x: np.prod(x, axis=0), (lambda r: pos(r, 3, 4),)), (lambda x: np.prod(x), (lambda r: pos(r, 4),))],
    "numpy.var": [(lambda x: np.var(x), (lambda r: normal(r, 3, 4),)), (lambda x: np.var(x, axis=0), (lambda r: normal(r, 3, 4),))],
    "numpy.std": [(lambda x: np.std(x, axis=1), (lambda r: normal(r, 3, 4),)), (lambda x: np.std(x, ddof=1), (lambda r: normal(r, 5),))],
    "numpy.cumsum": [(lambda x: np.cumsum(x) * 2.0, (lambda r: normal(r, 3, 4),)), (lambda x: np.cumsum(x, axis=0) * B, (lambda r: normal(r, 3, 4),))],
    "numpy.cumprod": [
        (lambda x: np.cumprod(x, axis=-1) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.cumprod(x), (lambda r: normal(r, 5),)),
        (lambda x: np.cumprod(x * np.array([1.0, 0.0, 1.0, 1.0]), axis=1), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.cumprod(x * np.array([1.0, 0.0, 1.0, 0.0]), axis=1), (lambda r: normal(r, 3, 4),)),  # two zeros in a row
        (lambda x: np.cumprod(x * ZEROS), (lambda r: normal(r, 3, 4),)),  # flattened, zeros
        (lambda x: np.cumprod(x, axis=0), (lambda r: normal(r, 3, 4),)),
    ],
    "scipy.special.logsumexp": [
        (lambda x: special.logsumexp(x), (lambda r: normal(r, 3, 4),)),
        (lambda x: special.logsumexp(x, axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: special.logsumexp(x, axis=-1, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
    ],
    # --- linear algebra ------------------------------------------------------------------
    "numpy.dot": [
        (lambda x, y: np.dot(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x, y: np.dot(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda x, y: np.dot(x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4, 2))),
        (lambda x, y: np.dot(x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4))),
    ],
    "numpy.matmul": [
        (lambda x, y: x @ y, (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x, y: np.matmul(x, y), (lambda r: normal(r, 2, 3), lambda r: normal(r, 3))),
        # stacks of matrices, broadcast against each other and against matrices and vectors
        (lambda x, y: x @ y, (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 2, 4, 5))),
        (lambda x, y: x @ y, (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4, 5))),
        (lambda x, y: x @ y, (lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4, 5))),
        (lambda x, y: x @ y, (lambda r: normal(r, 2, 1, 3, 4), lambda r: normal(r, 3, 4, 2))),
        (lambda x, y: x @ y, (lambda r: normal(r, 4), lambda r: normal(r, 2, 4, 5))),
        (lambda x, y: np.matmul(x, y), (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4))),
    ],
    "numpy.outer": [
        (lambda x, y: np.outer(x, y), (lambda r: normal(r, 3), lambda r: normal(r, 2))),
        (lambda x, y: np.outer(x, y), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2))),
    ],
    "numpy.vdot": [
        (lambda x, y: np.vdot(x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4))),
        (lambda x, y: np.vdot(x, y), (lambda r: normal(r, 2, 3), lambda r: normal(r, 3, 2))),  # flattened
    ],
    "numpy.trace": [
        (lambda x: np.trace(x), (lambda r: normal(r, 3, 3),)),
        (lambda x: np.trace(x) ** 2, (lambda r: normal(r, 3, 3, 2),)),  # one trace per x[:, :, k]
        (lambda x: np.trace(x, 1) * 2.0, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.trace(x, -1, 2, 1) * B[:2], (lambda r: normal(r, 2, 3, 4),)),  # a stack of matrices
    ],
    "numpy.linalg.inv": [
        (lambda x: np.linalg.inv(x), (lambda r: normal(r, 3, 3) + 3.0 * np.eye(3),)),
        (lambda x: np.linalg.inv(x), (lambda r: wellposed(r, 2, 3, 3),)),
    ],
    "numpy.linalg.det": [
        (lambda x: np.linalg.det(x), (lambda r: normal(r, 3, 3) + 2.0 * np.eye(3),)),
        (lambda x: np.linalg.det(x), (lambda r: wellposed(r, 2, 3, 3),)),
    ],
    "numpy.linalg.slogdet": [
        (_slogdet_spec, (lambda r: normal(r, 3, 3) + 2.0 * np.eye(3),)),
        (_slogdet_spec, (lambda r: wellposed(r, 2, 3, 3),)),
    ],
    "numpy.split": [(_split_spec, (lambda r: normal(r, 3, 4),))],
    "numpy.inner": [
        (lambda x, y: np.inner(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4))),
        (lambda x, y: np.inner(x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4))),
        (lambda x, y: np.inner(x, y), (lambda r: normal(r, 4), lambda r: normal(r, 2, 3, 4))),
    ],
    "numpy.tensordot": [
        (lambda x, y: np.tensordot(x, y), (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 3, 4, 2))),
        (lambda x, y: np.tensordot(x, y, axes=1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x, y: np.tensordot(x, y, axes=((0, 2), (1, 0))), (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4, 2, 5))),
    ],
    "numpy.einsum": [
        (lambda x, y: np.einsum("ij,jk->ik", x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x: np.einsum("ii->i", x) * np.einsum("ij->j", x), (lambda r: normal(r, 3, 3),)),
        (lambda x, y, z: np.einsum("ij,j,k", x, y, z), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: normal(r, 2))),
        (lambda x, y: np.einsum("bij,bjk->bik", x, y), (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 2, 4, 2))),
    ],
    "numpy.linalg.solve": [
        (lambda a, b: np.linalg.solve(a, b), (lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3))),
        (lambda a, b: np.linalg.solve(a, b), (lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3, 2))),
        (lambda a, b: np.linalg.solve(a, b), (lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 2, 3, 2))),
        (lambda a, b: np.linalg.solve(a, b), (lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 3))),  # one vector, every matrix
        (lambda a, b: np.linalg.solve(a, b), (lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 3, 2))),  # one matrix, every matrix
    ],
    "numpy.linalg.cholesky": [
        (lambda x: np.linalg.cholesky(x @ x.T + 3.0 * np.eye(3)), (lambda r: normal(r, 3, 3),)),
        (lambda x: np.linalg.cholesky(x), (lambda r: (lambda a: a @ a.T + 3.0 * np.eye(3))(normal(r, 3, 3)),)),
        (lambda x: np.linalg.cholesky(x * x + 3.0 * np.eye(3)), (lambda r: unit(r, 3, 3),)),  # not symmetric: the upper triangle is unread
        (lambda x: np.linalg.cholesky(x @ np.swapaxes(x, 1, 2) + 3.0 * np.eye(3)), (lambda r: normal(r, 2, 3, 3),)),
    ],
    "numpy.linalg.norm": [
        (lambda x: np.linalg.norm(x), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, axis=1) * B[:3], (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, axis=0, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, axis=(1, 2)) * B[:2], (lambda r: normal(r, 2, 3, 4),)),  # a stack of matrices
        (lambda x: np.linalg.norm(x, 2, axis=1) * B[:3], (lambda r: normal(r, 3, 4),)),  # vectors: the 2-norm
        # other orders (issue 20), differentiated once (FIRST_ORDER_SPECS): vector p-norms ...
        (lambda x: np.linalg.norm(x, 1), (lambda r: normal(r, 5),)),
        (lambda x: np.linalg.norm(x, 3, axis=1) * B[:3], (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, 4, axis=0, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, np.inf, axis=-1) * B[:3], (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, -np.inf), (lambda r: normal(r, 5),)),
        # ... and matrix norms
        (lambda x: np.linalg.norm(x, 2), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, -2, axis=(1, 2)) * B[:2], (lambda r: normal(r, 2, 3, 4),)),
        (lambda x: np.linalg.norm(x, "nuc"), (lambda r: normal(r, 4, 3),)),
        (lambda x: np.linalg.norm(x, "nuc", axis=(2, 1)) * B[:2], (lambda r: normal(r, 2, 3, 4),)),
        (lambda x: np.linalg.norm(x, 1, axis=(2, 1)) * B[:2], (lambda r: normal(r, 2, 3, 4),)),
        (lambda x: np.linalg.norm(x, -1), (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, np.inf, axis=(0, 1), keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.linalg.norm(x, -np.inf), (lambda r: normal(r, 3, 4),)),
    ],
    # --- linear algebra (issue 20) ---
    "numpy.linalg.pinv": [
        (lambda x: np.linalg.pinv(x), (lambda r: normal(r, 3, 4),)),  # wide
        (lambda x: np.linalg.pinv(x) * B, (lambda r: normal(r, 4, 3) + 2.0 * np.eye(4, 3),)),  # tall
        (lambda x: np.linalg.pinv(x), (lambda r: wellposed(r, 3, 3),)),
        (lambda x: np.linalg.pinv(x, 1e-10), (lambda r: normal(r, 2, 3, 4),)),  # a stack
    ],
    "numpy.linalg.matrix_power": [
        (lambda x: np.linalg.matrix_power(x, 3), (lambda r: normal(r, 3, 3),)),
        (lambda x: np.linalg.matrix_power(x, 1) * B[:3], (lambda r: normal(r, 3, 3),)),
        (lambda x: np.linalg.matrix_power(x, 0) * x, (lambda r: normal(r, 3, 3),)),
        (lambda x: np.linalg.matrix_power(x, -2), (lambda r: wellposed(r, 3, 3),)),  # inv(x) @ inv(x)
        (lambda x: np.linalg.matrix_power(x, 2), (lambda r: normal(r, 2, 3, 3),)),  # a stack
    ],
    "numpy.linalg.multi_dot": [
        (lambda x, y, z: np.linalg.multi_dot([x, y, z]), (lambda r: normal(r, 2, 3), lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x, y, z: np.linalg.multi_dot((x, y, z)) * 2.0, (lambda r: normal(r, 3), lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),  # vectors at the ends: a number
        (lambda x, y: np.linalg.multi_dot([x, B[:3, None] * x.T, y, x]), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 2))),  # x twice, a constant
        (lambda x, y: np.linalg.multi_dot([x, y]) * B[:3], (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),  # a last vector: a vector
    ],
    "numpy.linalg.eigh": [  # (not symmetric: eigh reads one triangle)
        (_eigh_spec, (lambda r: normal(r, 4, 4),)),
        (_eigh_upper_spec, (lambda r: normal(r, 3, 3),)),
        (_eigenvalues_spec, (lambda r: normal(r, 3, 3),)),
        (_eigh_spec, (lambda r: normal(r, 2, 3, 3),)),  # a stack
    ],
    "numpy.linalg.svd": [
        (_svd_square_spec, (lambda r: normal(r, 3, 3),)),
        (_svd_spec, (lambda r: normal(r, 4, 3),)),  # tall
        (_svd_spec, (lambda r: normal(r, 3, 5),)),  # wide
        (lambda x: np.linalg.svd(x, compute_uv=False) * B[:3], (lambda r: normal(r, 3, 4),)),
        (_svd_spec, (lambda r: normal(r, 2, 4, 3),)),  # a stack
        (lambda x: np.linalg.svd(x, compute_uv=False) ** 2, (lambda r: normal(r, 2, 3, 2),)),
    ],
    "numpy.linalg.qr": [
        (_qr_spec, (lambda r: normal(r, 3, 3),)),
        (_qr_spec, (lambda r: normal(r, 4, 2),)),  # tall
        (_qr_r_spec, (lambda r: normal(r, 4, 3),)),
        (_qr_spec, (lambda r: normal(r, 2, 4, 3),)),  # a stack
    ],
    "numpy.linalg.lstsq": [  # (NumPy's takes one matrix a, no stacks)
        (_lstsq_spec, (lambda r: normal(r, 5, 3), lambda r: normal(r, 5))),  # tall: least squares, residuals
        (_lstsq_spec, (lambda r: normal(r, 4, 2), lambda r: normal(r, 4, 3))),
        (_lstsq_solution_spec, (lambda r: normal(r, 2, 4), lambda r: normal(r, 2))),  # wide: the least norm solution
        (_lstsq_solution_spec, (lambda r: wellposed(r, 3, 3), lambda r: normal(r, 3, 2))),
    ],
    "numpy.linalg.eig": [  # (a real spectrum: complex eigenvalues are refused)
        (_eig_spec, (lambda r: real_spectrum(r, 3, 3),)),
        (_eigenvalues_of_eig_spec, (lambda r: real_spectrum(r, 3, 3),)),
        (_eig_spec, (lambda r: real_spectrum(r, 2, 3, 3),)),  # a stack
    ],
    # --- shape -------------------------------------------------------------------------
    "numpy.transpose": [(lambda x: np.transpose(x) * B, (lambda r: normal(r, 4, 3),))],
    "numpy.reshape": [(lambda x: np.reshape(x, (4, 3)) * B[:3], (lambda r: normal(r, 3, 4),))],
    "numpy.ravel": [(lambda x: np.ravel(x) ** 2, (lambda r: normal(r, 2, 3),))],
    "numpy.squeeze": [(lambda x: np.squeeze(x) * B, (lambda r: normal(r, 1, 4),))],
    "numpy.expand_dims": [(lambda x: np.expand_dims(x, 0) * x, (lambda r: normal(r, 4),))],
    "numpy.copy": [(lambda x: np.copy(x) * x, (lambda r: normal(r, 4),))],
    "srctrans.runtime.at_set": [(lambda x, v: rt.at_set(x, (1, slice(0, 2)), v) * x, (lambda r: normal(r, 3, 4), lambda r: normal(r, 2)))],
    "srctrans.runtime.at_add": [(lambda x, v: rt.at_add(x, np.array([0, 2, 0]), v) * x, (lambda r: normal(r, 4), lambda r: normal(r, 3)))],
    "srctrans.runtime.at_multiply": [(lambda x, v: rt.at_multiply(x, slice(1, 3), v) * x, (lambda r: normal(r, 4), lambda r: normal(r, 2)))],
    "numpy.ascontiguousarray": [(lambda x: np.ascontiguousarray(np.transpose(x)) * B, (lambda r: normal(r, 4, 3),))],
    "numpy.diag": [
        (lambda x: np.diag(x) * B, (lambda r: normal(r, 4),)),
        (lambda x: np.diag(x) ** 2, (lambda r: normal(r, 3, 3),)),
        (lambda x: np.diag(x, 1) * 2.0, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.triu": [(lambda x: np.triu(x) * x, (lambda r: normal(r, 3, 3),)), (lambda x: np.triu(x, -1) ** 2, (lambda r: normal(r, 3, 4),))],
    "numpy.tril": [(lambda x: np.tril(x) * x, (lambda r: normal(r, 3, 3),)), (lambda x: np.tril(x, 1) ** 2, (lambda r: normal(r, 4, 3),))],
    "numpy.swapaxes": [(lambda x: np.swapaxes(x, 0, 1) * B, (lambda r: normal(r, 4, 2),))],
    "numpy.broadcast_to": [(lambda x: np.broadcast_to(x, (3, 4)) * B, (lambda r: normal(r, 4),))],
    "numpy.atleast_1d": [(lambda x: np.atleast_1d(x) * 2.0, (lambda r: float(normal(r)),))],
    "numpy.atleast_2d": [(lambda x: np.atleast_2d(x) * B, (lambda r: normal(r, 4),))],
    "numpy.atleast_3d": [(lambda x: np.atleast_3d(x) * x[None, :, None], (lambda r: normal(r, 4),))],
    "numpy.where": [(lambda x, y: np.where(x > 0.0, x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4)))],
    "numpy.diagonal": [
        (lambda x: np.diagonal(x) * 2.0, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.diagonal(x, 1, 2, 0) ** 2, (lambda r: normal(r, 2, 3, 4),)),
    ],
    "numpy.moveaxis": [(lambda x: np.moveaxis(x, 0, -1) * B, (lambda r: normal(r, 4, 3, 2),))],
    "numpy.diff": [
        (lambda x: np.diff(x) ** 2, (lambda r: normal(r, 5),)),
        (lambda x: np.diff(x, 2) * np.array([0.3, -0.7, 1.1]), (lambda r: normal(r, 5),)),
        (lambda x: np.diff(x, axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.diff(x, 2, 0) ** 2, (lambda r: normal(r, 4, 3),)),
    ],
    "numpy.fliplr": [(lambda x: np.fliplr(x) * B, (lambda r: normal(r, 3, 4),))],
    "numpy.flipud": [(lambda x: np.flipud(x) * B, (lambda r: normal(r, 3, 4),)), (lambda x: np.flipud(x) ** 2, (lambda r: normal(r, 4),))],
    "numpy.flip": [(lambda x: np.flip(x) * B, (lambda r: normal(r, 3, 4),)), (lambda x: np.flip(x, axis=1) * B, (lambda r: normal(r, 3, 4),))],
    "numpy.roll": [(lambda x: np.roll(x, 5) * B, (lambda r: normal(r, 3, 4),)), (lambda x: np.roll(x, -1, axis=1) * B, (lambda r: normal(r, 3, 4),))],
    "numpy.tile": [(lambda x: np.tile(x, (2, 1)) ** 2, (lambda r: normal(r, 3, 4),)), (lambda x: np.tile(x, (3, 1)) * B, (lambda r: normal(r, 4),))],
    "numpy.repeat": [
        (lambda x: np.repeat(x, 2) ** 2, (lambda r: normal(r, 3, 2),)),
        (lambda x: np.repeat(x, np.array([1, 0, 2]), axis=0) ** 2, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.pad": [
        (lambda x: np.pad(x, 1) ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=1.5) ** 2, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.sort": [
        (lambda x: np.sort(x) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.sort(x, axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.sort(x, axis=None) * np.arange(12.0), (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.take": [
        (lambda x: np.take(x, np.array([[0, 2], [2, 5]])) ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.take(x, np.array([3, 0, 3]), axis=1) ** 2, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.take_along_axis": [
        (lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.take_along_axis(x, np.array([[0, 2, 2, 1]]), 0) ** 2, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.array": [
        (lambda x, y: np.array([x, y * 2.0]) ** 2, (lambda r: normal(r, 3), lambda r: normal(r, 3))),
        (lambda x: np.array([x[0], x[1] * x[2], 2.0]) * x[:3], (lambda r: normal(r, 4),)),
        (lambda x: np.array(x) * x, (lambda r: normal(r, 3, 2),)),
    ],
    "numpy.asarray": [(lambda x: np.asarray(x, dtype=np.float64) * x, (lambda r: normal(r, 3),))],
    "numpy.stack": [(lambda x, y: np.stack([x, y], axis=1) ** 2, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4)))],
    "numpy.concatenate": [(lambda x, y: np.concatenate([x, y], axis=1) ** 2, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 2)))],
    "numpy.hstack": [(lambda x, y: np.hstack([x, y]) ** 2, (lambda r: normal(r, 4), lambda r: normal(r, 2)))],
    "numpy.vstack": [(lambda x, y: np.vstack([x, y]) * B, (lambda r: normal(r, 4), lambda r: normal(r, 2, 4)))],
    "ndarray.T": [(lambda x: x.T * B, (lambda r: normal(r, 4, 3),))],
    "ndarray.transpose": [(lambda x: x.transpose() * B, (lambda r: normal(r, 4, 3),))],
    "ndarray.reshape": [
        (lambda x: x.reshape(4, 3) * B[:3], (lambda r: normal(r, 3, 4),)),
        (lambda x: x.reshape((2, 6)) ** 2, (lambda r: normal(r, 3, 4),)),
    ],
    "ndarray.copy": [(lambda x: x.copy() * x, (lambda r: normal(r, 4),))],
    "ndarray.ravel": [(lambda x: x.ravel() * 2.0, (lambda r: normal(r, 2, 2),))],
    "ndarray.flatten": [(lambda x: x.flatten() * B, (lambda r: normal(r, 2, 2),))],
    "ndarray.astype": [
        (lambda x: x.astype(np.float64) * x, (lambda r: normal(r, 3),)),
        (_astype_round_trip, (lambda r: normal(r, 3),)),
    ],
    "getitem": [
        (lambda x: x[1:, 0] * x[0, 1], (lambda r: normal(r, 3, 4),)),
        (lambda x: x[np.array([0, 0, 2])] * 2.0, (lambda r: normal(r, 4),)),
        (lambda x: x[-1, ::2] + x[x > 0.0], (lambda r: normal(r, 3, 4) + 0.05,)) if False else (lambda x: x[-1, ::2] * 3.0, (lambda r: normal(r, 3, 4),)),
    ],
    # --- no derivative: the value is a constant for differentiation ---------------------
    "numpy.sign": [(lambda x: x * np.sign(x), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.floor": [(lambda x: x * np.floor(x), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.ceil": [(lambda x: x * np.ceil(x), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.trunc": [(lambda x: x * np.trunc(x * 3.0), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.rint": [(lambda x: x * np.rint(x * 3.0), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.fix": [(lambda x: x * np.fix(x * 3.0), (lambda r: normal(r, 3) + 0.1,))],
    "numpy.round": [(lambda x: x * np.round(x, 1), (lambda r: normal(r, 3) + 0.01,))],
    "numpy.equal": [(lambda x, y: np.where(np.equal(x, y), x, y * x), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.not_equal": [(lambda x, y: np.where(np.not_equal(x, y), x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.greater": [(lambda x, y: np.where(np.greater(x, y), x, y * y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.greater_equal": [(lambda x, y: np.where(np.greater_equal(x, y), x * x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.less": [(lambda x, y: np.where(np.less(x, y), x, y * y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.less_equal": [(lambda x, y: np.where(np.less_equal(x, y), x * x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.logical_and": [(lambda x, y: np.where(np.logical_and(x > 0, y > 0), x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.logical_or": [(lambda x, y: np.where(np.logical_or(x > 0, y > 0), x * y, y), (lambda r: normal(r, 3), lambda r: normal(r, 3)))],
    "numpy.logical_not": [(lambda x: np.where(np.logical_not(x > 0), x, x * x), (lambda r: normal(r, 3),))],
    "numpy.all": [(lambda x: x * np.all(x > -0.5), (lambda r: normal(r, 3),))],
    "numpy.any": [(lambda x: x * np.any(x > 0.5, axis=None), (lambda r: normal(r, 3),))],
    "numpy.argmax": [(lambda x: x * np.argmax(x), (lambda r: normal(r, 4),))],
    "numpy.argmin": [(lambda x: x * np.argmin(x), (lambda r: normal(r, 4),))],
    "numpy.argsort": [(lambda x: x[np.argsort(x)] * B, (lambda r: normal(r, 4),))],
    "numpy.zeros": [(lambda x: x + np.zeros(3), (lambda r: normal(r, 3),))],
    "numpy.ones": [(lambda x: x * np.ones(3), (lambda r: normal(r, 3),))],
    "numpy.zeros_like": [(lambda x: x + np.zeros_like(x), (lambda r: normal(r, 3),))],
    "numpy.ones_like": [(lambda x: x * np.ones_like(x), (lambda r: normal(r, 3),))],
    "numpy.empty": [(lambda x: x * np.empty(0).size, (lambda r: normal(r, 3),))],
    "numpy.empty_like": [(lambda x: x * np.empty_like(x).shape[0], (lambda r: normal(r, 3),))],
    "numpy.arange": [(lambda x: x * np.arange(3.0), (lambda r: normal(r, 3),))],
    "numpy.eye": [(lambda x: x @ np.eye(3, 4, 1), (lambda r: normal(r, 2, 3),))],
    "numpy.identity": [(lambda x: x @ np.identity(3), (lambda r: normal(r, 2, 3),))],
    "numpy.linspace": [
        (lambda x: x * np.linspace(0.0, 1.0, 3), (lambda r: normal(r, 3),)),
        (lambda x, y: np.linspace(x, y, 5) ** 2, (lambda r: float(normal(r)), lambda r: float(normal(r)))),
        (lambda x, y: np.linspace(x, y, 4, endpoint=False) * B[:3], (lambda r: normal(r, 3), lambda r: normal(r, 3))),
        (lambda y: np.linspace(0.5, y, 1) + np.linspace(y, 2.0, 2, False), (lambda r: float(normal(r)),)),
    ],
    "numpy.full": [(lambda x: np.full((3, 4), x) * B, (lambda r: normal(r, 4),)), (lambda x: x * np.full(3, 2.0), (lambda r: normal(r, 3),))],
    "numpy.full_like": [(lambda x, y: np.full_like(x, y) * x, (lambda r: normal(r, 3, 4), lambda r: float(normal(r))))],
    "numpy.argwhere": [(lambda x: x[np.argwhere(x > 0.0)[:, 0]] * 2.0, (lambda r: normal(r, 5) + 0.05,))],
    "numpy.nonzero": [(lambda x: x[np.nonzero(x > 0.0)[0]] * 2.0, (lambda r: normal(r, 5) + 0.05,))],
    "numpy.searchsorted": [(lambda x: x * np.searchsorted(np.array([-0.5, 0.0, 0.5]), x), (lambda r: normal(r, 5) + 0.05,))],
    "numpy.shape": [(lambda x: x * np.shape(x)[0], (lambda r: normal(r, 3),))],
    "numpy.size": [(lambda x: x * np.size(x), (lambda r: normal(r, 3),))],
    "numpy.isnan": [(lambda x: np.where(np.isnan(x), 0.0, x), (lambda r: normal(r, 3),))],
    "numpy.isfinite": [(lambda x: np.where(np.isfinite(x), x, 0.0), (lambda r: normal(r, 3),))],
    "builtins.len": [(lambda x: x * len(x), (lambda r: normal(r, 3),))],
    "builtins.range": [(lambda x: x * len(range(3)), (lambda r: normal(r, 3),))],
    "builtins.int": [(lambda x: x * int(2.7), (lambda r: normal(r, 3),))],
    "builtins.round": [(lambda x: x * round(x[0]), (lambda r: normal(r, 3) + 1.3,))],
    "builtins.print": [(lambda x: x * 2.0 if print() is None else x, (lambda r: normal(r, 3),))],
    "math.floor": [(lambda x: x * math.floor(x), (lambda r: float(normal(r)) + 0.1,))],
    "math.ceil": [(lambda x: x * math.ceil(x), (lambda r: float(normal(r)) + 0.1,))],
    "ndarray.shape": [(lambda x: x * x.shape[0], (lambda r: normal(r, 3),))],
    "ndarray.ndim": [(lambda x: x * x.ndim, (lambda r: normal(r, 3),))],
    "ndarray.size": [(lambda x: x * x.size, (lambda r: normal(r, 3),))],
    "ndarray.dtype": [(lambda x: x * (x.dtype == np.float64), (lambda r: normal(r, 3),))],
}


# --- array functions and reductions (issue 20) ---
# NaNs in the places of NANS (every column and row keeps a number)
NANS = np.array([[True, False, False, False], [False, True, False, True], [False, False, False, False]])
XP = np.array([-1.0, -0.2, 0.5, 0.9, 2.0])  # interp's points
XS = np.array([-1.5, -1.0, -0.6, 0.0, 0.5, 0.7, 1.9, 2.0, 2.5])  # below, at, between and above them


def _select_spec(x, y):
    xx = x * x
    return np.select([x > 0.5, x < -0.5], [xx, y], 0.0) * B


def _select_default_spec(x, y):
    return np.select([x > 0.3, x > -0.3], [x, 2.0], y) ** 2


def _array_split_spec(x):
    a, b, c = np.array_split(x, 3, axis=1)
    return np.sum(a * a) + np.sum(b * 2.0) + np.sum(c * c * c)


def _vsplit_spec(x):
    a, b = np.vsplit(x, [1])
    return np.sum(a * a) + np.sum(b * 3.0)


def _hsplit_spec(x):
    a, b = np.hsplit(x, 2)
    return a * b + a


def _hsplit_vector_spec(x):
    a, b = np.hsplit(x, [1])
    return np.sum(a * a) + np.sum(b * b * b)


def _dsplit_spec(x):
    a, b = np.dsplit(x, 2)
    return np.sum(a * a) + np.sum(b * 3.0)


def _gradient_spec(f):
    a, b = np.gradient(f, 0.3)
    return np.sum(a * a) + np.sum(b * 3.0 * b)


XC = np.array([0.0, 0.4, 1.1, 1.5, 2.6])  # np.gradient's coordinates


SPECS.update({
    "numpy.nansum": [
        (lambda x: np.nansum(np.where(NANS, np.nan, x)) * 2.0, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nansum(np.where(NANS, np.nan, x), axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nansum(x * x, axis=1, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.nanmean": [
        (lambda x: np.nanmean(np.where(NANS, np.nan, x)) ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanmean(np.where(NANS, np.nan, x), axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanmean(np.where(NANS, np.nan, x), axis=1, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.nanmax": [
        (lambda x: np.nanmax(np.where(NANS, np.nan, x), axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanmax(np.where(NANS, np.nan, x)) * x, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.nanmin": [
        (lambda x: np.nanmin(np.where(NANS, np.nan, x), axis=1, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanmin(x) * 2.0, (lambda r: normal(r, 5),)),
    ],
    "numpy.average": [
        (lambda a: np.average(a) * 2.0, (lambda r: normal(r, 3, 4),)),
        (lambda a: np.average(a, axis=1) ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda a, w: np.average(a, axis=0, weights=w) * B, (lambda r: normal(r, 3, 4), lambda r: pos(r, 3))),
        (lambda a, w: np.average(a, weights=w) * 2.0, (lambda r: normal(r, 3, 4), lambda r: pos(r, 3, 4))),
        (lambda a, w: np.average(a, 1, w, keepdims=True) * a, (lambda r: normal(r, 3, 4), lambda r: pos(r, 4))),
        (lambda a, w: np.average(a, axis=1, weights=w) ** 2, (lambda r: normal(r, 3, 4), lambda r: pos(r, 3, 4))),
    ],
    "numpy.median": [
        (lambda x: np.median(x) * 2.0, (lambda r: normal(r, 5),)),
        (lambda x: np.median(x) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.median(x, axis=0) * B, (lambda r: normal(r, 4, 4),)),
        (lambda x: np.median(x, axis=1, keepdims=True) * x, (lambda r: normal(r, 3, 5),)),
    ],
    "numpy.append": [
        (lambda x, y: np.append(x, y) ** 2, (lambda r: normal(r, 2, 3), lambda r: normal(r, 4))),
        (lambda x, y: np.append(x, y, axis=0) * B, (lambda r: normal(r, 2, 4), lambda r: normal(r, 1, 4))),
        (lambda x, y: np.append(x, y, 1) ** 2, (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 1))),
        (lambda x: np.append(x, 2.0) ** 2, (lambda r: normal(r, 3),)),
    ],
    "numpy.column_stack": [
        (lambda x, y: np.column_stack([x, y]) ** 2, (lambda r: normal(r, 3), lambda r: normal(r, 3, 2))),
        (lambda x, y: np.column_stack((x, y)) * B[:2], (lambda r: normal(r, 4), lambda r: normal(r, 4))),
    ],
    "numpy.kron": [
        (lambda a, b: np.kron(a, b), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 2))),
        (lambda a, b: np.kron(a, b) ** 2, (lambda r: normal(r, 3), lambda r: normal(r, 2))),
        (lambda a, b: np.kron(a, b), (lambda r: normal(r, 2), lambda r: normal(r, 2, 3))),
        (lambda a, b: np.kron(a, b), (lambda r: normal(r, 2, 2), lambda r: normal(r, 3))),
    ],
    "numpy.cross": [
        (lambda a, b: np.cross(a, b), (lambda r: normal(r, 3), lambda r: normal(r, 3))),
        (lambda a, b: np.cross(a, b) ** 2, (lambda r: normal(r, 4, 3), lambda r: normal(r, 3))),
    ],
    "numpy.select": [
        (_select_spec, (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (_select_default_spec, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "numpy.nan_to_num": [
        (lambda x: np.nan_to_num(np.where(NANS, np.nan, x)) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nan_to_num(np.where(NANS, np.inf, x), posinf=2.0) ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nan_to_num(x) * 2.0, (lambda r: float(normal(r)),)),
    ],
    "numpy.rot90": [
        (lambda x: np.rot90(x) * B[:3], (lambda r: normal(r, 3, 4),)),
        (lambda x: np.rot90(x, 2) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.rot90(x, -1, (1, 2)) ** 2, (lambda r: normal(r, 2, 3, 4),)),
    ],
    "numpy.rollaxis": [
        (lambda x: np.rollaxis(x, 2) ** 2, (lambda r: normal(r, 2, 3, 4),)),
        (lambda x: np.rollaxis(x, 0, 3) * B[:2], (lambda r: normal(r, 2, 3, 4),)),
        (lambda x: np.rollaxis(x, -1, 1) ** 2, (lambda r: normal(r, 2, 3, 4),)),
    ],
    "numpy.array_split": [(_array_split_spec, (lambda r: normal(r, 2, 5),))],
    "numpy.vsplit": [(_vsplit_spec, (lambda r: normal(r, 3, 4),))],
    "numpy.hsplit": [(_hsplit_spec, (lambda r: normal(r, 3, 4),)), (_hsplit_vector_spec, (lambda r: normal(r, 4),))],
    "numpy.dsplit": [(_dsplit_spec, (lambda r: normal(r, 2, 3, 4),))],
    "numpy.partition": [
        (lambda x: np.partition(x, 2) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.partition(x, 1, axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.partition(x, 5, axis=None) * np.arange(12.0), (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.convolve": [
        (lambda a, v: np.convolve(a, v), (lambda r: normal(r, 5), lambda r: normal(r, 3))),
        (lambda a, v: np.convolve(a, v) ** 2, (lambda r: normal(r, 2), lambda r: normal(r, 4))),
        (lambda a: np.convolve(a, B) * a[0], (lambda r: normal(r, 3),)),
    ],
    "numpy.interp": [
        (lambda fp: np.interp(XS, XP, fp) ** 2, (lambda r: normal(r, 5),)),
        (lambda fp: np.interp(XS, XP, fp, left=-1.0, right=2.0) * fp[0], (lambda r: normal(r, 5),)),
        (lambda fp: np.interp(0.3, XP, fp) * 2.0, (lambda r: normal(r, 5),)),
    ],
    "numpy.gradient": [
        (lambda f: np.gradient(f) ** 2, (lambda r: normal(r, 5),)),
        (lambda f: np.gradient(f, 0.5, edge_order=2) * B, (lambda r: normal(r, 4),)),
        (lambda f: np.gradient(f, XC, edge_order=2) ** 3, (lambda r: normal(r, 5),)),
        (lambda f: np.gradient(f, XC) ** 3, (lambda r: normal(r, 5),)),
        (_gradient_spec, (lambda r: normal(r, 3, 4),)),
        (lambda f: np.gradient(f, axis=1, edge_order=2) * B, (lambda r: normal(r, 3, 4),)),
    ],
    "scipy.special.digamma": [(lambda x: special.digamma(x), (lambda r: pos(r, 4) + 0.5,))],
    "scipy.special.psi": [(lambda x: special.psi(x), (lambda r: pos(r, 4) + 0.5,))],
    "scipy.special.logit": [(lambda x: special.logit(x), (lambda r: r.uniform(0.1, 0.9, 4),))],
    "scipy.special.xlogy": [
        (lambda x, y: special.xlogy(x, y), (lambda r: normal(r, 3, 2), lambda r: pos(r, 2))),
        (lambda x, y: special.xlogy(x * np.array([1.0, 0.0, 1.0]), y), (lambda r: normal(r, 3), lambda r: pos(r, 3))),
    ],
    "scipy.special.erfc": [(lambda x: special.erfc(x), (lambda r: normal(r, 3, 2),))],
    "scipy.special.erfcx": [(lambda x: special.erfcx(x), (lambda r: normal(r, 4),))],
    "scipy.special.erfinv": [(lambda x: special.erfinv(x), (lambda r: unit(r, 4),))],
    "scipy.special.erfcinv": [(lambda x: special.erfcinv(x), (lambda r: r.uniform(0.2, 1.8, 4),))],
    "scipy.special.ndtr": [(lambda x: special.ndtr(x), (lambda r: normal(r, 4),))],
    "scipy.special.log_ndtr": [(lambda x: special.log_ndtr(x), (lambda r: normal(r, 4),))],
    "scipy.special.ndtri": [(lambda x: special.ndtri(x), (lambda r: r.uniform(0.1, 0.9, 4),))],
    "scipy.special.dawsn": [(lambda x: special.dawsn(x), (lambda r: normal(r, 4),))],
    "scipy.special.gamma": [(lambda x: special.gamma(x), (lambda r: pos(r, 4) + 0.5,))],
    "scipy.special.rgamma": [(lambda x: special.rgamma(x), (lambda r: pos(r, 4) + 0.5,))],
    "scipy.special.loggamma": [(lambda x: special.loggamma(x), (lambda r: pos(r, 4) + 0.5,))],
    "scipy.special.gammasgn": [(lambda x: x * special.gammasgn(x), (lambda r: normal(r, 4) + 0.1,))],
    "scipy.special.beta": [(lambda x, y: special.beta(x, y), (lambda r: pos(r, 3, 2) + 0.5, lambda r: pos(r, 2) + 0.5))],
    "scipy.special.betaln": [(lambda x, y: special.betaln(x, y), (lambda r: pos(r, 3) + 0.5, lambda r: pos(r, 3) + 0.5))],
    "scipy.special.entr": [(lambda x: special.entr(x), (lambda r: pos(r, 4),))],
    "scipy.special.rel_entr": [(lambda x, y: special.rel_entr(x, y), (lambda r: pos(r, 3, 2), lambda r: pos(r, 2)))],
    "scipy.special.kl_div": [(lambda x, y: special.kl_div(x, y), (lambda r: pos(r, 3), lambda r: pos(r, 3)))],
    "scipy.special.xlog1py": [(lambda x, y: special.xlog1py(x, y), (lambda r: normal(r, 3, 2), lambda r: pos(r, 2)))],
    "scipy.special.softmax": [
        (lambda x: special.softmax(x) * B, (lambda r: normal(r, 4),)),
        (lambda x: special.softmax(x, axis=0) ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda x: special.softmax(x, axis=-1) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: special.softmax(x) * x, (lambda r: normal(r, 2, 3),)),
    ],
})

from .specs_runtime import RUNTIME_SPECS  # noqa: E402

SPECS.update(RUNTIME_SPECS)

# (rule, spec index): specs checked to first order only, their rule's second derivative being
# refused with an error (tests/rules/test_derivatives.py checks that): np.linalg.norm's orders
# other than None, 'fro' and 2 for vectors
FIRST_ORDER_SPECS = {("numpy.linalg.norm", i) for i in range(5, len(SPECS["numpy.linalg.norm"]))}


EXPONENTS = np.array([0, 1, -2, 3])  # np.ldexp's integer powers of two, broadcast against (3, 4)

SPECS.update({
    "numpy.nanvar": [
        (lambda x: np.nanvar(x) * 2.0, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanvar(np.where(NANS, np.nan, x), axis=0) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanvar(np.where(NANS, np.nan, x), axis=1, ddof=1, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanvar(np.where(NANS, np.nan, x)), (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.nanstd": [
        (lambda x: np.nanstd(x) * 2.0, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanstd(np.where(NANS, np.nan, x), axis=0, ddof=1) * B, (lambda r: normal(r, 3, 4),)),
        (lambda x: np.nanstd(np.where(NANS, np.nan, x), axis=1, keepdims=True) * x, (lambda r: normal(r, 3, 4),)),
    ],
    "numpy.ldexp": [
        (lambda x: np.ldexp(x, 3) * x, (lambda r: normal(r, 5),)),
        (lambda x: np.ldexp(x, EXPONENTS) * B, (lambda r: normal(r, 3, 4),)),
        # an exponent computed from x: an integer, piecewise constant (frexp's mantissa, by hand)
        (lambda x: np.ldexp(x, -np.frexp(x)[1]) * x, (lambda r: _away_from_powers_of_two(r, 5),)),
    ],
    "numpy.real_if_close": [(lambda x: np.real_if_close(x * x) * B, (lambda r: normal(r, 3, 4),))],
    "numpy.angle": [(lambda x: np.angle(x) * x, (lambda r: normal(r, 5),))],
})

# scipy.special's Bessel functions and their kin (issue 20): every argument with a rule, a stack of
# matrices (shape (2, 3, 2)) for the first argument of each family
SPECS.update({
    "scipy.special.j0": [(lambda x: special.j0(x), (lambda r: normal(r, 4) * 2.0,)), (lambda x: special.j0(x) * x, (lambda r: normal(r, 2, 3, 2),))],
    "scipy.special.j1": [(lambda x: special.j1(x), (lambda r: normal(r, 4) * 2.0,))],
    "scipy.special.jv": [
        (lambda x: special.jv(1.5, x), (lambda r: pos(r, 4) * 2.0,)),
        (lambda x: special.jv(np.array([0.0, 1.0, 2.5]), x), (lambda r: pos(r, 2, 2, 3) * 2.0,)),  # orders broadcast
    ],
    "scipy.special.y0": [(lambda x: special.y0(x), (lambda r: pos(r, 4) * 2.0,))],
    "scipy.special.y1": [(lambda x: special.y1(x), (lambda r: pos(r, 3, 2) * 2.0,))],
    "scipy.special.yv": [(lambda x: special.yv(0.5, x), (lambda r: pos(r, 4) * 2.0,))],
    "scipy.special.yn": [(lambda x: special.yn(2, x), (lambda r: pos(r, 4) * 2.0,))],
    "scipy.special.i0": [(lambda x: special.i0(x), (lambda r: normal(r, 4),)), (lambda x: special.i0(x) * x, (lambda r: normal(r, 2, 3, 2),))],
    "scipy.special.i1": [(lambda x: special.i1(x), (lambda r: normal(r, 4),))],
    "scipy.special.iv": [(lambda x: special.iv(2.5, x), (lambda r: pos(r, 4),))],
    "scipy.special.i0e": [(lambda x: special.i0e(x), (lambda r: normal(r, 4) * 2.0,))],
    "scipy.special.i1e": [(lambda x: special.i1e(x), (lambda r: normal(r, 4) * 2.0,))],
    "scipy.special.ive": [(lambda x: special.ive(1.5, x), (lambda r: pos(r, 4) * 2.0,)), (lambda x: special.ive(2.0, x), (lambda r: normal(r, 4) * 2.0,))],
    "scipy.special.k0": [(lambda x: special.k0(x), (lambda r: pos(r, 4),))],
    "scipy.special.k1": [(lambda x: special.k1(x), (lambda r: pos(r, 4),))],
    "scipy.special.k0e": [(lambda x: special.k0e(x), (lambda r: pos(r, 4),))],
    "scipy.special.k1e": [(lambda x: special.k1e(x), (lambda r: pos(r, 4),))],
    "scipy.special.kv": [(lambda x: special.kv(0.7, x), (lambda r: pos(r, 4),))],
    "scipy.special.kve": [(lambda x: special.kve(1.7, x), (lambda r: pos(r, 4),))],
    "numpy.i0": [(lambda x: np.i0(x), (lambda r: normal(r, 4),)), (lambda x: np.i0(x) * x, (lambda r: normal(r, 2, 3, 2),))],
    "scipy.special.expi": [(lambda x: special.expi(x), (lambda r: normal(r, 4) + 0.1,))],
    "scipy.special.exp1": [(lambda x: special.exp1(x), (lambda r: pos(r, 4),))],
    "scipy.special.polygamma": [(lambda x: special.polygamma(2, x), (lambda r: pos(r, 4),)), (lambda x: special.polygamma(0, x), (lambda r: pos(r, 3, 2),))],
    "scipy.special.multigammaln": [(lambda a: special.multigammaln(a, 3), (lambda r: pos(r, 4) + 2.0,))],
    "scipy.special.gammainc": [(lambda x: special.gammainc(1.7, x), (lambda r: pos(r, 4),))],
    "scipy.special.gammaincc": [(lambda x: special.gammaincc(2.3, x), (lambda r: pos(r, 4),))],
    "scipy.special.betainc": [(lambda x: special.betainc(1.5, 2.5, x), (lambda r: pos(r, 4) * 0.5,))],
    "scipy.special.zeta": [(lambda q: special.zeta(3.0, q), (lambda r: pos(r, 4),))],
    "scipy.special.poch": [(lambda z, m: special.poch(z, m), (lambda r: pos(r, 3, 2) + 1.0, lambda r: pos(r, 2)))],
    "scipy.special.factorial": [(lambda n: special.factorial(n), (lambda r: pos(r, 4) * 3.0,))],
    "scipy.special.boxcox": [(lambda x: special.boxcox(x, 0.3), (lambda r: pos(r, 4),))],
    "scipy.special.boxcox1p": [(lambda x: special.boxcox1p(x, 0.3), (lambda r: pos(r, 4),))],
    "scipy.special.owens_t": [(lambda h, a: special.owens_t(h, a), (lambda r: normal(r, 4), lambda r: normal(r, 4)))],
    "scipy.special.hyp1f1": [(lambda x: special.hyp1f1(0.5, 1.5, x), (lambda r: normal(r, 4),))],
    "scipy.special.hyp2f1": [(lambda x: special.hyp2f1(0.5, 1.0, 1.5, x), (lambda r: pos(r, 4) * 0.5,))],
    "scipy.special.sici": [(_sici, (lambda r: pos(r, 4) * 2.0,)), (_sici_si, (lambda r: normal(r, 2, 3),))],
    "scipy.special.fresnel": [(_fresnel, (lambda r: normal(r, 4),))],
    "scipy.linalg.expm": [
        (lambda a: scipy.linalg.expm(a) @ np.array([0.5, -1.2, 0.8]), (lambda r: 0.5 * normal(r, 3, 3),)),
        (lambda a: scipy.linalg.expm(a), (lambda r: 0.5 * normal(r, 2, 2, 2),)),
    ],
    "numpy.frexp": [(_frexp, (lambda r: _away_from_powers_of_two(r, 4),)), (_frexp_mantissa, (lambda r: _away_from_powers_of_two(r, 2, 2, 3),))],
    "scipy.linalg.solve_sylvester": [
        (lambda a, b, q: scipy.linalg.solve_sylvester(a, b, q), (lambda r: wellposed(r, 3, 3), lambda r: wellposed(r, 2, 2), lambda r: normal(r, 3, 2))),
        (lambda a, b, q: scipy.linalg.solve_sylvester(a, b, q), (lambda r: wellposed(r, 2, 3, 3), lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 2, 3, 3))),
    ],
    "scipy.linalg.sqrtm": [
        (lambda a: scipy.linalg.sqrtm(a), (lambda r: (lambda m: m @ m.T + np.eye(3))(normal(r, 3, 3)),)),
        (lambda a: scipy.linalg.sqrtm(a) @ B[:3], (lambda r: wellposed(r, 2, 3, 3) + 2.0 * np.eye(3),)),
    ],
    "scipy.integrate.odeint": [
        (_odeint, (lambda r: normal(r, 3), lambda r: np.linspace(0.1, 0.2, 4), lambda r: normal(r, 3), lambda r: normal(r, 3))),
        (_odeint_tfirst, (lambda r: normal(r, 2), lambda r: pos(r, 2))),
    ],
    "scipy.linalg.lu": [(_lu, (lambda r: normal(r, 4, 4),)), (_lu_permuted, (lambda r: normal(r, 2, 3, 3),))],
    "scipy.special.log_softmax": [
        (lambda x: special.log_softmax(x) * B, (lambda r: normal(r, 4),)),
        (lambda x: special.log_softmax(x, axis=0) * x, (lambda r: normal(r, 3, 4),)),
        (lambda x: special.log_softmax(x, axis=-1) * B, (lambda r: normal(r, 2, 3, 4),)),
    ],
})
