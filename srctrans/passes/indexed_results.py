"""Indexed results: ``pair(x)[1]``, a tuple your function returns, indexed, becomes an unpacking.

Input: a function in A-normal form (:mod:`srctrans.passes.anf`), where ``np.sum(pair(x)[1])``
reads ``t1 = pair(x)``, ``t2 = t1[1]``, ``t3 = np.sum(t2)``. Output contract: for every name
``t`` that one statement assigns, with a call of a function of yours that returns a tuple of
the same length ``N`` at every ``return``, and that the function reads only as ``t[k]`` (``k``
an integer literal, ``-N <= k < N``): the line ``t_0, t_1 = t`` follows ``t = pair(x)``
(fresh names), and each ``u = t[k]`` reads ``u = t_k``. Nothing else changes.

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


def index_results(node: cst.FunctionDef, arity: Callable[[cst.BaseExpression], int | None]) -> cst.FunctionDef:
    """The rewrite described in the module docstring; ``arity(func)`` is the length of the tuple
    that the called ``func`` (an expression) returns at every ``return``, or None."""
    assigned: Counter = Counter()
    calls: dict[str, int] = {}  # name -> N, for names assigned by a call of a tuple-returning function
    reads: Counter = Counter()
    indexed: dict[str, list[int]] = {}

    class Facts(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                for name in targets_of(t.target):
                    assigned[name] += 1
            target = n.targets[0].target
            if len(n.targets) == 1 and isinstance(target, cst.Name) and isinstance(n.value, cst.Call):
                count = arity(n.value.func)
                if count is not None:
                    calls[target.value] = count
            if isinstance(n.value, cst.Subscript) and isinstance(n.value.value, cst.Name):
                k = _index(n.value)
                if k is not None:
                    indexed.setdefault(n.value.value.value, []).append(k)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            for name in targets_of(n.target):
                assigned[name] += 1

        def visit_For(self, n: cst.For) -> None:
            for name in targets_of(n.target):
                assigned[name] += 1

        def visit_Name(self, n: cst.Name) -> None:
            reads[n.value] += 1

    node.body.visit(Facts())
    chosen: dict[str, int] = {}
    for name, count in calls.items():
        ks = indexed.get(name, [])
        # every read is an index (reads counts the target once, and each t[k] once)
        if assigned[name] == 1 and ks and reads[name] == 1 + len(ks) and all(-count <= k < count for k in ks):
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
            if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value in parts:
                names = parts[value.value.value]
                return updated.with_changes(value=cst.Name(names[_index(value) % len(names)]))
            return updated

        def leave_SimpleStatementLine(self, original, updated):
            small = updated.body[0] if len(updated.body) == 1 else None
            if not isinstance(small, cst.Assign) or not isinstance(small.targets[0].target, cst.Name):
                return updated
            name = small.targets[0].target.value
            if name not in parts or not isinstance(small.value, cst.Call):
                return updated
            unpack = cst.parse_statement(f"{', '.join(parts[name])}{',' if len(parts[name]) == 1 else ''} = {name}\n")
            return cst.FlattenSentinel([updated, unpack])

    return node.with_changes(body=node.body.visit(Rewrite()))
