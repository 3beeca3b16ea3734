"""Batching rules: how each operation carries a batch axis, one line per operation, read by ``vmap``.

Inside a vectorized function the batch axis of a batched value is always axis 0; an
unbatched value is what it would be for one example. Every rule sees one operation as
written (a :class:`Site`: its operands, each with whether it is batched and its *rank*,
the number of axes of one example) and answers two questions: what the result is
(:meth:`BatchRule.infer`: batched or not, and its rank) and how to write the operation on
batched operands (:meth:`BatchRule.emit`). A case a rule cannot express raises
:class:`Unbatchable`; ``vmap(method="auto")`` then loops over the examples instead.

Constructors:

``elementwise(func=None)``
    Ufunc-like operations of any arity (operators too): batched operands of a smaller
    rank than the result get unit axes after the batch axis, so that NumPy's
    right-aligned broadcasting pairs the same axes as for one example. ``func`` replaces
    the function where a scalar one (``math.sin``, ``abs``) must become NumPy's.
``reduction(keeps_rank=False)``
    ``sum``, ``mean``, ``max`` ...: ``axis`` shifts by one; ``axis=None`` reduces every
    axis of an example (a batched value is flattened to ``(n, -1)`` first).
``creation(rank)``
    Array constructors (``zeros``, ``arange`` ...): never batched; every argument must be
    unbatched. ``rank(site)`` says the rank of the result.
``like()``
    Results shaped like the first operand (``zeros_like``, ``copy``, ``astype``).
``custom(infer, emit)``
    Everything else (matrix products, transposes, indexing ...), two small functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NO_VALUE = object()


class Unbatchable(Exception):
    """A rule cannot carry the batch axis through this use of its operation."""


@dataclass(frozen=True)
class Info:
    """What is known of a value: whether it carries the batch axis, and one example's rank.

    ``rank`` is None when unknown; ``length`` is a tuple's length (``x.shape``), whose
    elements are unbatched integers. ``elements``: what is known of each element of a
    tuple that your function returns (its batched version, called with batched
    arguments); such a tuple can only be unpacked (``out, bars = f(x)``).
    """

    batched: bool
    rank: int | None
    length: int | None = None
    elements: tuple | None = None


@dataclass(frozen=True)
class Operand:
    """One operand of a site: its text in the generated code, what is known of it, its value when constant."""

    text: str
    info: Info
    value: Any = NO_VALUE

    @property
    def batched(self) -> bool:
        return self.info.batched

    @property
    def rank(self) -> int | None:
        return self.info.rank

    @property
    def constant(self) -> bool:
        return self.value is not NO_VALUE


@dataclass
class Site:
    """One operation as written: ``op`` for an operator (``"+"``), else ``func`` (``"np.sum"``).

    ``n`` is the name of the batch size in the generated code and ``np`` numpy's name;
    ``uses_n`` records that a rule wrote ``n``.
    """

    func: str | None
    op: str | None
    args: list[Operand]
    kwargs: dict[str, Operand]
    n: str = "n"
    np: str = "np"
    unary: bool = False
    method: bool = False
    axis_name: Any = None  # the name of the batch axis being added (vmap's axis_name)
    uses_n: bool = field(default=False)

    def write(self, args: list[str] | None = None, kwargs: dict[str, str] | None = None, func: str | None = None) -> str:
        """The operation written again with other operand texts (and, for a call, another function)."""
        args = [a.text for a in self.args] if args is None else args
        kwargs = {k: v.text for k, v in self.kwargs.items()} if kwargs is None else kwargs
        if self.op is not None and func is None:
            if self.unary:
                return f"{self.op}{args[0]}"
            return f"{args[0]} {self.op} {args[1]}"
        parts = list(args) + [f"{k}={v}" for k, v in kwargs.items()]
        if self.method and func is None:  # x.copy(), x.astype(float): the first operand is the receiver
            return f"{parts[0]}.{self.func}({', '.join(parts[1:])})"
        return f"{func or self.func}({', '.join(parts)})"

    def batch_size(self) -> str:
        self.uses_n = True
        return self.n

    def any_batched(self) -> bool:
        return any(a.batched for a in self.args) or any(a.batched for a in self.kwargs.values())


@dataclass(frozen=True)
class BatchRule:
    kind: str
    infer: Callable[[Site], Info]
    emit: Callable[[Site], str]


# --- helpers the constructors share ------------------------------------------------------


def pad(text: str, missing: int) -> str:
    """A batched value with ``missing`` unit axes after the batch axis: ``x[:, None, None]``."""
    if missing <= 0:
        return text
    return f"{text}[:, {', '.join(['None'] * missing)}]"


def _need_ranks(site: Site, operands: list[Operand]) -> list[int]:
    if any(a.rank is None for a in operands):
        raise Unbatchable("the number of axes of an operand is not known")
    return [a.rank for a in operands]  # type: ignore[misc]


def _unbatched_keywords(site: Site) -> None:
    for k, v in site.kwargs.items():
        if v.batched:
            raise Unbatchable(f"a batched {k}= argument")


def _axis_value(site: Site, name: str, position: int | None) -> Any:
    """The constant ``axis`` of a call (keyword or positional), None when absent."""
    a = site.kwargs.get(name)
    if a is None and position is not None and len(site.args) > position:
        a = site.args[position]
    if a is None:
        return None
    if a.batched or not a.constant:
        raise Unbatchable(f"{name} is not a constant")
    return a.value


def _shift(axis: Any, rank: int) -> Any:
    """An example's axis (or tuple of axes) as an axis of the batched value."""
    if isinstance(axis, tuple):
        return tuple(_shift(a, rank) for a in axis)
    if not isinstance(axis, int) or not -rank <= axis < max(rank, 1):
        raise Unbatchable(f"axis {axis!r} for a value of {rank} axes")
    return axis % max(rank, 1) + 1


