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
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

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
        self.block = BLOCK

    def map(self, stage: Stage, args: tuple, batched: tuple[bool, ...]) -> tuple[Sharded, ...]:
        batched = tuple(bool(b) for b in batched)
        if len(args) != len(batched):
            raise TypeError(f"map({stage.name}): {len(args)} arguments but {len(batched)} batched flags")
        shards = next((a for a, b in zip(args, batched) if b), None)
        if shards is None:
            raise ValueError(f"map({stage.name}): no sharded argument says how the examples are split")
        if not stage.per_example or shards.n == 0:
            return super().map(stage, args, batched)
        count = len(self.devices)
        stacked = tuple(_stacked(a, count) if b else a for a, b in zip(args, batched))
        wrapper, shapes = self._plan(stage, batched, stacked)
        rows = shards.rows[0]
        outs = tuple(np.empty((count, rows) + shape, dtype) for shape, dtype in shapes)
        thread = np.zeros(count, dtype=np.int64)
        wrapper(*stacked, *outs, thread, max(1, min(rows, self.block)))
        for d, device in enumerate(self.devices):
            start = shards.starts()[d]
            self._record(stage, device, (start, start + shards.rows[d]), int(thread[d]))
        results = []
        for value in outs:
            whole = value.reshape((count * rows,) + value.shape[2:])
            results.append(Sharded(list(value), shards.rows, self.devices, whole=whole))
        return tuple(results)

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


def _stacked(value: Sharded, count: int) -> np.ndarray:
    """The shards of ``value`` as one ``(D, N/D, ...)`` array (a view when they are one array's blocks)."""
    whole = value.whole
    if whole is not None:
        whole = np.asarray(whole)
        return whole.reshape((count, whole.shape[0] // count) + whole.shape[1:])
    return np.stack([np.asarray(p) for p in value.parts])


_WRAPPERS: dict[tuple, tuple] = {}
_WRAPPERS_LOCK = threading.Lock()


def shards_wrapper(spec, batched: tuple[bool, ...], outputs: int, jit_options: dict) -> tuple[Any, Any]:
    """Write (or reuse) ``<vmap file>.shards.py`` around ``spec``'s function; compile it.

    Returns the wrapper and the shard function as that module compiles it (calling it
    compiles the same function the wrapper calls).
    """
    gen = spec.gen
    path = gen.path.with_name(gen.path.name[:-3] + ".shards.py")
    options = {"fastmath": False, "cache": True, "boundscheck": True}
    options.update({k: v for k, v in jit_options.items() if k in options})
    key = (path, tuple(sorted(options.items())))
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
    header, body = _split_header(source)
    body_lines = body.split("\n")
    k = 0
    while k < len(body_lines) and body_lines[k].startswith(("import ", "from ")):
        k += 1
    imports = body_lines[:k]
    if "import srctrans.runtime as rt" not in body:
        imports.append("import srctrans.runtime as rt")
    imports = sorted(imports, key=lambda s: (not s.startswith("import "), s)) + ["from numba import get_thread_id"]
    body = "\n".join(body_lines[k:]).lstrip("\n")
    head = [
        f"# Generated by srctrans from {gen.path.name}:{gen.entry} -- pmap's shards on logical CPU devices",
        "# Do not edit: srctrans rewrites this file when the file it wraps changes.",
        f"# The functions of {gen.path.name}, then a prange over the devices around {gen.entry}.",
    ]
    text = "\n".join(head) + "\n\n" + "\n".join(imports) + "\n\n\n" + body.rstrip() + "\n\n\n" + "\n".join(lines) + "\n"
    return text, name


def _split_header(source: str) -> tuple[str, str]:
    lines = source.split("\n")
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "\n".join(lines[:i]), "\n".join(lines[i:]).lstrip("\n")
