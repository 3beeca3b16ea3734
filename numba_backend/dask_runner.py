"""pmap's Dask runner: each worker of a ``distributed.Client`` is a device.

The devices are the workers of :func:`srctrans.distributed.current_client`, in the order
:func:`srctrans.distributed.worker_addresses` gives. :class:`DaskRunner` implements the
runner protocol of :mod:`srctrans.parallel.runner`:

- ``put(x)`` splits axis 0 into one block per device and scatters each block to its
  device's worker, where it stays (a :class:`DaskSharded` holds the futures). Putting the
  same array again (same memory, same contents) gives back the blocks already there, so
  repeated calls on the same data move nothing.
- ``map(stage, args, batched)`` ships the generated file that runs a whole shard (the vmap
  of the stage, see :meth:`Stage.batched_function`) to each worker as text, in a
  :class:`Program`. The worker writes it into its own cache folder (``dask-worker/`` under
  its srctrans cache: ``SRCTRANS_CACHE_DIR`` or the per-user folder), loads it and compiles
  it with Numba there (once per worker process; Numba's on-disk cache beside the file
  serves the next process), then runs it on the shard that is already there. The outputs
  stay on that worker. Without jit (``SRCTRANS_DISABLE_JIT=1``) the file runs as Python.
- ``reduce(kind, value)``: every worker reduces its own shard (a Dask task next to the
  data), one more task combines those partials, and the client gets the result.
- ``get(value)`` gathers the shards; ``trace()`` lists which worker ran which rows.

When a worker dies during a call, the values the call needs are rebuilt from what made
them: the blocks of ``put`` are scattered again from the client's copy of the array, the
outputs of ``map`` are computed again on a surviving (or restarted) worker, and the step
that failed runs again. A call returns the right result or raises
:class:`DaskWorkerLostError`; it never returns a partial one. Note that this keeps the
intermediate values of a call (the inputs of each map) on the workers while its results
are alive.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from srctrans.errors import BackendUnavailableError
from srctrans.parallel.devices import Device
from srctrans.parallel.runner import REDUCTIONS, PythonRunner, Sharded, Stage, split_rows

__all__ = ["DaskRunner", "DaskSharded", "DaskWorkerLostError", "Program", "devices", "make_runner"]


class DaskWorkerLostError(RuntimeError):
    """Dask workers died during a call and it could not be finished on the others (no result is returned)."""


class CompileRefused(Exception):
    """Numba refused a shipped file on a worker: ``(summary, file, line, details)``, plain enough to pickle."""

    def __init__(self, summary: str, generated_file: str, generated_line: int | None, details: str) -> None:
        super().__init__(summary, generated_file, generated_line, details)
        self.summary = summary
        self.generated_file = generated_file
        self.generated_line = generated_line
        self.details = details

    def __str__(self) -> str:
        return self.summary


# --- what runs on the workers ---------------------------------------------------------------


@dataclass(eq=False)
class Program:
    """A generated file as the workers get it: its text and what loads and compiles it there.

    ``options`` are :func:`numba_backend.cpu.compile_module`'s keyword options, or None to
    run the file as Python. ``extras`` are generated modules the file imports, as
    ``(module name, text)``, loaded first under those names. ``bound`` holds the load-time
    values the file's header lists (pickled with the task).
    """

    file_name: str
    text: str
    entry: str
    functions: tuple[str, ...]
    bound: dict = field(default_factory=dict)
    options: tuple | None = None
    extras: tuple = ()
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            digest = hashlib.sha1()
            for part in (self.file_name, self.text, self.entry, repr(self.functions), repr(self.options)):
                digest.update(part.encode() + b"\0")
            for name, text in self.extras:
                digest.update(name.encode() + b"\0" + text.encode() + b"\0")
            self.key = digest.hexdigest()


_LOADED: dict[str, Callable] = {}
_LOADED_LOCK = threading.Lock()


def worker_folder() -> Path:
    """Where a worker writes the files it is sent: ``dask-worker/`` in its srctrans cache."""
    from srctrans.cache import user_cache_root
    from srctrans.config import config

    root = Path(config.cache_dir) if config.cache_dir else user_cache_root()
    return root / "dask-worker"


def load_program(program: Program) -> Callable:
    """The program's entry function on this worker: written, loaded and (with options) compiled once per process."""
    fn = _LOADED.get(program.key)
    if fn is not None:
        return fn
    with _LOADED_LOCK:
        fn = _LOADED.get(program.key)
        if fn is not None:
            return fn
        from srctrans.cache import file_lock, load_module, module_name_for, write_if_changed

        folder = worker_folder() / program.key[:16]
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in program.extras:
            extra = folder / f"{name}.py"
            write_if_changed(extra, text)
            if name not in sys.modules:
                load_module(extra, name)
        path = folder / program.file_name
        write_if_changed(path, program.text)
        if program.options is None:
            module = load_module(path, module_name_for(path) + "_py", dict(program.bound))
            fn = getattr(module, program.entry)
        else:
            from .cpu import compile_module

            fn = compile_module(
                path,
                module_name_for(path),
                list(program.functions),
                program.entry,
                dict(program.bound),
                lock=lambda: file_lock(path),
                **dict(program.options),
            )
        _LOADED[program.key] = fn
        return fn


