"""Sharding propagation: split a generated file into whole-shard stages and all-reduces.

Given a transformed function's generated file (``jit``: the normalized function;
``grad``: its adjoint file) and which parameters arrive sharded along axis 0 over ``D``
devices, :func:`plan` walks the entry function statement by statement and says, for
every value, whether it is

- ``row``: it carries the sharded axis first (each device holds a block of its rows):
  elementwise operations whose other operands are replicated and of lower rank,
  row-wise products ``X @ W``, indexing that keeps axis 0 (``x[:, 0]``), reductions
  over other axes (``np.sum(x, axis=-1)``), the adjoints of those;
- ``col``: a transposed ``row`` matrix (``X.T``), the sharded axis last;
- ``rep``: replicated, the same on every device.

A reduction over the sharded axis -- ``np.sum``/``np.mean``/``np.max``/``np.min`` over
all axes or axis 0, ``X.T @ r``, ``np.dot(x, y)`` of two sharded vectors, and in
adjoint files ``rt.unbroadcast``/``rt.dot_grad_x``/``rt.dot_grad_y`` giving a
replicated parameter's gradient -- becomes the same expression on each shard (a
partial result) plus an all-reduce; for a mean, each shard's sum is divided by the
global count. ``rt.mean_grad`` over the sharded axis is rewritten the same way. A
reduction inside a larger expression is first taken out to a statement of its own.
Operations along another axis (``np.var(x, axis=1)``, ``np.cumsum(x, axis=1)``, the
adjoint of ``np.max(z, axis=1)``) run on each shard alike; along the sharded axis they
are refused. ``X.shape`` and ``len(X)`` of a sharded argument are written in as the
whole array's (the file is made for those shapes). The file is cut into stages where a
later statement needs an all-reduced value; replicated statements, branches and loops
included, run in the driver between stages.

Anything the walk cannot prove right -- an operation with no known sharding behaviour,
a sharded value used another way (its ``.shape``, indexed along axis 0, inside control
flow), broadcasting that could touch the sharded axis (a replicated operand of the
same rank) -- makes :func:`plan` return a refusal naming the statement; the caller
then gathers the shards and runs the function unsharded.

The sharded file sits beside the original (``<name>.sharded<D>_<tag>.py``): one
function per stage and a driver ``<entry>_sharded(run, ...)`` that reads as the
program: ``run.map(stage, args, batched=...)``, ``run.reduce("sum", part)``, ``return``.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# --- the rule table: how each operation treats a sharded axis ----------------------------

ELEMENTWISE = frozenset(
    "numpy." + name
    for name in (
        "exp log log1p expm1 exp2 log2 log10 sqrt cbrt square abs absolute fabs negative positive sign "
        "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh arctan2 hypot "
        "maximum minimum fmax fmin where clip power add subtract multiply divide true_divide "
        "reciprocal logaddexp logaddexp2 floor ceil round rint isnan isfinite isinf heaviside "
        "greater greater_equal less less_equal equal not_equal logical_and logical_or logical_not "
        "float64 float32 conj real imag"
    ).split()
) | frozenset(
    "srctrans.runtime." + name
    for name in "xlogy ge_mask le_mask inside_mask sinc_grad sinc_grad2 digamma trigamma zeros_like ones_like".split()
)
# reductions: the all-reduce that combines the shards' partial results
REDUCTIONS = {
    "numpy.sum": "sum", "numpy.mean": "mean",
    "numpy.max": "max", "numpy.amax": "max", "numpy.min": "min", "numpy.amin": "min",
}
MATMUL = frozenset({"numpy.dot", "numpy.matmul", "srctrans.runtime.matmul", "srctrans.runtime.dot"})
TRANSPOSE = frozenset({"numpy.transpose", "srctrans.runtime.transpose"})
# adjoint-file helpers: gradient shaped like one of the arguments (its index)
SHAPED_LIKE = {
    "srctrans.runtime.unbroadcast": 1,
    "srctrans.runtime.sum_grad": 1,
    "srctrans.runtime.mean_grad": 1,
    "srctrans.runtime.dot_grad_x": 1,
    "srctrans.runtime.dot_grad_y": 2,
}
# operations along an axis: (the array's argument index, the axis argument's index, kind);
# done on each shard alike when the axis is not the sharded one, refused when it is
ALONG_AXIS = {
    **{f"numpy.{n}": (0, 1, "reduce") for n in ("var", "std", "prod", "argmax", "argmin", "any", "all")},
    **{f"numpy.{n}": (0, 1, "same") for n in ("cumsum", "cumprod", "sort")},
    **{f"srctrans.runtime.{n}": (1, 3, "adjoint") for n in ("extremum_grad", "prod_grad", "std_grad", "logsumexp_grad")},
    "srctrans.runtime.var_grad": (1, 2, "adjoint"),
    "srctrans.runtime.cumsum_grad": (1, 2, "adjoint"),
}
# methods that give a value laid out as the array they are called on
SAME_LAYOUT_METHODS = frozenset({"copy", "astype", "conj"})
CONSTANTS = frozenset({"numpy.pi", "numpy.e", "numpy.inf", "numpy.nan", "numpy.newaxis"})
PREFIXES = {"np": "numpy", "numpy": "numpy", "rt": "srctrans.runtime", "math": "math"}


@dataclass(frozen=True)
class Kind:
    """How a value is laid out: ``"rep"``, ``"row"`` or ``"col"``, and its rank (None: unknown)."""

    layout: str
    rank: int | None

    @property
    def sharded(self) -> bool:
        return self.layout != "rep"


REP0 = Kind("rep", 0)
REP = Kind("rep", None)


@dataclass(frozen=True)
class Reduce:
    """A reduction over the sharded axis: all-reduce ``kind`` of a replicated result of ``rank``."""

    kind: str  # "sum" | "mean" | "max" | "min"
    rank: int | None


class Refusal(Exception):
    """The split cannot be proved right at ``node``: say why."""

    def __init__(self, reason: str, node: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


# --- the plan ------------------------------------------------------------------------------


@dataclass
class Plan:
    """What a sharded call does: the stages of a sharded file, or why it gathers and runs unsharded."""

    sharded: bool
    reason: str = ""
    path: Path | None = None
    driver: str = ""
    stages: list[Any] = field(default_factory=list)
    reductions: list[str] = field(default_factory=list)
    devices: int = 0
    sharded_params: tuple[str, ...] = ()
    module: Any = None
    stage_objects: dict[str, Any] = field(default_factory=dict)
    runner: Any = None
    trace: list[dict] = field(default_factory=list)

    def explain(self) -> str:
        if not self.sharded:
            return f"gathered the shards and ran unsharded: {self.reason}"
        red = ", ".join(self.reductions) or "none"
        return (
            f"ran per shard on {self.devices} devices ({', '.join(self.sharded_params)} sharded along axis 0): "
            f"{len(self.stages)} stage(s), all-reduces: {red}; sharded file: {self.path}"
        )


def _qualified(node: Any) -> str | None:
    from ..analysis.names import dotted  # (libcst, imported when a file is made)

    text = dotted(node)
    if text is None or "." not in text:
        return text
    head, rest = text.split(".", 1)
    return f"{PREFIXES[head]}.{rest}" if head in PREFIXES else text


def reads(node: Any) -> set[str]:
    """The names an expression or statement reads (not attribute or keyword names)."""
    import libcst as cst

    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    node.visit(V())
    return names


def _int_literal(node: Any) -> int | None:
    import libcst as cst

    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def _axes(node: Any) -> tuple[int, ...] | None | str:
    """A literal ``axis`` argument: None, a tuple of ints; ``"?"`` when not a literal."""
    import libcst as cst

    if node is None or (isinstance(node, cst.Name) and node.value == "None"):
        return None
    single = _int_literal(node)
    if single is not None:
        return (single,)
    if isinstance(node, cst.Tuple):
        out = [_int_literal(e.value) for e in node.elements]
        if all(v is not None for v in out):
            return tuple(out)  # type: ignore[arg-type]
    return "?"


def _call_args(call: Any, names: Sequence[str]) -> dict[str, Any]:
    """Positional and keyword arguments of ``call`` by parameter name (``names`` in order)."""
    out: dict[str, Any] = {}
    for i, arg in enumerate(call.args):
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif arg.star:
            raise Refusal("a starred argument", call)
        elif i < len(names):
            out[names[i]] = arg.value
    return out


def _is_false(node: Any) -> bool:
    import libcst as cst

    return node is None or (isinstance(node, cst.Name) and node.value == "False")


def _is_true(node: Any) -> bool:
    import libcst as cst

    return isinstance(node, cst.Name) and node.value == "True"


class _Info:
    """Asks what an expression gives, from the kinds of the names it reads."""

    def __init__(self, env: dict[str, Kind], local: set[str]) -> None:
        self.env = env
        self.local = local
        self.taken: set[str] = set(local)
        self.shapes: dict[str, tuple] = {}  # sharded parameters not assigned since: their whole shapes

    def __call__(self, node: Any, top: bool = False) -> Kind | Reduce:
        out = self.value(node)
        if isinstance(out, Reduce) and not top:
            raise Refusal("a reduction over the sharded axis inside a larger expression", node)
        return out

    def kind(self, node: Any) -> Kind:
        out = self(node)
        assert isinstance(out, Kind)
        return out

    def value(self, node: Any) -> Kind | Reduce:  # noqa: C901 - one case per kind of expression
        import libcst as cst

        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return REP0
            if node.value in self.env:
                return self.env[node.value]
            return REP  # a global: replicated, rank unknown
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
            return REP0
        if isinstance(node, cst.Tuple) and all(isinstance(e.value, cst.Integer) for e in node.elements):
            return Kind("rep", 1)  # a shape
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return REP
        if isinstance(node, cst.UnaryOperation):
            inner = self.kind(node.expression)
            if isinstance(node.operator, cst.Not) and inner.sharded:
                raise Refusal("`not` of a sharded value", node)
            return inner
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.MatrixMultiply):
                return self.matmul(node, self.kind(node.left), self.kind(node.right))
            return self.elementwise(node, [self.kind(node.left), self.kind(node.right)])
        if isinstance(node, cst.Comparison):
            parts = [self.kind(node.left)] + [self.kind(c.comparator) for c in node.comparisons]
            return self.elementwise(node, parts)
        if isinstance(node, cst.Attribute):
            return self.attribute(node)
        if isinstance(node, cst.Subscript):
            return self.subscript(node)
        if isinstance(node, cst.Call):
            return self.call(node)
        # anything else (tuples, lambdas, conditional expressions ...): fine while nothing in it is sharded
        if any(self.env.get(n, REP).sharded for n in reads(node)):
            raise Refusal(f"a sharded value inside a {type(node).__name__} expression", node)
        return REP

    # --- kinds of expression -------------------------------------------------------------

    def elementwise(self, node: Any, parts: list[Kind]) -> Kind:
        sharded = [p for p in parts if p.sharded]
        if not sharded:
            ranks = [p.rank for p in parts]
            return Kind("rep", None if None in ranks else max(ranks, default=0))
        if any(p.layout != "row" for p in sharded):
            raise Refusal("an elementwise operation on a transposed sharded value", node)
        ranks = {p.rank for p in sharded}
        if len(ranks) != 1 or None in ranks:
            raise Refusal("sharded operands of different or unknown ranks: broadcasting would move the sharded axis", node)
        rank = ranks.pop()
        for p in parts:
            if not p.sharded and (p.rank is None or p.rank >= rank):
                raise Refusal(
                    "a replicated operand of the same (or unknown) rank as a sharded one: "
                    "broadcasting could touch the sharded axis",
                    node,
                )
        return Kind("row", rank)

    def matmul(self, node: Any, a: Kind, b: Kind) -> Kind | Reduce:
        if not a.sharded and not b.sharded:
            if a.rank is None or b.rank is None:
                return REP
            return Kind("rep", max(a.rank + b.rank - 2, 0) if min(a.rank, b.rank) >= 1 else max(a.rank, b.rank))
        if a.layout == "row" and a.rank == 2 and not b.sharded and b.rank in (1, 2):
            return Kind("row", b.rank)  # row-wise: each shard's rows times the replicated matrix
        if a.layout == "col" and a.rank == 2 and b.layout == "row" and b.rank in (1, 2):
            return Reduce("sum", b.rank)  # X.T @ r: contracts the sharded axis
        if a.layout == "row" and a.rank == 1 and b.layout == "row" and b.rank in (1, 2):
            return Reduce("sum", b.rank - 1)  # x @ y, x @ Y: contracts the sharded axis
        raise Refusal("a matrix product of these layouts (no known sharding for it)", node)

    def attribute(self, node: Any) -> Kind:
        qual = _qualified(node)
        if qual in CONSTANTS:
            return REP0
        base = self.kind(node.value)
        attr = node.attr.value
        if attr == "T":
            return self.transpose(node, base)
        if attr == "ndim":
            return REP0
        if base.sharded:
            raise Refusal(f"`.{attr}` of a sharded value (each shard has its own)", node)
        return REP

    def transpose(self, node: Any, base: Kind) -> Kind:
        if not base.sharded or base.rank == 1:
            return base
        if base.rank == 2:
            return Kind("col" if base.layout == "row" else "row", 2)
        raise Refusal("a transpose of a sharded value of rank other than 1 or 2", node)

    def subscript(self, node: Any) -> Kind:
        import libcst as cst

        base = self.kind(node.value)
        elems = node.slice
        if not elems:
            raise Refusal("an empty index", node)
        for el in elems:
            if isinstance(el.slice, cst.Index) and self.kind(el.slice.value).sharded:
                raise Refusal("indexing with a sharded index", node)
        rank = base.rank
        if rank is not None:
            for el in elems:
                s = el.slice
                if isinstance(s, cst.Index):
                    v = s.value
                    if isinstance(v, cst.Name) and v.value == "None":
                        rank += 1
                    elif isinstance(v, cst.Ellipsis):
                        pass
                    elif _int_literal(v) is not None or (isinstance(v, cst.Name) and self.env.get(v.value, REP).rank == 0):
                        rank -= 1
                    else:
                        rank = None
                        break
        if not base.sharded:
            return Kind("rep", rank)
        if base.layout != "row":
            raise Refusal("indexing a transposed sharded value", node)
        first = elems[0].slice
        full = isinstance(first, cst.Slice) and first.lower is None and first.upper is None and first.step is None
        ellipsis = isinstance(first, cst.Index) and isinstance(first.value, cst.Ellipsis)
        if ellipsis and base.rank is not None and len(elems) - 1 < base.rank:
            if not any(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name) and e.slice.value.value == "None" for e in elems):
                full = True
        if not full or rank is None:
            raise Refusal("indexing along the sharded axis (keep axis 0 whole: x[:, ...])", node)
        return Kind("row", rank)

    def call(self, node: Any) -> Kind | Reduce:
        import libcst as cst

        func = node.func
        if isinstance(func, cst.Attribute) and self.kind(func.value).sharded:  # a method of a sharded value
            if func.attr.value in SAME_LAYOUT_METHODS:
                if any(self.kind(a.value).sharded for a in node.args):
                    raise Refusal(f"`.{func.attr.value}(...)` given a sharded value", node)
                return self.kind(func.value)
            raise Refusal(f"`.{func.attr.value}(...)` of a sharded value (no known sharding for it)", node)
        qual = _qualified(func)
        args = [self.kind(a.value) for a in node.args]
        if qual is None or not any(a.sharded for a in args):
            if qual == "srctrans.runtime.grad_seed":
                return REP0
            if qual in SHAPED_LIKE or qual in ALONG_AXIS:
                where = SHAPED_LIKE[qual] if qual in SHAPED_LIKE else ALONG_AXIS[qual][0]
                return Kind("rep", args[where].rank if len(args) > where else None)
            if qual in REDUCTIONS or qual in MATMUL or qual in TRANSPOSE or qual in ELEMENTWISE:
                return self.known(node, qual, args)
            return REP
        return self.known(node, qual, args)

    def known(self, node: Any, qual: str | None, args: list[Kind]) -> Kind | Reduce:
        if qual in ELEMENTWISE:
            return self.elementwise(node, args)
        if qual in MATMUL and len(args) == 2:
            return self.matmul(node, args[0], args[1])
        if qual in TRANSPOSE and len(args) == 1:
            return self.transpose(node, args[0])
        if qual in REDUCTIONS:
            return self.reduction(node, REDUCTIONS[qual])
        if qual in SHAPED_LIKE:
            return self.adjoint_helper(node, qual, args)
        if qual in ALONG_AXIS:
            return self.along_axis(node, qual, args)
        raise Refusal(f"no sharding rule for {qual or 'this call'} (it is given a sharded value)", node)

    def reduction(self, node: Any, kind: str) -> Kind | Reduce:
        a = _call_args(node, ("a", "axis", "dtype", "out", "keepdims"))
        if "a" not in a or set(a) - {"a", "axis", "keepdims"}:
            raise Refusal("a reduction with arguments other than axis and keepdims", node)
        x = self.kind(a["a"])
        keep = _is_true(a.get("keepdims"))
        if not keep and not _is_false(a.get("keepdims")):
            raise Refusal("keepdims that is not a literal", node)
        axes = _axes(a.get("axis"))
        if axes == "?":
            raise Refusal("a reduction whose axis is not a literal", node)
        if x.rank is None:
            if x.sharded:
                raise Refusal("a reduction of a sharded value of unknown rank", node)
            return REP
        rank = x.rank
        if axes is None:
            reduced = set(range(rank))
        else:
            reduced = {a % rank if rank else 0 for a in axes}  # type: ignore[union-attr]
        out_rank = rank if keep else rank - len(reduced)
        if not x.sharded:
            return Kind("rep", out_rank)
        sharded_axis = 0 if x.layout == "row" else 1
        if sharded_axis in reduced:
            return Reduce(kind, out_rank)
        if x.layout == "col":  # np.sum(X.T, axis=0): the sharded axis comes first again
            return Kind("row", 1) if not keep else Kind("col", 2)
        return Kind("row", out_rank)

    def along_axis(self, node: Any, qual: str, args: list[Kind]) -> Kind:
        """An operation along one axis: done on each shard's rows alike when that axis is not the sharded one."""
        where, axis_at, kind = ALONG_AXIS[qual]
        like = args[where] if len(args) > where else REP
        name = qual.rsplit(".", 1)[1]
        if any(a.sharded for i, a in enumerate(args) if i != where) and kind != "adjoint":
            raise Refusal(f"{name} given a sharded value other than the array it works along", node)
        if like.layout != "row" or like.rank is None:
            raise Refusal(f"{name} of a sharded value of this layout", node)
        axis = node.args[axis_at].value if len(node.args) > axis_at and node.args[axis_at].keyword is None else None
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "axis":
                axis = arg.value
            elif arg.keyword is not None and arg.keyword.value == "keepdims" and not _is_false(arg.value) and kind == "reduce":
                raise Refusal(f"{name} with keepdims", node)
        axes = _axes(axis)
        if axes is None or axes == "?" or 0 in {a % like.rank for a in axes}:  # type: ignore[union-attr]
            raise Refusal(f"{name} along the sharded axis (it has no all-reduce here)", node)
        if kind == "reduce":
            return Kind("row", like.rank - len(axes))  # type: ignore[arg-type]
        return like

    def adjoint_helper(self, node: Any, qual: str, args: list[Kind]) -> Kind | Reduce:
        shaped = SHAPED_LIKE[qual]
        if len(args) <= shaped:
            raise Refusal(f"{qual} with too few arguments", node)
        like = args[shaped]
        g = args[0]
        if any(a.layout == "col" for a in args) and not qual.startswith("srctrans.runtime.dot_grad"):
            raise Refusal(f"{qual} of a transposed sharded value", node)
        name = qual.rsplit(".", 1)[1]
        if name == "unbroadcast":
            if like.layout == "row":
                if g.layout == "row" and g.rank == like.rank:
                    return like
                if not g.sharded and g.rank is not None and like.rank is not None and g.rank < like.rank:
                    return like
            elif not like.sharded and g.layout == "row" and like.rank is not None and g.rank is not None and like.rank < g.rank:
                return Reduce("sum", like.rank)
            raise Refusal("an unbroadcast whose shapes could move the sharded axis", node)
        if name in ("sum_grad", "mean_grad"):
            a = _call_args(node, ("g", "x", "axis", "keepdims"))
            axes = _axes(a.get("axis"))
            if axes == "?" or like.rank is None:
                raise Refusal(f"{name} with an axis that is not a literal", node)
            if not like.sharded:
                if g.sharded:
                    raise Refusal(f"{name} of a sharded adjoint for a replicated value", node)
                return like
            reduced = set(range(like.rank)) if axes is None else {v % like.rank for v in axes}  # type: ignore[union-attr]
            if 0 in reduced and g.sharded:
                raise Refusal(f"{name}: a sharded adjoint of a reduction over the sharded axis", node)
            return like
        # dot_grad_x / dot_grad_y: shaped like x / y; a replicated result contracts the sharded axis
        if like.sharded:
            return like
        return Reduce("sum", like.rank)


