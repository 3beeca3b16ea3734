"""Transformations of what other transformations return, where there is no one file to rewrite.

Most compositions transform a generated file again: ``grad(grad(f))`` differentiates the adjoint
file of ``grad(f)``, ``vmap(grad(f))`` batches it, ``jacfwd(jacfwd(f))`` pushes basis vectors
through the tangent file of the tangent file. Four kinds of objects run Python around several
generated files instead, and have no single source to rewrite: ``value_and_grad`` (two results),
``vmap`` (its levels and per-example loops), a Jacobian or Hessian (a vmap over basis vectors),
and the derivatives below. Every transformation reaches them through the identities of the
algebra, here in one place:

- ``value_and_grad(f)`` is the function of two outputs ``(f, grad f)``: every transformation
  maps over the outputs (``jacfwd`` of a tuple is the tuple of ``jacfwd``\\ s, ``vmap`` with
  ``out_axes`` one per output, ``vjp`` sums the outputs' pullbacks) -- :class:`Outputs`;
- ``D(vmap f) = vmap(D f)`` with the examples' blocks on the diagonal: example ``b``'s output
  depends on example ``b`` of a batched argument alone, and on all of a shared one --
  :class:`VMapDerivative`, for ``jacfwd``, ``jacrev`` and ``hessian`` of a vmap;
- ``jvp``, ``vjp`` and ``grad`` of an object with a Jacobian are contractions with that Jacobian
  (dense: its blocks, then one ``tensordot`` per block) -- :func:`jvp`, :func:`vjp`, :func:`grad`;
- ``pmap`` of such an object on the CPU backend computes what ``vmap`` of it computes, with the
  same collectives over ``axis_name``: it runs as that vmap, in this process -- :class:`HostMapped`.

Each returns an object with the hooks the others read (``_srctrans_jit`` for ``jit``,
``_srctrans_state`` for vmap's per-example loop, a signature), so the identities compose.
"""

from __future__ import annotations

import inspect
import itertools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import faces
from .boundary import differentiable, leaf_dtype, zero_tangent
from .errors import SrcTransError, UnsupportedSyntaxError
from .tree import tree_flatten, tree_map, tree_unflatten

__all__ = ["DeviceGlue", "FlatMapped", "HostMapped", "Outputs", "VMapDerivative", "opaque", "outputs_of"]


def opaque(fn: Any) -> bool:
    """``fn`` runs Python around generated files, with no source of its own to transform."""
    from .api import Jitted
    from .batching import VMapped

    if isinstance(fn, Jitted):
        return False
    return isinstance(fn, VMapped) or (hasattr(fn, "_srctrans_state") and hasattr(fn, "_srctrans_jit"))


def _signature_of(names: Sequence[str]) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(n, kind) for n in names])


def _params_of(fn: Any) -> list[str]:
    from .batching import VMapped

    if isinstance(fn, VMapped):
        return list(fn._params)
    return list(inspect.signature(fn).parameters)