def loaded() -> dict[str, str]:
    """What this worker process has loaded: program key -> the kind of function it runs (``CPUDispatcher``: compiled)."""
    return {key: type(fn).__name__ for key, fn in _LOADED.items()}


def run_shard(program: Program, items: tuple, *values: Any) -> tuple | CompileRefused:
    """Run ``program`` on one shard; ``items[k]`` picks output ``items[k]`` of a map's tuple (None: the value).

    When Numba refuses the file the refusal is the result (not an error, which the worker
    would log): the client then sends vmap's loop instead (see :meth:`DaskRunner._first_run`).
    """
    args = [v if k is None else v[k] for v, k in zip(values, items)]
    fn = load_program(program)
    try:
        out = fn(*args)
    except Exception as err:
        if hasattr(err, "generated_file") and hasattr(err, "summary"):
            return CompileRefused(
                err.summary, err.generated_file, getattr(err, "generated_line", None), getattr(err, "details", "")
            )
        raise
    return out if isinstance(out, tuple) else (out,)


def take(block: Any, item: int | None) -> Any:
    if isinstance(block, CompileRefused):
        raise block
    return block if item is None else block[item]


def describe(block: tuple | CompileRefused) -> list[tuple[tuple, str]] | CompileRefused:
    """The per-example shape and dtype of each output in a map's block (or Numba's refusal)."""
    if isinstance(block, CompileRefused):
        return block
    return [(tuple(np.shape(v)[1:]), np.asarray(v).dtype.str) for v in block]


def partial(kind: str, block: Any, item: int | None) -> Any:
    """One worker's share of a reduction over its shard's examples (as the reference runner computes it)."""
    value = np.asarray(take(block, item))
    if kind == "gather":
        return value
    return {"sum": np.sum, "max": np.max, "min": np.min}[kind](value, axis=0)


def combine(kind: str, *partials: Any) -> Any:
    """The partials of every worker combined (in device order)."""
    if kind == "gather":
        return np.concatenate([np.asarray(p) for p in partials], axis=0)
    return {"sum": np.sum, "max": np.max, "min": np.min}[kind](np.stack(partials), axis=0)


# --- the client side --------------------------------------------------------------------------


class _Lost(Exception):
    """Some data or work of this step was on workers that are gone."""

    def __init__(self, workers: set) -> None:
        super().__init__(", ".join(sorted(map(str, workers))) or "unknown workers")
        self.workers = set(workers)


