"""``vmap``: the user-facing batched function, and the boundary work around its generated files.

A generated vmap file takes the flat leaves of the arguments with the batch axis of each
batched leaf *first* and returns every output with the batch axis first. Everything else
happens here, at the boundary, as plain NumPy on views: pytree arguments are flattened;
``in_axes`` are checked and moved to the front (``np.moveaxis``); ``out_axes`` move the
batch axis of each output to where the caller asked; ``out_axes=None`` takes the one
value of an output that does not depend on the batch.

Nesting, ``vmap(vmap(f, a1), a2)``, transforms the inner level's generated file again (as
:mod:`srctrans.nesting` does for ``grad(grad(f))``): the outer level's file sees a
function whose batched leaves have the inner batch axis first, so a leaf batched at both
levels has the outer batch axis at 0 and the inner one at 1. ``vmap(grad(f))`` batches
the adjoint file of ``grad(f)``. Each level specializes on which leaves it batches and on
the rank (number of axes) of one example of each leaf.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import faces
from .. import runtime as rt
from ..config import config
from ..errors import SrcTransError
from ..subclasses import plain_leaves
from ..tree import tree_flatten, tree_unflatten

_METHODS = ("auto", "vectorize", "loop")


# While set, a call of a VMapped goes to it instead (``hook(vmapped, args)``): how srctrans.algebra's
# DeviceGlue gathers the vmaps the Python of a Jacobian runs per example into one pmap on the devices
CALL_HOOK: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("srctrans_vmap_call_hook", default=None)


def check_axes_spec(spec: Any, what: str) -> None:
    """``in_axes``/``out_axes``: an int, None, or tuples/lists/dicts of them."""
    if spec is None or (isinstance(spec, (int, np.integer)) and not isinstance(spec, bool)):
        return
    if isinstance(spec, (tuple, list)):
        for s in spec:
            check_axes_spec(s, what)
        return
    if isinstance(spec, dict):
        for s in spec.values():
            check_axes_spec(s, what)
        return
    raise TypeError(f"vmap {what} must be an int, None, or a tuple, list or dict of them; got {spec!r}")


def axes_for_leaves(spec: Any, tree: Any, where: str, what: str) -> list:
    """``spec`` (a prefix of ``tree``'s structure) given to each leaf of ``tree``, in flattening order."""
    if spec is None or isinstance(spec, (int, np.integer)):
        leaves, _ = tree_flatten(tree)
        return [None if spec is None else int(spec)] * len(leaves)
    if isinstance(spec, dict):
        if not isinstance(tree, dict) or set(spec) != set(tree):
            got = sorted(tree) if isinstance(tree, dict) else type(tree).__name__
            raise ValueError(f"vmap {what} for {where} is a dict with keys {sorted(spec)}, but the value has {got}")
        out: list = []
        for key in sorted(tree):
            out += axes_for_leaves(spec[key], tree[key], f"{where}[{key!r}]", what)
        return out
    if not isinstance(tree, (tuple, list)) or len(tree) != len(spec):
        got = f"{len(tree)} entries" if isinstance(tree, (tuple, list)) else f"a {type(tree).__name__}"
        raise ValueError(f"vmap {what} for {where} has {len(spec)} entries, but the value has {got}")
    out = []
    for i, (s, t) in enumerate(zip(spec, tree)):
        out += axes_for_leaves(s, t, f"{where}[{i}]", what)
    return out


_MISMATCH = object()


def place_batch_axis(v: np.ndarray, a: int | None, k: int, who: str, what: str = "vmap") -> np.ndarray:
    """Output ``k`` of ``who``, examples stacked along axis 0, with that axis where ``out_axes``
    entry ``a`` puts it; ``a`` None: the one value every example has (``what``: the caller's name)."""
    if a is None:
        if v.shape[0] and not np.all(v == v[:1]):
            raise ValueError(f"{what} out_axes=None for output {k} of {who}, but it differs between examples")
        return v[0]
    rank = v.ndim - 1
    if not -(rank + 1) <= a <= rank:
        raise ValueError(f"{what} out_axes={a} is out of range for output {k} of {who}, which has {rank} axes per example")
    return np.moveaxis(v, 0, a % (rank + 1)) if a % (rank + 1) else v


class _VectorizedUncompilable(Exception):
    """Numba refused a vectorized file that ``method="auto"`` chose (the loop is taken instead)."""


def _plain_key(args: tuple) -> tuple | None:
    """The ndims of plain array (or Python number) arguments; None when one is a container or other."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append(a.ndim)
        elif t is float or t is int:
            key.append(-1)
        else:
            return None
    return tuple(key)


class _Plan:
    """What a call with plain arrays of given ndims does besides running the file, to replay it."""

    def __init__(self, moves, checks, sizes, spec, outputs) -> None:
        self.moves = moves  # (leaf, source axis, destination axis), in order
        self.checks = checks  # per level: (leaf, axis) whose sizes must agree
        self.sizes = sizes  # per level: axis_size or None
        self.spec = spec  # the outermost level's file
        self.outputs = outputs  # ("one", 0, 0) first for a single output, then (output, source, destination)


class VMapped:
    """A function batched by :func:`vmap`. Call it like the original, with batched arguments."""

    def __init__(
        self,
        fn: Callable,
        in_axes: Any = 0,
        out_axes: Any = 0,
        axis_size: int | None = None,
        axis_name: str | None = None,
        method: str = "auto",
        jit_options: dict | None = None,
    ) -> None:
        from ..api import Grad, Jitted

        if method not in _METHODS:
            raise ValueError(f"vmap method must be one of {', '.join(map(repr, _METHODS))}, got {method!r}")
        check_axes_spec(in_axes, "in_axes")
        check_axes_spec(out_axes, "out_axes")
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        if axis_size is not None and (not isinstance(axis_size, (int, np.integer)) or axis_size < 0):
            raise ValueError(f"vmap axis_size must be a non-negative int, got {axis_size!r}")
        self.in_axes, self.out_axes = in_axes, out_axes
        self.axis_size = None if axis_size is None else int(axis_size)
        self.axis_name = axis_name
        self.method = method
        self._jit = dict(jit_options) if jit_options else None
        self._inner: VMapped | None = None
        self._base: Callable | None = None
        self._one_tuple = False  # a grad with argnums=(k,) gives a tuple of one gradient
        self._fn = fn
        self._looped = _loops_in_python(fn)
        self._per_example: Callable | None = None
        if self._looped:
            self._base = fn
            self._params = list(fn._params) if isinstance(fn, VMapped) else None
        elif isinstance(fn, VMapped):
            self._inner = fn
            if self._jit is None and fn._jit is not None:
                self._jit = dict(fn._jit)
        elif isinstance(fn, Grad):
            from ..nesting import Unavailable, adjoint_function

            if self._jit is None and fn._compile:
                self._jit = {k: v for k, v in fn._init_options.items() if not k.startswith("_")}
            try:
                self._base = adjoint_function(fn)
            except SrcTransError as err:  # (pytree arguments: their structure's file is made at the call)
                self._base = Unavailable(fn, err)
            self._one_tuple = not fn._single and len(fn._wrt) == 1
        elif isinstance(fn, Jitted):
            if self._jit is None and fn._compile:
                self._jit = {k: v for k, v in fn._init_options.items() if not k.startswith("_")}
            self._base = fn._fn
        elif callable(fn):
            self._base = fn
        else:
            raise TypeError(f"vmap expects a function, got {type(fn).__name__}")
        base = self._chain()[-1]._base
        if not self._looped or self._params is None:
            params = list(inspect.signature(base).parameters.values())
            if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
                raise TypeError("vmap: the function must take positional parameters only (no *args, **kwargs)")
            self._params = [p.name for p in params]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        self.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in self._params])
        self._specs: dict[tuple, list] = {}
        self._plans: dict[tuple, _Plan] = {}
        self.__name__ = getattr(base, "__name__", "vmapped")
        self.__qualname__ = getattr(base, "__qualname__", self.__name__)
        self.__doc__ = getattr(base, "__doc__", None)

    # --- structure -------------------------------------------------------------------

    def _batched_base(self, trees: dict | None = None) -> Callable:
        """The function this level batches when it runs: of a grad, the adjoint file whose range
        loops save on preallocated tapes, which vmap batches (``_base``, the one other
        transformations differentiate, pushes and pops its tapes); for pytree arguments of the
        structures ``trees``, that structure's file (:func:`srctrans.nesting.adjoint_function`)."""
        from ..api import Grad

        if not isinstance(self._fn, Grad):
            return self._base  # type: ignore[return-value]
        key = ("_indexed_base", tuple(sorted((trees or {}).items())))
        found = self.__dict__.get(key)
        if found is None:
            from ..nesting import adjoint_function

            found = self.__dict__[key] = adjoint_function(self._fn, indexed=True, trees=trees)
        return found

    def _structured_base(self, trees: dict) -> Callable:
        """Of a grad, the adjoint file (tapes pushed and popped) for pytree arguments ``trees``."""
        from ..api import Grad

        if not isinstance(self._fn, Grad):
            return self._base  # type: ignore[return-value]
        key = ("_base", tuple(sorted(trees.items())))
        found = self.__dict__.get(key)
        if found is None:
            from ..nesting import adjoint_function

            found = self.__dict__[key] = adjoint_function(self._fn, trees=trees)
        return found

    def _trees(self, args: tuple, treedefs: list) -> dict:
        """The structures of the arguments that are pytrees (not single leaves)."""
        return {
            name: treedef
            for name, a, treedef in zip(self._params, args, treedefs)
            if treedef.num_leaves != 1 or tree_flatten(a)[0][0] is not a
        }

    def _chain(self) -> list[VMapped]:
        levels: list[VMapped] = [self]
        while levels[-1]._inner is not None:
            levels.append(levels[-1]._inner)
        return levels

    def _srctrans_jit(self, options: dict) -> VMapped:
        """``jit(vmap(f))``: the same batched function, its outermost file compiled."""
        twin = VMapped(self._fn, self.in_axes, self.out_axes, self.axis_size, self.axis_name, self.method, jit_options=options)
        return twin

    # --- calling -------------------------------------------------------------------------

    def _arg_axes(self, level: VMapped, args: tuple) -> list:
        spec = level.in_axes
        if isinstance(spec, dict):
            raise ValueError("vmap in_axes must be an int, None or a tuple with one entry per argument, not a dict")
        if isinstance(spec, tuple):
            if len(spec) != len(args):
                raise ValueError(
                    f"vmap in_axes has {len(spec)} entries but {self.__qualname__} is called with {len(args)} arguments"
                )
            out: list = []
            for name, s, a in zip(self._params, spec, args):
                out += axes_for_leaves(s, a, f"argument {name!r}", "in_axes")
            return out
        return axes_for_leaves(spec, tuple(args), "the arguments", "in_axes")

    def __call__(self, *args, **kwargs):
        hook = CALL_HOOK.get()
        if hook is not None and not kwargs:
            return hook(self, args)
        if kwargs:  # as in JAX: keyword arguments are batched along axis 0, in_axes covers the positional ones
            ordered = self._in_order(args, kwargs)
            return self._with_keywords(len(args), tuple(kwargs))(*ordered)
        if self._looped:
            return self._loop_call(args)
        if self._jit is not None and self._jit.get("target") == "cuda" and not config.disable_jit:
            out = self._per_example_kernel(args)
            if out is not _MISMATCH:
                return out
            self.__dict__["_kernel_file"] = None
        plan = self._plans.get(_plain_key(args))
        if plan is not None:
            out = self._call_planned(plan, args)
            if out is not _MISMATCH:
                return out
        if len(args) < len(self._params) and self._defaults(len(args)) is not None:  # as f(*args): defaults for the rest
            return self._with_defaults(len(args))(*args, *self._defaults(len(args)))
        if len(args) != len(self._params):
            raise TypeError(f"{self.__qualname__} takes {len(self._params)} arguments, got {len(args)}")
        levels = self._chain()
        leaves: list = []
        treedefs = []
        for a in args:
            flat, treedef = tree_flatten(a)
            treedefs.append(treedef)
            leaves += flat
        labels = self._leaf_labels(args)
        leaves = plain_leaves(leaves, lambda j: f"{labels[j]} of {self.__qualname__}")
        arrays = [_array(v) if not isinstance(v, (float, int, complex, bool)) else v for v in leaves]
        done = [0] * len(arrays)  # how many outer levels each leaf is batched at (their axes are in front)
        per_level = []
        moves: list[tuple[int, int, int]] = []
        checks: list[list[tuple[int, int]]] = []
        for level in levels:
            axes = self._arg_axes(level, args)
            flags, sizes = [], []
            for j, a in enumerate(axes):
                if a is None:
                    flags.append(False)
                    continue
                shape = np.shape(arrays[j])
                nd = len(shape) - done[j]
                if not -nd <= a < nd:
                    raise ValueError(
                        f"vmap in_axes={a} is out of range for {labels[j]}, which has shape {shape[done[j]:]} "
                        f"({nd} axes) {'per example of the outer vmap' if done[j] else ''}".rstrip()
                    )
                src = done[j] + a % nd
                arr = _array(arrays[j])
                arrays[j] = np.moveaxis(arr, src, done[j]) if src != done[j] else arr
                if src != done[j]:
                    moves.append((j, src, done[j]))
                sizes.append((labels[j], a, arrays[j].shape[done[j]]))
                flags.append(True)
            checks.append([(j, done[j]) for j, a in enumerate(axes) if a is not None])
            n = self._batch_size(sizes, level.axis_size)
            ranks = []
            for j, f in enumerate(flags):
                ranks.append(np.ndim(arrays[j]) - done[j] - (1 if f else 0))
            per_level.append((tuple(flags), tuple(ranks), n if not any(flags) else None))
            for j, f in enumerate(flags):
                if f:
                    done[j] += 1
        specs = self._specializations(levels, per_level, args, treedefs)
        try:
            raw = self._run(specs[0], arrays)
        except _VectorizedUncompilable:  # jit: Numba refused a vectorized file; loop where method="auto"
            specs = self._specializations(levels, per_level, args, treedefs, compiled_loop=True)
            raw = self._run(specs[0], arrays)
        record: list | None = [] if _plain_key(args) is not None and not levels[-1]._one_tuple else None
        out = self._outputs(levels, specs, raw, record)
        planned = record is not None and not any(r[0] == "unplanned" for r in record)
        if planned and specs[-1].returns is None:  # the same shapes again: skip the checks above
            self._plans[_plain_key(args)] = _Plan(moves, checks, [lv.axis_size for lv in levels], specs[0], record)
        return out

    def _per_example_kernel(self, args: tuple) -> Any:
        """``jit(vmap(f), target="cuda")`` of a function with a loop: one CUDA kernel, one thread per
        example, the whole loop in each thread (a host loop launching kernels would pay a launch per
        trip). ``_MISMATCH`` where this does not apply (nested vmaps, pytrees, collectives, out_axes,
        no loop) or the per-example code has no scalar form; the vectorized file runs then."""
        if self._inner is not None or self.axis_name is not None or self.out_axes != 0 or len(args) != len(self._params):
            return _MISMATCH
        spec = self.in_axes if isinstance(self.in_axes, tuple) else (self.in_axes,) * len(args)
        if len(spec) != len(args) or not all(a is None or isinstance(a, int) for a in spec):
            return _MISMATCH
        if any(isinstance(a, (tuple, list, dict)) or (a is None) for a in args):
            return _MISMATCH
        source = self.__dict__.get("_kernel_source")
        if source is None:
            source = self.__dict__["_kernel_source"] = _per_example_source(self._batched_base())
        constants = getattr(self._batched_base(), "__globals__", None)  # the numbers of its module (STEPS = 500)
        if source is False:
            return _MISMATCH
        refused = self.__dict__.setdefault("_kernel_refused", set())
        values, batched = [], []
        for a, ax in zip(args, spec):
            if ax is None:
                values.append(a)
                batched.append(False)
                continue
            arr = _array(a)
            if not -arr.ndim <= ax < arr.ndim:
                return _MISMATCH  # the vectorized path says what is wrong
            values.append(np.moveaxis(arr, ax, 0) if ax % arr.ndim else arr)
            batched.append(True)
        if not any(batched):
            return _MISMATCH
        key = tuple((np.shape(v)[1:] if b else np.shape(v), str(getattr(v, "dtype", type(v).__name__)), b) for v, b in zip(values, batched))
        if key in refused:
            return _MISMATCH
        sizes = {np.shape(v)[0] for v, b in zip(values, batched) if b}
        if len(sizes) != 1:
            return _MISMATCH
        from ..backend import jit_module
        from ..errors import SrcTransError

        path, name = source
        try:
            outs, self.__dict__["_kernel_file"] = jit_module("cuda").per_example(path, name, self._params, values, batched, constants)
        except (SrcTransError, KeyError):  # no scalar form (a matrix product's adjoint, an unknown call, uint8 ...)
            refused.add(key)
            return _MISMATCH
        return (outs,) if self._one_tuple else outs

    def _batch_size(self, sizes: list[tuple[str, int, int]], axis_size: int | None) -> int:
        """The one batch size of the ``(label, in_axes entry, size)`` of each batched leaf, or ``axis_size``."""
        if sizes:
            found = {s for _, _, s in sizes}
            if len(found) > 1 or (axis_size is not None and axis_size not in found):
                listing = "; ".join(f"{lab} has size {s} along axis {a}" for lab, a, s in sizes)
                extra = f"; axis_size={axis_size}" if axis_size is not None else ""
                raise ValueError(f"vmap got arguments with different batch sizes: {listing}{extra}")
            return sizes[0][2]
        if axis_size is None:
            raise ValueError(
                f"vmap of {self.__qualname__}: every in_axes is None, so the batch size is not known; pass axis_size"
            )
        return axis_size

    # --- a Jacobian: a loop in Python over the examples ------------------------------------

    def _loop_call(self, args: tuple) -> Any:
        """``vmap`` of a Jacobian (``jacfwd``, ``jacrev``, ``hessian``), which has no source to
        batch: the Jacobian called once per example, from Python, and the results stacked.
        Under ``jit`` each call runs the Jacobian's compiled file."""
        if len(args) != len(self._params):
            raise TypeError(f"{self.__qualname__} takes {len(self._params)} arguments, got {len(args)}")
        axes = self._arg_axes(self, args)
        labels = self._leaf_labels(args)
        trees = [tree_flatten(a) for a in args]
        plain_leaves([leaf for flat, _ in trees for leaf in flat], lambda j: f"{labels[j]} of {self.__qualname__}")
        arrays, sizes = [], []
        for j, (v, a) in enumerate(zip([leaf for flat, _ in trees for leaf in flat], axes)):
            if a is None:
                arrays.append(v)
                continue
            arr = np.asarray(v)
            if not -arr.ndim <= a < arr.ndim:
                raise ValueError(f"vmap in_axes={a} is out of range for {labels[j]}, which has shape {arr.shape} ({arr.ndim} axes)")
            arrays.append(np.moveaxis(arr, a, 0))
            sizes.append((labels[j], a, arr.shape[a]))
        n = self._batch_size(sizes, self.axis_size)
        if n == 0:
            raise ValueError(f"vmap of the Jacobian {self.__qualname__} over 0 examples: the shape of its result is not known")
        fn = self._example_function()
        results = []
        for i in range(n):
            call, k = [], 0
            for flat, treedef in trees:
                part = [arrays[k + t][i] if axes[k + t] is not None else arrays[k + t] for t in range(len(flat))]
                call.append(tree_unflatten(treedef, part))
                k += len(flat)
            results.append(fn(*call))
        first, out_tree = tree_flatten(results[0])
        axes = axes_for_leaves(self.out_axes, results[0], "the result", "out_axes")
        stacked = [np.stack([np.asarray(tree_flatten(r)[0][t]) for r in results]) for t in range(len(first))]
        return tree_unflatten(out_tree, [place_batch_axis(v, a, t, self.__qualname__) for t, (v, a) in enumerate(zip(stacked, axes))])

    def _example_function(self) -> Callable:
        """What :meth:`_loop_call` calls per example: the Jacobian, compiled under ``jit(vmap(...))``."""
        if self._per_example is None:
            fn = self._fn
            if self._jit is not None and not config.disable_jit and hasattr(fn, "_srctrans_jit"):
                fn = fn._srctrans_jit(self._jit)
            self._per_example = fn
        return self._per_example

    # --- keyword arguments ------------------------------------------------------------------

    def _in_order(self, args: tuple, kwargs: dict) -> tuple:
        """The positional and keyword arguments of a call as one tuple in parameter order."""
        if len(args) > len(self._params):
            raise TypeError(f"{self.__qualname__} takes {len(self._params)} arguments, got {len(args)}")
        for name in kwargs:
            if name not in self._params:
                raise TypeError(f"{self.__qualname__} got an unexpected keyword argument {name!r}")
            if self._params.index(name) < len(args):
                raise TypeError(f"{self.__qualname__} got multiple values for argument {name!r}")
        missing = [n for n in self._params[len(args):] if n not in kwargs]
        if missing:
            raise TypeError(f"{self.__qualname__} is missing the argument {missing[0]!r}")
        return (*args, *(kwargs[n] for n in self._params[len(args):]))

    def _with_keywords(self, npos: int, names: tuple[str, ...]) -> VMapped:
        """This function batched for calls with ``npos`` positional arguments and the rest by keyword:
        the same levels, each with ``in_axes`` spelled out per parameter and 0 for the keyword ones."""
        key = (npos, frozenset(names))
        twins = self.__dict__.setdefault("_keyword_twins", {})
        if key not in twins:
            spec = self.in_axes
            if isinstance(spec, tuple):
                if len(spec) != npos:
                    raise ValueError(
                        f"vmap in_axes has {len(spec)} entries but {self.__qualname__} is called with {npos} "
                        f"positional arguments (in_axes covers the positional arguments; keyword arguments are "
                        f"batched along axis 0)"
                    )
            elif isinstance(spec, dict):
                raise ValueError("vmap in_axes must be an int, None or a tuple with one entry per argument, not a dict")
            else:
                spec = (spec,) * npos
            spec = spec + (0,) * (len(self._params) - npos)
            fn = self._inner._with_keywords(npos, names) if self._inner is not None else self._fn
            twin = VMapped(fn, spec, self.out_axes, self.axis_size, self.axis_name, self.method, self._jit)
            twins[key] = twin
        return twins[key]

    # --- parameters left to their defaults ---------------------------------------------------

    def _defaults(self, npos: int) -> tuple | None:
        """The defaults (bound at ``def`` time) of the parameters after the first ``npos``, or None
        when one of them has none."""
        params = inspect.signature(self._chain()[-1]._base).parameters
        values = tuple(params[name].default for name in self._params[npos:])
        return None if any(v is inspect.Parameter.empty for v in values) else values

    def _with_defaults(self, npos: int) -> VMapped:
        """This function batched for calls with ``npos`` arguments, the other parameters left to
        their defaults: the same levels, ``in_axes`` spelled out per parameter, None (not
        batched) for the defaults."""
        twins = self.__dict__.setdefault("_default_twins", {})
        if npos not in twins:
            spec = self.in_axes
            if isinstance(spec, tuple):
                if len(spec) != npos:
                    raise ValueError(f"vmap in_axes has {len(spec)} entries but {self.__qualname__} is called with {npos} arguments")
            elif isinstance(spec, dict):
                raise ValueError("vmap in_axes must be an int, None or a tuple with one entry per argument, not a dict")
            else:
                spec = (spec,) * npos
            spec = spec + (None,) * (len(self._params) - npos)
            fn = self._inner._with_defaults(npos) if self._inner is not None else self._fn
            twins[npos] = VMapped(fn, spec, self.out_axes, self.axis_size, self.axis_name, self.method, self._jit)
        return twins[npos]

    # --- derivatives of a call (reverse and forward mode meet a vmapped function) -----------

    def _level_axes(self, what: str) -> tuple:
        """``in_axes`` as one int or None per parameter; what derivatives of a call support."""
        if self._inner is not None:
            raise TypeError(f"{what} of a call of a nested vmap ({self.__qualname__}) is not supported yet")
        spec = self.in_axes if isinstance(self.in_axes, tuple) else (self.in_axes,) * len(self._params)
        if len(spec) != len(self._params) or not all(s is None or isinstance(s, (int, np.integer)) for s in spec):
            raise TypeError(
                f"{what} of a call of the vmapped {self.__qualname__} needs in_axes given as one int or None per "
                f"argument, got {self.in_axes!r}"
            )
        return spec

    def _derived(self, kind: str, argnums: tuple[int, ...]) -> VMapped:
        """The vmap of the base function's vjp or tangent function with respect to ``argnums``, made once."""
        from ..nesting import tangent_function, vjp_function

        if self._looped:
            raise TypeError(f"{'grad' if kind == 'vjp' else 'jvp'} of a call of vmap of the Jacobian {self.__qualname__} is not supported")
        made = self.__dict__.setdefault("_derivatives", {})
        key = (kind, argnums)
        if key not in made:
            axes = self._level_axes("grad" if kind == "vjp" else "jvp")
            names = tuple(self._params[k] for k in argnums)
            if kind == "vjp":
                fn = vjp_function(self._base, len(self._params), wrt=names)
                in_axes = (*axes, self.out_axes)  # the cotangent has the batch axis where the output has it
                out_axes = tuple(0 if axes[k] is None else axes[k] for k in argnums)
            else:
                fn = tangent_function(self._base, len(self._params), wrt=names)
                in_axes = (*axes, *(axes[k] for k in argnums))  # a tangent is batched as its primal is
                out_axes = (self.out_axes, self.out_axes)
            made[key] = VMapped(
                fn, in_axes, out_axes if len(out_axes) > 1 else out_axes[0], self.axis_size, self.axis_name,
                self.method, self._jit,
            )
        return made[key]

    def vjp(self, primals: tuple, cotangent: Any, argnums: tuple[int, ...]) -> tuple:
        """The cotangents of ``primals[k]`` for each ``k`` in ``argnums``, given the cotangent of the
        batched output: the vmap of the function's vjp. An argument that is not batched
        (``in_axes`` None) was shared by every example, so its cotangent is the sum over the batch.

        This is what the adjoint of a function calling this one runs (see :mod:`srctrans.ad.reverse`).
        """
        argnums = tuple(argnums)
        axes = self._level_axes("grad")
        bars = self._derived("vjp", argnums)(*primals, cotangent)
        bars = bars if len(argnums) > 1 else (bars,)
        return tuple(np.sum(b, axis=0) if axes[k] is None else b for k, b in zip(argnums, bars))

    def jvp(self, primals: tuple, tangents: tuple) -> tuple:
        """``(out, out_dot)``: the batched output and its tangent, ``tangents[k]`` None for an
        argument held constant: the vmap of the function's tangent function.

        This is what the tangent file of a function calling this one runs (see :mod:`srctrans.ad.forward`).
        """
        argnums = tuple(k for k, t in enumerate(tangents) if t is not None)
        if not argnums:
            out = self(*primals)
            return out, np.zeros_like(out)
        return self._derived("jvp", argnums)(*primals, *(tangents[k] for k in argnums))

    def _run(self, spec, arrays: list) -> Any:
        try:
            return rt.plain_batches(self._runner(spec)(*arrays))
        except Exception as err:
            if hasattr(err, "generated_file"):  # Numba's refusal, located in the generated file
                from ..specialization import compile_error

                if getattr(spec, "fallback", None) is not None:
                    raise _VectorizedUncompilable() from None
                raise compile_error(spec, err) from None
            spec.explain(err)
            raise

    def _call_planned(self, plan: _Plan, args: tuple) -> Any:
        """A call with plain arrays of the ndims of an earlier call: its moves and checks, replayed."""
        arrays = list(args)
        for j, src, dst in plan.moves:
            arrays[j] = np.moveaxis(arrays[j], src, dst)
        for checks, size in zip(plan.checks, plan.sizes):
            for j, axis in checks:
                n = arrays[j].shape[axis]
                if size is None:
                    size = n
                elif n != size:
                    return _MISMATCH  # the full path says which sizes disagree
        raw = self._run(plan.spec, arrays)
        if plan.outputs and plan.outputs[0][0] == "one":
            raw = (raw,)
        flat = list(raw)
        for k, src, dst in plan.outputs[1:] if plan.outputs and plan.outputs[0][0] == "one" else plan.outputs:
            flat[k] = np.moveaxis(flat[k], src, dst)
        return flat[0] if plan.outputs and plan.outputs[0][0] == "one" else tuple(flat)

    def _leaf_labels(self, args: tuple) -> list[str]:
        from ..tree import keystr, tree_flatten_with_path

        labels = []
        for name, a in zip(self._params, args):
            flat, _ = tree_flatten_with_path(a)
            labels += [f"argument {name + keystr(p)!r}" for p, _ in flat]
        return labels

    def _runner(self, spec) -> Callable:
        if self._jit is None or config.disable_jit:
            return spec.python
        return spec.compiled

    # --- generated files ------------------------------------------------------------------

    def _specializations(
        self, levels: list[VMapped], per_level: list, args: tuple, treedefs: list, compiled_loop: bool = False
    ) -> list:
        """The generated file of each level, innermost first; ``compiled_loop``: loops where "auto" vectorized."""
        key = (tuple(per_level), tuple(treedefs), compiled_loop)
        specs = self._specs.get(key)
        if specs is not None:
            return specs
        from ..nested_calls import reads_srctrans_anywhere
        from ..nesting import Unavailable
        from ..pipeline import generate
        from ..specialization import RESERVED, Specialization, code_names, leaf_names
        from ..variant import StaticArgs, Transform

        options = {"target": "cpu", "parallel": False, "fastmath": False, "cache": True, "boundscheck": True}
        if self._jit:
            options.update({k: self._jit[k] for k in options if k in self._jit})
        specs = [None] * len(levels)
        fn: Callable = levels[-1]._base  # type: ignore[assignment]
        if isinstance(fn, Unavailable) and not self._trees(args, treedefs):
            raise fn.error
        trees = self._trees(args, treedefs)
        if not compiled_loop:  # (Numba's loop over the examples keeps tapes pushed and popped: a
            # preallocated tape takes its type from the first trip, and a value may change type)
            fn = levels[-1]._batched_base(trees)
        elif trees:
            fn = levels[-1]._structured_base(trees)
        if self._jit is not None:
            fn = _compiled_grad(levels[-1], options, fn, trees)
        for index in range(len(levels) - 1, -1, -1):
            level = levels[index]
            flags, ranks, size = per_level[index]
            named: dict = {}
            if index == len(levels) - 1:  # the user's function: pytree arguments become leaves
                taken = set(code_names(fn.__code__)) | RESERVED if hasattr(fn, "__code__") else set(RESERVED)
                for name, a, treedef in zip(self._params, args, treedefs):
                    if treedef.num_leaves != 1 or tree_flatten(a)[0][0] is not a:
                        named[name] = (treedef, leaf_names(name, treedef, taken))
            parallel = bool(options["parallel"]) and index == 0
            method = "loop" if compiled_loop and level.method == "auto" else level.method
            opts: tuple = (("method", method), ("batched", flags), ("ndim", ranks))
            if method != level.method:
                opts += (("reason", "numba"),)
            if size is not None:
                opts += (("axis_size", size),)
            if level.axis_name is not None:
                opts += (("axis_name", level.axis_name),)
            if parallel:
                opts += (("parallel", True),)
            if self._jit is not None and reads_srctrans_anywhere(fn):  # inline vmaps become loops Numba compiles
                opts += (("compiled", True),)
            tag = "vmap" + ("" if method == "auto" else "_" + method)
            tag += "_" + "_".join(("b" if f else "u") + str(r) for f, r in zip(flags, ranks))
            tag += f"_n{size}" if size is not None else ""
            tag += "_parallel" if parallel else ""
            tag += "_compiled" if ("compiled", True) in opts else ""
            gen = generate(fn, Transform("vmap", opts, tag=tag), StaticArgs({}, named))
            spec = Specialization(gen, options, named)
            if len([m for m in gen.meta["params"] if m[0] in ("arg", "leaf")]) != len(flags):
                raise TypeError(f"vmap: {self.__qualname__}'s generated file takes other arguments than expected")
            specs[index] = spec
            fn = spec.python
        if self._jit is not None and not compiled_loop and any(
            lv.method == "auto" and sp.gen.meta.get("vmap", {}).get("method") == "vectorize" for lv, sp in zip(levels, specs)
        ):
            specs[0].fallback = "loop"  # a compile error of the outermost file falls back to the loop
        self._specs[key] = specs
        return specs

    def _outputs(self, levels: list[VMapped], specs: list, raw: Any, record: list | None = None) -> Any:
        """The outputs with their batch axes where out_axes say; ``record`` gets the moves (for :class:`_Plan`)."""
        base_spec = specs[-1]
        if levels[-1]._one_tuple:
            raw = (raw,)
        out = base_spec.rebuild(raw)
        flat, treedef = tree_flatten(out)
        simple = not isinstance(raw, tuple) or all(not isinstance(r, tuple) for r in raw)
        if record is not None:
            if not simple:
                record.append(("unplanned", 0, 0))
                record = None
            elif not isinstance(raw, tuple):
                record.append(("one", 0, 0))
        flat = [_array(v) for v in flat]
        for index in range(len(levels) - 1, -1, -1):
            level, spec = levels[index], specs[index]
            axes = axes_for_leaves(level.out_axes, out, "the result", "out_axes")
            unbatched = set(spec.gen.meta.get("vmap", {}).get("unbatched_outputs", []))
            vectorized = spec.gen.meta.get("vmap", {}).get("method") == "vectorize"
            for k, a in enumerate(axes):
                v = flat[k]
                if a is None:
                    known = vectorized and simple and k in unbatched
                    first = np.take(v, 0, axis=index) if v.shape[index] > 0 else None
                    if not known and first is not None and not np.all(np.take(v, range(v.shape[index]), axis=index) == np.expand_dims(first, index)):
                        raise ValueError(
                            f"vmap out_axes=None for output {k} of {self.__qualname__}, but it depends on the batched arguments"
                        )
                    if first is None:
                        raise ValueError("vmap out_axes=None needs a batch of at least one example")
                    flat[k] = first
                    if record is not None:
                        record.append(("unplanned", 0, 0))
                    continue
                rank = v.ndim - index - 1
                if not -(rank + 1) <= a <= rank:
                    raise ValueError(
                        f"vmap out_axes={a} is out of range for output {k} of {self.__qualname__}, "
                        f"which has {rank} axes per example"
                    )
                dst = index + a % (rank + 1)
                if dst != index:
                    flat[k] = np.moveaxis(v, index, dst)
                    if record is not None:
                        record.append((k, index, dst))
        return tree_unflatten(treedef, flat)

    # --- seeing ------------------------------------------------------------------------

    def _last(self) -> list:
        if not self._specs:
            raise ValueError(f"vmap of {self.__qualname__}: call it once so srctrans knows the shapes of its arguments")
        return next(reversed(self._specs.values()))

    def source_path(self):
        """The generated file of the outermost level, for the shapes of the last call (of a
        Jacobian's vmap, the file the Jacobian runs for each example)."""
        if self._looped:
            return self._example_function().source_path()
        if self.__dict__.get("_kernel_file") is not None:  # jit(target="cuda"): one kernel ran the examples
            return self.__dict__["_kernel_file"]
        spec = self._last()[0]
        if spec.options.get("target") == "cuda" and not config.disable_jit:  # the file that runs: its CUDA form
            from ..gpu import cuda_file

            return cuda_file(spec.gen.path)
        return spec.gen.path

    def source(self) -> str:
        return self.source_path().read_text()

    def sources(self) -> list[str]:
        """The generated files of every level, outermost first."""
        if self._looped:
            return [self.source()]
        return [s.gen.path.read_text() for s in self._last()]

    def __repr__(self) -> str:
        try:
            where = str(self.source_path())
        except ValueError:
            where = "not generated yet"
        kind = "jit(vmap)" if self._jit else "vmap"
        return f"<srctrans.{kind} {self.__qualname__} -> {where}>"


def _loops_in_python(fn: Any) -> bool:
    """``fn`` is a Jacobian (``jacfwd``, ``jacrev``, ``hessian``: Python around generated files,
    with no source of its own to batch), or a vmap of one."""
    if isinstance(fn, VMapped):
        return fn._looped
    return hasattr(fn, "_srctrans_state") and hasattr(fn, "_srctrans_jit")


def vmap(
    fn: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: str | None = None,
    method: str = "auto",
) -> VMapped:
    """The function mapped over a batch axis of its arguments, like ``jax.vmap``.

    ``in_axes`` says, per argument, which axis holds the batch (``None``: not batched):
    an int for every argument, or a tuple with one entry per argument (each an int, None
    or a pytree of them matching that argument). ``out_axes`` says where the batch axis
    goes in each output. ``axis_size`` gives the batch size when every ``in_axes`` is
    None. ``method``: ``"vectorize"`` rewrites every statement to carry the batch axis
    (``W @ x`` over a batch of ``x`` becomes one matrix-matrix product), ``"loop"`` calls
    the function once per example in a generated loop, ``"auto"`` (the default) vectorizes
    when every statement has a batching rule and loops otherwise; the generated file's
    header says which and why. ``jit(vmap(f))`` compiles the file; ``vmap(grad(f))``
    gives per-example gradients.

    >>> import numpy as np, srctrans
    >>> def l1(x, y):
    ...     return np.sum(np.abs(x - y))
    >>> xs = np.arange(6.0).reshape(3, 2)
    >>> srctrans.vmap(l1, in_axes=(0, None))(xs, xs[0])   # doctest: +SKIP
    array([0., 4., 8.])
    """
    from ..faces import face

    algebra = face("algebra")

    parts = fn if isinstance(fn, algebra.Outputs) else algebra.outputs_of(fn)
    if parts is not None:  # value_and_grad: each output batched, out_axes one per output
        return algebra.vmap_outputs(parts, in_axes, out_axes, axis_size, axis_name, method)
    return VMapped(fn, in_axes, out_axes, axis_size, axis_name, method)


def _per_example_source(fn: Callable) -> tuple | bool:
    """(file, function) of ``fn``'s per-example code for a CUDA kernel, or False when it has no
    loop (one array operation per line vectorizes better) or no generated file of its own."""
    import re
    from pathlib import Path

    from ..cache import FOLDER

    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    path = Path(code.co_filename)
    if path.parent.name != FOLDER:  # the user's own function: its jit file, normalized
        from ..pipeline import generate
        from ..variant import Transform

        try:
            gen = generate(fn, Transform("jit"))
        except Exception:  # noqa: BLE001 - the vectorized path reports what is wrong
            return False
        if any(m[0] != "arg" for m in gen.meta["params"]):
            return False
        path, name = gen.path, gen.entry
    else:
        name = fn.__name__
    try:
        text = path.read_text()
    except OSError:
        return False
    if not re.search(r"^\s+(for|while) ", text, re.MULTILINE):
        return False
    return path, name


def _array(v: Any) -> Any:
    """``np.asarray(v)``, but a GPU array (``jit(..., target="cuda")``'s) stays where it is: NumPy's
    functions reach its own library through ``__array_function__``."""
    if hasattr(v, "__cuda_array_interface__") and hasattr(v, "__array_function__"):
        return v
    return np.asarray(v)


def _compiled_grad(level: VMapped, options: dict, base: Callable, trees: dict | None = None) -> Callable:
    """Under ``jit(vmap(grad(f)))``, the adjoint file Numba compiles: where ``f`` calls
    transformations (``srctrans.vmap(g, ...)(x)``), that file loops over their examples instead of
    calling their uncompiled vjp (see :mod:`srctrans.nested_calls`); else the level's function."""
    from ..api import Grad, calls_transformations
    from ..nesting import adjoint_function

    fn = level._fn
    if not isinstance(fn, Grad) or fn._compile or not calls_transformations(fn._fn):
        return base
    return adjoint_function(Grad(fn._fn, **fn._grad_args, jit_options=options), trees=trees)


faces.register(vmap=vmap, VMapped=VMapped)
