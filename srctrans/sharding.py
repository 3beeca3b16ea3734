"""Sharding: meshes of devices, partition specs and sharded arrays, as in ``jax.sharding``.

The seed's snippet works as written::

    mesh = srctrans.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    srctrans.set_mesh(mesh)                      # or: with mesh: ...
    inputs = srctrans.device_put(inputs, P("data"))
    targets = srctrans.device_put(targets, P("data"))
    grads = srctrans.jit(srctrans.grad(loss_fn))(params, (inputs, targets))

``device_put`` returns a :class:`ShardedArray`: an ``ndarray`` holding the whole array
(``np.asarray`` gives it back, NumPy code reads it as it is) that also carries its
:class:`NamedSharding`. When a ``jit`` or ``grad`` function is called with one among its
arguments, :mod:`srctrans.parallel.propagate` walks the function's generated file (for
``grad``, its adjoint file): values computed row by row from the sharded arrays stay
sharded, and a reduction over the sharded axis (``np.sum``, ``np.mean``, ``X.T @ r``, the
gradient of a replicated parameter) becomes a partial reduction on each shard plus an
all-reduce. The file is split at those points into whole-shard stages that the runner of
the mesh's devices runs, one block of rows per device. The result is the ordinary
(unsharded) value. Where the walk cannot prove the split right it gathers the shards and
runs the function unsharded, which is always correct, and says why: :func:`explain` gives
the last decision of a transformed function, and a :class:`ShardingFallbackWarning` is
issued once per generated file.
"""

from __future__ import annotations

import contextvars
import enum
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "AxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "ShardedArray",
    "ShardingFallbackWarning",
    "device_put",
    "explain",
    "get_abstract_mesh",
    "last_call",
    "make_mesh",
    "set_mesh",
]

# True once a sharded array exists: until then a transformed function's call skips the check.
live = False


class AxisType(enum.Enum):
    """How a mesh axis is used (``jax.sharding.AxisType``); srctrans treats all three alike."""

    Auto = "auto"
    Explicit = "explicit"
    Manual = "manual"


class PartitionSpec(tuple):
    """For each array axis, the mesh axis it is split over (``None``: not split), like JAX's.

    >>> PartitionSpec("data")
    PartitionSpec('data',)
    """

    def __new__(cls, *parts: Any) -> PartitionSpec:
        for part in parts:
            names = part if isinstance(part, tuple) else (part,)
            for name in names:
                if name is not None and not isinstance(name, str):
                    raise TypeError(f"PartitionSpec takes mesh axis names (str), None or tuples of names; got {part!r}")
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple.__repr__(self)}"

    def axis_names(self, dim: int) -> tuple[str, ...]:
        """The mesh axes array axis ``dim`` is split over (empty: replicated along it)."""
        part = self[dim] if dim < len(self) else None
        if part is None:
            return ()
        return part if isinstance(part, tuple) else (part,)


P = PartitionSpec

_current_mesh: contextvars.ContextVar[Mesh | None] = contextvars.ContextVar("srctrans_mesh", default=None)


class Mesh:
    """Devices arranged in named axes (``jax.sharding.Mesh``).

    ``devices`` is an array (object dtype) of :class:`srctrans.parallel.devices.Device` whose
    shape is the mesh's; ``shape`` maps each axis name to its size. ``with mesh:`` makes it
    the current mesh, as :func:`set_mesh` does.
    """

    def __init__(self, devices: Any, axis_names: Sequence[str], axis_types: Sequence[AxisType] | None = None) -> None:
        grid = np.empty(np.shape(devices), dtype=object)
        grid[...] = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
        names = tuple(axis_names)
        if len(names) != grid.ndim:
            raise ValueError(f"Mesh: {len(names)} axis names {names} for a device array of {grid.ndim} dimensions {grid.shape}")
        if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"Mesh: axis names must be distinct strings, got {names}")
        if axis_types is None:
            types = (AxisType.Auto,) * len(names)
        else:
            types = tuple(axis_types)
            if len(types) != len(names) or not all(isinstance(t, AxisType) for t in types):
                raise ValueError(f"Mesh: axis_types must give one AxisType per axis name {names}, got {axis_types!r}")
        self.devices = grid
        self.axis_names = names
        self.axis_types = types
        self._tokens: list[contextvars.Token] = []

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_list(self) -> list:
        return list(self.devices.flat)

    @property
    def backend(self) -> str:
        kinds = {d.kind for d in self.devices.flat}
        return kinds.pop() if len(kinds) == 1 else "cpu"

    def __enter__(self) -> Mesh:
        self._tokens.append(_current_mesh.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _current_mesh.reset(self._tokens.pop())

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Mesh)
            and self.axis_names == other.axis_names
            and self.devices.shape == other.devices.shape
            and list(self.devices.flat) == list(other.devices.flat)
        )

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))

    def __repr__(self) -> str:
        shape = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({{{shape}}}, devices={[str(d) for d in self.devices.flat]})"


