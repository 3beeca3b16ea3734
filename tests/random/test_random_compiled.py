"""The samplers of ``srctrans.random`` beyond uniform/normal/randint, compiled with Numba.

Each compiled call must equal the uncompiled call bit for bit (same key, shape,
dtype and parameters).  One compiled function draws from every sampler, with
several keys, shapes (including ``()`` and 0-size) and both float dtypes, so the
test pays for one Numba compile.  Also: bad input under jit, and ``srctrans.jit``
/ ``srctrans.grad`` of user functions that call the samplers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srctrans
import srctrans.random as R

numba = pytest.importorskip("numba")
from numba.core.errors import TypingError  # noqa: E402

import numba_backend.random_overloads  # noqa: E402,F401  (registers the overloads)

P32 = np.array([0.1, 0.5, 0.9, 0.0, 1.0], np.float32)
P64 = np.array([[0.25], [0.75]])
LOGITS = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.7, 0.1, 0.1, 0.1]]))
LOGITS32 = LOGITS[0].astype(np.float32)
A_GAMMA = np.array([0.3, 1.0, 2.5, 7.0])
MEAN = np.array([1.0, -2.0, 0.5])
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
ITEMS = np.arange(10.0, 17.0)
PCHOICE = np.array([0.1, 0.0, 0.3, 0.2, 0.15, 0.05, 0.2])
BOARD = np.arange(12).reshape(4, 3)


def draw_all(key, n):
    """Every sampler; run compiled and uncompiled (the same source).

    Calls whose arguments have the same Numba types share one compiled
    specialization, so the values vary more than the types (each new
    combination of types costs about a second of compile time).
    """
    k1, k2 = R.split(key)
    return (
        # exponential
        R.exponential(key, (n,)),
        R.exponential(k1, (3, 5), np.float32),
        R.exponential(k2, (0, 5), np.float32),
        # gumbel, both modes
        R.gumbel(key, (n,)),
        R.gumbel(k1, (4, 9), np.float64, "high"),
        R.gumbel(k2, (n,), np.float32, "high"),
        R.gumbel(k2, ()),
        # bernoulli: scalar and array p, both modes, shape None and given
        R.bernoulli(key, 0.3, (n,)),
        R.bernoulli(key, 0.5, (0,)),
        R.bernoulli(k1),
        R.bernoulli(k2, P32, (3, 5), "high"),
        R.bernoulli(k2, P64, (2, 3)),
        # truncated_normal: scalar and array bounds, both dtypes
        R.truncated_normal(key, -1.0, 2.0, (n,)),
        R.truncated_normal(key, 3.0, 9.0, (5,)),
        R.truncated_normal(k1, -0.5, 0.5, (n,), np.float32),
        R.truncated_normal(key, -9.0, -4.0, (5,), np.float32),
        R.truncated_normal(k2, np.array([-3.0, 0.0, 1.0]), np.array([3.0, 4.0, 1.5])),
        R.truncated_normal(k2, np.array([-3.0, 0.0, 1.0]), 2.0, (2, 3), np.float32),
        # categorical
        R.categorical(key, LOGITS),
        R.categorical(k1, LOGITS, -1, (n, 3), True),
        R.categorical(k2, LOGITS, -1, (2, 3), False),
        R.categorical(k1, LOGITS32, -1, (n,), True),
        R.categorical(key, LOGITS32, -1, (4,), False),
        R.categorical(k2, LOGITS32, 0, (4, 2), True, "high"),
        # permutation: int and array forms
        R.permutation(key, 10),
        R.permutation(k1, 3000),
        R.permutation(key, 0),
        R.permutation(k2, ITEMS),
        R.permutation(k2, BOARD),
        R.permutation(key, np.arange(5, dtype=np.int32), 0, True),
        # choice
        R.choice(key, 10, (n,), True),
        R.choice(k1, 7, (5,), False),
        R.choice(key, 5, (0,), True),
        R.choice(k1, ITEMS, (3, 2)),
        R.choice(k2, ITEMS, (4,), True, PCHOICE),
        R.choice(key, ITEMS, (3,), False, PCHOICE),
        R.choice(k2, 7, (2, 2), False, PCHOICE.astype(np.float32), 0, "high"),
        # gamma, loggamma, beta
        R.gamma(key, 2.5, (n,)),
        R.gamma(k1, 0.3, (n,)),
        R.gamma(k1, A_GAMMA, None, np.float32),
        R.loggamma(key, 0.05, (40,)),
        R.loggamma(k1, A_GAMMA, None, np.float32),
        R.beta(key, 2.0, 5.0, (n,)),
        R.beta(k1, 0.5, 0.5, (50,), np.float32),
        R.beta(k2, A_GAMMA, 1.5),
        # multivariate_normal
        R.multivariate_normal(key, MEAN, COV),
        R.multivariate_normal(k2, MEAN, COV, (2, 3), np.float32),
        R.multivariate_normal(k2, MEAN.astype(np.float32), COV.astype(np.float32), (n,)),
        # keys
        R.key(42),
        R.key(-1),
        R.key_data(key),
        R.wrap_key_data(R.split(key, 3)),
    )


@pytest.fixture(scope="module")
def compiled():
    return numba.njit(draw_all)


KEYS = [R.key(0), R.key(2024), np.array([0xDEADBEEF, 0x12345678], np.uint32)]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_compiled_samplers_match_uncompiled(compiled, k):
    key = KEYS[k]
    n = 2000 if k == 0 else 37
    got = compiled(key, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = draw_all(key, n)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


def test_compiled_long_streams_match(compiled):
    """Long streams reach the rare branches (erfinv tails, gamma rejections)."""
    @numba.njit
    def streams(key, n):
        return (R.exponential(key, (n,), np.float32), R.gumbel(key, (n,)),
                R.truncated_normal(key, -4.0, 4.0, (n,), np.float32),
                R.gamma(key, 0.7, (n // 10,)), R.beta(key, 0.2, 3.0, (n // 10,), np.float32))

    key = R.key(77)
    n = 200_000
    got = streams(key, n)
    want = (R.exponential(key, (n,), np.float32), R.gumbel(key, (n,)),
            R.truncated_normal(key, -4.0, 4.0, (n,), np.float32),
            R.gamma(key, 0.7, (n // 10,)), R.beta(key, 0.2, 3.0, (n // 10,), np.float32))
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"stream {i}")


def test_scalar_kernels_match_vectorized_samplers():
    """The per-element kernels in plain Python agree with the vectorized samplers."""
    k = R.key(5)
    k0, k1 = k
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for dt, sfx in ((np.float32, "f32"), (np.float64, "f64")):
            ex = getattr(R, f"_exponential_{sfx}_at")
            gl = getattr(R, f"_gumbel_low_{sfx}_at")
            gh = getattr(R, f"_gumbel_high_{sfx}_at")
            g1 = getattr(R, f"_gamma_one_{sfx}")
            np.testing.assert_array_equal(np.array([ex(k0, k1, i) for i in range(200)], dt),
                                          R.exponential(k, 200, dt))
            np.testing.assert_array_equal(np.array([gl(k0, k1, i) for i in range(200)], dt),
                                          R.gumbel(k, 200, dt))
            np.testing.assert_array_equal(np.array([gh(k0, k1, i, 200) for i in range(200)], dt),
                                          R.gumbel(k, 200, dt, "high"))
            subs = R.split(k, 30)
            a = dt(0.4)
            np.testing.assert_array_equal(
                np.array([g1(s[0], s[1], a, False) for s in subs], dt), R.gamma(k, a, 30, dt))


def test_compiled_cholesky_kernel_matches_vectorized():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(6, 6))
    cov = m @ m.T + 0.1 * np.eye(6)
    out = np.empty_like(cov)
    numba.njit(R._cholesky_lower)(cov, out)
    np.testing.assert_array_equal(out, R._cholesky_vec(cov))
    np.testing.assert_allclose(out, np.linalg.cholesky(cov), rtol=1e-12, atol=1e-14)
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])   # not positive definite: NaN, as JAX
    assert np.isnan(R._cholesky_vec(bad)[1, 1])


def draw_bounded(key, lo, hi, ilo, ihi):
    """uniform and randint with array bounds that broadcast to the shape (and mixed with scalars)."""
    k1, k2 = R.split(key)
    return (
        R.uniform(key, (4, 3), np.float64, lo, hi),
        R.uniform(k1, (4, 3), np.float32, lo, 7.0),
        R.uniform(k2, (4, 3), np.float64, -1.0, hi),
        R.randint(key, (4, 3), ilo, ihi),
        R.randint(k1, (4, 3), -5, ihi, np.int32),
        R.randint(k2, (4, 3), ilo, 300, np.int8),
        R.randint(k2, (4, 3), ilo, ihi, np.uint16),
        R.randint(key, (5,), 5, 2**40, np.uint16),
        R.randint(k1, (5,), -(2**33) - 7, 2**33 + 3, np.int8),
    )


def test_compiled_array_bounds_match_uncompiled():
    key = R.key(7)
    lo = np.array([0.0, 1.0, -5.0])
    hi = np.array([[1.0], [2.0], [3.0], [100.0]])
    ilo = np.array([0, -200, 10])                      # clipped for int8 / uint16, as uncompiled
    ihi = np.array([[1], [50], [2**40], [10]])         # an empty range (10, 10) gives minval; 2**40
    # wraps to 0 for 8- and 16-bit dtypes, which are drawn as int32 (as uncompiled, and as JAX)
    got = numba.njit(draw_bounded)(key, lo, hi, ilo, ihi)
    want = draw_bounded(key, lo, hi, ilo, ihi)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
    assert np.all((got[0] >= lo) & ((got[0] < hi) | (hi <= lo)))  # lo == hi gives lo
    with pytest.raises(ValueError, match="broadcast to the shape"):
        numba.njit(lambda k, b: R.uniform(k, (2,), np.float64, b, 1.0))(key, np.zeros(3))


@pytest.fixture(scope="module")
def bad_inputs():
    @numba.njit
    def expo(k, shape):
        return R.exponential(k, shape)

    @numba.njit
    def bern(k, p):
        return R.bernoulli(k, p, (3,))

    @numba.njit
    def gam(k, a):
        return R.gamma(k, a)

    @numba.njit
    def mvn_svd(k):
        return R.multivariate_normal(k, MEAN, COV, None, None, "svd")

    @numba.njit
    def choice_axis(k, axis):
        return R.choice(k, ITEMS, (2,), True, None, axis)

    @numba.njit
    def perm_2d_indep(k):
        return R.permutation(k, BOARD, 0, True)

    @numba.njit
    def mk(seed):
        return R.key(seed)

    return expo, bern, gam, mvn_svd, choice_axis, perm_2d_indep, mk


def test_compiled_bad_input_names_the_argument(bad_inputs):
    expo, bern, gam, mvn_svd, choice_axis, perm_2d_indep, mk = bad_inputs
    key = R.key(0)
    with pytest.raises(TypingError, match="argument 'key'"):
        expo(3, (2,))
    with pytest.raises(TypingError, match="argument 'key'"):
        expo(np.zeros(2, np.int64), (2,))
    with pytest.raises(TypeError, match="key"):
        expo(np.zeros(3, np.uint32), (2,))
    with pytest.raises(TypingError, match="argument 'shape'"):
        expo(key, 2.5)
    with pytest.raises(TypingError, match="argument 'shape'"):
        expo(key, (2.0, 3))
    with pytest.raises(TypingError, match="argument 'p'"):
        bern(key, 1)
    with pytest.raises(TypingError, match="argument 'a'"):
        gam(key, "x")
    with pytest.raises(TypingError, match="argument 'method'"):
        mvn_svd(key)
    with pytest.raises(TypingError, match="argument 'axis'"):
        choice_axis(key, 1)
    with pytest.raises(TypingError, match="argument 'independent'"):
        perm_2d_indep(key)
    with pytest.raises(TypingError, match="argument 'seed'"):
        mk(1.5)


# --- srctrans.jit and srctrans.grad of user code that samples -----------------

USER = """
import numpy as np
from srctrans import random

