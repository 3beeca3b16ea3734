"""Reverse mode: from a function in A-normal form to its adjoint, as readable source.

The generated function runs the *forward sweep* (the original statements, plus
the saves the backward sweep needs) and then the *backward sweep*: the
statements in reverse order, each adding its operands' adjoints (``x_bar``),
using the rules in :mod:`srctrans.rules.derivatives`. This module names no
operation: every derivative comes from the table.

:class:`Reverse` is built of parts, one module each: :mod:`.ops` (what each statement is),
:mod:`.tape` (which values are saved, and how), this module (the forward sweep and the whole
function) and :mod:`.backward` (the backward sweep). What both AD modes refuse is
:mod:`.refusals`; calls of transformed functions in a body, :mod:`.calls`.

Saving values. A value the backward sweep reads (an operand of a rule, a
branch condition, a loop's trip count) is read directly when it is never
overwritten (assigned once, outside loops); otherwise it is copied right where
it is used (``y_1 = y``) or, inside loops, pushed on a tape (``y_tape.append(y)``)
and popped on the way back. Loops replay their trip count backwards; branches
replay the branch taken.

Adjoints. ``v_bar`` is written by its first contribution when ``v`` is assigned
once and used only in its own block; otherwise it starts as zeros at the start
of the backward sweep of the block that defines ``v``, and each reassignment of
``v`` restarts it, since the older value is a different variable.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import libcst as cst

from ..analysis.activity import Activity, analyze, names_in
from ..analysis.names import NameGen, scan
from ..analysis.resolve import LOCAL
from ..analysis.shapes import same_shapes
from ..analysis.views import array_facts, mutation_facts
from ..cache import ORIGIN_RE
from .backward import BackwardSweep
from .ops import Op, Operations
from .refusals import NotDifferentiable, complex_names, index_tricks, view_update_check
from .statements import aug_to_assign, empty_lists, lower_updates
from .tape import Save, Saves
from .text import code


class Reverse(Operations, Saves, BackwardSweep):
    """Builds the adjoint of one ANF function."""

    def __init__(
        self,
        node: cst.FunctionDef,
        resolve: Callable[[cst.BaseExpression], Any],
        wrt: tuple[str, ...],
        seed: str,
        has_aux: bool,
        name: str,
        np_name: str = "np",
        callee_vjp: Callable[[Any], str | None] | None = None,
        always_tuple: bool = False,
        custom_names: Callable[[Any], tuple[str, str] | None] | None = None,
        grads_only: bool = False,
        growable: bool = False,
        in_place: bool = False,
    ) -> None:
        self.grads_only = grads_only  # return the adjoints alone (a file another grad differentiates)
        self.growable = growable  # every tape a list pushed and popped (a file another grad differentiates)
        # a file no other transformation reads: a loop's reads x[i] add into x's rows in place
        self.in_place = in_place
        self.sinks: dict[str, str] = {}  # name -> the array its adjoints add into, in the loop being written
        self.sunk: set[str] = set()  # the sinks some contribution went into
        self.custom_names = custom_names
        self.np_name = np_name
        self.callee_vjp = callee_vjp
        self.always_tuple = always_tuple
        self.node = node
        self.resolve = resolve
        self.wrt = wrt
        self.seed = seed  # "grad" (seed 1.0, scalar output) or "vjp" (seed is a parameter)
        self.has_aux = has_aux
        self.name = name
        self.params = scan(node).params
        self.gen = NameGen(scan(node).all | {"np", "rt", "math"})
        self.body = list(node.body.body)
        self.lists = empty_lists(self.body)  # lists grown with append and shrunk with pop (tapes)
        self.ops: dict[int, Op] = {}
        self.file = self.line = None  # the user's line being transformed (origin comments)
        self.analyzing = True  # while analyzing, looking at a callee must not ask for its adjoint
        self.tricks = index_tricks(self.body, resolve)
        self.act: Activity = analyze(self.body, self.params, set(wrt), self._is_nondiff)
        # ``y[i] += v`` into a differentiated array: ``t = y[i]``, ``t1 = t + v``, ``y[i] = t1``
        lowered = lower_updates(self.body, self.act.active, self.gen)
        if lowered is not self.body:
            self.body = lowered
            self.act = analyze(self.body, self.params, set(wrt), self._is_nondiff)
        self.analyzing = False
        self.top = self.act.blocks[0]
        self.records: dict[tuple, Save] = {}  # (block, name, version) -> how the value is kept
        self.last_writes: dict[str, int] | None = None  # (Saves.frozen)
        self.bound_names: dict[str, int] | None = None
        self.top_of: dict[int, int] | None = None  # id of a loop -> its top-level statement (Saves.top_statement_of)
        self.loop_variables: set[str] = set()  # (Saves._bindings)
        self.single_reads: dict[str, tuple[int, cst.Subscript]] = {}  # name -> its one assignment, a read x[i]
        self.recipes: dict[tuple, tuple[int, cst.Subscript]] = {}  # saves read again: key -> (statement, value)
        self.plan_top: int | None = None  # the top-level statement being planned
        self.reader: dict[tuple[int, str], tuple] = {}  # (statement id, name) -> record key
        self.versions: dict[tuple[int, str], int] = {}
        self.tapes: list[str] = []
        self.counters: dict[int, tuple[str, str]] = {}  # id(loop) -> (counter, saved name)
        self.ranged: set[int] = set()  # loops over range(...): their trip count is known before they run
        self.indexed: dict[int, int] = {}  # body block of a range loop (outside loops) -> id(loop)
        self.trip: dict[int, str] = {}  # id(loop) -> the trip number that indexes its preallocated tapes
        self.bar_names: dict[str, str] = {}
        self.started: set[str] = set()  # adjoints written so far (for first-assignment)
        self.list_starts: dict[str, tuple[int, str]] = {}  # where the adjoint of a list of appends starts as []
        self.lines: list[str] = []
        self.seed_param = ""
        self.branch_if: dict[int, int] = {}  # block -> the ``if`` statement it is a branch of
        self.restarts: dict[int, tuple[str, bool]] = {}  # statement id -> (name restarted, older value saved?)
        self.plan_preceding: list = []
        self.plan_stack: list[list] = []  # statements before the compound statement being planned, per level
        facts = array_facts(self.body, self.params, self.resolve)
        self.mutated, self.aliased, self.views = facts.mutated, facts.aliased, facts.views
        self.slice_views, self.view_checks = facts.certain_views, facts.view_checks
        self.own_updates = facts.own_updates
        self.complex_names = complex_names(self.body, self.resolve)
        self.mutated |= self._passed_to_writers()
        self.written_params = [p for p in self.params if p in self.mutated and p in self.act.active]
        self.invariant = self._loop_invariants()
        self.tuple_valued: set[str] = set()  # names unpacked (their adjoint is a tuple)
        self.displayed: set[str] = set()  # names assigned a tuple or list display
        self.pending: dict[str, str] = {}  # restarted adjoints whose zeros wait for a first contribution

    def _passed_to_writers(self, body: list | None = None) -> set[str]:
        """Arrays this function (or ``body``) passes to a user function that writes into that parameter."""
        from ..analysis.resolve import is_user_function

        found: set[str] = set()
        resolve = self.resolve

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                fn = resolve(call.func)
                if fn is LOCAL or fn is None or not is_user_function(fn):
                    return
                written = _written_params(getattr(fn, "__srctrans_function__", fn))
                for k, arg in enumerate(call.args):
                    if arg.keyword is None and k in written and isinstance(arg.value, cst.Name):
                        found.add(arg.value.value)

        for stmt in self.body if body is None else body:
            stmt.visit(V())
        return found

    # --- emission -------------------------------------------------------------------------

    def emit(self, text: str, depth: int) -> None:
        self.lines.append("    " * depth + text)

    def _set_line(self, stmt) -> None:
        for line in getattr(stmt, "leading_lines", ()):
            if line.comment is not None:
                m = ORIGIN_RE.match(line.comment.value)
                if m:
                    self.file, self.line = m["file"], int(m["line"])

    def comments(self, stmt, depth: int) -> None:
        for line in getattr(stmt, "leading_lines", ()):
            if line.comment is not None:
                self.emit(line.comment.value, depth)

    def forward(self, stmts: list, depth: int) -> None:
        for stmt in stmts:
            self.comments(stmt, depth)
            self._set_line(stmt)
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Return):
                        continue
                    sid = id(small)
                    self._saves(sid, depth, after=False)
                    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
                        for check in view_update_check(small, self.view_checks, self.slice_views, self.file, self.line):
                            self.emit(check, depth)
                        small = aug_to_assign(small)  # a new value, never an update in place
                    op = self.ops.get(sid)
                    if op is not None and op.rule is not None and op.rule.kind == "custom":
                        target = small.targets[0].target.value
                        arguments = ", ".join(op.texts[p.name] for p in op.rule.params)
                        self.emit(f"{target}, {op.extra['res']} = {op.extra['fwd']}({arguments})", depth)
                    else:
                        self.emit(code(cst.SimpleStatementLine([small])).strip(), depth)
                    self._saves(sid, depth, after=True)
            elif isinstance(stmt, cst.If):
                self._saves(id(stmt), depth, after=False)
                self.emit(f"if {code(stmt.test)}:", depth)
                self.forward(stmt.body.body, depth + 1)
                if stmt.orelse is not None:
                    self.emit("else:", depth)
                    self.forward(stmt.orelse.body.body, depth + 1)
            elif isinstance(stmt, (cst.For, cst.While)):
                counter, saved = self.counters[id(stmt)]
                ranged = id(stmt) in self.ranged
                trip = self.trip.get(id(stmt))
                self.emit(f"{counter} = len({code(stmt.iter)})" if ranged else f"{counter} = 0", depth)
                if trip is not None:
                    self.emit(f"{trip} = 0", depth)
                if isinstance(stmt, cst.For):
                    self.emit(f"for {code(stmt.target)} in {code(stmt.iter)}:", depth)
                else:
                    self.emit(f"while {code(stmt.test)}:", depth)
                if not ranged:
                    self.emit(f"{counter} += 1", depth + 1)
                self.forward(stmt.body.body, depth + 1)
                if trip is not None:
                    self.emit(f"{trip} += 1", depth + 1)
                if saved != counter:
                    self.emit(f"{saved}.append({counter})", depth)

    def _saves(self, sid: int, depth: int, after: bool) -> None:
        here = [(key, save) for key, save in self.records.items() if save.at == (sid, after) and save.kind != "recompute"]
        indexed = [(key, save) for key, save in here if save.kind == "indexed"]
        if indexed:  # preallocated by the first trip, which knows what it saves
            self.emit(f"if {self.trip[indexed[0][1].loop]} == 0:", depth)
            for key, save in indexed:
                self.emit(f"{save.store} = rt.tape({key[1]}, {self.counters[save.loop][0]})", depth + 1)
        for key, save in here:
            value = key[1]
            # written in place later: keep a copy (when only its shape is read, a copy all the
            # same in a file another grad differentiates, which must not share the array)
            if key[1] in self.mutated and (save.copy or self.growable) and not (save.frozen and not self.growable):
                value = f"rt.snapshot({value})" if key[1] in self.views else f"{value}.copy()"
            if save.kind == "snap":
                self.emit(f"{save.store} = {value}", depth)
            elif save.kind == "indexed":
                self.emit(f"{save.store}[{self.trip[save.loop]}] = {value}", depth)
            else:
                self.emit(f"{save.store}.append({value})", depth)

    # --- the whole function ------------------------------------------------------------------

    def run(self) -> cst.FunctionDef:
        last = self.body[-1] if self.body else None
        ret = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return) else None
        if ret is None:
            raise NotDifferentiable("the function must end with a return statement", self.line)
        _check_single_return(self.body[:-1], self)
        value = ret.value
        if self.has_aux and isinstance(value, cst.Tuple) and value.elements:
            value = value.elements[0].value
        self.useful = self.act.useful(names_in(value) if value is not None else set())
        self.analyzing = True  # looking at the operations only: no callee adjoints yet
        try:
            self.shapes = same_shapes(self.body, self._elementwise, self._counts)
        finally:
            self.analyzing = False
        self._register_branches(self.body)
        self.plan(self.body, self.top)
        self.seed_param = ""
        if self.seed == "vjp":
            returned = ret.value.elements[0].value if self.has_aux else ret.value
            if isinstance(returned, cst.Name) and returned.value in self.act.active and returned.value not in self.mutated:
                self.seed_param = self.bar(returned.value)  # the cotangent is the result's adjoint
                self.started.add(returned.value)
            else:
                self.seed_param = self.gen.fresh("out_bar", numbered=False)
        if self.tapes:
            for tape in self.tapes:
                self.emit(f"{tape} = []", 1)
        for p in self.written_params:  # written in place: work on a copy, never the caller's array
            self.emit(f"{p} = {self.np_name}.copy({p})", 1)
        self.forward(self.body, 1)
        forward_lines = list(self.lines)
        self.lines = []
        self.backward(self.body, self.top, 1)
        backward_lines = self.lines
        results = []
        for p in self.wrt:
            if p in self.started:
                results.append(self.bar(p))
            else:
                backward_lines.append(f"    {self.bar(p)} = rt.zeros_like({p})")
                results.append(self.bar(p))
        if len(results) == 1 and not self.always_tuple:
            grads = results[0]
        else:
            grads = "(" + ", ".join(results) + ("," if len(results) == 1 else "") + ")"
        ret_value = ret.value
        out = code(ret_value.elements[0].value) if self.has_aux else code(ret_value)
        if not self.has_aux and isinstance(ret_value, cst.Tuple) and not ret_value.lpar:
            out = f"({out})"  # a tuple result stays one value beside the adjoints
        aux = code(ret_value.elements[1].value) if self.has_aux else None
        params = [*self.params, *([self.seed_param] if self.seed == "vjp" else [])]
        lines = [f"def {self.name}({', '.join(params)}):", *forward_lines, "    # --- backward ---", *backward_lines]
        if self.grads_only:
            lines.append(f"    return {grads}")
        else:
            lines.append(f"    return {out}, {aux}, {grads}" if aux is not None else f"    return {out}, {grads}")
        text = "\n".join(lines) + "\n"
        try:
            return cst.parse_statement(text)
        except cst.ParserSyntaxError as err:  # pragma: no cover - a bug here, shown with the text
            raise RuntimeError(f"reverse mode produced invalid code:\n{text}") from err


_WRITTEN: dict[types.CodeType, frozenset[int]] = {}  # keyed by the code object itself: ids get reused


def _written_params(fn) -> frozenset[int]:
    """Positions of the parameters user function ``fn`` writes into (``x[i] = ...``), directly."""
    key = fn.__code__
    if key not in _WRITTEN:
        from ..capture import capture
        from ..parse import parse_function

        try:
            node = parse_function(capture(fn)).node
        except Exception:  # its own transformation reports any problem with its source
            _WRITTEN[key] = frozenset()
            return _WRITTEN[key]
        if isinstance(node, cst.Lambda):  # one expression: it assigns nothing
            _WRITTEN[key] = frozenset()
            return _WRITTEN[key]
        params = [p.name.value for p in node.params.params]
        mutated = mutation_facts(list(node.body.body), tuple(params))[0]
        _WRITTEN[key] = frozenset(k for k, p in enumerate(params) if p in mutated)
    return _WRITTEN[key]


def _check_single_return(stmts: list, rev: Reverse) -> None:
    for stmt in stmts:
        rev._set_line(stmt)
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(isinstance(s, cst.Return) for s in stmt.body):
                raise NotDifferentiable(
                    "an early return is not differentiated yet", rev.line, "return once, at the end of the function"
                )
        elif isinstance(stmt, cst.If):
            _check_single_return(stmt.body.body, rev)
            if stmt.orelse is not None:
                _check_single_return(stmt.orelse.body.body, rev)
        elif isinstance(stmt, (cst.For, cst.While)):
            _check_single_return(stmt.body.body, rev)


def reverse(
    node, resolve, wrt, seed, has_aux, name, np_name="np", callee_vjp=None, always_tuple=False, custom_names=None,
    grads_only=False, growable=False, in_place=False,
) -> cst.FunctionDef:
    """The adjoint of ``node`` (ANF) with respect to the parameters ``wrt``.

    ``callee_vjp(fn)`` names the adjoint function of a user function ``fn`` called here
    (and arranges for it to be generated), or returns None when it cannot be.
    """
    return Reverse(
        node, resolve, wrt, seed, has_aux, name, np_name, callee_vjp, always_tuple, custom_names, grads_only, growable,
        in_place,
    ).run()
