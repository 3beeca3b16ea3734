"""Activity and structure of a function in A-normal form, for reverse mode.

:func:`analyze` returns, for the function body:

- ``blocks``: every statement list (the body, branch bodies, loop bodies), each
  with its parent and whether it lies inside a loop;
- ``defs``: for each name, the blocks where it is assigned (loop targets too);
- ``uses``: for each name, the blocks where it is read;
- ``active``: the names whose values depend on the differentiated inputs
  (a fixpoint over assignments, so loop-carried values are found).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


@dataclass
class Block:
    stmts: list
    parent: Block | None
    in_loop: bool
    ident: int = 0

    def ancestors(self) -> list[Block]:
        out, b = [], self
        while b is not None:
            out.append(b)
            b = b.parent
        return out


@dataclass
class Activity:
    blocks: list[Block]
    defs: dict[str, list[Block]] = field(default_factory=dict)
    uses: dict[str, list[Block]] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    block_of: dict[int, Block] = field(default_factory=dict)  # id(statement list) -> block
    assigns: list = field(default_factory=list)  # (targets, names read, carries no derivative)
    returned: set[str] = field(default_factory=set)  # names read by return statements

    def useful(self, outputs: set[str]) -> set[str]:
        """Active names whose value reaches ``outputs`` through differentiable operations."""
        found = set(outputs) & self.active
        changed = True
        while changed:
            changed = False
            for names, reads, nondiff in self.assigns:
                if nondiff or not (set(names) & found):
                    continue
                new = (reads & self.active) - found
                if new:
                    found |= new
                    changed = True
        return found

    def assigned_once_outside_loops(self, name: str, params: tuple[str, ...]) -> bool:
        blocks = self.defs.get(name, [])
        if name in params:
            return not blocks
        return len(blocks) == 1 and not blocks[0].in_loop


def common_block(blocks: list[Block], top: Block) -> Block:
    """The innermost block enclosing all of ``blocks`` (``top`` when there are none)."""
    if not blocks:
        return top
    common = blocks[0].ancestors()
    for b in blocks[1:]:
        ids = {id(a) for a in b.ancestors()}
        common = [a for a in common if id(a) in ids]
    return common[0] if common else top


def names_in(node: cst.CSTNode) -> set[str]:
    """Names read by an expression (attribute names and keywords excluded)."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

    node.visit(V())
    return found


def targets_of(target: cst.BaseExpression) -> list[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``); none for ``y[i]`` or ``o.attr``."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in targets_of(el.value)]
    if isinstance(target, cst.StarredElement):
        return targets_of(target.value)
    return []


def _pushed(small) -> str | None:
    """The list ``small`` appends to (``stack.append(v)``), if it does."""
    value = getattr(small, "value", None)
    if isinstance(small, cst.Expr) and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        func = value.func
        if func.attr.value == "append" and isinstance(func.value, cst.Name):
            return func.value.value
    return None


def analyze(body: list, params: tuple[str, ...], active_params: set[str], is_nondiff, shape_only=None) -> Activity:
    """``is_nondiff(stmt)`` says whether an assignment's value carries no derivative.

    ``shape_only(stmt)``, when given, names what an assignment's value reads only for a
    shape or a dtype (``x`` in ``rt.mean_grad(g, x, None, False)``): the value does not
    become active through those names.
    """
    top = Block(body, None, False)
    act = Activity([top])
    assigns: list[tuple[list[str], set[str], bool]] = []

    def walk(stmts: list, block: Block) -> None:
        act.block_of[id(stmts)] = block
        for stmt in stmts:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    visit_small(small, block)
            elif isinstance(stmt, cst.If):
                _use(names_in(stmt.test), block)
                child = _child(stmt.body.body, block, block.in_loop)
                walk(stmt.body.body, child)
                if stmt.orelse is not None:
                    orelse = stmt.orelse.body.body
                    walk(orelse, _child(orelse, block, block.in_loop))
            elif isinstance(stmt, cst.For):
                _use(names_in(stmt.iter), block)
                child = _child(stmt.body.body, block, True)
                for n in targets_of(stmt.target):
                    act.defs.setdefault(n, []).append(child)
                walk(stmt.body.body, child)
            elif isinstance(stmt, cst.While):
                _use(names_in(stmt.test), block)
                child = _child(stmt.body.body, block, True)
                walk(stmt.body.body, child)

    def _child(stmts, parent, in_loop) -> Block:
        b = Block(stmts, parent, in_loop, len(act.blocks))
        act.blocks.append(b)
        return b

    def _use(names: set[str], block: Block) -> None:
        for n in names:
            act.uses.setdefault(n, []).append(block)

    def visit_small(small, block: Block) -> None:
        if isinstance(small, cst.Assign):
            target = small.targets[0].target
            reads = names_in(small.value)
            _use(reads, block)
            names = targets_of(target)
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                # y[i] = v: a new value of y that depends on v, i and the old y
                base = target.value.value
                _use(names_in(target), block)
                reads = reads | names_in(target) | {base}
                names = [base]
            for n in names:
                act.defs.setdefault(n, []).append(block)
            if shape_only is not None:
                reads = reads - shape_only(small)
            assigns.append((names, reads, is_nondiff(small)))
        elif isinstance(small, cst.AugAssign):
            target = small.target
            base = target.value if isinstance(target, cst.Subscript) else target
            if isinstance(base, cst.Name):
                reads = names_in(small.value) | names_in(target)
                _use(reads, block)
                act.defs.setdefault(base.value, []).append(block)
                assigns.append(([base.value], reads, False))
        elif isinstance(small, cst.Return) and small.value is not None:
            _use(names_in(small.value), block)
        elif isinstance(small, (cst.Expr, cst.Assert)):
            value = getattr(small, "value", None) or getattr(small, "test", None)
            if value is not None:
                _use(names_in(value), block)
            pushed = _pushed(small)
            if pushed is not None:  # stack.append(v): a new value of the stack that holds v
                act.defs.setdefault(pushed, []).append(block)
                assigns.append(([pushed], names_in(value), False))

    walk(body, top)
    active = set(active_params)
    changed = True
    while changed:
        changed = False
        for names, reads, nondiff in assigns:
            if nondiff or not (reads & active):
                continue
            for n in names:
                if n not in active:
                    active.add(n)
                    changed = True
    act.active = active
    act.assigns = assigns
    return act
