"""Statement-level preaccumulation (as Tapenade and ADIFOR do it) for reverse mode.

A recurrence in a loop, ``y = y + 0.01 * (-k * y + np.sin(0.01 * i))``, becomes several
statements in A-normal form, and their adjoints, written one operation at a time, chain
``y_bar`` through every operation between the old ``y`` and the new one: a multiply, a
multiply and an add per iteration, each waiting for the last. When every operation of the
original line is elementwise, the line's local partial derivatives ``dy/dk`` and
``dy/dy`` can be formed first, from saved values alone, and the adjoints passed on with
one multiply each::

    y_bar_1 = y_bar
    k_bar = k_bar + rt.unbroadcast(-y_bar_1 * (0.01 * y_2), k)
    y_bar = rt.unbroadcast(y_bar_1 * (1.0 + 0.01 * t1), y_2)

The partials are the rule table's elementwise partials, multiplied along each path from
an input to the result and summed over the paths (a backward sweep over the line with
the seed 1). An elementwise partial of ``t = f(a, b)`` has at most ``t``'s shape, so it
is constant along every axis a later ``unbroadcast`` sums over, and multiplying before
summing gives the same value: only the rounding differs. Each input's contribution is
summed down to its shape once, with the value the operation-by-operation adjoint would
have used for that shape (the input itself, or a witness of its shape from
:mod:`srctrans.analysis.shapes`); inputs of the result's shape need none.

Only lines inside loops whose target is also one of their inputs reached through another
operation are rewritten: there the chain is carried from iteration to iteration. Elsewhere
the operation-by-operation adjoint costs the same and reads more plainly. The saved values
are read (and popped) in the same order as there, so the forward sweep does not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..analysis.activity import Block, names_in
from .statements import RenameNames, aug_to_assign, reads_in
from .text import code, fill_template, paren, times

if TYPE_CHECKING:  # pragma: no cover
    from .ops import Op
    from .reverse import Reverse

_LONG = 50  # a partial longer than this is computed on a line of its own


def _statements(group: list) -> list[tuple[int, cst.Assign]] | None:
    """(id, assignment) of every statement of ``group``, or None if one is not ``name = value``."""

    out = []
    for stmt in group:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        for small in stmt.body:
            sid = id(small)
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
                small = aug_to_assign(small)
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                return None
            out.append((sid, small))
    return out


def _eligible(rev: Reverse, group: list, block: Block) -> list[tuple[int, str, Op | None]] | None:
    """The line's operations as (statement id, target, op) when it can be preaccumulated, else None."""

    if not block.in_loop:
        return None
    statements = _statements(group)
    if statements is None or len(statements) < 2:
        return None
    result = statements[-1][1].targets[0].target.value
    if result not in rev.act.active or result not in rev.started or result in rev.mutated or result in rev.lists:
        return None
    ops: list[tuple[int, str, Op | None]] = []
    reads_result = False
    for k, (sid, small) in enumerate(statements):
        target = small.targets[0].target.value
        op = rev.ops.get(sid)
        last = k == len(statements) - 1
        if op is None:  # a constant or a value nothing differentiated reaches
            if target in rev.act.active or sid in rev.restarts or any(s == sid for s, _ in rev.reader):
                return None
        elif op.rule is not None and op.rule.kind != "elementwise":
            return None
        elif any(not isinstance(e, cst.Name) and names_in(e) for e in op.args.values()):
            return None
        if last:
            ops.append((sid, target, op))
            break
        if target == result or sid in rev.restarts:
            return None
        if target in rev.act.active:
            # a temporary of this line: one assignment, read only by this line's later operations
            if not rev.simple(target, block) or target in rev.params:
                return None
            if any(target in reads_in(st) for st in block.stmts if all(st is not g for g in group)):
                return None
            if op is not None and any(isinstance(e, cst.Name) and e.value == result for e in op.args.values()):
                reads_result = True
        ops.append((sid, target, op))
    return ops if reads_result else None


@dataclass(frozen=True)
class _Partial:
    """A partial derivative as source text with its sign kept apart (``text`` None: one), so
    that products and sums of partials read as a person would write them."""

    negative: bool = False
    text: str | None = None

    def source(self) -> str:
        body = "1.0" if self.text is None else self.text
        return f"-{_operand(body, _PRODUCT)}" if self.negative else body


_ONE = _Partial()
_PRODUCT = (cst.Multiply, cst.Divide)


def _operand(text: str, bare: tuple) -> str:
    """``text`` after a minus sign: bare if a name, number or call, or a binary operation
    whose operator is among ``bare`` (``-a * b`` is ``-(a * b)`` exactly); else in parentheses."""

    node = cst.parse_expression(text)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, bare) and not node.lpar:
        return text
    return paren(text)


def _signed(partial: str) -> _Partial:
    """A rule's partial, its leading minus taken out: ``-{ans} / {y}`` is ``-(ans / y)``."""

    node = cst.parse_expression(partial)
    negative = False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and not node.lpar:
        negative, node = True, node.expression
    else:  # -a * b / c: the minus of the leftmost factor
        chain = [node]
        while (
            isinstance(chain[-1], cst.BinaryOperation)
            and isinstance(chain[-1].operator, _PRODUCT)
            and not chain[-1].lpar
        ):
            chain.append(chain[-1].left)
        leaf = chain[-1]
        if (
            len(chain) > 1
            and isinstance(leaf, cst.UnaryOperation)
            and isinstance(leaf.operator, cst.Minus)
            and not leaf.lpar
        ):
            negative, replaced = True, leaf.expression
            for outer in reversed(chain[:-1]):
                replaced = outer.with_changes(left=replaced)
            node = replaced
    text = code(node)
    return _Partial(negative, None if text == "1.0" else text)


