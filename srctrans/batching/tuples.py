"""Tuples, lists and dicts of the function's own making, taken apart for the vectorized rewrite.

Input: a function in A-normal form (see :mod:`srctrans.passes.anf`). A *display name* is
a local name assigned once, by a tuple, list or dict display (``pair = a, t1``,
``d = {"w": w, "s": np.sum(a)}``), and read only where its elements can be named when the
code is generated:

- unpacked: ``u, v = pair`` (nested targets too; tuples and lists);
- indexed with a constant: ``t2 = pair[0]``, ``t5 = pair[-1]``, ``t4 = d["s"]``;
- copied: ``q = pair``;
- returned: ``return t3, pair`` (tuples);
- as an element of another display name's display.

Each read becomes the elements themselves (``t2 = a``, ``u = a``, ``return t3, (a, t1)``)
and the display's line goes (its comments move to the next line). An element stays as
written when nothing writes its name between the display and the last read, all reads
being later in the same block; otherwise the display's line becomes a copy of that element
(``pair_0 = a``), read in its place, which is exactly what the display held. A dict's value
that is not an atom is computed into a name of its own where the dict was made
(``d_s = np.sum(a)``). The pass repeats until no display name is left, so nested displays
come apart from the inside out.

Output: the function in A-normal form, except that a returned value may be a nested tuple
display of atoms. Displays read any other way (passed to a function, written into, looped
over) are left as they are.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ..analysis.names import NameGen, params_of
from ..passes.anf import ANF, is_atom

_CODE = cst.Module(body=[])
_TEMPORARY = re.compile(r"^t\d+$")  # A-normal form's temporaries


@dataclass(frozen=True)
class _Display:
    kind: str  # "tuple", "list" or "dict"
    keys: tuple  # 0 .. n-1 for a tuple or list; the constant keys of a dict
    values: tuple  # atoms, nested displays, or (in a dict) any expression


def _display(expr: cst.BaseExpression) -> _Display | None:
    """The display ``expr`` as data; None when it is not one whose elements can all be named."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        if any(isinstance(el, cst.StarredElement) for el in expr.elements):
            return None
        values = tuple(el.value for el in expr.elements)
        if not all(is_atom(v) or _display(v) is not None for v in values):
            return None
        return _Display("tuple" if isinstance(expr, cst.Tuple) else "list", tuple(range(len(values))), values)
    if isinstance(expr, cst.Dict):
        keys, values = [], []
        for el in expr.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, (cst.SimpleString, cst.Integer)):
                return None
            keys.append(ast.literal_eval(_CODE.code_for_node(el.key)))
            values.append(el.value)
        if len(set(keys)) != len(keys) or any(_is_display(v) and _display(v) is None for v in values):
            return None
        return _Display("dict", tuple(keys), tuple(values))
    return None


def _is_display(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Tuple, cst.List, cst.Dict))


def _constant_key(index: cst.BaseExpression) -> Any:
    """The value of a constant index (``0``, ``-1``, ``"s"``), else None."""
    if isinstance(index, (cst.Integer, cst.SimpleString)) or (
        isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.Minus) and isinstance(index.expression, cst.Integer)
    ):
        return ast.literal_eval(_CODE.code_for_node(index))
    return None


def _element(display: _Display, key: Any) -> Any:
    """The position of ``key`` in ``display``, or None when it names no element."""
    if display.kind == "dict":
        return display.keys.index(key) if key in display.keys else None
    n = len(display.keys)
    if isinstance(key, int) and not isinstance(key, bool) and -n <= key < n:
        return key % n
    return None


def _subscript_key(value: cst.BaseExpression, names) -> tuple[str, Any] | None:
    """``(T, key)`` for ``T[key]`` with a constant key and ``T`` one of ``names``."""
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value in names):
        return None
    if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
        return None
    key = _constant_key(value.slice[0].slice.value)
    return None if key is None else (value.value.value, key)


def _matches(target: cst.BaseExpression, display: _Display, displays: dict[str, _Display]) -> bool:
    """Whether an unpacking target has the display's shape (nested targets: nested displays,
    or display names)."""
    if display.kind == "dict" or not isinstance(target, (cst.Tuple, cst.List)):
        return False
    if len(target.elements) != len(display.values) or any(isinstance(el, cst.StarredElement) for el in target.elements):
        return False
    for el, value in zip(target.elements, display.values):
        t = el.value
        if isinstance(t, cst.Name):
            continue
        inner = displays.get(value.value) if isinstance(value, cst.Name) else _display(value) if _is_display(value) else None
        if inner is None or not _matches(t, inner, displays):
            return False
    return True


