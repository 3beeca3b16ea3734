"""What the shape analysis (:mod:`srctrans.analysis.shapes`) may assume of a result, by rule key.

``NUMBER_RESULTS``: operations whose result is one number (0-d) when the parameters listed
keep their defaults: ``np.sum(x)``, ``x.mean()``, ``np.linalg.norm(x)``, ``np.vdot(x, y)``.
A number broadcasts to anything, so ``loss = np.sum(a) + 0.5 * np.sum(b)`` needs no
``unbroadcast`` in its adjoint.
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