def expo(key):
    return random.exponential(key, (100,))

def mixed(key, p):
    k1, k2 = random.split(key)
    return random.bernoulli(k1, p, (50,)), random.gamma(k2, 2.0, (20,))

def loss(mu, sigma, key):
    z = mu + sigma * random.normal(key, (64,))
    return np.sum(z * z)
"""


def test_srctrans_jit_and_grad_of_samplers(make_module):
    mod = make_module(USER)
    key = R.key(11)
    got = srctrans.jit(mod.expo)(key)
    np.testing.assert_array_equal(got, R.exponential(key, (100,)))
    b, g = srctrans.jit(mod.mixed)(key, 0.25)
    b0, g0 = mod.mixed(key, 0.25)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(g, g0)

    # d/dmu sum((mu + sigma z)^2) = 2 sum(mu + sigma z); d/dsigma = 2 sum((mu + sigma z) z)
    mu, sigma = 0.5, 1.5
    z = R.normal(key, (64,))
    want = (2 * np.sum(mu + sigma * z), 2 * np.sum((mu + sigma * z) * z))
    g_plain = srctrans.grad(mod.loss, argnums=(0, 1))(mu, sigma, key)
    g_jit = srctrans.jit(srctrans.grad(mod.loss, argnums=(0, 1)))(mu, sigma, key)
    for got in (g_plain, g_jit):
        np.testing.assert_allclose(got, want, rtol=1e-12)
