"""Device functions the elementwise kernels of ``jit(..., target="cuda")`` files call.

Each is plain Python, which Numba's CUDA simulator runs as it is, and compiles for a GPU:
:func:`ld` through an overload (its meaning depends on the operand's type), the others as
``cuda.jit(device=True)`` functions.
"""

from __future__ import annotations

from numba import cuda

SIMULATED = bool(cuda.config.ENABLE_CUDASIM)


def ld(a, i):
    """Element ``i`` of the result from operand ``a``: ``a[i]``, ``a[i % a.size]`` for a smaller
    operand (the result's trailing axes; one number on the device), or ``a`` itself for a number."""
    if getattr(a, "ndim", 0):  # (a NumPy number has a shape too, of no axes)
        n = a.shape[0]
        return a[i] if i < n else a[i % n]
    return a


def _maximum(a, b):
    """``np.maximum`` of two numbers: NaN when either is NaN."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


def _minimum(a, b):
    """``np.minimum`` of two numbers: NaN when either is NaN."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


def _sign(a):
    """``np.sign`` of a number."""
    if a > 0:
        return 1.0
    if a < 0:
        return -1.0
    return a


maximum = cuda.jit(device=True)(_maximum)
minimum = cuda.jit(device=True)(_minimum)
sign = cuda.jit(device=True)(_sign)

if not SIMULATED:
    from numba.core import types
    from numba.cuda.extending import overload

    @overload(ld, target="cuda")
    def _ld_cuda(a, i):
        if isinstance(a, types.Array):

            def impl(a, i):
                n = a.shape[0]
                return a[i] if i < n else a[i % n]

            return impl
        if isinstance(a, (types.Number, types.Boolean)):
            return lambda a, i: a
        return None