def _diff_infer(site: Site) -> Info:
    x = site.args[0]
    _unbatched_keywords(site)
    if any(a.batched for a in site.args[1:]):
        raise Unbatchable("a batched n or axis")
    return Info(x.batched, x.rank)


def _diff_emit(site: Site) -> str:
    """``np.diff(x, n, axis)`` of a batched ``x``: the example's axis, one further in (the last
    axis stays ``-1``, which is all Numba's ``np.diff`` takes)."""
    x = site.args[0]
    if not x.batched:
        return site.write()
    (rank,) = _need_ranks(site, [x])
    axis = _axis_value(site, "axis", 2)
    axis = -1 if axis is None else axis
    n = site.kwargs.get("n") or (site.args[1] if len(site.args) > 1 else None)
    args = [x.text, n.text if n is not None else "1"]
    if axis in (-1, rank - 1):
        return site.write(args, {})
    return site.write(args, {"axis": str(_shift(axis, rank))})


def along(axes: tuple[tuple[str, int, Any], ...], rank_change: Callable[[Site], int] | None = None) -> BatchRule:
    """A NumPy function acting along the example's axes ``axes`` (``(name, position, default)``; a
    default of None: the axes flattened, which stays a loop): the same call on the batch, each
    axis one further in (those counted from the end stay as they are). Only the first argument may be batched; ``rank_change`` is what the
    function does to the number of axes (none when not given)."""

    def infer(site: Site) -> Info:
        _unbatched_keywords(site)
        if any(a.batched for a in site.args[1:]):
            raise Unbatchable("a batched argument other than the array")
        for name, position, default in axes:
            given = name in site.kwargs or len(site.args) > position
            if _axis_value(site, name, position) is None and (default is None or given):
                raise Unbatchable(f"{name}=None (the axes flattened)")
        x = site.args[0]
        change = 0 if rank_change is None else rank_change(site)
        return Info(x.batched, None if x.rank is None or change is None else x.rank + change)

    def emit(site: Site) -> str:
        x = site.args[0]
        if not x.batched:
            return site.write()
        (rank,) = _need_ranks(site, [x])
        args = [a.text for a in site.args]
        kwargs = {k: v.text for k, v in site.kwargs.items()}
        for name, position, default in axes:
            value = _axis_value(site, name, position)
            if value is None and default < 0 or isinstance(value, int) and value < 0:
                continue  # (counted from the end: the same axis of the batch)
            shifted = repr(_shift(default if value is None else value, rank))
            if name not in site.kwargs and len(site.args) > position:
                args[position] = shifted
            else:
                kwargs[name] = shifted
        return site.write(args, kwargs)

    return BatchRule("along", infer, emit)


def _flipped(rule_axis: int) -> BatchRule:
    """``np.flipud`` (axis 0) and ``np.fliplr`` (axis 1) as a reversed slice one axis further in."""

    def emit(site: Site) -> str:
        x = site.args[0]
        return site.write() if not x.batched else f"{x.text}[{':, ' * (rule_axis + 1)}::-1]"

    return custom(lambda site: Info(site.args[0].batched, site.args[0].rank), emit)


def _cross_infer(site: Site) -> Info:
    """``np.cross(a, b)`` along the last axes, elementwise in the others (axisa=, axis= ...: refused)."""
    if site.kwargs or len(site.args) > 2:
        raise Unbatchable("np.cross along other axes than the last")
    return elementwise().infer(site)


def _take_rank(site: Site) -> int | None:
    indices = site.args[1] if len(site.args) > 1 else site.kwargs.get("indices")
    return None if indices is None or indices.rank is None else indices.rank - 1


# --- elementwise ---------------------------------------------------------------------------


def elementwise(func: str | None = None) -> BatchRule:
    def infer(site: Site) -> Info:
        _unbatched_keywords(site)
        ranks = [a.rank for a in site.args]
        rank = None if any(r is None for r in ranks) else max(ranks, default=0)
        return Info(site.any_batched(), rank)

    def emit(site: Site) -> str:
        if not site.any_batched():
            return site.write()
        ranks = _need_ranks(site, site.args)
        top = max(ranks)
        texts = [pad(a.text, top - r) if a.batched else a.text for a, r in zip(site.args, ranks)]
        if func is not None:
            return site.write(texts, func=func.format(np=site.np))
        return site.write(texts)

    return BatchRule("elementwise", infer, emit)


# --- reductions ----------------------------------------------------------------------------


def reduction(keeps_rank: bool = False) -> BatchRule:
    """``np.OP(x, axis=None, ..., keepdims=False)``; ``keeps_rank`` for cumulative ones (``cumsum``)."""

    def infer(site: Site) -> Info:
        x = site.args[0]
        _unbatched_keywords(site)
        if any(a.batched for a in site.args[1:]):
            raise Unbatchable("a batched axis argument")
        axis = _axis_value(site, "axis", 1)
        keep = _axis_value(site, "keepdims", None)
        if x.rank is None:
            return Info(x.batched, None)
        if keeps_rank:
            return Info(x.batched, x.rank if axis is not None else 1)
        if axis is None:
            return Info(x.batched, x.rank if keep else 0)
        count = len(axis) if isinstance(axis, tuple) else 1
        return Info(x.batched, x.rank if keep else x.rank - count)

    def emit(site: Site) -> str:
        x = site.args[0]
        if not x.batched:
            return site.write()
        (rank,) = _need_ranks(site, [x])
        axis = _axis_value(site, "axis", 1)
        kwargs = {k: v.text for k, v in site.kwargs.items() if k != "axis"}
        if axis is None:
            if kwargs.get("keepdims", "False") != "False":
                raise Unbatchable("keepdims=True without an axis")
            data = x.text if rank == 1 else f"rt.batch_flatten({x.text})"
            return site.write([data], {**kwargs, "axis": "1"})
        return site.write([x.text], {**kwargs, "axis": repr(_shift(axis, rank))})

    return BatchRule("reduction", infer, emit)


