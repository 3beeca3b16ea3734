"""Inlining elementwise temporaries, so Numba fuses a chain of them into one loop.

Under ``jit``, Numba fuses the elementwise operations of one statement into one loop with
no temporary arrays, but not across statements. The transformations write one operation
per line (A-normal form), so a generated file can read ``t7 = h * h``, ``t8 = 1.0 - t7``,
``t2_bar = h_bar * t8``: three loops and two arrays where one loop would do.
:func:`inline_temporaries` puts such a temporary into the one later statement of the same
block that reads it (``t2_bar = h_bar * (1.0 - h * h)``), when it is assigned once and
nothing in between writes a name it reads. Which statements are temporaries worth
inlining is the caller's choice (``fusible``, the ``id`` of each such statement).
"""

from __future__ import annotations

import libcst as cst

from ..analysis.activity import names_in

# A statement reads at most this many names once its temporaries are inlined. Compiled,
# a line whose arrays all have the result's shape (or a bias row's) runs as one flat loop
# (numba_backend/flat_loops.py), which LLVM vectorizes over up to nine arrays; but a line
# with an operand broadcast along a length-1 axis takes Numba's own loop nest, which LLVM
# vectorizes over four arrays and not over five, and then one line is slower than two
# (measured: 61 against 25 us for five 256 x 128 arrays). The shapes are not known here.
MAX_OPERANDS = 4
_MODULES = frozenset({"np", "rt", "math"})


def inline_temporaries(body: list, fusible: set[int], max_operands: int = MAX_OPERANDS) -> list:
    """``t1 = -z`` then ``t2 = np.exp(t1)`` -> ``t2 = np.exp(-z)``, for the ``fusible`` statements read once;
    a statement reads at most ``max_operands`` names after it (CUDA kernels take more than CPU loops)."""
    counter = _Count()
    for st in body:
        st.visit(counter)
    return _inline_block(body, fusible, counter.reads, max_operands)


def assigned_once(body: list) -> frozenset:
    """The names exactly one simple statement of ``body`` assigns (none a loop's target)."""
    counts: dict[str, int] = {}

    def walk(stmts) -> None:
        for st in stmts:
            if isinstance(st, cst.SimpleStatementLine):
                for name in written(st):
                    counts[name] = counts.get(name, 0) + 1
                continue
            if isinstance(st, cst.For):
                for n in all_names(st.target):
                    counts[n.value] = counts.get(n.value, 0) + 2
            for child in children(st):
                walk(child)

    walk(body)
    return frozenset(name for name, count in counts.items() if count == 1)


def children(st) -> list:
    """The statement lists nested in a compound statement (an ``elif`` as a one-statement list)."""
    out = []
    if isinstance(st, (cst.If, cst.For, cst.While)):
        out.append(list(st.body.body))
        orelse = st.orelse
        if isinstance(orelse, cst.Else):
            out.append(list(orelse.body.body))
        elif orelse is not None:
            out.append([orelse])
    return out


def written(st: cst.CSTNode) -> set[str]:
    """Names a statement assigns or writes into (``x[i] = v``, ``x += v``), nested blocks included."""
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            t = n.target.value if isinstance(n.target, cst.Subscript) else n.target
            out.update(x.value for x in all_names(t))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            t = n.target.value if isinstance(n.target, cst.Subscript) else n.target
            out.update(x.value for x in all_names(t))

        def visit_For(self, n: cst.For) -> None:
            out.update(x.value for x in all_names(n.target))

    st.visit(V())
    return out


def all_names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(V())
    return found


class _Count(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, int] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            return False
        if isinstance(node, cst.Name):
            self.reads[node.value] = self.reads.get(node.value, 0) + 1
        return True


