"""scipy.stats' densities in the user's code, through srctrans.library's NumPy source of them.

Each form a user writes (``stats.norm.logpdf``, ``from scipy.stats import norm``,
``scipy.stats.gamma.logpdf``, a global alias, the method itself given to ``grad``) runs the
library's function under every transformation: the values are SciPy's, the gradients match
central differences, ``jit`` gives the uncompiled numbers and ``vmap`` the stacked ones.
(Every covered method, each argument, float32 and compiled: tests/rules/test_peer_coverage.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

import srctrans

MODEL = """
import numpy as np
import scipy
from scipy import stats
from scipy.stats import norm

logpdf = stats.t.logpdf


def loglik(mu, log_s, x):
    return np.sum(stats.norm.logpdf(x, mu, np.exp(log_s)))


def mixed(x, df):
    return np.sum(norm.cdf(x, loc=0.5) * logpdf(x, df) + scipy.stats.gamma.logpdf(x * x + 0.1, 2.0, scale=1.5))


def gaussian(m, x, c):
    return np.sum(stats.multivariate_normal.logpdf(x, m, c @ c.T + np.eye(3)))
"""

X = np.random.default_rng(0).standard_normal(6)


def test_each_form_runs_scipys_numbers_and_differentiates(make_module):
    m = make_module(MODEL)
    value, (g_mu, g_s) = srctrans.value_and_grad(m.loglik, argnums=(0, 1))(0.3, 0.2, X)
    assert value == pytest.approx(np.sum(scipy.stats.norm.logpdf(X, 0.3, np.exp(0.2))), rel=1e-14)
    s = np.exp(0.2)
    assert g_mu == pytest.approx(np.sum((X - 0.3) / s**2), rel=1e-12)
    assert g_s == pytest.approx(np.sum((X - 0.3) ** 2 / s**2 - 1.0), rel=1e-12)
    srctrans.check_grads(m.mixed, (X, 3.5), order=2)
    c = np.random.default_rng(1).standard_normal((3, 3))
    srctrans.check_grads(m.gaussian, (np.ones(3), np.random.default_rng(2).standard_normal((4, 3)), c), order=1)


def test_the_method_itself_is_transformed():
    """As ``jax.grad(jax.scipy.stats.norm.logpdf)``."""
    grad = srctrans.grad(scipy.stats.norm.logpdf, argnums=(0, 1, 2))
    g = grad(0.7, 0.2, 1.5)
    z = (0.7 - 0.2) / 1.5
    np.testing.assert_allclose(g, (-z / 1.5, z / 1.5, (z * z - 1.0) / 1.5), rtol=1e-13)
    assert srctrans.grad(scipy.stats.gamma.logpdf)(2.0, 3.0) == pytest.approx(2.0 / 2.0 - 1.0, rel=1e-13)


@pytest.mark.slow  # compiles
def test_jit_gives_the_uncompiled_numbers_and_vmap_the_stacked_ones(make_module):
    m = make_module(MODEL)
    grad = srctrans.grad(m.mixed)
    np.testing.assert_allclose(srctrans.jit(grad)(X, 3.5), grad(X, 3.5), rtol=1e-12, atol=1e-14)
    mus = np.array([-0.5, 0.0, 0.8])
    batched = srctrans.vmap(srctrans.grad(m.loglik), in_axes=(0, None, None))(mus, 0.1, X)
    np.testing.assert_allclose(batched, [srctrans.grad(m.loglik)(mu, 0.1, X) for mu in mus], rtol=1e-13)


def test_the_generated_file_holds_the_librarys_source(make_module, tmp_path):
    m = make_module(MODEL)
    srctrans.grad(m.loglik)(0.3, 0.2, X)
    text = "\n".join(p.read_text() for p in (tmp_path / "__srctrans__").glob("*.loglik.grad*.py"))
    assert "def norm_logpdf(x, loc=0.0, scale=1.0):" in text
    assert "# stats.py:" in text  # origin comments name the library's lines


def test_vjp_takes_the_defaults_of_arguments_left_out(make_module):
    """``vjp(f, x)`` of ``f(x, a=2.0)``: JAX calls ``f(*primals)``, the rest are constants."""
    m = make_module(
        """
        import numpy as np

        def f(x, a=2.0, b=np.ones(3)):
            return np.sum(np.sin(x) * a * b)
        """
    )
    x = np.arange(3.0)
    out, back = srctrans.vjp(m.f, x)
    assert out == m.f(x)
    (g,) = back(1.0)
    np.testing.assert_allclose(g, 2.0 * np.cos(x), rtol=1e-15)
    out, back = srctrans.vjp(m.f, x, 3.0)
    g, ga = back(1.0)
    np.testing.assert_allclose(g, 3.0 * np.cos(x), rtol=1e-15)
    assert ga == pytest.approx(np.sum(np.sin(x)), rel=1e-15)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1 primals"):
        srctrans.vjp(lambda x, y: x * y, 1.0)