def _partial_times(a: _Partial, b: _Partial) -> _Partial:
    if a.text is None or b.text is None:
        return _Partial(a.negative != b.negative, a.text if b.text is None else b.text)
    return _Partial(a.negative != b.negative, times(paren(a.text), b.text))


def _plus(a: _Partial, b: _Partial) -> _Partial:
    if a.negative and b.negative:
        return _Partial(True, f"{_text(a)} + {_text(b)}")
    if a.negative:
        a, b = b, a
    if b.negative:
        return _Partial(False, f"{_text(a)} - {_operand(_text(b), _PRODUCT + (cst.Power,))}")
    return _Partial(False, f"{_text(a)} + {_text(b)}")


def _text(a: _Partial) -> str:
    return "1.0" if a.text is None else a.text


def preaccumulate(rev: Reverse, group: list, block: Block, depth: int) -> bool:
    """Emit the backward sweep of one original line as local partials times its result's
    adjoint; False (nothing emitted) when the line does not qualify."""

    ops = _eligible(rev, group, block)
    if ops is None:
        return False
    result = ops[-1][1]
    adjoint: dict[str, _Partial] = {result: _ONE}  # partial of the result by value, this line's names
    shape: dict[str, str | None] = {result: None}  # a value of each one's shape; None: the result's
    values_at: dict[int, dict[str, str]] = {}
    for sid, target, op in reversed(ops):
        readers = [name for (s, name) in rev.reader if s == sid]
        values = values_at[sid] = {name: rev._read(sid, name, depth) for name in readers}
        a = adjoint.pop(target, None)
        ref_target = shape.pop(target, None)
        if a is None or op is None or not any(rev._carries(e) for e in op.args.values()):
            continue
        carried = [p for p, e in op.args.items() if rev._carries(e)]
        if op.rule is not None:
            carried = [p for p in carried if p in op.rule.templates]
        if len(carried) > 1 and a.text is not None and not _plain(a.text):  # used twice: named once
            name = rev.gen.fresh(f"d{result}_d{target}", numbered=False)
            rev.emit(f"{name} = {a.source()}", depth)
            a = _Partial(False, name)

        def text_of(param: str, op=op, values=values) -> str:
            expr = op.args.get(param)
            if isinstance(expr, cst.Name):
                return values.get(expr.value, expr.value)
            if expr is not None and values:
                return code(expr.visit(RenameNames(values)))
            return op.texts.get(param, "None")

        fill: dict[str, str] = {}
        if op.rule is not None:
            fill = {p.name.lstrip("*"): text_of(p.name.lstrip("*")) for p in op.rule.params}
            fill["ans"] = values.get("@" + target, target)
        names_only = len(op.args) > 1 and all(isinstance(e, cst.Name) for e in op.args.values())
        for param in carried:
            name = op.args[param].value
            if op.rule is None:
                term = a
            else:
                partial = fill_template(op.rule.templates[param], fill)
                if rev.np_name != "np":
                    partial = partial.replace("np.", rev.np_name + ".")
                term = _partial_times(a, _signed(partial))
            adjoint[name] = term if name not in adjoint else _plus(adjoint[name], term)
            # a value of this operand's shape: the result's, a witness, or the operand itself
            if not names_only or (param in op.shapes and op.shapes[param] is None):
                ref = ref_target
            elif param in op.shapes:
                ref = values.get(op.shapes[param], op.shapes[param])
            else:
                ref = values.get(name, name)
            if name not in shape or ref is None:  # of the result's shape by any path: by all
                shape[name] = ref

    last_sid = ops[-1][0]
    g = rev.bar(result)
    restart = rev.restarts.get(last_sid)
    if restart is not None:  # as in the operation-by-operation sweep: the older value's adjoint restarts
        g = rev.restart_adjoint(g, result, restart, values_at[last_sid][restart[0]] if restart[1] else None, depth)
    for name in sorted(adjoint, key=lambda n: n == result):  # the result's older value last
        partial = adjoint[name]
        if partial.text is not None and len(partial.source()) > _LONG:  # a long partial: a line of its own
            named = rev.gen.fresh(f"d{result}_d{name}", numbered=False)
            rev.emit(f"{named} = {partial.source()}", depth)
            partial = _Partial(False, named)
        contribution = g if partial.text is None else times(g, partial.text)
        if partial.negative:
            contribution = f"-{contribution}"  # -g * p: the same number as g * (-p)
        if shape[name] is not None:
            contribution = f"rt.unbroadcast({contribution}, {shape[name]})"
        rev.contribute(name, contribution, depth, block)
    if restart is not None and restart[0] in rev.pending:
        rev.emit(rev.pending.pop(restart[0]), depth)
    return True


def _plain(a: str) -> bool:
    """A name or a number: nothing to compute again."""
    try:
        node = cst.parse_expression(a)
    except cst.ParserSyntaxError:  # pragma: no cover - partials are expressions
        return False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Name, cst.Integer, cst.Float))
