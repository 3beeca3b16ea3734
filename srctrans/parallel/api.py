"""``pmap``: the function mapped over devices, its examples split into one block per device.

``pmap(f, axis_name, in_axes, out_axes, devices, backend)(*args)`` gives what
``vmap(f, in_axes, out_axes, axis_name=axis_name)(*args)`` gives. The boundary work is
vmap's (pytree arguments flattened to leaves, each mapped axis moved to the front,
outputs' axes moved where ``out_axes`` say); in between, the generated parallel file
(:mod:`srctrans.parallel.stages`) runs on a runner (:mod:`srctrans.parallel.runner`):
the mapped leaves are put on the devices (``N / D`` examples each), the others
replicated, and the driver maps the stages and combines at the collectives.

Like JAX's, pmap compiles: the CPU runner runs every shard as compiled code (unless
``SRCTRANS_DISABLE_JIT=1``, when the reference runner runs the same stages in Python).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..batching.api import place_batch_axis
from ..subclasses import plain_leaves
from ..tree import tree_flatten, tree_unflatten
from .devices import Device, check_backend
from .devices import devices as list_devices


def _check_spec(spec: Any, what: str) -> None:
    from ..batching.api import check_axes_spec

    try:
        check_axes_spec(spec, what)
    except TypeError as err:
        raise TypeError(str(err).replace("vmap ", "pmap ", 1)) from None


def _prefix(spec: Any, tree: Any, where: str, what: str) -> list:
    from ..batching.api import axes_for_leaves as vmap_prefix

    try:
        return vmap_prefix(spec, tree, where, what)
    except ValueError as err:
        raise ValueError(str(err).replace("vmap ", "pmap ", 1)) from None


class _Labels:
    """``labels[j]``: how an error names leaf ``j`` of the arguments (``argument 'params'['w']'``),
    worked out when first read; a call that goes well reads none."""

    def __init__(self, params: Sequence[str], args: tuple) -> None:
        self._params, self._args = params, args
        self._made: list[str] | None = None

    def __getitem__(self, j: int) -> str:
        if self._made is None:
            from ..tree import keystr, tree_flatten_with_path

            self._made = [
                f"argument {name + keystr(p)!r}" for name, a in zip(self._params, self._args) for p, _ in tree_flatten_with_path(a)[0]
            ]
        return self._made[j]


class _Program:
    """What the generated driver calls ``run``: the runner, with stages found by their function."""

    def __init__(self, runner, stages: dict) -> None:
        self.runner = runner
        self.stages = stages

    def map(self, fn, args: tuple, batched: tuple) -> tuple:
        return self.runner.map(self.stages[fn.__name__], tuple(args), tuple(batched))

    def reduce(self, kind: str, value):
        return self.runner.reduce(kind, value)

    def put(self, value):
        return self.runner.put(value)

    def replicate(self, value):
        return self.runner.replicate(value)

    def example_indices(self, like):
        """axis_index: each example's index in the whole batch, sharded like ``like``."""
        return self.runner.put(np.arange(like.n))

    def repeat(self, value, n: int):
        """all_gather of a value every example shares: ``n`` copies stacked on axis 0."""
        value = np.asarray(value)
        return self.runner.replicate(np.array(np.broadcast_to(value, (n,) + value.shape)))


class _Spec:
    """One parallel file (for one set of mapped leaves and pytree structures) and its stages."""

    def __init__(self, gen, named: dict) -> None:
        from ..cache import load_module
        from ..specialization import Specialization
        from .runner import Stage

        self.gen = gen
        self.named = named
        self.spec = Specialization(gen, {"parallel": False, "fastmath": False, "cache": True, "boundscheck": True})
        module = load_module(gen.path, gen.module_name, gen.bound)
        self.driver = getattr(module, gen.entry)
        info = gen.meta["pmap"]
        self.outputs = info["outputs"]  # how the driver's flat outputs nest (an index for a leaf)
        self.stages = {
            s["name"]: Stage(s["name"], gen.path, getattr(module, s["name"]), tuple(s["batched"]), s["outputs"], gen=gen)
            for s in info["stages"]
        }


class PMapped:
    """A function mapped over devices by :func:`pmap`. Call it like the original, with mapped arguments."""

    def __init__(
        self,
        fn: Callable,
        axis_name: Any = None,
        in_axes: Any = 0,
        out_axes: Any = 0,
        devices: Sequence[Device] | int | None = None,
        backend: str | None = None,
        jit_options: dict | None = None,
        compile: bool = True,
    ) -> None:
        from ..api import Grad, Jitted

        _check_spec(in_axes, "in_axes")
        _check_spec(out_axes, "out_axes")
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        self.in_axes, self.out_axes = in_axes, out_axes
        self.axis_name = axis_name
        self.backend = check_backend(backend)
        self._devices_arg = devices
        # what reaches the compiled shards (not "parallel": the devices are the parallel loop)
        self._jit = {k: v for k, v in (jit_options or {}).items() if k in ("fastmath", "boundscheck", "cache")}
        self._compile = compile
        self._fn = fn
        if isinstance(fn, PMapped):
            raise TypeError("pmap of a pmap is not supported; map over one axis of devices")
        if hasattr(fn, "_srctrans_jit") and not isinstance(fn, Jitted):
            raise TypeError(f"pmap takes a plain function, a jit or a grad, got {fn!r}; put vmap inside the function instead")
        if isinstance(fn, Grad):
            from ..errors import SrcTransError
            from ..nesting import Unavailable, adjoint_function

            try:
                self._base = adjoint_function(fn, indexed=True)
            except SrcTransError as err:  # (pytree arguments: their structure's file is made at the call)
                self._base = Unavailable(fn, err)
            self._one_tuple = not fn._single and len(fn._wrt) == 1
        elif isinstance(fn, Jitted):
            self._base = fn._fn
            self._one_tuple = False
        elif callable(fn):
            self._base = fn
            self._one_tuple = False
        else:
            raise TypeError(f"pmap expects a function, got {type(fn).__name__}")
        params = list(inspect.signature(self._base).parameters.values())
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
            raise TypeError("pmap: the function must take positional parameters only (no *args, **kwargs)")
        self._params = [p.name for p in params]
        self._specs: dict[tuple, _Spec] = {}
        self._lock = threading.Lock()
        self._last: _Spec | None = None
        self._trace: list[dict] = []
        self.__name__ = getattr(self._base, "__name__", "pmapped")
        self.__qualname__ = getattr(self._base, "__qualname__", self.__name__)
        self.__doc__ = getattr(self._base, "__doc__", None)

    # --- devices ---------------------------------------------------------------------------

    def devices(self) -> list[Device]:
        """The devices a call runs on (all of the backend's unless ``devices`` chose some)."""
        there = list_devices(self.backend)
        chosen = self._devices_arg
        if chosen is None:
            return there
        if isinstance(chosen, (int, np.integer)) and not isinstance(chosen, bool):
            if chosen < 1:
                raise ValueError(f"pmap devices={chosen}: give at least one device")
            if chosen > len(there):
                raise ValueError(
                    f"pmap devices={chosen}, but there {'is' if len(there) == 1 else 'are'} only {len(there)} "
                    f"{self.backend} device{'s' if len(there) != 1 else ''}{_how_more(self.backend)}"
                )
            return there[:chosen]
        chosen = list(chosen)
        if not chosen:
            raise ValueError("pmap devices=[]: give at least one device")
        for d in chosen:
            if not isinstance(d, Device):
                raise TypeError(f"pmap devices must be Device objects from srctrans.devices(), got {d!r}")
            if d.kind != self.backend:
                raise ValueError(f"pmap devices: {d} is not a {self.backend!r} device (backend={self.backend!r})")
            if d not in there:
                raise ValueError(
                    f"pmap devices: {d} does not exist; there {'is' if len(there) == 1 else 'are'} {len(there)} "
                    f"{self.backend} device{'s' if len(there) != 1 else ''}{_how_more(self.backend)}"
                )
        if len(set(chosen)) != len(chosen):
            raise ValueError(f"pmap devices: a device is listed twice in {chosen}")
        return chosen

    def _compiled(self) -> bool:
        from ..config import config

        return self._compile and not config.disable_jit

    def runner(self, devices: list[Device] | None = None):
        """The runner a call uses, on ``devices`` (default :meth:`devices`)."""
        from .runner import runner_for

        chosen = self.devices() if devices is None else devices
        return runner_for(self.backend, chosen, jit=self._compiled(), jit_options=self._jit)

    # --- calling ---------------------------------------------------------------------------

    def _leaf_axes(self, args: tuple, treedefs: list) -> list:
        """``in_axes`` for each leaf of the arguments (``treedefs``: each argument's structure)."""
        spec = self.in_axes
        if isinstance(spec, dict):
            raise ValueError("pmap in_axes must be an int, None or a tuple with one entry per argument, not a dict")
        if isinstance(spec, tuple):
            if len(spec) != len(args):
                raise ValueError(f"pmap in_axes has {len(spec)} entries but {self.__qualname__} is called with {len(args)} arguments")
            out: list = []
            for name, s, a, treedef in zip(self._params, spec, args, treedefs):
                if s is None or type(s) is int:  # one entry for the whole argument: each of its leaves
                    out += [s] * treedef.num_leaves
                else:
                    out += _prefix(s, a, f"argument {name!r}", "in_axes")
            return out
        if spec is None or type(spec) is int:
            return [spec] * sum(t.num_leaves for t in treedefs)
        return _prefix(spec, tuple(args), "the arguments", "in_axes")

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"pmap of {self.__qualname__}: pass arguments by position (got {', '.join(kwargs)} by keyword)")
        if len(args) != len(self._params):
            raise TypeError(f"{self.__qualname__} takes {len(self._params)} arguments, got {len(args)}")
        leaves, treedefs = [], []
        for a in args:
            flat, treedef = tree_flatten(a)
            treedefs.append(treedef)
            leaves += flat
        axes = self._leaf_axes(args, treedefs)
        labels = _Labels(self._params, args)  # read only to say what is wrong
        leaves = plain_leaves(leaves, lambda j: f"{labels[j]} of {self.__qualname__}")
        arrays, flags, sizes = [], [], []
        for j, (v, a) in enumerate(zip(leaves, axes)):
            if a is None:
                arrays.append(v)
                flags.append(False)
                continue
            arr = np.asarray(v)
            if not -arr.ndim <= a < arr.ndim:
                raise ValueError(f"pmap in_axes={a} is out of range for {labels[j]}, which has shape {arr.shape} ({arr.ndim} axes)")
            arrays.append(np.moveaxis(arr, a, 0) if a % arr.ndim else arr)
            flags.append(True)
            sizes.append((j, a, arr.shape[a]))
        if not sizes:
            raise ValueError(f"pmap of {self.__qualname__}: every in_axes is None; map at least one argument over the devices")
        if len({s for _, _, s in sizes}) > 1:
            listing = "; ".join(f"{labels[j]} has size {s} along axis {a}" for j, a, s in sizes)
            raise ValueError(f"pmap got arguments with different sizes along the mapped axis: {listing}")
        devices = self.devices()  # (SRCTRANS_CPU_DEVICES is read at each call)
        n, count = sizes[0][2], len(devices)
        if count == 0:
            raise ValueError(f"pmap of {self.__qualname__}: backend {self.backend or 'cpu'!r} lists no devices to run on")
        if n % count:
            j, a, _ = sizes[0]
            raise ValueError(
                f"pmap: {labels[j]} has {n} examples along axis {a}, which do not split evenly over {count} devices "
                f"({n} % {count} = {n % count}); give a multiple of {count} examples or choose other devices"
            )
        spec = self._spec(tuple(flags), args, treedefs)
        if len(arrays) != len(spec.gen.meta["params"]) - sum(1 for m in spec.gen.meta["params"] if m[0] == "returns"):
            raise TypeError(f"pmap: {self.__qualname__}'s generated file takes other arguments than expected")
        runner = self.runner(devices)
        start = getattr(runner, "start_call", None)
        if start is not None:
            start()
        placed = [runner.put(v) if f else runner.replicate(v) for v, f in zip(arrays, flags)]
        out = spec.driver(_Program(runner, spec.stages), *placed)
        flat = [runner.get(o) for o in out]
        self._trace = runner.trace()
        returns = spec.spec.returns
        # a function returning one flat tuple of its leaves (pairs of pairs of a tangent file's tangent
        # file): the leaves in order, as its own rebuild reads them
        raw = _nest(spec.outputs, flat)
        if isinstance(returns, dict) and "flat" in returns:
            raw = _leaves_of(raw)
        if self._one_tuple:
            raw = (raw,)
        return self._outputs(spec, raw)

    def _spec(self, flags: tuple, args: tuple, treedefs: list) -> _Spec:
        key = (flags, tuple(treedefs))
        spec = self._specs.get(key)
        if spec is not None:
            self._last = spec
            return spec
        from ..api import Grad
        from ..nesting import Unavailable, adjoint_function
        from ..specialization import RESERVED, code_names, leaf_names
        from ..variant import StaticArgs
        from .stages import parallel_file

        with self._lock:
            fn = self._base
            trees = {
                name: treedef
                for name, a, treedef in zip(self._params, args, treedefs)
                if treedef.num_leaves != 1 or tree_flatten(a)[0][0] is not a
            }
            if trees and isinstance(self._fn, Grad):  # the grad file of these structures, arguments whole
                fn = adjoint_function(self._fn, indexed=True, trees=trees)
            elif isinstance(fn, Unavailable):
                raise fn.error
            taken = set(code_names(fn.__code__)) | RESERVED if hasattr(fn, "__code__") else set(RESERVED)
            named = {name: (treedef, leaf_names(name, treedef, taken)) for name, treedef in trees.items()}
            gen = parallel_file(fn, flags, self.axis_name, StaticArgs({}, named))
            spec = _Spec(gen, named)
            self._specs[key] = spec
            self._last = spec
            return spec

    def _outputs(self, spec: _Spec, raw: Any) -> Any:
        out = spec.spec.rebuild(raw)
        flat, treedef = tree_flatten(out)
        flat = [np.asarray(v) for v in flat]
        axes = _prefix(self.out_axes, out, "the result", "out_axes")
        placed = [place_batch_axis(v, a, k, self.__qualname__, "pmap") for k, (v, a) in enumerate(zip(flat, axes))]
        return tree_unflatten(treedef, placed)

    # --- seeing ------------------------------------------------------------------------------

    def trace(self) -> list[dict]:
        """What ran where in the last call: one record per (stage, device)."""
        return list(self._trace)

    def source_path(self):
        """The generated parallel file of the last call."""
        if self._last is None:
            raise ValueError(f"pmap of {self.__qualname__}: call it once so srctrans knows which arguments are mapped")
        return self._last.gen.path

    def source(self) -> str:
        return self.source_path().read_text()

    def _srctrans_jit(self, options: dict) -> PMapped:
        """``jit(pmap(f))``: pmap compiles already; the options reach the compiled shards."""
        return PMapped(self._fn, self.axis_name, self.in_axes, self.out_axes, self._devices_arg, self.backend, options)

    def __repr__(self) -> str:
        try:
            where = str(self.source_path())
        except ValueError:
            where = "not generated yet"
        return f"<srctrans.pmap {self.__qualname__} -> {where}>"


