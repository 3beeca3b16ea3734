"""Indexed results: ``pair(x)[1]``, ``np.linalg.slogdet(a)[1]``, ``t = (x, y); t[0]``: a tuple
with a known length, indexed with constants, becomes an unpacking.

Input: a function in A-normal form (:mod:`srctrans.passes.anf`), where ``np.sum(pair(x)[1])``
reads ``t1 = pair(x)``, ``t2 = t1[1]``, ``t3 = np.sum(t2)``. Output contract: for every name
``t`` that one statement assigns, with a call of a function of yours that returns a tuple of
the same length ``N`` at every ``return`` (or of a library function returning ``N`` arrays,
:func:`library_arity`; or a display ``(x, y)``/``[x, y]`` of ``N`` elements), and that the
function reads only as ``t[k]`` (``k`` an integer literal, ``-N <= k < N``, at least once)
and ``len(t)``: the line ``t_0, t_1 = t`` follows ``t = pair(x)`` (fresh names), each
``u = t[k]`` reads ``u = t_k`` and each ``u = len(t)`` reads ``u = N``. Nothing else changes.

Reverse mode, forward mode and vmap handle the unpacking (a tuple's adjoint is the tuple of
its parts' adjoints) where an index into a tuple has no rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import libcst as cst

from ..analysis.activity import targets_of
from ..analysis.names import NameGen, scan


def _index(sub: cst.Subscript) -> int | None:
    """The integer literal ``k`` of ``t[k]`` (negative too), else None."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    value = sub.slice[0].slice.value
    sign = 1
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        sign, value = -1, value.expression
    return sign * int(value.value) if isinstance(value, cst.Integer) else None


def _len_of(value: cst.BaseExpression) -> str | None:
    """``t`` of ``len(t)``, else None."""
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "len"
        and len(value.args) == 1
        and isinstance(value.args[0].value, cst.Name)
        and not value.args[0].star
        and value.args[0].keyword is None
    ):
        return value.args[0].value.value
    return None


def _display_length(value: cst.Tuple | cst.List) -> int | None:
    """The length of ``(x, y)`` or ``[x, y]``; None with a starred element."""
    if any(isinstance(e, cst.StarredElement) for e in value.elements):
        return None
    return len(value.elements)


def _literal(node: cst.BaseExpression | None):
    """The value of an integer, string, True/False/None literal (a negative integer too),
    or of a tuple or list of them; ``_NOT_LITERAL`` otherwise."""
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0) if node.value.strip("0_") else 0
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal(node.expression)
        return -inner if isinstance(inner, int) and not isinstance(inner, bool) else _NOT_LITERAL
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        if _display_length(node) is None:
            return _NOT_LITERAL
        items = [_literal(e.value) for e in node.elements]
        return _NOT_LITERAL if any(i is _NOT_LITERAL for i in items) else items
    return _NOT_LITERAL


_NOT_LITERAL = object()


def library_arity(fn, call: cst.Call) -> int | None:
    """The length of the tuple (or list) that ``call``, a call of the library function ``fn``,
    returns whatever its arrays: ``np.linalg.slogdet(a)`` 2, ``np.linalg.svd(a)`` 3,
    ``np.split(x, 4)`` 4, ``np.split(x, [1, 3])`` 3, ``np.meshgrid(x, y)`` 2; None when it
    depends on more than the call's text shows."""
    import numpy as np

    if fn is None or any(a.star for a in call.args):
        return None
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}

    def arg(i: int, name: str, default=None):
        if len(positional) > i:
            return _literal(positional[i])
        return _literal(keywords[name]) if name in keywords else default

    def among(*functions) -> bool:
        return any(fn is f for f in functions)

    try:
        if among(np.linalg.slogdet, np.linalg.eigh, np.linalg.eig):
            return 2
        if fn is np.linalg.lstsq:
            return 4
        if among(np.divmod, np.modf, np.frexp):
            return 2 if "out" not in keywords else None
        if fn is np.linalg.qr:
            return 2 if arg(1, "mode", "reduced") in ("reduced", "complete") else None
        if fn is np.linalg.svd:
            return 3 if arg(2, "compute_uv", True) is True else None
        if among(np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit):
            sections = arg(1, "indices_or_sections", _NOT_LITERAL)
            if isinstance(sections, bool) or sections is None:
                return None
            if isinstance(sections, int):
                return sections if sections > 0 else None
            return len(sections) + 1 if isinstance(sections, list) else None
        if among(np.meshgrid, np.broadcast_arrays) and not keywords.keys() - {"indexing", "sparse", "copy", "subok"}:
            return len(positional) or None
        if among(np.atleast_1d, np.atleast_2d, np.atleast_3d) and len(positional) > 1 and not keywords:
            return len(positional)
    except (TypeError, ValueError):  # a call NumPy itself would refuse
        return None
    return None


