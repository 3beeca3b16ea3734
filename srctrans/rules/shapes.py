"""What the shape analysis (:mod:`srctrans.analysis.shapes`) may assume of a result, by rule key.

``NUMBER_RESULTS``: operations whose result is one number (0-d) when the parameters listed
keep their defaults: ``np.sum(x)``, ``x.mean()``, ``np.linalg.norm(x)``, ``np.vdot(x, y)``.
A number broadcasts to anything, so ``loss = np.sum(a) + 0.5 * np.sum(b)`` needs no
``unbroadcast`` in its adjoint.

``ARRAY_DATA``: where an operation takes array data, so that a list or tuple display given
there is the array NumPy makes of it (``np.max([a, b])`` is ``np.max(np.array([a, b]))``,
:mod:`srctrans.passes.desugar`): ``"first"``, its first positional argument, or ``"all"``,
every positional one (a ufunc's inputs are always data). Never a shape, an axis or reps.
"""

from __future__ import annotations

_FULL = ("axis", "keepdims")

NUMBER_RESULTS: dict[str, tuple[str, ...]] = {
    "numpy.sum": _FULL,
    "numpy.mean": _FULL,
    "numpy.prod": _FULL,
    "numpy.max": _FULL,
    "numpy.min": _FULL,
    "numpy.amax": _FULL,
    "numpy.amin": _FULL,
    "numpy.var": _FULL,
    "numpy.std": _FULL,
    "numpy.linalg.norm": _FULL,
    "scipy.special.logsumexp": _FULL,
    "numpy.vdot": (),
}

# --- array functions and reductions (issue 20) ---
NUMBER_RESULTS.update({
    "numpy.nansum": _FULL,
    "numpy.nanmean": _FULL,
    "numpy.nanmax": _FULL,
    "numpy.nanmin": _FULL,
    "numpy.nanvar": _FULL,
    "numpy.nanstd": _FULL,
    "numpy.median": _FULL,
    "numpy.average": _FULL,
})


ARRAY_DATA: dict[str, str] = {
    **{
        f"numpy.{name}": "first"
        for name in """sum mean max min amax amin prod std var median average nansum nanmean nanmax nanmin nanprod
        nanstd nanvar nanmedian cumsum cumprod sort ptp clip diff flip trace all any argmax argmin real imag around
        round""".split()
    },
    "numpy.linalg.norm": "first",
    **{f"numpy.{name}": "all" for name in "dot matmul inner outer vdot where kron cross convolve".split()},
}
