"""A-normal form: one operation per statement, every operand a name or a constant.

Input: a desugared function (see :mod:`srctrans.passes.desugar`). Output contract:

*Atoms* are names, numbers, strings, and a unary minus or plus applied to a number.
After this pass every statement in the body is one of:

- ``name = atom``
- ``name = OP`` where OP is one operation on atoms: a binary or unary operation, a
  single comparison, a call ``f(atom, ..., key=atom)`` whose ``f`` is a name or a
  dotted chain of names (``np.linalg.norm``) or ``name.method`` (``a.T.reshape(2, -1)``
  reads ``t1 = a.T`` first: ``.T``, ``.mT``, ``.real``, ``.imag`` are arrays), a subscript
  ``name[index]``, an attribute ``name.attr``, or a tuple/list display of atoms.
  An *index* or call argument is an atom, a slice of atoms, or a tuple of those.
  List comprehensions are kept whole (their own scope is not flattened).
- ``name[index] = atom`` and ``name[index] op= atom``; ``name op= atom``
- ``a, b = name`` (tuple unpacking of a name); ``a, b = e1, e2`` into plain names
  becomes ``a = e1`` then ``b = e2`` when no value reads a name assigned before it, else
  every value is computed into a temporary first (``p, q = q, p``); names only, swapped
  between arrays written in place (double buffering), stay one unpacking. Subscripts
  of a name may be targets too (``z[0], z[1] = e1, e2``); ``a, z[0] = name`` unpacks
  into names, then stores ``z[0]``
- ``f(atoms)`` as an expression statement (``print(t1)``)
- ``return atom`` or ``return a, b`` (a tuple of atoms), ``return``
- ``if name:`` with an ``else:`` block or none; ``elif`` becomes a nested ``if``
  inside ``else:`` so its test is only evaluated when it would have been
- ``for target in range(atoms):`` or ``for target in atom:`` (``target`` a name or
  a tuple of names)
- ``while name:`` where the condition is computed before the loop, at the end of
  the body and before every ``continue`` of that loop
- ``break``, ``continue``, ``pass``, ``assert atom``, ``raise ...`` (kept whole)

``a and b``, ``a or b`` and ``x if c else y`` become ``if`` statements that keep
short-circuit evaluation. Temporaries are ``t1, t2, ...``, the operands of a
division ``num``/``den``, a returned compound value ``out``; fresh names never
collide with the user's. The first statement made from an original statement
keeps its leading comments (the origin comment).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..analysis.names import NameGen, scan
from ..analysis.views import written_in_place

_COMPOUND_KEEP = (cst.ListComp,)


def _line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([small])


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return _line(cst.Assign([cst.AssignTarget(cst.Name(name))], _strip(value)))


def _strip(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


def is_atom(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return isinstance(node.expression, (cst.Integer, cst.Float, cst.Imaginary))
    return False


def _is_dotted(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


# Attributes that are arrays of the array they are read from (no module has them): a method
# called on one, ``a.T.reshape(2, -1)``, is a method of a value computed here, not a function
# of a module (``np.linalg.norm``), so the receiver gets a temporary of its own.
_ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})


def _is_array_view(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value in _ARRAY_ATTRIBUTES


def _reads(expr: cst.BaseExpression, name: str) -> bool:
    class V(cst.CSTVisitor):
        found = False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                V.found = True

    expr.visit(V())
    return V.found


@dataclass
class _Loop:
    recompute: list[cst.BaseStatement] | None  # statements re-evaluating a while condition


class ANF:
    """Rewrites one function body into A-normal form."""

    def __init__(self, names: NameGen, written: frozenset = frozenset()) -> None:
        self.names = names
        self.written = written  # names whose arrays a statement writes in place
        self.loops: list[_Loop] = []
        self.temps: set[str] = set()

    def fresh(self, base: str = "t") -> str:
        name = self.names.fresh(base, numbered=base == "t")
        self.temps.add(name)
        return name

    # --- expressions ---------------------------------------------------------

    def atom(self, expr: cst.BaseExpression, out: list, hint: str = "t") -> cst.BaseExpression:
        """Return an atom equal to ``expr``, appending the statements computing it to ``out``."""
        if is_atom(expr):
            return _strip(expr)
        value = self.op(expr, out)
        if isinstance(value, cst.Name):  # a branchy expression already left its value in a temporary
            return value
        name = self.fresh(hint)
        out.append(_assign(name, value))
        return cst.Name(name)

    def op(self, expr: cst.BaseExpression, out: list, target: str | None = None) -> cst.BaseExpression:
        """Return one operation on atoms equal to ``expr`` (statements go to ``out``).

        ``a and b``, ``x if c else y`` and chained comparisons are computed by ``if``
        statements into ``target`` (a fresh temporary when None), which is returned.
        """
        expr = _strip(expr)
        if is_atom(expr) or isinstance(expr, _COMPOUND_KEEP):
            return expr
        if isinstance(expr, cst.BinaryOperation):
            div = isinstance(expr.operator, cst.Divide)
            left = self.atom(expr.left, out, "num" if div else "t")
            right = self.atom(expr.right, out, "den" if div else "t")
            if isinstance(expr.operator, cst.Power) and isinstance(left, cst.UnaryOperation):
                left = left.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])  # (-2) ** 2, not -(2 ** 2)
            return expr.with_changes(left=left, right=right)
        if isinstance(expr, cst.UnaryOperation):
            return expr.with_changes(expression=self.atom(expr.expression, out))
        if isinstance(expr, cst.Comparison):
            if len(expr.comparisons) == 1:
                left = self.atom(expr.left, out)
                c = expr.comparisons[0]
                return expr.with_changes(left=left, comparisons=[c.with_changes(comparator=self.atom(c.comparator, out))])
            return self._chain(expr, out, target)
        if isinstance(expr, cst.BooleanOperation):
            return self._boolop(expr, out, target)
        if isinstance(expr, cst.IfExp):
            return self._ifexp(expr, out, target)
        if isinstance(expr, cst.Call):
            return self._call(expr, out)
        if isinstance(expr, cst.Attribute):
            return expr.with_changes(value=self.atom(expr.value, out))
        if isinstance(expr, cst.Subscript):
            value = self.atom(expr.value, out)
            elements = [e.with_changes(slice=self._index(e.slice, out)) for e in expr.slice]
            return expr.with_changes(value=value, slice=elements)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return expr.with_changes(elements=[e.with_changes(value=self.atom(e.value, out)) for e in expr.elements])
        return expr  # dict displays, f-strings ...: kept whole

    def _index(self, index: cst.BaseSlice, out: list) -> cst.BaseSlice:
        if isinstance(index, cst.Index):
            return index.with_changes(value=self._arg(index.value, out))
        if isinstance(index, cst.Slice):
            parts = {k: getattr(index, k) for k in ("lower", "upper", "step")}
            return index.with_changes(**{k: self.atom(v, out) for k, v in parts.items() if v is not None})
        return index

    def _arg(self, value: cst.BaseExpression, out: list) -> cst.BaseExpression:
        """Call arguments and indices may be tuples of atoms."""
        if isinstance(value, cst.Tuple):
            return value.with_changes(elements=[e.with_changes(value=self.atom(e.value, out)) for e in value.elements])
        return self.atom(value, out)

    def _call(self, call: cst.Call, out: list) -> cst.Call:
        func = call.func
        if isinstance(func, cst.Attribute) and (not _is_dotted(func.value) or _is_array_view(func.value)):
            # a method of a value computed here: x.reshape(3, 2).ravel(), a.T.reshape(2, -1)
            func = func.with_changes(value=self.atom(func.value, out))
        elif not _is_dotted(func):
            func = self.atom(func, out)
        args = [a.with_changes(value=self._arg(a.value, out)) for a in call.args]
        return call.with_changes(func=func, args=args)

    def _chain(self, expr: cst.Comparison, out: list, target: str | None) -> cst.BaseExpression:
        # a < b < c: b evaluated once, c only when a < b holds
        result = target or self.fresh()
        left = self.atom(expr.left, out)
        first = expr.comparisons[0]
        middle = self.atom(first.comparator, out)
        out.append(_assign(result, cst.Comparison(left, [first.with_changes(comparator=middle)])))
        rest = cst.Comparison(middle, list(expr.comparisons[1:]))
        inner: list = []
        inner.append(_assign(result, self.op(rest, inner)))
        out.append(cst.If(test=cst.Name(result), body=cst.IndentedBlock(inner)))
        return cst.Name(result)

    def _boolop(self, expr: cst.BooleanOperation, out: list, target: str | None) -> cst.BaseExpression:
        left = self.op(expr.left, out)
        if target is None and isinstance(left, cst.Name) and left.value in self.temps:
            result = left.value  # the left operand's temporary carries the result on
        else:
            result = target or self.fresh()
            out.append(_assign(result, left))
        inner: list = []
        inner.append(_assign(result, self.op(expr.right, inner)))
        test: cst.BaseExpression = cst.Name(result)
        if isinstance(expr.operator, cst.Or):
            test = cst.UnaryOperation(cst.Not(), test)
            guard = self.fresh()
            out.append(_assign(guard, test))
            test = cst.Name(guard)
        out.append(cst.If(test=test, body=cst.IndentedBlock(inner)))
        return cst.Name(result)

    def _ifexp(self, expr: cst.IfExp, out: list, target: str | None) -> cst.BaseExpression:
        test = self.atom(expr.test, out)
        result = target or self.fresh()
        body: list = []
        body.append(_assign(result, self.op(expr.body, body)))
        orelse: list = []
        orelse.append(_assign(result, self.op(expr.orelse, orelse)))
        out.append(cst.If(test=test, body=cst.IndentedBlock(body), orelse=cst.Else(cst.IndentedBlock(orelse))))
        return cst.Name(result)

    # --- statements ----------------------------------------------------------

    def block(self, stmts) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            made = self.statement(stmt)
            if made and getattr(stmt, "leading_lines", None):
                made[0] = made[0].with_changes(leading_lines=[*stmt.leading_lines, *made[0].leading_lines])
            out.extend(made)
        return out or [_line(cst.Pass())]

    def statement(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        if isinstance(stmt, cst.SimpleStatementLine):
            out: list = []
            for small in stmt.body:
                self.small(small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT), out)
            if out and isinstance(out[-1], cst.SimpleStatementLine):
                out[-1] = out[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
            return out
        if isinstance(stmt, cst.If):
            return self._if(stmt)
        if isinstance(stmt, cst.For):
            return self._for(stmt)
        if isinstance(stmt, cst.While):
            return self._while(stmt)
        return [stmt]

    def small(self, small: cst.BaseSmallStatement, out: list) -> None:
        if isinstance(small, cst.Assign):
            target = small.targets[0].target
            if isinstance(target, cst.Name):
                direct = None if _reads(small.value, target.value) else target.value
                value = self.op(small.value, out, direct)
                if not (isinstance(value, cst.Name) and value.value == target.value):
                    out.append(_line(small.with_changes(value=value)))
            elif isinstance(target, cst.Subscript):
                value = self.atom(small.value, out)
                out.append(_line(small.with_changes(targets=[cst.AssignTarget(self._store_target(target, out))], value=value)))
            elif _parallel_assignment(target, small.value) and not self._swapped_buffers(target, small.value):
                targets = [el.value for el in target.elements]  # names, or z[i] of a name z
                names = [_stored(t) for t in targets]
                given = [el.value for el in small.value.elements]
                if not any(_reads(v, n) for k, v in enumerate(given) for n in names[:k]):
                    for stored, value in zip(targets, given):  # no value reads a name assigned before it
                        self.small(cst.Assign([cst.AssignTarget(stored)], value), out)
                    return
                values = []
                for el in small.value.elements:  # p, q = q * 0.5, np.sin(p): every right-hand side first
                    value = self.atom(el.value, out)
                    if isinstance(value, cst.Name) and value.value in names:  # p, q = q, p
                        held = self.fresh(value.value)
                        out.append(_assign(held, value))
                        value = cst.Name(held)
                    elif not isinstance(value, cst.Name) or value.value not in self.temps:  # z[0], z[1] = z[1], z[0]
                        held = self.fresh()
                        out.append(_assign(held, value))
                        value = cst.Name(held)
                    values.append(value)
                for stored, value in zip(targets, values):
                    self.small(cst.Assign([cst.AssignTarget(stored)], value), out)
            else:  # tuple unpacking: a, b = name
                value = self.atom(small.value, out)
                stores = _unpacked_stores(target)
                if not stores:
                    out.append(_line(small.with_changes(value=value)))
                    return
                held = [self.fresh() if not isinstance(t, cst.Name) else t.value for t in stores]
                unpack = cst.Tuple([cst.Element(cst.Name(n)) for n in held], lpar=[], rpar=[])
                out.append(_line(cst.Assign([cst.AssignTarget(unpack)], value)))
                for stored, name in zip(stores, held):  # z[0], z[1] = t: into names, then each stored
                    if isinstance(stored, cst.Tuple):  # v, (gx, gy) = t: gx, gy = t2
                        stored = stored.with_changes(lpar=[], rpar=[])
                    if not isinstance(stored, cst.Name):
                        self.small(cst.Assign([cst.AssignTarget(stored)], cst.Name(name)), out)
        elif isinstance(small, cst.AugAssign):
            target = small.target
            if isinstance(target, cst.Subscript):
                target = self._store_target(target, out)
            out.append(_line(small.with_changes(target=target, value=self.atom(small.value, out))))
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self.small(cst.Assign([cst.AssignTarget(small.target)], small.value), out)
        elif isinstance(small, cst.Expr):
            out.append(_line(small.with_changes(value=self.op(small.value, out))))
        elif isinstance(small, cst.Return):
            if small.value is None or is_atom(small.value):
                out.append(_line(small))
            elif isinstance(small.value, cst.Tuple):
                out.append(_line(small.with_changes(value=self._arg(small.value, out))))
            else:
                value = self.op(small.value, out)
                if not isinstance(value, cst.Name):
                    name = self.fresh("out")
                    out.append(_assign(name, value))
                    value = cst.Name(name)
                out.append(_line(small.with_changes(value=value)))
        elif isinstance(small, cst.Assert):
            out.append(_line(small.with_changes(test=self.atom(small.test, out))))
        elif isinstance(small, cst.Continue):
            loop = self.loops[-1] if self.loops else None
            if loop is not None and loop.recompute:
                out.extend(loop.recompute)
            out.append(_line(small))
        else:  # pass, break, raise
            out.append(_line(small))

    def _swapped_buffers(self, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """``cur, nxt = nxt, cur`` where an array of them is written in place: kept as one unpacking
        (copies through temporaries would make the arrays look shared to later passes)."""
        return all(isinstance(el.value, cst.Name) for el in value.elements) and bool(
            {_stored(el.value) for el in target.elements} & self.written
        )

    def _store_target(self, target: cst.Subscript, out: list) -> cst.Subscript:
        value = self.atom(target.value, out)
        elements = [e.with_changes(slice=self._index(e.slice, out)) for e in target.slice]
        return target.with_changes(value=value, slice=elements)

    def _if(self, stmt: cst.If) -> list[cst.BaseStatement]:
        out: list = []
        test = self.atom(stmt.test, out)
        body = self.block(stmt.body.body)
        orelse = None
        if isinstance(stmt.orelse, cst.If):  # elif: its test only runs in the else branch
            orelse = cst.Else(cst.IndentedBlock(self.block([stmt.orelse])))
        elif isinstance(stmt.orelse, cst.Else):
            orelse = stmt.orelse.with_changes(body=stmt.orelse.body.with_changes(body=self.block(stmt.orelse.body.body)))
        out.append(cst.If(test=test, body=stmt.body.with_changes(body=body), orelse=orelse))
        return out

    def _for(self, stmt: cst.For) -> list[cst.BaseStatement]:
        out: list = []
        it = stmt.iter
        if isinstance(it, cst.Call):
            it = self._call(it, out)
        else:
            it = self.atom(it, out)
        self.loops.append(_Loop(None))
        body = self.block(stmt.body.body)
        self.loops.pop()
        orelse = stmt.orelse
        if orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=self.block(orelse.body.body)))
        out.append(stmt.with_changes(iter=it, body=stmt.body.with_changes(body=body), orelse=orelse, leading_lines=[]))
        return out

    def _compute_into(self, name: str, expr: cst.BaseExpression, out: list) -> None:
        value = self.op(expr, out, name)
        if not (isinstance(value, cst.Name) and value.value == name):
            out.append(_assign(name, value))

    def _while(self, stmt: cst.While) -> list[cst.BaseStatement]:
        out: list = []
        if is_atom(stmt.test):
            test, recompute = _strip(stmt.test), None
        else:
            name = self.fresh("cond")
            first: list = []
            self._compute_into(name, stmt.test, first)
            out.extend(first)
            again: list = []
            self._compute_into(name, stmt.test, again)
            test, recompute = cst.Name(name), again
        self.loops.append(_Loop(recompute))
        body = self.block(stmt.body.body)
        self.loops.pop()
        if recompute:
            body = body + recompute
        orelse = stmt.orelse
        if orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=self.block(orelse.body.body)))
        out.append(stmt.with_changes(test=test, body=stmt.body.with_changes(body=body), orelse=orelse, leading_lines=[]))
        return out


def anf(node: cst.FunctionDef, taken: frozenset[str] = frozenset()) -> cst.FunctionDef:
    """Rewrite a desugared function definition into A-normal form."""
    names = NameGen(scan(node).all | taken)
    body = ANF(names, frozenset(written_in_place(list(node.body.body)))).block(node.body.body)
    return node.with_changes(body=node.body.with_changes(body=body))


def _unpacked_stores(target: cst.BaseExpression) -> list | None:
    """The targets of ``a, z[0] = t`` or ``v, (gx, gy) = t`` when one of them is a subscript, an
    attribute or a nested tuple (each then gets a name of its own first, and is stored or
    unpacked from it); None for names only, or a form this does not lower (a starred target)."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not all(isinstance(el, cst.Element) for el in target.elements):
        return None
    stores = [el.value for el in target.elements]
    if all(isinstance(t, cst.Name) for t in stores) or not all(
        isinstance(t, (cst.Name, cst.Subscript, cst.Attribute))
        or _names_only(t)
        or (isinstance(t, (cst.Tuple, cst.List)) and _unpacked_stores(t) is not None)
        for t in stores
    ):
        return None
    return stores


def _names_only(target: cst.BaseExpression) -> bool:
    """``(a, b)``: a tuple of plain names, nothing starred."""
    return isinstance(target, (cst.Tuple, cst.List)) and all(
        isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements
    )


def _stored(target: cst.BaseExpression) -> str:
    """The name a target of a parallel assignment stores into: ``a``, or ``z`` of ``z[i]``."""
    return target.value if isinstance(target, cst.Name) else target.value.value


def _parallel_assignment(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """``a, b = e1, e2`` (or ``z[0], z[1] = e1, e2``): distinct plain names or subscripts of a
    name, as many as the values, none starred."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return False
    if not all(isinstance(el, cst.Element) for el in [*target.elements, *value.elements]):
        return False
    targets = [el.value for el in target.elements]
    if not all(
        isinstance(t, cst.Name) or (isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name)) for t in targets
    ):
        return False
    names = [t.value for t in targets if isinstance(t, cst.Name)]
    return len(targets) == len(value.elements) and len(set(names)) == len(names)