def _name_of(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


# ---------------------------------------------------------------- value_and_grad: two outputs


class Outputs:
    """A function whose result is the tuple of its parts' results, each a transformed function of
    the same arguments: ``value_and_grad(f)`` is ``Outputs((f, grad f))``. A transformation of it
    is the tuple of the transformations of its parts."""

    def __init__(self, parts: Sequence[Callable], name: str, params: Sequence[str]) -> None:
        self.parts = tuple(parts)
        self.__name__ = self.__qualname__ = name
        self._params = list(params)
        self.__signature__ = _signature_of(self._params)
        self._srctrans_state: dict = {}

    def __call__(self, *args, **kwargs):
        return tuple(part(*args, **kwargs) for part in self.parts)

    def map(self, transform: Callable[[Callable, int], Callable]) -> Outputs:
        """The transformation of each part (``transform(part, index)``), as one function again."""
        return Outputs([transform(p, i) for i, p in enumerate(self.parts)], self.__name__, self._params)

    def _srctrans_jit(self, options: dict) -> Outputs:
        from .api import jit

        return self.map(lambda p, _: jit(p, **options))

    def source_path(self):
        """The generated file of the last part (the gradient, for value_and_grad)."""
        from .api import source_path

        return source_path(self.parts[-1])

    def source(self) -> str:
        return self.source_path().read_text()

    def __repr__(self) -> str:
        return f"<srctrans outputs {self.__qualname__}: {len(self.parts)} parts>"


def outputs_of(fn: Any) -> Outputs | None:
    """``value_and_grad(f)`` (without ``has_aux``) as the two outputs ``(f, grad f)``; None for anything else."""
    from .api import Grad, Jitted

    if not isinstance(fn, Grad) or not fn._with_value or fn._grad_args["has_aux"]:
        return None
    options = {k: v for k, v in fn._init_options.items() if not k.startswith("_")} if fn._compile else None
    args = dict(fn._grad_args, with_value=False)
    gradient = Grad(fn._fn, **args, jit_options=options)
    value = Jitted(fn._fn, **options) if options else Jitted(fn._fn, _compile=False)
    from .tangents import visible_params

    return Outputs((value, gradient), _name_of(fn), visible_params(fn._fn))


def _split_axes(spec: Any, n: int, what: str) -> list:
    """``out_axes`` for a tuple of ``n`` outputs: one entry for all, or a tuple of ``n``."""
    if isinstance(spec, (tuple, list)):
        if len(spec) != n:
            raise ValueError(f"{what} has {len(spec)} entries but the function returns a tuple of {n}")
        return list(spec)
    return [spec] * n


def vmap_outputs(fn: Outputs, in_axes, out_axes, axis_size, axis_name, method) -> Outputs:
    from .batching import vmap

    axes = _split_axes(out_axes, len(fn.parts), "vmap out_axes")
    return fn.map(lambda p, i: vmap(p, in_axes, axes[i], axis_size, axis_name, method))


def pmap_outputs(fn: Outputs, axis_name, in_axes, out_axes, devices, backend) -> Outputs:
    from .parallel import pmap

    axes = _split_axes(out_axes, len(fn.parts), "pmap out_axes")
    return fn.map(lambda p, i: pmap(p, axis_name, in_axes, axes[i], devices, backend))


# ---------------------------------------------------------------- derivatives of a vmap


class VMapDerivative:
    """``jacfwd``/``jacrev`` (``chain``, innermost first) of ``vmap(f)``: the looped vmap of the same
    derivatives of ``f`` (one block per example), each block put on the diagonal of the examples'
    axes of the outputs and of every batched argument differentiated. Shapes as JAX's:
    ``out.shape + in_1.shape + ...`` with the batch axes where ``in_axes``/``out_axes`` put them."""

    def __init__(self, vmapped: Any, chain: tuple) -> None:
        from .batching import VMapped
        from .jacobians import jacfwd, jacrev

        self._vmapped = vmapped
        self._chain = chain
        inner = vmapped._fn
        for kind, nums in chain:
            inner = (jacfwd if kind == "jacfwd" else jacrev)(inner, argnums=nums)
        self._blocks = VMapped(
            inner, vmapped.in_axes, 0, vmapped.axis_size, vmapped.axis_name, vmapped.method, vmapped._jit
        )
        self._params = list(vmapped._params)
        self.__signature__ = _signature_of(self._params)
        self.__name__ = self.__qualname__ = _name_of(vmapped)
        self._srctrans_state: dict = {}

    def derivative(self, kind: str, argnums, has_aux: bool) -> VMapDerivative:
        if has_aux:
            raise TypeError(f"{kind} of a derivative of vmap ({self.__qualname__}) takes no has_aux: it returns no aux")
        return VMapDerivative(self._vmapped, (*self._chain, (kind, argnums)))

    def _srctrans_jit(self, options: dict) -> VMapDerivative:
        return VMapDerivative(self._vmapped._srctrans_jit(options), self._chain)

    def source_path(self):
        return self._blocks.source_path()

    def source(self) -> str:
        return self.source_path().read_text()

    def __repr__(self) -> str:
        return f"<srctrans derivative of vmap {self.__qualname__}: {', '.join(k for k, _ in self._chain)}>"

    def __call__(self, *args):
        vm = self._vmapped
        if len(args) != len(self._params):
            raise TypeError(f"{self.__qualname__} takes {len(self._params)} arguments, got {len(args)}")
        blocks = self._blocks(*args)  # each leaf (B,) + out_example + in_1 + in_2 ...
        axes = vm._arg_axes(vm, args)
        per_arg, at = [], 0
        for a in args:  # (batch axis or None, ndim) of each leaf, argument by argument
            leaves = tree_flatten(a)[0]
            per_arg.append([(axes[at + t], np.ndim(x)) for t, x in enumerate(leaves)])
            at += len(leaves)
        levels = []
        for _, nums in self._chain:
            nums = (nums,) if isinstance(nums, int) else tuple(nums)
            levels.append([leaf for k in nums for leaf in per_arg[k % len(args)]])
        flat, treedef = tree_flatten(blocks)
        n_in = int(np.prod([len(level) for level in levels]))
        n_out = len(flat) // max(n_in, 1)
        out_axes = self._out_axes(args, n_out)
        placed = []
        for j, (o, *ins) in enumerate(itertools.product(range(n_out), *(range(len(level)) for level in levels))):
            placed.append(_on_diagonal(np.asarray(flat[j]), out_axes[o], [levels[d][i] for d, i in enumerate(ins)], self.__qualname__))
        return tree_unflatten(treedef, placed)

    def _out_axes(self, args: tuple, n_out: int) -> list:
        from .batching.api import axes_for_leaves

        spec = self._vmapped.out_axes
        if isinstance(spec, (int, np.integer)):
            found = [int(spec)] * n_out
        else:
            found = axes_for_leaves(spec, self._vmapped(*args), "the result", "out_axes")
        if any(a is None for a in found):
            raise TypeError(
                f"the derivative of vmap {self.__qualname__} with out_axes=None is not supported: "
                "an output shared by every example has no per-example Jacobian"
            )
        return found


def _on_diagonal(block: np.ndarray, out_axis: int, ins: list[tuple[int | None, int]], who: str) -> np.ndarray:
    """One leaf of a derivative of vmap: ``block`` is ``(B,) + out + in_1 + ...`` per example; the
    result has the output's batch axis at ``out_axis`` and each batched input's at its own axis,
    with the examples' blocks on their common diagonal (zeros elsewhere)."""
    size = block.shape[0]
    batched = [(axis, nd) for axis, nd in ins if axis is not None]
    count = 1 + len(batched)
    full = np.zeros((size,) * count + block.shape[1:], dtype=block.dtype)
    full[(np.arange(size),) * count] = block
    in_nd = sum(nd - (axis is not None) for axis, nd in ins)
    out_nd = block.ndim - 1 - in_nd + 1  # the output's axes, its batch axis included
    dest = [out_axis % out_nd]
    at = out_nd
    for axis, nd in ins:
        if axis is not None:
            dest.append(at + axis % nd)
        at += nd
    return np.moveaxis(full, list(range(count)), dest)


def derivative(fn: Any, kind: str, argnums, has_aux: bool) -> Callable | None:
    """``jacfwd``/``jacrev`` (``kind``) of an object with no source, by the algebra's identities; None
    for a function (or a transformation with a file) that the Jacobian itself handles."""
    from .batching import VMapped
    from .jacobians import jacfwd, jacrev

    same = getattr(fn, "_srctrans_same_as", None)
    if same is not None:
        return (jacfwd if kind == "jacfwd" else jacrev)(same, argnums=argnums, has_aux=has_aux)
    parts = fn if isinstance(fn, Outputs) else outputs_of(fn)
    if parts is not None:
        if has_aux:
            raise TypeError(f"{kind} of value_and_grad with has_aux=True: value_and_grad returns no aux")
        jac = jacfwd if kind == "jacfwd" else jacrev
        return parts.map(lambda p, _: jac(p, argnums=argnums))
    if isinstance(fn, VMapped):
        if has_aux:
            raise TypeError(f"{kind} of vmap ({_name_of(fn)}) with has_aux=True is not supported yet")
        return VMapDerivative(fn, ((kind, argnums),))
    if isinstance(fn, VMapDerivative):
        return fn.derivative(kind, argnums, has_aux)
    return None


# ---------------------------------------------------------------- jvp, vjp, grad by the Jacobian


def jvp(fn: Any, primals: tuple, tangents: tuple, has_aux: bool) -> tuple | None:
    """``jvp`` of an object with no source: of each output of :class:`Outputs`, else the Jacobian of
    each argument with a nonzero tangent contracted with that tangent. None: not such an object."""
    from .jacobians import jacfwd
    from .tangents import jvp as plain_jvp

    parts = fn if isinstance(fn, Outputs) else outputs_of(fn)
    if parts is None and not opaque(fn):
        return None
    if has_aux:
        raise TypeError(f"jvp with has_aux=True of {_name_of(fn)}, which returns no aux")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp: got {len(primals)} primals but {len(tangents)} tangents; give one tangent per argument")
    if parts is not None:
        pairs = [plain_jvp(p, primals, tangents) for p in parts.parts]
        return tuple(o for o, _ in pairs), tuple(t for _, t in pairs)
    out = fn(*primals)
    out_leaves, out_tree = tree_flatten(out)
    total = [np.zeros(np.shape(o), dtype=leaf_dtype(o) if differentiable(o) else np.float64) for o in out_leaves]
    for k, (p, t) in enumerate(zip(primals, tangents)):
        p_leaves, t_leaves = tree_flatten(p)[0], tree_flatten(t)[0]
        if len(p_leaves) != len(t_leaves):
            raise TypeError(f"jvp: the tangent of argument {k} has another structure than its primal")
        if not any(differentiable(x) and np.any(np.asarray(y) != 0) for x, y in zip(p_leaves, t_leaves)):
            continue  # a zero tangent: no contribution (and no Jacobian to compute)
        blocks = tree_flatten(jacfwd(fn, argnums=k)(*primals))[0]
        n = len(t_leaves)
        for o in range(len(out_leaves)):
            for i, tl in enumerate(t_leaves):
                total[o] = total[o] + np.tensordot(np.asarray(blocks[o * n + i]), np.asarray(tl), axes=np.ndim(tl))
    dots = [np.asarray(d, dtype=leaf_dtype(o) if differentiable(o) else np.float64) for d, o in zip(total, out_leaves)]
    return out, tree_unflatten(out_tree, [d if isinstance(o, np.ndarray) else d[()] for d, o in zip(dots, out_leaves)])


def vjp(fn: Any, primals: tuple, has_aux: bool) -> tuple | None:
    """``(out, vjp_fn)`` of an object with no source; None: not such an object."""
    from .api import vjp as plain_vjp
    from .jacobians import jacrev

    parts = fn if isinstance(fn, Outputs) else outputs_of(fn)
    if parts is None and not opaque(fn):
        return None
    if has_aux:
        raise TypeError(f"vjp with has_aux=True of {_name_of(fn)}, which returns no aux")
    if parts is not None:
        pairs = [plain_vjp(p, *primals) for p in parts.parts]

        def pull_parts(cotangent):
            if not isinstance(cotangent, (tuple, list)) or len(cotangent) != len(pairs):
                raise TypeError(f"the cotangent of {parts.__qualname__} is a tuple of {len(pairs)}, one per output")
            bars = [pull(ct) for (_, pull), ct in zip(pairs, cotangent)]
            return tuple(tree_map(lambda *xs: sum(xs[1:], xs[0]), *per_arg) for per_arg in zip(*bars))

        return tuple(o for o, _ in pairs), pull_parts
    out = fn(*primals)
    out_leaves, out_tree = tree_flatten(out)

    def pull(cotangent):
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"vjp: the cotangent has structure {ct_tree!r}, the output {out_tree!r}")
        bars = []
        for k, p in enumerate(primals):
            p_leaves, p_tree = tree_flatten(p)
            if not all(differentiable(x) for x in p_leaves):
                bars.append(tree_map(zero_tangent, p))
                continue
            blocks = tree_flatten(jacrev(fn, argnums=k)(*primals))[0]
            n = len(p_leaves)
            got = []
            for i, pl in enumerate(p_leaves):
                acc = np.zeros(np.shape(pl), dtype=np.asarray(pl).dtype)
                for o, ct in enumerate(ct_leaves):
                    acc = acc + np.tensordot(np.asarray(ct), np.asarray(blocks[o * n + i]), axes=np.ndim(ct))
                got.append(acc if isinstance(pl, np.ndarray) else acc[()])
            bars.append(tree_unflatten(p_tree, got))
        return tuple(bars)

    return out, pull