# --- creation and shape-like -----------------------------------------------------------


def creation(rank: Callable[[Site], int | None]) -> BatchRule:
    def infer(site: Site) -> Info:
        if site.any_batched():
            raise Unbatchable("an array made from batched values")
        return Info(False, rank(site))

    return BatchRule("creation", infer, lambda site: site.write())


def like(shape_at: int | None = None) -> BatchRule:
    """A function of an array with its shape (``np.zeros_like``); ``shape_at``: the position of
    a ``shape=`` argument, which would give another shape (refused: it stays a loop)."""

    def infer(site: Site) -> Info:
        if any(a.batched for a in site.args[1:]) or any(v.batched for v in site.kwargs.values()):
            raise Unbatchable("a batched argument other than the array")
        shape = site.kwargs.get("shape") or (site.args[shape_at] if shape_at is not None and len(site.args) > shape_at else None)
        if shape is not None and shape.value is not None:
            raise Unbatchable("shape= (another shape than the array's)")
        return Info(site.args[0].batched, site.args[0].rank)

    return BatchRule("like", infer, lambda site: site.write())


def custom(infer: Callable[[Site], Info], emit: Callable[[Site], str]) -> BatchRule:
    return BatchRule("custom", infer, emit)


def _shape_rank(site: Site) -> int | None:
    """Rank of ``np.zeros(shape)``: 1 for an int, the length of a tuple."""
    shape = site.args[0] if site.args else site.kwargs.get("shape")
    if shape is None:
        return None
    if shape.info.length is not None:
        return shape.info.length
    if isinstance(shape.value, tuple):
        return len(shape.value)
    return 1 if shape.rank == 0 else None


def _array_rank(site: Site) -> int | None:
    """Rank of ``np.array(x)``: the nesting of a literal list, else the operand's rank."""
    a = site.args[0]
    if a.constant:
        value, rank = a.value, 0
        while isinstance(value, (list, tuple)):
            rank += 1
            value = value[0] if value else None
        return rank
    return a.rank


# --- linear algebra ------------------------------------------------------------------


def _matmul_infer(site: Site) -> Info:
    a, b = site.args
    ra, rb = _need_ranks(site, [a, b])
    if ra == 0 or rb == 0:
        return Info(a.batched or b.batched, max(ra, rb))
    return Info(a.batched or b.batched, ra + rb - 2)


def _matmul_emit(site: Site) -> str:
    """``a @ b`` (and ``np.dot`` of ranks up to 2) with the batch axis first."""
    a, b = site.args
    if not (a.batched or b.batched):
        return site.write()
    ra, rb = _need_ranks(site, [a, b])
    np_ = site.np
    if ra == 0 or rb == 0:  # np.dot of a scalar is a product
        top = max(ra, rb)
        return f"{pad(a.text, top - ra) if a.batched else a.text} * {pad(b.text, top - rb) if b.batched else b.text}"
    if ra > 2 or rb > 2:
        raise Unbatchable("a matrix product of arrays of more than two axes")
    if a.batched and b.batched:
        if ra == 1 and rb == 1:
            return f"{np_}.sum({a.text} * {b.text}, axis=1)"
        if ra == 2 and rb == 1:
            return f"{np_}.sum({a.text} * {b.text}[:, None, :], axis=2)"
        if ra == 1 and rb == 2:
            return f"{np_}.sum({a.text}[:, :, None] * {b.text}, axis=1)"
        return f"{a.text} @ {b.text}"
    if b.batched:  # W @ x for a batch of x: one matrix-matrix product
        if ra == 2 and rb == 1:
            return f"{b.text} @ {np_}.transpose({a.text})"
        if ra == 1 and rb == 1:
            return f"{b.text} @ {a.text}"
        return f"{a.text} @ {b.text}"  # (k) @ (n, k, m) and (p, k) @ (n, k, m) broadcast over the batch
    return f"{a.text} @ {b.text}"  # a batched: (n, k) @ (k[, m]) and (n, p, k) @ (k[, m])


def stacked(rank_change: int = 0) -> BatchRule:
    """NumPy's linear algebra on stacks of matrices (``np.linalg.inv(a)``, ``a`` of shape ``(..., n, n)``):
    the batch axis, in front, is one more axis of the stack. The other arguments stay unbatched;
    ``rank_change`` is what the function does to the number of axes (``det``: -2)."""

    def infer(site: Site) -> Info:
        _unbatched_keywords(site)
        a = site.args[0]
        if any(x.batched for x in site.args[1:]):
            raise Unbatchable("a batched argument other than the matrices")
        if a.rank is not None and a.rank < 2:
            raise Unbatchable("not a matrix")
        return Info(a.batched, None if a.rank is None else a.rank + rank_change)

    return BatchRule("stacked", infer, lambda site: site.write())


def _solve_infer(site: Site) -> Info:
    _unbatched_keywords(site)
    a, b = site.args
    ra, rb = _need_ranks(site, [a, b])
    if ra != 2 or rb not in (1, 2):
        raise Unbatchable("np.linalg.solve of a stack of matrices")  # (one matrix per example only)
    if b.batched and not a.batched and rb == 2:
        raise Unbatchable("one matrix a and a batch of matrices b")
    return Info(a.batched or b.batched, rb)


