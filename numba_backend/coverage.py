"""What Numba does not compile: srctrans rule keys whose generated files stop with ``CompileError``
under ``srctrans.jit`` (their gradients run uncompiled), for the arguments of the case
tests/rules/test_peer_coverage.py compiles (which checks each raises ``CompileError``).
"""

from __future__ import annotations

_NO_SCIPY = "Numba knows no scipy.special.{} (numba_backend.scipy_overloads: gammaln, erf, expit, logsumexp)"
_ONE_MATRIX = "a stack of matrices (3-d): Numba's np.linalg.{} takes one matrix"

NOT_COMPILED: dict[str, str] = {
    "numpy.trace": "np.trace(x, offset, axis1, axis2) of a 3-d array: Numba's np.trace takes a matrix alone",
    "numpy.rollaxis": "Numba has no np.rollaxis",
    "numpy.squeeze": "Numba has no np.squeeze",
    "numpy.rot90": "Numba has no np.rot90",
    "numpy.gradient": "Numba has no np.gradient",
    "numpy.select": "np.select of lists mixing arrays and numbers: Numba's takes lists of arrays of one type",
    "numpy.vstack": "np.vstack of a list of arrays of different ndim: Numba's takes a tuple of one ndim",
    "numpy.column_stack": "np.column_stack of a list of arrays of different ndim",
    "numpy.linalg.pinv": _ONE_MATRIX.format("pinv"),
    "numpy.linalg.eigh": _ONE_MATRIX.format("eigh"),
    "numpy.linalg.eig": _ONE_MATRIX.format("eig"),
    "numpy.linalg.svd": _ONE_MATRIX.format("svd"),
    "numpy.linalg.norm": "np.linalg.norm(x, 'fro', axis=(1, 2)) of a stack: Numba's takes no axis",
    "numpy.linalg.lstsq": "its adjoint helper srctrans.runtime.lstsq_grad_a has no Numba overload",
    "scipy.special.logsumexp": "logsumexp(x, axis=(0, 2)): numba_backend.scipy_overloads takes one axis",
    **{f"scipy.special.{name}": _NO_SCIPY.format(name) for name in (
        "digamma psi logit xlogy softmax erfc erfcx erfinv erfcinv ndtr log_ndtr ndtri dawsn gamma rgamma loggamma "
        "gammasgn beta betaln entr rel_entr kl_div xlog1py"
    ).split()},
}