def grad(fn: Any, argnums, has_aux: bool, with_value: bool) -> Callable | None:
    """``grad``/``value_and_grad`` of an object with no source: ``jacrev`` of its scalar output. None:
    not such an object."""
    from .jacobians import jacrev

    if not opaque(fn) and not isinstance(fn, Outputs):
        return None
    who = "value_and_grad" if with_value else "grad"
    if has_aux:
        raise TypeError(f"{who} with has_aux=True of {_name_of(fn)}, which returns no aux")
    if with_value:  # two outputs: the function, and its gradient
        return Outputs((fn, grad(fn, argnums, False, False)), _name_of(fn), _params_of(fn))
    jacobian = jacrev(fn, argnums=argnums)

    def gradient(*args):
        out = fn(*args)
        if isinstance(out, (tuple, list, dict)) or np.ndim(out) != 0:
            shape = type(out).__name__ if isinstance(out, (tuple, list, dict)) else f"shape {np.shape(out)}"
            raise TypeError(f"{who} requires a scalar output; {_name_of(fn)} returned {shape}")
        return jacobian(*args)

    gradient.__name__ = gradient.__qualname__ = _name_of(fn)
    gradient.__signature__ = _signature_of(_params_of(fn))
    gradient._srctrans_state = {}
    gradient._srctrans_jit = lambda options: grad(fn._srctrans_jit(options), argnums, has_aux, with_value)
    gradient._srctrans_same_as = jacobian  # the gradient of a scalar function is its Jacobian: so are derivatives of it
    return gradient


