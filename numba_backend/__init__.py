"""numba_backend: compiles srctrans's generated files with Numba.

It knows nothing of differentiation or batching: it loads generated modules,
compiles their functions for a target, and fills the gaps where Numba lacks a
NumPy feature that ordinary code uses (overloads registered on import).
"""

from . import overloads  # noqa: F401  (registers the NumPy gap fillers with Numba)
from . import runtime_overloads as _runtime_overloads  # noqa: F401  (registers the srctrans.runtime helpers)