# --- the walk -------------------------------------------------------------------------------


@dataclass
class _Stmt:
    line: Any  # the SimpleStatementLine
    kind: str  # "S" sharded, "P" partial + all-reduce, "R" replicated (driver)
    target: str | None = None
    reduce: Reduce | None = None
    text: str = ""  # the statement as it runs (rewritten where needed)
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)


def _indent(text: str, by: str = "    ") -> str:
    return "".join(by + ln if ln.strip() else ln for ln in text.splitlines(keepends=True))


def _comments(module: Any, line: Any) -> str:
    return "".join(module.code_for_node(e) for e in line.leading_lines)


def _location(text: str, line: int, path: Path) -> str:
    """``file:line: text`` of a line of the generated file, and the user's line it came from."""
    from ..cache import origin_map

    where = f"{path}:{line}: {text.splitlines()[line - 1].strip()}"
    origin = origin_map(text).get(line)
    if origin is None:
        return where
    file, user_line, user_text = origin
    return f"{file}:{user_line}: {user_text} (generated file {where})"


def plan(gen: Any, sharded: dict[str, tuple], ranks: dict[str, int], devices: int, what: str) -> tuple[str, list[dict], Plan] | Plan:
    """Split ``gen``'s entry function for ``sharded`` parameters (name -> whole shape) over ``devices``.

    ``ranks`` gives every parameter's rank. Where the function reads a sharded
    parameter's ``.shape`` or ``len``, the file is written with the whole shape. Returns ``(text, stages, plan)``: the sharded
    file's text and each stage's name, batched flags and output count; or a refused
    :class:`Plan` saying why.
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    text = gen.path.read_text()
    wrapper = MetadataWrapper(cst.parse_module(text))
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    entry = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == gen.entry), None
    )
    if entry is None:
        return Plan(False, f"{gen.path.name} has no function {gen.entry}")
    params = [p.name.value for p in entry.params.params]
    env: dict[str, Kind] = {p: Kind("row" if p in sharded else "rep", ranks.get(p)) for p in params}
    local = set(params)
    info = _Info(env, local)
    info.taken = reads(module) | set(params)
    info.shapes = dict(sharded)
    stmts: list[_Stmt] = []
    ret = current = None
    try:
        for line in entry.body.body:
            current = line
            if not isinstance(line, cst.SimpleStatementLine):
                touched = reads(line)
                if any(env.get(n, REP).sharded for n in touched):
                    raise Refusal("control flow over a sharded value", line)
                writes = _compound_writes(line)
                env.update(_compound_kinds(line, writes, info))
                for n in writes:
                    info.shapes.pop(n, None)
                stmts.append(_Stmt(line, "R", text=module.code_for_node(line), reads=touched, writes=writes))
                continue
            if len(line.body) != 1:
                raise Refusal("several statements on one line", line)
            small = line.body[0]
            if isinstance(small, cst.Return):
                ret, lifted = _lift_return(line, info)
                for extra in lifted:
                    stmts += _statement(module, extra, extra.body[0], info, env, devices)
                break
            stmts += _statement(module, line, small, info, env, devices)
    except Refusal as err:
        return Plan(False, f"{err.reason} at {_location(text, positions[current].start.line, gen.path)}")
    if ret is None:
        return Plan(False, f"{gen.entry} does not end in a return statement")
    try:
        returned = _returned(ret.body[0].value, env)
    except Refusal as err:
        return Plan(False, err.reason + f" ({what} returns it)")
    return _emit(gen, module, entry, params, stmts, ret, returned, env, sharded, devices, what)


def _compound_kinds(node: Any, writes: set[str], info: _Info) -> dict[str, Kind]:
    """Replicated names a branch or loop assigns, with their rank where every assignment agrees.

    ``s = 2.0`` in one branch and ``s = 3.0`` in the other: ``s`` is a replicated number.
    A range loop's variable is a number; any other way of assigning a name leaves its rank unknown.
    """
    import libcst as cst

    from ..analysis.names import dotted

    found: dict[str, set[int | None]] = {n: set() for n in writes}
    # inside, a name the statement assigns may hold any of its values: unknown rank
    inner = _Info({**info.env, **{n: REP for n in writes}}, info.local)

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            target = n.targets[0].target if len(n.targets) == 1 else None
            if not isinstance(target, cst.Name):
                for name in reads(n):
                    if name in found:
                        found[name].add(None)
                return
            try:
                kind = inner.kind(n.value)
            except Refusal:
                kind = REP
            found[target.value].add(kind.rank)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            for name in reads(n.target):
                found.setdefault(name, set()).add(None)

        def visit_For(self, n: cst.For) -> None:
            ranged = isinstance(n.iter, cst.Call) and dotted(n.iter.func) == "range"
            for name in reads(n.target):
                found.setdefault(name, set()).add(0 if ranged and isinstance(n.target, cst.Name) else None)

    node.visit(V())
    return {n: Kind("rep", ranks.pop() if len(ranks) == 1 else None) for n, ranks in found.items()}


def _compound_writes(node: Any) -> set[str]:
    import libcst as cst

    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            names.update(reads(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            names.update(reads(n.target))

        def visit_For(self, n: cst.For) -> None:
            names.update(reads(n.target))

    node.visit(V())
    return names


def _lift_return(line: Any, info: _Info) -> tuple[Any, list[Any]]:
    """``return f(x), y``: each returned expression that reads a sharded value becomes ``out = f(x)`` first."""
    import libcst as cst

    lifted: list[Any] = []

    def lift(node: Any) -> Any:
        if isinstance(node, cst.Tuple):
            return node.with_changes(elements=[e.with_changes(value=lift(e.value)) for e in node.elements])
        if isinstance(node, cst.Name) or not any(info.env.get(n, REP).sharded for n in reads(node)):
            return node
        name = _fresh("out", info.taken)
        lifted.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], node)]))
        return cst.Name(name)

    small = line.body[0]
    if small.value is None:
        return line, []
    value = lift(small.value)
    if not lifted:
        return line, []
    lifted[0] = lifted[0].with_changes(leading_lines=line.leading_lines)
    return line.with_changes(body=[small.with_changes(value=value)], leading_lines=[]), lifted


def _hoist(value: Any, info: _Info) -> tuple[Any, list[tuple[str, Any]]]:
    """Reductions over the sharded axis inside an expression, each taken out to a statement of its own."""
    import libcst as cst

    pre: list[tuple[str, Any]] = []

    class Hoist(cst.CSTTransformer):
        def leave_Call(self, original, updated):
            return self.maybe(original, updated)

        def leave_BinaryOperation(self, original, updated):
            return self.maybe(original, updated) if isinstance(updated.operator, cst.MatrixMultiply) else updated

        def maybe(self, original, updated):
            if original is value:
                return updated
            found = info.value(updated)
            if not isinstance(found, Reduce):
                return updated
            if found.rank is None:
                raise Refusal("a reduction over the sharded axis whose result rank is unknown", original)
            name = _fresh(f"{found.kind}_all", info.taken)
            pre.append((name, updated))
            info.env[name] = Kind("rep", found.rank)
            info.local.add(name)
            return cst.Name(name)

    return value.visit(Hoist()), pre


def _whole_shapes(small: Any, info: _Info) -> Any:
    """``X.shape`` and ``len(X)`` of a sharded parameter: its whole shape, written in (each shard has its own)."""
    import libcst as cst

    if not info.shapes or not any(n in info.shapes for n in reads(small)):
        return small

    class Shapes(cst.CSTTransformer):
        def leave_Attribute(self, original, updated):
            if isinstance(updated.value, cst.Name) and updated.value.value in info.shapes and updated.attr.value == "shape":
                dims = info.shapes[updated.value.value]
                return cst.parse_expression(repr(tuple(dims)))
            return updated

        def leave_Call(self, original, updated):
            if (
                isinstance(updated.func, cst.Name) and updated.func.value == "len" and len(updated.args) == 1
                and isinstance(updated.args[0].value, cst.Name) and updated.args[0].value.value in info.shapes
            ):
                return cst.Integer(str(info.shapes[updated.args[0].value.value][0]))
            return updated

    return small.visit(Shapes())


def _statement(module: Any, line: Any, small: Any, info: _Info, env: dict[str, Kind], devices: int) -> list[_Stmt]:
    """What one statement line becomes: reductions over the sharded axis inside it first, then itself."""
    import libcst as cst

    changed = _whole_shapes(small, info)
    if changed is not small:
        note = cst.EmptyLine(comment=cst.Comment("# the whole shape of a sharded argument (this file is written for it)"))
        small, line = changed, line.with_changes(body=[changed], leading_lines=[*line.leading_lines, note])
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
        return [_one(module, line, small, info, env, devices)]
    value, pre = _hoist(small.value, info)
    if not pre:
        return [_one(module, line, small, info, env, devices)]
    out = []
    for i, (name, node) in enumerate(pre):
        extra = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.Name(name))], node)], leading_lines=line.leading_lines if i == 0 else []
        )
        out.append(_one(module, extra, extra.body[0], info, env, devices))
    rest = line.with_changes(body=[small.with_changes(value=value)], leading_lines=[])
    out.append(_one(module, rest, rest.body[0], info, env, devices))
    return out


def _one(module: Any, line: Any, small: Any, info: _Info, env: dict[str, Kind], devices: int) -> _Stmt:
    import libcst as cst

    code = module.code_for_node(line)
    if isinstance(small, cst.Assign):
        if len(small.targets) != 1:
            raise Refusal("a chained assignment", line)
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            touched = reads(small)
            if any(env.get(n, REP).sharded for n in touched):
                raise Refusal("a sharded value written into a container or an array (in place)", line)
            for n in reads(target):
                env[n] = REP
            return _Stmt(line, "R", text=code, reads=touched, writes=reads(target))
        name = target.value
        info.shapes.pop(name, None)
        value = info(small.value, top=True)
        touched = reads(small.value)
        info.local.add(name)
        if isinstance(value, Reduce):
            if value.rank is None:
                raise Refusal("a reduction over the sharded axis whose result rank is unknown", line)
            env[name] = Kind("rep", value.rank)
            return _Stmt(line, "P", name, value, _partial(module, line, small.value, name, value, devices, info), touched, {name})
        env[name] = value
        if not value.sharded:
            return _Stmt(line, "R", name, text=code, reads=touched, writes={name})
        text = _rewrite_mean_grad(module, line, small.value, devices, info) or code
        return _Stmt(line, "S", name, text=text, reads=touched, writes={name})
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        name = small.target.value
        info.shapes.pop(name, None)
        value = info.elementwise(small, [env.get(name, REP), info.kind(small.value)])
        env[name] = value
        kind = "S" if value.sharded else "R"
        return _Stmt(line, kind, name, text=code, reads=reads(small), writes={name})
    if isinstance(small, (cst.Pass,)):
        return _Stmt(line, "R", text=code)
    touched = reads(small)
    if any(env.get(n, REP).sharded for n in touched):
        raise Refusal(f"a sharded value used in a {type(small).__name__} statement", line)
    return _Stmt(line, "R", text=code, reads=touched)


def _count_text(x: str, axes: Any, rank: int, devices: int) -> str:
    if axes is None:
        return f"({x}.size * {devices})"
    dims = " * ".join(f"{x}.shape[{a % rank}]" for a in axes)
    return f"({dims} * {devices})"


def _partial(module: Any, line: Any, value: Any, name: str, red: Reduce, devices: int, info: _Info) -> str:
    """This shard's part of an all-reduce, shaped ``(1, ...)`` so the runner's combine sums the parts."""
    import libcst as cst

    expr = module.code_for_node(value)
    note = f"# this shard's part of {name} (all-reduced: {red.kind} over the sharded axis)\n"
    if red.kind == "mean":
        a = _call_args(value, ("a", "axis", "dtype", "out", "keepdims"))
        x = module.code_for_node(a["a"])
        x_rank = info.kind(a["a"]).rank or 0
        summed = module.code_for_node(value.with_changes(func=cst.parse_expression("np.sum")))
        expr = f"{summed} / {_count_text(x, _axes(a.get('axis')), x_rank, devices)}"
        note = f"# this shard's part of {name}: its sum over the global count (all-reduced: sum)\n"
    if red.rank == 0:
        body = f"{name}_part = np.full(1, {expr})\n"
    else:
        body = f"{name}_part = np.expand_dims({expr}, 0)\n"
    return _comments(module, line) + note + body


def _rewrite_mean_grad(module: Any, line: Any, value: Any, devices: int, info: _Info) -> str | None:
    """``rt.mean_grad`` over the sharded axis: the shard's ``sum_grad`` over the global count."""
    import libcst as cst

    if not isinstance(value, cst.Call) or _qualified(value.func) != "srctrans.runtime.mean_grad":
        return None
    a = _call_args(value, ("g", "x", "axis", "keepdims"))
    x = info.kind(a["x"])
    if not x.sharded or x.rank is None:
        return None
    axes = _axes(a.get("axis"))
    reduced = set(range(x.rank)) if axes is None else {v % x.rank for v in axes}  # type: ignore[union-attr]
    if 0 not in reduced:
        return None
    target = module.code_for_node(line.body[0].targets[0].target)
    summed = module.code_for_node(value.with_changes(func=cst.parse_expression("rt.sum_grad")))
    count = _count_text(module.code_for_node(a["x"]), axes, x.rank, devices)
    return (
        _comments(module, line)
        + "# a mean over the sharded axis: divide by the global count, not this shard's\n"
        + f"{target} = {summed} / {count}\n"
    )