# ---------------------------------------------------------------- pmap on the CPU host


class HostMapped:
    """``pmap`` of an object with no source (a vmap, a Jacobian, a derivative of either) on the CPU
    backend: what ``vmap`` of it computes, collectives over ``axis_name`` included, run as that vmap
    in this process over all the examples (the examples must still divide by the devices, as for
    any pmap). The CUDA and Dask backends need one file per device: they refuse."""

    def __init__(self, fn: Any, axis_name, in_axes, out_axes, devices, backend) -> None:
        from .batching import VMapped
        from .parallel.devices import check_backend

        self.backend = check_backend(backend)
        self.__name__ = self.__qualname__ = _name_of(fn)
        if self.backend != "cpu":
            raise TypeError(
                f"pmap(..., backend={self.backend!r}) of {self.__qualname__}, a transformation with no single "
                "generated file to place on each device, is not supported yet; pmap the function it transforms "
                "(a plain function, a jit or a grad), or use the 'cpu' backend"
            )
        self._fn = fn
        self.axis_name, self.in_axes, self.out_axes = axis_name, in_axes, out_axes
        self._devices_arg = devices
        self._vmapped = VMapped(fn, in_axes, out_axes, None, axis_name)
        self._params = list(self._vmapped._params)
        self.__signature__ = _signature_of(self._params)
        self._srctrans_state: dict = {}

    def devices(self):
        from .parallel.api import PMapped

        return PMapped.devices(self)  # type: ignore[arg-type]

    def __call__(self, *args):
        vm = self._vmapped
        axes = vm._arg_axes(vm, args)
        leaves = [x for a in args for x in tree_flatten(a)[0]]
        sizes = {np.shape(x)[a] for x, a in zip(leaves, axes) if a is not None and -np.ndim(x) <= a < np.ndim(x)}
        count = len(self.devices())
        for n in sizes:
            if count and n % count:
                raise ValueError(
                    f"pmap: {n} examples do not split evenly over {count} devices ({n} % {count} = {n % count}); "
                    f"give a multiple of {count} examples or choose other devices"
                )
        return vm(*args)

    def trace(self) -> list[dict]:
        return []

    def _srctrans_jit(self, options: dict) -> HostMapped:
        return HostMapped(self._fn._srctrans_jit(options), self.axis_name, self.in_axes, self.out_axes, self._devices_arg, self.backend)

    def source_path(self):
        return self._vmapped.source_path()

    def source(self) -> str:
        return self.source_path().read_text()

    def __repr__(self) -> str:
        return f"<srctrans.pmap {self.__qualname__} (as vmap on the CPU host)>"


