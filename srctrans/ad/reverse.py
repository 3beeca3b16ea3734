"""Reverse mode: from a function in A-normal form to its adjoint, as readable source.

The generated function runs the *forward sweep* (the original statements, plus
the saves the backward sweep needs) and then the *backward sweep*: the
statements in reverse order, each adding its operands' adjoints (``x_bar``),
using the rules in :mod:`srctrans.rules.derivatives`. This module names no
operation: every derivative comes from the table.

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

import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from ..analysis.activity import Activity, Block, analyze, common_block, names_in, targets_of
from ..analysis.names import NameGen, scan
from ..analysis.resolve import LOCAL
from ..analysis.shapes import operation_kind, same_shapes
from ..analysis.views import array_facts, mutation_facts
from ..cache import ORIGIN_RE
from ..faces import api_transformation, face, is_instance
from ..rules.derivatives import DERIVATIVES, OPERATORS, SHAPE_ONLY, Param, Rule
from ..rules.lookup import qualified_name, rule_keys_by_id
from ..rules.memory import COMPLEX_DTYPES, REAL_PARTS, WRITES_FIRST_ARGUMENT, last_names
from ..rules.runtime_helpers import RUNTIME_DERIVATIVES
from .preaccumulate import preaccumulate
from .statements import RenameNames, appended, aug_to_assign, empty_lists, lower_updates, reads_in
from .text import code, fill_template, times

# --- rule lookup by identity ----------------------------------------------------------


class NoRuleError(Exception):
    """An active operation without a derivative rule (turned into a located error by the caller)."""

    def __init__(self, what: str, line: int | None) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


class NotDifferentiable(Exception):
    """A construct reverse mode does not handle yet (turned into a located error by the caller)."""

    def __init__(self, what: str, line: int | None, hint: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.line = line
        self.hint = hint


def index_tricks(body: list, resolve) -> dict[str, str]:
    """``{"t1": "r_"}`` for each ``t1 = np.r_`` (or ``np.c_``) in A-normal form: what
    desugar did not write as ``np.concatenate`` (a string directive, ``np.r_['0,2', a, b]``)."""
    import numpy

    found: dict[str, str] = {}

    class Find(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            if len(node.targets) == 1 and isinstance(target, cst.Name) and isinstance(node.value, cst.Attribute):
                value = resolve(node.value)
                for name in ("r_", "c_"):
                    if value is not None and value is getattr(numpy, name, None):
                        found[target.value] = name

    for stmt in body:
        stmt.visit(Find())
    return found


def refuse_index_trick(tricks: dict[str, str], value: cst.Subscript, line: int | None) -> None:
    """Refuse ``t1[...]`` where ``t1 = np.r_`` (see :func:`index_tricks`): its key holds the
    values, which indexing gives no derivative (jvp's tangent was zero)."""
    base = value.value
    if isinstance(base, cst.Name) and base.value in tricks:
        raise NotDifferentiable(
            f"np.{tricks[base.value]}[...] with a string directive ('0,2', 'r', 'c') or a step held in a name "
            "is not differentiated",
            line,
            "write it with np.concatenate, np.stack or np.expand_dims",
        )


@dataclass
class _Save:
    """How one value reaches the backward sweep: a copy (``snap``) or a tape, and where it is saved."""

    kind: str
    store: str
    at: tuple[int, bool]  # (statement id, after the statement?)
    local: str | None = None  # the name it is popped into on the way back
    loop: int | None = None  # kind "indexed": id of the range loop whose trips index the tape
    copy: bool = True  # an array written in place is copied, unless only its shape is read


@dataclass
class Op:
    """One differentiable operation: its rule and its arguments' source text by parameter."""

    key: str
    rule: Rule | None  # None: a plain copy ``v = a``
    args: dict[str, cst.BaseExpression] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)  # custom_vjp: fwd, bwd and residual names
    # elementwise: operands whose adjoint needs no ``unbroadcast`` (None) or takes the shape of
    # another value at hand (its name); see :mod:`srctrans.analysis.shapes`
    shapes: dict[str, str | None] = field(default_factory=dict)


# --- the transformation ---------------------------------------------------------------


