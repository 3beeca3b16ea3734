"""Runners: what runs the stages of a parallel program on devices, one object per (backend, devices).

A generated parallel file (see :mod:`srctrans.parallel.stages`) holds per-example *stage
functions* and a driver that calls a runner::

    def loss_pmap(run, x, w):
        # stage 1 of 2: map over the examples
        h, t = run.map(loss_stage0, (x, w), batched=(True, False))
        # combine: psum over 'i'
        s = run.reduce("sum", t)
        # stage 2 of 2
        out, = run.map(loss_stage1, (h, s), batched=(True, False))
        return out

The driver's ``x`` arrives as :class:`Sharded` (``run.put(x)``: axis 0 split into one
contiguous block per device), ``w`` as ``run.replicate(w)``. Every backend implements
:class:`Runner`:

- :class:`PythonRunner` (here): the reference. Runs each shard's batched function (the
  vmap of the stage, batch axis first) in Python, one device after another. What
  ``SRCTRANS_DISABLE_JIT=1`` runs.
- ``numba_backend.parallel_cpu.CpuRunner``: the shards compiled, run by a compiled
  ``prange`` loop over the ``(D, N/D, ...)`` view of each batched argument (pmap's
  stages), or on one thread per device as compiled code that releases the GIL
  (sharding's whole-shard stages).
- ``numba_backend.cuda`` and ``numba_backend.dask_runner``: imported by
  :func:`runner_for` only when asked for. Each module defines ``make_runner(devices)
  -> Runner`` (or a class ``CudaRunner`` / ``DaskRunner`` taking the devices) and
  ``devices() -> list[Device]``.

A :class:`Stage` is found by the name of its function in the generated file;
``stage.batched_function(jit_options, args)`` gives the file, name and function that run a
whole shard.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..backend import parallel_module
from ..errors import BackendUnavailableError
from ..faces import face
from .devices import Device, check_backend
from .devices import devices as list_devices

REDUCTIONS = ("sum", "max", "min", "gather")


class Sharded:
    """A value split along axis 0 into one block per device, kept where the runner put it.

    ``parts[d]`` is device ``d``'s block (a NumPy array here; a device array or a Dask
    future for other runners), ``rows[d]`` how many examples it holds; ``n`` is their
    total. A runner may keep more in ``whole`` (the CPU runner keeps the array the blocks
    are views of, so a stage can see all shards at once as a ``(D, N/D, ...)`` view).
    """

    __slots__ = ("parts", "rows", "devices", "whole")

    def __init__(self, parts: list, rows: Sequence[int], devices: Sequence[Device], whole: Any = None) -> None:
        if len(parts) != len(devices) or len(rows) != len(devices):
            raise ValueError(f"Sharded: {len(parts)} parts and {len(rows)} row counts for {len(devices)} devices")
        self.parts = list(parts)
        self.rows = [int(r) for r in rows]
        self.devices = list(devices)
        self.whole = whole

    @property
    def n(self) -> int:
        """How many examples, over all shards."""
        return sum(self.rows)

    def starts(self) -> list[int]:
        """The index of each shard's first example in the whole batch."""
        out, at = [], 0
        for r in self.rows:
            out.append(at)
            at += r
        return out

    def __repr__(self) -> str:
        return f"Sharded(n={self.n}, rows={self.rows}, devices={[str(d) for d in self.devices]})"


