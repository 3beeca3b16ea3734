"""Structured control flow: ``break``, ``continue`` and early ``return`` become flags and branches.

Reverse mode replays a loop's trips and a branch's choice backwards; a jump out of the
middle of a block has no such replay. This pass rewrites every jump into branches that
mean the same, so that reverse mode sees only ``if`` statements, loops that run to their
end, and one ``return``, the last statement of the function.

Input: a desugared function (:mod:`srctrans.passes.desugar`). Output contract:

1. No ``continue``. The statements after it in the iteration go into the ``else:`` of the
   ``if`` that continues, when that branch always continues; otherwise the iteration
   starts with ``skip = False``, ``continue`` becomes ``skip = True`` and the statements
   after it run under ``if not skip:``.
2. No ``break``. A loop that breaks gets a flag ``stop = False`` before it; ``break``
   becomes ``stop = True``; the rest of the iteration is handled as for ``continue``. A
   ``while`` loop tests ``not stop and (test)``; a ``for`` loop keeps its trips and runs
   its body under ``if not stop:`` (the trips after the break do nothing). A ``for``
   loop whose variable is read after a loop that breaks is refused (it would hold the
   last value, not the one at the break).
3. One ``return``, the last statement of the function, when the function returned early
   anywhere: ``return v`` becomes ``result = v``; the statements after it run in the
   ``else:`` of an ``if`` that always returns, otherwise under ``if not returned:``
   (``returned = True`` is set where the return was, and inside loops the loops stop).
   A function that can end without a return starts with ``result = None``.

4. A loop over the rows of an array (or the items of a list or tuple), ``for row in xs:``,
   is a loop over indices, ``for i in range(len(xs)):`` starting with ``row = xs[i]``
   (reverse mode replays index loops); an iterable that is not a name is named first
   (``items = ...``); ``for i, row in enumerate(xs)`` and ``for a, b in zip(xs, ys)``
   index their sequences the same way.

A function without jumps or such loops comes out unchanged (the same node). Each new statement carries
the origin comment of the statement it replaces, so errors and comments still point at
the user's line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis.activity import targets_of
from ..analysis.names import NameGen, scan


class JumpError(Exception):
    """A jump this pass cannot rewrite faithfully (the caller turns it into a located error)."""

    def __init__(self, node: cst.CSTNode, message: str, hint: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message
        self.hint = hint


@dataclass
class _Loop:
    stop: str | None = None  # the flag a ``break`` sets
    skip: str | None = None  # the flag a ``continue`` sets


@dataclass
class _State:
    names: NameGen
    result: str = ""
    returned: str = ""
    loops: list[_Loop] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # flags some test reads
    flags: set[str] = field(default_factory=set)  # every flag made


def _line(small: cst.BaseSmallStatement, like: cst.CSTNode | None = None) -> cst.SimpleStatementLine:
    lines = getattr(like, "leading_lines", ()) if like is not None else ()
    return cst.SimpleStatementLine([small], leading_lines=lines)


def _set(name: str, value: cst.BaseExpression) -> cst.Assign:
    return cst.Assign([cst.AssignTarget(cst.Name(name))], value)


def _not_any(flags: list[str]) -> cst.BaseExpression:
    return cst.parse_expression(" and ".join(f"not {f}" for f in flags))


# --- what a statement does ----------------------------------------------------------------


def _jumps(stmt: cst.CSTNode, depth: int = 0) -> set[str]:
    """The jumps leaving ``stmt``: ``break``/``continue`` of loops outside it, and returns."""
    found: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Return):
                found.add("return")
            elif isinstance(small, cst.Break) and depth == 0:
                found.add("break")
            elif isinstance(small, cst.Continue) and depth == 0:
                found.add("continue")
    elif isinstance(stmt, cst.If):
        for block in _branches(stmt):
            for s in block:
                found |= _jumps(s, depth)
    elif isinstance(stmt, (cst.For, cst.While)):
        for s in stmt.body.body:
            found |= _jumps(s, depth + 1)
        if stmt.orelse is not None:
            for s in stmt.orelse.body.body:
                found |= _jumps(s, depth)
    return found


def _branches(stmt: cst.If) -> list[list]:
    out = [list(stmt.body.body)]
    if isinstance(stmt.orelse, cst.If):
        out.append([stmt.orelse])
    elif stmt.orelse is not None:
        out.append(list(stmt.orelse.body.body))
    return out


def _always_jumps(stmts: list) -> bool:
    """Does every path through ``stmts`` end in a jump (so nothing after it in the block runs)?"""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Break, cst.Continue)) for s in last.body)
    if isinstance(last, cst.If):
        branches = _branches(last)
        return len(branches) == 2 and all(_always_jumps(b) for b in branches)
    return False


# --- the rewrite ----------------------------------------------------------------------------


class _Rewrite:
    def __init__(self, state: _State) -> None:
        self.s = state

    def block(self, stmts: list) -> list:
        """``stmts`` without jumps; a jump ends the block's remaining statements."""
        out: list = []
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, cst.SimpleStatementLine):
                smalls: list = []
                for small in stmt.body:
                    if isinstance(small, (cst.Return, cst.Break, cst.Continue)):
                        if smalls:
                            out.append(stmt.with_changes(body=smalls))
                        out.extend(self.jump(small, stmt if not smalls else None))
                        return out  # what follows a jump never runs
                    smalls.append(small)
                out.append(stmt)
                continue
            if isinstance(stmt, (cst.For, cst.While)):
                out.extend(self.loop(stmt))
                escaping = _jumps(stmt) & {"return"}
            elif isinstance(stmt, cst.If):
                escaping = _jumps(stmt)
                if escaping:
                    return out + self.branch(stmt, stmts[k + 1:])
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=self.block(list(stmt.body.body))),
                                             orelse=self._orelse(stmt, [])))
                continue
            else:
                out.append(stmt)
                continue
            rest = stmts[k + 1:]
            if escaping and rest:
                out.append(self.guard(escaping, self.block(rest)))
                return out
        return out

    def _orelse(self, stmt: cst.If, rest: list):
        branches = _branches(stmt)
        if len(branches) == 1 and not rest:
            return None
        body = branches[1] if len(branches) == 2 else []
        return cst.Else(cst.IndentedBlock(self.block(body + rest) or [_line(cst.Pass())]))

    def branch(self, stmt: cst.If, rest: list) -> list:
        """An ``if`` a jump leaves, followed by ``rest``: put ``rest`` where it still runs."""
        branches = _branches(stmt)
        body = branches[0]
        other = branches[1] if len(branches) == 2 else []
        if _always_jumps(body):  # the rest runs only in the else branch
            return [stmt.with_changes(body=stmt.body.with_changes(body=self.block(body)), orelse=self._orelse(stmt, rest))]
        if len(branches) == 2 and _always_jumps(other):  # the rest runs only in the if branch
            new = stmt.with_changes(body=stmt.body.with_changes(body=self.block(body + rest) or [_line(cst.Pass())]),
                                    orelse=self._orelse(stmt, []))
            return [new]
        new = stmt.with_changes(body=stmt.body.with_changes(body=self.block(body) or [_line(cst.Pass())]),
                                orelse=self._orelse(stmt, []))
        out = [new]
        if rest:
            out.append(self.guard(_jumps(stmt), self.block(rest)))
        return out

    def guard(self, kinds: set[str], stmts: list) -> cst.If:
        flags = []
        loop = self.s.loops[-1] if self.s.loops else None
        if "continue" in kinds and loop is not None and loop.skip:
            flags.append(loop.skip)
        if "break" in kinds and loop is not None and loop.stop:
            flags.append(loop.stop)
        if "return" in kinds:
            flags.append(self.s.returned)
        self.s.used.update(flags)
        return cst.If(test=_not_any(flags), body=cst.IndentedBlock(stmts or [_line(cst.Pass())]))

    def jump(self, small, like) -> list:
        loop = self.s.loops[-1] if self.s.loops else None
        if isinstance(small, cst.Continue):
            assert loop is not None and loop.skip
            return [_line(_set(loop.skip, cst.Name("True")), like)]
        if isinstance(small, cst.Break):
            assert loop is not None and loop.stop
            return [_line(_set(loop.stop, cst.Name("True")), like)]
        if not self.s.result:  # no early return anywhere: the final return stays
            return [_line(small, like)]
        value = small.value if small.value is not None else cst.Name("None")
        # ``returned = True`` is dropped again when no guard ends up testing it
        return [_line(_set(self.s.result, value), like), _line(_set(self.s.returned, cst.Name("True")))]

    def loop(self, stmt) -> list:
        body = list(stmt.body.body)
        kinds: set[str] = set()
        for s in body:
            kinds |= _jumps(s)
        if stmt.orelse is not None and kinds & {"break", "continue"}:
            raise JumpError(stmt, "a loop with an else clause that breaks or continues is not differentiated",
                            "set a flag before the break and test it after the loop")
        if not kinds:
            return [stmt.with_changes(body=stmt.body.with_changes(body=self.block(body)))]
        names = self.s.names
        info = _Loop(
            stop=names.fresh("stop", numbered=False) if "break" in kinds else None,
            skip=names.fresh("skip", numbered=False) if "continue" in kinds else None,
        )
        self.s.flags.update(f for f in (info.stop, info.skip) if f)
        before: list = []
        if info.stop:
            before.append(_line(_set(info.stop, cst.Name("False"))))
        self.s.loops.append(info)
        try:
            new_body = self.block(body)
        finally:
            self.s.loops.pop()
        if info.skip:
            new_body = [_line(_set(info.skip, cst.Name("False"))), *new_body]
        ending = [f for f in (info.stop, self.s.returned if "return" in kinds else None) if f]
        self.s.used.update(ending)
        if isinstance(stmt, cst.While):
            if ending:
                test = cst.parse_expression(
                    " and ".join(f"not {f}" for f in ending) + f" and ({cst.Module([]).code_for_node(stmt.test)})"
                )
                stmt = stmt.with_changes(test=test)
        elif ending:
            new_body = [cst.If(test=_not_any(ending), body=cst.IndentedBlock(new_body or [_line(cst.Pass())]))]
        return [*before, stmt.with_changes(body=stmt.body.with_changes(body=new_body or [_line(cst.Pass())]))]