class Reverse:
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
        self.records: dict[tuple, _Save] = {}  # (block, name, version) -> how the value is kept
        self.reader: dict[tuple[int, str], tuple] = {}  # (statement id, name) -> record key
        self.versions: dict[tuple[int, str], int] = {}
        self.tapes: list[str] = []
        self.counters: dict[int, tuple[str, str]] = {}  # id(loop) -> (counter, saved name)
        self.ranged: set[int] = set()  # loops over range(...): their trip count is known before they run
        self.indexed: dict[int, int] = {}  # body block of a range loop (outside loops) -> id(loop)
        self.trip: dict[int, str] = {}  # id(loop) -> the trip number that indexes its preallocated tapes
        self.bar_names: dict[str, str] = {}
        self.started: set[str] = set()  # adjoints written so far (for first-assignment)
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

    def _passed_to_writers(self) -> set[str]:
        """Arrays this function passes to a user function that writes into that parameter."""
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

        for stmt in self.body:
            stmt.visit(V())
        return found

    # --- classifying statements ---------------------------------------------------------

    def _is_nondiff(self, small: cst.Assign) -> bool:
        try:
            op = self.op_of(small.value)
        except (NoRuleError, NotDifferentiable):
            return False  # decided later, with a located error if it turns out active
        return op is not None and op.rule is not None and op.rule.kind == "nondiff"

    def _counts(self, loop: cst.For) -> bool:
        """Is ``loop`` a loop over ``range(...)`` (its trip count known before it runs)?"""
        return isinstance(loop.iter, cst.Call) and self.resolve(loop.iter.func) is range

    def _elementwise(self, value: cst.BaseExpression):
        """For the shape analysis: (the kind of ``value``'s operation, its arguments), or None.

        The kind is ``"elementwise"``, ``"number"`` (a result of one number, as ``np.sum(x)``)
        or ``"other"``.
        """
        return shape_kind(self.op_of, value, lambda op: op.texts)

    def op_of(self, value: cst.BaseExpression) -> Op | None:
        """The rule and arguments of an ANF right-hand side; None for constants."""
        if isinstance(value, cst.Name):
            return Op("copy", None, {"x": value})
        if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
            isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float))
        ):
            return None
        if isinstance(value, cst.BinaryOperation):
            key = OPERATORS.get(type(value.operator).__name__)
            return self._op(key, [value.left, value.right], {}, type(value.operator).__name__)
        if isinstance(value, cst.UnaryOperation):
            if isinstance(value.operator, cst.Not):
                return Op("not", DERIVATIVES["numpy.sign"], {})
            key = OPERATORS.get(type(value.operator).__name__)
            return self._op(key, [value.expression], {}, type(value.operator).__name__)
        if isinstance(value, (cst.Comparison, cst.BooleanOperation)):
            return Op("compare", DERIVATIVES["numpy.sign"], {})
        if isinstance(value, cst.Attribute):
            return self._op(f"ndarray.{value.attr.value}", [value.value], {}, f".{value.attr.value}")
        if isinstance(value, cst.Subscript):
            refuse_index_trick(self.tricks, value, self.line)
            return self._op("getitem", [value.value, _index_expr(value.slice)], {}, "indexing")
        if isinstance(value, (cst.List, cst.Tuple)):
            if not value.elements:
                return None  # an empty list: nothing to differentiate yet
            args = {str(i): el.value for i, el in enumerate(value.elements)}
            return Op("display", Rule("display", tuple(Param(k) for k in args)), args, {k: code(v) for k, v in args.items()})
        if isinstance(value, cst.Call):
            return self._call(value)
        raise NotDifferentiable(f"cannot differentiate {code(value)!r}", self.line)

    def _call(self, call: cst.Call) -> Op:
        func = call.func
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self.resolve(func.value) is LOCAL:
            if func.value.value in self.lists and func.attr.value == "pop" and not call.args:
                return Op("pop", Rule("pop", (Param("x"),)), {"x": func.value}, {"x": func.value.value})
            key = f"ndarray.{func.attr.value}"
            return self._op(key, [func.value, *positional], keywords, f".{func.attr.value}()")
        obj = self.resolve(func)
        if obj is LOCAL and isinstance(func, cst.Name):
            made = vmap_made_here(func.value, self.body, self.resolve, self.params)
            if made is not None:  # ``batched = srctrans.vmap(f, ...)`` earlier in the function
                return self._vmapped(made, func.value, positional, keywords, func.value)
        if obj is LOCAL or obj is None:
            raise NotDifferentiable(
                f"cannot differentiate a call of {code(func)}, a value computed inside the function", self.line
            )
        key = rule_keys_by_id().get(id(obj))
        if key is None:
            from ..analysis.resolve import is_user_function

            label = qualified_name(obj, code(func))
            if is_vmapped(obj):
                return self._vmapped(obj, code(func), positional, keywords, label)
            refusal = transformation_refusal(obj, code(func), "grad")
            if refusal is not None:
                raise NotDifferentiable(refusal[0], self.line, refusal[1])
            if is_user_function(obj):
                return self._callee(obj, positional, keywords, label)
            if getattr(obj, "fwd", None) is not None and getattr(obj, "bwd", None) is not None:
                return self._custom(obj, positional, keywords, label)
            if type(obj).__name__ == "custom_vjp":
                raise NotDifferentiable(f"{label} is a custom_vjp without defvjp(fwd, bwd)", self.line)
            raise NoRuleError(label, self.line)
        return self._op(key, positional, keywords, key)

    def _callee(self, obj, positional, keywords, label: str) -> Op:
        """A call of a user function: differentiated through its own adjoint, ``f_vjp``."""
        import inspect

        from ..analysis.resolve import literal_text
        from ..rules.derivatives import Param

        fn = getattr(obj, "__srctrans_function__", obj)
        params = list(inspect.signature(fn).parameters.values())
        args: dict[str, cst.BaseExpression] = {}
        texts: dict[str, str] = {}
        if len(positional) > len(params):
            raise NotDifferentiable(f"{label} is called with more arguments than it takes", self.line)
        for p, value in zip(params, positional):
            args[p.name] = value
        args.update(keywords)
        # the adjoint of the callee for the arguments that carry a differentiated value only:
        # ``layer_vjp_W`` computes no adjoint for the data it is given
        active = () if self.analyzing else tuple(p.name for p in params if p.name in args and self._carries(args[p.name]))
        active = active or tuple(p.name for p in params)  # (a call nothing differentiated reaches: never run backward)
        if self.analyzing:
            vjp_name = "callee"
        else:
            vjp_name = self.callee_vjp(fn, active) if self.callee_vjp is not None else None
        if vjp_name is None:
            raise NotDifferentiable(f"cannot differentiate the call of {label}", self.line)
        for p in params:
            if p.name in args:
                texts[p.name] = code(args[p.name])
            elif p.default is not p.empty and literal_text(p.default) is not None:
                texts[p.name] = literal_text(p.default)
            else:
                raise NotDifferentiable(f"{label} is called without its argument {p.name!r}", self.line)
        rule = Rule("callee", tuple(Param(p.name) for p in params), {p.name: "" for p in params})
        return Op(vjp_name, rule, args, texts, extra={"active": active})

    def _vmapped(self, obj, receiver: str, positional, keywords, label: str) -> Op:
        """A call of a function batched by ``srctrans.vmap`` (a global, a closure value, or made
        earlier in the function): its adjoint is the vmap of the function's vjp, which the
        backward sweep calls as ``receiver.vjp(...)`` (see ``VMapped.vjp``)."""
        params = vmapped_params(obj, len(positional))
        check_vmapped_call(obj, receiver, positional, keywords, "grad", self.line)
        args = dict(zip(params, positional))
        texts = {p: code(v) for p, v in args.items()}
        rule = Rule("vmapped", tuple(Param(p) for p in params), {p: "" for p in params})
        return Op(receiver, rule, args, texts, {"receiver": receiver})

    def _custom(self, obj, positional, keywords, label: str) -> Op:
        """A call of a ``custom_vjp`` function: its ``fwd`` runs forward, its ``bwd`` backward."""
        import inspect

        from ..rules.derivatives import Param

        if keywords:
            raise NotDifferentiable(f"call {label} with positional arguments only", self.line)
        names = None if self.analyzing or self.custom_names is None else self.custom_names(obj)
        if not self.analyzing and names is None:
            raise NotDifferentiable(f"cannot differentiate the call of {label}", self.line)
        params = list(inspect.signature(obj.fun).parameters.values())
        if len(positional) != len(params):
            raise NotDifferentiable(f"{label} takes {len(params)} arguments, got {len(positional)}", self.line)
        args = {p.name: value for p, value in zip(params, positional)}
        texts = {p.name: code(value) for p, value in zip(params, positional)}
        rule = Rule("custom", tuple(Param(p.name) for p in params), {p.name: "" for p in params})
        fwd, bwd = names or ("fwd", "bwd")
        return Op(label, rule, args, texts, {"fwd": fwd, "bwd": bwd})

    def _op(self, key: str | None, positional, keywords, label: str) -> Op:
        if key is None or key not in DERIVATIVES:
            raise NoRuleError(key or label, self.line)
        rule = DERIVATIVES[key]
        if rule.kind == "nondiff":
            return Op(key, rule, {})
        args: dict[str, cst.BaseExpression] = {}
        texts: dict[str, str] = {}
        params = list(rule.params)
        if params and params[-1].name.startswith("*"):  # ``x.reshape(4, 3)``: the rest as one tuple
            star = params.pop().name[1:]
            rest = positional[len(params):]
            positional = positional[: len(params)]
            if rest:
                args[star] = rest[0] if len(rest) == 1 else cst.Tuple([cst.Element(v) for v in rest])
        for param, value in zip(params, positional):
            args[param.name] = value
        if len(positional) > len(params):
            raise NotDifferentiable(f"{key} called with more arguments than its rule knows", self.line)
        for kw, value in keywords.items():
            if kw not in {p.name.lstrip("*") for p in rule.params}:
                raise NotDifferentiable(f"{key} called with keyword {kw!r}, which its rule does not know", self.line)
            args[kw] = value
        for param in rule.params:
            if param.name.startswith("*"):
                texts[param.name[1:]] = code(args[param.name[1:]]) if param.name[1:] in args else "()"
                continue
            if param.name in args:
                texts[param.name] = code(args[param.name])
            elif param.default is not None:
                texts[param.name] = param.default
            else:
                raise NotDifferentiable(f"{key} is missing its argument {param.name!r}", self.line)
        return Op(key, rule, args, texts)

    # --- which values must be saved --------------------------------------------------------

    def stable(self, name: str) -> bool:
        if name in self.mutated:
            return False  # written in place somewhere: read it through a copy
        if name not in self.params and name not in self.act.defs:
            return True  # a global, builtin or closure value: never reassigned here
        return self.act.assigned_once_outside_loops(name, self.params) or name in self.invariant

    def _loop_invariants(self) -> set[str]:
        """Names assigned once, inside a loop, from values no iteration changes (``t = -k``).

        Every iteration gives them the same value, so the backward sweep reads the last one
        instead of a tape.
        """
        single: dict[str, cst.BaseExpression] = {}
        for stmt in _simple_statements(self.body):
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
                if isinstance(value, cst.Call) and not _pure_call(value, self.resolve):
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
            if any(not _inside(b, self.act.block_of[id(body)]) for b in blocks):
                outside.add(name)
        seen: set[str] = set()
        flat = list(_simple_statements(body))
        for k, stmt in enumerate(flat):
            for name in sorted((reads_in(stmt) - seen - outside) & self.useful):
                if any(name in _assigned_in(later) for later in flat[k:]):
                    raise NotDifferentiable(
                        f"{name!r} is read in a loop iteration before the loop assigns it",
                        self.line,
                        f"give {name} a value before the loop",
                    )
            seen |= _assigned_in(stmt)

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
        if (stmt_id, name) in self.reader or self.stable(plain):
            return
        key = (block.ident, plain, self.versions.get((block.ident, plain), 0))
        self.reader[(stmt_id, name)] = key
        if key in self.records:
            if not shape_only:
                self.records[key].copy = True
            return
        if block.in_loop:
            store = self.gen.fresh(f"{plain}_tape", numbered=False)
            self.records[key] = self._tape(store, block, (stmt_id, name.startswith("@")))
            self.records[key].copy = not shape_only
        else:
            store = self.gen.fresh(plain, numbered=False)
            self.records[key] = _Save("snap", store, (stmt_id, name.startswith("@")), copy=not shape_only)

    def _tape(self, store: str, block: Block, at: tuple[int, bool]) -> _Save:
        """A tape for values saved in loop body ``block``: preallocated when a range loop's
        trip count is known before it runs and every trip saves; else a list pushed and popped."""
        loop = self.indexed.get(block.ident)
        if loop is None:
            self.tapes.append(store)
            return _Save("tape", store, at)
        if loop not in self.trip:
            self.trip[loop] = self.gen.fresh("trip", numbered=False)
        return _Save("indexed", store, at, loop=loop)

    def assigned(self, name: str, block: Block) -> None:
        """``name`` gets a new value in ``block``: later readers need a save of their own."""
        k = (block.ident, name)
        self.versions[k] = self.versions.get(k, 0) + 1

    def plan(self, stmts: list, block: Block) -> None:
        for i, stmt in enumerate(stmts):
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
            for n in _assigned_in(stmt):
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
            for n in _assigned_in(stmt):
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
                isinstance(st, cst.SimpleStatementLine) and target.value in _assigned_in(st)
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
        index = _index_expr(target.slice)
        value = small.value
        op = Op("setitem", Rule("setitem", ()), {"x": value, "index": index}, {"x": code(value), "index": code(index)})
        self.ops[sid] = op
        for n in sorted(names_in(index)):
            self.need(sid, n, block)
        if isinstance(value, cst.Name) and value.value in self.act.active:
            self.need(sid, value.value, block, shape_only=True)  # the adjoint takes its shape

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
        here = [(key, save) for key, save in self.records.items() if save.at == (sid, after)]
        indexed = [(key, save) for key, save in here if save.kind == "indexed"]
        if indexed:  # preallocated by the first trip, which knows what it saves
            self.emit(f"if {self.trip[indexed[0][1].loop]} == 0:", depth)
            for key, save in indexed:
                self.emit(f"{save.store} = rt.tape({key[1]}, {self.counters[save.loop][0]})", depth + 1)
        for key, save in here:
            value = key[1]
            # written in place later: keep a copy (when only its shape is read, a copy all the
            # same in a file another grad differentiates, which must not share the array)
            if key[1] in self.mutated and (save.copy or self.growable):
                value = f"rt.snapshot({value})" if key[1] in self.views else f"{value}.copy()"
            if save.kind == "snap":
                self.emit(f"{save.store} = {value}", depth)
            elif save.kind == "indexed":
                self.emit(f"{save.store}[{self.trip[save.loop]}] = {value}", depth)
            else:
                self.emit(f"{save.store}.append({value})", depth)

    # --- backward ---------------------------------------------------------------------------

    def bar(self, name: str) -> str:
        if name not in self.bar_names:
            self.bar_names[name] = self.gen.fresh(f"{name}_bar", numbered=False)
        return self.bar_names[name]

    def simple(self, name: str, block: Block) -> bool:
        """``name_bar`` may be written by its first contribution (no zeros needed).

        True when ``name`` is assigned once, in ``block``, and read only there, after the
        assignment (so no read in a later loop iteration sees an older value).
        """
        if name in self.mutated or name in self.lists:
            return False  # written in place (or a list): its adjoint must be an object of its own
        defs = self.act.defs.get(name, [])
        uses = self.act.uses.get(name, [])
        if name in self.params:
            return not defs and all(u is block for u in uses) and block is self.top
        if not (len(defs) == 1 and defs[0] is block and all(u is block for u in uses)):
            return False
        if not block.in_loop:
            return True
        first_def = next((i for i, st in enumerate(block.stmts) if name in _assigned_in(st)), None)
        reads = [i for i, st in enumerate(block.stmts) if name in reads_in(st)]
        return first_def is not None and all(i > first_def for i in reads)

    def _branch_local(self, name: str, home: Block) -> bool:
        """Is ``name`` assigned only inside branches below ``home``, outside loops?

        Such a value exists only on some paths (an adjoint file's forward and backward
        branches test the same condition), so ``zeros_like`` cannot be called on it at
        ``home``; without loops, its first contribution can start its adjoint instead.
        """
        defs = self.act.defs.get(name, [])
        blocks = [*defs, *self.act.uses.get(name, [])]
        return (
            name not in self.params
            and name not in self.lists
            and name not in self.mutated
            and bool(defs)
            and all(b is not home for b in defs)
            and not home.in_loop
            and not any(b.in_loop for b in blocks)
        )

    def home(self, name: str) -> Block:
        """The innermost block holding every assignment and every read of ``name``."""
        if name in self.params:
            return self.top
        return common_block([*self.act.defs.get(name, []), *self.act.uses.get(name, [])], self.top)

    def contribute(self, name: str, expr: str, depth: int, block: Block) -> None:
        if name not in self.act.active:
            return
        sink = self.sinks.get(name)
        if sink is not None:  # a loop's contributions add into an array of their own, in place
            self.emit(f"{sink} += {expr}", depth)
            self.sunk.add(name)
            return
        bar = self.bar(name)
        if name in self.tuple_valued and name in self.started:
            raise NotDifferentiable(
                f"the tuple {name} is used more than once after it is unpacked", self.line, "unpack it once"
            )
        if name in self.displayed and name in self.started:  # adjoints of tuples do not add up with +
            raise NotDifferentiable(
                f"the tuple or list {name} is used more than once", self.line, "write it out at each use"
            )
        if name in self.pending:  # restarted just before: this contribution is its start
            del self.pending[name]
            self.emit(f"{bar} = {expr}", depth)
        elif name in self.started:
            self.emit(f"{bar} = {bar} + {expr}", depth)
        else:
            self.emit(f"{bar} = {expr}", depth)
            self.started.add(name)

    def zero_inits(self, block: Block, depth: int) -> None:
        names = sorted(
            n for n in self.act.active & self.useful if self.home(n) is block and not self.simple(n, block)
        )  # an adjoint nothing flows into needs no start
        for n in names:
            if n in self.params and n not in self.wrt and not self.act.defs.get(n):
                continue  # (an argument the function reassigns, as a loop's state, holds differentiated values)
            if self._branch_local(n, block):
                continue  # its first contribution starts it, on the paths where it exists
            if self.seed_param and self.bar(n) == self.seed_param:
                continue  # the cotangent passed in is this adjoint's start
            self.emit(f"{self.bar(n)} = []" if n in self.lists else f"{self.bar(n)} = rt.zeros_like({n})", depth)
            self.started.add(n)

    def backward(self, stmts: list, block: Block, depth: int) -> None:
        self.zero_inits(block, depth)
        for group in reversed(_groups(stmts)):
            start = len(self.lines)
            if not preaccumulate(self, group, block, depth):  # a recurrence in a loop: see preaccumulate
                for stmt in reversed(group):
                    self._backward_stmt(stmt, block, depth)
            if len(self.lines) > start:
                for line in reversed(getattr(group[0], "leading_lines", ())):
                    if line.comment is not None:
                        self.lines.insert(start, "    " * depth + line.comment.value)

    def _backward_stmt(self, stmt, block: Block, depth: int) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in reversed(stmt.body):
                self._backward_small(small, block, depth)
        elif isinstance(stmt, cst.If):
            test = stmt.test.value if isinstance(stmt.test, cst.Name) else None
            start = len(self.lines)
            body_block = self.act.block_of[id(stmt.body.body)]
            self.backward(stmt.body.body, body_block, depth + 1)
            has_body = len(self.lines) > start
            body_lines = self.lines[start:]
            del self.lines[start:]
            else_lines: list[str] = []
            if stmt.orelse is not None:
                self.backward(stmt.orelse.body.body, self.act.block_of[id(stmt.orelse.body.body)], depth + 1)
                else_lines = self.lines[start:]
                del self.lines[start:]
            if not has_body and not else_lines:
                return
            cond = self._read(id(stmt), test, depth) if test else code(stmt.test)
            if has_body:
                self.emit(f"if {cond}:", depth)
                self.lines.extend(body_lines)
                if else_lines:
                    self.emit("else:", depth)
                    self.lines.extend(else_lines)
            else:
                self.emit(f"if not {cond}:", depth)
                self.lines.extend(else_lines)
        elif isinstance(stmt, (cst.For, cst.While)):
            counter, saved = self.counters[id(stmt)]
            opened = self._open_sinks(stmt)
            start = len(self.lines)
            self.backward(stmt.body.body, self.act.block_of[id(stmt.body.body)], depth + 1)
            body_lines = self.lines[start:]
            del self.lines[start:]
            used = [(name, self.sinks.pop(name)) for name in opened if name in self.sunk]
            for name in opened:
                self.sinks.pop(name, None)
            if not body_lines:
                return
            for name, rows in used:
                self.emit(f"{rows} = rt.zeros_like({name})", depth)
            trips = f"{saved}.pop()" if saved != counter else counter
            trip = self.trip.get(id(stmt))
            if trip is not None:  # the trips again, last first: they index the tapes
                self.emit(f"for {trip} in range({trips} - 1, -1, -1):", depth)
            else:
                self.emit(f"for _ in range({trips}):", depth)
            self.lines.extend(body_lines)
            for name, rows in used:
                self.contribute(name, rows, depth, block)

    def _open_sinks(self, loop) -> list[str]:
        """The names whose adjoints ``loop`` adds into an array of their own, in place.

        Added up functionally, each read's adjoint is a new array: a read ``x[i]`` costs a
        whole array of zeros plus its rows (``x_bar = x_bar + rt.getitem_grad(g, x, i)``), so
        a loop over the rows of x would cost O(rows) per trip, and ``W @ h`` costs two
        matrices (``W_bar = W_bar + rt.dot_grad_x(g, W, h)``). For a value no iteration
        changes (a parameter, or a name assigned once before the loop and never written in
        place), the loop's contributions instead add into ``x_loop_bar`` in place
        (``rt.getitem_grad_add(x_loop_bar, g, i)``, ``W_loop_bar = rt.dot_grad_x_add(W_loop_bar,
        g, W, h)``, ``x_loop_bar += ...``), an array made for this loop alone, so nothing else
        sees it change; after the loop it is added to ``x_bar`` once. Only in files no other
        transformation reads (``in_place``).
        """
        if not self.in_place:
            return []
        opened = []
        reads = names_in(loop.body) - _assigned_in(loop)  # (an assignment in the loop reads the adjoint)
        for name in sorted(reads & self.act.active & self.useful):
            if name in self.sinks or name in self.lists or name in self.tuple_valued or name in self.displayed:
                continue
            if not self.stable(name) or name in self.aliased or name in self.views:
                continue
            self.sinks[name] = self.gen.fresh(f"{name}_loop_bar", numbered=False)
            opened.append(name)
        return opened

    def restart_adjoint(self, g: str, target: str, restart: tuple[str, bool], older: str | None, depth: int) -> str:
        """Hold adjoint ``g`` of ``target`` under a new name and restart the adjoint of the older
        value (``restart``: its name, and whether ``older``, its value's text, is at hand) from
        zeros, now or at its first contribution; the held name is returned."""
        name, known = restart
        held = self.gen.fresh(f"{target}_bar", numbered=False)
        self.emit(f"{held} = {g}", depth)
        zeros = f"{g} = rt.zeros_like({older if known else held})"
        if name in self.mutated:
            self.emit(zeros, depth)
        else:
            self.pending[name] = zeros
        return held

    def _read(self, sid: int, name: str, depth: int) -> str:
        """The saved value of ``name`` at statement ``sid``, popping it from its tape the first time."""
        key = self.reader.get((sid, name))
        if key is None:
            return name.lstrip("@")
        save = self.records[key]
        if save.kind == "snap":
            return save.store
        if save.local is None:
            save.local = self.gen.fresh(key[1], numbered=False)
            if save.kind == "indexed":
                self.emit(f"{save.local} = {save.store}[{self.trip[save.loop]}]", depth)
            else:
                self.emit(f"{save.local} = {save.store}.pop()", depth)
        return save.local

    def _backward_small(self, small, block: Block, depth: int) -> None:
        if isinstance(small, cst.SimpleStatementLine):  # pragma: no cover - defensive
            return
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            small_id = id(small)
            small = aug_to_assign(small)
        else:
            small_id = id(small)
        if isinstance(small, cst.Return):
            self._seed(small, block, depth)
            return
        op = self.ops.get(small_id)
        if op is not None and op.key == "setitem":
            self._backward_setitem(small, op, small_id, block, depth)
            return
        if op is not None and op.key == "unpack":
            values = {name: self._read(small_id, name, depth) for (s, name) in list(self.reader) if s == small_id}
            parts = []
            for n in targets_of(small.targets[0].target):
                if n in self.useful and n in self.started:
                    parts.append(self.bar(n))
                else:
                    parts.append(f"rt.zeros_like({values.get('@' + n, n)})")
            if op.args["x"].value in self.act.active:
                self.contribute(op.args["x"].value, "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")", depth, block)
            return
        if op is not None and op.key == "append":  # what was pushed takes the adjoint popped
            tape = appended(small, self.lists)[0]
            value = op.args["x"]
            if isinstance(value, cst.Name) and value.value in self.act.active:
                self.contribute(value.value, f"{self.bar(tape)}.pop()", depth, block)
            else:
                self.emit(f"{self.bar(tape)}.pop()", depth)
            return
        if op is not None and op.key == "pop" and isinstance(small, cst.Assign):
            target = small.targets[0].target.value
            if op.args["x"].value in self.act.active and target not in self.started:
                self.emit(f"{self.bar(op.args['x'].value)}.append(rt.zeros_like({target}))", depth)
                return
        restart = self.restarts.get(small_id)
        readers = [name for (s, name) in self.reader if s == small_id]
        flows = (
            op is not None
            and isinstance(small, cst.Assign)
            and any(self._carries(e) for e in op.args.values())
        )
        target = small.targets[0].target.value if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name) else None
        if not flows or target not in self.started:
            # nothing flows back through this value; its saved values are still popped, and
            # an older value of the target still gets a fresh adjoint
            values = {name: self._read(small_id, name, depth) for name in readers}
            if restart is not None and restart[0] in self.started:
                name, known = restart
                shape_of = values[name] if known else self.bar(name)
                self.emit(f"{self.bar(name)} = rt.zeros_like({shape_of})", depth)
            return
        g = self.bar(target)
        values = {name: self._read(small_id, name, depth) for name in readers}
        if restart is not None:
            # the older value of ``target`` is another variable: its adjoint starts afresh, from
            # zeros, or from its first contribution when that comes in this very statement
            g = self.restart_adjoint(g, target, restart, values[restart[0]] if restart[1] else None, depth)
        self._apply(op, g, target, values, depth, block)
        if restart is not None and restart[0] in self.pending:
            self.emit(self.pending.pop(restart[0]), depth)

    def _backward_setitem(self, small: cst.Assign, op: Op, sid: int, block: Block, depth: int) -> None:
        target = small.targets[0].target
        base = target.value.value
        values = {name: self._read(sid, name, depth) for (s, name) in list(self.reader) if s == sid}
        if base not in self.started:
            return
        g = self.bar(base)
        rename = RenameNames(values)
        value = op.args["x"]
        if isinstance(value, cst.Name) and value.value in self.act.active:
            index = code(op.args["index"].visit(rename))
            v = values.get(value.value, value.value)
            if self.growable:  # a file another grad differentiates: a copy taken, then a plain write
                self.contribute(value.value, f"rt.unbroadcast({self.np_name}.copy({g}[{index}]), {v})", depth, block)
                self.emit(f"{g}[{index}] = 0.0", depth)
            else:
                self.contribute(value.value, f"rt.setitem_grad({g}, {index}, {v})", depth, block)
        else:  # the overwritten elements no longer reach the output
            self.emit(f"{code(target.with_changes(value=cst.Name(g)).visit(rename))} = 0.0", depth)

    def _older_value_exists(self, name: str, block: Block, preceding: list) -> bool:
        """Could ``name`` hold a value from before this assignment (one whose adjoint must restart)?"""
        if name in self.params or block.in_loop:
            return True
        if any(name in names_in(st) or name in _assigned_in(st) for st in preceding):
            return True
        if block is self.top:
            return False
        # assigned only here and in branches that exclude this one: no older value on any path
        mine = self._branches(block)
        for other in self.act.defs.get(name, []):
            if other is block:
                continue
            theirs = self._branches(other)
            if not any(if_id in theirs and theirs[if_id] != branch for if_id, branch in mine.items()):
                return True
        return False

    def _branches(self, block: Block) -> dict[int, int]:
        """For each ``if`` enclosing ``block``: which of its branches holds it (``if`` id -> block id)."""
        out: dict[int, int] = {}
        b: Block | None = block
        while b is not None:
            if b.ident in self.branch_if:
                out.setdefault(self.branch_if[b.ident], b.ident)
            b = b.parent
        return out

    def _register_branches(self, stmts: list) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.If):
                self.branch_if[self.act.block_of[id(stmt.body.body)].ident] = id(stmt)
                self._register_branches(stmt.body.body)
                if stmt.orelse is not None:
                    self.branch_if[self.act.block_of[id(stmt.orelse.body.body)].ident] = id(stmt)
                    self._register_branches(stmt.orelse.body.body)
            elif isinstance(stmt, (cst.For, cst.While)):
                self._register_branches(stmt.body.body)

    def _apply(self, op: Op, g: str, target: str, values: dict[str, str], depth: int, block: Block) -> None:
        def text_of(param: str) -> str:
            expr = op.args.get(param)
            if isinstance(expr, cst.Name):
                return values.get(expr.value, expr.value)
            if expr is not None and values:  # e.g. an index (i, j): read the saved i and j
                return code(expr.visit(RenameNames(values)))
            return op.texts.get(param, "None")

        if op.rule is None:  # copy
            self.contribute(op.args["x"].value, g, depth, block)
            return
        if op.key == "pop":  # the popped value's adjoint goes back on the tape's adjoint
            self.emit(f"{self.bar(op.args['x'].value)}.append({g})", depth)
            return
        if op.key == "display":  # [a, b]: one adjoint per element
            self._spread(list(op.args.values()), g, "part", depth, block)
            return
        if op.rule.kind == "custom":  # the user's bwd gives every argument's contribution
            res = values.get("@" + op.extra["res"], op.extra["res"])
            bars = self.gen.fresh(f"{op.extra['bwd']}_bars", numbered=False)
            self.emit(f"{bars} = {op.extra['bwd']}({res}, {g})", depth)
            for i, p in enumerate(op.rule.params):
                expr = op.args.get(p.name)
                if self._carries(expr):
                    self._flow(expr, f"{bars}[{i}]", depth, block)
            return
        if op.rule.kind == "vmapped":  # the vmap of the function's vjp: the batched arguments' contributions
            names = [p.name for p in op.rule.params]
            argnums = [k for k, n in enumerate(names) if self._carries(op.args.get(n))]
            primals = ", ".join(text_of(n) for n in names) + ("," if len(names) == 1 else "")
            receiver = op.extra["receiver"]
            parts = [self.gen.fresh(f"{receiver}_{names[k]}_bar", numbered=False) for k in argnums]
            nums = ", ".join(map(str, argnums)) + ("," if len(argnums) == 1 else "")
            self.emit(", ".join(parts) + ("," if len(parts) == 1 else "") + f" = {receiver}.vjp(({primals}), {g}, argnums=({nums}))", depth)
            for k, part in zip(argnums, parts):
                self._flow(op.args[names[k]], part, depth, block)
            return
        if op.rule.kind == "callee":  # the callee's adjoint gives every argument's contribution
            arguments = ", ".join(text_of(p.name) for p in op.rule.params)
            out = self.gen.fresh(f"{op.key}_out", numbered=False)
            bars = self.gen.fresh(f"{op.key}_bars", numbered=False)
            self.emit(f"{out}, {bars} = {op.key}({arguments}, {g})", depth)
            # unpacked, not indexed: an adjoint file stays differentiable (tuples are unpacked)
            callee = op.key[: op.key.index("_vjp")] if "_vjp" in op.key else op.key
            returned = [p for p in op.rule.params if p.name in op.extra["active"]]  # the adjoints it computes
            parts = [self.gen.fresh(f"{callee}_{p.name}_bar", numbered=False) for p in returned]
            self.emit(", ".join(parts) + ("," if len(parts) == 1 else "") + f" = {bars}", depth)
            for part, p in zip(parts, returned):
                expr = op.args.get(p.name)
                if self._carries(expr):
                    self._flow(expr, part, depth, block)
            return
        fill = {p.name.lstrip("*"): text_of(p.name.lstrip("*")) for p in op.rule.params}
        fill["ans"] = values.get("@" + target, target)
        fill["g"] = g
        binary = op.rule.kind == "elementwise" and len(op.args) > 1
        # a constant operand broadcasts nothing: the other operand's adjoint has its shape
        if binary and any(not isinstance(e, cst.Name) for e in op.args.values()):
            binary = False
        for param, template in op.rule.templates.items():
            expr = op.args.get(param)
            if not self._carries(expr):
                continue
            partial = fill_template(template, fill)
            if self.np_name != "np":
                partial = partial.replace("np.", self.np_name + ".")
            if op.rule.kind == "elementwise":
                contribution = times(g, partial)
                if binary and param not in op.shapes:
                    contribution = f"rt.unbroadcast({contribution}, {fill[param]})"
                elif binary and op.shapes[param] is not None:  # the shape of another value at hand
                    contribution = f"rt.unbroadcast({contribution}, {values.get(op.shapes[param], op.shapes[param])})"
            else:
                contribution = partial
            sink = self.sinks.get(expr.value) if isinstance(expr, cst.Name) else None
            if sink is not None and param in op.rule.accumulate:  # added into the loop's own array, in place
                self.emit(fill_template(op.rule.accumulate[param], {**fill, "sink": sink}), depth)
                self.sunk.add(expr.value)
                continue
            self._flow(expr, contribution, depth, block)

    def _carries(self, expr: cst.BaseExpression | None) -> bool:
        """Does an argument carry a differentiated value: a name, or a tuple or list of names?"""
        if isinstance(expr, cst.Name):
            return expr.value in self.act.active
        if isinstance(expr, (cst.Tuple, cst.List)):
            return any(isinstance(el.value, cst.Name) and el.value.value in self.act.active for el in expr.elements)
        return False

    def _flow(self, expr: cst.BaseExpression, contribution: str, depth: int, block: Block) -> None:
        """Add ``contribution`` to the adjoint of an argument: a name's, or each element's of
        a tuple or list written in the call (``np.stack((x, y))``)."""
        if isinstance(expr, cst.Name):
            self.contribute(expr.value, contribution, depth, block)
        else:
            self._spread([el.value for el in expr.elements], contribution, "part", depth, block)

    def _spread(self, elements: list, source: str, suffix: str, depth: int, block: Block) -> None:
        """A tuple of adjoints, one per element: unpacked (not indexed, so that an adjoint file
        stays differentiable), each into a name of its own, then added to its element's adjoint."""
        targets, later = [], []
        for el in elements:
            name = el.value if isinstance(el, cst.Name) else None
            if name is None or name not in self.act.active:
                targets.append(self.gen.fresh("unused_bar", numbered=False))
            else:
                temp = self.gen.fresh(f"{name}_{suffix}", numbered=False)
                targets.append(temp)
                later.append((name, temp))
        self.emit(", ".join(targets) + ("," if len(targets) == 1 else "") + f" = {source}", depth)
        for name, temp in later:
            self.contribute(name, temp, depth, block)

    def _seed(self, ret: cst.Return, block: Block, depth: int) -> None:
        value = ret.value
        if self.has_aux:
            if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
                raise NotDifferentiable("with has_aux=True the function must return a pair (output, aux)", self.line)
            value = value.elements[0].value
        self.out_name = code(value) if value is not None else "None"
        if isinstance(value, cst.Name) and value.value in self.act.active:
            if self.seed == "grad":
                self.contribute(value.value, f"rt.grad_seed({value.value})", depth, block)
            elif self.seed_param != self.bar(value.value):
                self.contribute(value.value, self.seed_param, depth, block)
        elif isinstance(value, (cst.Tuple, cst.List)):
            if self.seed == "grad":  # not a scalar: grad_seed says so
                self.emit(f"rt.grad_seed(({code(value)}))", depth)  # one argument, the tuple
                return
            self._spread([el.value for el in value.elements], self.seed_param, "seed", depth, block)

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