def make_mesh(
    axis_shapes: Sequence[int],
    axis_names: Sequence[str],
    axis_types: Sequence[AxisType] | None = None,
    devices: Sequence[Any] | None = None,
) -> Mesh:
    """A mesh of ``prod(axis_shapes)`` devices (the first ones of ``devices``, default ``srctrans.devices()``).

    A mesh larger than the devices there are is a ``ValueError`` naming both counts; on the
    CPU, ``SRCTRANS_CPU_DEVICES=8`` gives eight logical devices.
    """
    from .parallel.devices import CPU_DEVICES_ENV
    from .parallel.devices import devices as list_devices

    shape = tuple(axis_shapes)
    if not all(isinstance(s, (int, np.integer)) and s >= 1 for s in shape):
        raise ValueError(f"make_mesh: axis_shapes must be positive ints, got {axis_shapes!r}")
    names = tuple(axis_names)
    if len(names) != len(shape):
        raise ValueError(f"make_mesh: {len(shape)} axis sizes {shape} but {len(names)} axis names {names}")
    available = list_devices() if devices is None else list(devices)
    need = math.prod(shape)
    if need > len(available):
        hint = f" (set {CPU_DEVICES_ENV}={need} for {need} logical CPU devices)" if devices is None else ""
        raise ValueError(
            f"make_mesh: a mesh of shape {shape} needs {need} devices, but there are only {len(available)}{hint}"
        )
    grid = np.empty(need, dtype=object)
    grid[:] = available[:need]
    return Mesh(grid.reshape(shape), names, axis_types)


class _MeshSetting:
    """What :func:`set_mesh` returns: the mesh is set already; ``with`` restores the previous one on exit."""

    def __init__(self, mesh: Mesh | None, token: contextvars.Token) -> None:
        self.mesh = mesh
        self._token = token

    def __enter__(self) -> Mesh | None:
        return self.mesh

    def __exit__(self, *exc: Any) -> None:
        _current_mesh.reset(self._token)


def set_mesh(mesh: Mesh | None) -> _MeshSetting:
    """Make ``mesh`` the current mesh (what ``P(...)`` in :func:`device_put` refers to).

    Call it, or use it in a ``with`` statement, which restores the previous mesh on exit.
    """
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"set_mesh expects a Mesh (or None), got {type(mesh).__name__}")
    return _MeshSetting(mesh, _current_mesh.set(mesh))


def get_abstract_mesh() -> Mesh | None:
    """The current mesh (set by :func:`set_mesh` or ``with mesh:``), or ``None``."""
    return _current_mesh.get()