def _reads_after(stmts: list, k: int, names: set[str]) -> set[str]:
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in names:
                found.add(node.value)

    for s in stmts[k + 1:]:
        s.visit(V())
    return found


def _check_for_targets(stmts: list, outer_rest: list) -> None:
    """Refuse a ``for`` loop that breaks when its variable is read after the loop."""
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, cst.For):
            breaks = any("break" in _jumps(s) or "return" in _jumps(s) for s in stmt.body.body)
            if breaks:
                targets = set(targets_of(stmt.target))
                rest = stmts[k + 1:] + outer_rest
                read = _reads_after(rest, -1, targets)
                if read:
                    name = sorted(read)[0]
                    raise JumpError(
                        stmt,
                        f"the loop variable {name!r} is read after a loop that breaks",
                        f"keep the value you need in a variable of its own before the break (e.g. found = {name})",
                    )
            _check_for_targets(list(stmt.body.body), stmts[k + 1:] + outer_rest)
        elif isinstance(stmt, cst.While):
            _check_for_targets(list(stmt.body.body), stmts[k + 1:] + outer_rest)
        elif isinstance(stmt, cst.If):
            for branch in _branches(stmt):
                _check_for_targets(branch, stmts[k + 1:] + outer_rest)


class _IndexLoops(cst.CSTTransformer):
    """Loops over items become loops over indices.

    ``for row in xs:`` -> ``for i in range(len(xs)):`` + ``row = xs[i]``; an iterable that
    is not a name is first given one (``items = x * 2.0``); ``enumerate(xs)`` and ``zip(a, b)``
    index their sequences likewise.
    """

    def __init__(self, names: NameGen) -> None:
        super().__init__()
        self.names = names

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated.with_changes(body=self._block(list(updated.body)))

    def _block(self, stmts: list) -> list:
        out: list = []
        for stmt in stmts:
            if isinstance(stmt, cst.For) and stmt.orelse is None:
                out.extend(self._loop(stmt))
            else:
                out.append(stmt)
        return out

    def _loop(self, loop: cst.For) -> list:
        it = loop.iter
        before: list = []
        reads: list[tuple[cst.BaseExpression, str]] = []  # (target, sequence name)
        index_target: cst.BaseExpression | None = None
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and not any(a.keyword or a.star for a in it.args):
            fname = it.func.value
            if fname == "enumerate" and len(it.args) == 1 and _pair(loop.target):
                index_target = loop.target.elements[0].value
                seqs = [it.args[0].value]
                targets = [loop.target.elements[1].value]
            elif fname == "zip" and it.args and _pair(loop.target, len(it.args)):
                seqs = [a.value for a in it.args]
                targets = [el.value for el in loop.target.elements]
            else:
                return [loop]  # range, reversed and other calls stay as they are
        else:
            seqs, targets = [it], [loop.target]
        names = []
        for seq in seqs:
            if isinstance(seq, cst.Name):
                names.append(seq.value)
            else:
                name = self.names.fresh("items", numbered=False)
                before.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], seq)]))
                names.append(name)
        for target, name in zip(targets, names):
            reads.append((target, name))
        index = index_target if isinstance(index_target, cst.Name) else cst.Name(self.names.fresh("i", numbered=True))
        count = f"len({names[0]})" if len(names) == 1 else "min(" + ", ".join(f"len({n})" for n in names) + ")"
        body = [
            cst.SimpleStatementLine(
                [cst.Assign([cst.AssignTarget(target)], cst.parse_expression(f"{name}[{index.value}]"))]
            )
            for target, name in reads
        ]
        new = loop.with_changes(
            target=index,
            iter=cst.parse_expression(f"range({count})"),
            body=loop.body.with_changes(body=[*body, *loop.body.body]),
        )
        if before:  # the loop's origin comment goes first
            before[0] = before[0].with_changes(leading_lines=loop.leading_lines)
            new = new.with_changes(leading_lines=[])
        return [*before, new]