def _unpacked(target: cst.BaseExpression, elements: list) -> list[cst.SimpleStatementLine]:
    """``u, (v, w) = <elements>`` as one assignment per name, in order (an element that is
    a name of a tuple is unpacked from it: ``v, w = t1``)."""
    lines = []
    for el, value in zip(target.elements, elements):
        t = el.value
        if isinstance(t, cst.Name):
            lines.append(_assign(t.value, value))
        elif isinstance(value, (cst.Tuple, cst.List)):
            lines += _unpacked(t, [e.value for e in value.elements])
        else:
            t = t.with_changes(lpar=[], rpar=[]) if isinstance(t, cst.Tuple) else t
            lines.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(t)], value)]))
    return lines


class _Reads(cst.CSTVisitor):
    """Every read of one of ``names`` (a ``Name`` node), targets and attribute names aside."""

    def __init__(self, names) -> None:
        super().__init__()
        self.names = names
        self.found: list[cst.Name] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        if isinstance(node.target, (cst.Subscript, cst.Attribute)):  # writing into it reads it
            node.target.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.found.append(node)


class _Writes(cst.CSTVisitor):
    """How many times each name is written (assigned, updated, written into, a loop's target)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter = Counter()

    def _count(self, target: cst.BaseExpression) -> None:
        while isinstance(target, (cst.Subscript, cst.Attribute)):
            target = target.value
        if isinstance(target, cst.Name):
            self.counts[target.value] += 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._count(el.value)
        elif isinstance(target, cst.StarredElement):
            self._count(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._count(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._count(node.target)
        self.counts[_base(node.target)] += 1  # never assigned once

    def visit_For(self, node: cst.For) -> None:
        self._count(node.target)
        self._count(node.target)  # assigned on every iteration

    def visit_Del(self, node: cst.Del) -> None:
        self._count(node.target)


def _base(target: cst.BaseExpression) -> str:
    while isinstance(target, (cst.Subscript, cst.Attribute)):
        target = target.value
    return target.value if isinstance(target, cst.Name) else ""


def _written(stmt: cst.CSTNode) -> set[str]:
    w = _Writes()
    stmt.visit(w)
    return set(w.counts)


def _blocks(stmts: list, key: Any, where: dict, blocks: dict, chain: tuple = ()) -> None:
    """Record each block's statements (``blocks[key]``) and, for each small statement, its place:
    ``where[id(small)]``, the ``(block key, index)`` of every statement enclosing it, outermost first."""
    blocks[key] = stmts
    for i, st in enumerate(stmts):
        here = (*chain, (key, i))
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                where[id(small)] = here
            continue
        if isinstance(st, (cst.If, cst.For, cst.While)):
            _blocks(list(st.body.body), ("body", id(st)), where, blocks, here)
            orelse = st.orelse
            if isinstance(orelse, cst.Else):
                _blocks(list(orelse.body.body), ("else", id(st)), where, blocks, here)
            elif orelse is not None:
                _blocks([orelse], ("elif", id(st)), where, blocks, here)


@dataclass
class _Use:
    small: cst.CSTNode  # the statement that reads the display name
    kind: str  # "unpack", "index", "copy", "return", "element"
    name: cst.Name  # the Name node read
    extra: Any = None  # the key for "index"; the display name holding it for "element"


def _uses(small: cst.CSTNode, displays: dict[str, _Display]) -> list[_Use]:
    """The reads of display names in ``small`` that the pass can replace."""
    out: list[_Use] = []
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
        if isinstance(value, cst.Name) and value.value in displays:
            if isinstance(target, cst.Name):
                out.append(_Use(small, "copy", value))
            elif _matches(target, displays[value.value], displays):
                out.append(_Use(small, "unpack", value))
        found = _subscript_key(value, displays)
        if found is not None and isinstance(target, cst.Name) and _element(displays[found[0]], found[1]) is not None:
            out.append(_Use(small, "index", value.value, found[1]))
        if isinstance(target, cst.Name) and target.value in displays and _is_display(value):
            for name in _names_in_display(value):
                if name.value in displays:
                    out.append(_Use(small, "element", name, target.value))
    if isinstance(small, cst.Return) and small.value is not None:
        value = small.value
        names = [value] if isinstance(value, cst.Name) else _names_in_display(value) if isinstance(value, cst.Tuple) else []
        out += [_Use(small, "return", n) for n in names if n.value in displays and displays[n.value].kind == "tuple"]
    return out


def _names_in_display(expr: cst.BaseExpression) -> list[cst.Name]:
    """The names that are elements of a display, nested displays included."""
    out: list[cst.Name] = []
    if isinstance(expr, (cst.Tuple, cst.List)):
        values = [el.value for el in expr.elements if not isinstance(el, cst.StarredElement)]
    elif isinstance(expr, cst.Dict):
        values = [el.value for el in expr.elements if isinstance(el, cst.DictElement)]
    else:
        return out
    for v in values:
        if isinstance(v, cst.Name):
            out.append(v)
        else:
            out += _names_in_display(v)
    return out


def split_displays(node: cst.FunctionDef, gen: NameGen) -> cst.FunctionDef:
    """``node`` with its display names taken apart (see the module docstring)."""
    copies: set[str] = set()  # temporaries that now copy an element (``t2 = a`` from ``t2 = pair[0]``)
    for _ in range(20):
        new = _round(node, gen, copies)
        if new is None:
            break
        node = new
    return _forward(node, copies) if copies else node


def _forward(node: cst.FunctionDef, temps: set[str]) -> cst.FunctionDef:
    """``t2 = a`` then ``t3 = t2 + v`` -> ``t3 = a + v``, for the temporaries ``temps`` assigned
    once, when every read comes later in the same block and nothing writes ``a`` in between."""
    writes = _Writes()
    node.body.visit(writes)
    lines: dict[str, cst.Assign] = {}
    smalls = _smalls(node)
    for small in smalls:
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Name):
            target = small.targets[0].target
            if isinstance(target, cst.Name) and target.value in temps and writes.counts[target.value] == 1:
                lines[target.value] = small
    if not lines:
        return node
    readers: dict[str, list] = {name: [] for name in lines}
    found: dict[str, list[cst.Name]] = {name: [] for name in lines}
    for small in smalls:
        reads = _Reads(set(lines))
        small.visit(reads)
        for n in reads.found:
            readers[n.value].append(small)
            found[n.value].append(n)
    everywhere = _Reads(set(lines))
    node.body.visit(everywhere)
    where: dict[int, tuple] = {}
    blocks: dict[Any, list] = {}
    body = list(node.body.body)
    _blocks(body, "top", where, blocks)
    replace: dict[int, list | None] = {}
    names: dict[int, cst.BaseExpression] = {}
    for name, small in lines.items():
        if sum(1 for n in everywhere.found if n.value == name) != len(found[name]) or not readers[name]:
            continue  # read in a loop's or a branch's header
        if small.value.value in lines or any(id(r) in replace for r in readers[name]):
            continue  # one at a time where they meet (``t3 = t2`` after ``t2 = a``)
        written = _written_before_reads(small, readers[name], where, blocks)
        if written is None or small.value.value in written:
            continue
        replace[id(small)] = None
        for n in found[name]:
            names[id(n)] = small.value
    return node.with_changes(body=node.body.with_changes(body=_apply(body, replace, names))) if replace else node


def _smalls(node: cst.FunctionDef) -> list[cst.CSTNode]:
    """The small statements of ``node`` (not of functions defined in it)."""
    out: list[cst.CSTNode] = []

    class Smalls(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
            out.extend(n.body)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

    node.body.visit(Smalls())
    return out


def _round(node: cst.FunctionDef, gen: NameGen, copies: set[str]) -> cst.FunctionDef | None:
    body = list(node.body.body)
    writes = _Writes()
    node.body.visit(writes)
    params = set(params_of(node))
    found: dict[str, list[cst.Assign]] = {}

    class Defs(cst.CSTVisitor):
        def visit_Assign(self, small: cst.Assign) -> None:
            if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) and _display(small.value):
                found.setdefault(small.targets[0].target.value, []).append(small)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

    node.body.visit(Defs())
    # a name every assignment of which is a display of the same shape (a loop's state, ``h, c``)
    defs = {name: smalls for name, smalls in found.items()
            if name not in params and len(smalls) == writes.counts[name]
            and len({_shape(_display(small.value)) for small in smalls}) == 1}
    displays = {name: _display(smalls[0].value) for name, smalls in defs.items()}
    if not defs:
        return None

    uses: dict[str, list[_Use]] = {name: [] for name in defs}
    for small in _smalls(node):
        for use in _uses(small, displays):
            uses[use.name.value].append(use)
    reads = _Reads(set(defs))
    node.body.visit(reads)
    where: dict[int, tuple] = {}
    blocks: dict[Any, list] = {}
    _blocks(body, "top", where, blocks)
    known = {id(u.name) for us in uses.values() for u in us}
    bad = {n.value for n in reads.found if id(n) not in known}
    bad |= {t for t, smalls in defs.items()
            if any(id(small) not in where for small in smalls) or any(id(u.small) not in where for u in uses[t])}
    good = set(defs) - bad
    while True:  # an element of a display that is not taken apart stays whole
        drop = {t for t in good if any(u.kind == "element" and u.extra not in good for u in uses[t])}
        if not drop:
            break
        good -= drop
    # from the inside out: displays none of whose elements is another one still to take apart
    ready = sorted(t for t in good if not any(n.value in good for small in defs[t] for n in _names_in_display(small.value)))
    if not ready:
        return None

    replace: dict[int, list[cst.BaseStatement] | None] = {}  # id(small) -> its new lines (None: gone)
    names: dict[int, cst.BaseExpression] = {}  # id(Name node) -> the value in its place
    for t in ready:
        _take_apart(t, defs[t], displays[t], uses[t], where, blocks, gen, replace, names, copies)
    new_body = _apply(body, replace, names)
    return node.with_changes(body=node.body.with_changes(body=new_body))


def _written_before_reads(small, readers: list, where: dict, blocks: dict) -> set[str] | None:
    """The names written from ``small`` (excluded) to its last reader (included) when every
    reader comes later in ``small``'s block; None otherwise (a reader in an outer block or
    an earlier iteration of a loop)."""
    key, i = where[id(small)][-1]
    last = i
    for reader in readers:
        place = next((j for (k, j) in where[id(reader)] if k == key), None)
        if place is None or place <= i:
            return None
        last = max(last, place)
    written: set[str] = set()
    for st in blocks[key][i + 1 : last + 1]:
        written |= _written(st)
    return written


def _take_apart(t, smalls, display, uses, where, blocks, gen, replace, names, copies: set[str]) -> None:
    def base(path: tuple) -> str:
        return "_".join([t, *(str(k) if isinstance(k, int) or k.isidentifier() else "item" for k in path)])

    if len(smalls) > 1:  # assigned several times: one name per element, assigned where the display was
        fixed: dict[tuple, str] = {}
        for small in smalls:
            prefix: list[cst.BaseStatement] = []
            for path, value in _leaves(_display(small.value)):
                if path not in fixed:
                    fixed[path] = gen.fresh(base(path), numbered=False)
                prefix.append(_assign(fixed[path], value if is_atom(value) else ANF(gen).op(value, prefix)))
            replace[id(small)] = prefix
        elements = _rebuild(display, fixed)
    else:
        (small,) = smalls
        prefix = []
        written = _written_before_reads(small, [u.small for u in uses], where, blocks)

        def leaf(value: cst.BaseExpression, path: tuple) -> cst.BaseExpression:
            if _is_display(value):
                inner = _display(value)
                return _render(inner, [leaf(v, (*path, k)) for k, v in zip(inner.keys, inner.values)])
            if is_atom(value) and (not isinstance(value, cst.Name) or (written is not None and value.value not in written)):
                return value
            if not is_atom(value):  # a dict's value that is an operation: computed where the dict was made
                return ANF(gen).atom(value, prefix, hint=base(path))
            name = gen.fresh(base(path), numbered=False)
            prefix.append(_assign(name, value))
            return cst.Name(name)

        elements = [leaf(v, (k,)) for k, v in zip(display.keys, display.values)]
        replace[id(small)] = prefix or None
    for u in uses:
        if u.kind in ("copy", "element"):
            names[id(u.name)] = _render(display, elements)
        elif u.kind == "return":
            whole = u.small.value is u.name
            names[id(u.name)] = _render(display, elements, parens=not whole)
        elif u.kind == "index":
            (target,) = [tg.target for tg in u.small.targets]
            value = elements[_element(display, u.extra)]
            replace[id(u.small)] = [_assign(target.value, value)]
            if isinstance(value, cst.Name) and _TEMPORARY.match(target.value):
                copies.add(target.value)
        else:  # unpack
            replace[id(u.small)] = _unpacked(u.small.targets[0].target, elements)


def _shape(display: _Display) -> tuple:
    return (display.kind, display.keys, tuple(_shape(_display(v)) if _is_display(v) else "*" for v in display.values))


def _leaves(display: _Display, path: tuple = ()) -> list[tuple[tuple, cst.BaseExpression]]:
    """Each element that is not a display, with its path of keys."""
    out = []
    for k, v in zip(display.keys, display.values):
        out += _leaves(_display(v), (*path, k)) if _is_display(v) else [((*path, k), v)]
    return out


def _rebuild(display: _Display, names: dict[tuple, str], path: tuple = ()) -> list[cst.BaseExpression]:
    """The elements of ``display`` with each leaf the name ``names`` gives its path."""
    out: list[cst.BaseExpression] = []
    for k, v in zip(display.keys, display.values):
        if _is_display(v):
            inner = _display(v)
            out.append(_render(inner, _rebuild(inner, names, (*path, k))))
        else:
            out.append(cst.Name(names[(*path, k)]))
    return out


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    if _is_display(value):
        value = value.with_changes(lpar=[], rpar=[]) if isinstance(value, cst.Tuple) and value.elements else value
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _render(display: _Display, elements: list, parens: bool = True) -> cst.BaseExpression:
    if display.kind == "dict":
        return cst.Dict([cst.DictElement(cst.SimpleString(repr(k)) if isinstance(k, str) else cst.Integer(str(k)), v)
                         for k, v in zip(display.keys, elements)])
    items = [cst.Element(v) for v in elements]
    if display.kind == "list":
        return cst.List(items)
    if len(items) == 1:
        items = [cst.Element(elements[0], comma=cst.Comma())]
    if parens or not items:
        return cst.Tuple(items)
    return cst.Tuple(items, lpar=[], rpar=[])


class _Substitute(cst.CSTTransformer):
    def __init__(self, names: dict[int, cst.BaseExpression]) -> None:
        super().__init__()
        self.names = names

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.names.get(id(original), updated)


def _apply(stmts: list, replace: dict, names: dict) -> list:
    """The block with each small statement replaced and each read substituted; comments of a
    line that goes move to the next line."""
    out: list = []
    carry: list = []
    sub = _Substitute(names)
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            lines: list = []
            for small in st.body:
                if id(small) in replace:
                    lines += replace[id(small)] or []
                else:
                    lines.append(cst.SimpleStatementLine([small.visit(sub)]))
            lead = [*carry, *st.leading_lines]
            if not lines:
                carry = lead
                continue
            lines[0] = lines[0].with_changes(leading_lines=[*lead, *lines[0].leading_lines])
            carry = []
            out += lines
            continue
        if isinstance(st, (cst.If, cst.For, cst.While)):
            st = _apply_compound(st, replace, names)
        if carry:
            st = st.with_changes(leading_lines=[*carry, *st.leading_lines])
            carry = []
        out.append(st)
    if carry or not out:
        out.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=carry))
    return out


def _apply_compound(st, replace: dict, names: dict):
    sub = _Substitute(names)
    changes: dict = {"body": st.body.with_changes(body=_apply(list(st.body.body), replace, names))}
    if isinstance(st, (cst.If, cst.While)):
        changes["test"] = st.test.visit(sub)
    else:
        changes["iter"] = st.iter.visit(sub)
    orelse = st.orelse
    if isinstance(orelse, cst.Else):
        changes["orelse"] = orelse.with_changes(body=orelse.body.with_changes(body=_apply(list(orelse.body.body), replace, names)))
    elif orelse is not None:
        (changes["orelse"],) = _apply([orelse], replace, names)
    return st.with_changes(**changes)