class NamedSharding:
    """An array's layout: ``spec`` says which array axes are split over which axes of ``mesh``."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None) -> None:
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
        spec = PartitionSpec() if spec is None else spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
        used: list[str] = []
        for dim in range(len(spec)):
            for name in spec.axis_names(dim):
                if name not in mesh.axis_names:
                    raise ValueError(
                        f"PartitionSpec{tuple(spec)!r}: unknown mesh axis name {name!r}; the mesh's axes are {mesh.axis_names}"
                    )
                if name in used:
                    raise ValueError(f"PartitionSpec{tuple(spec)!r}: mesh axis {name!r} is used twice")
                used.append(name)
        self.mesh = mesh
        self.spec = spec

    def shards(self, dim: int) -> int:
        """How many blocks array axis ``dim`` is split into."""
        return math.prod(self.mesh.shape[n] for n in self.spec.axis_names(dim))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and self.spec == other.spec

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


class ShardedArray(np.ndarray):
    """A whole array that also carries its :class:`NamedSharding` (what :func:`device_put` returns).

    ``np.asarray(x)`` is the whole array; NumPy operations on it give plain arrays.
    ``x.shards`` lists ``(device, block)`` for axis 0's blocks. Passed to a ``jit`` or
    ``grad`` function, it makes the call run per shard (see the module docstring).
    """

    sharding: NamedSharding | None

    def __new__(cls, data: np.ndarray, sharding: NamedSharding) -> ShardedArray:
        out = np.asarray(data).view(cls)
        out.sharding = sharding
        return out

    def __array_finalize__(self, obj: Any) -> None:
        self.sharding = None  # views and copies made by NumPy are not sharded

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, ShardedArray) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(x) if isinstance(x, ShardedArray) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        def plain(x: Any) -> Any:
            if isinstance(x, ShardedArray):
                return np.asarray(x)
            if isinstance(x, (tuple, list)):
                return type(x)(plain(v) for v in x)
            return x

        return func(*plain(args), **{k: plain(v) for k, v in kwargs.items()})

    def __getitem__(self, index: Any) -> Any:
        return np.asarray(self)[index]

    def __reduce__(self):
        return (np.asarray, (np.asarray(self),))

    @property
    def shards(self) -> list[tuple[Any, np.ndarray]]:
        sharding = self.sharding
        if sharding is None:
            return []
        whole = np.asarray(self)
        count = sharding.shards(0)
        blocks = np.split(whole, count, axis=0) if count > 1 else [whole]
        devices = sharding.mesh.device_list
        return list(zip(devices, blocks))

    def __repr__(self) -> str:
        return f"ShardedArray({np.array2string(np.asarray(self), separator=', ')}, sharding={self.sharding!r})"


def _resolve(sharding: Any) -> NamedSharding | None:
    if sharding is None or isinstance(sharding, NamedSharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        mesh = get_abstract_mesh()
        if mesh is None:
            raise ValueError(
                f"device_put(x, {sharding!r}) needs a mesh: call srctrans.set_mesh(mesh) first, or use "
                "`with mesh:`, or pass NamedSharding(mesh, spec)"
            )
        return NamedSharding(mesh, sharding)
    if hasattr(sharding, "kind") and hasattr(sharding, "index"):  # one Device: nothing to split
        return None
    raise TypeError(f"device_put: expected a PartitionSpec, a NamedSharding, a Device or None, got {sharding!r}")


def _put_leaf(x: Any, sharding: NamedSharding | None) -> Any:
    global live
    whole = np.asarray(x)
    if sharding is None:
        return np.array(whole)
    spec = sharding.spec
    if len(spec) > whole.ndim:
        raise ValueError(f"device_put: {spec!r} names {len(spec)} axes but the array has {whole.ndim} (shape {whole.shape})")
    for dim in range(len(spec)):
        count = sharding.shards(dim)
        if whole.shape[dim] % count:
            names = " x ".join(spec.axis_names(dim))
            raise ValueError(
                f"device_put: axis {dim} of an array of shape {whole.shape} has length {whole.shape[dim]}, "
                f"which does not divide into {count} shards (mesh axis {names!r} of size {count})"
            )
    live = True
    return ShardedArray(np.array(whole), sharding)


def device_put(x: Any, sharding: Any = None) -> Any:
    """``x`` (an array or a pytree of them) laid out as ``sharding`` says: a ``ShardedArray``.

    ``sharding`` is a :class:`NamedSharding`, a :class:`PartitionSpec` (over the current mesh,
    see :func:`set_mesh`), a device or ``None`` (a plain array). A sharded axis whose length
    does not divide by the number of shards is a ``ValueError``.
    """
    from .tree import tree_flatten

    if getattr(sharding, "kind", None) == "cuda":  # one GPU: its arrays (jit(..., target="cuda") uses them in place)
        from .backend import parallel_module

        put = parallel_module("cuda").put
        leaves, treedef = tree_flatten(x)
        return treedef.unflatten([put(leaf, sharding) for leaf in leaves])
    named = _resolve(sharding)
    leaves, treedef = tree_flatten(x)
    if treedef.num_leaves == 1 and not isinstance(x, (tuple, list, dict)):
        return _put_leaf(x, named)
    return treedef.unflatten([_put_leaf(leaf, named) for leaf in leaves])


def device_get(x: Any) -> Any:
    """``x`` (an array or a pytree of them) on the host, as NumPy arrays: GPU arrays (CuPy's,
    Numba's) copied back, sharded arrays gathered; like ``jax.device_get``."""
    from .tree import tree_flatten

    leaves, treedef = tree_flatten(x)
    return treedef.unflatten([_host(leaf) for leaf in leaves])


def _host(leaf: Any) -> Any:
    if isinstance(leaf, ShardedArray):
        return np.asarray(leaf)
    if hasattr(leaf, "__cuda_array_interface__"):
        if hasattr(leaf, "copy_to_host"):  # Numba's
            return leaf.copy_to_host()
        if hasattr(leaf, "get"):  # CuPy's
            return leaf.get()
    return leaf


class ShardingFallbackWarning(UserWarning):
    """A sharded call ran unsharded (the shards gathered) because the split could not be proved right."""


def is_sharded(value: Any) -> bool:
    return isinstance(value, ShardedArray) and value.sharding is not None


def has_sharded(args: tuple, kwargs: dict) -> bool:
    """Whether any leaf of the call's arguments is a sharded array."""
    from .tree import tree_leaves

    return any(is_sharded(leaf) for leaf in tree_leaves((args, kwargs)))


def last_call(fn: Any) -> Any:
    """The :class:`srctrans.parallel.propagate.Plan` of ``fn``'s last call on sharded arrays (None: no such call).

    ``plan.sharded`` says whether it ran per shard; ``plan.path`` is the sharded file,
    ``plan.stages`` its stages, ``plan.trace`` the runner's record of what ran on which
    device; ``plan.reason`` says why a call gathered the shards instead.
    """
    return getattr(fn, "_sharding_last", None)


def explain(fn: Any) -> str:
    """What the last sharded call of ``fn`` did: the stages it ran, or why it gathered the shards."""
    plan = last_call(fn)
    if plan is None:
        return f"{getattr(fn, '__qualname__', fn)} has not been called with arrays split over a mesh"
    return plan.explain()


def warn_fallback(text: str) -> None:
    warnings.warn(text, ShardingFallbackWarning, stacklevel=5)  # at the caller of the jit/grad function