def _solve_emit(site: Site) -> str:
    """``np.linalg.solve(a, b)`` for one matrix ``a`` per example: a batch of matrices with ``b``
    one vector or matrix for all, or a batch of them; one ``a`` for a batch of vectors ``b``
    solves for them all as the columns of one matrix."""
    a, b = site.args
    if not b.batched:
        return site.write()
    if b.rank == 1 and a.batched:  # (n, k, k) and (n, k): the vectors as matrices of one column
        return f"{site.np}.linalg.solve({a.text}, {b.text}[:, :, None])[:, :, 0]"
    if b.rank == 1:
        return f"{site.np}.linalg.solve({a.text}, {site.np}.transpose({b.text})).T"
    return site.write()


def _outer_emit(site: Site) -> str:
    a, b = site.args
    if not (a.batched or b.batched):
        return site.write()
    ra, rb = _need_ranks(site, [a, b])
    if ra != 1 or rb != 1:
        raise Unbatchable("np.outer of arrays that are not vectors")
    left = f"{a.text}[:, :, None]" if a.batched else f"{a.text}[:, None]"
    right = f"{b.text}[:, None, :]" if b.batched else b.text
    return f"{left} * {right}"


def _vdot_emit(site: Site) -> str:
    a, b = site.args
    if not (a.batched or b.batched):
        return site.write()
    ra, rb = _need_ranks(site, [a, b])
    if ra != 1 or rb != 1:
        raise Unbatchable("np.vdot of arrays that are not vectors")
    return _matmul_emit(site)


def _trace_emit(site: Site) -> str:
    x = site.args[0]
    if not x.batched:
        return site.write()
    if x.rank != 2 or len(site.args) > 1 or site.kwargs:
        raise Unbatchable("np.trace of a batch of arrays that are not matrices")
    return f"{site.np}.trace({x.text}, axis1=1, axis2=2)"


def _transpose_emit(site: Site) -> str:
    x = site.args[0]
    if not x.batched:
        return site.write()
    (rank,) = _need_ranks(site, [x])
    if len(site.args) > 1 or site.kwargs:
        raise Unbatchable("a transpose with explicit axes")
    axes = (0, *range(rank, 0, -1))
    return f"{site.np}.transpose({x.text}, {axes!r})"


def _reshape_emit(site: Site) -> str:
    """``np.reshape(x, shape)`` and ``x.reshape(*shape)``: the batch size goes first."""
    x = site.args[0]
    if not x.batched:
        return site.write()
    if site.kwargs:
        raise Unbatchable("reshape with keywords")
    shape = site.args[1:]
    if len(shape) == 1 and shape[0].info.length is None and shape[0].rank != 0 and not isinstance(shape[0].value, tuple):
        raise Unbatchable("a reshape to a shape that is not written out")
    if len(shape) == 1 and isinstance(shape[0].value, tuple):
        dims = [repr(d) for d in shape[0].value]
    elif len(shape) == 1 and shape[0].info.length is not None:
        return f"{site.np}.reshape({x.text}, ({site.batch_size()},) + {shape[0].text})"
    else:
        dims = [s.text for s in shape]
    if "-1" in dims:
        raise Unbatchable("reshape with -1 (the batch may be empty)")
    return f"{site.np}.reshape({x.text}, ({site.batch_size()}, {', '.join(dims)}))"


def _reshape_infer(site: Site) -> Info:
    if any(a.batched for a in site.args[1:]):
        raise Unbatchable("a batched shape")
    shape = site.args[1:]
    if len(shape) == 1:
        s = shape[0]
        rank = s.info.length if s.info.length is not None else len(s.value) if isinstance(s.value, tuple) else 1 if s.rank == 0 else None
    else:
        rank = len(shape)
    return Info(site.args[0].batched, rank)


def _ravel_emit(site: Site) -> str:
    x = site.args[0]
    if not x.batched:
        return site.write()
    return f"rt.batch_flatten({x.text})"


def _expand_dims_emit(site: Site) -> str:
    x = site.args[0]
    if not x.batched:
        return site.write()
    (rank,) = _need_ranks(site, [x])
    axis = _axis_value(site, "axis", 1)
    if not isinstance(axis, int) or not -(rank + 1) <= axis <= rank:
        raise Unbatchable("expand_dims with an axis that is not one constant")
    return f"{site.np}.expand_dims({x.text}, {axis % (rank + 1) + 1})"


def _squeeze_infer(site: Site) -> Info:
    x = site.args[0]
    axis = _axis_value(site, "axis", 1)
    if axis is None or x.rank is None:
        return Info(x.batched, None)
    return Info(x.batched, x.rank - (len(axis) if isinstance(axis, tuple) else 1))


def _squeeze_emit(site: Site) -> str:
    x = site.args[0]
    if not x.batched:
        return site.write()
    (rank,) = _need_ranks(site, [x])
    axis = _axis_value(site, "axis", 1)
    if axis is None:
        raise Unbatchable("squeeze without an axis (a batch of one would lose its batch axis)")
    return f"{site.np}.squeeze({x.text}, axis={_shift(axis, rank)!r})"


def _shape_attr_infer(site: Site) -> Info:
    x = site.args[0]
    return Info(False, None, x.rank)


def _shape_attr_emit(site: Site) -> str:
    x = site.args[0]
    return f"{x.text}.shape[1:]" if x.batched else f"{x.text}.shape"


def _ndim_emit(site: Site) -> str:
    x = site.args[0]
    return f"({x.text}.ndim - 1)" if x.batched else f"{x.text}.ndim"


def _len_emit(site: Site) -> str:
    x = site.args[0]
    if not x.batched:
        return site.write()
    if x.rank == 0:
        raise Unbatchable("len() of a scalar")
    return f"{x.text}.shape[1]"


def _unbatched_result(rank: int | None) -> Callable[[Site], Info]:
    return lambda site: Info(False, rank)


def _where_infer(site: Site) -> Info:
    if len(site.args) != 3:
        raise Unbatchable("np.where with one argument (its result's size depends on the data)")
    return elementwise().infer(site)


# --- indexing --------------------------------------------------------------------------