class Stage:
    """One map stage of a parallel program: a function of the generated parallel file.

    ``python`` is the per-example function (``per_example=True``, pmap's stages) or the
    function that takes a whole shard (``per_example=False``, sharding's stages). It
    returns a tuple of ``outputs`` values. ``batched[k]`` says whether parameter ``k`` is
    sharded along axis 0 (True) or the same on every device (False). ``gen`` is the
    :class:`srctrans.variant.Generated` of the file when there is one (compiling a
    ``per_example=False`` stage needs it).
    """

    def __init__(
        self,
        name: str,
        path: Path,
        python: Callable,
        batched: Sequence[bool],
        outputs: int,
        per_example: bool = True,
        gen: Any = None,
    ) -> None:
        self.name = name
        self.path = Path(path)
        self.python = python
        self.batched = tuple(bool(b) for b in batched)
        self.outputs = int(outputs)
        self.per_example = per_example
        self.gen = gen
        self._vmaps: dict[tuple | None, Any] = {}  # vmaps by jit options; whole-shard functions by ("whole", options)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Stage {self.name} of {self.path.name}: batched={self.batched}, {self.outputs} outputs>"

    def vmapped(self, jit_options: dict | None = None):
        """The :class:`srctrans.batching.api.VMapped` of the stage (batch axis first on batched parameters)."""
        VMapped = face("VMapped")
        key = tuple(sorted((jit_options or {}).items())) if jit_options is not None else None
        with self._lock:
            vm = self._vmaps.get(key)
            if vm is None:
                in_axes = tuple(0 if b else None for b in self.batched)
                vm = VMapped(self.python, in_axes=in_axes, jit_options=jit_options)
                self._vmaps[key] = vm
        return vm

    def batched_function(self, jit_options: dict | None = None, args: Sequence | None = None) -> tuple[Path, str, Callable]:
        """The file, function name and function that run a whole shard.

        For a per-example stage: the vmap of the stage, batched parameters with the shard's
        examples on axis 0, every output with them on axis 0. Its generated file depends on
        the rank of each argument: ``args`` (one shard's arguments, or anything of the same
        ranks) says them; without ``args`` every batched argument is taken to be a vector
        of numbers and every other one a number. ``jit_options`` (a dict, possibly empty)
        compiles it with Numba (unless ``SRCTRANS_DISABLE_JIT=1``); None: the Python
        function. For ``per_example=False`` the stage's own function.
        """
        from ..config import config

        compiled = jit_options is not None and not config.disable_jit
        if not self.per_example:
            if not compiled or self.gen is None:
                return self.path, self.name, self.python
            options = {"parallel": False, "fastmath": False, "cache": True, "boundscheck": True}
            options.update({k: v for k, v in jit_options.items() if k in options})
            key = ("whole",) + tuple(sorted(options.items()))
            with self._lock:  # made once per set of options: a new Specialization would compile again
                spec = self._vmaps.get(key)
                if spec is None:
                    from ..specialization import Specialization

                    spec = self._vmaps[key] = Specialization(self.gen, options)
            return self.path, self.gen.entry, spec.compiled
        spec = self.specialization(jit_options, args)
        fn = spec.compiled if compiled else spec.python
        return spec.gen.path, spec.gen.entry, fn

    def specialization(self, jit_options: dict | None, args: Sequence | None, loop: bool = False):
        """The vmap file's specialization (``.gen``, ``.python``, ``.compiled``) for arguments like ``args``.

        ``loop``: vmap's per-example loop where it would vectorize (what ``jit(vmap)`` falls
        back to when Numba refuses the vectorized file).
        """
        vm = self.vmapped(jit_options)
        if args is None:
            ranks = tuple(0 for _ in self.batched)
        else:
            if len(args) != len(self.batched):
                raise TypeError(f"{self.name} takes {len(self.batched)} arguments, got {len(args)}")
            ranks = tuple(int(np.ndim(a)) - (1 if b else 0) for a, b in zip(args, self.batched))
        from ..tree import tree_flatten

        sample = tuple(np.zeros((1,) * (r + (1 if b else 0))) for r, b in zip(ranks, self.batched))
        treedefs = [tree_flatten(a)[1] for a in sample]
        per_level = [(self.batched, ranks, None)]
        return vm._specializations([vm], per_level, sample, treedefs, compiled_loop=loop)[0]


