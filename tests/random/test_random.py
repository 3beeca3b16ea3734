"""Tests of ``srctrans.random``: known answers from JAX, statistics, bad input, Numba.

The known-answer vectors were recorded from JAX by ``record_jax_vectors.py``
(see its docstring); these tests never import JAX.  Statistical tests use fixed
keys, so they are deterministic: a threshold either always passes or never.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import srctrans.random as R

HERE = Path(__file__).resolve().parent
VECTORS = json.loads((HERE / "jax_vectors.json").read_text())


def _dec(v):
    if isinstance(v, dict) and "__array__" in v:
        return np.array(v["__array__"], dtype=v["dtype"]).reshape(v["shape"])
    if isinstance(v, list):
        return tuple(_dec(x) for x in v)
    return v


def _key_of(spec):
    if "seed" in spec:
        return R.key(spec["seed"])
    return np.array(spec["data"], dtype=np.uint32)


def _call(case):
    args = [_dec(a) for a in case["args"]]
    kwargs = {k: _dec(v) for k, v in case["kwargs"].items()}
    if case["fn"] == "key":
        return R.key(args[0])
    if case["fn"] == "_erfinv":
        return R._erfinv(args[0])
    return getattr(R, case["fn"])(_key_of(case["key"]), *args, **kwargs)


# Functions whose values use NumPy's exp / float32 pow / linear algebra: close to
# JAX, not bit for bit (see the module docstring of srctrans.random).
_CLOSE = {"beta", "multivariate_normal", "gamma", "loggamma", "truncated_normal"}
_RTOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-14}


def _case_id(i, case):
    return f"{i:03d}-{case['fn']}-{case['mode']}"


CASES = VECTORS["cases"]


def test_vectors_come_from_jax_default_prng():
    info = VECTORS["info"]
    assert info["jax_threefry_partitionable"] is True
    assert info["jax_default_prng_impl"] == "threefry2x32"
    assert {c["fn"] for c in CASES} >= {
        "key", "split", "fold_in", "bits", "uniform", "normal", "randint", "permutation"}
    assert {c["mode"] for c in CASES if c["fn"] == "normal"} == {"x32", "x64"}


@pytest.mark.parametrize("case", CASES, ids=[_case_id(i, c) for i, c in enumerate(CASES)])
def test_known_answer(case):
    want = _dec(case["out"])
    got = np.asarray(_call(case))
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        assert got.dtype == want.dtype or case["fn"] == "permutation"
        if case["fn"] in _CLOSE:
            np.testing.assert_allclose(got, want, rtol=_RTOL[want.dtype], atol=0)
        else:
            np.testing.assert_array_equal(got, want)  # bit for bit (NaN == NaN)
    else:
        # Integers: exact.  Integer dtypes of x32-mode randint/bits are explicit;
        # permutation/categorical/choice give int64 here (JAX's x64 default).
        if case["fn"] in ("bits", "randint", "split", "fold_in", "key"):
            assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# --- API behaviour ---------------------------------------------------------

def test_key_layout_and_aliases():
    assert R.key(0).dtype == np.uint32 and R.key(0).shape == (2,)
    np.testing.assert_array_equal(R.key(42), [0, 42])
    np.testing.assert_array_equal(R.key(2 ** 32 + 7), [1, 7])
    np.testing.assert_array_equal(R.key(-1), [0xFFFFFFFF, 0xFFFFFFFF])
    np.testing.assert_array_equal(R.key(2 ** 64 - 1), [0xFFFFFFFF, 0xFFFFFFFF])
    np.testing.assert_array_equal(R.key(np.int64(5)), R.key(5))
    assert R.PRNGKey is R.key
    with pytest.raises(OverflowError):
        R.key(2 ** 64)


def test_key_data_roundtrip_and_batches():
    keys = R.split(R.key(3), (2, 3))
    assert keys.shape == (2, 3, 2) and keys.dtype == np.uint32
    np.testing.assert_array_equal(R.key_data(keys), keys)
    np.testing.assert_array_equal(R.wrap_key_data(R.key_data(keys)), keys)
    # each key of a batch is a key
    np.testing.assert_array_equal(R.normal(keys[1, 2], 3), R.normal(R.split(R.key(3), 6)[5], 3))


def test_pure_functions_and_fresh_outputs():
    k = R.key(11)
    a = R.normal(k, (4, 5))
    b = R.normal(k, (4, 5))
    np.testing.assert_array_equal(a, b)
    a[...] = 0                      # outputs are writable and not shared
    np.testing.assert_array_equal(R.normal(k, (4, 5)), b)
    np.testing.assert_array_equal(k, R.key(11))   # the key is not modified


@pytest.mark.parametrize("fn", [R.uniform, R.normal, R.exponential, R.gumbel])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_shapes_and_dtypes(fn, dtype):
    k = R.key(5)
    assert fn(k).dtype == np.float64 and fn(k).shape == ()
    for shape, want in [((), ()), (3, (3,)), ((2, 3), (2, 3)), ([4], (4,)), ((0, 2), (0, 2)),
                        (np.int64(2), (2,))]:
        out = fn(k, shape, dtype)
        assert out.shape == want and out.dtype == dtype and isinstance(out, np.ndarray)
    # a prefix of a stream does not depend on the shape: element i uses counter i
    np.testing.assert_array_equal(fn(k, (2, 3), dtype).ravel(), fn(k, 6, dtype))


def test_uniform_range_and_bounds():
    k = R.key(1)
    u = R.uniform(k, 100_000, minval=-2.0, maxval=3.0)
    assert u.min() >= -2.0 and u.max() < 3.0
    u = R.uniform(k, (2, 3), minval=np.array([0.0, 10.0, 100.0]), maxval=np.array([1.0, 20.0, 1000.0]))
    assert (u >= [0, 10, 100]).all() and (u < [1, 20, 1000]).all()
    with pytest.raises(ValueError):
        R.uniform(k, (2,), minval=np.zeros(3))
    with pytest.raises(ValueError):
        R.uniform(k, 2, dtype=np.int32)


def test_randint_edges():
    k = R.key(2)
    assert R.randint(k, 5, 0, 10).dtype == np.int64
    np.testing.assert_array_equal(R.randint(k, 4, 3, 3), [3, 3, 3, 3])   # empty range -> minval
    np.testing.assert_array_equal(R.randint(k, 4, 7, 2), [7, 7, 7, 7])
    x = R.randint(k, 10_000, -3, 4, dtype=np.int8)
    assert x.dtype == np.int8 and x.min() == -3 and x.max() == 3
    x = R.randint(k, 10_000, 0, 256, dtype=np.uint8)
    assert x.min() == 0 and x.max() == 255
    with pytest.raises(TypeError):
        R.randint(k, 3, 0, 5, dtype=np.float32)


def test_permutation_and_choice_are_consistent():
    k = R.key(9)
    p = R.permutation(k, 1000)
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(np.sort(R.permutation(k, x, axis=1), axis=1), x)
    ind = R.permutation(k, x, independent=True, axis=1)
    np.testing.assert_array_equal(np.sort(ind, axis=1), x)
    c = R.choice(k, 50, (20,), replace=False)
    assert len(set(c.tolist())) == 20
    np.testing.assert_array_equal(c, R.permutation(k, 50)[:20])
    with pytest.raises(ValueError):
        R.choice(k, 5, (6,), replace=False)


# --- bad input -------------------------------------------------------------

SAMPLERS = [
    ("split", lambda k: R.split(k)),
    ("fold_in", lambda k: R.fold_in(k, 1)),
    ("bits", lambda k: R.bits(k, 3)),
    ("uniform", lambda k: R.uniform(k, 3)),
    ("normal", lambda k: R.normal(k, 3)),
    ("truncated_normal", lambda k: R.truncated_normal(k, -1.0, 1.0, 3)),
    ("bernoulli", lambda k: R.bernoulli(k, 0.5, 3)),
    ("categorical", lambda k: R.categorical(k, np.zeros(3))),
    ("randint", lambda k: R.randint(k, 3, 0, 5)),
    ("permutation", lambda k: R.permutation(k, 5)),
    ("choice", lambda k: R.choice(k, 5, (2,))),
    ("exponential", lambda k: R.exponential(k, 3)),
    ("gamma", lambda k: R.gamma(k, 2.0, (3,))),
    ("beta", lambda k: R.beta(k, 2.0, 3.0, (3,))),
    ("multivariate_normal", lambda k: R.multivariate_normal(k, np.zeros(2), np.eye(2))),
]

BAD_KEYS = [
    ("python int", 0),
    ("numpy int", np.uint32(3)),
    ("list", [0, 0]),
    ("float array", np.zeros(2)),
    ("int64 array", np.zeros(2, np.int64)),
    ("wrong length", np.zeros(3, np.uint32)),
    ("batch of keys", np.zeros((2, 2), np.uint32)),
    ("0-d", np.zeros((), np.uint32)),
    ("None", None),
]


@pytest.mark.parametrize("name,call", SAMPLERS, ids=[s[0] for s in SAMPLERS])
@pytest.mark.parametrize("what,bad", BAD_KEYS, ids=[b[0] for b in BAD_KEYS])
def test_bad_key_is_a_type_error_naming_key(name, call, what, bad):
    with pytest.raises(TypeError, match=r"argument 'key'"):
        call(bad)


def test_raw_int_key_error_explains_how_to_make_one():
    with pytest.raises(TypeError, match=r"srctrans\.random\.key\(seed\)"):
        R.normal(42, 3)


@pytest.mark.parametrize("bad", [2.5, "3", None, (2, 3.0), (2, "a"), [1.5], True, np.zeros(2)],
                         ids=repr)
@pytest.mark.parametrize("fn", [R.uniform, R.normal, R.bits, R.exponential])
def test_non_integer_shape_is_a_type_error_naming_shape(fn, bad):
    with pytest.raises(TypeError, match=r"argument 'shape'"):
        fn(R.key(0), bad)


def test_other_argument_errors_name_the_argument():
    k = R.key(0)
    with pytest.raises(TypeError, match=r"argument 'shape'"):
        R.randint(k, 2.0, 0, 3)
    with pytest.raises(TypeError, match=r"argument 'num'"):
        R.split(k, 2.5)
    with pytest.raises(TypeError, match=r"argument 'seed'"):
        R.key(1.5)
    with pytest.raises(TypeError, match=r"argument 'seed'"):
        R.key(R.key(0))
    with pytest.raises(TypeError, match=r"argument 'data'"):
        R.fold_in(k, 1.5)
    with pytest.raises(OverflowError):
        R.fold_in(k, -1)
    with pytest.raises(TypeError, match=r"argument 'keys'"):
        R.key_data(0)
    with pytest.raises(ValueError, match="negative"):
        R.normal(k, (2, -1))


# --- statistics ------------------------------------------------------------

N = 1_000_000
P_MIN = 1e-4   # deterministic keys: these p-values are fixed numbers


def _ks(sample, cdf):
    p = stats.kstest(sample, cdf).pvalue
    assert p > P_MIN, p


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_ks(dtype):
    _ks(R.uniform(R.key(100), N, dtype), stats.uniform.cdf)
    _ks(R.uniform(R.key(101), N, dtype, -3.0, 5.0), stats.uniform(-3.0, 8.0).cdf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_ks_and_moments(dtype):
    z = R.normal(R.key(102), N, dtype).astype(np.float64)
    _ks(z, stats.norm.cdf)
    assert abs(z.mean()) < 5 / np.sqrt(N)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / N)
    # the tails exist and are right: P(|z| > 4) = 6.3e-5
    assert 30 < np.sum(np.abs(z) > 4) < 100


def test_exponential_and_gumbel_ks():
    _ks(R.exponential(R.key(103), N), stats.expon.cdf)
    _ks(R.gumbel(R.key(104), N), stats.gumbel_r.cdf)


def test_truncated_normal_ks():
    x = R.truncated_normal(R.key(105), -1.0, 2.0, (200_000,))
    assert x.min() > -1.0 and x.max() < 2.0
    _ks(x, stats.truncnorm(-1.0, 2.0).cdf)


@pytest.mark.parametrize("a", [0.3, 1.0, 4.5])
def test_gamma_ks(a):
    _ks(R.gamma(R.key(106), a, (200_000,)), stats.gamma(a).cdf)


def test_beta_ks():
    _ks(R.beta(R.key(107), 2.0, 3.0, (200_000,)), stats.beta(2.0, 3.0).cdf)


def _chi2(counts, probs):
    p = stats.chisquare(counts, np.sum(counts) * np.asarray(probs)).pvalue
    assert p > P_MIN, p


def test_bernoulli_rate():
    for p in (0.3, 0.5, 0.01):
        x = R.bernoulli(R.key(108), p, (N,))
        assert x.dtype == np.bool_
        assert abs(x.mean() - p) < 5 * np.sqrt(p * (1 - p) / N)


def test_categorical_chi_square():
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    x = R.categorical(R.key(109), np.log(probs), shape=(N,))
    _chi2(np.bincount(x, minlength=4), probs)
    # batched logits: each row its own distribution
    logits = np.log(np.array([[0.5, 0.5, 0.0 + 1e-300], [0.1, 0.1, 0.8]]))
    y = R.categorical(R.key(110), logits, shape=(100_000, 2))
    _chi2(np.bincount(y[:, 1], minlength=3), [0.1, 0.1, 0.8])
    assert (y[:, 0] < 2).all()


def test_randint_chi_square():
    x = R.randint(R.key(111), N, 0, 10)
    _chi2(np.bincount(x, minlength=10), np.full(10, 0.1))
    y = R.randint(R.key(112), N, -(2 ** 62), 2 ** 62)
    _ks(y / 2.0 ** 62, stats.uniform(-1, 2).cdf)
    z = R.randint(R.key(113), N, -7, 6, dtype=np.int32)
    _chi2(np.bincount(z + 7, minlength=13), np.full(13, 1 / 13))


def test_bits_are_balanced():
    b = R.bits(R.key(114), N)
    ones = np.unpackbits(b.view(np.uint8)).reshape(N, 32).mean(axis=0)
    assert np.all(np.abs(ones - 0.5) < 5 * 0.5 / np.sqrt(N))
    b64 = R.bits(R.key(115), N // 2, np.uint64)
    ones = np.unpackbits(b64.view(np.uint8)).reshape(N // 2, 64).mean(axis=0)
    assert np.all(np.abs(ones - 0.5) < 5 * 0.5 / np.sqrt(N // 2))
    byte_counts = np.bincount(R.bits(R.key(116), N, np.uint8), minlength=256)
    _chi2(byte_counts, np.full(256, 1 / 256))


def _perm_counts(perms):
    codes = perms @ np.array([64, 16, 4, 1])
    _, counts = np.unique(codes, return_counts=True)
    assert len(counts) == 24
    return counts


def test_permutation_uniform_over_permutations():
    # many rows shuffled independently by one key (two rounds of sorting) ...
    x = np.tile(np.arange(4), (100_000, 1))
    _chi2(_perm_counts(R.permutation(R.key(117), x, axis=1, independent=True)),
          np.full(24, 1 / 24))
    # ... and one small permutation per key
    perms = np.array([R.permutation(k, 4) for k in R.split(R.key(118), 2400)])
    _chi2(_perm_counts(perms), np.full(24, 1 / 24))


def test_choice_with_p_chi_square():
    p = np.array([0.1, 0.2, 0.3, 0.0, 0.4])
    x = R.choice(R.key(118), 5, (N,), p=p)
    counts = np.bincount(x, minlength=5)
    assert counts[3] == 0
    _chi2(counts[[0, 1, 2, 4]], p[[0, 1, 2, 4]])


def test_multivariate_normal_covariance():
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    n = 200_000
    for method in ("cholesky", "eigh", "svd"):
        x = R.multivariate_normal(R.key(119), mean, cov, (n,), method=method)
        assert x.shape == (n, 3)
        np.testing.assert_allclose(x.mean(axis=0), mean, atol=5 * np.sqrt(2.0 / n))
        np.testing.assert_allclose(np.cov(x.T), cov, atol=5 * 2.0 * np.sqrt(2.0 / n))


# --- independence of streams ------------------------------------------------

def test_split_streams_are_uncorrelated():
    k1, k2 = R.split(R.key(120))
    x, y = R.normal(k1, N), R.normal(k2, N)
    assert abs(np.corrcoef(x, y)[0, 1]) < 5 / np.sqrt(N)
    # the parent's own stream is unrelated to its children's
    assert abs(np.corrcoef(R.normal(R.key(120), N), x)[0, 1]) < 5 / np.sqrt(N)


def test_many_split_and_fold_in_streams_are_uncorrelated():
    n = 20_000
    # fold_in(k, d) is split(k, n)[d] (as in JAX), so fold in other numbers
    keys = list(R.split(R.key(121), 48)) + [R.fold_in(R.key(121), 1000 + d) for d in range(16)]
    x = np.stack([R.uniform(k, n) for k in keys])
    c = np.corrcoef(x)
    off = c[~np.eye(len(keys), dtype=bool)]
    assert np.max(np.abs(off)) < 5 / np.sqrt(n)
    # lagged correlation inside one stream
    u = R.uniform(R.key(122), N)
    for lag in (1, 2, 7, 64):
        assert abs(np.corrcoef(u[:-lag], u[lag:])[0, 1]) < 5 / np.sqrt(N)


def test_fold_in_is_the_split_key_with_that_index():
    """A property of JAX's partitionable Threefry that we share."""
    k = R.key(7)
    keys = R.split(k, 10)
    for d in range(10):
        np.testing.assert_array_equal(R.fold_in(k, d), keys[d])