# --- small helpers ---------------------------------------------------------------------------


# --- calls of transformed functions (shared with forward mode) ----------------------------------


def shape_kind(op_of, value: cst.BaseExpression, texts_of):
    """For the shape analysis (both modes): ``analysis.shapes.operation_kind`` of ``value``'s
    operation, or None (no operation, or one without a rule)."""
    try:
        op = op_of(value)
    except (NoRuleError, NotDifferentiable):
        return None
    if op is None or op.rule is None:
        return None
    return operation_kind(op.rule, op.key, op.args, texts_of(op))


def is_vmapped(obj: Any) -> bool:
    return is_instance(obj, "VMapped")


class _MadeHere:
    """A ``srctrans.vmap(f, ...)`` made inside the function being differentiated: what is known of it."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn  # the function batched, when it is known before the call runs


def vmap_made_here(name: str, body: list, resolve, params) -> _MadeHere | None:
    """``name`` as a function batched by a ``srctrans.vmap(f, ...)`` call assigned to it once,
    outside loops and branches, in ``body``; None otherwise."""
    vmap = face("vmap")
    if name in params or sum(name in _assigned_in(stmt) for stmt in _all_statements(body)) != 1:
        return None
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and small.targets[0].target.value == name
                and isinstance(small.value, cst.Call)
                and resolve(small.value.func) is vmap
                and small.value.args
            ):
                fn = resolve(small.value.args[0].value)
                return _MadeHere(None if fn is LOCAL else fn)
    return None


def _all_statements(body: list):
    """The simple statements of ``body``, in nested blocks too."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif isinstance(stmt, cst.If):
            yield from _all_statements(stmt.body.body)
            if stmt.orelse is not None:
                yield from _all_statements(stmt.orelse.body.body)
        elif isinstance(stmt, (cst.For, cst.While)):
            yield from _all_statements(stmt.body.body)