@runtime_checkable
class Runner(Protocol):
    """What every backend implements (see the module docstring)."""

    backend: str
    devices: list

    def put(self, value: Any) -> Sharded: ...

    def replicate(self, value: Any) -> Any: ...

    def map(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> tuple[Sharded, ...]: ...

    def reduce(self, kind: str, value: Sharded) -> Any: ...

    def get(self, value: Sharded) -> np.ndarray: ...

    def trace(self) -> list[dict]: ...


def split_rows(n: int, count: int, what: str = "the mapped axis") -> list[int]:
    """``count`` equal blocks of ``n`` rows; a ValueError when they are not equal."""
    if n % count:
        raise ValueError(f"{what} has size {n}, which does not divide into {count} devices (N % D = {n % count})")
    return [n // count] * count


class PythonRunner:
    """The reference runner: every shard's batched function run in Python, device after device.

    ``jit_options`` (None here) is what :meth:`Stage.batched_function` is given; a
    subclass that only changes how a shard runs can override :meth:`run_shard`.
    """

    backend = "cpu"

    def __init__(self, devices: Sequence[Device], jit_options: dict | None = None) -> None:
        if not devices:
            raise ValueError("a runner needs at least one device")
        self.devices = list(devices)
        self.jit_options = jit_options
        self._trace: list[dict] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.backend} on {len(self.devices)} devices>"

    # --- data ---------------------------------------------------------------------------

    def put(self, value: Any, what: str = "the mapped axis") -> Sharded:
        arr = np.asarray(value)
        if arr.ndim == 0:
            raise ValueError(f"{what}: a number cannot be split over devices (it has no axis 0)")
        rows = split_rows(arr.shape[0], len(self.devices), what)
        parts = [arr[d * rows[0]:(d + 1) * rows[0]] for d in range(len(self.devices))]  # (equal blocks)
        return Sharded(parts, rows, self.devices, whole=arr)

    def replicate(self, value: Any) -> Any:
        return value

    def get(self, value: Sharded) -> np.ndarray:
        if value.whole is not None:
            return value.whole
        return np.concatenate([np.asarray(p) for p in value.parts], axis=0)

    def trace(self) -> list[dict]:
        """One record per (stage, device) of the last call: stage, device, rows (start, stop), thread."""
        return list(self._trace)

    def start_call(self) -> None:
        """Forget the trace of the previous call (the driver's caller calls this)."""
        self._trace = []

    # --- work ---------------------------------------------------------------------------

    def map(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> tuple[Sharded, ...]:
        batched = tuple(batched)
        if len(args) != len(batched):
            raise TypeError(f"map({stage.name}): {len(args)} arguments but {len(batched)} batched flags")
        shards = next((a for a, b in zip(args, batched) if b), None)
        if shards is None:
            raise ValueError(f"map({stage.name}): no sharded argument says how the examples are split")
        sample = tuple(a.parts[0] if b else a for a, b in zip(args, batched))
        _, _, fn = stage.batched_function(self.jit_options, sample)
        outs: list[list] = [[] for _ in range(stage.outputs)]
        for d, device in enumerate(self.devices):
            shard_args = tuple(a.parts[d] if b else a for a, b in zip(args, batched))
            result = self.run_shard(fn, shard_args)
            if stage.outputs == 1 and not isinstance(result, tuple):
                result = (result,)
            for k in range(stage.outputs):
                outs[k].append(np.asarray(result[k]))
            start = shards.starts()[d]
            self._record(stage, device, (start, start + shards.rows[d]), threading.current_thread().name)
        return tuple(Sharded(parts, shards.rows, self.devices) for parts in outs)

    def run_shard(self, fn: Callable, args: tuple) -> Any:
        return fn(*args)

    def reduce(self, kind: str, value: Sharded) -> Any:
        if kind not in REDUCTIONS:
            raise ValueError(f"reduce kind must be one of {', '.join(map(repr, REDUCTIONS))}, got {kind!r}")
        parts = [np.asarray(p) for p in value.parts]
        if kind == "gather":
            return np.concatenate(parts, axis=0)
        combine = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
        partial = [combine(p, axis=0) for p in parts]  # each device's share
        return combine(np.stack(partial), axis=0)  # and the combine over devices

    def _record(self, stage: Stage, device: Device, rows: tuple[int, int], thread: Any) -> None:
        with self._lock:
            self._trace.append({"stage": stage.name, "device": device, "rows": rows, "thread": thread})


_RUNNERS: dict[tuple, Any] = {}
_RUNNERS_LOCK = threading.Lock()


def runner_for(
    backend: str | None, devices: Sequence[Device] | None = None, jit: bool = True, jit_options: dict | None = None
) -> Runner:
    """The runner for ``backend`` on ``devices`` (default: all of that backend's), one per pair.

    ``"cpu"``: :class:`numba_backend.parallel_cpu.CpuRunner` (compiled shards, with
    ``jit_options`` such as ``fastmath``), or :class:`PythonRunner` when ``jit`` is False or
    ``SRCTRANS_DISABLE_JIT=1``. ``"cuda"`` and ``"dask"`` import their module now; a clear
    error when it cannot be imported.
    """
    from ..config import config

    backend = check_backend(backend)
    devs = list(list_devices(backend) if devices is None else devices)
    for d in devs:
        if not isinstance(d, Device):
            raise TypeError(f"devices must be srctrans Device objects (from srctrans.devices()), got {d!r}")
        if d.kind != backend:
            raise ValueError(f"device {d} is not a {backend!r} device (backend={backend!r})")
    compiled = jit and not config.disable_jit
    options = tuple(sorted((jit_options or {}).items())) if backend == "cpu" and compiled else ()
    key = (backend, tuple(devs), compiled if backend == "cpu" else True, options)
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(key)
        if runner is not None:
            return runner
        if backend == "cpu":
            if compiled:
                runner = parallel_module("cpu").CpuRunner(devs, dict(options))
            else:
                runner = PythonRunner(devs)
        else:
            module = parallel_module(backend)
            make = getattr(module, "make_runner", None)
            if make is None:
                for cls_name in (f"{backend.capitalize()}Runner", f"{backend.upper()}Runner", "Runner"):
                    make = getattr(module, cls_name, None)
                    if make is not None:
                        break
            if make is None:
                raise BackendUnavailableError(f"backend={backend!r}: {module.__name__} defines no make_runner(devices)")
            runner = make(devs)
        _RUNNERS[key] = runner
        return runner
