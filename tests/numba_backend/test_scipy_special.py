"""The last scipy.special functions with derivative rules compile (issue 20): ``sici``, ``fresnel``,
``hyp2f1``, ``zeta`` (Hurwitz's and Riemann's), ``polygamma``, ``multigammaln``, ``factorial``,
``log_softmax``, and ``numpy.i0``, with SciPy's and NumPy's values and result dtypes, at the
edges too (poles, negative arguments, NaN, infinities). One compile for the values: the
gradients of each are tests/numba_backend/test_compile_status.py's.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest
import scipy.special as sp
from numba.core.errors import TypingError

import numba_backend  # noqa: F401  (registers the overloads)
import numba_backend.runtime_overloads  # noqa: F401
import numba_backend.scipy_overloads  # noqa: F401
from srctrans import runtime as rt

pytestmark = pytest.mark.slow  # compiles


def _values(x, x32, pos, n, q, s, edge):
    return (
        sp.sici(x), sp.fresnel(x32), sp.sici(1.5), sp.fresnel(np.float32(0.7)),
        sp.hyp2f1(0.5, 1.0, 1.5, 0.5 * pos), rt.hyp2f1(0.5, 1.0, 1.5, 0.3),
        np.i0(x), np.i0(x32), np.i0(2.0),
        sp.zeta(3.0, pos), sp.zeta(s, q), sp.zeta(s), sp.zeta(-1.5), sp.zeta(3.0, x32 * np.float32(0.5) + np.float32(2.0)),
        rt.zeta(3.0, pos),
        sp.polygamma(2, pos), sp.polygamma(n, 1.5), sp.polygamma(0, pos), sp.polygamma(3, edge),
        sp.multigammaln(pos + 3.0, 3), sp.multigammaln(4.0, 2), rt.multipolygamma(1, pos + 3.0, 3),
        sp.factorial(3.0 * x), sp.factorial(3), sp.factorial(edge), sp.factorial(n),
        sp.log_softmax(n * 1.0, axis=0), sp.log_softmax(x32), sp.log_softmax(edge.reshape(2, 4), axis=1), sp.log_softmax(x, axis=(0, 1)),
    )


def test_values_and_dtypes_are_scipys():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4))
    args = (
        x, x.astype(np.float32), rng.uniform(0.1, 3.0, size=(3, 4)), np.array([[0, 1, 2], [3, 0, 1]]),
        np.array([0.5, 2.0, -1.5, -2.0, -2.25, 1e-3, 40.0]),  # q: poles, negative, tiny, large
        np.array([3.0, 1.5, 3.0, 3.0, 2.5, 2.0, 60.0]),  # s (Riemann's too: its values at 1.5, 60 ...)
        np.array([-1.5, -1.0, 0.0, np.nan, np.inf, -np.inf, 1.0, 2.5]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = _values(*args)
        got = numba.njit(_values)(*args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for gi, wi in zip(g if isinstance(w, tuple) else (g,), w if isinstance(w, tuple) else (w,), strict=True):
            gi, wi = np.asarray(gi), np.asarray(wi)
            assert gi.shape == wi.shape, i
            if wi.ndim:  # (numbers come back as Python floats, float32 ones too)
                assert gi.dtype == wi.dtype, (i, gi.dtype, wi.dtype)
            # SciPy's C functions: bit for bit; zeta and what is written with it (srctrans'
            # Euler-Maclaurin sum), and NumPy's float32 i0 (computed in float32): to rounding
            rtol = 1e-6 if wi.dtype == np.float32 else 1e-14
            np.testing.assert_allclose(gi, wi, rtol=rtol, atol=0, err_msg=f"result {i}")


def test_refusals_and_errors_name_the_function():
    @numba.njit
    def factorial_exact(n):
        return sp.factorial(n, exact=True)

    with pytest.raises(TypingError, match="exact=True"):
        factorial_exact(3)

    @numba.njit
    def multigammaln(a, d):
        return sp.multigammaln(a, d)

    with pytest.raises(ValueError, match="multigammaln: condition a > 0.5"):
        multigammaln(1.0, 3)
    with pytest.raises(ValueError, match="d should be a positive integer"):
        multigammaln(4.0, 2.5)

    @numba.njit
    def complex_sici(z):
        return sp.sici(z)

    with pytest.raises(TypingError, match="scipy.special.sici: under jit, x must be a real number"):
        complex_sici(1j)