def is_slice(part: Operand) -> bool:
    return isinstance(part.value, slice)


def index_infer(site: Site) -> Info:
    """``x[index]``: args[0] is ``x``, the rest are the index's parts (a slice has the value ``slice(None)``)."""
    x, parts = site.args[0], site.args[1:]
    if x.info.length is not None:  # an element of a tuple (x.shape[0])
        if any(p.batched for p in parts):
            raise Unbatchable("a batched index into a tuple")
        return Info(False, 0 if all(p.rank == 0 for p in parts) else None, None if parts and parts[0].rank == 0 else None)
    if x.rank is None or any(p.rank is None and not is_slice(p) for p in parts):
        if x.batched or any(p.batched for p in parts):
            raise Unbatchable("an index whose number of axes is not known")
        return Info(False, None)
    if any(p.text == "..." or p.text == "None" for p in parts):
        raise Unbatchable("indexing with ... or None")
    arrays = [p for p in parts if not is_slice(p) and p.rank and p.rank > 0]
    if len(arrays) > 1 or (arrays and arrays[0].rank > 1):
        if x.batched or any(p.batched for p in parts):
            raise Unbatchable("indexing with several index arrays")
        return Info(False, None)
    removed = sum(1 for p in parts if p.rank == 0 and not is_slice(p))
    added = sum(p.rank for p in arrays)  # one index array of rank 1
    rank = x.rank - removed - len(arrays) + added
    if rank < 0:
        raise Unbatchable("too many indices")
    return Info(x.batched or any(p.batched for p in parts), rank)


def index_emit(site: Site) -> str:
    x, parts = site.args[0], site.args[1:]
    texts = [p.text for p in parts]
    batched_parts = [p for p in parts if p.batched]
    if not x.batched and not batched_parts:
        return f"{x.text}[{', '.join(texts)}]"
    if not batched_parts:  # a batched array, the same index for every example
        return f"{x.text}[:, {', '.join(texts)}]"
    if any(p.rank != 0 or is_slice(p) for p in batched_parts):
        raise Unbatchable("a batched index array (one per example)")
    scalars = [p for p in parts if p.rank == 0 and not is_slice(p)]
    lead = len(scalars)
    if parts[:lead] != scalars:
        raise Unbatchable("a batched index after a slice")
    if x.batched:  # a gather: example i reads x[i, index_i]
        return f"{x.text}[{site.np}.arange({site.batch_size()}), {', '.join(texts)}]"
    return f"{x.text}[{', '.join(texts)}]"  # integer index arrays in front give the batch axis first


# --- reverse-mode helpers (vmap(grad(f)) batches a generated adjoint file) ------------------


def _product(site: Site, a: Operand, b: Operand) -> Site:
    return Site(None, "*", [a, b], {}, n=site.n, np=site.np)


def _grad_seed_infer(site: Site) -> Info:
    if site.args[0].rank != 0:
        raise Unbatchable("grad of a function whose value is not a scalar")
    return Info(False, 0)


def _unbroadcast_infer(site: Site) -> Info:
    g, x = site.args
    if x.rank is None or g.rank is None:
        raise Unbatchable("rt.unbroadcast of a value whose number of axes is not known")
    return Info(g.batched, x.rank)


def _unbroadcast_emit(site: Site) -> str:
    g, x = site.args
    if x.rank != 0:  # to an array: the sizes of one example decide which axes it sums
        if not g.batched:  # the same for every example, shaped like one example of x
            return site.write() if not x.batched else f"rt.unbroadcast({g.text}, rt.batch_example({x.text}))"
        return f"rt.{'batch_unbroadcast' if x.batched else 'batch_unbroadcast_to'}({g.text}, {x.text})"
    if not g.batched:  # the same for every example; x only says "a scalar"
        return site.write([g.text, "0.0"])
    if g.rank == 0:  # one number per example: g itself (adjoint files never write into their adjoints in place)
        return g.text
    return f"{site.np}.sum({pad(g.text, 0) if g.rank == 1 else f'rt.batch_flatten({g.text})'}, axis=1)"


def _sum_grad_infer(site: Site) -> Info:
    g, x = site.args[:2]
    axis = site.args[2] if len(site.args) > 2 else site.kwargs.get("axis")
    if (g.batched or x.batched) and axis is not None and not (axis.constant and axis.value is None):
        raise Unbatchable("the adjoint of a sum along an axis")
    return Info(g.batched or x.batched, x.rank)


def _sum_grad_emit(site: Site) -> str:
    """``rt.sum_grad(g, x)`` of a full sum: ``g`` spread over ``x``'s shape (one ``g`` per example)."""
    g, x = site.args[:2]
    if not g.batched:
        return site.write()  # x-shaped, filled with g: the same whether x is batched or not
    if x.rank is None:
        raise Unbatchable("the adjoint of a sum of a value whose number of axes is not known")
    return f"{site.np}.ones_like({x.text}) * {pad(g.text, x.rank)}"


