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


FUNCTIONS = {"numpy.linalg.eigvals": eigvals, "numpy.row_stack": row_stack}
