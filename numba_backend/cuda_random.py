"""``srctrans.random``'s scalar Threefry kernels as Numba CUDA device functions.

Generated CUDA kernels (:mod:`srctrans.parallel.kernels`) draw random numbers one element
at a time with the functions below, which are the very kernels the CPU path compiles
(``srctrans.random.JITTABLE_KERNELS``): each kernel's code is rebuilt with globals in
which the other kernels are their device-function twins, and compiled with
``cuda.jit(device=True)``. Only the fused multiply-adds change: the CPU emulates them
in software or calls ``llvm.fma``; here they are ``cuda.fma`` (one ``fma.rn``
instruction, rounded once, the same number).

So ``bits`` and ``uniform`` give the CPU's numbers bit for bit (integer arithmetic and
FMAs). ``normal`` calls the C library's ``log`` on the CPU, for about a third of the
draws (inside ``log1p`` away from 0); on a GPU that is libdevice's ``log``, which can
differ in the last bit, so there a draw can differ by an ulp or two. The simulator runs
the C library's ``log``, so there they are equal.
"""

from __future__ import annotations

import math
import types

import numpy as np
from numba import cuda

import srctrans.random as _r


@cuda.jit(device=True)
def _fma_f64(a, b, c):
    return cuda.fma(np.float64(a), np.float64(b), np.float64(c))


@cuda.jit(device=True)
def _fma_f32(a, b, c):
    return cuda.fma(np.float32(a), np.float32(b), np.float32(c))


_SIMULATED = bool(cuda.config.ENABLE_CUDASIM)


def _numpy_for_devices() -> types.ModuleType:
    """NumPy as the kernels see it, but ``np.sqrt`` of a number is ``math.sqrt`` (the same
    correctly rounded square root; CUDA device code types no NumPy ufuncs)."""
    module = types.ModuleType("numpy_for_cuda_kernels")
    module.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})
    module.sqrt = math.sqrt
    return module


def _device_twins() -> dict[str, object]:
    """Every kernel of srctrans.random as a device function calling the others' twins."""
    if _SIMULATED:  # the simulator runs Python: its cuda.fma would round twice
        twins: dict[str, object] = {"_fma_f64": cuda.jit(device=True)(_r._fma_f64), "_fma_f32": cuda.jit(device=True)(_r._fma_f32)}
    else:
        twins = {"_fma_f64": _fma_f64, "_fma_f32": _fma_f32}
    namespace = dict(vars(_r))
    namespace["np"] = _numpy_for_devices()
    for kernel in _r.JITTABLE_KERNELS:
        if kernel.__name__ in twins:
            continue
        fn = types.FunctionType(kernel.__code__, namespace, kernel.__name__, kernel.__defaults__, kernel.__closure__)
        twins[kernel.__name__] = cuda.jit(device=True)(fn)
    namespace.update(twins)  # the kernels call each other through these globals
    return twins


_TWINS = _device_twins()
_words_at = _TWINS["_words_at"]
_threefry2x32_pair = _TWINS["_threefry2x32_pair"]
bits32_at = _TWINS["_bits32_at"]
uniform_f32_at = _TWINS["_uniform_f32_at"]
uniform_f64_at = _TWINS["_uniform_f64_at"]
normal_f32_at = _TWINS["_normal_f32_at"]
normal_f64_at = _TWINS["_normal_f64_at"]


@cuda.jit(device=True)
def split_word(k0, k1, j, c):
    """Word ``c`` (0 or 1) of key ``j`` of ``split(key, num)``."""
    b0, b1 = _words_at(k0, k1, j)
    return np.uint32(b0) if c == 0 else np.uint32(b1)


@cuda.jit(device=True)
def fold_in_word(k0, k1, data, c):
    """Word ``c`` of ``fold_in(key, data)`` (data taken modulo 2**32)."""
    b0, b1 = _threefry2x32_pair(k0, k1, 0, np.int64(data) & 0xFFFFFFFF)
    return np.uint32(b0) if c == 0 else np.uint32(b1)