class _OnDevices:
    """What pmap of an object with no one file keeps: its options, the pmaps it runs (the last one's
    trace and file are its own), and the check of the mapped axis every pmap makes."""

    def __init__(self, fn: Any, axis_name, in_axes, out_axes, devices, backend) -> None:
        from .parallel.devices import check_backend

        self.backend = check_backend(backend)
        self.__name__ = self.__qualname__ = _name_of(fn)
        self.axis_name, self.in_axes, self.out_axes = axis_name, in_axes, out_axes
        self._devices_arg = devices
        self._params = _params_of(fn)
        self.__signature__ = _signature_of(self._params)
        self._srctrans_state: dict = {}
        self._pmaps: dict[tuple, Any] = {}
        self._last: Any = None

    def devices(self):
        from .parallel.api import PMapped

        return PMapped.devices(self)  # type: ignore[arg-type]

    def _mapped(self, args: tuple) -> tuple[list, list, int]:
        """The leaves of ``args``, pmap's axis of each (None: not mapped) and the number of examples."""
        if len(args) != len(self._params):
            raise TypeError(f"{self.__qualname__} takes {len(self._params)} arguments, got {len(args)}")
        outer = _axes_per_leaf(self.in_axes, args, self._params, "pmap in_axes")
        leaves = [x for a in args for x in tree_flatten(a)[0]]
        ns = {np.shape(x)[b] for x, b in zip(leaves, outer) if b is not None}
        if len(ns) != 1:
            raise ValueError(f"pmap of {self.__qualname__}: " + (
                "every in_axes is None; map at least one argument over the devices" if not ns
                else f"the mapped arguments have different sizes along the mapped axis ({sorted(ns)})"))
        n = ns.pop()
        count = len(self.devices())
        if count and n % count:
            raise ValueError(
                f"pmap: {n} examples do not split evenly over {count} devices ({n} % {count} = {n % count}); "
                f"give a multiple of {count} examples or choose other devices"
            )
        return leaves, outer, n

    def trace(self) -> list[dict]:
        """What ran where in the last pmap this call made."""
        return self._last.trace() if self._last is not None else []

    def source_path(self):
        """The parallel file of the last pmap this call made."""
        if self._last is None:
            raise ValueError(f"pmap of {self.__qualname__}: call it once so srctrans knows which arguments are mapped")
        return self._last.source_path()

    def source(self) -> str:
        return self.source_path().read_text()