def vmapped_params(obj: Any, count: int) -> list[str]:
    """The parameter names of a batched function (``arg0``, ``arg1`` ... when unknown until it runs)."""
    import inspect

    if is_vmapped(obj):
        return list(obj._params)
    fn = getattr(obj, "fn", None)
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return [f"arg{k}" for k in range(count)]


def check_vmapped_call(obj: Any, receiver: str, positional: list, keywords: dict, what: str, line: int | None) -> None:
    """Refuse, located, the calls of a batched function whose derivative is not written yet."""
    if keywords:
        raise NotDifferentiable(
            f"{what} of a call of the vmapped {receiver} with keyword arguments is not supported yet",
            line, "pass its arguments by position",
        )
    if any(isinstance(v, (cst.Tuple, cst.List, cst.Dict)) for v in positional):
        raise NotDifferentiable(
            f"{what} of a call of the vmapped {receiver} with a tuple, list or dict argument is not supported yet",
            line, "pass arrays",
        )
    if is_vmapped(obj):
        if len(positional) != len(obj._params):
            raise NotDifferentiable(f"{receiver} takes {len(obj._params)} arguments, got {len(positional)}", line)
        try:
            obj._level_axes(what)
        except TypeError as err:
            raise NotDifferentiable(str(err), line) from None


