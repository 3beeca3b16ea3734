"""Devices that ``pmap`` and sharding spread work over, one API for every backend.

A :class:`Device` names one place where a shard of the work runs:

- ``"cpu"``: a *logical* CPU device. ``SRCTRANS_CPU_DEVICES=8`` makes
  :func:`devices` list eight of them (default one), like JAX's forced host device
  count; they share the machine's cores (a mesh of 8 runs on 2 cores), each running
  its shard on a thread of Numba's ``prange`` pool.
- ``"cuda"``: a GPU (or the simulator's one), listed by :mod:`numba_backend.cuda`.
- ``"dask"``: a worker of the connected Dask client, listed by
  :mod:`numba_backend.dask_runner`.

The count is read from the environment at each call of :func:`devices`, so a test
can set it with ``monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "8")``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..backend import parallel_module
from ..errors import BackendUnavailableError  # noqa: F401  (srctrans.parallel.devices.BackendUnavailableError, as before)

BACKENDS = ("cpu", "cuda", "dask")

CPU_DEVICES_ENV = "SRCTRANS_CPU_DEVICES"

# Numba's OpenMP threading layer (libgomp) keeps its threads spinning after each parallel
# region (GOMP_SPINCOUNT, some 300,000 turns). On a machine whose cores are all busy the
# spinning threads use up their time slices, and the next region's end waits for them to be
# scheduled again: a pmap call that computes for 3 ms took 12-16 ms, a prange over one
# iteration 12 ms, where sleeping threads (spin count 0, what OMP_WAIT_POLICY=passive means
# to libgomp) are woken in about 10 us. The price is on idle cores after a pause: on this
# 2-core virtual machine a two-thread region of 0.7 ms back to back took 1.4 ms after 3 ms
# of sleep with sleeping threads and 0.9 ms with spinning ones (2026-12-03; after a 30 ms
# pause, 2.6 against 2.0 ms: the machine itself is slow to resume). Set before libgomp is
# loaded (at the first parallel launch); a choice of the user's (either variable set) is kept.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "0")


@dataclass(frozen=True)
class Device:
    """One device: its ``kind`` (``"cpu"``, ``"cuda"``, ``"dask"``) and ``index`` among its kind.

    ``name`` says more where there is more to say (a GPU's model, a Dask worker's address);
    ``handle`` is whatever the backend needs to reach it (a worker address, a CUDA device
    id); neither takes part in equality, so devices compare and hash by (kind, index).
    """

    kind: str
    index: int
    name: str = field(default="", compare=False)
    handle: Any = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> int:
        return self.index

    def __repr__(self) -> str:
        extra = f", name={self.name!r}" if self.name else ""
        return f"Device({self.kind!r}, {self.index}{extra})"

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}"


def cpu_device_count() -> int:
    """How many logical CPU devices there are: ``SRCTRANS_CPU_DEVICES`` (default 1)."""
    text = os.environ.get(CPU_DEVICES_ENV, "").strip()
    if not text:
        return 1
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{CPU_DEVICES_ENV}={text!r}: give a positive whole number of logical CPU devices")
    return count


def check_backend(backend: str | None) -> str:
    """``backend`` or the default (``"cpu"``); a ValueError naming the choices for any other."""
    if backend is None:
        return "cpu"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))} (or None for 'cpu'); got {backend!r}")
    return backend


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (default ``"cpu"``), like ``jax.devices()``.

    >>> import srctrans
    >>> srctrans.devices()   # with SRCTRANS_CPU_DEVICES unset
    [Device('cpu', 0)]
    """
    backend = check_backend(backend)
    if backend == "cpu":
        return [Device("cpu", i) for i in range(cpu_device_count())]
    module = parallel_module(backend)
    lister = getattr(module, "devices", None) or getattr(module, "list_devices", None)
    if lister is None:
        raise BackendUnavailableError(f"backend={backend!r}: {module.__name__} does not define devices()")
    return list(lister())


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))