class FlatMapped(_OnDevices):
    """``pmap`` of a ``vmap`` on any backend: the vmap's examples are more examples of the pmap,
    ``pmap(vmap(g, A, O), B, P)(*args)`` = ``pmap(g)`` over the ``n * m`` pairs (pmap example,
    vmap example), regrouped: device ``d`` still runs its ``n / D`` examples with all ``m`` of
    theirs, each one file per device as any pmap of ``g`` (``g`` a vmap again: the same, once
    more). An argument mapped by one of the two alone is repeated along the other. ``g`` runs with
    no axis name: a collective inside it (over the pmap's or the vmap's axis) is refused there."""

    def __init__(self, vm: Any, axis_name, in_axes, out_axes, devices, backend) -> None:
        super().__init__(vm, axis_name, in_axes, out_axes, devices, backend)
        self._vm = vm

    def __call__(self, *args):
        from .batching.api import axes_for_leaves
        from .parallel import pmap

        leaves, outer, n = self._mapped(args)
        inner = _axes_per_leaf(self._vm.in_axes, args, self._params, "vmap in_axes")
        per_example = [np.moveaxis(np.asarray(x), b, 0)[0] if b is not None else x for x, b in zip(leaves, outer)]
        ms = {np.shape(x)[a] for x, a in zip(per_example, inner) if a is not None}
        if len(ms) > 1:
            raise ValueError(f"vmap of {self.__qualname__}: the mapped arguments have different sizes along the mapped axis ({sorted(ms)})")
        m = ms.pop() if ms else self._vm.axis_size
        if m is None:
            raise ValueError(f"vmap of {self.__qualname__}: every in_axes is None; give axis_size")
        flat, axes = [], []
        for x, b, a in zip(leaves, outer, inner):
            if b is None and a is None:
                flat.append(x)
                axes.append(None)
                continue
            x = np.asarray(x)
            if b is not None and a is not None:
                x = np.moveaxis(x, b, 0)
                x = np.moveaxis(x, 1 + a % (x.ndim - 1), 1)
                x = x.reshape((n * m,) + x.shape[2:])
            elif b is not None:
                x = np.repeat(np.moveaxis(x, b, 0), m, axis=0)
            else:
                x = np.moveaxis(x, a, 0)
                x = np.tile(x, (n,) + (1,) * (x.ndim - 1))
            flat.append(x)
            axes.append(0)
        trees = [tree_flatten(a)[1] for a in args]
        flat_args, at = [], 0
        arg_axes = []
        for treedef in trees:
            k = treedef.num_leaves
            flat_args.append(tree_unflatten(treedef, flat[at : at + k]))
            arg_axes.append(tree_unflatten(treedef, axes[at : at + k]))
            at += k
        key = tuple(a is None for a in axes)
        mapped = self._pmaps.get(key)
        if mapped is None:
            mapped = self._pmaps[key] = pmap(self._vm._fn, None, tuple(arg_axes), 0, self._devices_arg, self.backend)
        self._last = mapped
        try:
            out = mapped(*flat_args)
        except UnsupportedSyntaxError as err:
            if "unknown axis name" not in err.message:
                raise
            raise TypeError(
                f"pmap(..., backend={self.backend!r}) of a vmap of {self.__qualname__}, which calls a collective "
                f"({err.filename}:{err.line}), is not supported yet: it runs as a pmap over both axes at once; "
                "use the 'cpu' backend"
            ) from None
        out_leaves, out_tree = tree_flatten(out)
        vm_axes = axes_for_leaves(self._vm.out_axes, out, "the result", "out_axes")
        pm_axes = axes_for_leaves(self.out_axes, out, "the result", "out_axes")
        placed = []
        for y, o, p in zip(out_leaves, vm_axes, pm_axes):
            y = np.asarray(y).reshape((n, m) + np.shape(y)[1:])
            y = y[:, 0] if o is None else np.moveaxis(y, 1, 1 + o % (y.ndim - 1))
            y = y[0] if p is None else np.moveaxis(y, 0, p % y.ndim)
            placed.append(y)
        return tree_unflatten(out_tree, placed)

    def _srctrans_jit(self, options: dict) -> FlatMapped:
        return FlatMapped(self._vm._srctrans_jit(options), self.axis_name, self.in_axes, self.out_axes, self._devices_arg, self.backend)

    def __repr__(self) -> str:
        return f"<srctrans.pmap {self.__qualname__} (of a vmap: pmap over both axes, regrouped)>"