def transformation_refusal(obj: Any, text: str, what: str) -> tuple[str, str] | None:
    """(message, hint) for a call of a srctrans transformation, or of a function it made, that
    ``what`` (grad, jvp) cannot differentiate through yet; None for anything else."""
    name = api_transformation(obj)
    if name is not None:
        hint = (
            f"call srctrans.{name} outside the function; inside it, srctrans.jvp(f, (x,), (v,)) and "
            "srctrans.grad(f)(x) are read through their generated files (srctrans.nested_calls)"
        )
        return f"{what} through a call of srctrans.{name} inside the function is not supported yet", hint
    if is_instance(obj, "Grad"):
        return (
            f"{what} through a call of {text}, a srctrans.grad, is not supported yet",
            "differentiate the function it wraps: srctrans.hessian(f), or srctrans.jvp(srctrans.grad(f), ...)",
        )
    return None


def _index_expr(elements) -> cst.BaseExpression:
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


def _inside(block: Block, outer: Block) -> bool:
    b: Block | None = block
    while b is not None:
        if b is outer:
            return True
        b = b.parent
    return False


def _simple_statements(stmts: list):
    """Every simple statement, in program order, descending into branches and loops."""
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif isinstance(stmt, cst.If):
            yield from _simple_statements(stmt.body.body)
            if stmt.orelse is not None:
                yield from _simple_statements(stmt.orelse.body.body)
        elif isinstance(stmt, (cst.For, cst.While)):
            yield from _simple_statements(stmt.body.body)


