"""The NumPy and SciPy functions whose gradients autograd's and JAX's test suites check (issue 20).

``PEERS`` names each function by its srctrans rule key (a method such as ``ndarray.sum`` by
its NumPy function, an alias such as ``np.mod`` by its own name: the rule of the object it
names applies) and says whose tests exercise it. Read from the peers' public tests:

- autograd (HIPS/autograd): tests/test_numpy.py, test_systematic.py, test_linalg.py,
  test_scipy.py (test_builtins.py and test_wrappers.py exercise no function beyond these);
- JAX (jax-ml/jax): tests/lax_numpy_test.py (``GRAD_TEST_RECORDS``, ``testOpGradSpecialValue``
  and the other tests calling ``check_grads`` or ``jax.grad``), lax_numpy_reducers_test.py and
  lax_numpy_operators_test.py (their grad tests), linalg_test.py (the tests calling
  ``check_grads``), lax_scipy_special_functions_test.py (the records with ``test_autodiff``)
  and lax_scipy_test.py (its grad tests).

``OWN`` holds cases written here, for what the peers exercise and ``specs.SPECS`` does not
(keywords, axes, stacks of matrices, broadcasting): ``key -> [(function, argument makers)]``.
``cases(key)`` is what tests/rules/test_peer_coverage.py checks: these, then the first spec of
the rule and its first spec on a stack (an argument of three axes or more).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.signal
from scipy import special, stats

from .specs import SPECS, B, normal, pos, unit, wellposed

A, AJ, J = "autograd", "autograd, jax", "jax"

PEERS: dict[str, str] = {
    # --- elementwise, one argument (autograd: test_systematic unary_ufunc_check; JAX: GRAD_TEST_RECORDS)
    "numpy.abs": A, "numpy.absolute": A, "numpy.fabs": A, "numpy.sign": A, "numpy.ceil": A, "numpy.floor": A,
    "numpy.sin": A, "numpy.cos": A, "numpy.tan": A, "numpy.sinh": A, "numpy.cosh": A, "numpy.tanh": AJ,
    "numpy.arcsinh": AJ, "numpy.arccosh": AJ, "numpy.arctanh": AJ,
    "numpy.exp": AJ, "numpy.exp2": A, "numpy.expm1": A, "numpy.log": A, "numpy.log2": A, "numpy.log10": A, "numpy.log1p": A,
    "numpy.sqrt": AJ, "numpy.square": A, "numpy.deg2rad": A, "numpy.degrees": A, "numpy.rad2deg": A, "numpy.radians": A,
    "numpy.real": A, "numpy.real_if_close": A, "numpy.imag": A, "numpy.conj": A, "numpy.conjugate": A, "numpy.angle": A,
    "numpy.sinc": J, "numpy.i0": J, "numpy.ldexp": J, "numpy.frexp": AJ, "numpy.nan_to_num": A, "numpy.clip": A,
    # --- elementwise, two arguments (autograd: binary_ufunc_check, combo_check; JAX: GRAD_TEST_RECORDS)
    "numpy.add": A, "numpy.subtract": A, "numpy.multiply": A, "numpy.true_divide": A, "numpy.remainder": A, "numpy.mod": A,
    "numpy.logaddexp": AJ, "numpy.logaddexp2": AJ, "numpy.maximum": AJ, "numpy.minimum": A, "numpy.fmax": A, "numpy.fmin": A,
    "numpy.where": AJ,
    # --- reductions (autograd: stat_check and test_numpy; JAX: lax_numpy_reducers_test)
    "numpy.sum": A, "numpy.mean": A, "numpy.prod": A, "numpy.max": A, "numpy.min": A, "numpy.var": A, "numpy.std": A,
    "numpy.cumsum": A, "numpy.nanvar": J, "numpy.nanstd": J,
    # --- products
    "numpy.dot": A, "numpy.matmul": A, "numpy.outer": A, "numpy.inner": A, "numpy.tensordot": A, "numpy.einsum": A,
    "numpy.kron": A, "numpy.cross": A, "numpy.trace": A,
    # --- shapes, joins and splits
    "numpy.reshape": A, "ndarray.reshape": A, "numpy.ravel": A, "ndarray.ravel": A, "ndarray.flatten": A,
    "ndarray.astype": A, "numpy.transpose": A, "numpy.moveaxis": A, "numpy.swapaxes": A, "numpy.rollaxis": A,
    "numpy.squeeze": A, "numpy.expand_dims": A, "numpy.atleast_1d": A, "numpy.atleast_2d": A, "numpy.atleast_3d": A,
    "numpy.flipud": A, "numpy.fliplr": A, "numpy.rot90": A, "numpy.roll": A, "numpy.tile": A, "numpy.repeat": AJ,
    "numpy.diag": A, "numpy.diagonal": A, "numpy.triu": A, "numpy.tril": A, "numpy.pad": A, "numpy.diff": A,
    "numpy.gradient": A, "numpy.sort": A, "numpy.partition": A, "numpy.select": A, "numpy.take_along_axis": J,
    "numpy.interp": J, "numpy.linspace": AJ, "numpy.array": AJ, "numpy.append": A, "numpy.concatenate": A,
    "numpy.stack": A, "numpy.hstack": A, "numpy.vstack": A, "numpy.row_stack": A, "numpy.column_stack": A,
    "numpy.split": A, "numpy.array_split": A, "numpy.hsplit": A, "numpy.vsplit": A, "numpy.dsplit": A,
    # --- numpy.linalg (autograd: test_linalg; JAX: linalg_test)
    "numpy.linalg.inv": A, "numpy.linalg.pinv": AJ, "numpy.linalg.solve": A, "numpy.linalg.det": AJ,
    "numpy.linalg.slogdet": AJ, "numpy.linalg.norm": A, "numpy.linalg.eigh": AJ, "numpy.linalg.eig": AJ,
    "numpy.linalg.eigvals": J, "numpy.linalg.cholesky": AJ, "numpy.linalg.svd": AJ, "numpy.linalg.lstsq": J,
    # --- scipy.linalg, scipy.signal, scipy.integrate
    "scipy.linalg.sqrtm": A, "scipy.linalg.solve_sylvester": A, "scipy.linalg.solve_banded": A,
    "scipy.linalg.solve_triangular": J, "scipy.linalg.lu": J, "scipy.linalg.expm": J,
    "scipy.signal.convolve": A, "scipy.integrate.odeint": A,
    # --- scipy.special (autograd: test_scipy; JAX: lax_scipy_special_functions_test, lax_scipy_test)
    "scipy.special.logsumexp": AJ, "scipy.special.expit": AJ, "scipy.special.logit": AJ, "scipy.special.erf": AJ,
    "scipy.special.erfc": AJ, "scipy.special.erfinv": AJ, "scipy.special.erfcinv": A, "scipy.special.gamma": AJ,
    "scipy.special.gammaln": A, "scipy.special.digamma": AJ, "scipy.special.psi": A, "scipy.special.polygamma": A,
    "scipy.special.rgamma": A, "scipy.special.gammasgn": AJ, "scipy.special.multigammaln": A,
    "scipy.special.beta": A, "scipy.special.betaln": AJ, "scipy.special.betainc": A,
    "scipy.special.gammainc": AJ, "scipy.special.gammaincc": AJ,
    "scipy.special.j0": A, "scipy.special.j1": A, "scipy.special.jn": A, "scipy.special.y0": A, "scipy.special.y1": A,
    "scipy.special.yn": A, "scipy.special.i0": AJ, "scipy.special.i1": AJ, "scipy.special.iv": A, "scipy.special.ive": A,
    "scipy.special.i1e": J, "scipy.special.xlogy": J, "scipy.special.xlog1py": J, "scipy.special.entr": J,
    "scipy.special.rel_entr": J, "scipy.special.kl_div": J, "scipy.special.softmax": J, "scipy.special.log_softmax": J,
    "scipy.special.ndtr": J, "scipy.special.log_ndtr": J, "scipy.special.ndtri": J, "scipy.special.loggamma": J,
    "scipy.special.dawsn": J, "scipy.special.erfcx": J, "scipy.special.boxcox": J, "scipy.special.boxcox1p": J,
    "scipy.special.sici": J, "scipy.special.fresnel": J, "scipy.special.factorial": J, "scipy.special.zeta": J,
    "scipy.special.expi": J, "scipy.special.exp1": J, "scipy.special.owens_t": J, "scipy.special.poch": J,
    "scipy.special.hyp1f1": J, "scipy.special.hyp2f1": J,
    # --- scipy.stats (autograd: test_scipy)
    **{f"scipy.stats.{d}.{f}": A for d, fs in {
        "norm": "pdf cdf sf logpdf logcdf logsf", "t": "pdf cdf logpdf logcdf", "poisson": "pmf logpmf cdf",
        "chi2": "pdf cdf logpdf", "beta": "pdf cdf logpdf", "gamma": "pdf cdf logpdf", "dirichlet": "pdf logpdf",
        "multivariate_normal": "pdf logpdf entropy",
    }.items() for f in fs.split()},
}


def _symmetric(rng, *shape):
    a = rng.standard_normal(shape)
    return a + np.swapaxes(a, -1, -2)


def _eigh_lower(x):
    w, v = np.linalg.eigh(x)
    return w * w + np.sum(v * v * w[..., None, :], axis=-1)


def _eigh_upper(x):
    w, v = np.linalg.eigh(x, UPLO="U")
    return w


def _svd_values(x):
    return np.linalg.svd(x, compute_uv=False) ** 2


def _svd_stack(x):
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return s * s + np.sum(u * u, axis=-1)[..., :3]


def _slogdet_stack(x):
    _, logdet = np.linalg.slogdet(x)
    return logdet


def _eig_values_stack(x):
    w, v = np.linalg.eig(x)
    return w * w


def _split_axis(x):
    a, b, c = np.split(x, [1, 3], axis=-1)
    return a * b[..., :1] + c


def _take_along(x):
    return np.take_along_axis(x * np.arange(1.0, 4.0), np.array([[0], [2], [1], [2]]), -1)


B3 = np.array([0.5, -1.2, 0.8])

# key -> [(function, argument makers)]: what the peers exercise beyond the first specs
OWN = {
    # broadcasting between shapes (1,), (1, 4) and (3, 4), as autograd's combo_check and JAX's testOpGrad do
    "numpy.logaddexp": [(lambda x, y: np.logaddexp(x, y), (lambda r: normal(r, 1, 4), lambda r: normal(r, 3, 4)))],
    "numpy.logaddexp2": [(lambda x, y: np.logaddexp2(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 1)))],
    "numpy.maximum": [(lambda x, y: np.maximum(x, y), (lambda r: normal(r, 1), lambda r: normal(r, 3, 4)))],
    "numpy.fmin": [(lambda x, y: np.fmin(x, y), (lambda r: normal(r, 1, 4), lambda r: normal(r, 3, 4)))],
    "numpy.arctanh": [(lambda x: np.arctanh(x), (lambda r: unit(r, 2, 3),))],
    "numpy.arcsinh": [(lambda x: np.arcsinh(x), (lambda r: pos(r, 2, 3) * 3.0,))],
    "numpy.mod": [(lambda x, y: np.mod(x, y) * x, (lambda r: r.uniform(2.2, 2.7, (2, 3)), lambda r: r.uniform(1.0, 1.05, 3)))],
    "numpy.true_divide": [(lambda x, y: np.true_divide(x, y), (lambda r: normal(r, 2, 3), lambda r: -pos(r, 3)))],
    "numpy.where": [(lambda x, y: np.where(x > 0.0, x * y, y), (lambda r: normal(r, 3, 4) + 0.05, lambda r: normal(r, 4)))],
    # reductions over several axes, keepdims, on stacks
    "numpy.sum": [(lambda x: np.sum(x, axis=(0, 2)), (lambda r: normal(r, 2, 3, 4),))],
    "numpy.mean": [(lambda x: np.mean(x, axis=(1, 2), keepdims=True) * x, (lambda r: normal(r, 2, 3, 4),))],
    "numpy.max": [(lambda x: np.max(x, axis=1, keepdims=True) * x, (lambda r: normal(r, 2, 3, 4),))],
    "numpy.min": [(lambda x: np.min(x, axis=-1, keepdims=True), (lambda r: normal(r, 2, 3, 4),))],
    "numpy.prod": [(lambda x: np.prod(x, axis=2), (lambda r: pos(r, 2, 3, 4),))],
    "numpy.var": [(lambda x: np.var(x, axis=1, ddof=1), (lambda r: normal(r, 2, 3, 4),))],
    "numpy.std": [(lambda x: np.std(x, axis=0, ddof=1), (lambda r: normal(r, 3, 2, 4),))],
    "numpy.cumsum": [(lambda x: np.cumsum(x, axis=1) * B, (lambda r: normal(r, 2, 3, 4),))],
    # products: broadcasting stacks, autograd's tensordot axes, einsum with ellipses
    "numpy.matmul": [(lambda x, y: x @ y, (lambda r: normal(r, 1, 2, 2), lambda r: normal(r, 3, 2, 1)))],
    "numpy.tensordot": [
        (lambda x, y: np.tensordot(x, y, axes=((-1,), (0,))), (lambda r: normal(r, 2, 6), lambda r: normal(r, 6, 3))),
        (lambda x, y: np.tensordot(x, y, axes=0), (lambda r: normal(r, 4), lambda r: normal(r, 2, 3))),
    ],
    "numpy.einsum": [
        (lambda x, y, z: np.einsum("ijk,lji,lli->lki", x, y, z), (lambda r: normal(r, 3, 4, 4), lambda r: normal(r, 4, 4, 3), lambda r: normal(r, 4, 4, 3))),
    ],
    "numpy.inner": [(lambda x, y: np.inner(x, y), (lambda r: normal(r, 2, 3), lambda r: normal(r, 4, 3)))],
    "numpy.trace": [(lambda x: np.trace(x, offset=1, axis1=1, axis2=2), (lambda r: normal(r, 2, 3, 4),))],
    # shapes
    "numpy.transpose": [(lambda x: np.transpose(x, (1, 2, 0)) * B[:2], (lambda r: normal(r, 2, 4, 3),))],
    "numpy.moveaxis": [(lambda x: np.moveaxis(x, 0, 2) * B[:2], (lambda r: normal(r, 2, 3, 4),))],
    "numpy.repeat": [(lambda x: np.repeat(x, 2, axis=1) ** 2, (lambda r: normal(r, 2, 3, 4),))],
    "numpy.tile": [(lambda x: np.tile(x, (1, 4, 1, 2)) ** 2, (lambda r: normal(r, 2, 1, 3, 1),))],
    "numpy.diff": [(lambda x: np.diff(x, n=2, axis=1) ** 2, (lambda r: normal(r, 5, 5, 5),))],
    "numpy.gradient": [(lambda x: np.gradient(x, axis=-1) ** 2, (lambda r: normal(r, 5, 5),))],
    "numpy.atleast_3d": [(lambda x: np.atleast_3d(x) * B3[:, None], (lambda r: normal(r, 2, 3),))],
    "numpy.diagonal": [(lambda x: np.diagonal(x, 1, 0, 2) ** 2, (lambda r: normal(r, 3, 2, 4),))],
    "numpy.triu": [(lambda x: np.triu(x, 1) ** 2, (lambda r: normal(r, 2, 4, 4),))],
    "numpy.tril": [(lambda x: np.tril(x, -1) ** 2, (lambda r: normal(r, 2, 4, 4),))],
    "numpy.roll": [(lambda x: np.roll(x, 2) * x, (lambda r: normal(r, 3, 4),))],
    "numpy.partition": [(lambda x: np.partition(x, 3) * np.arange(7.0), (lambda r: r.permutation(7) * 0.5 + unit(r, 7) * 0.1,))],  # values apart
    "numpy.split": [(_split_axis, (lambda r: normal(r, 2, 3, 4),))],
    "numpy.take_along_axis": [(_take_along, (lambda r: normal(r, 4, 3),))],
    # numpy.linalg on stacks, both triangles of eigh, singular values alone
    "numpy.linalg.inv": [(lambda x: np.linalg.inv(x) @ x[..., 0, :, None], (lambda r: wellposed(r, 2, 2, 3, 3),))],
    "numpy.linalg.solve": [(lambda a, b: np.linalg.solve(a, b), (lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 2, 3, 1)))],
    "numpy.linalg.det": [(lambda x: np.linalg.det(x), (lambda r: wellposed(r, 2, 2, 3, 3),))],
    "numpy.linalg.slogdet": [(_slogdet_stack, (lambda r: wellposed(r, 3, 4, 4),))],
    "numpy.linalg.eigh": [(_eigh_lower, (lambda r: _symmetric(r, 2, 3, 3),)), (_eigh_upper, (lambda r: _symmetric(r, 3, 3, 3),))],
    "numpy.linalg.eig": [(_eig_values_stack, (lambda r: (lambda b: b @ np.diag([1.0, 2.5, -1.7]) @ np.linalg.inv(b))(wellposed(r, 2, 3, 3)),))],
    "numpy.linalg.svd": [(_svd_values, (lambda r: normal(r, 2, 4, 3),)), (_svd_stack, (lambda r: normal(r, 2, 3, 5),))],
    "numpy.linalg.cholesky": [(lambda x: np.linalg.cholesky(x @ np.swapaxes(x, -1, -2) + 3.0 * np.eye(3)), (lambda r: normal(r, 3, 3, 3),))],
    "numpy.linalg.norm": [(lambda x: np.linalg.norm(x, "fro", axis=(1, 2)), (lambda r: normal(r, 2, 3, 4),))],
    "numpy.linalg.pinv": [(lambda x: np.linalg.pinv(x), (lambda r: normal(r, 2, 4, 3),))],
    "scipy.special.logsumexp": [(lambda x: special.logsumexp(x, axis=(0, 2)), (lambda r: normal(r, 2, 3, 4),))],
    # srctrans.library.numpy_functions
    "numpy.linalg.eigvals": [
        (lambda x: np.linalg.eigvals(x) ** 2, (lambda r: (lambda b: b @ np.diag([1.0, 2.5, -1.7]) @ np.linalg.inv(b))(wellposed(r, 3, 3)),)),
    ],
    "scipy.linalg.solve_triangular": [
        (lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True), (lambda r: wellposed(r, 3, 3), lambda r: normal(r, 3, 2))),
        (lambda a, b: scipy.linalg.solve_triangular(a, b, trans="T", unit_diagonal=True), (lambda r: wellposed(r, 3, 3), lambda r: normal(r, 3))),
    ],
    "scipy.signal.convolve": [(lambda x, y: scipy.signal.convolve(x, y), (lambda r: normal(r, 5), lambda r: normal(r, 3)))],
    "scipy.linalg.solve_banded": [
        (lambda ab, b: scipy.linalg.solve_banded((1, 2), ab, b), (lambda r: normal(r, 4, 5) + np.array([[0.0], [0.0], [4.0], [0.0]]), lambda r: normal(r, 5, 2))),
        (lambda ab, b: scipy.linalg.solve_banded((0, 0), ab, b), (lambda r: pos(r, 1, 3) + 1.0, lambda r: normal(r, 3))),
    ],
    "numpy.row_stack": [(lambda x, y: np.row_stack([x, y * y]), (lambda r: normal(r, 3), lambda r: normal(r, 2, 3)))],
    # scipy.stats (srctrans.library.stats): every argument autograd differentiates, loc and scale
    # broadcast against x as in autograd's combo_check; the parameters no rule covers held fixed
    **{f"scipy.stats.norm.{fn.__name__}": [
        (fn, (lambda r: normal(r, 4), lambda r: normal(r, 4), lambda r: pos(r, 4) + 0.6)),
        (keywords, (lambda r: normal(r, 2, 3), lambda r: pos(r, 3))),
    ] for fn, keywords in (
        (stats.norm.pdf, lambda x, s: stats.norm.pdf(x, scale=s)),
        (stats.norm.cdf, lambda x, s: stats.norm.cdf(x, scale=s)),
        (stats.norm.sf, lambda x, s: stats.norm.sf(x, loc=0.5, scale=s)),
        (stats.norm.logpdf, lambda x, s: stats.norm.logpdf(x, scale=s)),
        (stats.norm.logcdf, lambda x, s: stats.norm.logcdf(x, 0.1, s)),
        (stats.norm.logsf, lambda x, s: stats.norm.logsf(x, scale=s)),
    )},
    "scipy.stats.t.pdf": [(stats.t.pdf, (lambda r: normal(r, 4), lambda r: pos(r, 4) + 2.1, lambda r: normal(r, 4), lambda r: pos(r, 4) + 1.1))],
    "scipy.stats.t.logpdf": [(stats.t.logpdf, (lambda r: normal(r, 4), lambda r: pos(r, 4) + 2.1, lambda r: normal(r, 4), lambda r: pos(r, 4) + 1.1))],
    "scipy.stats.t.cdf": [(lambda x, loc, scale: stats.t.cdf(x, 3.5, loc, scale), (lambda r: normal(r, 4), lambda r: normal(r, 4), lambda r: pos(r, 4) + 0.6))],
    "scipy.stats.t.logcdf": [(lambda x, loc: stats.t.logcdf(x, 2.5, loc), (lambda r: normal(r, 4), lambda r: normal(r, 1)))],
    "scipy.stats.poisson.pmf": [(lambda mu: stats.poisson.pmf(np.array([0.0, 1.0, 3.0, 6.0]), mu), (lambda r: pos(r, 4) * 3.0,))],
    "scipy.stats.poisson.logpmf": [(lambda mu: stats.poisson.logpmf(np.array([0.0, 1.0, 3.0, 6.0]), mu), (lambda r: pos(r, 4) * 3.0,))],
    "scipy.stats.poisson.cdf": [(lambda mu: stats.poisson.cdf(np.array([0.0, 1.0, 3.5, 6.0]), mu), (lambda r: pos(r, 4) * 3.0,))],
    "scipy.stats.chi2.pdf": [(lambda x, df: stats.chi2.pdf(x, df), (lambda r: pos(r, 4) * 2.0, lambda r: pos(r, 4) + 2.5))],
    "scipy.stats.chi2.logpdf": [(lambda x, df: stats.chi2.logpdf(x, df), (lambda r: pos(r, 4) * 2.0, lambda r: pos(r, 4) + 2.5))],
    "scipy.stats.chi2.cdf": [(lambda x: stats.chi2.cdf(x, 3.0), (lambda r: pos(r, 4) * 2.0,))],
    "scipy.stats.beta.pdf": [(lambda x, a, b: stats.beta.pdf(x, a, b), (lambda r: r.uniform(0.1, 0.9, 4), lambda r: pos(r, 4) + 1.0, lambda r: pos(r, 4) + 1.0))],
    "scipy.stats.beta.logpdf": [(lambda x, a, b: stats.beta.logpdf(x, a, b), (lambda r: r.uniform(0.1, 0.9, 4), lambda r: pos(r, 4) + 1.0, lambda r: pos(r, 4) + 1.0))],
    "scipy.stats.beta.cdf": [(lambda x: stats.beta.cdf(x, 2.5, 1.5), (lambda r: r.uniform(0.1, 0.9, 4),))],
    "scipy.stats.gamma.pdf": [(lambda x, a: stats.gamma.pdf(x, a), (lambda r: pos(r, 4) * 2.0, lambda r: pos(r, 4) + 1.5))],
    "scipy.stats.gamma.logpdf": [(lambda x, a, s: stats.gamma.logpdf(x, a, scale=s), (lambda r: pos(r, 4) * 2.0, lambda r: pos(r, 4) + 1.5, lambda r: pos(r, 1)))],
    "scipy.stats.gamma.cdf": [(lambda x: stats.gamma.cdf(x, 2.5), (lambda r: pos(r, 4) * 2.0,))],
    # (a point of the simplex, wherever central differences move it: SciPy checks)
    "scipy.stats.dirichlet.pdf": [(lambda x, alpha: stats.dirichlet.pdf(x / np.sum(x), alpha), (lambda r: r.dirichlet(np.ones(3)), lambda r: pos(r, 3) + 1.0))],
    "scipy.stats.dirichlet.logpdf": [(lambda x, alpha: stats.dirichlet.logpdf(x / np.sum(x, axis=0), alpha), (lambda r: r.dirichlet(np.ones(3), 4).T, lambda r: pos(r, 3) + 1.0))],
    "scipy.stats.multivariate_normal.pdf": [(stats.multivariate_normal.pdf, (lambda r: normal(r, 4, 3), lambda r: normal(r, 3), lambda r: wellposed(r, 3, 3) @ wellposed(r, 3, 3).T))],
    "scipy.stats.multivariate_normal.logpdf": [
        (stats.multivariate_normal.logpdf, (lambda r: normal(r, 3), lambda r: normal(r, 3), lambda r: wellposed(r, 3, 3) @ wellposed(r, 3, 3).T)),
        (lambda x, m: stats.multivariate_normal.logpdf(x, m, 2.0), (lambda r: normal(r, 5, 2), lambda r: normal(r, 2))),
    ],
    "scipy.stats.multivariate_normal.entropy": [(lambda c: stats.multivariate_normal.entropy(np.zeros(3), c), (lambda r: wellposed(r, 3, 3) @ wellposed(r, 3, 3).T,))],
}

# what the peers differentiate and srctrans refuses with NotImplementedError: key -> (function, makers, why)
REFUSED = {
    "numpy.einsum": (lambda x, y: np.einsum("...ij,...jk->...ik", x, y), (lambda r: normal(r, 2, 2, 3), lambda r: normal(r, 3, 4)), "einsum with '...'"),
}


def cases(key: str, rule_key: str | None = None) -> list[tuple]:
    """``(function, argument makers)`` for ``key``: the own cases, then the first spec of its
    rule (``rule_key``: the table entry of the object ``key`` names, np.mod's is np.remainder's)
    and its first spec on a stack (an argument of three axes or more) where it has one."""
    own = list(OWN.get(key, []))
    specs = SPECS.get(rule_key or key, [])
    rng = np.random.default_rng(0)
    chosen = own + specs[:1]
    stacked = [s for s in specs[1:] if any(np.ndim(make(rng)) >= 3 for make in s[1])]
    if stacked and not any(any(np.ndim(make(rng)) >= 3 for make in c[1]) for c in chosen):
        chosen.append(stacked[0])
    return chosen