class _Deferred(BaseException):
    """A vmap the Python of one example reached: it runs with the other examples' (a BaseException,
    so that no ``except Exception`` of that Python takes it for a failure)."""


class _Raised:
    """What a vmap run on the devices raised, for the Python that called it."""

    def __init__(self, error: Exception) -> None:
        self.error = error


class DeviceGlue(_OnDevices):
    """``pmap`` of a Jacobian, a Hessian or a derivative of a vmap on the CUDA or Dask backend: its
    Python (basis vectors, arranging blocks) runs once per example on the host, and each vmap of a
    generated file it calls runs for all the examples at once, as one pmap on the devices
    (:class:`FlatMapped`: the examples times the basis vectors). An example's Python stops at its
    next vmap until every example has reached it; then it goes on with that vmap's results."""

    def __init__(self, fn: Any, axis_name, in_axes, out_axes, devices, backend) -> None:
        super().__init__(fn, axis_name, in_axes, out_axes, devices, backend)
        self._fn = fn

    def __call__(self, *args):
        from .batching.api import CALL_HOOK, axes_for_leaves, place_batch_axis

        leaves, outer, n = self._mapped(args)
        trees = [tree_flatten(a)[1] for a in args]
        examples = []
        for i in range(n):
            flat = [np.take(np.asarray(x), i, axis=b) if b is not None else x for x, b in zip(leaves, outer)]
            example, at = [], 0
            for treedef in trees:
                example.append(tree_unflatten(treedef, flat[at : at + treedef.num_leaves]))
                at += treedef.num_leaves
            examples.append(tuple(example))
        # per example: the results of the vmaps its Python called, by vmap and in order (by vmap: the
        # Python may take another path once it has seen a result, a Hessian of a vector-valued function)
        done: list[dict[int, list]] = [{} for _ in range(n)]
        outputs: list = [None] * n
        pending = list(range(n))
        while pending:
            asked: dict[int, tuple] = {}
            for i in pending:
                seen: dict[int, int] = {}

                def hook(vm, vm_args, i=i, seen=seen, asked=asked):
                    k = seen[id(vm)] = seen.get(id(vm), -1) + 1
                    results = done[i].get(id(vm), [])
                    if k < len(results):
                        if isinstance(results[k], _Raised):  # as if this vmap had raised it here
                            raise results[k].error
                        return results[k]
                    asked[i] = (vm, vm_args)
                    raise _Deferred

                token = CALL_HOOK.set(hook)
                try:
                    outputs[i] = self._fn(*examples[i])
                except _Deferred:
                    continue
                finally:
                    CALL_HOOK.reset(token)
            pending = sorted(asked)
            groups: dict[int, tuple] = {}
            for i in pending:
                vm, vm_args = asked[i]
                groups.setdefault(id(vm), (vm, []))[1].append((i, vm_args))
            for vm, items in groups.values():
                try:
                    results = self._run(vm, [a for _, a in items])
                except SrcTransError:  # the devices cannot run the file: said at its line
                    raise
                except Exception as err:  # noqa: BLE001 - raised again where the Python called the vmap
                    results = [_Raised(err)] * len(items)  # (a Hessian learns there that its function is vector-valued)
                for (i, _), result in zip(items, results):
                    done[i].setdefault(id(vm), []).append(result)
        out_leaves_per = [tree_flatten(o)[0] for o in outputs]
        out_tree = tree_flatten(outputs[0])[1]
        axes = axes_for_leaves(self.out_axes, outputs[0], "the result", "out_axes")
        placed = [
            place_batch_axis(np.stack([np.asarray(o[k]) for o in out_leaves_per]), a, k, self.__qualname__, "pmap")
            for k, a in enumerate(axes)
        ]
        return tree_unflatten(out_tree, placed)

    def _run(self, vm: Any, calls: list[tuple]) -> list:
        """``vm`` called with each of ``calls`` (one per example), all at once on the devices."""
        from .parallel import pmap

        per_call = [[x for a in c for x in tree_flatten(a)[0]] for c in calls]
        trees = [tree_flatten(a)[1] for a in calls[0]]
        stacked, axes = [], []
        for k in range(len(per_call[0])):
            values = [p[k] for p in per_call]
            first = values[0]
            if all(v is first or (np.shape(v) == np.shape(first) and np.array_equal(v, first)) for v in values[1:]):
                stacked.append(first)  # the same for every example (basis vectors): sent once
                axes.append(None)
            else:
                stacked.append(np.stack([np.asarray(v) for v in values]))
                axes.append(0)
        if all(a is None for a in axes):
            return [vm(*calls[0])] * len(calls)
        args, arg_axes, at = [], [], 0
        for treedef in trees:
            args.append(tree_unflatten(treedef, stacked[at : at + treedef.num_leaves]))
            arg_axes.append(tree_unflatten(treedef, axes[at : at + treedef.num_leaves]))
            at += treedef.num_leaves
        devices = self._devices_arg
        if len(calls) % max(len(self.devices()), 1):
            devices = 1  # (some examples finished earlier: the rest on one device)
        key = (id(vm), tuple(axes), devices if isinstance(devices, int) or devices is None else tuple(devices))
        mapped = self._pmaps.get(key)
        if mapped is None:
            mapped = self._pmaps[key] = (vm, pmap(vm, None, tuple(arg_axes), 0, devices, self.backend))
        self._last = mapped[1]
        out = mapped[1](*args)
        return [tree_map(lambda y, i=i: np.asarray(y)[i], out) for i in range(len(calls))]

    def _srctrans_jit(self, options: dict) -> DeviceGlue:
        return DeviceGlue(self._fn._srctrans_jit(options), self.axis_name, self.in_axes, self.out_axes, self._devices_arg, self.backend)

    def __repr__(self) -> str:
        return f"<srctrans.pmap {self.__qualname__} (its vmaps on the {self.backend} devices, its Python on the host)>"


