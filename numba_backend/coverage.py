"""What of the functions with a derivative rule does not compile under ``srctrans.jit``.

Every NumPy, SciPy, ``math`` and built-in function with a rule (``srctrans.rules.derivatives``)
compiles, with its gradient, except what is listed here: there ``jit`` stops with a
``CompileError`` at the user's line, and ``grad``, ``jvp`` and ``vjp`` without ``jit`` still work.
``tests/numba_backend/test_compile_status.py`` keeps the lists honest (a key listed must fail
to compile, a key not listed must compile and agree with the uncompiled gradient), and
``docs/tools/function_table.py`` writes them into the ``jit`` column of ``docs/functions.rst``.

- ``NOT_COMPILED``: rule key -> what does not compile, which its first spec uses;
- ``PARTLY``: rule key -> the forms that do not compile (the others do);
- ``FORWARD_NOT_COMPILED``: rule key -> why its forward mode (``jvp``, ``jacfwd``) does not
  compile, where its gradient does (``jit`` of a ``jvp`` stops with a ``CompileError``);
- ``DIFFERENT``: rule key -> how the compiled function differs from NumPy's (it compiles;
  its gradient is that of the compiled function).
"""

from __future__ import annotations

NOT_COMPILED: dict[str, str] = {
    "numpy.squeeze": (
        "without ``axis=`` (the result's number of dimensions depends on the shape, which Numba "
        "must know when it compiles): pass ``axis=``"
    ),
    "scipy.integrate.odeint": "Numba has no scipy.integrate.odeint (ODEPACK's LSODA, in Fortran)",
}

PARTLY: dict[str, str] = {
    "scipy.linalg.solve_sylvester": "stacks of matrices",
    "scipy.linalg.sqrtm": "stacks of matrices, and matrices without a real square root (SciPy gives a complex one)",
    "scipy.linalg.lu": "stacks of matrices, ``p_indices=True``",
    "numpy.clip": "``min=``/``max=`` (NumPy 2's names; ``a_min=``/``a_max=`` and positional bounds compile)",
    "numpy.vdot": "arrays of more than one dimension",
    "numpy.trace": "stacks (arrays of three or more dimensions)",
    "numpy.inner": "an operand of more than two dimensions",
    "numpy.linalg.pinv": "stacks of matrices",
    "numpy.linalg.norm": "matrix norms over a pair of axes (stacks), ``keepdims=`` with a matrix order",
    "numpy.linalg.eigh": "``UPLO='U'``, stacks",
    "numpy.linalg.svd": "``compute_uv=False``, stacks",
    "numpy.linalg.qr": "stacks",
    "numpy.linalg.eig": "stacks",
    "numpy.flip": "``axis=``",
    "numpy.sort": "``axis=None``",
    "numpy.linspace": "array endpoints, ``endpoint=`` given by position",
    "numpy.average": "``axis=`` (Numba's np.average takes the whole array), ``keepdims=``",
    "numpy.partition": (
        "``axis=`` other than the last; and Numba's np.partition may arrange the elements around "
        "the k-th otherwise than NumPy's (the compiled gradient is that of the compiled function)"
    ),
    "numpy.interp": "``left=`` and ``right=``",
}

FORWARD_NOT_COMPILED: dict[str, str] = {
    "numpy.linalg.lstsq": "forward mode (``jvp``, ``jacfwd``): its tangents run uncompiled only",
}

DIFFERENT: dict[str, str] = {
    "numpy.partition": "Numba's np.partition may arrange the elements around the k-th otherwise than NumPy's",
}

# srctrans.library's functions (written in NumPy: tests/rules/test_peer_coverage.py compiles each)
# that do not compile, and why
LIBRARY_NOT_COMPILED: dict[str, str] = {}
