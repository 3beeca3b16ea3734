"""Statement-level helpers shared by the differentiating transformations: renaming, reads of a
statement, in-place updates lowered to a read and a write, tapes (lists grown by ``append``)."""

from __future__ import annotations

import libcst as cst

from ..analysis.activity import Block, names_in, targets_of
from ..analysis.names import NameGen
from ..analysis.resolve import LOCAL
from ..cache import ORIGIN_RE
from ..rules.lookup import rule_keys_by_id
from .text import code


class RenameNames(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.mapping.get(updated.value, updated.value))


def aug_to_assign(small: cst.AugAssign) -> cst.Assign:
    op_name = type(small.operator).__name__.replace("Assign", "")
    binop = getattr(cst, op_name)()
    return cst.Assign([cst.AssignTarget(small.target)], cst.BinaryOperation(small.target, binop, small.value))


def reads_in(stmt) -> set[str]:
    """Names a statement reads (a compound statement: anywhere inside it)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        found: set[str] = set()
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                found |= names_in(small.value) | target_reads(small.targets[0].target)
            elif isinstance(small, cst.AugAssign):
                found |= names_in(small.value) | names_in(small.target)
            else:
                found |= names_in(small)
        return found
    return names_in(stmt)


def target_reads(target: cst.BaseExpression) -> set[str]:
    """Names an assignment target reads: ``y`` and ``i`` of ``y[i] = v``; none of ``p, q = v``."""
    if isinstance(target, cst.Name):
        return set()
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(target_reads(el.value) for el in target.elements))
    if isinstance(target, cst.StarredElement):
        return target_reads(target.value)
    return names_in(target)


def lower_updates(body: list, active: set[str], gen: NameGen) -> list:
    """``y[i] op= v`` into a differentiated array as a read, the operation, and a write."""
    changed = False

    def block(stmts: list) -> list:
        nonlocal changed
        out: list = []
        for stmt in stmts:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                small = stmt.body[0]
                if (
                    isinstance(small, cst.AugAssign)
                    and isinstance(small.target, cst.Subscript)
                    and isinstance(small.target.value, cst.Name)
                    and (small.target.value.value in active or names_in(small.value) & active)
                ):
                    changed = True
                    old, new = gen.fresh("t"), gen.fresh("t")
                    binop = getattr(cst, type(small.operator).__name__.replace("Assign", ""))()
                    out.append(cst.SimpleStatementLine(
                        [cst.Assign([cst.AssignTarget(cst.Name(old))], small.target)], leading_lines=stmt.leading_lines
                    ))
                    out.append(cst.SimpleStatementLine(
                        [cst.Assign([cst.AssignTarget(cst.Name(new))], cst.BinaryOperation(cst.Name(old), binop, small.value))]
                    ))
                    out.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(small.target)], cst.Name(new))]))
                    continue
                out.append(stmt)
            elif isinstance(stmt, cst.If):
                orelse = stmt.orelse
                if orelse is not None:
                    orelse = orelse.with_changes(body=orelse.body.with_changes(body=block(list(orelse.body.body))))
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=block(list(stmt.body.body))), orelse=orelse))
            elif isinstance(stmt, (cst.For, cst.While)):
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=block(list(stmt.body.body)))))
            else:
                out.append(stmt)
        return out

    lowered = block(body)
    return lowered if changed else body


def empty_lists(body: list) -> set[str]:
    """Names assigned an empty list (``t_tape = []``): stacks, grown with append and shrunk with pop."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            target = n.targets[0].target
            if isinstance(target, cst.Name) and isinstance(n.value, cst.List) and not n.value.elements:
                found.add(target.value)

    for stmt in body:
        stmt.visit(V())
    return found


def appended(small, lists: set[str]) -> tuple[str, cst.BaseExpression] | None:
    """``(tape, value)`` for a statement ``tape.append(value)`` on one of ``lists``."""
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    call = small.value
    func = call.func
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value == "append"
        and isinstance(func.value, cst.Name)
        and func.value.value in lists
        and len(call.args) == 1
    ):
        return func.value.value, call.args[0].value
    return None


def index_expr(elements) -> cst.BaseExpression:
    """The index of ``x[...]`` as a value: ``(slice(1, n), 0)``."""
    parts = []
    for el in elements:
        s = el.slice
        if isinstance(s, cst.Index):
            parts.append(code(s.value))
        else:
            bounds = [code(getattr(s, k)) if getattr(s, k) is not None else "None" for k in ("lower", "upper", "step")]
            parts.append(f"slice({', '.join(bounds)})")
    text = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    return cst.parse_expression(text)



def inside(block: Block, outer: Block) -> bool:
    b: Block | None = block
    while b is not None:
        if b is outer:
            return True
        b = b.parent
    return False


def simple_statements(stmts: list):
    """Every simple statement, in program order, descending into branches and loops."""
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif isinstance(stmt, cst.If):
            yield from simple_statements(stmt.body.body)
            if stmt.orelse is not None:
                yield from simple_statements(stmt.orelse.body.body)
        elif isinstance(stmt, (cst.For, cst.While)):
            yield from simple_statements(stmt.body.body)



def pure_call(call: cst.Call, resolve) -> bool:
    """A call whose result depends on its arguments alone: a function with a derivative rule."""
    obj = resolve(call.func)
    return obj is not LOCAL and obj is not None and id(obj) in rule_keys_by_id()



def assigned_in(stmt) -> set[str]:
    """Every name a compound statement assigns, at any depth (its loop targets too)."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            found.update(targets_of(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            found.update(targets_of(n.target))

        def visit_For(self, n: cst.For) -> None:
            found.update(targets_of(n.target))

    stmt.visit(V())
    return found



def groups(stmts: list) -> list[list]:
    """Consecutive statements made from one original line (each group starts at an origin comment)."""
    groups: list[list] = []
    for stmt in stmts:
        has_origin = any(
            line.comment is not None and ORIGIN_RE.match(line.comment.value) for line in getattr(stmt, "leading_lines", ())
        )
        if has_origin or not groups:
            groups.append([stmt])
        else:
            groups[-1].append(stmt)
    return groups
