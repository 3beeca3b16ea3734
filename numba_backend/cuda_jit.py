"""``jit(..., target="cuda")``: a generated file's CUDA form (:mod:`srctrans.gpu`), loaded and called.

The kernels in the file compile when first launched, for the types of that launch
(Numba's CUDA dispatcher), and are cached on disk beside the file; host code runs as
Python with CuPy (:mod:`numba_backend.cuda_arrays`). :func:`compile_ptx_kernels`
compiles every kernel of such a file to PTX without a GPU, so code that only the
simulator accepts is caught.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any

from numba import cuda

from srctrans.cache import load_module, module_name_for

from . import cuda_arrays
from .cuda import KERNEL_LOG_ENV


def compile_module(
    path: Path, module_name: str, entry: str, bound: dict[str, Any], lock: Callable[[], ContextManager]
) -> Callable:
    """The entry function of ``path``'s CUDA form, taking host or device arrays, returning device arrays."""
    cuda_arrays.available()
    from srctrans.gpu import cuda_file

    with lock():
        cuda_path = cuda_file(Path(path))
    log = os.environ.get(KERNEL_LOG_ENV)
    if log:
        with open(log, "a") as f:
            f.write(f"{cuda_path}\n")
    module = load_module(cuda_path, module_name + "_cuda", bound)
    return cuda_arrays.entry_point(getattr(module, entry))


def kernel_signatures(nparams: int) -> list[tuple]:
    """The argument types a kernel of ``nparams`` parameters is compiled with for PTX: its
    operands all arrays (float64, float32, int64 and bool among float64), or numbers after the first."""
    from numba.core import types

    def arr(t):
        return types.Array(t, 1, "C")

    n = nparams - 1
    return [
        (arr(types.float64),) + (arr(types.float64),) * n,
        (arr(types.float32),) + (arr(types.float32),) * n,
        (arr(types.float64),) + (arr(types.float64),) + (types.float64,) * (n - 1),
        (arr(types.float64),) + (arr(types.int64),) * n,
        (arr(types.float32),) + (arr(types.float32),) + (types.float64,) * (n - 1),
    ]


def compile_ptx_kernels(path: str | Path, cc: tuple[int, int] = (9, 0)) -> dict[str, str]:
    """PTX of every kernel of a ``jit(target='cuda')`` file, for each of :func:`kernel_signatures`
    (of a per-example kernel file, its one kernel for the signature its header gives)."""
    from srctrans.cache import read_header

    from .cuda import compile_ptx_file, for_architecture

    path = Path(path)
    header = read_header(path.read_text())
    if header is not None and "device" in header[0]:  # a per-example kernel (jit(vmap(...)) of a loop)
        return {header[0]["entry"]: compile_ptx_file(path, cc)}
    module = load_module(path, module_name_for(path) + "_ptx")
    found: dict[str, str] = {}
    for name, value in vars(module).items():
        if not name.endswith("_kernel") and "_kernel_" not in name or not hasattr(value, "py_func"):
            continue
        nparams = value.py_func.__code__.co_argcount
        for sig in kernel_signatures(nparams):
            with for_architecture(cc):
                ptx, _ = cuda.compile_ptx(value.py_func, sig, cc=cc)
            found[f"{name}{sig}"] = ptx
    return found


_KERNELS: dict[tuple, tuple] = {}
PER_EXAMPLE_THREADS = 32 if cuda_arrays.SIMULATED else 128


def per_example(
    path: Path, name: str, params: list[str], values: list, batched: list[bool], constants: dict | None = None
) -> tuple[Any, Path]:
    """Function ``name`` of ``path`` run once per example as one CUDA kernel (one thread each):
    ``values`` batched along axis 0 where ``batched`` says; the results stacked on axis 0, on the
    device (a tuple where the function returns one), and the kernel file's path. ``constants``: the numbers of the function's module.

    The kernel file is :func:`srctrans.parallel.kernels.kernel_file`'s (the scalar form pmap's CUDA
    stages use); a function it cannot scalarize raises its located ``SrcTransError``."""
    import numpy as np

    from srctrans.parallel.kernels import ArgSpec, kernel_file, storage_dtype

    cuda_arrays.available()
    xp = cuda_arrays.xp
    specs = []
    args = []
    for p, v, b in zip(params, values, batched):
        if isinstance(v, (bool, np.bool_)):
            specs.append(ArgSpec(p, (), "bool", False))
        elif isinstance(v, (int, np.integer)):
            specs.append(ArgSpec(p, (), np.dtype(type(v)).name if isinstance(v, np.integer) else "int64", False))
        elif isinstance(v, (float, np.floating)):
            specs.append(ArgSpec(p, (), np.dtype(type(v)).name if isinstance(v, np.floating) else "float64", False))
        else:
            v = xp.ascontiguousarray(cuda_arrays.to_device(v))
            specs.append(ArgSpec(p, tuple(v.shape[1:]) if b else tuple(v.shape), np.dtype(v.dtype).name, b))
        args.append(v)
    stat = Path(path).stat()
    numbers = tuple(sorted((k, v) for k, v in (constants or {}).items() if type(v) in (int, float, bool)))
    key = (str(path), stat.st_mtime_ns, stat.st_size, name, tuple(specs), numbers)
    found = _KERNELS.get(key)
    if found is None:
        kpath, src = kernel_file(Path(path), name, specs, constants=dict(numbers))
        log = os.environ.get(KERNEL_LOG_ENV)
        if log:
            with open(log, "a") as f:
                f.write(f"{kpath}\n")
        module = load_module(kpath, module_name_for(kpath))
        found = _KERNELS[key] = (getattr(module, src.kernel), src, kpath)
    kernel, src, kpath = found
    n = next(v.shape[0] for v, b in zip(args, batched) if b)
    outs = [xp.empty((n, *shape), dtype=np.dtype(storage_dtype(dt))) for shape, dt in src.outputs]
    if n:
        kernel[(n + PER_EXAMPLE_THREADS - 1) // PER_EXAMPLE_THREADS, PER_EXAMPLE_THREADS](*args, *outs)
    return (tuple(outs) if src.meta.get("tuple") else outs[0]), kpath
