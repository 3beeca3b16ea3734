"""scipy.stats' densities and distribution functions, written with NumPy and scipy.special.

A user's ``stats.norm.logpdf(x, loc, scale)`` is a call of :func:`norm_logpdf` here (see
:mod:`srctrans.library`): srctrans differentiates, batches and compiles it as it would the
user's own code, through the rules of the functions it calls. The formulas are SciPy's (its
``_logpdf``, ``_cdf`` ... of each distribution), with ``loc`` and ``scale`` as SciPy applies
them; outside a distribution's support the density is 0 (log-density ``-inf``) as in SciPy.
Under ``jit``, ``multivariate_normal``'s ``cov`` must be a matrix (a number is the identity's
multiple without jit). Not covered: SciPy's checks of the parameters (a ``scale`` <= 0 gives SciPy nan and here
what the formula gives), frozen distributions (``stats.norm(0, 1).pdf``), and the derivatives
that need one of a function's parameters SciPy's special functions have no rule for (the
degrees of freedom of ``t.cdf``, ``chi2.cdf``; the shapes of ``beta.cdf``, ``gamma.cdf``).
"""

from __future__ import annotations

import numpy as np
from scipy import special

_LOG_2PI = 1.8378770664093453  # log(2 pi)
_LOG_PI = 1.1447298858494002  # log(pi)
_LOG_2 = 0.6931471805599453


# --- norm -----------------------------------------------------------------------------------------


def norm_logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -0.5 * z * z - 0.5 * _LOG_2PI - np.log(scale)


def norm_pdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return np.exp(-0.5 * z * z) / (2.5066282746310002 * scale)


def norm_cdf(x, loc=0.0, scale=1.0):
    return special.ndtr((x - loc) / scale)


def norm_logcdf(x, loc=0.0, scale=1.0):
    return special.log_ndtr((x - loc) / scale)


def norm_sf(x, loc=0.0, scale=1.0):
    return special.ndtr((loc - x) / scale)


def norm_logsf(x, loc=0.0, scale=1.0):
    return special.log_ndtr((loc - x) / scale)


# --- t --------------------------------------------------------------------------------------------


def t_logpdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    lead = special.gammaln(0.5 * (df + 1.0)) - special.gammaln(0.5 * df) - 0.5 * (np.log(df) + _LOG_PI)
    return lead - 0.5 * (df + 1.0) * np.log1p(z * z / df) - np.log(scale)


def t_pdf(x, df, loc=0.0, scale=1.0):
    return np.exp(t_logpdf(x, df, loc, scale))


def t_cdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    tail = 0.5 * special.betainc(0.5 * df, 0.5, df / (df + z * z))
    return np.where(z > 0, 1.0 - tail, tail)


def t_logcdf(x, df, loc=0.0, scale=1.0):
    return np.log(t_cdf(x, df, loc, scale))


# --- poisson --------------------------------------------------------------------------------------


def poisson_logpmf(k, mu, loc=0.0):
    j = k - loc
    inside = (j >= 0) & (j == np.floor(j))
    js = np.where(inside, j, 0.0)
    return np.where(inside, special.xlogy(js, mu) - special.gammaln(js + 1.0) - mu, -np.inf)


def poisson_pmf(k, mu, loc=0.0):
    return np.exp(poisson_logpmf(k, mu, loc))


def poisson_cdf(k, mu, loc=0.0):
    j = np.floor(k - loc)
    return np.where(j >= 0, special.gammaincc(np.where(j >= 0, j, 0.0) + 1.0, mu), 0.0)


# --- chi2 -----------------------------------------------------------------------------------------


def chi2_logpdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    zs = np.where(z >= 0, z, 1.0)
    inside = special.xlogy(0.5 * df - 1.0, zs) - 0.5 * zs - special.gammaln(0.5 * df) - 0.5 * _LOG_2 * df
    return np.where(z >= 0, inside, -np.inf) - np.log(scale)


def chi2_pdf(x, df, loc=0.0, scale=1.0):
    return np.exp(chi2_logpdf(x, df, loc, scale))


def chi2_cdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return special.gammainc(0.5 * df, 0.5 * np.maximum(z, 0.0))


# --- beta -----------------------------------------------------------------------------------------


def beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    zs = np.where(inside, z, 0.5)
    value = special.xlog1py(b - 1.0, -zs) + special.xlogy(a - 1.0, zs) - special.betaln(a, b)
    return np.where(inside, value, -np.inf) - np.log(scale)


def beta_pdf(x, a, b, loc=0.0, scale=1.0):
    return np.exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return special.betainc(a, b, np.clip(z, 0.0, 1.0))


# --- gamma ----------------------------------------------------------------------------------------


def gamma_logpdf(x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    zs = np.where(z >= 0, z, 1.0)
    inside = special.xlogy(a - 1.0, zs) - zs - special.gammaln(a)
    return np.where(z >= 0, inside, -np.inf) - np.log(scale)


def gamma_pdf(x, a, loc=0.0, scale=1.0):
    return np.exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return special.gammainc(a, np.maximum(z, 0.0))


# --- dirichlet (x: K numbers, or K rows of points; alpha: K numbers) ------------------------------


def dirichlet_logpdf(x, alpha):
    log_beta = np.sum(special.gammaln(alpha)) - special.gammaln(np.sum(alpha))
    return np.sum(special.xlogy(alpha - 1.0, x.T).T, axis=0) - log_beta


def dirichlet_pdf(x, alpha):
    return np.exp(dirichlet_logpdf(x, alpha))


# --- multivariate_normal (x: one point of k numbers or n rows of points; cov: a k x k matrix) -----


def multivariate_normal_logpdf(x, mean=0.0, cov=1.0):
    if len(np.shape(cov)) < 2:  # a number (a multiple of the identity)
        cov = cov * np.eye(np.shape(x)[-1])
    lower = np.linalg.cholesky(cov)
    white = np.linalg.solve(lower, (x - mean).T)
    log_det = 2.0 * np.sum(np.log(np.diagonal(lower)))
    return -0.5 * (lower.shape[0] * _LOG_2PI + log_det + np.sum(white * white, axis=0))


def multivariate_normal_pdf(x, mean=0.0, cov=1.0):
    return np.exp(multivariate_normal_logpdf(x, mean, cov))


def multivariate_normal_entropy(mean=0.0, cov=1.0):
    if len(np.shape(cov)) < 2:
        cov = cov * np.eye(np.size(mean))
    lower = np.linalg.cholesky(cov)
    return 0.5 * lower.shape[0] * (1.0 + _LOG_2PI) + np.sum(np.log(np.diagonal(lower)))


METHODS = {
    (name.rsplit("_", 1)[0], name.rsplit("_", 1)[1]): fn
    for name, fn in dict(globals()).items()
    if callable(fn) and not name.startswith("_") and name.rsplit("_", 1)[-1] in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "pmf", "logpmf", "entropy")
}
