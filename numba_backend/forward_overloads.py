"""Numba overloads for the forward-mode helpers of ``srctrans.runtime`` (``cholesky_jvp``,
``pad_tangent``).

Registered when imported; :func:`numba_backend.cpu.compile_module` imports this module
for generated files that call one of them.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

import srctrans.runtime as rt


def _lower_half_diagonal(m):
    return np.tril(m) - 0.5 * m * np.eye(m.shape[-1])


@overload(rt.cholesky_jvp)
def _ov_cholesky_jvp(t, ans):
    for name, ty in (("t", t), ("ans", ans)):
        if not isinstance(ty, types.Array) or ty.ndim != 2:
            raise TypingError(f"srctrans.runtime.cholesky_jvp: under jit, {name} must be a matrix, got {ty}")

    def impl(t, ans):
        sym = np.tril(t) + np.ascontiguousarray(np.tril(t, -1).T)
        s = np.linalg.solve(ans, sym)
        s = np.ascontiguousarray(np.linalg.solve(ans, np.ascontiguousarray(s.T)).T)
        m = np.tril(s) - 0.5 * s * np.eye(s.shape[-1])
        return np.dot(np.ascontiguousarray(ans), m)

    return impl


@overload(rt.pad_tangent)
def _ov_pad_tangent(t, pad_width, mode="constant"):
    from . import overloads  # noqa: F401  (np.pad, which checks the mode)

    if not isinstance(t, types.Array):
        raise TypingError(f"srctrans.runtime.pad_tangent: under jit, t must be an array, got {t}")
    return lambda t, pad_width, mode="constant": np.pad(t, pad_width, mode)