def _leaves_of(nested: Any) -> list:
    if isinstance(nested, tuple):
        return [leaf for part in nested for leaf in _leaves_of(part)]
    return [nested]


def _nest(structure: Any, flat: list) -> Any:
    if isinstance(structure, int):
        return flat[structure]
    return tuple(_nest(s, flat) for s in structure)


def _how_more(backend: str) -> str:
    if backend == "cpu":
        return " (set SRCTRANS_CPU_DEVICES=N for N logical CPU devices)"
    return ""


def pmap(
    fn: Callable,
    axis_name: Any = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    devices: Sequence[Device] | int | None = None,
    backend: str | None = None,
) -> PMapped:
    """The function mapped over devices, like ``jax.pmap``: what ``vmap`` computes, split over devices.

    The mapped axis of the arguments (``in_axes``, as for :func:`srctrans.vmap`: an int, None
    or a tuple of them, pytrees included) is split into one contiguous block per device; its
    size must divide by the number of devices. Inside ``fn``, ``psum``, ``pmean``, ``pmax``,
    ``pmin``, ``all_gather`` and ``axis_index`` over ``axis_name`` see all the examples: the
    generated parallel file (``srctrans.source(pmapped)`` after a call) splits ``fn`` at each
    into per-example stages and a driver that combines between them. ``devices``: a list of
    :class:`~srctrans.parallel.devices.Device` (or how many of the backend's first ones);
    ``backend``: ``"cpu"`` (default; ``SRCTRANS_CPU_DEVICES=N`` logical devices), ``"cuda"``
    or ``"dask"``. Each shard runs compiled unless ``SRCTRANS_DISABLE_JIT=1``.

    >>> import numpy as np, srctrans
    >>> def center(x):
    ...     return x - srctrans.pmean(x, "i")
    >>> srctrans.pmap(center, axis_name="i")(np.arange(4.0))   # doctest: +SKIP
    array([-1.5, -0.5,  0.5,  1.5])
    """
    from ..faces import face

    algebra = face("algebra")

    parts = fn if isinstance(fn, algebra.Outputs) else algebra.outputs_of(fn)
    if parts is not None:  # value_and_grad: each output mapped, out_axes one per output
        return algebra.pmap_outputs(parts, axis_name, in_axes, out_axes, devices, backend)
    if algebra.opaque(fn) and not isinstance(fn, PMapped):
        from ..batching import VMapped

        if check_backend(backend) == "cpu":  # as vmap on the CPU host, collectives included
            return algebra.HostMapped(fn, axis_name, in_axes, out_axes, devices, backend)
        if isinstance(fn, VMapped):  # a vmap: more examples of the pmap
            return algebra.FlatMapped(fn, axis_name, in_axes, out_axes, devices, backend)
        return algebra.DeviceGlue(fn, axis_name, in_axes, out_axes, devices, backend)  # a Jacobian: its vmaps on the devices
    return PMapped(fn, axis_name, in_axes, out_axes, devices, backend)
