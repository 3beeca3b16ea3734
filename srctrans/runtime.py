"""small helpers that generated code imports.

Each helper is plain NumPy, so a generated file runs unchanged as ordinary Python; this
module never imports Numba. ``numba_backend`` registers an overload for every helper so
that the same file also compiles.

``NUMPY_REWRITES`` maps the qualified name of a NumPy call that Numba cannot be taught
directly to the name of the helper here that replaces it: the front end rewrites
``np.matmul(a, b)`` in user code to ``srctrans.runtime.matmul(a, b)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NUMPY_REWRITES", "matmul"]


def matmul(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """``np.matmul(x1, x2)``.

    ``np.matmul`` is a ufunc, and Numba fuses any ufunc call that returns an array into
    an elementwise loop, so an overload of ``np.matmul`` itself would compute the wrong
    thing; generated code calls this helper instead.
    """
    return np.matmul(x1, x2)


NUMPY_REWRITES: dict[str, str] = {
    "numpy.matmul": "matmul",
}