def _returned(node: Any, env: dict[str, Kind]) -> Any:
    """The returned expression as a nested structure of names (checked) and replicated expressions."""
    import libcst as cst

    if isinstance(node, cst.Tuple):
        return tuple(_returned(e.value, env) for e in node.elements)
    if isinstance(node, cst.Name) and node.value in env:
        if env[node.value].layout == "col":
            raise Refusal(f"a transposed sharded value {node.value}")
        return node.value
    if node is None or not any(env.get(n, REP).sharded for n in reads(node)):
        return None  # replicated: returned as written
    raise Refusal("a sharded value inside a returned expression")


def _fresh(base: str, taken: set[str]) -> str:
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}{i}"
    taken.add(name)
    return name


def _emit(gen, module, entry, params, stmts, ret, returned, env, sharded, devices, what):  # noqa: C901
    """Cut the statements into stages; render the sharded file."""
    import libcst as cst

    # group: each stage is a run of S/P statements; R statements go to the driver; a stage is
    # closed when a later statement needs one of its all-reduced values (or redefines what it uses)
    events: list[tuple[str, Any]] = []  # ("stage", [stmts]) | ("driver", stmt)
    current: list[_Stmt] = []
    pending: set[str] = set()  # all-reduced values of the open stage
    touched_by_stage: set[str] = set()

    def close() -> None:
        nonlocal current, pending, touched_by_stage
        if current:
            events.append(("stage", current))
        current, pending, touched_by_stage = [], set(), set()

    for st in stmts:
        if st.kind == "R":
            if st.reads & pending or st.writes & touched_by_stage:
                close()
            events.append(("driver", st))
            continue
        if st.reads & pending:
            close()
        current.append(st)
        touched_by_stage |= st.reads | st.writes
        if st.kind == "P":
            pending.add(st.target)
    close()

    taken = set(reads(module)) | set(params)
    base = gen.entry
    n_stages = sum(1 for k, _ in events if k == "stage")
    ret_names = set(_flat(returned)) | reads(ret)
    kinds_before: dict[int, dict[str, str]] = {}
    # the kind of each name as each stage starts: replay statement kinds in order
    layout: dict[str, str] = {p: ("row" if p in sharded else "rep") for p in params}
    out_lines = []
    driver_lines = []
    stage_specs: list[dict] = []
    later_reads: list[set[str]] = []
    # names read after each event
    for i in range(len(events)):
        names: set[str] = set(ret_names)
        for kind, item in events[i + 1:]:
            if kind == "stage":
                for st in item:
                    names |= st.reads
            else:
                names |= item.reads
        later_reads.append(names)
    k = 0
    for i, (kind, item) in enumerate(events):
        if kind == "driver":
            driver_lines.append(_indent(item.text))
            for n in item.writes:
                layout[n] = "rep"
            continue
        kinds_before[i] = dict(layout)
        defined: set[str] = set()
        inputs: list[str] = []
        for st in item:
            for n in sorted(st.reads):
                if n not in defined and n not in inputs and n in layout:
                    inputs.append(n)
            defined |= st.writes
        outputs: list[str] = []
        reduce_lines = []
        for st in item:
            if st.kind == "P":
                part = f"{st.target}_part"
                if part in taken:
                    part = _fresh(part, taken)
                    st.text = st.text.replace(f"{st.target}_part =", f"{part} =")
                outputs.append(part)
                kind_name = "sum" if st.reduce.kind == "mean" else st.reduce.kind
                reduce_lines.append(f'    {st.target} = run.reduce("{kind_name}", {part})\n')
                layout[st.target] = "rep"
            else:
                for n in st.writes:
                    layout[n] = "row"
        for st in item:
            if st.kind == "S":
                for n in st.writes:
                    if n in later_reads[i] and n not in outputs:
                        outputs.append(n)
        name = _fresh(f"{base}_stage{k}", taken)
        batched = tuple(kinds_before[i][n] != "rep" for n in inputs)
        body = "".join(_indent(st.text) for st in item)
        rows = ", ".join(n for n, b in zip(inputs, batched) if b)
        out_lines.append(
            f"def {name}({', '.join(inputs)}):\n"
            f'    """Stage {k + 1} of {n_stages}, on one shard: the rows of {rows} it holds."""\n'
            + body
            + f"    return ({', '.join(outputs)}{',' if len(outputs) == 1 else ''})\n"
        )
        targets = ", ".join(outputs) + ("," if len(outputs) == 1 else "")
        flags = ", ".join(str(b) for b in batched) + ("," if len(batched) == 1 else "")
        driver_lines.append(f"    # stage {k + 1} of {n_stages}: on each shard\n")
        assign = f"{targets} = " if outputs else ""  # a stage whose results nothing reads still runs, as written
        driver_lines.append(f"    {assign}run.map({name}, ({', '.join(inputs)}{',' if len(inputs) == 1 else ''}), batched=({flags}))\n")
        if reduce_lines:
            driver_lines.append("    # all-reduce the shards' parts\n")
            driver_lines += reduce_lines
        stage_specs.append({"name": name, "batched": batched, "outputs": len(outputs)})
        k += 1
    # the return: sharded values are gathered
    gathers = []
    for n in _flat(returned):
        if layout.get(n) == "row":
            gathers.append(f"    {n} = run.get({n})\n")
    if gathers:
        driver_lines.append("    # gather the sharded results\n")
        driver_lines += gathers
    driver_lines.append(_indent(module.code_for_node(ret)))
    driver = _fresh(f"{base}_sharded", taken)
    rows_of = ", ".join(sorted(sharded))
    from ..version import __version__

    header = (
        f"# Generated by srctrans {__version__} from {gen.path.name} -- sharded over {devices} devices along axis 0 of {rows_of}\n"
        "# Do not edit: srctrans rewrites this file when the file it splits changes.\n"
        f"# {what}: each stage runs on every device's block of rows; run.reduce all-reduces the shards' parts.\n\n"
    )
    prelude = "".join(module.code_for_node(s) for s in module.body if not isinstance(s, cst.FunctionDef))
    if "import numpy as np\n" not in prelude:  # the stages' partial results use it
        prelude = "import numpy as np\n" + prelude
    others = "".join(
        module.code_for_node(s) for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value != gen.entry
    )
    text = (
        header
        + prelude.strip() + "\n\n\n"
        + (others.strip() + "\n\n\n" if others.strip() else "")
        + "\n\n".join(out_lines)
        + "\n\n"
        + f"def {driver}(run, {', '.join(params)}):\n"
        + f'    """{what} on sharded arguments: the stages on each shard, then the all-reduces."""\n'
        + "".join(driver_lines)
    )
    reductions = [f"{st.reduce.kind} -> {st.target}" for kind, item in events if kind == "stage" for st in item if st.kind == "P"]
    p = Plan(True, devices=devices, sharded_params=tuple(sorted(sharded)), reductions=reductions, driver=driver)
    return text, stage_specs, p