def _axes_per_leaf(spec: Any, args: tuple, params: Sequence[str], what: str) -> list:
    """``in_axes`` (an int, None, or a tuple with one pytree prefix per argument) for each leaf."""
    from .batching.api import axes_for_leaves

    if isinstance(spec, list):
        spec = tuple(spec)
    if isinstance(spec, tuple):
        if len(spec) != len(args):
            raise ValueError(f"{what} has {len(spec)} entries but the function is called with {len(args)} arguments")
        out: list = []
        for name, s, a in zip(params, spec, args):
            out += axes_for_leaves(s, a, f"argument {name!r}", what.split()[-1])
        return out
    return axes_for_leaves(spec, tuple(args), "the arguments", what.split()[-1])


# ---------------------------------------------------------------- a grad called with pytrees


def structured_grad(fn: Any, args: Sequence) -> Callable | None:
    """Of a ``grad`` called with pytree arguments: its adjoint file for their structures, in the
    variant that takes them whole and returns the gradient in its argument's structure (dicts
    included), compiled as ``fn`` is -- what ``jacfwd``, ``jacrev``, ``jvp`` and ``vjp`` of the grad
    transform. None for anything else."""
    from .api import Grad, jit
    from .boundary import is_container
    from .nesting import adjoint_function
    from .tangents import visible_params

    if not isinstance(fn, Grad) or fn._with_value or not any(is_container(a) for a in args):
        return None
    visible = visible_params(fn._fn)
    if len(args) != len(visible):
        return None  # the grad's own call says what is wrong
    trees = {name: tree_flatten(a)[1] for name, a in zip(visible, args) if is_container(a)}
    key = ("_structured_for", tuple(sorted(trees.items())))
    found = fn.__dict__.get(key)
    if found is None:
        found = adjoint_function(fn, trees=trees)
        if fn._compile:
            found = jit(found, **{k: v for k, v in fn._init_options.items() if not k.startswith("_")})
        fn.__dict__[key] = found
    return found


faces.register(algebra=sys.modules[__name__])
