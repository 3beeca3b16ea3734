"""What the analyses may assume of an operation's memory and dtype, by rule key.

Read by :mod:`srctrans.analysis.views` (which names may share an array), by reverse and
forward mode (which calls write into an array unseen, which values are complex) and, through
them, by vmap. The analyses match calls by their last name (``np.reshape(y, s)`` and
``y.reshape(s)`` alike), before anything is resolved: see :func:`last_names`.
"""

from __future__ import annotations

# Results that may be a view of their first argument (of the receiver, called as a method).
VIEW_RESULTS = frozenset({
    "numpy.reshape", "ndarray.reshape", "numpy.ravel", "ndarray.ravel", "numpy.transpose", "ndarray.transpose",
    "numpy.squeeze", "ndarray.squeeze", "numpy.expand_dims", "numpy.swapaxes", "ndarray.swapaxes",
    "numpy.diagonal", "ndarray.diagonal", "numpy.atleast_1d", "numpy.atleast_2d", "numpy.broadcast_to",
})

# Results that are the argument itself when it is an array (a new array when it is a list).
MAYBE_VIEW_RESULTS = frozenset({"numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray", "numpy.asfortranarray"})

# Results that are a new array for certain (besides NumPy's ufuncs, arithmetic and comparisons):
# an array of the function's own that no other name shares.
NEW_ARRAYS = frozenset({
    "numpy.copy", "ndarray.copy", "ndarray.flatten", "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full", "numpy.zeros_like",
    "numpy.ones_like", "numpy.empty_like", "numpy.full_like", "numpy.eye", "numpy.identity", "numpy.arange",
    "numpy.linspace", "numpy.stack", "numpy.concatenate", "numpy.hstack", "numpy.vstack", "numpy.dot",
    "numpy.matmul", "numpy.outer", "numpy.inner", "numpy.tensordot", "numpy.einsum", "numpy.sum", "numpy.mean",
    "numpy.prod", "numpy.cumsum", "numpy.cumprod", "numpy.tile", "numpy.repeat", "numpy.sort", "numpy.clip",
    "numpy.where", "numpy.array", "numpy.pad", "numpy.diff", "numpy.cross", "numpy.kron", "numpy.trace",
    "numpy.max", "numpy.min", "numpy.amax", "numpy.amin", "numpy.var", "numpy.std", "numpy.argsort",
    "numpy.argmax", "numpy.argmin", "numpy.roll", "numpy.take", "numpy.round", "numpy.around",
    "numpy.logaddexp", "numpy.linalg",  # (numpy.linalg: every function of it, np.linalg.solve(a, b))
})

# Calls that write into their first argument and return None: ``np.copyto(y, x)``.
WRITES_FIRST_ARGUMENT = frozenset({
    "numpy.copyto", "numpy.put", "numpy.place", "numpy.putmask", "numpy.fill_diagonal", "numpy.put_along_axis",
    "numpy.random.shuffle",
})

# Names of complex dtypes, as written in code (``np.complex128``, ``dtype=complex``).
COMPLEX_DTYPES = frozenset({
    "builtins.complex", "numpy.complex64", "numpy.complex128", "numpy.complex256", "numpy.complex_",
    "numpy.csingle", "numpy.cdouble", "numpy.clongdouble",
})

# Real results of any value, complex ones too: ``np.abs(z)``, ``z.imag``.
REAL_PARTS = frozenset({"numpy.abs", "numpy.absolute", "numpy.real", "numpy.imag", "numpy.angle", "ndarray.real", "ndarray.imag"})


def last_names(keys: frozenset[str]) -> frozenset[str]:
    """The last part of each key (``numpy.reshape`` -> ``reshape``): what a call's text is matched by."""
    return frozenset(key.rsplit(".", 1)[-1] for key in keys)