class _Group:
    """The blocks one ``put`` or one ``map`` made (one future per device) and how to make each again.

    ``recipe`` is ``("host", array, starts)`` for ``put`` or ``("map", plan, args, batched)``.
    """

    def __init__(self, futures: list, workers: list[str], recipe: tuple, spans: list | None = None) -> None:
        self.futures = futures
        self.workers = workers
        self.recipe = recipe
        self.spans = spans  # (first row, end) of each device's block


def _lineage(group: _Group) -> set[str]:
    """The workers that hold ``group``'s blocks or the blocks they were made from (a step waits on all of them)."""
    workers: set[str] = set()
    seen: set[int] = set()
    todo = [group]
    while todo:
        g = todo.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        workers.update(g.workers)
        if g.recipe[0] == "map":
            todo.extend(a.group for a, b in zip(g.recipe[2], g.recipe[3]) if b)
    return workers


class DaskSharded(Sharded):
    """A value split over Dask workers: ``parts[d]`` is the future of device ``d``'s block.

    For an output of ``map`` that future holds the stage's tuple of outputs for the shard
    and ``item`` says which one is this value (None: the future is the block itself).
    ``example`` is the shape and dtype of one example.
    """

    __slots__ = ("group", "item", "runner", "example")

    def __init__(
        self, group: _Group, item: int | None, rows: Sequence[int], devices: Sequence[Device], runner, example
    ) -> None:
        self.group = group
        self.item = item
        self.rows = [int(r) for r in rows]
        self.devices = list(devices)
        self.whole = None
        self.runner = runner
        self.example = example

    @property
    def parts(self) -> list:  # type: ignore[override]
        return list(self.group.futures)

    @property
    def workers(self) -> list[str]:
        """The address of the worker that holds each device's block."""
        return list(self.group.workers)

    def __repr__(self) -> str:
        return f"DaskSharded(n={self.n}, rows={self.rows}, workers={self.workers})"


class _Plan:
    """How one stage runs for arguments of one signature: the program shipped, and its outputs' examples."""

    def __init__(self, stage: Stage, program: Program, spec: Any, loop: bool) -> None:
        self.stage = stage  # held, so the stage's id (part of the key) is not reused
        self.program = program
        self.spec = spec
        self.loop = loop
        self.examples: list | None = None  # known after the first run


_LOSS_ERRORS: tuple = ()


def _loss_errors() -> tuple:
    """Dask's exceptions that mean a worker (or its data) went away, not that the work failed."""
    global _LOSS_ERRORS
    if not _LOSS_ERRORS:
        import concurrent.futures

        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker

        names = [CommClosedError, KilledWorker, concurrent.futures.CancelledError]
        try:
            from distributed.client import FutureCancelledError

            names.append(FutureCancelledError)
        except ImportError:  # pragma: no cover - older distributed
            pass
        _LOSS_ERRORS = tuple(names)
    return _LOSS_ERRORS