def _dot_grad(other: int) -> BatchRule:
    """``rt.dot_grad_x(g, x, y)`` (``other=2``) / ``dot_grad_y`` (``other=1``) of ``np.dot(x, y)``.

    Per example, with ``g`` the adjoint of the product:

    - two vectors: ``g * y`` / ``g * x``, elementwise;
    - a matrix times a vector (``A @ v``): ``dot_grad_x`` is the outer product ``g[:, None] * v``,
      ``dot_grad_y`` is ``A.T @ g``, which over a batch of ``g`` is one matrix product ``g @ A``;
    - a vector times a matrix (``v @ A``, a layer applied to one example): ``dot_grad_x`` is
      ``A @ g`` (over a batch of ``g``, ``g @ A.T``), ``dot_grad_y`` the outer product ``v[:, None] * g``;
    - two matrices: ``g @ B.T`` / ``A.T @ g``, batched matrix products (the last two axes swapped).
    """

    def infer(site: Site) -> Info:
        g, x, y = site.args
        ranks = (g.rank, x.rank, y.rank)
        batched = g.batched or site.args[other].batched
        if ranks == (0, 1, 1):
            return Info(batched, 1)
        if ranks == (1, 2, 1):
            return Info(batched, 2 if other == 2 else 1)
        if ranks == (1, 1, 2):
            return Info(batched, 1 if other == 2 else 2)
        if ranks == (2, 2, 2):
            return Info(batched, 2)
        raise Unbatchable("the adjoint of a matrix product of more than two axes")

    def emit(site: Site) -> str:
        g, x, y = site.args
        if x.rank == 1 and y.rank == 1:  # the operand not multiplied only gives the shape, which is the product's
            product = _product(site, g, site.args[other])
            return elementwise().emit(product) if product.any_batched() else product.write()
        if x.rank == 2 and y.rank == 2:
            np_ = site.np
            if other == 2:  # g @ y.T
                t = f"{np_}.swapaxes({y.text}, -1, -2)" if y.batched else f"{y.text}.T"
                return f"{g.text} @ {t}"
            t = f"{np_}.swapaxes({x.text}, -1, -2)" if x.batched else f"{x.text}.T"
            return f"{t} @ {g.text}"
        if x.rank == 1:  # v @ A
            if other == 2:  # A @ g per example
                if not y.batched:
                    return f"{g.text} @ {y.text}.T" if g.batched else f"{y.text} @ {g.text}"
                column = f"{g.text}[:, None, :]" if g.batched else f"{g.text}"
                return f"{site.np}.sum({y.text} * {column}, axis=2)"
            # the outer product of v and g, per example
            v = f"{x.text}[:, :, None]" if x.batched else f"{x.text}[:, None]"
            return f"{v} * {g.text}[:, None, :]" if g.batched else f"{v} * {g.text}"
        column = f"{g.text}[:, :, None]" if g.batched else f"{g.text}[:, None]"
        if other == 2:  # the outer product of g and y, per example
            return f"{column} * {y.text}[:, None, :]" if y.batched else f"{column} * {y.text}"
        if not x.batched:  # A.T @ g for every example at once
            return f"{g.text} @ {x.text}"
        return f"{site.np}.sum({column} * {x.text}, axis=1)"

    return BatchRule("custom", infer, emit)


def _tape_infer(site: Site) -> Info:
    v, n = site.args
    if n.batched:
        raise Unbatchable("a tape whose length differs between examples")
    return Info(v.batched, None if v.rank is None else v.rank + 1)


def _tape_emit(site: Site) -> str:
    v, n = site.args
    return f"rt.batch_tape({v.text}, {n.text})" if v.batched else site.write()


# --- collectives over a named axis (srctrans.psum, pmean, pmax, pmin, all_gather, axis_index) ---


def _mine(site: Site, position: int = 1) -> bool:
    """Whether a collective's axis name (argument ``position``) is this vmap's."""
    name = site.args[position] if len(site.args) > position else site.kwargs.get("axis_name")
    if name is None or not name.constant or name.batched:
        raise Unbatchable("a collective whose axis name is not a constant")
    return site.axis_name is not None and name.value == site.axis_name


def _collective(reduce: str, unbatched: str) -> BatchRule:
    """``psum(x, name)``: over this batch when ``name`` is its axis name, else passed through (an outer vmap's)."""

    def infer(site: Site) -> Info:
        x = site.args[0]
        return Info(False, x.rank) if _mine(site) else Info(x.batched, x.rank)

    def emit(site: Site) -> str:
        x = site.args[0]
        if not _mine(site):
            return site.write()
        if x.batched:
            return f"{site.np}.{reduce}({x.text}, axis=0)"
        return unbatched.format(x=x.text, n=site.batch_size(), np=site.np)

    return BatchRule("collective", infer, emit)


def _all_gather() -> BatchRule:
    """``all_gather(x, name)``: every example's ``x``, stacked on axis 0 (the batch itself)."""

    def infer(site: Site) -> Info:
        x = site.args[0]
        if not _mine(site):
            return Info(x.batched, x.rank)
        return Info(False, None if x.rank is None else x.rank + 1)

    def emit(site: Site) -> str:
        x = site.args[0]
        if not _mine(site):
            return site.write()
        if x.batched:
            return x.text
        return f"rt.batch_of({x.text}, {site.batch_size()})"

    return BatchRule("collective", infer, emit)


def _axis_index() -> BatchRule:
    """``axis_index(name)``: each example's index in the batch, ``0 .. n - 1``."""

    def infer(site: Site) -> Info:
        return Info(True, 0) if _mine(site, 0) else Info(False, 0)

    def emit(site: Site) -> str:
        return f"{site.np}.arange({site.batch_size()})" if _mine(site, 0) else site.write()

    return BatchRule("collective", infer, emit)


# --- the table ---------------------------------------------------------------------------

_scalar = creation(lambda site: 0)
_vector = creation(lambda site: 1)

