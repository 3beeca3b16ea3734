"""What of the functions with a derivative rule does not compile under ``srctrans.jit``.

Every NumPy, SciPy, ``math`` and built-in function with a rule (``srctrans.rules.derivatives``)
compiles, with its gradient, except what is listed here: there ``jit`` stops with a
``CompileError`` at the user's line, and ``grad``, ``jvp`` and ``vjp`` without ``jit`` still
work. ``tests/numba_backend/test_compile_status.py`` keeps the lists honest (a key listed
must fail to compile, a key not listed must compile and agree with the uncompiled
gradient), and ``docs/tools/function_table.py`` writes them into the ``jit`` column of
``docs/functions.rst``.

- ``NOT_COMPILED``: rule key -> why nothing of it compiles (its first spec does not);
- ``PARTLY``: rule key -> the forms that do not compile (the others do);
- ``DIFFERENT``: rule key -> how the compiled function differs from NumPy's (it compiles;
  its gradient is that of the compiled function).
"""

from __future__ import annotations

NOT_COMPILED: dict[str, str] = {
}

PARTLY: dict[str, str] = {
}

DIFFERENT: dict[str, str] = {
    "numpy.partition": "Numba's np.partition may arrange the elements around the k-th otherwise than NumPy's",
}