_WRITING_FUNCTIONS = last_names(WRITES_FIRST_ARGUMENT)


def refuse_hidden_write(small, active: set[str], resolve, line) -> None:
    """Refuse a call that may write into an array where derivatives flow: ``out=``, a method
    called for its effect (``y.sort()``, ``y.fill(v)``), ``np.copyto(y, x)``, ``np.add.at(y, i, x)``.
    The derivative would not see the change (it gave wrong gradients, silently)."""
    call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
    if not isinstance(call, cst.Call) or not (names_in(call) & active):
        return
    func = call.func
    what = None
    ufunc = resolve(func)
    given = [a for a in call.args if a.keyword is None]
    if any(a.keyword is not None and a.keyword.value == "out" for a in call.args) or (
        isinstance(ufunc, np.ufunc) and len(given) > ufunc.nin
    ):
        what = f"{code(func)}(..., out=...) writes into an array"
    elif isinstance(small, cst.Expr):
        obj = resolve(func)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and resolve(func.value) is LOCAL:
            what = f"{code(func)}() called for its effect may change {func.value.value} in place"
        elif isinstance(getattr(obj, "__self__", None), np.ufunc) or (
            getattr(obj, "__name__", None) in _WRITING_FUNCTIONS
            and (getattr(obj, "__module__", None) or type(getattr(obj, "__self__", None)).__module__ or "").startswith("numpy")
        ):
            what = f"{code(func)}(...) writes into its first argument"
    if what is not None:
        raise NotDifferentiable(
            f"{what} where derivatives flow, and the derivative would not see the change",
            line,
            "write the new value as an assignment (y = y + x, y = np.sort(y), y = np.full_like(y, v))",
        )