BATCHING: dict[str, BatchRule] = {
    # --- binary arithmetic and comparisons ----------------------------------------
    "numpy.add": elementwise(),
    "numpy.subtract": elementwise(),
    "numpy.multiply": elementwise(),
    "numpy.divide": elementwise(),
    "numpy.true_divide": elementwise(),
    "numpy.power": elementwise(),
    "numpy.float_power": elementwise(),
    "numpy.floor_divide": elementwise(),
    "numpy.remainder": elementwise(),
    "numpy.maximum": elementwise(),
    "numpy.minimum": elementwise(),
    "numpy.fmax": elementwise(),
    "numpy.fmin": elementwise(),
    "numpy.hypot": elementwise(),
    "numpy.arctan2": elementwise(),
    "numpy.logaddexp": elementwise(),
    "numpy.logaddexp2": elementwise(),
    "numpy.greater": elementwise(),
    "numpy.greater_equal": elementwise(),
    "numpy.less": elementwise(),
    "numpy.less_equal": elementwise(),
    "numpy.equal": elementwise(),
    "numpy.not_equal": elementwise(),
    "numpy.logical_and": elementwise(),
    "numpy.logical_or": elementwise(),
    "numpy.logical_not": elementwise("{np}.logical_not"),
    "numpy.where": custom(_where_infer, elementwise().emit),
    "numpy.clip": elementwise(),
    # --- unary elementwise ---------------------------------------------------------
    "numpy.negative": elementwise(),
    "numpy.positive": elementwise(),
    "numpy.square": elementwise(),
    "numpy.sqrt": elementwise(),
    "numpy.cbrt": elementwise(),
    "numpy.reciprocal": elementwise(),
    "numpy.exp": elementwise(),
    "numpy.exp2": elementwise(),
    "numpy.expm1": elementwise(),
    "numpy.log": elementwise(),
    "numpy.log2": elementwise(),
    "numpy.log10": elementwise(),
    "numpy.log1p": elementwise(),
    "numpy.sin": elementwise(),
    "numpy.cos": elementwise(),
    "numpy.tan": elementwise(),
    "numpy.arcsin": elementwise(),
    "numpy.arccos": elementwise(),
    "numpy.arctan": elementwise(),
    "numpy.sinh": elementwise(),
    "numpy.cosh": elementwise(),
    "numpy.tanh": elementwise(),
    "numpy.arcsinh": elementwise(),
    "numpy.arccosh": elementwise(),
    "numpy.arctanh": elementwise(),
    "numpy.abs": elementwise(),
    "numpy.absolute": elementwise(),
    "numpy.fabs": elementwise(),
    "numpy.sign": elementwise(),
    "numpy.floor": elementwise(),
    "numpy.ceil": elementwise(),
    "numpy.trunc": elementwise(),
    "numpy.rint": elementwise(),
    "numpy.fix": elementwise(),
    "numpy.sinc": elementwise(),
    "numpy.deg2rad": elementwise(),
    "numpy.rad2deg": elementwise(),
    "numpy.radians": elementwise(),
    "numpy.degrees": elementwise(),
    "numpy.real": elementwise(),
    "numpy.imag": elementwise(),
    "numpy.conj": elementwise(),
    "numpy.conjugate": elementwise(),
    "numpy.isnan": elementwise(),
    "numpy.isfinite": elementwise(),
    # --- Python builtins and math: their NumPy counterparts on a batch --------------
    "builtins.abs": elementwise("{np}.abs"),
    "builtins.max": elementwise("{np}.maximum"),
    "builtins.min": elementwise("{np}.minimum"),
    "builtins.float": elementwise("{np}.float64"),
    "math.sin": elementwise("{np}.sin"),
    "math.cos": elementwise("{np}.cos"),
    "math.tan": elementwise("{np}.tan"),
    "math.exp": elementwise("{np}.exp"),
    "math.log": elementwise("{np}.log"),
    "math.sqrt": elementwise("{np}.sqrt"),
    "math.tanh": elementwise("{np}.tanh"),
    "math.atan": elementwise("{np}.arctan"),
    "math.fabs": elementwise("{np}.fabs"),
    "math.hypot": elementwise("{np}.hypot"),
    "math.pow": elementwise("{np}.power"),
    # --- reductions ----------------------------------------------------------------
    "numpy.sum": reduction(),
    "numpy.mean": reduction(),
    "numpy.max": reduction(),
    "numpy.min": reduction(),
    "numpy.amax": reduction(),
    "numpy.amin": reduction(),
    "numpy.prod": reduction(),
    "numpy.var": reduction(),
    "numpy.std": reduction(),
    "numpy.all": reduction(),
    "numpy.any": reduction(),
    "numpy.argmax": reduction(),
    "numpy.argmin": reduction(),
    "numpy.cumsum": reduction(keeps_rank=True),
    "numpy.diff": custom(_diff_infer, _diff_emit),
    "numpy.cumprod": reduction(keeps_rank=True),
    # --- linear algebra -----------------------------------------------------------
    "numpy.matmul": custom(_matmul_infer, _matmul_emit),
    "numpy.dot": custom(_matmul_infer, _matmul_emit),
    "numpy.vdot": custom(lambda s: Info(s.any_batched(), 0), _vdot_emit),
    "numpy.outer": custom(lambda s: Info(s.any_batched(), 2), _outer_emit),
    "numpy.trace": custom(lambda s: Info(s.any_batched(), 0), _trace_emit),
    # --- shape ---------------------------------------------------------------------
    "numpy.transpose": custom(lambda s: Info(s.args[0].batched, s.args[0].rank), _transpose_emit),
    "ndarray.T": custom(lambda s: Info(s.args[0].batched, s.args[0].rank), _transpose_emit),
    "numpy.reshape": custom(_reshape_infer, _reshape_emit),
    "ndarray.reshape": custom(_reshape_infer, _reshape_emit),
    "numpy.ravel": custom(lambda s: Info(s.args[0].batched, 1), _ravel_emit),
    "ndarray.ravel": custom(lambda s: Info(s.args[0].batched, 1), _ravel_emit),
    "numpy.expand_dims": custom(lambda s: Info(s.args[0].batched, None if s.args[0].rank is None else s.args[0].rank + 1), _expand_dims_emit),
    "numpy.squeeze": custom(_squeeze_infer, _squeeze_emit),
    "ndarray.shape": custom(_shape_attr_infer, _shape_attr_emit),
    "ndarray.ndim": custom(_unbatched_result(0), _ndim_emit),
    "builtins.len": custom(_unbatched_result(0), _len_emit),
    "numpy.copy": like(),
    "ndarray.copy": like(),
    "ndarray.astype": like(),
    "numpy.zeros_like": like(4),
    "numpy.ones_like": like(4),
    "numpy.empty_like": like(4),
    # --- array creation (never batched) -----------------------------------------------
    "numpy.zeros": creation(_shape_rank),
    "numpy.ones": creation(_shape_rank),
    "numpy.empty": creation(_shape_rank),
    "numpy.full": creation(_shape_rank),
    "numpy.arange": _vector,
    "numpy.linspace": _vector,
    "numpy.eye": creation(lambda site: 2),
    "numpy.identity": creation(lambda site: 2),
    "numpy.array": creation(_array_rank),
    "numpy.asarray": creation(_array_rank),
    "builtins.range": _vector,
    "builtins.int": _scalar,
    "builtins.round": _scalar,
    "math.floor": _scalar,
    "math.ceil": _scalar,
    # --- indexing ------------------------------------------------------------------
    "getitem": custom(index_infer, index_emit),
    # --- runtime helpers of adjoint files ----------------------------------------------
    "srctrans.runtime.grad_seed": custom(_grad_seed_infer, lambda site: "1.0"),
    "srctrans.runtime.zeros_like": like(),
    "srctrans.runtime.sum_grad": custom(_sum_grad_infer, _sum_grad_emit),
    "srctrans.runtime.unbroadcast": custom(_unbroadcast_infer, _unbroadcast_emit),
    "srctrans.runtime.dot_grad_x": _dot_grad(2),
    "srctrans.runtime.dot_grad_y": _dot_grad(1),
    "srctrans.runtime.tape": custom(_tape_infer, _tape_emit),
    # --- collectives -----------------------------------------------------------------------
    "srctrans.parallel.collectives.psum": _collective("sum", "{x} * {n}"),
    "srctrans.parallel.collectives.pmean": _collective("mean", "{x} * 1.0"),
    "srctrans.parallel.collectives.pmax": _collective("max", "{x} * 1"),
    "srctrans.parallel.collectives.pmin": _collective("min", "{x} * 1"),
    "srctrans.parallel.collectives.all_gather": _all_gather(),
    "srctrans.parallel.collectives.axis_index": _axis_index(),
}

