"""numba_backend: compiles srctrans's generated files with Numba.

It knows nothing of differentiation or batching: it loads generated modules,
compiles their functions for a target, and fills the gaps where Numba lacks a
NumPy feature that ordinary code uses. The overload modules (``overloads``,
``runtime_overloads``, ``random_overloads``, ``scipy_overloads``, ``matrix_exponential`` ...)
register themselves when imported;
:func:`numba_backend.cpu.compile_module` imports the ones a generated file needs,
so a small function does not pay for all of them on its first call.
"""