def test_split_keys_are_distinct():
    keys = R.split(R.key(123), 100_000)
    assert len(np.unique(keys.view(np.uint64))) == 100_000
    assert not any(np.array_equal(k, R.key(123)) for k in keys[:100])
    folds = np.array([R.fold_in(R.key(123), d) for d in range(1000)])
    assert len(np.unique(folds.view(np.uint64))) == 1000


# --- kernels: scalar twins, no-numba import -------------------------------

def test_scalar_kernels_match_vectorized():
    """The per-element kernels (what Numba and CUDA compile) agree with NumPy's path."""
    k = R.key(124)
    k0, k1 = k
    n = 300
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        bits = [R._bits32_at(k0, k1, i) for i in range(n)]
        n32 = [R._normal_f32_at(k0, k1, i) for i in range(n)]
        n64 = [R._normal_f64_at(k0, k1, i) for i in range(n)]
        lo, span = np.float64(-2.5), np.float64(5.5)
        u64 = [R._uniform_f64_at(k0, k1, i, lo, span) for i in range(n)]
        lo32, span32 = np.float32(-2.5), np.float32(5.5)
        u32 = [R._uniform_f32_at(k0, k1, i, lo32, span32) for i in range(n)]
    np.testing.assert_array_equal(bits, R.bits(k, n))
    np.testing.assert_array_equal(np.array(n32, np.float32), R.normal(k, n, np.float32))
    np.testing.assert_array_equal(n64, R.normal(k, n))
    np.testing.assert_array_equal(u64, R.uniform(k, n, minval=-2.5, maxval=3.0))
    np.testing.assert_array_equal(np.array(u32, np.float32),
                                  R.uniform(k, n, np.float32, minval=-2.5, maxval=3.0))