def _flat(tree: Any) -> list[str]:
    if isinstance(tree, tuple):
        out: list[str] = []
        for t in tree:
            out += _flat(t)
        return out
    return [tree] if isinstance(tree, str) else []


# --- running a sharded call ------------------------------------------------------------------

_LOCK = threading.Lock()


class _Run:
    """What the driver calls ``run``: the runner, with stage functions standing for their stages."""

    def __init__(self, runner: Any, stages: dict[str, Any]) -> None:
        self.runner = runner
        self.stages = stages

    def map(self, fn, args, batched):
        return self.runner.map(self.stages[fn.__name__], tuple(args), tuple(batched))

    def reduce(self, kind, value):
        return self.runner.reduce(kind, value)

    def get(self, value):
        return self.runner.get(value)


def _runner(mesh: Any, compiled: bool) -> Any:
    from .runner import PythonRunner, runner_for

    devs = mesh.device_list
    try:
        return runner_for(mesh.backend, devs, jit=compiled)
    except ImportError:  # no compiled CPU runner here: the reference runner, compiling each stage
        return PythonRunner(devs, jit_options={} if compiled else None)


def sharded_call(fn: Any, args: tuple, kwargs: dict) -> Any:
    """Call transformed function ``fn`` on arguments holding sharded arrays (see :mod:`srctrans.sharding`)."""
    from ..config import config
    from ..sharding import ShardedArray, warn_fallback
    from ..tree import tree_map

    shardings: dict[int, Any] = {}

    def plain(x: Any) -> Any:
        if isinstance(x, ShardedArray):
            out = np.asarray(x)
            if x.sharding is not None:
                shardings[id(out)] = x.sharding
            return out
        return x

    plain_args = tree_map(plain, args, is_leaf=lambda x: isinstance(x, ShardedArray))
    plain_kwargs = tree_map(plain, kwargs, is_leaf=lambda x: isinstance(x, ShardedArray))
    spec, call_args = fn._prepare(plain_args, plain_kwargs)
    params = [m for m in spec.gen.meta["params"] if m[0] in ("arg", "attr", "leaf")]
    names = _param_names(spec)
    found = {names[i]: shardings[id(v)] for i, v in enumerate(call_args) if id(v) in shardings}
    del params
    found = {n: s for n, s in found.items() if any(s.spec.axis_names(d) for d in range(len(s.spec)))}
    fn._sharding_last = None
    if not found:
        return fn(*plain_args, **plain_kwargs)  # nothing is split (replicated arrays): the ordinary call
    compiled = fn._compile and not config.disable_jit
    reason = _unsupported(found, call_args, names)
    key = None
    if reason is None:
        mesh = next(iter(found.values())).mesh
        shapes = {n: tuple(int(d) for d in np.shape(call_args[names.index(n)])) for n in found}
        ranks = {n: int(np.ndim(v)) for n, v in zip(names, call_args)}
        key = (id(spec), tuple(sorted(shapes.items())), tuple(sorted(ranks.items())), mesh, compiled)
        cache = fn.__dict__.setdefault("_sharding_plans", {})
        made = cache.get(key)
        if made is None:
            made = _make(spec, shapes, ranks, mesh, compiled, fn)
            cache[key] = made
            if not made.sharded:
                warn_fallback(f"{fn.__qualname__}: {made.explain()}")
        current = made
    else:
        current = Plan(False, reason)
        cache = fn.__dict__.setdefault("_sharding_plans", {})
        if reason not in cache:
            cache[reason] = current
            warn_fallback(f"{fn.__qualname__}: {current.explain()}")
    fn._sharding_last = current
    if not current.sharded:
        return fn(*plain_args, **plain_kwargs)
    runner = current.runner
    if hasattr(runner, "start_call"):
        runner.start_call()
    run = _Run(runner, current.stage_objects)
    driver_args = []
    for n, v in zip(names, call_args):
        driver_args.append(runner.put(v, what=f"axis 0 of {n}") if n in found else runner.replicate(v))
    try:
        raw = getattr(current.module, current.driver)(run, *driver_args)
    except Exception as err:
        _explain(current, err)
        raise
    current.trace = runner.trace()
    return fn._result(spec, raw, plain_args, plain_kwargs)


