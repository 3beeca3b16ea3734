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

4. A loop over the rows of an array (or the items of a list or tuple) named by a
   variable, ``for row in xs:``, is a loop over indices: ``for i in range(len(xs)):``
   starting with ``row = xs[i]`` (reverse mode replays index loops).

A function without jumps or such loops comes out unchanged (the same node). Each new statement carries
the origin comment of the statement it replaces, so errors and comments still point at
the user's line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

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
                targets = set(scan_targets(stmt.target))
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


def scan_targets(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in scan_targets(el.value)]
    return []


class _IndexLoops(cst.CSTTransformer):
    """``for row in xs:`` -> ``for i in range(len(xs)):`` + ``row = xs[i]``."""

    def __init__(self, names: NameGen) -> None:
        super().__init__()
        self.names = names

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        if not isinstance(updated.iter, cst.Name) or updated.orelse is not None:
            return updated
        index = self.names.fresh("i", numbered=True)
        read = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(updated.target)], cst.parse_expression(f"{updated.iter.value}[{index}]"))]
        )
        return updated.with_changes(
            target=cst.Name(index),
            iter=cst.parse_expression(f"range(len({updated.iter.value}))"),
            body=updated.body.with_changes(body=[read, *updated.body.body]),
        )


def structure(node: cst.FunctionDef) -> cst.FunctionDef:
    """Rewrite ``break``, ``continue``, early returns and loops over arrays (see the module docstring)."""
    if _loops_over_names(node):
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


def _loops_over_names(node: cst.FunctionDef) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def visit_For(self, n: cst.For) -> None:
            nonlocal found
            found = found or (isinstance(n.iter, cst.Name) and n.orelse is None)

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