def test_scalar_log_kernels_match_vectorized():
    x = np.concatenate([-R.uniform(R.key(125), 2000) ** 2, R.uniform(R.key(126), 500) * 50,
                        [0.0, -0.0, -1.0, np.inf, 1e-300, -0.41, 0.41]])
    for dt, log1p, log in ((np.float32, R._log1p_f32, R._log_f32),
                           (np.float64, R._log1p_f64, R._log_f64)):
        xs = x.astype(dt)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(np.array([log1p(v) for v in xs], dt), R._log1p_vec(xs))
            ys = xs + dt(1)
            np.testing.assert_array_equal(np.array([log(v) for v in ys], dt), R._log_vec(ys))
            # and they are accurate
            ref = np.log1p(xs.astype(np.float64))
            ok = np.isfinite(ref)
            # (XLA's float64 rational log1p is off by up to ~100 ulps near |x| = 0.41)
            rtol = 1e-13 if dt == np.float64 else 4 * np.finfo(dt).eps
            np.testing.assert_allclose(R._log1p_vec(xs)[ok], ref[ok], rtol=rtol)


def test_fma_emulation_rounds_once():
    a = np.float32(1 + 2 ** -12)
    # a*a = 1 + 2**-11 + 2**-24 is a float32 midpoint; + 2**-60 must round up
    assert R._fma_f32(a, a, np.float32(2 ** -60)) == np.float32(1 + 2 ** -11 + 2 ** -23)
    assert R._fma_vec(np.array([a]), a, np.float32(2 ** -60), np.dtype(np.float32))[0] == \
        np.float32(1 + 2 ** -11 + 2 ** -23)
    b = 1 + 2 ** -30
    assert R._fma_f64(b, b, -1.0) == 2 ** -29 + 2 ** -60      # exact, unlike b*b - 1
    assert R._fma_vec(np.array([b]), b, -1.0, np.dtype(np.float64))[0] == 2 ** -29 + 2 ** -60