_COMPLEX_NAMES = last_names(COMPLEX_DTYPES)
_REAL_PARTS = last_names(REAL_PARTS)


def _complex_value(obj) -> bool:
    """A complex number or array (a global constant the function reads)."""
    return isinstance(obj, (complex, np.complexfloating)) or (isinstance(obj, np.ndarray) and obj.dtype.kind == "c")


def _mentions_complex(value: cst.CSTNode, names: frozenset = frozenset(), resolve=None) -> bool:
    """Whether ``value`` writes a complex number or dtype (``1j``, ``np.complex128``, ``"complex"``),
    reads one of ``names`` (names assigned one, as ``t1 = np.complex128`` in A-normal form) or,
    with ``resolve``, a global or closure value that is complex."""

    class V(cst.CSTVisitor):
        found = False

        def visit_Imaginary(self, n: cst.Imaginary) -> None:
            V.found = True

        def visit_Name(self, n: cst.Name) -> None:
            V.found |= n.value in _COMPLEX_NAMES or n.value in names
            if resolve is not None and not V.found:
                V.found = _complex_value(resolve(n))

        def visit_Attribute(self, n: cst.Attribute) -> None:
            V.found |= n.attr.value in _COMPLEX_NAMES

        def visit_SimpleString(self, n: cst.SimpleString) -> None:
            V.found |= n.evaluated_value.startswith("complex")

    value.visit(V())
    return V.found


