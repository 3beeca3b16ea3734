"""What the CUDA form of a generated file runs with (``jit(..., target="cuda")``).

:mod:`srctrans.gpu` rewrites a generated file for the GPU: host code as it was, NumPy's
functions taken from :data:`xp`, ``srctrans.runtime`` from :data:`runtime`, and every
elementwise line a Numba CUDA kernel called through :class:`fused`. This module gives
those names their meaning:

- :data:`xp`: the array library of the device. CuPy on a GPU (its arrays are what the
  functions take and return, and matrix products, reductions and ``linalg`` run through
  cuBLAS, CUB and cuSOLVER); NumPy under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``),
  where host memory is the device's.
- :data:`runtime`: ``srctrans.runtime``'s helpers computing with :data:`xp` (the module's
  source run again with ``np`` bound to CuPy); ``srctrans.runtime`` itself in the simulator.
- :class:`fused`: launches one elementwise kernel over the broadcast shape of its array
  operands, one thread per element of the result. An operand with the result's shape is
  read at the thread's index, one with the shape of the result's trailing axes (a bias
  row, a number on the device) at that index modulo its size (:func:`ld`); any other
  broadcast is made contiguous first. The result's dtype is NumPy's for the expression
  (Python numbers weak, NEP 50). With no array operand the expression runs as written.
- :func:`to_device`, :func:`to_host`: arguments in, results out. Host arrays are copied to
  the device once per call; CuPy arrays, Numba device arrays and anything with
  ``__cuda_array_interface__`` are used in place; results stay on the device.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
from numba import cuda

from srctrans.errors import BackendUnavailableError

from .cuda_device import SIMULATED, ld, maximum, minimum, sign  # noqa: F401 - names the generated files import

THREADS = 32 if SIMULATED else 256  # the simulator runs each thread of a block as a Python thread

cupy: Any = None
if not SIMULATED:  # pragma: no cover - needs CuPy (a GPU to run)
    try:
        import cupy
    except ImportError:  # compile_module says so; PTX can still be compiled without it
        cupy = None
    # CuPy and Numba both launch on the legacy default stream: ordered without synchronizing
    cuda.config.CUDA_ARRAY_INTERFACE_SYNC = False
xp: Any = cupy if cupy is not None else np


def _device_runtime() -> types.ModuleType:
    import srctrans.runtime as base

    if xp is np:
        return base
    import inspect

    module = types.ModuleType("srctrans_runtime_on_device", base.__doc__)
    module.__file__ = base.__file__
    module.__package__ = "srctrans"  # (its relative imports)
    exec(compile(inspect.getsource(base), base.__file__, "exec"), module.__dict__)  # noqa: S102 - srctrans's own source
    module.np = xp
    sys.modules[module.__name__] = module
    return module


runtime = _device_runtime()


# --- elementwise lines ---------------------------------------------------------------------------


def _is_device_array(a: Any) -> bool:
    return isinstance(a, xp.ndarray)


def _weak(t: type) -> Any:
    return t(1)


class fused:  # noqa: N801 - reads as a function in generated files
    """One elementwise line: ``kernel`` over the result, or ``expression`` where no operand is an array.

    On a GPU the kernel Numba compiled for a call's types is launched through CuPy
    (:class:`_Launch`: the same machine code, a fraction of the launch's cost); under the
    simulator, through Numba.
    """

    __slots__ = ("kernel", "expression", "_dtypes", "_launches")

    def __init__(self, kernel: Any, expression: Any) -> None:
        self.kernel = kernel
        self.expression = expression
        self._dtypes: dict[tuple, np.dtype] = {}
        self._launches: dict[tuple, Any] = {}

    def _dtype(self, key: tuple) -> np.dtype:
        found = self._dtypes.get(key)
        if found is None:
            dummies = [xp.ones(1, dtype=k) if isinstance(k, np.dtype) else _weak(k) for k in key]
            with np.errstate(all="ignore"):
                found = np.dtype(self.expression(*dummies).dtype)
            self._dtypes[key] = found
        return found

    def __call__(self, *ops):
        shape = None
        device = False
        for a in ops:
            if isinstance(a, xp.ndarray):
                device = True
                if a.ndim:
                    shape = a.shape if shape is None or shape == a.shape else np.broadcast_shapes(shape, a.shape)
            elif isinstance(a, np.ndarray):  # a host array met on the way (a global): copied
                device = True
                if a.ndim:
                    shape = a.shape if shape is None or shape == a.shape else np.broadcast_shapes(shape, a.shape)
            elif not isinstance(a, (int, float, np.number, np.bool_)):
                return self.expression(*ops)  # something else (a list, a tuple): as written
        if not device:
            return self.expression(*ops)
        if xp is not np:
            ops = tuple(xp.asarray(a) if isinstance(a, np.ndarray) else a for a in ops)
        shape = shape or ()
        key = tuple(a.dtype if hasattr(a, "dtype") else type(a) for a in ops)
        dtype = self._dtype(key)
        if not _typed_as_numpy(key, dtype):  # the array library computes it, with NumPy's types
            return self.expression(*ops)
        out = xp.empty(shape, dtype)
        n = out.size
        if n == 0:
            return out
        operands = [_operand(a, shape) if isinstance(a, xp.ndarray) else a for a in ops]
        blocks = (n + THREADS - 1) // THREADS
        if cupy is None:
            self.kernel[blocks, THREADS](out.reshape(-1), *[a.reshape(-1) if isinstance(a, xp.ndarray) else a for a in operands])
            return out
        key = tuple((a.dtype, True) if isinstance(a, xp.ndarray) else (type(a), False) for a in operands) + (dtype,)
        launch = self._launches.get(key)
        if launch is None:  # (its first launch fills out)
            self._launches[key] = _Launch.make(self.kernel, out, operands)
            return out
        launch(blocks, out, operands)
        return out

    def __repr__(self) -> str:
        return f"fused({getattr(self.kernel, '__name__', self.kernel)})"


_FLOAT64 = np.dtype(np.float64)


def _typed_as_numpy(key: tuple, result: np.dtype) -> bool:
    """Whether a kernel computes this line with NumPy's types: every array float64, numbers Python's
    or float64, the result float64 or bool. Numba types a kernel's scalars its own way: integers
    widen to int64 before they wrap (``uint8_array - 1 > 100``), and a Python float literal makes a
    float32 line float64, so those lines are left to the array library (CuPy), which follows NumPy."""
    if result != _FLOAT64 and result.kind != "b":
        return False
    return all(k == _FLOAT64 if isinstance(k, np.dtype) else k in (float, int, bool, np.float64) for k in key)


def _operand(a: Any, shape: tuple) -> Any:
    """A device operand as the kernel reads it: C-contiguous, with the result's shape or its trailing
    axes' (:func:`ld` reads it modulo its size); any other broadcast made contiguous first."""
    k = 0
    while k < a.ndim and a.shape[k] == 1:
        k += 1
    if k == a.ndim:  # one number on the device
        return a.reshape(1) if a.ndim != 1 else a
    if k:
        a = a.reshape(a.shape[k:])
    if a.shape != shape[len(shape) - a.ndim :] or not a.flags.c_contiguous:
        a = xp.ascontiguousarray(xp.broadcast_to(a, shape))
    return a


class _Launch:
    """A kernel Numba compiled for one set of argument types, loaded into CuPy and launched by it.

    Numba's kernels take each array as the fields of its array struct (meminfo, parent, size,
    itemsize, data, shape, strides) and each number by value; CuPy's launcher passes the same
    values with a fraction of the Python work of Numba's (which imports each CuPy array through
    ``__cuda_array_interface__`` on every call): 14 us a call against 91 us, measured on an H200.
    The first launch of each is checked against Numba's own (:func:`_same_bits`); if they
    differ, Numba's launch is used from then on.
    """

    __slots__ = ("function", "module", "scalars", "numba")

    def __init__(self, function: Any, module: Any, scalars: list, numba_kernel: Any) -> None:
        self.function = function
        self.module = module
        self.scalars = scalars  # per operand: the NumPy type a number is passed as (None: an array)
        self.numba = numba_kernel

    @classmethod
    def make(cls, kernel: Any, out: Any, operands: list) -> Any:
        import warnings

        from numba import from_dtype, typeof
        from numba.core import types

        sig = [types.Array(from_dtype(out.dtype), 1, "C")]
        scalars: list = []
        for a in operands:
            if isinstance(a, xp.ndarray):
                sig.append(types.Array(from_dtype(a.dtype), 1, "C"))
                scalars.append(None)
            else:
                t = typeof(a)
                sig.append(t)
                scalars.append(np.dtype(str(t)).type if isinstance(t, types.Number) else np.bool_)
        numba_kernel = _NumbaLaunch(kernel)
        blocks = (out.size + THREADS - 1) // THREADS
        reference = xp.empty_like(out)
        numba_kernel(blocks, reference, operands)
        try:
            out.data.memset_async(0xFF, out.nbytes)  # (a launch that writes nothing cannot pass for one that does)
            compiled = kernel.compile(tuple(sig))
            library = compiled._codelibrary
            module = cupy.cuda.function.Module()
            cubin = library.get_cubin()
            module.load(getattr(cubin, "code", cubin))  # (newer numba-cuda: a cuda.core ObjectCode)
            launch = cls(module.get_function(library._entry_name), module, scalars, numba_kernel)
            launch(blocks, out, operands)
            same = _same_bits(out, reference)
        except Exception as err:  # noqa: BLE001 - Numba's own launch still works
            warnings.warn(f"srctrans: launching {kernel.__name__} through Numba ({type(err).__name__}: {err})", stacklevel=3)
            out[...] = reference
            return numba_kernel
        if not same:
            warnings.warn(f"srctrans: {kernel.__name__} launched through CuPy differs from Numba's launch; using Numba's", stacklevel=3)
            out[...] = reference
            return numba_kernel
        return launch

    def __call__(self, blocks: int, out: Any, operands: list) -> None:
        args = [0, 0, out.size, out.itemsize, out.data.ptr, out.size, out.itemsize]
        for a, scalar in zip(operands, self.scalars):
            if scalar is None:
                args += (0, 0, a.size, a.itemsize, a.data.ptr, a.size, a.itemsize)
            else:
                args.append(scalar(a))
        self.function((blocks,), (THREADS,), tuple(args))


def _same_bits(a: Any, b: Any, part: int = 1 << 15) -> bool:
    """Whether two device arrays hold the same bytes in their first and last ``part`` elements
    (copied to the host: no kernel of CuPy's to compile). A launch that passed its arguments
    wrongly writes wrong values everywhere, or nowhere."""
    a, b = a.reshape(-1), b.reshape(-1)
    if a.size <= 2 * part:
        return xp.asnumpy(a).tobytes() == xp.asnumpy(b).tobytes()
    return all(xp.asnumpy(x[s]).tobytes() == xp.asnumpy(y[s]).tobytes() for x, y in ((a, b),) for s in (slice(None, part), slice(-part, None)))


class _NumbaLaunch:
    """A kernel launched by Numba, operands as 1-D views."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, blocks: int, out: Any, operands: list) -> None:
        self.kernel[blocks, THREADS](out.reshape(-1), *[a.reshape(-1) if isinstance(a, xp.ndarray) else a for a in operands])


# --- srctrans.random in a CUDA file ---------------------------------------------------------------


class _OnDevice:
    """A module whose functions take and return device arrays: each call's arrays are copied to
    the host, the function runs there, its arrays go back to the device. ``srctrans.random`` in a
    CUDA file: the same bits as everywhere (JAX's), drawn on the host."""

    def __init__(self, module: Any, children: dict[str, Any] | None = None) -> None:
        self._module = module
        self._children = children or {}

    def __getattr__(self, name: str) -> Any:
        if name in self._children:
            return self._children[name]
        value = getattr(self._module, name)
        if not callable(value) or isinstance(value, type):
            return value

        def call(*args, **kwargs):
            return to_device(value(*to_host(args), **to_host(kwargs)))

        call.__name__ = name
        return call


def _srctrans_on_device() -> Any:
    import srctrans
    import srctrans.random

    if xp is np:
        return srctrans
    return _OnDevice(srctrans, {"random": _OnDevice(srctrans.random)})


srctrans_on_device = _srctrans_on_device()
random_on_device = srctrans_on_device.random


# --- arguments and results ------------------------------------------------------------------------


def to_device(value: Any) -> Any:
    """An argument as the device's array: host arrays copied, device arrays used in place."""
    if isinstance(value, xp.ndarray):
        return value
    if isinstance(value, np.ndarray):
        return xp.asarray(value)
    if hasattr(value, "__cuda_array_interface__"):
        if SIMULATED:
            return value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)
        return xp.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v) for k, v in value.items()}
    return value