def _pair(target: cst.BaseExpression, n: int = 2) -> bool:
    return isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == n


def structure(node: cst.FunctionDef) -> cst.FunctionDef:
    """Rewrite ``break``, ``continue``, early returns and loops over arrays (see the module docstring)."""
    if _loops_over_items(node):
        node = node.visit(_IndexLoops(NameGen(scan(node).all)))
    body = list(node.body.body)
    kinds: set[str] = set()
    for s in body:
        kinds |= _jumps(s)
    last = body[-1] if body else None
    inner_return = any("return" in _jumps(s) for s in body[:-1]) or (
        last is not None and not isinstance(last, cst.SimpleStatementLine) and "return" in _jumps(last)
    ) or (isinstance(last, cst.SimpleStatementLine) and sum(isinstance(s, cst.Return) for s in last.body) > 1)
    has_loop_jumps = _has_loop_jumps(body)
    if not inner_return and not has_loop_jumps:
        return node
    _check_for_targets(body, [])
    names = NameGen(scan(node).all)
    state = _State(names)
    if inner_return:
        state.result = names.fresh("result", numbered=False)
        state.returned = names.fresh("returned", numbered=False)
        state.flags.add(state.returned)
        new_body = _Rewrite(state).block(body)
        prologue = []
        if state.returned in state.used:
            prologue.append(_line(_set(state.returned, cst.Name("False"))))
        if not _always_jumps(body):
            prologue.append(_line(_set(state.result, cst.Name("None"))))
        new_body = [*prologue, *new_body, _line(cst.Return(cst.Name(state.result)))]
    else:
        new_body = _Rewrite(state).block(body)
    unused = state.flags - state.used
    if unused:
        new_body = [s.visit(_DropFlags(unused)) for s in new_body]
    return node.with_changes(body=node.body.with_changes(body=new_body))


def _loops_over_items(node: cst.FunctionDef) -> bool:
    """Is there a ``for`` loop over anything but ``range(...)``?"""
    found = False

    class V(cst.CSTVisitor):
        def visit_For(self, n: cst.For) -> None:
            nonlocal found
            it = n.iter
            is_range = isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"
            found = found or (not is_range and n.orelse is None)

    node.body.visit(V())
    return found


class _DropFlags(cst.CSTTransformer):
    """Remove the assignments of flags no test reads."""

    def __init__(self, flags: set[str]) -> None:
        super().__init__()
        self.flags = flags

    def leave_SimpleStatementLine(self, original, updated):
        small = updated.body[0]
        if (
            len(updated.body) == 1
            and isinstance(small, cst.Assign)
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value in self.flags
        ):
            return cst.RemoveFromParent()
        return updated


def _has_loop_jumps(stmts: list) -> bool:
    for stmt in stmts:
        if isinstance(stmt, (cst.For, cst.While)):
            if any(_jumps(s) & {"break", "continue"} for s in stmt.body.body) or _has_loop_jumps(list(stmt.body.body)):
                return True
        elif isinstance(stmt, cst.If):
            if any(_has_loop_jumps(b) for b in _branches(stmt)):
                return True
    return False