def _real_part(value: cst.BaseExpression) -> bool:
    """``np.abs(z)``, ``np.real(z)``, ``z.imag`` ...: a real value, even of a complex one."""
    if isinstance(value, cst.Attribute):
        return value.attr.value in _REAL_PARTS
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        return name in _REAL_PARTS
    return False


def complex_names(body: list, resolve=None) -> frozenset:
    """Names some statement assigns a complex number or dtype (see :func:`refuse_complex`)."""
    found: set[str] = set()
    for stmt in _simple_statements(body):
        for small in stmt.body:
            if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name):
                if not _real_part(small.value) and _mentions_complex(small.value, frozenset(found), resolve):
                    found.add(small.targets[0].target.value)
    return frozenset(found)


def refuse_complex(value: cst.BaseExpression, line, names: frozenset = frozenset(), resolve=None) -> None:
    """Refuse a differentiated value made with a complex number or dtype (``1j``, ``np.complex128``,
    ``dtype="complex"``, a complex global): the rules hold for real values; a complex one would give
    wrong derivatives."""
    if _mentions_complex(value, names, resolve):
        raise NotDifferentiable(
            "a complex value where derivatives flow: srctrans differentiates real values only",
            line,
            "write the real and imaginary parts as two real arrays, or compute this outside the differentiated function",
        )


def view_update_check(small: cst.AugAssign, bases: dict[int, tuple[str, ...] | None], certain: set[str], file: str | None, line) -> list[str]:
    """The run-time checks to emit before ``name op= ...`` (which a transformation computes as a
    new value) when ``name`` may be a view of another array (``row = X[i]``: a view when ``X``
    has two axes, a number when it has one; ``row = pick(X, i)``, where ``pick`` may return a
    view of ``X``); none when no check is needed. ``bases``: from
    :func:`~srctrans.analysis.views.view_check_bases`; where no array can be named, refused.
    Certain views were refused by :func:`refuse_view_update` already."""
    name = small.target.value
    if id(small) not in bases or name in certain:
        return []
    op = code(small.operator).strip()
    if bases[id(small)] is None or file is None or line is None:
        raise NotDifferentiable(
            f"{name} {op} ... may update an array another name refers to ({name} may be a view), "
            "which this transformation cannot check here",
            line,
            f"make a new value: {name} = {name} {op[:-1]} ...",
        )
    checks = []
    for base in bases[id(small)]:
        label = "" if re.fullmatch(r"t\d+", base) else base  # (a temporary of A-normal form has no name of yours)
        checks.append(f'rt.refuse_view_update({name}, {base}, "{name}", "{op}", "{label}", "{file}", {line})')
    return checks


def refuse_shared_write(base: str, views: dict[str, str], aliased: set[str], line) -> None:
    """``base[i] = v`` where ``base`` may share its array with another name: refused (the write
    would change that name's value too, which the derivative would not see)."""
    if base in views or base in aliased:
        of = f"which may be a view of {views[base]}" if base in views else "which another name also refers to"
        raise NotDifferentiable(
            f"writing into {base}, {of}", line, f"make {base} an array of its own first, e.g. {base} = np.copy(...)"
        )


def refuse_view_update(small: cst.AugAssign, views: set[str], aliased: set[str], line) -> None:
    """``a += v`` where ``a`` shares its array with another name: refused (a transformation makes a new value)."""
    name = small.target.value
    if name in views or name in aliased:
        op = code(small.operator).strip()
        raise NotDifferentiable(
            f"{name} {op} ... updates an array another name also refers to"
            + (" (a view of another array)" if name in views else ""),
            line,
            f"write into the array itself ({name} is a view: y[1:] {op} v), or write {name} = {name} "
            f"{op[:-1]} ... to make a new value",
        )


def _pure_call(call: cst.Call, resolve) -> bool:
    """A call whose result depends on its arguments alone: a function with a derivative rule."""
    obj = resolve(call.func)
    return obj is not LOCAL and obj is not None and id(obj) in rule_keys_by_id()


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


def _assigned_in(stmt) -> set[str]:
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


def _groups(stmts: list) -> list[list]:
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
