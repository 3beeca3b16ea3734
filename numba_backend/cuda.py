"""The CUDA backend of ``pmap``: stages run as generated Numba CUDA kernels, one thread per example.

:class:`CudaRunner` implements :class:`srctrans.parallel.runner.Runner`:

- ``put`` splits axis 0 into one block per GPU and copies each with ``cuda.to_device``;
  the blocks stay on their GPU between stages (``Sharded.parts`` are device arrays).
- ``map`` specializes the stage's per-example function on the per-example shapes and
  dtypes of this call and writes a CUDA file beside the stage's file
  (:mod:`srctrans.parallel.kernels`: a device function and a kernel whose grid is sized
  from the shard), then launches it on every GPU into preallocated ``(rows, ...)``
  device arrays.
- ``reduce`` (``sum``, ``max``, ``min``) runs on the device: a kernel folds blocks of
  rows into partial results, a second one folds the partials (so sums are added in
  another order than NumPy's pairwise sum: equal to rounding). The result (one
  example's size) comes back to the host, where the driver may compute with it (pmean
  divides by N) and the next stage copies it to every GPU; partials of several GPUs are
  combined there. ``gather`` concatenates the blocks on the host.
- ``get`` copies the blocks back and concatenates them.

Without a GPU, ``NUMBA_ENABLE_CUDASIM=1`` (set before ``numba.cuda`` is first imported)
runs everything on Numba's CUDA simulator, one device. With neither, :func:`devices`
raises :class:`~srctrans.parallel.devices.BackendUnavailableError` saying so.
:func:`compile_ptx` compiles a generated kernel to PTX for a given architecture without a
GPU, so code that only the simulator accepts is caught.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numba import cuda

from srctrans.cache import load_module, module_name_for
from srctrans.errors import BackendUnavailableError
from srctrans.parallel.devices import Device
from srctrans.parallel.kernels import ArgSpec, KernelSource, kernel_file, storage_dtype
from srctrans.parallel.runner import REDUCTIONS, PythonRunner, Sharded, Stage, split_rows

THREADS_PER_BLOCK = 128
KERNEL_LOG_ENV = "SRCTRANS_CUDA_KERNEL_LOG"  # a file to which the path of every kernel file run is appended
SIMULATED = bool(cuda.config.ENABLE_CUDASIM)


def devices() -> list[Device]:
    """The GPUs Numba sees (the simulator's one under ``NUMBA_ENABLE_CUDASIM=1``)."""
    if not cuda.is_available():
        raise BackendUnavailableError(
            "backend='cuda': no CUDA GPU is usable here (Numba found no CUDA driver or device). "
            "To run on Numba's CUDA simulator instead, set NUMBA_ENABLE_CUDASIM=1 in the environment "
            "before numba.cuda is first imported"
        )
    found = []
    for index, gpu in enumerate(cuda.gpus):
        name = "CUDA simulator" if SIMULATED else _text(getattr(gpu, "name", "GPU"))
        found.append(Device("cuda", index, name=name, handle=gpu.id if hasattr(gpu, "id") else index))
    return found


def put(value: Any, device: Device) -> Any:
    """``value`` in the memory of GPU ``device``, as ``jit(..., target="cuda")`` takes and returns
    arrays: a CuPy array (a NumPy array under the simulator, whose device memory is the host's)."""
    from . import cuda_arrays

    if cuda_arrays.SIMULATED or cuda_arrays.cupy is None:
        cuda_arrays.available()
        return cuda_arrays.to_device(value)
    with cuda_arrays.cupy.cuda.Device(device.index):
        return cuda_arrays.to_device(value)


def make_runner(devs: Sequence[Device]) -> CudaRunner:
    return CudaRunner(devs)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class OnEveryDevice:
    """A value every GPU sees: one device array per device (``parts``), and the host copy."""

    __slots__ = ("parts", "host")

    def __init__(self, parts: list, host: np.ndarray) -> None:
        self.parts = parts
        self.host = host

    @property
    def shape(self) -> tuple[int, ...]:
        return self.host.shape

    @property
    def dtype(self) -> np.dtype:
        return self.host.dtype

    def __array__(self, dtype=None, copy=None):
        return self.host if dtype is None else self.host.astype(dtype)

    def __repr__(self) -> str:
        return f"OnEveryDevice(shape={self.host.shape}, dtype={self.host.dtype}, devices={len(self.parts)})"


class CudaRunner(PythonRunner):
    """Runs pmap's stages as generated CUDA kernels on the GPUs ``devices``."""

    backend = "cuda"

    def __init__(self, devs: Sequence[Device], jit_options: dict | None = None) -> None:
        for d in devs:
            if not isinstance(d, Device) or d.kind != "cuda":
                raise ValueError(f"CudaRunner needs CUDA devices (from srctrans.devices('cuda')), got {d!r}")
        super().__init__(devs, jit_options)
        self._kernels: dict[tuple, tuple[Any, KernelSource, Path]] = {}
        self._reducers: dict[str, tuple[Any, Any]] = {}

    def _on(self, d: int):
        """The context of device ``d`` (the simulator has one device and no contexts to switch)."""
        if SIMULATED or len(self.devices) == 1:
            return contextlib.nullcontext()
        return cuda.gpus[self.devices[d].handle]

    # --- data ---------------------------------------------------------------------------

    def put(self, value: Any, what: str = "the mapped axis") -> Sharded:
        if isinstance(value, Sharded):
            return value
        arr = np.ascontiguousarray(np.asarray(value))
        if arr.ndim == 0:
            raise ValueError(f"{what}: a number cannot be split over devices (it has no axis 0)")
        rows = split_rows(arr.shape[0], len(self.devices), what)
        parts, at = [], 0
        for d, r in enumerate(rows):
            with self._on(d):
                parts.append(cuda.to_device(arr[at:at + r]))
            at += r
        return Sharded(parts, rows, self.devices)

    def replicate(self, value: Any) -> Any:
        """Kept on the host, where the driver may compute with it (a psum of it is N times it);
        each map copies it to every GPU (use :meth:`to_every_device` to copy it once for many maps)."""
        if isinstance(value, OnEveryDevice) or np.ndim(value) == 0:
            return value
        return np.asarray(value)

    def to_every_device(self, value: Any) -> OnEveryDevice:
        """``value`` copied to every GPU once, for maps that all read it."""
        host = np.ascontiguousarray(np.asarray(value))
        parts = []
        for d in range(len(self.devices)):
            with self._on(d):
                parts.append(cuda.to_device(host))
        return OnEveryDevice(parts, host)

    def get(self, value: Any) -> np.ndarray:
        if isinstance(value, OnEveryDevice):
            return value.host
        if not isinstance(value, Sharded):
            return np.asarray(value)
        blocks = []
        for d, part in enumerate(value.parts):
            with self._on(d):
                blocks.append(part.copy_to_host() if hasattr(part, "copy_to_host") else np.asarray(part))
        return np.concatenate(blocks, axis=0)

    # --- work ---------------------------------------------------------------------------

    def kernel_for(self, stage: Stage, specs: list[ArgSpec]) -> tuple[Any, KernelSource, Path]:
        """The compiled kernel (a Numba CUDA dispatcher) of ``stage`` for per-example ``specs``."""
        stat = stage.path.stat()  # a stage file written again (the function changed) gets its kernel again
        key = (str(stage.path), stat.st_mtime_ns, stat.st_size, stage.name, tuple(specs))
        with self._lock:
            found = self._kernels.get(key)
        if found is not None:
            return found
        path, src = kernel_file(stage.path, stage.name, specs)
        log = os.environ.get(KERNEL_LOG_ENV)
        if log:  # a list of every kernel file this process runs (the PTX test compiles them all)
            with open(log, "a") as f:
                f.write(f"{path}\n")
        module = load_module(path, module_name_for(path) + "_" + hashlib.sha1(src.text.encode()).hexdigest()[:8])
        found = (getattr(module, src.kernel), src, path)
        with self._lock:
            self._kernels[key] = found
        return found

    def map(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> tuple[Sharded, ...]:
        batched = tuple(batched)
        if len(args) != len(batched):
            raise TypeError(f"map({stage.name}): {len(args)} arguments but {len(batched)} batched flags")
        if not stage.per_example:
            raise NotImplementedError(
                f"map({stage.name}): backend='cuda' runs per-example (pmap) stages; a stage that takes a whole "
                "shard (sharding) runs on backend='cpu' or 'dask'"
            )
        shards = next((a for a, b in zip(args, batched) if b), None)
        if not isinstance(shards, Sharded):
            raise ValueError(f"map({stage.name}): no sharded argument says how the examples are split")
        args = tuple(a if not b else (a if isinstance(a, Sharded) else self.put(a)) for a, b in zip(args, batched))
        params = _parameter_names(stage)
        specs = [_spec(name, a, b) for name, a, b in zip(params, args, batched)]
        kernel, src, path = self.kernel_for(stage, specs)
        outs: list[list] = [[] for _ in src.outputs]
        starts = shards.starts()
        for d, device in enumerate(self.devices):
            rows = shards.rows[d]
            with self._on(d):
                launch = [_on_device(a, d, b) for a, b in zip(args, batched)]
                results = [cuda.device_array((rows, *shape), dtype=np.dtype(storage_dtype(dt))) for shape, dt in src.outputs]
                blocks = (rows + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
                if rows:
                    kernel[blocks, THREADS_PER_BLOCK](*launch, *results)
            for k, r in enumerate(results):
                outs[k].append(r)
            record = {
                "stage": stage.name, "device": device, "rows": (starts[d], starts[d] + rows),
                "thread": threading.current_thread().name, "kernel": f"{path.name}:{src.kernel}",
                "grid": (blocks, THREADS_PER_BLOCK),
            }
            with self._lock:
                self._trace.append(record)
        if len(src.outputs) != stage.outputs:
            raise ValueError(f"map({stage.name}): the stage returns {len(src.outputs)} values, the stage says {stage.outputs}")
        return tuple(Sharded(parts, shards.rows, self.devices) for parts in outs)

    def reduce(self, kind: str, value: Sharded) -> Any:
        if kind not in REDUCTIONS:
            raise ValueError(f"reduce kind must be one of {', '.join(map(repr, REDUCTIONS))}, got {kind!r}")
        if not isinstance(value, Sharded):
            raise TypeError(f"reduce({kind!r}) expects the sharded result of a map, got {type(value).__name__}")
        if kind == "gather":
            return self.get(value)
        partials = []
        for d, part in enumerate(value.parts):
            with self._on(d):
                partials.append(self._reduce_on_device(kind, part))
        combine = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
        total = partials[0] if len(partials) == 1 else combine(np.stack(partials), axis=0)
        # On the host: the driver may do arithmetic on it (pmean divides by N); the next map copies
        # it to every device (a number is passed to the kernel by value).
        return total[()] if total.ndim == 0 else total

    def _reduce_on_device(self, kind: str, part: Any) -> np.ndarray:
        """``kind`` over axis 0 of one device array, on its device; the (small) result on the host."""
        rows = part.shape[0]
        shape = tuple(part.shape[1:])
        width = int(np.prod(shape, dtype=np.int64))
        if rows == 0:
            if kind != "sum":
                raise ValueError(f"reduce({kind!r}) of zero examples")
            return np.zeros(shape, np.add.reduce(np.zeros(1, part.dtype)).dtype)
        if kind == "sum" and np.add.reduce(np.zeros(1, part.dtype)).dtype != part.dtype:
            # NumPy sums booleans and small integers in a wider type: done on the host, as NumPy does
            return np.sum(part.copy_to_host(), axis=0)
        flat = part if part.ndim == 2 else part.reshape(rows, width)
        chunk = 256
        chunks = (rows + chunk - 1) // chunk
        first, second = self._reducer(kind)
        partial = cuda.device_array((chunks, width), dtype=part.dtype)
        grid = ((chunks * width + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, THREADS_PER_BLOCK)
        first[grid](flat, partial, chunk)
        out = cuda.device_array(width, dtype=part.dtype)
        second[(width + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, THREADS_PER_BLOCK](partial, out)
        return out.copy_to_host().reshape(shape)

    def _reducer(self, kind: str):
        with self._lock:
            found = self._reducers.get(kind)
            if found is None:
                found = _reduction_kernels(kind)
                self._reducers[kind] = found
        return found


def _parameter_names(stage: Stage) -> list[str]:
    import inspect

    return list(inspect.signature(stage.python).parameters)


def _spec(name: str, value: Any, batched: bool) -> ArgSpec:
    """What one example of this argument looks like."""
    if batched:
        part = value.parts[0]
        return ArgSpec(name, tuple(part.shape[1:]), np.dtype(part.dtype).name, True)
    if isinstance(value, OnEveryDevice) or hasattr(value, "shape") and np.ndim(value) > 0:
        return ArgSpec(name, tuple(value.shape), np.dtype(value.dtype).name, False)
    if isinstance(value, (bool, np.bool_)):
        return ArgSpec(name, (), "bool", False)
    if isinstance(value, (int, np.integer)):
        return ArgSpec(name, (), np.dtype(type(value)).name if isinstance(value, np.integer) else "int64", False)
    if isinstance(value, (float, np.floating)):
        return ArgSpec(name, (), np.dtype(type(value)).name if isinstance(value, np.floating) else "float64", False)
    raise TypeError(f"argument {name!r}: backend='cuda' takes numbers and arrays, got {type(value).__name__}")


def _on_device(value: Any, d: int, batched: bool) -> Any:
    if batched:
        return value.parts[d]
    if isinstance(value, OnEveryDevice):
        return value.parts[d]
    if np.ndim(value) > 0:
        return cuda.to_device(np.ascontiguousarray(value))
    return value


def _reduction_kernels(kind: str):
    """Two kernels: rows folded by blocks of ``chunk`` into ``partial[c, j]``, then the partials into ``out[j]``."""
    pick = {  # NaN propagates as in NumPy's max/min: a NaN operand wins
        "sum": "a + b",
        "max": "a if a != a or (b == b and a >= b) else b",
        "min": "a if a != a or (b == b and a <= b) else b",
    }[kind]
    text = f'''
@cuda.jit(device=True)
def combine(a, b):
    return {pick}


@cuda.jit
def fold_rows(x, partial, chunk):
    t = cuda.grid(1)
    width = x.shape[1]
    if t < partial.shape[0] * width:
        c = t // width
        j = t % width
        start = c * chunk
        stop = min(start + chunk, x.shape[0])
        acc = x[start, j]
        for r in range(start + 1, stop):
            acc = combine(acc, x[r, j])
        partial[c, j] = acc


@cuda.jit
def fold_partials(partial, out):
    j = cuda.grid(1)
    if j < out.shape[0]:
        acc = partial[0, j]
        for c in range(1, partial.shape[0]):
            acc = combine(acc, partial[c, j])
        out[j] = acc
'''
    namespace: dict[str, Any] = {"cuda": cuda}
    exec(compile(text, f"<srctrans cuda reduce {kind}>", "exec"), namespace)  # noqa: S102 - fixed text above
    return namespace["fold_rows"], namespace["fold_partials"]


# --- PTX, without a GPU -----------------------------------------------------------------------


def kernel_signature(meta: dict):
    """The Numba signature of a generated kernel, from its file's meta (``KernelSource.meta``):
    batched arguments and the results with the example axis first."""
    from numba import types
    from numba.np.numpy_support import from_dtype

    argtypes = []
    for _, shape, dtype, batched in meta["args"]:
        scalar = from_dtype(np.dtype(dtype))
        ndim = len(shape) + (1 if batched else 0)
        argtypes.append(types.Array(scalar, ndim, "C") if ndim else scalar)
    for shape, dtype in meta["outputs"]:
        argtypes.append(types.Array(from_dtype(np.dtype(dtype)), len(shape) + 1, "C"))
    return types.void(*argtypes)


def compile_ptx_file(path: str | Path, cc: tuple[int, int] = (9, 0)) -> str:
    """PTX of the kernel in a generated CUDA file (its header's meta gives the signature)."""
    from srctrans.cache import read_header

    path = Path(path)
    header = read_header(path.read_text())
    if header is None:
        raise ValueError(f"{path} is not an intact generated CUDA file")
    meta = header[0]
    module = load_module(path, module_name_for(path) + "_ptx")
    return compile_ptx(getattr(module, meta["entry"]), meta, cc)


class _Architecture:
    """Stands for the current device while compiling device functions for ``cc`` without a GPU."""

    def __init__(self, cc: tuple[int, int]) -> None:
        self.compute_capability = cc


@contextlib.contextmanager
def for_architecture(cc: tuple[int, int]):
    """While compiling to PTX for ``cc`` without a GPU: device functions ask the current
    device for its architecture, and get ``cc``."""
    if SIMULATED:
        raise RuntimeError("compiling PTX needs the real CUDA target: unset NUMBA_ENABLE_CUDASIM")
    import numba.cuda.dispatcher as dispatcher

    original = dispatcher.get_current_device
    if not cuda.is_available():
        dispatcher.get_current_device = lambda: _Architecture(cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = original


def compile_ptx(kernel: Any, meta: dict, cc: tuple[int, int] = (9, 0)) -> str:
    """PTX of a generated kernel for compute capability ``cc`` (no GPU needed; not under the simulator)."""
    with for_architecture(cc):
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature(meta), cc=cc)
    return ptx
