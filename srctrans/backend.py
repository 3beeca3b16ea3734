"""The backend interface: the one place srctrans reaches the code that compiles and runs its files.

srctrans writes Python files; a backend compiles and runs them. The modules of each backend
are named here and imported by name (``importlib``) the first time they are needed, so no
other module of srctrans imports a backend, a small ``jit`` does not pay for the GPU's or
Dask's modules, and a backend whose dependencies are missing gives a clear
:class:`~srctrans.errors.BackendUnavailableError`. The one backend today is ``numba_backend``;
it imports from srctrans only what its functions overload or extend (``srctrans.runtime``,
``srctrans.random``, the runner and device classes of ``srctrans.parallel``, ``srctrans.cache``'s
file helpers, errors and config), never the transformations.

What each module provides:

- ``JIT_MODULES[target]``: ``compile_module(path, module_name, entry, bound, ...)``, the
  compiled entry function of a generated file (``jit(target=...)``); the CUDA one also
  ``per_example(...)``, a batched file run one example per thread (``vmap`` on the GPU).
- ``PARALLEL_MODULES[backend]``: ``devices() -> list[Device]`` and
  ``make_runner(devices, options) -> Runner`` (:mod:`srctrans.parallel.runner`) for ``pmap`` and
  sharding; the CUDA one also ``put`` (``device_put``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import BackendUnavailableError

JIT_MODULES = {"cpu": "numba_backend.cpu", "cuda": "numba_backend.cuda_jit"}
PARALLEL_MODULES = {"cpu": "numba_backend.parallel_cpu", "cuda": "numba_backend.cuda", "dask": "numba_backend.dask_runner"}


def _load(name: str, what: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as err:
        missing = getattr(err, "name", None)
        why = f"{name} is not part of this installation" if missing == name else f"importing {name} failed: {err}"
        raise BackendUnavailableError(f"{what} is not available: {why} (try {extra})") from err


def jit_module(target: str) -> ModuleType:
    """The module compiling generated files for ``jit(target=target)``."""
    return _load(JIT_MODULES[target], f"target={target!r}", "pip install 'srctrans[cuda]'" if target == "cuda" else "pip install srctrans")


def parallel_module(backend: str) -> ModuleType:
    """The module running ``pmap`` and sharding on ``backend``, imported now."""
    extra = {"cuda": "pip install 'srctrans[cuda]'", "dask": "pip install 'srctrans[dask]'"}.get(backend, "pip install srctrans")
    return _load(PARALLEL_MODULES[backend], f"backend={backend!r}", extra)
