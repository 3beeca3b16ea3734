"""pmap's CPU runner: every shard compiled, all shards run by one compiled ``prange`` loop.

A stage of a generated parallel file is a per-example function. Its *batched function* is
the vmap of it (:meth:`srctrans.parallel.runner.Stage.batched_function`): a generated file
that runs a whole shard, batch axis first. The D logical devices are the D iterations of
a thin wrapper written beside that file (``<vmap file>.shards.py``), the vmap file's
functions followed by::

    def loss_stage0_vmap_shards(x, w, out0, out1, thread, block):
        # pmap on logical CPU devices: iteration d of this prange runs device d's shard,
        # block examples at a time (their temporaries stay in the cache). Batched arguments
        # and the outputs arrive as (devices, examples per device, ...).
        rows = x.shape[1]
        for d in rt.prange(x.shape[0]):
            for start in range(0, rows, block):
                stop = min(start + block, rows)
                out0_part, out1_part = loss_stage0_vmap(x[d, start:stop], w)
                out0[d, start:stop] = out0_part
                out1[d, start:stop] = out1_part
            thread[d] = get_thread_id()

Numba runs the iterations on its thread pool, so 8 logical devices share 2 cores, and
``thread`` says which thread ran which device's shard (:meth:`CpuRunner.trace`). Only
the wrapper is compiled with ``parallel=True``; the shard's function is an ordinary
``njit`` function (``parallel=True`` on a whole function costs about three times the
compile time and runs slower). Outputs are allocated before the call, sized by running
the shard's function on one example (once per shape of the arguments).

Why not vmap's own per-example loop (:mod:`srctrans.batching.loop`) over the shards: it runs
the first iteration before its ``prange`` to size the results, so with two devices one
shard would run alone and then the other, on one thread each time; and it would call the
shard's function on the whole shard, whose temporaries (N/D examples each) do not stay in
the cache. Each shard runs ``block`` examples per call instead (2048 by default,
:data:`BLOCK`).

Sharding's stages (:mod:`srctrans.parallel.propagate`, ``per_example=False``) take a whole
shard and return results whose shapes only running them tells (a shard's rows, or a
``(1, ...)`` part of an all-reduce), so they are not wrapped in a ``prange``: the sharded
file's functions, less its driver, are copied to ``<sharded file>.shards.py`` and compiled
to release the GIL, and :meth:`CpuRunner.pool`'s threads (with the calling one) run a
stage's shards at once (:meth:`CpuRunner._map_whole`), each keeping its results where the
call made them.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from srctrans.cache import file_lock, module_name_for, write_if_changed
from srctrans.parallel.devices import Device
from srctrans.parallel.runner import PythonRunner, Sharded, Stage

from .cpu import compile_module

# Examples per call of a shard's function: the vectorized file's temporaries, for this many
# examples, stay in the cache (each call writes its block of the outputs).
BLOCK = 2048


class CpuRunner(PythonRunner):
    """The compiled CPU runner on ``devices`` (logical CPU devices)."""

    backend = "cpu"

    def __init__(self, devices: Sequence[Device], jit_options: dict | None = None) -> None:
        super().__init__(devices, {} if jit_options is None else dict(jit_options))
        self._plans: dict[tuple, tuple] = {}
        self._plans_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self.block = BLOCK

    def map(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> tuple[Sharded, ...]:
        batched = tuple(bool(b) for b in batched)
        if len(args) != len(batched):
            raise TypeError(f"map({stage.name}): {len(args)} arguments but {len(batched)} batched flags")
        shards = next((a for a, b in zip(args, batched) if b), None)
        if shards is None:
            raise ValueError(f"map({stage.name}): no sharded argument says how the examples are split")
        if shards.n == 0 or len(set(shards.rows)) > 1:
            return super().map(stage, args, batched)
        if not stage.per_example:
            done = self._map_whole(stage, args, batched, shards)
            return super().map(stage, args, batched) if done is None else done
        count = len(self.devices)
        stacked = tuple(_stacked(a, count) if b else a for a, b in zip(args, batched))
        wrapper, shapes = self._plan(stage, batched, stacked)
        rows = shards.rows[0]
        outs = tuple(np.empty((count, rows) + shape, dtype) for shape, dtype in shapes)
        thread = np.full(count, -1, dtype=np.int64)  # each iteration sets its entry last
        try:
            wrapper(*stacked, *outs, thread, max(1, min(rows, self.block)))
            failed = bool((thread < 0).any())
        except Exception:  # noqa: BLE001 - see below
            failed = True
        if failed:
            # A shard raised inside the prange: Numba loses the exception of a worker thread
            # (the results would be silently wrong) and turns the calling thread's into a
            # SystemError. The shards again, one after another, raise it as it is.
            return super().map(stage, args, batched)
        for d, device in enumerate(self.devices):
            start = shards.starts()[d]
            self._record(stage, device, (start, start + shards.rows[d]), int(thread[d]))
        results = []
        for value in outs:
            whole = value.reshape((count * rows,) + value.shape[2:])
            results.append(Sharded(list(value), shards.rows, self.devices, whole=whole))
        return tuple(results)

    def _map_whole(self, stage: Stage, args: tuple, batched: tuple[bool, ...], shards: Sharded) -> tuple[Sharded, ...] | None:
        """A stage that takes a whole shard (sharding's): each shard's compiled call on a thread of its own.

        The stage's function is compiled to release the GIL (:func:`whole_shards_function`), so
        the threads of :meth:`pool` run the shards at once; each keeps its results where the
        stage made them (no copy: a later stage gets them as they are, ``run.get`` joins them).
        None when the stage has no generated file to compile: the caller runs the shards
        one after another.
        """
        plan = self._plans.get(("whole", id(stage)))
        if plan is None:
            with self._plans_lock:
                plan = self._plans[("whole", id(stage))] = (stage, whole_shards_function(stage, self.jit_options))
        fn = plan[1]  # (holding the stage keeps its id from being reused)
        if fn is None:
            return None
        count = len(self.devices)
        calls = [tuple(a.parts[d] if b else a for a, b in zip(args, batched)) for d in range(count)]

        def some(first: int, step: int) -> list[tuple[int, Any, str]]:
            name = threading.current_thread().name
            # the devices are the parallel part: a thread's BLAS must not take the other threads' cores
            with _one_blas_thread() if step > 1 else contextlib.nullcontext():
                return [(d, fn(*calls[d]), name) for d in range(first, count, step)]

        pool = self.pool()
        if pool is None:
            done = some(0, 1)
        else:  # worker w runs shards w, w + W, ...: this thread worker 0, the pool's threads the others
            workers = self._pool_size + 1
            futures = [pool.submit(some, w, workers) for w in range(1, workers)]
            done = some(0, workers)
            for f in futures:
                done += f.result()  # a shard's error is raised here
            done.sort(key=lambda t: t[0])
        outs: list[list] = [[] for _ in range(stage.outputs)]
        for d, result, thread in done:
            if stage.outputs == 1 and not isinstance(result, tuple):
                result = (result,)
            for k in range(stage.outputs):
                outs[k].append(result[k])
            start = shards.starts()[d]
            self._record(stage, self.devices[d], (start, start + shards.rows[d]), thread)
        return tuple(Sharded(parts, shards.rows, self.devices) for parts in outs)

    def pool(self) -> ThreadPoolExecutor | None:
        """The threads that run sharding's stages besides the calling one (None: it alone).

        One worker per device, at most Numba's thread count (``NUMBA_NUM_THREADS``, what
        pmap's ``prange`` uses); the calling thread is one of them.
        """
        workers = min(len(self.devices), numba.get_num_threads())
        if workers < 2:
            return None
        with self._plans_lock:
            if self._pool is None or self._pool_size != workers - 1:
                self._pool = ThreadPoolExecutor(max_workers=workers - 1, thread_name_prefix="srctrans-cpu")
                self._pool_size = workers - 1
            return self._pool

    def _plan(self, stage: Stage, batched: tuple[bool, ...], stacked: tuple) -> tuple[Any, list]:
        """The compiled wrapper and the per-example shape and dtype of each output, for these arguments."""
        key = (id(stage), batched) + tuple(
            (np.shape(a)[2:] if b else np.shape(a), np.asarray(a).dtype.str) for a, b in zip(stacked, batched)
        )
        with self._plans_lock:
            plan = self._plans.get(key)
            if plan is not None:
                return plan[1], plan[2]
            probe = tuple(a[0, 0:1] if b else a for a, b in zip(stacked, batched))
            for loop in (False, True):
                spec = stage.specialization(self.jit_options, probe, loop=loop)
                wrapper, shard_fn = shards_wrapper(spec, batched, stage.outputs, self.jit_options)
                try:
                    first = shard_fn(*probe)  # one example: the outputs' shapes and dtypes (and the compile)
                    break
                except Exception as err:  # Numba refused the vectorized file: vmap's loop instead
                    if loop or not hasattr(err, "generated_file") or spec.gen.meta.get("vmap", {}).get("method") != "vectorize":
                        raise
            if not isinstance(first, tuple):
                first = (first,)
            shapes = [(np.shape(v)[1:], np.asarray(v).dtype) for v in first]
            self._plans[key] = (stage, wrapper, shapes)  # holding the stage keeps its id from being reused
            return wrapper, shapes


_BLAS_LOCAL: list = []  # [openblas_set_num_threads_local of the OpenBLAS Numba's np.dot calls, or None]


@contextlib.contextmanager
def _one_blas_thread():
    """Single-threaded BLAS on this thread for the block (OpenBLAS's thread-local setting; else nothing).

    Numba's ``np.dot`` calls SciPy's BLAS. Left to itself, OpenBLAS gives each large product
    of each shard all the cores, so two shards' threads fight over them (on the busy 2-core
    machine here the sharded gradient of benchmarks/cases/pmap.py took 0.3-1.8 s a call by
    the median, against about 50 ms with one BLAS thread each). ``openblas_set_num_threads_local`` (OpenBLAS 0.3.27) changes
    only the calling thread.
    """
    if not _BLAS_LOCAL:
        _BLAS_LOCAL.append(_find_blas_local())
    setter = _BLAS_LOCAL[0]
    if setter is None:
        yield
        return
    previous = setter(1)
    try:
        yield
    finally:
        setter(previous)


def _find_blas_local():
    try:
        import ctypes
        import glob
        import os

        import scipy
        import scipy.linalg.cython_blas  # noqa: F401 - loads the library
    except ImportError:
        return None
    for path in glob.glob(os.path.join(os.path.dirname(scipy.__file__), os.pardir, "scipy.libs", "libscipy_openblas*.so*")):
        try:
            setter = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        return setter
    return None


def _stacked(value: Sharded, count: int) -> np.ndarray:
    """The shards of ``value`` as one ``(D, N/D, ...)`` array (a view when they are one array's blocks)."""
    whole = value.whole
    if whole is not None:
        whole = np.asarray(whole)
        return whole.reshape((count, whole.shape[0] // count) + whole.shape[1:])
    return np.stack([np.asarray(p) for p in value.parts])


_WRAPPERS: dict[tuple, tuple] = {}
_WRAPPERS_LOCK = threading.Lock()


def _compile_options(path, jit_options: dict) -> tuple[dict, tuple]:
    """The Numba options a ``.shards.py`` file is compiled with (the user's jit options that
    apply), and the key of its compiled module in ``_WRAPPERS``."""
    options = {"fastmath": False, "cache": True, "boundscheck": True}
    options.update({k: v for k, v in jit_options.items() if k in options})
    return options, (path, tuple(sorted(options.items())))


def shards_wrapper(spec, batched: tuple[bool, ...], outputs: int, jit_options: dict) -> tuple[Any, Any]:
    """Write (or reuse) ``<vmap file>.shards.py`` around ``spec``'s function; compile it.

    Returns the wrapper and the shard function as that module compiles it (calling it
    compiles the same function the wrapper calls).
    """
    gen = spec.gen
    path = gen.path.with_name(gen.path.name[:-3] + ".shards.py")
    options, key = _compile_options(path, jit_options)
    with _WRAPPERS_LOCK:
        source = gen.path.read_text()
        done = _WRAPPERS.get(key)
        if done is not None and done[0] == source:
            return done[1], done[2]
        text, name = shards_text(source, gen, batched, outputs)
        write_if_changed(path, text)
        functions = list(gen.meta["functions"]) + [name]
        module_name = module_name_for(path)
        wrapper = compile_module(path, module_name, functions, name, gen.bound, lock=lambda: file_lock(path), parallel=True, **options)
        shard_fn = sys.modules[module_name].__dict__[gen.entry]
        _WRAPPERS[key] = (source, wrapper, shard_fn)
        return wrapper, shard_fn


def shards_text(source: str, gen, batched: tuple[bool, ...], outputs: int) -> tuple[str, str]:
    """The wrapper file's text (the vmap file's functions, then the prange over shards) and its name."""
    params = [m[1] for m in gen.meta["params"] if m[0] in ("arg", "leaf")]
    flags = dict(zip(params, batched))
    taken = set(params) | set(gen.meta["functions"]) | {"rt", "np", "get_thread_id", "prange"}

    def fresh(base: str) -> str:
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    name = fresh(f"{gen.entry}_shards")
    d, start, stop, rows, block = fresh("d"), fresh("start"), fresh("stop"), fresh("rows"), fresh("block")
    outs = [fresh(f"out{k}") for k in range(outputs)]
    locals_ = [fresh(f"{o}_part") for o in outs]
    thread = fresh("thread")
    first = next(p for p in params if flags[p])
    each = ", ".join(f"{p}[{d}, {start}:{stop}]" if flags[p] else p for p in params)
    target = ", ".join(locals_) + ("," if outputs == 1 else "")
    lines = [
        f"def {name}({', '.join(params + outs + [thread, block])}):",
        f"    # pmap on logical CPU devices: iteration {d} of this prange runs device {d}'s shard,",
        f"    # {block} examples at a time (their temporaries stay in the cache). Batched arguments",
        "    # and the outputs arrive as (devices, examples per device, ...).",
        f"    {rows} = {first}.shape[1]",
        f"    for {d} in rt.prange({first}.shape[0]):",
        f"        for {start} in range(0, {rows}, {block}):",
        f"            {stop} = min({start} + {block}, {rows})",
        f"            {target} = {gen.entry}({each})",
        *(f"            {o}[{d}, {start}:{stop}] = {v}" for o, v in zip(outs, locals_)),
        f"        {thread}[{d}] = get_thread_id()",
    ]
    head = [
        f"# Generated by srctrans from {gen.path.name}:{gen.entry} -- pmap's shards on logical CPU devices",
        "# Do not edit: srctrans rewrites this file when the file it wraps changes.",
        f"# The functions of {gen.path.name}, then a prange over the devices around {gen.entry}.",
    ]
    return _wrapper_file(head, source, lines), name


def _wrapper_file(head: list[str], source: str, lines: list[str], drop: str | None = None, thread_id: bool = True) -> str:
    """``head``, the imports and functions of ``source`` (less function ``drop``), then ``lines``."""
    _, body = _split_header(source)
    if drop is not None:
        import ast

        found = next(f for f in ast.parse(body).body if isinstance(f, ast.FunctionDef) and f.name == drop)
        body_lines = body.split("\n")
        first = min([found.lineno] + [d.lineno for d in found.decorator_list]) - 1
        body = "\n".join(body_lines[:first] + body_lines[found.end_lineno:])
    body_lines = body.split("\n")
    k = 0
    while k < len(body_lines) and body_lines[k].startswith(("import ", "from ")):
        k += 1
    imports = body_lines[:k]
    if "import srctrans.runtime as rt" not in body:
        imports.append("import srctrans.runtime as rt")
    imports = sorted(imports, key=lambda s: (not s.startswith("import "), s)) + (["from numba import get_thread_id"] if thread_id else [])
    body = "\n".join(body_lines[k:]).lstrip("\n").rstrip()
    tail = "\n\n\n" + "\n".join(lines) if lines else ""
    return "\n".join(head) + "\n\n" + "\n".join(imports) + "\n\n\n" + body + tail + "\n"


def whole_shards_function(stage: Stage, jit_options: dict) -> Any:
    """The stage's function compiled to release the GIL, from ``<sharded file>.shards.py``; None without a file.

    That file is the sharded file's functions less its driver (every stage of one sharded
    file is in it), compiled with ``nogil``: the runner's threads run a stage's shards at
    once. A file of its own, because Numba's cache does not tell a ``nogil`` compile from
    the plain one (the serial path compiles the sharded file itself).
    """
    gen = stage.gen
    if gen is None:
        return None
    path = gen.path.with_name(f"{gen.path.stem}.shards.py")
    options, key = _compile_options(path, jit_options)
    with _WRAPPERS_LOCK:
        source = gen.path.read_text()
        done = _WRAPPERS.get(key)
        if done is None or done[0] != source:
            head = [
                f"# Generated by srctrans from {gen.path.name} -- its stages, one shard per thread on logical CPU devices",
                "# Do not edit: srctrans rewrites this file when the file it copies changes.",
                f"# The functions of {gen.path.name} less its driver; compiled to release the GIL, so the CPU",
                "# runner's threads run a stage's shards at once.",
            ]
            write_if_changed(path, _wrapper_file(head, source, [], drop=gen.meta.get("driver"), thread_id=False))
            functions = list(gen.meta["functions"])
            module_name = module_name_for(path)
            compile_module(path, module_name, functions, functions[0], gen.bound, lock=lambda: file_lock(path), **options)
            module = sys.modules[module_name]
            for name in functions:
                module.__dict__[name].targetoptions["nogil"] = True  # before its first (lazy) compile
            done = _WRAPPERS[key] = (source, module)
        return done[1].__dict__[stage.name]


def _split_header(source: str) -> tuple[str, str]:
    lines = source.split("\n")
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "\n".join(lines[:i]), "\n".join(lines[i:]).lstrip("\n")