class DaskRunner(PythonRunner):
    """The runner for ``backend="dask"``: device ``d`` is a Dask worker (``devices[d].handle`` its address).

    ``poll``: seconds between checks that the workers a step waits on are still alive;
    ``retries``: how many times one step is rebuilt and run again after losing workers;
    ``grace``: seconds to wait for a worker to come back when none is left.
    """

    backend = "dask"
    poll = 0.25
    retries = 3
    grace = 10.0
    put_cache = 8
    plan_cache = 256
    combine_on_client = True

    def __init__(self, devices: Sequence[Device], jit_options: dict | None = None, client=None) -> None:
        super().__init__(devices, {} if jit_options is None else dict(jit_options))
        for d in self.devices:
            if d.kind != "dask":
                raise ValueError(f"DaskRunner: {d} is not a 'dask' device")
        self._client = client
        self._where = [d.handle for d in self.devices]  # the worker each device's work goes to now
        self._plans: OrderedDict = OrderedDict()  # (stage, batched, signature, compiled) -> _Plan, the last plan_cache
        self._puts: OrderedDict = OrderedDict()
        self._state = threading.RLock()
        self._live_now: set[str] | None = None  # the workers alive when the call started

    # --- the cluster ------------------------------------------------------------------------

    @property
    def client(self):
        from srctrans.distributed import client_alive, current_client

        client = self._client
        if not client_alive(client):
            client = current_client()
            with self._state:
                if client is not self._client:
                    self._client = client
                    self._adopt(client)
        return client

    def _adopt(self, client) -> None:
        """A new client: devices whose worker it lacks go to its workers by index; cached puts are dropped."""
        from srctrans.distributed import worker_addresses

        there = worker_addresses(client)
        if not there:
            raise DaskWorkerLostError("the Dask cluster has no workers")
        self._where = [a if a in there else there[d.index % len(there)] for a, d in zip(self._where, self.devices)]
        self._puts.clear()
        self._plans.clear()

    def _live(self) -> set[str]:
        return set(self.client.scheduler_info(n_workers=-1)["workers"])

    def start_call(self) -> None:
        """A new call: forget the last trace; devices on dead workers, or doubled up while a worker idles, move."""
        super().start_call()
        live = self._live_now = self._live()
        with self._state:
            if live and (
                any(w not in live for w in self._where) or len(set(self._where)) < min(len(live), len(self._where))
            ):
                self._spread(live)

    def _spread(self, live: set[str]) -> None:
        """Give each device whose worker is gone, or that shares a worker while another has none, a worker of its own."""
        used: dict[str, int] = {}
        for w in self._where:
            if w in live:
                used[w] = used.get(w, 0) + 1
        for d, w in enumerate(self._where):
            idle = [a for a in sorted(live) if not used.get(a)]
            if w in live and (used[w] == 1 or not idle):
                continue
            choice = idle[0] if idle else min(sorted(live), key=lambda a: used.get(a, 0))
            if w in live:
                used[w] -= 1
            self._where[d] = choice
            used[choice] = used.get(choice, 0) + 1

    def where(self) -> list[str]:
        """The worker address each device's work goes to now (a device whose worker died moves)."""
        return list(self._where)

    # --- data --------------------------------------------------------------------------------

    def put(self, value: Any, what: str = "the mapped axis") -> DaskSharded:
        if isinstance(value, DaskSharded):
            if value.runner is self:
                return value
            return self.put(value.runner.get(value), what)
        if isinstance(value, Sharded):
            value = self._plain(value)
        arr = np.asarray(value)
        if arr.ndim == 0:
            raise ValueError(f"{what}: a number cannot be split over devices (it has no axis 0)")
        rows = split_rows(arr.shape[0], len(self.devices), what)
        key = self._put_key(arr)
        with self._state:
            known = self._puts.get(key)
            if known is not None:
                self._puts.move_to_end(key)
                live = self._live_now or self._live()
                if any(w not in live for w in known.group.workers):  # blocks lost with a worker since: send them again
                    self._spread(live)
                    self._rebuild(known.group, live, {})
                return known
        starts = [sum(rows[:d]) for d in range(len(rows) + 1)]
        futures, workers = [], []
        for d in range(len(self.devices)):
            future, w = self._scatter(arr[starts[d] : starts[d + 1]], d)
            futures.append(future)
            workers.append(w)
        group = _Group(futures, workers, ("host", arr, starts))
        sharded = DaskSharded(group, None, rows, self.devices, self, (arr.shape[1:], arr.dtype.str))
        with self._state:
            self._puts[key] = sharded
            while len(self._puts) > self.put_cache:
                self._puts.popitem(last=False)
        return sharded

    def _scatter(self, block: np.ndarray, d: int) -> tuple[Any, str]:
        """Send device ``d``'s block to its worker (to another one when that worker is gone); the future and the worker."""
        for attempt in range(self.retries + 1):
            w = self._where[d]
            try:
                return self.client.scatter(block, workers=[w], hash=False), w
            except Exception as err:
                live = self._live()
                if w in live or not live or attempt == self.retries:
                    if w in live:
                        raise
                    raise DaskWorkerLostError(
                        f"put on backend='dask': could not send a block to any worker ({err})"
                    ) from err
                with self._state:
                    self._spread(live)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _put_key(arr: np.ndarray) -> tuple:
        data = np.ascontiguousarray(arr)
        digest = hashlib.blake2b(data.view(np.uint8).reshape(-1) if data.size else b"", digest_size=16).hexdigest()
        return (arr.__array_interface__["data"][0], arr.shape, arr.strides, arr.dtype.str, digest)

    def _plain(self, value: Sharded) -> np.ndarray:
        return np.concatenate([np.asarray(p) for p in value.parts], axis=0)

    def replicate(self, value: Any) -> Any:
        if isinstance(value, DaskSharded):
            raise TypeError("replicate: the value is split over the devices; get() it first")
        return value

    def get(self, value: Any) -> np.ndarray:
        if not isinstance(value, DaskSharded):
            if isinstance(value, Sharded):
                return super().get(value)
            return np.asarray(value)
        self._own(value, "get")

        def step():
            client = self.client
            group = value.group
            if value.item is None:
                futures = list(group.futures)
            elif group.recipe[1].stage.outputs == 1:  # the block is a tuple of this one value: gather it whole
                parts = self._settle(list(group.futures), _lineage(group))
                return np.concatenate([np.asarray(p[0]) for p in parts], axis=0)
            else:
                futures = [
                    client.submit(take, f, value.item, workers=[w], allow_other_workers=False, pure=False)
                    for f, w in zip(group.futures, group.workers)
                ]
            parts = self._settle(futures, _lineage(group))
            return np.concatenate([np.asarray(p) for p in parts], axis=0)

        return self._attempt(step, [value], "get")

    # --- work ----------------------------------------------------------------------------------

    def map(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> tuple[DaskSharded, ...]:
        batched = tuple(bool(b) for b in batched)
        if len(args) != len(batched):
            raise TypeError(f"map({stage.name}): {len(args)} arguments but {len(batched)} batched flags")
        args = tuple(self.put(a) if b else self.replicate(a) for a, b in zip(args, batched))
        shards = next((a for a, b in zip(args, batched) if b), None)
        if shards is None:
            raise ValueError(f"map({stage.name}): no sharded argument says how the examples are split")
        for a, b in zip(args, batched):
            if b:
                self._own(a, f"map({stage.name})")
                if a.rows != shards.rows:
                    raise ValueError(
                        f"map({stage.name}): sharded arguments split {shards.rows} and {a.rows} rows per device"
                    )
        plan = self._plan(stage, args, batched)
        starts = shards.starts()
        spans = [(starts[d], starts[d] + shards.rows[d]) for d in range(len(self.devices))]
        group = _Group([None] * len(self.devices), list(self._where), ("map", plan, args, batched), spans)
        for d in range(len(self.devices)):
            self._submit_shard(group, d, self._where[d])
        if plan.examples is None:
            self._first_run(plan, group, args)
        for d, device in enumerate(self.devices):
            self._record_on(stage.name, device, spans[d], group.workers[d])
        return tuple(
            DaskSharded(group, k, shards.rows, self.devices, self, plan.examples[k]) for k in range(stage.outputs)
        )

    def _submit_shard(self, group: _Group, d: int, worker: str) -> None:
        _, plan, args, batched = group.recipe
        values, items = [], []
        for a, b in zip(args, batched):
            if b:
                values.append(a.group.futures[d])
                items.append(a.item)
            else:
                values.append(a)
                items.append(None)
        key = f"{plan.stage.name}-{uuid.uuid4().hex[:12]}-{d}"
        group.futures[d] = self.client.submit(
            run_shard,
            plan.program,
            tuple(items),
            *values,
            key=key,
            workers=[worker],
            allow_other_workers=False,
            pure=False,
        )
        group.workers[d] = worker

    def _plan(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> _Plan:
        from srctrans.config import config

        compiled = not config.disable_jit
        signature = tuple(
            ("b",) + tuple(a.example) if b else ("r", np.shape(a), np.asarray(a).dtype.str)
            for a, b in zip(args, batched)
        )
        key = (id(stage), batched, signature, compiled)
        with self._state:
            plan = self._plans.get(key)
            if plan is None:
                program, spec = self._program(stage, args, batched, compiled, loop=False)
                plan = _Plan(stage, program, spec, loop=False)
                self._plans[key] = plan
                while len(self._plans) > self.plan_cache:
                    self._plans.popitem(last=False)
            else:
                self._plans.move_to_end(key)
            return plan

    def _program(self, stage: Stage, args: tuple, batched: tuple, compiled: bool, loop: bool) -> tuple[Program, Any]:
        """The file that runs a whole shard of ``stage``, as a :class:`Program`, and its specialization."""
        if stage.per_example:
            sample = tuple(np.zeros((1,) + tuple(a.example[0])) if b else a for a, b in zip(args, batched))
            spec = stage.specialization(self.jit_options, sample, loop=loop)
            gen = spec.gen
            path, entry, functions, bound = gen.path, gen.entry, tuple(gen.meta["functions"]), dict(gen.bound)
            options = {k: v for k, v in spec.options.items() if k != "target"} if compiled else None
        elif stage.gen is not None:
            spec, gen = None, stage.gen
            path, entry, functions, bound = gen.path, gen.entry, tuple(gen.meta["functions"]), dict(gen.bound)
            if entry != stage.name:
                entry, functions = stage.name, tuple(dict.fromkeys([*functions, stage.name]))
            options = None
            if compiled:
                options = {"parallel": False, "fastmath": False, "cache": True, "boundscheck": True}
                options.update({k: v for k, v in self.jit_options.items() if k in options})
        else:  # a stage without its Generated: its file runs as Python, with the globals it was loaded with
            spec, path, entry, functions, options = None, stage.path, stage.name, (stage.name,), None
            bound = _bound_of(stage.path.read_text(), stage.python)
        text = Path(path).read_text()
        program = Program(
            Path(path).name,
            text,
            entry,
            functions,
            bound,
            None if options is None else tuple(sorted(options.items())),
            _generated_imports(text),
        )
        return program, spec

    def _first_run(self, plan: _Plan, group: _Group, args: tuple) -> None:
        """Wait for a plan's first run and learn its outputs; a vectorized file Numba refuses is replaced by vmap's loop."""
        stage = plan.stage
        values = [a for a in args if isinstance(a, DaskSharded)] + [_Holder(group)]

        def learn():
            self._settle(list(group.futures), _lineage(group), want=False)
            client = self.client
            f = client.submit(
                describe, group.futures[0], workers=[group.workers[0]], allow_other_workers=False, pure=False
            )
            return self._settle([f], _lineage(group))[0]

        while True:
            found = self._attempt(learn, values, f"map({stage.name})")
            if not isinstance(found, CompileRefused):
                break
            vectorized = plan.spec is not None and plan.spec.gen.meta.get("vmap", {}).get("method") == "vectorize"
            if plan.loop or not vectorized:
                raise self._compile_error(plan, found)
            from srctrans.config import config

            plan.program, plan.spec = self._program(stage, args, group.recipe[3], not config.disable_jit, loop=True)
            plan.loop = True
            for d in range(len(self.devices)):
                self._submit_shard(group, d, self._where[d])
        plan.examples = [(tuple(shape), dtype) for shape, dtype in found]
        if len(plan.examples) != stage.outputs:
            raise TypeError(
                f"map({stage.name}): the stage returned {len(plan.examples)} values, expected {stage.outputs}"
            )

    @staticmethod
    def _compile_error(plan: _Plan, err: CompileRefused) -> Exception:
        if plan.spec is None:
            return RuntimeError(f"Numba could not compile {plan.program.file_name} on a Dask worker:\n{err.summary}")
        from types import SimpleNamespace

        from srctrans.specialization import compile_error

        line = err.generated_line
        return compile_error(
            plan.spec, SimpleNamespace(summary=err.summary, generated_file=str(plan.spec.gen.path), generated_line=line)
        )

    def reduce(self, kind: str, value: Any) -> Any:
        if kind not in REDUCTIONS:
            raise ValueError(f"reduce kind must be one of {', '.join(map(repr, REDUCTIONS))}, got {kind!r}")
        if not isinstance(value, DaskSharded):
            return super().reduce(kind, value)
        self._own(value, "reduce")

        def step():
            client = self.client
            group = value.group
            partials = [
                client.submit(partial, kind, f, value.item, workers=[w], allow_other_workers=False, pure=False)
                for f, w in zip(group.futures, group.workers)
            ]
            if self.combine_on_client:
                return combine(kind, *self._settle(partials, _lineage(group)))
            total = client.submit(combine, kind, *partials, pure=False)
            return self._settle([total], _lineage(group))[0]

        return self._attempt(step, [value], f"reduce({kind!r})")

    # --- waiting, and rebuilding what a dead worker held ------------------------------------------

    def _settle(self, futures: list, involved: set[str], want: bool = True) -> list | None:
        """Wait for ``futures`` while checking the ``involved`` workers live; their results (``want``)."""
        from distributed.client import _wait

        client = self.client
        while True:
            try:
                client.sync(_wait, futures, timeout=self.poll, return_when="ALL_COMPLETED")
                break
            except (TimeoutError, asyncio.TimeoutError):  # the same class from Python 3.11 on
                dead = involved - self._live()
                if dead:
                    raise _Lost(dead) from None
        for f in futures:
            if f.status == "error":
                exc = f.exception()
                if isinstance(exc, _loss_errors()):
                    raise _Lost(involved - self._live())
                f.result()  # raises the task's own error
            elif f.status != "finished":
                raise _Lost(involved - self._live())
        if not want:
            return None
        return client.gather(futures)

    def _attempt(self, step: Callable[[], Any], values: list, what: str) -> Any:
        """``step()``; when workers are lost, rebuild ``values`` on the living ones and run it again."""
        lost: set[str] = set()
        for attempt in range(self.retries + 1):
            try:
                return step()
            except _Lost as err:
                lost |= err.workers
            except _loss_errors() as err:
                lost |= {f"({type(err).__name__})"}
            if attempt == self.retries:
                break
            self._heal(values, lost, what)
        rebuilt = f", {self.retries} times after rebuilding their data on the others" if self.retries else ""
        raise DaskWorkerLostError(
            f"{what} on backend='dask': Dask workers were lost ({', '.join(sorted(lost))}) and the step failed "
            f"{self.retries + 1} time{'s' if self.retries else ''}{rebuilt} (DaskRunner.retries={self.retries}); "
            "no result is returned"
        )

    def _heal(self, values: list, lost: set[str], what: str) -> None:
        import time

        deadline = time.monotonic() + self.grace
        live = self._live()
        while not live:
            if time.monotonic() > deadline:
                raise DaskWorkerLostError(
                    f"{what} on backend='dask': every Dask worker is gone (lost {', '.join(sorted(lost))}) and none "
                    f"came back within {self.grace:g} s; no result is returned"
                )
            time.sleep(self.poll)
            live = self._live()
        with self._state:
            self._spread(live)
            done: dict[int, set[int]] = {}
            for v in values:
                self._rebuild(v.group, live, done)

    def _rebuild(self, group: _Group, live: set[str], done: dict[int, set[int]]) -> set[int]:
        """Make again the blocks of ``group`` that were on dead workers (or built on ones made again); which ones."""
        if id(group) in done:
            return done[id(group)]
        redo: set[int] = set()
        recipe = group.recipe
        if recipe[0] == "map":
            for a, b in zip(recipe[2], recipe[3]):
                if b:
                    redo |= self._rebuild(a.group, live, done)
        for d in range(len(group.futures)):
            f = group.futures[d]
            if d not in redo and group.workers[d] in live and f is not None and f.status in ("pending", "finished"):
                continue
            redo.add(d)
        for d in sorted(redo):
            w = self._where[d]
            if recipe[0] == "host":
                _, arr, starts = recipe
                group.futures[d], group.workers[d] = self._scatter(arr[starts[d] : starts[d + 1]], d)
            else:
                self._submit_shard(group, d, w)
                self._record_on(recipe[1].stage.name, self.devices[d], group.spans[d], w, recovered=True)
        done[id(group)] = redo
        return redo

    # --- seeing ------------------------------------------------------------------------------------

    def _record_on(self, stage: str, device: Device, rows, worker: str, recovered: bool = False) -> None:
        record = {"stage": stage, "device": device, "rows": rows, "worker": worker}
        if recovered:
            record["recovered"] = True
        with self._lock:
            self._trace.append(record)

    def _own(self, value: DaskSharded, what: str) -> None:
        if value.runner is not self:
            raise ValueError(f"{what}: the value was put on other devices (another Dask runner)")


class _Holder:
    """Lets :meth:`DaskRunner._attempt` rebuild a group that has no value around it yet."""

    def __init__(self, group: _Group) -> None:
        self.group = group


def _bound_of(text: str, fn: Callable) -> dict:
    from srctrans.cache import read_header

    header = read_header(text)
    names = header[0].get("bound", {}) if header else {}
    scope = getattr(fn, "__globals__", {})
    return {name: scope[name] for name in names if name in scope}


_IMPORT = re.compile(r"^(?:import|from)\s+([A-Za-z_][\w.]*)", re.MULTILINE)


def _generated_imports(text: str) -> tuple:
    """Generated modules (files in a ``__srctrans__`` folder or srctrans's cache) that ``text`` imports."""
    from srctrans.cache import FOLDER, user_cache_root
    from srctrans.config import config

    roots = [str(user_cache_root())] + ([str(Path(config.cache_dir).resolve())] if config.cache_dir else [])
    extras = []
    for name in dict.fromkeys(_IMPORT.findall(text)):
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if not file:
            continue
        resolved = str(Path(file).resolve())
        if FOLDER in Path(resolved).parts or any(resolved.startswith(r) for r in roots):
            try:
                extras.append((name, Path(file).read_text()))
            except OSError:
                continue
    return tuple(extras)


# --- what srctrans.parallel.devices and runner_for call -----------------------------------------------


def devices() -> list[Device]:
    """The workers of the current client (:func:`srctrans.distributed.current_client`), one device each."""
    from srctrans.distributed import current_client, worker_addresses

    client = current_client()
    there = worker_addresses(client)
    if not there:  # a cluster starting, or between a worker's death and its restart: wait a little
        try:
            client.wait_for_workers(1, timeout=DaskRunner.grace)
        except (TimeoutError, asyncio.TimeoutError):
            raise BackendUnavailableError(
                f"backend='dask': the Dask scheduler at {client.scheduler.address} has no workers "
                f"(none joined within {DaskRunner.grace:g} s); start some (`dask worker {client.scheduler.address}`)"
            ) from None
        there = worker_addresses(client)
    return [Device("dask", i, name=a, handle=a) for i, a in enumerate(there)]


def make_runner(devs: Sequence[Device]) -> DaskRunner:
    return DaskRunner(devs)