def _line(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _inline_block(stmts: list, fusible: set[int], reads: dict[str, int], max_operands: int = MAX_OPERANDS) -> list:
    """One block: a temporary waits in ``pending`` for its reader. Its comments (the origin of the
    line it came from) stay where it was, on the next statement written, so each statement keeps
    the origin comment of its line above it and errors name the right line."""
    out: list = []
    pending: dict[str, tuple[cst.BaseExpression, set[str]]] = {}  # temp -> (value, names it reads)
    carry: list = []  # the comments of temporaries made pending, for the next statement written

    def put(st) -> None:
        if carry:
            st = st.with_changes(leading_lines=[*carry, *st.leading_lines])
            carry.clear()
        out.append(st)

    def flush(names) -> None:
        for name in list(names):
            value, _ = pending.pop(name)
            put(_line(name, value))

    for st in stmts:
        if isinstance(st, (cst.If, cst.For, cst.While)):
            flush(pending)  # no inlining into or across compound statements
            st = st.with_changes(body=st.body.with_changes(body=_inline_block(list(st.body.body), fusible, reads, max_operands)))
            if isinstance(st.orelse, cst.Else):
                st = st.with_changes(orelse=st.orelse.with_changes(
                    body=st.orelse.body.with_changes(body=_inline_block(list(st.orelse.body.body), fusible, reads, max_operands))))
            put(st)
            continue
        fuse = id(st) in fusible  # (before the substitution below makes a new node)
        used = [name for name in pending if name in {n.value for n in all_names(st)}]
        for name in used:  # in the order they were written
            trial = st.visit(_Substitute({name: pending[name][0]}))
            if len(_operands(trial)) <= max_operands:
                st = trial
                del pending[name]
            else:  # one loop over too many arrays is slower than two: keep the temporary's line
                flush([name])
        changed = written(st)
        mutates = _may_write_through(st)
        flush([n for n, (_, names) in pending.items() if mutates or names & changed or n in changed])
        if fuse and reads.get(st.body[0].targets[0].target.value, 0) == 1:
            small = st.body[0]
            pending[small.targets[0].target.value] = (small.value, {n.value for n in all_names(small.value)})
            carry.extend(st.leading_lines)
            continue
        put(st)
    flush(pending)  # read nowhere later in this block (e.g. in a loop)
    return out


def _operands(st: cst.SimpleStatementLine) -> set[str]:
    """The names a statement reads as values (not modules, attribute names or keywords)."""
    found: set[str] = set()
    for small in st.body:
        found |= names_in(small.value if isinstance(small, cst.Assign) else small)
    return found - _MODULES


def _may_write_through(st: cst.SimpleStatementLine) -> bool:
    """Whether ``st`` may change an array in place, and so what a view of it reads (``t9 = ys[1:3]``):
    anything but ``name = value`` with calls of NumPy and runtime functions only, none given ``out=``."""
    for small in st.body:
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
            return True
        for call in _calls(small.value):
            func = call.func
            while isinstance(func, cst.Attribute):
                func = func.value
            if not (isinstance(func, cst.Name) and func.value in _MODULES):
                return True
            if any(a.keyword is not None and a.keyword.value == "out" for a in call.args):
                return True
    return False


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    node.visit(V())
    return found


class _Substitute(cst.CSTTransformer):
    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        if isinstance(original.value, cst.Name) and original.value.value in self.values:  # y = t1: no parentheses
            return updated.with_changes(value=updated.value.with_changes(lpar=[], rpar=[]))
        return updated

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        if isinstance(original.value, cst.Name) and original.value.value in self.values:  # return t1
            return updated.with_changes(value=updated.value.with_changes(lpar=[], rpar=[]))
        return updated

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        if isinstance(original.value, cst.Name) and original.value.value in self.values:  # f(t1): no parentheses
            return updated.with_changes(value=updated.value.with_changes(lpar=[], rpar=[]))
        return updated

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation) -> cst.BaseExpression:
        """No parentheses around an inlined operand that binds tighter: ``1.0 - h * h``."""
        return updated.with_changes(
            left=self._bare(original.left, updated.left, updated.operator, True),
            right=self._bare(original.right, updated.right, updated.operator, False),
        )

    def _bare(self, original, operand, operator, is_left: bool):
        if not (isinstance(original, cst.Name) and original.value in self.values) or isinstance(operator, cst.Power):
            return operand
        if isinstance(operand, cst.UnaryOperation):
            return operand.with_changes(lpar=[], rpar=[])  # -x binds tighter than * / @ + -
        if isinstance(operand, cst.BinaryOperation):
            inner, outer = _PRECEDENCE.get(type(operand.operator)), _PRECEDENCE.get(type(operator))
            if inner is not None and outer is not None and (inner > outer or (inner == outer and is_left)):
                return operand.with_changes(lpar=[], rpar=[])
        return operand

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        value = self.values.get(updated.value)
        if value is None:
            return updated
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if not _is_simple(value) else value


_PRECEDENCE = {
    cst.Add: 1, cst.Subtract: 1,
    cst.Multiply: 2, cst.Divide: 2, cst.FloorDivide: 2, cst.Modulo: 2, cst.MatrixMultiply: 2,
    cst.Power: 3,
}


def _is_simple(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Name, cst.Call, cst.Integer, cst.Float, cst.Subscript, cst.Attribute))
