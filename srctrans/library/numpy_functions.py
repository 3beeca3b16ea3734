"""NumPy functions written with others that have rules (see :mod:`srctrans.library`)."""

from __future__ import annotations

import numpy as np


def eigvals(a):
    """``numpy.linalg.eigvals``: the eigenvalues ``numpy.linalg.eig`` gives (a real spectrum
    is differentiated; a complex one is refused, as for ``eig``)."""
    w, _ = np.linalg.eig(a)
    return w


def row_stack(tup):
    """``numpy.row_stack``, NumPy's deprecated name of ``numpy.vstack``."""
    return np.vstack(tup)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """``scipy.linalg.solve_triangular``: ``numpy.linalg.solve`` with the triangle of ``a`` SciPy
    reads (the numbers agree with SciPy's to rounding; stacks of matrices too)."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - np.tril(np.triu(t)) + np.eye(np.shape(a)[-1], dtype=t.dtype)
    if trans == 1 or trans == 2 or trans == "T" or trans == "C":
        t = np.swapaxes(t, -1, -2)
    return np.linalg.solve(t, b)


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``scipy.linalg.solve_banded``: ``numpy.linalg.solve`` with the matrix SciPy's banded
    storage holds, ``a[i, j] = ab[u + i - j, j]`` inside the band, 0 outside (the numbers agree
    with SciPy's to rounding)."""
    lower, upper = l_and_u
    n = np.shape(ab)[-1]
    row = upper + np.arange(n)[:, None] - np.arange(n)[None, :]  # the row of ab holding a[i, j]
    inside = (row >= 0) & (row <= lower + upper)
    a = np.where(inside, np.take(ab, np.clip(row, 0, lower + upper) * n + np.arange(n)[None, :]), 0.0)
    return np.linalg.solve(a, b)


def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve`` of two vectors: ``numpy.convolve`` (the same sums)."""
    return np.convolve(in1, in2, mode)


FUNCTIONS = {
    "numpy.linalg.eigvals": eigvals,
    "numpy.row_stack": row_stack,
    "scipy.linalg.solve_triangular": solve_triangular,
    "scipy.linalg.solve_banded": solve_banded,
    "scipy.signal.convolve": convolve,
}