def test_srctrans_random_does_not_import_numba():
    code = ("import sys; sys.modules['numba'] = None\n"
            "import srctrans.random as r\n"
            "assert r.normal(r.key(0), 3).shape == (3,)\n"
            "assert not any(m == 'numba' or m.startswith('numba.') for m in sys.modules"
            " if sys.modules[m] is not None)\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=HERE.parents[1])


# --- Numba -----------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled():
    """One compiled function that calls every overloaded function (one compile)."""
    numba = pytest.importorskip("numba")
    import numba_backend.random_overloads  # noqa: F401  (registers the overloads)

    @numba.njit
    def draw(key, n):
        k1, k2 = R.split(key)
        return (
            R.uniform(key, (3, 4), np.float32),
            R.uniform(k1, n),
            R.uniform(k2, (n,), np.float64, -2.5, 3.0),
            R.uniform(k2, n, np.float32, -2.5, 3.0),
            R.normal(key, n),
            R.normal(key, (n,), np.float32),
            R.normal(k1),
            R.normal(k1, (), np.float32),
            R.split(key),
            R.split(key, 3),
            R.split(key, (2, 3)),
            R.fold_in(key, 7),
            R.fold_in(k2, 123456789),
            R.bits(key, (4, 2)),
            R.bits(key, 5, np.uint64),
            R.bits(key, 6, np.uint8),
            R.randint(key, (n,), -5, 5),
            R.randint(key, n, -(2 ** 62), 2 ** 62),
            R.randint(k1, (n,), 0, 10, np.int32),
            R.randint(k1, (7,), -(2 ** 31), 2 ** 31 - 1, np.int32),
            R.randint(k1, (9,), 0, 256, np.uint8),
            R.randint(k1, (9,), 3, 3, np.int32),
            R.normal(key, (2, 2), "float32"),
            R.uniform(k1, 3, float),
        )

    return draw


def test_numba_matches_uncompiled(compiled):
    key = R.key(2024)
    n = 50_000
    got = compiled(key, n)
    k1, k2 = R.split(key)
    want = (
        R.uniform(key, (3, 4), np.float32),
        R.uniform(k1, n),
        R.uniform(k2, (n,), np.float64, -2.5, 3.0),
        R.uniform(k2, n, np.float32, -2.5, 3.0),
        R.normal(key, n),
        R.normal(key, (n,), np.float32),
        R.normal(k1),
        R.normal(k1, (), np.float32),
        R.split(key),
        R.split(key, 3),
        R.split(key, (2, 3)),
        R.fold_in(key, 7),
        R.fold_in(k2, 123456789),
        R.bits(key, (4, 2)),
        R.bits(key, 5, np.uint64),
        R.bits(key, 6, np.uint8),
        R.randint(key, (n,), -5, 5),
        R.randint(key, n, -(2 ** 62), 2 ** 62),
        R.randint(k1, (n,), 0, 10, np.int32),
        R.randint(k1, (7,), -(2 ** 31), 2 ** 31 - 1, np.int32),
        R.randint(k1, (9,), 0, 256, np.uint8),
        R.randint(k1, (9,), 3, 3, np.int32),
        R.normal(key, (2, 2), "float32"),
        R.uniform(k1, 3, float),
    )
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


def test_numba_matches_jax_vectors(compiled):
    """Compiled normals reproduce the recorded JAX streams too."""
    import numba

    @numba.njit
    def normals(key, n32, n64):
        return R.normal(key, (n32,), np.float32), R.normal(key, (n64,), np.float64)

    for case in CASES:
        if case["fn"] == "normal" and case["key"] == {"seed": 7}:
            want = _dec(case["out"])
            a32, a64 = normals(R.key(7), want.size, want.size)
            np.testing.assert_array_equal(a32 if want.dtype == np.float32 else a64, want)


def test_numba_bad_key_is_a_typing_error(compiled):
    import numba
    from numba.core.errors import TypingError

    @numba.njit
    def bad(k):
        return R.normal(k, 3)

    with pytest.raises(TypingError, match="argument 'key'"):
        bad(3)
    with pytest.raises(TypingError, match="argument 'key'"):
        bad(np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="shape"):
        bad(np.zeros(3, np.uint32))


def test_srctrans_random_is_an_attribute_of_srctrans():
    """As ``jax.random`` after ``import jax``: no ``import srctrans.random`` needed (checked in a fresh process)."""
    code = ("import srctrans, numpy as np; k = srctrans.random.PRNGKey(0); "
            "print(srctrans.random.normal(k, (2,)).shape, 'random' in srctrans.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(2,) True"