def _explain(plan: Plan, err: BaseException) -> None:
    """Add a note naming the user's line to an exception raised in the sharded file (run as Python)."""
    from ..cache import origin_map

    tb, where = err.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(plan.path):
            where = tb.tb_lineno
        tb = tb.tb_next
    found = origin_map(plan.path.read_text()).get(where) if where is not None else None
    if found is not None:
        file, line, text = found
        err.add_note(f"in your code: {file}:{line}  {text}\n(sharded file: {plan.path}:{where})")


def _param_names(spec: Any) -> list[str]:
    import libcst as cst

    cached = getattr(spec, "_sharding_params", None)
    if cached is None:
        module = cst.parse_module(spec.gen.path.read_text())
        entry = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == spec.gen.entry)
        cached = [p.name.value for p in entry.params.params]
        spec._sharding_params = cached
    return cached


def _unsupported(found: dict[str, Any], call_args: list, names: list[str]) -> str | None:
    """Why these sharded arguments cannot be split by this propagation (None: they can)."""
    if not found:
        return "no sharded argument reached the generated function"
    meshes = {s.mesh for s in found.values()}
    if len(meshes) > 1:
        return "sharded arguments on different meshes"
    mesh = meshes.pop()
    rows = set()
    for n, s in found.items():
        if any(s.spec.axis_names(d) for d in range(1, len(s.spec))):
            return f"{n} is split along an axis other than 0 ({s.spec!r}); only axis 0 is split per shard"
        if len(s.spec) == 0 or s.shards(0) == 1:
            return f"{n} is not split along axis 0 ({s.spec!r})"
        if s.shards(0) != mesh.size:
            return f"{n} is split over {s.shards(0)} of the mesh's {mesh.size} devices; only a split over all of them runs per shard"
        rows.add(int(np.shape(call_args[names.index(n)])[0]))
    if len(rows) > 1:
        return f"sharded arguments of different lengths along axis 0 ({sorted(rows)})"
    return None