def index_results(node: cst.FunctionDef, arity: Callable[[cst.Call], int | None]) -> cst.FunctionDef:
    """The rewrite described in the module docstring; ``arity(call)`` is the length of the tuple
    that ``call`` returns (a function of yours, at every ``return``; a library function, as
    :func:`library_arity` tells), or None. A tuple or list display ``t = (x, y)`` has its own
    length."""
    assigned: Counter = Counter()
    values: dict[str, cst.BaseExpression] = {}  # name -> the value of an assignment to it alone
    reads: Counter = Counter()
    indexed: dict[str, list[int]] = {}
    lengths: Counter = Counter()  # name -> how many ``u = len(t)`` read it

    class Facts(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                for name in targets_of(t.target):
                    assigned[name] += 1
            target = n.targets[0].target
            if len(n.targets) == 1 and isinstance(target, cst.Name):
                values[target.value] = n.value
            if isinstance(n.value, cst.Subscript) and isinstance(n.value.value, cst.Name):
                k = _index(n.value)
                if k is not None:
                    indexed.setdefault(n.value.value.value, []).append(k)
            measured = _len_of(n.value)
            if measured is not None:
                lengths[measured] += 1

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            for name in targets_of(n.target):
                assigned[name] += 1

        def visit_For(self, n: cst.For) -> None:
            for name in targets_of(n.target):
                assigned[name] += 1

        def visit_Name(self, n: cst.Name) -> None:
            reads[n.value] += 1

    node.body.visit(Facts())

    params = set(scan(node).params)

    class Constants(cst.CSTTransformer):  # np.split(x, t1) after t1 = [1, 3]: the call as written
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
            value = values.get(updated.value)
            if (
                assigned[updated.value] == 1
                and updated.value not in params
                and value is not None
                and _literal(value) is not _NOT_LITERAL
            ):
                return value
            return updated

    calls: dict[str, int] = {}  # name -> N, for names assigned a tuple of N values
    for name, value in values.items():
        count = None
        if isinstance(value, (cst.Tuple, cst.List)):
            count = _display_length(value)
        elif isinstance(value, cst.Call):
            call = value.with_changes(args=[a.with_changes(value=a.value.visit(Constants())) for a in value.args])
            count = arity(call)
        if count is not None:
            calls[name] = count
    chosen: dict[str, int] = {}
    for name, count in calls.items():
        ks = indexed.get(name, [])
        # every read is an index or a len (reads counts the target once, each t[k] and len(t) once)
        whole = 1 + len(ks) + lengths[name]
        if assigned[name] == 1 and ks and reads[name] == whole and all(-count <= k < count for k in ks):
            chosen[name] = count
    if not chosen:
        return node
    gen = NameGen(scan(node).all)
    parts = {name: [gen.fresh(f"{name}_{k}", numbered=False) for k in range(count)] for name, count in chosen.items()}

    class Rewrite(cst.CSTTransformer):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False  # a nested function keeps its own names

        def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
            value = updated.value
            measured = _len_of(value)
            if measured in parts:
                return updated.with_changes(value=cst.Integer(str(len(parts[measured]))))
            if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value in parts:
                names = parts[value.value.value]
                return updated.with_changes(value=cst.Name(names[_index(value) % len(names)]))
            return updated

        def leave_SimpleStatementLine(self, original, updated):
            small = updated.body[0] if len(updated.body) == 1 else None
            if not isinstance(small, cst.Assign) or not isinstance(small.targets[0].target, cst.Name):
                return updated
            name = small.targets[0].target.value
            if name not in parts or not isinstance(small.value, (cst.Call, cst.Tuple, cst.List)):
                return updated
            unpack = cst.parse_statement(f"{', '.join(parts[name])}{',' if len(parts[name]) == 1 else ''} = {name}\n")
            return cst.FlattenSentinel([updated, unpack])

    return node.with_changes(body=node.body.visit(Rewrite()))