# --- array functions and reductions (issue 20) ---
BATCHING.update({
    "numpy.nan_to_num": elementwise(),  # (its nan=, posinf=, neginf=: unbatched)
    "numpy.nansum": reduction(),
    "numpy.nanmean": reduction(),
    "numpy.nanmax": reduction(),
    "numpy.nanmin": reduction(),
    "numpy.nanvar": reduction(),
    "numpy.nanstd": reduction(),
    "numpy.real_if_close": elementwise(),  # (its tol=: unbatched)
    "numpy.angle": elementwise(),
})

# --- functions along axes (issue 24: one call for the whole batch, not a loop)
BATCHING.update({
    "numpy.swapaxes": along((("axis1", 1, None), ("axis2", 2, None))),
    "numpy.moveaxis": along((("source", 1, None), ("destination", 2, None))),
    "numpy.roll": along((("axis", 2, None),)),
    "numpy.sort": along((("axis", 1, -1),)),
    "numpy.argsort": along((("axis", 1, -1),)),
    "numpy.repeat": along((("axis", 2, None),)),
    "numpy.take": along((("axis", 2, None),), _take_rank),
    "numpy.diagonal": along((("axis1", 2, 0), ("axis2", 3, 1)), lambda site: -1),
    "numpy.flipud": _flipped(0),
    "numpy.fliplr": _flipped(1),
    "numpy.tril": stacked(),  # (the last two axes; k: unbatched)
    "numpy.triu": stacked(),
    "numpy.cross": custom(_cross_infer, elementwise().emit),  # (3-vectors along the last axis, broadcast over the others)
    "numpy.round": elementwise(),  # (decimals: unbatched)
    "numpy.full_like": like(5),
    "numpy.ascontiguousarray": like(),
    "math.erf": elementwise("rt.erf"),  # (a batch of numbers is an array: the functions of arrays)
    "math.lgamma": elementwise("rt.gammaln"),
})

# --- linear algebra on stacks of matrices (issue 24: one call for the whole batch, not a loop)
BATCHING.update({
    "numpy.linalg.inv": stacked(),
    "numpy.linalg.det": stacked(-2),
    "numpy.linalg.cholesky": stacked(),
    "numpy.linalg.matrix_power": stacked(),
    "numpy.linalg.solve": custom(_solve_infer, _solve_emit),
    "scipy.linalg.expm": stacked(),
    "srctrans.runtime.expm": stacked(),
})

# --- scipy.special's functions of numbers (issue 20): ufuncs, elementwise in every argument (orders
# and integer arguments broadcast like the others); the helpers their derivatives call, alike
SPECIAL_ELEMENTWISE = (
    "expit erf erfc erfcx erfinv erfcinv ndtr log_ndtr ndtri dawsn gamma rgamma gammaln loggamma gammasgn digamma psi "
    "logit entr xlogy xlog1py rel_entr kl_div beta betaln j0 j1 jv y0 y1 yv yn i0 i1 iv i0e i1e ive k0 k1 kv k0e k1e kve "
    "expi exp1 polygamma gammainc gammaincc betainc zeta poch factorial boxcox boxcox1p owens_t hyp1f1 hyp2f1"
).split()
BATCHING.update({
    **{f"scipy.special.{name}": elementwise() for name in SPECIAL_ELEMENTWISE},
    "numpy.i0": elementwise(),
    **{f"srctrans.runtime.{name}": elementwise() for name in "jv yv yn iv ive kv kve gammaln erf zeta hyp1f1 hyp2f1 digamma trigamma polygamma".split()},
})