def to_host(value: Any) -> Any:
    """A result on the host: device arrays copied back (a pytree's leaves too); anything else as it is."""
    if isinstance(value, (tuple, list)):
        return type(value)(to_host(v) for v in value)
    if isinstance(value, dict):
        return {k: to_host(v) for k, v in value.items()}
    if xp is not np and isinstance(value, xp.ndarray):
        return xp.asnumpy(value)
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    return value


def entry_point(function: Any) -> Any:
    """``function`` of a loaded CUDA file, taking host or device arrays."""

    def run(*args):
        return function(*(to_device(a) for a in args))

    run.__wrapped__ = function
    run.__name__ = getattr(function, "__name__", "run")
    return run


def available() -> None:
    """Raise :class:`BackendUnavailableError` unless a GPU with CuPy (or the simulator) is there."""
    if SIMULATED:
        return
    if not cuda.is_available():
        raise BackendUnavailableError(
            "jit(target='cuda'): no CUDA GPU is usable here (Numba found no CUDA driver or device). "
            "To run on Numba's CUDA simulator instead, set NUMBA_ENABLE_CUDASIM=1 in the environment "
            "before numba.cuda is first imported"
        )
    if cupy is None:
        raise BackendUnavailableError(
            "jit(target='cuda') keeps arrays on the GPU as CuPy arrays, and CuPy is not installed: "
            "pip install 'srctrans[cuda]'"
        )
