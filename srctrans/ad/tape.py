"""Reverse mode's save policy: :class:`Save` and the :class:`Saves` part of
:class:`srctrans.ad.reverse.Reverse`.

A value the backward sweep reads (an operand of a rule, a branch condition, a loop's trip
count) is read directly when it is never overwritten (assigned once, outside loops);
otherwise it is copied right where it is used (``y_1 = y``) or, inside loops, pushed on a
tape (``y_tape.append(y)``, or rows of a preallocated array indexed by the trip) and popped on
the way back.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..analysis.activity import Block, names_in, targets_of
from ..analysis.views import written_in_place
from ..rules.derivatives import SHAPE_ONLY, Param, Rule
from ..rules.runtime_helpers import RUNTIME_DERIVATIVES
from .ops import Op
from .refusals import (
    NoRuleError,
    NotDifferentiable,
    refuse_complex,
    refuse_hidden_write,
    refuse_shared_write,
    refuse_view_update,
)
from .statements import appended, assigned_in, aug_to_assign, index_expr, inside, pure_call, reads_in, simple_statements
from .text import code


@dataclass
class Save:
    """How one value reaches the backward sweep: a copy (``snap``) or a tape, and where it is saved."""

    kind: str
    store: str
    at: tuple[int, bool]  # (statement id, after the statement?)
    local: str | None = None  # the name it is popped into on the way back
    loop: int | None = None  # kind "indexed": id of the range loop whose trips index the tape
    copy: bool = True  # an array written in place is copied, unless only its shape is read
    frozen: bool = False  # a view of an array no later statement writes: kept without a copy


class Saves:
    """Which values the backward sweep reads, and how each reaches it: read as it is when it is never
    overwritten, copied where it is used, or pushed on a tape inside loops (:class:`Save`). Part
    of :class:`srctrans.ad.reverse.Reverse`."""

    def stable(self, name: str) -> bool:
        if name in self.mutated:
            return False  # written in place somewhere: read it through a copy
        if name not in self.params and name not in self.act.defs:
            return True  # a global, builtin or closure value: never reassigned here
        return self.act.assigned_once_outside_loops(name, self.params) or name in self.invariant

    def frozen(self, name: str, top: int | None) -> bool:
        """Whether ``name``, written in place by earlier top-level statements (``Ls[k, r, c] =
        v`` in a loop that builds ``Ls``), keeps its value from top-level statement ``top`` on:
        assigned once outside loops, no later statement writes it or an array sharing its
        values in place. Reads of it from there on read the array itself, as of a stable name
        (the backward sweep runs after the last write)."""
        if top is None or self.growable or name in self.aliased or name in self.views or name in self.lists:
            return False  # (a file another grad differentiates keeps its saves as they were)
        if name not in self.params and name not in self.act.defs:
            return False
        if self._bindings().get(name, 0) != (0 if name in self.params else 1):
            return False
        sharing = {name} | {view for view in self.views if self._view_root(view) == name}
        return all(self._last_writes().get(n, -1) < top for n in sharing)

    def _bindings(self) -> dict[str, int]:
        """How many times each name is bound by a top-level ``name = ...``; a binding anywhere
        else (in a loop, a branch, a ``for`` target, a tuple) counts as many (-1)."""
        if self.bound_names is None:
            top = {
                id(small)
                for stmt in self.body
                if isinstance(stmt, cst.SimpleStatementLine)
                for small in stmt.body
            }
            counts: dict[str, int] = {}
            loop_targets: set[str] = set()
            reads: dict[str, list] = {}

            def bind(name: str, once: bool, plain: bool = False) -> None:
                counts[name] = counts.get(name, 0) + 1 if once and counts.get(name, 0) >= 0 else -1
                if not plain:  # (y += v, a, b = t: no single read to repeat)
                    reads.setdefault(name, []).append(None)

            class V(cst.CSTVisitor):
                def visit_Assign(self, n: cst.Assign) -> None:
                    for t in n.targets:
                        if isinstance(t.target, cst.Name):
                            bind(t.target.value, id(n) in top, plain=True)
                            reads.setdefault(t.target.value, []).append(
                                (id(n), n.value)
                                if isinstance(n.value, cst.Subscript) and isinstance(n.value.value, cst.Name)
                                else None
                            )
                        elif not isinstance(t.target, cst.Subscript):
                            for name in targets_of(t.target):
                                bind(name, False)

                def visit_AugAssign(self, n: cst.AugAssign) -> None:
                    if isinstance(n.target, cst.Name):
                        bind(n.target.value, False)

                def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                    if isinstance(n.target, cst.Name):
                        bind(n.target.value, False)

                def visit_For(self, n: cst.For) -> None:
                    for name in targets_of(n.target):
                        bind(name, False, plain=True)
                        reads.setdefault(name, []).append("for")
                    if isinstance(n.target, cst.Name):
                        loop_targets.add(n.target.value)

                def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
                    if isinstance(n.target, cst.Name):
                        bind(n.target.value, False)

            for stmt in self.body:
                stmt.visit(V())
            self.bound_names = counts
            # loop variables bound by nothing but for statements; names assigned once, a read x[i]
            self.loop_variables = {n for n in loop_targets if all(v == "for" for v in reads[n]) and n not in self.params}
            self.single_reads = {
                n: found[0] for n, found in reads.items() if len(found) == 1 and isinstance(found[0], tuple)
            }
        return self.bound_names

    def _last_writes(self) -> dict[str, int]:
        """The last top-level statement that writes each name in place (itself, or through a
        user function it is passed to)."""
        if self.last_writes is None:
            self.last_writes = {}
            for k, stmt in enumerate(self.body):
                for written in written_in_place([stmt]) | self._passed_to_writers([stmt]):
                    self.last_writes[written] = k
        return self.last_writes

    def top_statement_of(self, loop: cst.CSTNode) -> int | None:
        """The index of the top-level statement that is or holds loop ``loop``."""
        if self.top_of is None:
            self.top_of = {}
            for k, stmt in enumerate(self.body):
                stmt.visit(_Loops(self.top_of, k))
        return self.top_of.get(id(loop))

    def _view_root(self, name: str) -> str:
        seen: set[str] = set()
        while name in self.views and name not in seen:
            seen.add(name)
            name = self.views[name]
        return name

    def readable(self, name: str) -> bool:
        """Read as it is by the backward sweep: stable, or frozen from the statement planned now."""
        return self.stable(name) or self.frozen(name, self.plan_top)

    def _loop_invariants(self) -> set[str]:
        """Names assigned once, inside a loop, from values no iteration changes (``t = -k``).

        Every iteration gives them the same value, so the backward sweep reads the last one
        instead of a tape.
        """
        single: dict[str, cst.BaseExpression] = {}
        for stmt in simple_statements(self.body):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and isinstance(small.targets[0].target, cst.Name)
                    and len(self.act.defs.get(small.targets[0].target.value, [])) == 1
                ):
                    single[small.targets[0].target.value] = small.value
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, value in single.items():
                if name in found or name in self.mutated or name in self.lists or name in self.params:
                    continue
                if isinstance(value, cst.Call) and not pure_call(value, self.resolve):
                    continue
                reads = names_in(value)
                if name in reads:
                    continue
                if all(
                    r in found
                    or (r not in self.mutated and r not in self.params and r not in self.act.defs)
                    or (r not in self.mutated and self.act.assigned_once_outside_loops(r, self.params))
                    for r in reads
                ):
                    found.add(name)
                    changed = True
        return {n for n in found if self.act.defs[n][0].in_loop}

    def _check_carried(self, loop) -> None:
        """Refuse a differentiated value read in one iteration but assigned only in an earlier one."""
        body = loop.body.body
        outside = set(self.params)  # parameters hold a value before any loop
        for name, blocks in self.act.defs.items():
            if any(not inside(b, self.act.block_of[id(body)]) for b in blocks):
                outside.add(name)
        seen: set[str] = set()
        flat = list(simple_statements(body))
        for k, stmt in enumerate(flat):
            for name in sorted((reads_in(stmt) - seen - outside) & self.useful):
                if any(name in assigned_in(later) for later in flat[k:]):
                    raise NotDifferentiable(
                        f"{name!r} is read in a loop iteration before the loop assigns it",
                        self.line,
                        f"give {name} a value before the loop",
                    )
            seen |= assigned_in(stmt)

    def _restarts(self, name: str, block: Block) -> bool:
        """Does assigning ``name`` here end an older, differentiated value of it?"""
        if name not in self.act.active:
            return False
        if len(self.act.defs.get(name, [])) <= 1 and name not in self.params and not block.in_loop:
            return False
        return self._older_value_exists(name, block, self.plan_preceding)

    def need(self, stmt_id: int, name: str, block: Block, shape_only: bool = False) -> None:
        """The backward sweep reads ``name`` as it was at statement ``stmt_id`` (``@y``: just after it).

        Readers of the same value (same block, no assignment in between) share one save.
        """
        plain = name.lstrip("@")
        if (stmt_id, name) in self.reader or self.readable(plain):
            return
        key = (block.ident, plain, self.versions.get((block.ident, plain), 0))
        self.reader[(stmt_id, name)] = key
        if key in self.records:
            if not shape_only:
                self.records[key].copy = True
            return
        recipe = self._recipe(plain, block) if block.in_loop and not name.startswith("@") else None
        if recipe is not None:  # t9 = means[k], means never written from here on: read again
            self.records[key] = Save("recompute", "", (recipe[0], False))
            self.recipes[key] = recipe
            for index in sorted(names_in(recipe[1]) - {recipe[1].value.value}):
                self.need(recipe[0], index, block)  # (k, read where t9 was assigned)
            return
        if block.in_loop:
            store = self.gen.fresh(f"{plain}_tape", numbered=False)
            self.records[key] = self._tape(store, block, (stmt_id, name.startswith("@")))
            self.records[key].copy = not shape_only
        else:
            store = self.gen.fresh(plain, numbered=False)
            self.records[key] = Save("snap", store, (stmt_id, name.startswith("@")), copy=not shape_only)
        # t12 = Ls[k], a view of an array no later statement writes, and not written itself
        self.records[key].frozen = (
            plain in self.views
            and plain not in self._last_writes()
            and self.frozen(self._view_root(plain), self.plan_top)
        )

    def _recipe(self, name: str, block: Block) -> tuple[int, cst.Subscript] | None:
        """(statement id, value) when ``name`` is assigned once, in ``block``, a read of an array
        no later statement changes, at constant indices or loop variables (``t9 = means[k]``,
        ``row = x[i, :]``): the backward sweep reads it again instead of keeping it on a tape."""
        self._bindings()
        found = self.single_reads.get(name)
        defs = self.act.defs.get(name, [])
        if found is None or len(defs) != 1 or defs[0].ident != block.ident:
            return None
        value = found[1]
        base = value.value.value
        if base in self.lists or not self.readable(base):
            return None
        for element in value.slice:
            part = element.slice
            parts = [part.value] if isinstance(part, cst.Index) else [part.lower, part.upper, part.step]
            for p in parts:
                if isinstance(p, cst.UnaryOperation) and isinstance(p.operator, cst.Minus):
                    p = p.expression
                if p is None or isinstance(p, cst.Integer):
                    continue
                if isinstance(p, cst.Name) and (p.value in self.loop_variables or self.readable(p.value)):
                    continue
                return None
        return found

    def _tape(self, store: str, block: Block, at: tuple[int, bool]) -> Save:
        """A tape for values saved in loop body ``block``: preallocated when a range loop's
        trip count is known before it runs and every trip saves; else a list pushed and popped."""
        loop = self.indexed.get(block.ident)
        if loop is None:
            self.tapes.append(store)
            return Save("tape", store, at)
        if loop not in self.trip:
            self.trip[loop] = self.gen.fresh("trip", numbered=False)
        return Save("indexed", store, at, loop=loop)

    def assigned(self, name: str, block: Block) -> None:
        """``name`` gets a new value in ``block``: later readers need a save of their own."""
        k = (block.ident, name)
        self.versions[k] = self.versions.get(k, 0) + 1

    def plan(self, stmts: list, block: Block) -> None:
        for i, stmt in enumerate(stmts):
            if block is self.top:
                self.plan_top = i  # the top-level statement being planned (see frozen)
            self._set_line(stmt)
            if not isinstance(stmt, cst.SimpleStatementLine):
                self.plan_stack.append(stmts[:i])
                try:
                    self._plan_compound(stmt, block, i, stmts)
                finally:
                    self.plan_stack.pop()
                continue
            for small in stmt.body:
                self.plan_preceding = stmts[:i]
                self.plan_small(small, block, id(small))

    def _plan_compound(self, stmt, block: Block, i: int, stmts: list) -> None:
        """Plan an ``if`` or a loop: its branches or body, and what the backward sweep replays."""
        if isinstance(stmt, cst.If):
            before = (len(self.ops), len(self.restarts), len(self.records))
            child = self.act.block_of[id(stmt.body.body)]
            self.branch_if[child.ident] = id(stmt)
            other = self.act.block_of[id(stmt.orelse.body.body)] if stmt.orelse is not None else None
            if other is not None:
                self.branch_if[other.ident] = id(stmt)
            self.plan(stmt.body.body, child)
            if other is not None:
                self.plan(stmt.orelse.body.body, other)
            after = (len(self.ops), len(self.restarts), len(self.records))
            if isinstance(stmt.test, cst.Name) and after != before:  # the branch replays backwards
                self.need(id(stmt), stmt.test.value, block)
            for n in assigned_in(stmt):
                self.assigned(n, block)
        elif isinstance(stmt, (cst.For, cst.While)):
            if stmt.orelse is not None:
                raise NotDifferentiable("loops with an else clause are not differentiated yet", self.line)
            if isinstance(stmt, cst.For):
                if names_in(stmt.iter) & self.act.active:
                    raise NotDifferentiable(
                        "looping over a differentiated array is not differentiated yet",
                        self.line,
                        "loop over range(len(x)) and read x[i]",
                    )
                clash = set(targets_of(stmt.target)) & self.act.active
                if clash:
                    raise NotDifferentiable(
                        f"the loop variable {sorted(clash)[0]!r} also holds a differentiated value",
                        self.line,
                        "give the loop variable a name of its own",
                    )
            counter = self.gen.fresh("trips", numbered=False)
            saved = counter
            if block.in_loop:
                saved = self.gen.fresh(f"{counter}_tape", numbered=False)
                self.tapes.append(saved)
            self.counters[id(stmt)] = (counter, saved)
            self._check_carried(stmt)
            child = self.act.block_of[id(stmt.body.body)]
            # no loop ends early here (the control pass made jumps into flags): a loop over
            # range(...) runs len(range(...)) trips, so its tapes can be allocated whole
            if isinstance(stmt, cst.For) and self._counts(stmt):
                self.ranged.add(id(stmt))
                if not block.in_loop and not self.growable:
                    self.indexed[child.ident] = id(stmt)
            self.plan(stmt.body.body, child)
            for n in assigned_in(stmt):
                self.assigned(n, block)

    def plan_small(self, small, block: Block, sid: int) -> None:
        if isinstance(small, (cst.Break, cst.Continue)):
            raise NotDifferentiable(
                f"{type(small).__name__.lower()} inside a differentiated loop is not supported yet",
                self.line,
                "use a while loop whose condition says when to stop",
            )
        if isinstance(small, cst.Return):
            return
        pushed = appended(small, self.lists)
        if pushed is not None:
            tape, value = pushed
            if tape in self.useful:
                self.ops[sid] = Op("append", Rule("append", (Param("x"),)), {"x": value}, {"x": code(value)})
            self.assigned(tape, block)
            return
        if isinstance(small, cst.AugAssign):
            if not isinstance(small.target, cst.Name):  # into an array nothing differentiated reaches
                base = small.target.value.value if isinstance(small.target.value, cst.Name) else None
                if base is not None:
                    self.assigned(base, block)
                return
            if id(small) not in self.own_updates:  # y = y * a; y += v: y's own array
                refuse_view_update(small, self.slice_views, self.aliased, self.line)
            small = aug_to_assign(small)
        refuse_hidden_write(small, self.act.active, self.resolve, self.line)
        if not isinstance(small, cst.Assign):
            return
        target = small.targets[0].target
        if isinstance(target, cst.Subscript):
            base = target.value.value if isinstance(target.value, cst.Name) else None
            if base in self.useful:
                refuse_complex(small.value, self.line, self.complex_names, self.resolve)
            if base in self.act.active and id(small) not in self.own_updates:
                refuse_shared_write(base, self.views, self.aliased, self.line)
            if base in self.useful:
                self._plan_setitem(small, target, base, block, sid)
            if base is not None:
                self.assigned(base, block)  # later readers see a new version (saved as a copy)
            return
        names = targets_of(target)
        if isinstance(target, cst.Name) and self._restarts(target.value, block) and not self.simple(target.value, block):
            # the older value of the target keeps its own adjoint, which restarts at zero: at the
            # older value's own shape when this block surely assigned it before, else the newer's
            known = target.value in self.params or any(
                isinstance(st, cst.SimpleStatementLine) and target.value in assigned_in(st)
                for pre in [*self.plan_stack, self.plan_preceding]
                for st in pre
            )  # surely assigned before (a statement in a branch or a loop may not have run)
            if known:
                self.need(sid, target.value, block)
            self.restarts[sid] = (target.value, known)
        if not any(n in self.useful for n in names):
            for n in names:
                self.assigned(n, block)
            return  # its value never reaches the output
        refuse_complex(small.value, self.line, self.complex_names, self.resolve)
        if not isinstance(target, cst.Name):
            self._plan_unpack(small, target, block, sid)
            return
        op = self.op_of(small.value)
        if op is None or (op.rule is not None and op.rule.kind == "nondiff"):
            self.assigned(target.value, block)
            return
        self.ops[sid] = op
        if op.key == "pop":  # its adjoint restarts from zeros of the popped value's shape, trip by trip
            self.need(sid, "@" + target.value, block, shape_only=True)
        if op.key == "display":
            self.displayed.add(target.value)
        if op.rule is None:
            self.assigned(target.value, block)
            return
        for expr in op.args.values():  # a tuple or list written in the call: its names take the adjoints
            if isinstance(expr, (cst.Tuple, cst.List)) and names_in(expr) & self.act.active:
                loose = any(  # a starred, computed or tuple-valued element: not an array's adjoint
                    isinstance(el, cst.StarredElement)
                    or not isinstance(el.value, cst.Name)
                    or el.value.value in self.displayed
                    for el in expr.elements
                )
                if loose or op.rule.kind == "elementwise":
                    raise NotDifferentiable(
                        f"cannot differentiate through {code(expr)} written inside the call",
                        self.line,
                        "make it an array (np.array, np.stack) or give it a name of its own first",
                    )
        if op.rule.kind in ("elementwise", "vjp") and op.key not in RUNTIME_DERIVATIVES:
            # a differentiated value passed where the rule gives no derivative would lose its
            # share silently (np.clip's bounds); the runtime helpers' table says which of
            # their arguments are only read for a shape
            for param, expr in op.args.items():
                if (
                    self._carries(expr)
                    and param not in op.rule.templates
                    and param not in SHAPE_ONLY.get(op.key, ())
                ):
                    names = [p.name.lstrip("*") for p in op.rule.params]
                    nth = names.index(param) + 1 if param in names else 0
                    where = f"argument {nth}" if nth else f"argument {param!r}"
                    raise NoRuleError(f"{op.key} with respect to its {where} ({code(expr)})", self.line)
        if op.rule.kind == "custom":
            res = self.gen.fresh(f"{target.value}_res", numbered=False)
            op.extra["res"] = res
            if block.in_loop:  # one residual per iteration, kept on a tape
                store = self.gen.fresh(f"{res}_tape", numbered=False)
                key = (block.ident, res, 0)
                self.records[key] = self._tape(store, block, (sid, True))
                self.reader[(sid, "@" + res)] = key
            self.assigned(target.value, block)
            return
        # the values the templates of the active operands read
        read: set[str] = set(op.args) if op.rule.kind in ("callee", "vmapped") else set()
        shape_read: set[str] = set()  # parameters read only for their shape and dtype
        witnesses: set[str] = set()  # values of an operand's shape, read for that shape
        wants_ans = False
        op.shapes = self.shapes.get(sid, {})
        for param, template in op.rule.templates.items():
            expr = op.args.get(param)
            if op.rule.kind not in ("callee", "vmapped") and self._carries(expr):
                read |= {p.name for p in op.rule.params if "{" + p.name + "}" in template}
                wants_ans = wants_ans or "{ans}" in template
                if op.rule.kind == "elementwise" and len(op.args) > 1 and all(
                    isinstance(e, cst.Name) for e in op.args.values()
                ):
                    if param not in op.shapes:
                        shape_read.add(param)  # unbroadcast reads the operand's shape
                    elif op.shapes[param] is not None:
                        witnesses.add(op.shapes[param])
        shape_read = (shape_read - read) | (read & SHAPE_ONLY.get(op.key, frozenset()))
        for param in sorted(read | shape_read):
            expr = op.args.get(param)
            if expr is not None:
                for n in sorted(names_in(expr)):
                    self.need(sid, n, block, shape_only=param in shape_read)
        for n in sorted(witnesses):
            self.need(sid, n, block, shape_only=True)
        self.assigned(target.value, block)
        if wants_ans:  # the result itself, as it is just after this statement
            self.need(sid, "@" + target.value, block)

    def _plan_unpack(self, small: cst.Assign, target, block: Block, sid: int) -> None:
        """``a, b = t``: the adjoint of ``t`` is the tuple of ``a``'s and ``b``'s adjoints."""
        names = targets_of(target)
        value = small.value
        flat = all(isinstance(el.value, cst.Name) for el in target.elements)
        if not flat or not isinstance(value, cst.Name):
            raise NotDifferentiable("unpack a differentiated value into plain names, one level deep", self.line)
        for n in names:
            if n in self.useful and not self.simple(n, block) and (
                block.in_loop or len(self.act.defs.get(n, [])) > 1 or n in self.params
            ):
                raise NotDifferentiable(
                    f"{n!r} is unpacked here and assigned elsewhere too",
                    self.line,
                    f"unpack into a name of its own and assign it to {n} afterwards",
                )
        self.tuple_valued.add(value.value)
        self.ops[sid] = Op("unpack", Rule("unpack", (Param("x"),)), {"x": value}, {"x": value.value})
        for n in names:
            if n not in self.useful or not self.simple(n, block):
                self.need(sid, "@" + n, block, shape_only=True)  # zeros of its shape when nothing flows
            self.assigned(n, block)

    def _plan_setitem(self, small: cst.Assign, target: cst.Subscript, base: str, block: Block, sid: int) -> None:
        """``y[index] = v`` into a differentiated array: ``v`` takes the adjoint of what it overwrote."""
        index = index_expr(target.slice)
        value = small.value
        op = Op("setitem", Rule("setitem", ()), {"x": value, "index": index}, {"x": code(value), "index": code(index)})
        self.ops[sid] = op
        for n in sorted(names_in(index)):
            self.need(sid, n, block)
        if isinstance(value, cst.Name) and value.value in self.act.active:
            self.need(sid, value.value, block, shape_only=True)  # the adjoint takes its shape


class _Loops(cst.CSTVisitor):
    """Records the loops it meets under one top-level statement: id -> that statement's index."""

    def __init__(self, found: dict[int, int], top: int) -> None:
        super().__init__()
        self.found, self.top = found, top

    def visit_For(self, n: cst.For) -> None:
        self.found[id(n)] = self.top

    def visit_While(self, n: cst.While) -> None:
        self.found[id(n)] = self.top