def _make(spec: Any, shapes: dict[str, tuple], ranks: dict[str, int], mesh: Any, compiled: bool, fn: Any) -> Plan:
    from ..cache import load_module, module_name_for, write_if_changed
    from ..variant import Generated
    from .runner import Stage

    what = f"{fn.__qualname__}"
    try:
        made = plan(spec.gen, shapes, ranks, mesh.size, what)
    except Exception as err:  # a fault of this walk must not cost the user the call: run unsharded, and say so
        return Plan(False, f"the sharding propagation failed ({type(err).__name__}: {err}); please report it")
    if isinstance(made, Plan):
        return made
    text, stage_specs, p = made
    tag = hashlib.sha1(repr((sorted(shapes.items()), sorted(ranks.items()))).encode()).hexdigest()[:8]
    path = spec.gen.path.with_name(f"{spec.gen.path.stem}.sharded{mesh.size}_{tag}.py")
    with _LOCK:
        write_if_changed(path, text)
    name = module_name_for(path)
    module = load_module(path, name + "_py", spec.gen.bound)
    stages = {}
    # every function of the file but the driver (a stage may call the file's other functions);
    # the CPU runner compiles them (numba_backend.parallel_cpu: one thread per shard)
    functions = [f.name for f in ast.parse(text).body if isinstance(f, ast.FunctionDef) and f.name != p.driver]
    for s in stage_specs:
        meta = {"entry": s["name"], "functions": functions, "driver": p.driver,
                "params": [["arg", a] for a in inspect.signature(getattr(module, s["name"])).parameters]}
        gen = Generated(path, name, meta, dict(spec.gen.bound))
        stages[s["name"]] = Stage(s["name"], path, getattr(module, s["name"]), s["batched"], s["outputs"], per_example=False, gen=gen)
    p.path = path
    p.module = module
    p.stages = list(stages.values())
    p.stage_objects = stages
    p.runner = _runner(mesh, compiled)
    return p
