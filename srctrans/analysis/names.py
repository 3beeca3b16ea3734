"""Names: which names a function binds locally and which it reads from outside.

:func:`scan` returns the parameters, the locally bound names and, for every
free name (read but never bound here), the first node that reads it, so a
later error can point at it. :class:`NameGen` hands out fresh, deterministic
names that never collide with the user's (``t1``, ``t2``; ``x_bar``, ``x_bar_1``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import libcst as cst


@dataclass(frozen=True)
class Names:
    params: tuple[str, ...]
    local: frozenset[str]
    free: dict[str, cst.Name]  # name -> first node reading it
    attributes_of: dict[str, dict[str, cst.Attribute]]  # base name -> {attr: first node}

    @property
    def all(self) -> frozenset[str]:
        return self.local | frozenset(self.free) | frozenset(self.params)


class _Scan(cst.CSTVisitor):
    def __init__(self) -> None:
        self.stored: set[str] = set()
        self.loads: dict[str, cst.Name] = {}
        self.attrs: dict[str, dict[str, cst.Attribute]] = {}

    def _store(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.stored.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._store(el.value)
        elif isinstance(target, cst.StarredElement):
            self._store(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._store(node.target)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name):
            self.attrs.setdefault(node.value.value, {}).setdefault(node.attr.value, node)
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.loads.setdefault(node.value, node)


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` as text, or None when ``node`` is not names and dots."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def params_of(node: cst.FunctionDef | cst.Lambda) -> tuple[str, ...]:
    p = node.params
    return tuple(q.name.value for q in (*p.posonly_params, *p.params, *p.kwonly_params))


def scan(node: cst.FunctionDef | cst.Lambda) -> Names:
    """Parameters, local names and free names of a function node (nodes do not change: the
    recent ones are scanned once; libcst's nodes take no weak references, so the memo holds
    the last few hundred)."""
    held = _SCANNED.get(id(node))
    if held is not None and held[0] is node:
        _SCANNED.move_to_end(id(node))
        return held[1]
    names = _scan(node)
    _SCANNED[id(node)] = (node, names)
    if len(_SCANNED) > 512:
        _SCANNED.popitem(last=False)
    return names


_SCANNED: OrderedDict[int, tuple[cst.CSTNode, Names]] = OrderedDict()


def _scan(node: cst.FunctionDef | cst.Lambda) -> Names:
    v = _Scan()
    node.body.visit(v)  # (not the defaults: their values are the function object's, bound at ``def``)
    params = params_of(node)
    local = frozenset(v.stored) - frozenset(params)
    bound = local | frozenset(params)
    free = {name: n for name, n in v.loads.items() if name not in bound}
    return Names(params=params, local=local, free=free, attributes_of=v.attrs)


class NameGen:
    """Fresh names, deterministic, never equal to a name already taken."""

    def __init__(self, taken: set[str] | frozenset[str]) -> None:
        self.taken = set(taken)
        self.counters: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        self.taken.add(name)

    def fresh(self, base: str = "t", numbered: bool = True) -> str:
        """``t1, t2, ...`` for temporaries; ``x_bar`` then ``x_bar_1`` when not numbered."""
        if not numbered and base not in self.taken:
            self.taken.add(base)
            return base
        n = self.counters.get(base, 0)
        sep = "" if numbered else "_"
        while True:
            n += 1
            name = f"{base}{sep}{n}"
            if name not in self.taken:
                self.counters[base] = n
                self.taken.add(name)
                return name
