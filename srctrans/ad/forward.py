"""Forward mode: from a function in A-normal form to its tangent function, as readable source.

The generated function takes the original parameters, then one tangent per
differentiated parameter (``x_dot``), and returns ``(out, out_dot)``. Each statement
of the original is followed by the statement computing its tangent, from the rules of
:mod:`srctrans.rules.derivatives` (the same table reverse mode reads): elementwise
partials give ``ans_dot = partial_x * x_dot + partial_y * y_dot``, other entries their
``jvp=`` (see that module). This module names no operation.

Only tangents of values that depend on the differentiated parameters *and* reach the
result are computed: no dead code. Control flow (already structured by
:mod:`srctrans.passes.control`) is kept as it is, with tangents computed alongside; an
in-place write ``y[i] = v`` writes ``y_dot[i] = v_dot``, so tangents share storage
exactly where the values they belong to do. Calls of user functions go through their
own tangent functions (``g_jvp``), generated once per set of differentiated parameters.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import libcst as cst

from ..analysis.activity import analyze, names_in, targets_of
from ..analysis.names import NameGen, scan
from ..analysis.resolve import LOCAL
from ..analysis.shapes import same_shapes
from ..analysis.views import array_facts
from ..cache import ORIGIN_RE
from ..passes.fuse import assigned_once, inline_temporaries
from ..passes.fuse import children as fuse_children
from ..rules.derivatives import DERIVATIVES, LINEAR, MULTILINEAR, OPERATORS, SHAPE_ONLY, TUPLE_TANGENTS, Rule
from ..rules.lookup import qualified_name, rule_keys_by_id
from ..rules.runtime_helpers import RUNTIME_DERIVATIVES
from .calls import check_vmapped_call, is_vmapped, shape_kind, transformation_refusal, vmap_made_here, vmapped_params
from .refusals import (
    NoRuleError,
    NotDifferentiable,
    complex_names,
    index_tricks,
    refuse_complex,
    refuse_hidden_write,
    refuse_index_trick,
    refuse_shared_write,
    refuse_view_update,
    view_update_check,
)
from .statements import appended, empty_lists, lower_updates
from .text import code, fold_literals, paren, times

_ANS = "__ans__"  # stands for the result in a tangent expression until it is placed


class _Op:
    """One operation of an ANF right-hand side: its rule and its argument expressions by parameter."""

    def __init__(self, key: str, rule: Rule | None, args: dict[str, cst.BaseExpression], positions=None, extra=None):
        self.key = key
        self.rule = rule
        self.args = args
        self.positions = positions or {}  # param -> how to put a tangent in its place (see _substitute)
        self.extra = extra or {}


class Forward:
    """Builds the tangent function of one ANF function."""

    def __init__(
        self,
        node: cst.FunctionDef,
        resolve: Callable[[cst.BaseExpression], Any],
        wrt: tuple[str, ...],
        name: str,
        np_name: str = "np",
        callee_jvp: Callable[[Any, tuple[str, ...]], str | None] | None = None,
        custom_rule: Callable[[Any], str | None] | None = None,
        has_aux: bool = False,
    ) -> None:
        self.node = node
        self.resolve = resolve
        self.wrt = wrt
        self.name = name
        self.np_name = np_name
        self.callee_jvp = callee_jvp
        self.custom_rule = custom_rule
        self.has_aux = has_aux
        self.params = scan(node).params
        self.gen = NameGen(scan(node).all | {"np", "rt", "math", np_name})
        self.body = list(node.body.body)
        self.lists = empty_lists(self.body)
        self.file: str | None = None  # the user's line being transformed (origin comments)
        self.line: int | None = None
        self.analyzing = True
        self.tricks = index_tricks(self.body, resolve)
        self.act = analyze(self.body, self.params, set(wrt), self._is_nondiff, self._shape_only)
        # ``y[i] += v`` into a differentiated array: ``t = y[i]``, ``t1 = t + v``, ``y[i] = t1``
        lowered = lower_updates(self.body, self.act.active, self.gen)
        if lowered is not self.body:
            self.body = lowered
            self.act = analyze(self.body, self.params, set(wrt), self._is_nondiff, self._shape_only)
        self.analyzing = False
        facts = array_facts(self.body, self.params, self.resolve)
        self.mutated, self.aliased, self.views = facts.mutated, facts.aliased, facts.views
        self.slice_views, self.view_checks = facts.certain_views, facts.view_checks
        self.own_updates = facts.own_updates
        self.complex_names = complex_names(self.body, self.resolve)
        self.dot_names: dict[str, str] = {}
        self.lines: list[str] = []
        self.shapes: dict[int, dict[str, str | None]] = {}  # see analysis.shapes.same_shapes
        self.same_shape: dict[str, str | None] = {}  # of the statement being written

    def _kind(self, value: cst.BaseExpression):
        """For the shape analysis: (the kind of ``value``'s operation, its arguments), or None."""
        return shape_kind(self.op_of, value, lambda op: {p: code(e) for p, e in op.args.items()})

    def _counts(self, loop: cst.For) -> bool:
        return isinstance(loop.iter, cst.Call) and self.resolve(loop.iter.func) is range

    # --- classifying right-hand sides ---------------------------------------------------

    def _is_nondiff(self, small: cst.Assign) -> bool:
        try:
            op = self.op_of(small.value)
        except (NoRuleError, NotDifferentiable):
            return False  # decided later, with a located error if it turns out to matter
        return op is not None and op.rule is not None and op.rule.kind == "nondiff"

    def _shape_only(self, small: cst.Assign) -> set[str]:
        """Names a runtime helper reads only for a shape or to choose positions: no tangent flows
        through them (``x`` in ``rt.mean_grad(g, x, None, False)``), so a result whose other
        arguments are constant is constant too, and its tangent is never computed."""
        try:
            op = self.op_of(small.value)
        except (NoRuleError, NotDifferentiable):
            return set()
        if op is None or op.key not in RUNTIME_DERIVATIVES or op.rule is None or op.rule.kind != "vjp":
            return set()
        jvp = op.rule.jvp
        if isinstance(jvp, dict):
            carried = set(jvp)
        elif jvp in (LINEAR, MULTILINEAR):
            carried = set(op.rule.templates)
        else:
            return set()
        inert: set[str] = set()
        kept: set[str] = set()
        for param, expr in op.args.items():
            (kept if param in carried else inert).update(names_in(expr))
        return inert - kept

    def op_of(self, value: cst.BaseExpression) -> _Op | None:
        """The rule and arguments of an ANF right-hand side; None for constants."""
        if isinstance(value, cst.Name):
            return _Op("copy", None, {"x": value})
        if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary)) or (
            isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float))
        ):
            return None
        if isinstance(value, cst.BinaryOperation):
            key = OPERATORS.get(type(value.operator).__name__)
            return self._op(key, [value.left, value.right], {}, type(value.operator).__name__, [("left",), ("right",)])
        if isinstance(value, cst.UnaryOperation):
            if isinstance(value.operator, cst.Not):
                return _Op("not", DERIVATIVES["numpy.sign"], {})
            key = OPERATORS.get(type(value.operator).__name__)
            return self._op(key, [value.expression], {}, type(value.operator).__name__, [("expression",)])
        if isinstance(value, (cst.Comparison, cst.BooleanOperation)):
            return _Op("compare", DERIVATIVES["numpy.sign"], {})
        if isinstance(value, cst.Attribute):
            return self._op(f"ndarray.{value.attr.value}", [value.value], {}, f".{value.attr.value}", [("value",)])
        if isinstance(value, cst.Subscript):
            refuse_index_trick(self.tricks, value, self.line)
            return self._op("getitem", [value.value], {}, "indexing", [("value",)], partial=True)
        if isinstance(value, (cst.List, cst.Tuple)):
            if not value.elements:
                return None
            args = {str(i): el.value for i, el in enumerate(value.elements)}
            return _Op("display", Rule("display", ()), args)
        if isinstance(value, cst.Call):
            return self._call(value)
        raise NotDifferentiable(f"cannot differentiate {code(value)!r}", self.line)

    def _call(self, call: cst.Call) -> _Op:
        func = call.func
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        where = [("arg", i) for i, a in enumerate(call.args) if a.keyword is None]
        kw_where = {a.keyword.value: ("arg", i) for i, a in enumerate(call.args) if a.keyword is not None}
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self.resolve(func.value) is LOCAL:
            if func.value.value in self.lists and func.attr.value == "pop" and not call.args:
                return _Op("pop", Rule("pop", ()), {"x": func.value})
            return self._op(
                f"ndarray.{func.attr.value}", [func.value, *positional], keywords, f".{func.attr.value}()",
                [("receiver",), *where], kw_where,
            )
        obj = self.resolve(func)
        if obj is LOCAL and isinstance(func, cst.Name):
            made = vmap_made_here(func.value, self.body, self.resolve, self.params)
            if made is not None:  # ``batched = srctrans.vmap(f, ...)`` earlier in the function
                return self._vmapped(made, func.value, positional, keywords)
        if obj is LOCAL or obj is None:
            raise NotDifferentiable(
                f"cannot differentiate a call of {code(func)}, a value computed inside the function", self.line
            )
        key = rule_keys_by_id().get(id(obj))
        if key is not None:
            return self._op(key, positional, keywords, key, where, kw_where)
        from ..analysis.resolve import is_user_function

        label = qualified_name(obj, code(func))
        if is_vmapped(obj):
            return self._vmapped(obj, code(func), positional, keywords)
        refusal = transformation_refusal(obj, code(func), "jvp")
        if refusal is not None:
            raise NotDifferentiable(refusal[0], self.line, refusal[1])
        if type(obj).__name__ == "custom_jvp":
            return self._custom(obj, positional, keywords, label)
        if type(obj).__name__ == "custom_vjp":
            raise NotDifferentiable(
                f"{label} is a custom_vjp, which gives no forward-mode derivative", self.line,
                "define it with srctrans.custom_jvp instead, or compute it outside the function",
            )
        if is_user_function(obj):
            return self._callee(obj, positional, keywords, label)
        raise NoRuleError(label, self.line)

    def _callee(self, obj, positional, keywords, label: str) -> _Op:
        fn = getattr(obj, "__srctrans_function__", obj)
        params = list(inspect.signature(fn).parameters.values())
        if len(positional) > len(params):
            raise NotDifferentiable(f"{label} is called with more arguments than it takes", self.line)
        args: dict[str, cst.BaseExpression] = dict(zip((p.name for p in params), positional))
        args.update(keywords)
        from ..analysis.resolve import literal_text

        texts = {}
        for p in params:
            if p.name in args:
                texts[p.name] = code(args[p.name])
            elif p.default is not p.empty and literal_text(p.default) is not None:
                texts[p.name] = literal_text(p.default)
            else:
                raise NotDifferentiable(f"{label} is called without its argument {p.name!r}", self.line)
        return _Op("callee", Rule("callee", ()), args, extra={"fn": fn, "params": [p.name for p in params], "texts": texts, "label": label})

    def _vmapped(self, obj, receiver: str, positional, keywords) -> _Op:
        """A call of a function batched by ``srctrans.vmap``: its tangent is the vmap of the
        function's tangent function, which the tangent file calls as ``receiver.jvp(...)``."""
        check_vmapped_call(obj, receiver, positional, keywords, "jvp", self.line)
        args = dict(zip(vmapped_params(obj, len(positional)), positional))
        return _Op("vmapped", Rule("vmapped", ()), args, extra={"receiver": receiver})

    def _custom(self, obj, positional, keywords, label: str) -> _Op:
        if keywords:
            raise NotDifferentiable(f"call {label} with positional arguments only", self.line)
        if obj.jvp is None:
            raise NotDifferentiable(f"{label} is a custom_jvp without defjvp(rule)", self.line)
        params = list(inspect.signature(obj.fun).parameters.values())
        if len(positional) != len(params):
            raise NotDifferentiable(f"{label} takes {len(params)} arguments, got {len(positional)}", self.line)
        args = {p.name: v for p, v in zip(params, positional)}
        return _Op("custom", Rule("custom", ()), args, extra={"obj": obj, "params": [p.name for p in params], "label": label})

    def _op(self, key, positional, keywords, label, where, kw_where=None, partial=False) -> _Op:
        if key is None or key not in DERIVATIVES:
            raise NoRuleError(key or label, self.line)
        rule = DERIVATIVES[key]
        if rule.kind == "nondiff":
            return _Op(key, rule, {})
        params = [p.name for p in rule.params]
        args: dict[str, cst.BaseExpression] = {}
        positions: dict[str, Any] = {}
        star = params[-1][1:] if params and params[-1].startswith("*") else None
        fixed = params[:-1] if star else params
        if len(positional) > len(fixed) and not star and not partial:
            raise NotDifferentiable(f"{key} called with more arguments than its rule knows", self.line)
        for param, value, pos in zip(fixed, positional, where):
            args[param] = value
            positions[param] = pos
        for kw, value in keywords.items():
            if kw not in params:
                raise NotDifferentiable(f"{key} called with keyword {kw!r}, which its rule does not know", self.line)
            args[kw] = value
            positions[kw] = (kw_where or {})[kw]
        return _Op(key, rule, args, positions)

    # --- emission ------------------------------------------------------------------------

    def emit(self, text: str, depth: int) -> None:
        self.lines.append("    " * depth + text)

    def dot(self, name: str) -> str:
        if name not in self.dot_names:
            self.dot_names[name] = self.gen.fresh(f"{name}_dot", numbered=False)
        return self.dot_names[name]

    def needed(self, name: str) -> bool:
        return name in self.useful

    def tangent_of(self, expr: cst.BaseExpression) -> str | None:
        """The tangent of an atom or of a tuple or list of atoms written in a call (``np.stack((x, y))``),
        or None when it is a constant for differentiation."""
        if isinstance(expr, cst.Name) and expr.value in self.useful:
            return self.dot(expr.value)
        if isinstance(expr, (cst.Tuple, cst.List)) and any(self.tangent_of(el.value) for el in expr.elements):
            parts = [self.tangent_of(el.value) or self.zeros(el.value) for el in expr.elements]
            text = ", ".join(parts)
            return f"[{text}]" if isinstance(expr, cst.List) else f"({text}{',' if len(parts) == 1 else ''})"
        return None

    def zeros(self, expr: cst.BaseExpression) -> str:
        if isinstance(expr, (cst.Integer, cst.Float)) or (
            isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float))
        ):
            return "0.0"
        return f"rt.zeros_like({code(expr)})"

    def _set_line(self, stmt) -> None:
        for line in getattr(stmt, "leading_lines", ()):
            if line.comment is not None:
                m = ORIGIN_RE.match(line.comment.value)
                if m:
                    self.file, self.line = m["file"], int(m["line"])

    def block(self, stmts: list, depth: int) -> None:
        for stmt in stmts:
            self._set_line(stmt)
            for line in getattr(stmt, "leading_lines", ()):
                if line.comment is not None:
                    self.emit(line.comment.value, depth)
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small(small, depth)
            elif isinstance(stmt, cst.If):
                self.emit(f"if {code(stmt.test)}:", depth)
                self.block_or_pass(stmt.body.body, depth + 1)
                if stmt.orelse is not None:
                    self.emit("else:", depth)
                    self.block_or_pass(stmt.orelse.body.body, depth + 1)
            elif isinstance(stmt, cst.For):
                if stmt.orelse is not None:
                    raise NotDifferentiable("loops with an else clause are not differentiated yet", self.line)
                if names_in(stmt.iter) & self.useful:
                    raise NotDifferentiable(
                        "looping over a differentiated array is not differentiated yet",
                        self.line,
                        "loop over range(len(x)) and read x[i]",
                    )
                self.emit(f"for {code(stmt.target)} in {code(stmt.iter)}:", depth)
                self.block_or_pass(stmt.body.body, depth + 1)
            elif isinstance(stmt, cst.While):
                if stmt.orelse is not None:
                    raise NotDifferentiable("loops with an else clause are not differentiated yet", self.line)
                self.emit(f"while {code(stmt.test)}:", depth)
                self.block_or_pass(stmt.body.body, depth + 1)
            else:  # pragma: no cover - the passes leave no other statements
                raise NotDifferentiable(f"cannot differentiate {type(stmt).__name__}", self.line)

    def block_or_pass(self, stmts: list, depth: int) -> None:
        start = len(self.lines)
        self.block(stmts, depth)
        if not any(not line.lstrip().startswith("#") for line in self.lines[start:]):
            self.emit("pass", depth)

    def small(self, small, depth: int) -> None:
        if isinstance(small, cst.Return):
            self.ret = small
            return
        pushed = appended(small, self.lists)
        if pushed is not None:
            self.emit(code(cst.SimpleStatementLine([small])).strip(), depth)
            tape, value = pushed
            if self.needed(tape):
                self.emit(f"{self.dot(tape)}.append({self.tangent_of(value) or self.zeros(value)})", depth)
            return
        if isinstance(small, cst.AugAssign):
            if isinstance(small.target, cst.Name):  # a new value, never an update in place
                if id(small) not in self.own_updates:  # y = y * a; y += v: y's own array
                    refuse_view_update(small, self.slice_views, self.aliased, self.line)
                for check in view_update_check(small, self.view_checks, self.slice_views, self.file, self.line):
                    self.emit(check, depth)
                small = cst.Assign(
                    [cst.AssignTarget(small.target)],
                    cst.BinaryOperation(small.target, getattr(cst, type(small.operator).__name__.replace("Assign", ""))(), small.value),
                )
            else:
                base = small.target.value.value if isinstance(small.target.value, cst.Name) else None
                if base is not None and self.needed(base):
                    raise NotDifferentiable(  # desugar lowers these; a leftover is not differentiated
                        "an in-place update of a differentiated array element", self.line, "write y[i] = y[i] + v"
                    )
                self.emit(code(cst.SimpleStatementLine([small])).strip(), depth)
                return
        refuse_hidden_write(small, self.act.active, self.resolve, self.line)
        if not isinstance(small, cst.Assign):
            self.emit(code(cst.SimpleStatementLine([small])).strip(), depth)
            return
        primal = code(cst.SimpleStatementLine([small])).strip()
        target = small.targets[0].target
        if isinstance(target, cst.Subscript):
            self.emit(primal, depth)
            base = target.value.value if isinstance(target.value, cst.Name) else None
            if base in self.act.active and id(small) not in self.own_updates:
                refuse_shared_write(base, self.views, self.aliased, self.line)
            if base is not None and self.needed(base):
                value = small.value
                refuse_complex(value, self.line, self.complex_names, self.resolve)
                tangent = self.tangent_of(value) or "0.0"
                self.emit(code(target.with_changes(value=cst.Name(self.dot(base)))) + f" = {tangent}", depth)
            return
        names = targets_of(target)
        if not any(self.needed(n) for n in names):
            self.emit(primal, depth)
            stack = _popped(small.value, self.lists)
            if stack is not None and self.needed(stack):
                self.emit(f"{self.dot(stack)}.pop()", depth)  # the stacks stay in step
            return
        refuse_complex(small.value, self.line, self.complex_names, self.resolve)
        if not isinstance(target, cst.Name):
            self.emit(primal, depth)
            self._unpack(small, target, depth)
            return
        self._assign(small, target.value, primal, depth)

    def _unpack(self, small: cst.Assign, target, depth: int) -> None:
        value = small.value
        if not isinstance(value, cst.Name) or not all(isinstance(el.value, cst.Name) for el in target.elements):
            raise NotDifferentiable("unpack a differentiated value into plain names, one level deep", self.line)
        parts = []
        for el in target.elements:
            n = el.value.value
            parts.append(self.dot(n) if self.needed(n) else self.gen.fresh("unused_dot", numbered=False))
        source = self.tangent_of(value) or f"rt.zeros_like({value.value})"
        self.emit(", ".join(parts) + ("," if len(parts) == 1 else "") + f" = {source}", depth)

    def _assign(self, small: cst.Assign, target: str, primal: str, depth: int) -> None:
        op = self.op_of(small.value)
        self.same_shape = self.shapes.get(id(small), {})
        dot = self.dot(target)
        if op is not None and op.key == "callee":
            self._emit_callee(op, target, primal, depth)
            return
        if op is not None and op.key == "custom":
            self._emit_custom(op, target, depth)
            return
        if op is not None and op.key == "vmapped":
            self._emit_vmapped(op, target, primal, depth)
            return
        tangent = None if op is None or (op.rule is not None and op.rule.kind == "nondiff") else self.tangent(op, small.value)
        if tangent is None and isinstance(small.value, cst.List) and not small.value.elements:
            self.emit(primal, depth)  # a stack (a tape of an adjoint file): its tangents are a stack too
            self.emit(f"{dot} = []", depth)
            return
        if tangent is None:  # a constant for differentiation: its tangent is zero
            self.emit(primal, depth)
            self.emit(f"{dot} = {self.zeros(small.value) if op is None else f'rt.zeros_like({target})'}", depth)
            return
        shares = _is_name(tangent) and (target in self.mutated or any(self.dot(n) == tangent for n in self.mutated))
        if shares and op.rule is not None:  # a new value whose tangent is an operand's, one of them written
            tangent = f"{self.np_name}.copy({tangent})"  # in place: an array of its own, as the value is
        reads = names_in(cst.parse_expression(tangent))
        if target in reads and _ANS in reads:  # reads the operand the statement overwrites, and the result
            old = self.gen.fresh(f"{target}_old", numbered=False)
            self.emit(f"{old} = {target}", depth)
            self.emit(primal, depth)
            tangent = _rename(tangent, {target: old, _ANS: target})
            self.emit(f"{dot} = {tangent}", depth)
        elif target in reads:  # the operand it overwrites: the tangent first
            self.emit(f"{dot} = {tangent}", depth)
            self.emit(primal, depth)
        else:
            self.emit(primal, depth)
            self.emit(f"{dot} = {_rename(tangent, {_ANS: target}) if _ANS in reads else tangent}", depth)

    def tangent(self, op: _Op, value: cst.BaseExpression) -> str | None:
        """The tangent of ``value`` (result written ``__ans__``), or None when no argument varies."""
        varying = {p: e for p, e in op.args.items() if self.tangent_of(e) is not None}
        if not varying:
            return None
        if op.rule is None:  # copy
            return self.tangent_of(op.args["x"])
        if op.key == "pop":
            return f"{self.dot(op.args['x'].value)}.pop()"
        if op.key == "display":
            parts = [self.tangent_of(e) or self.zeros(e) for e in op.args.values()]
            text = ", ".join(parts)
            return f"[{text}]" if isinstance(value, cst.List) else f"({text}{',' if len(parts) == 1 else ''})"
        rule = op.rule
        if rule.kind == "nondiff":
            return None
        self._check_covered(op, varying)
        if rule.kind == "elementwise":
            return self._elementwise(op, varying)
        jvp = rule.jvp
        if jvp is None:
            raise NoRuleError(f"{op.key} in forward mode (it has no tangent rule yet)", self.line)
        if jvp in (LINEAR, MULTILINEAR) and not any(p in rule.templates for p in varying):
            return None  # only arguments read for their shape vary
        if jvp == LINEAR:
            subs = {p: self.tangent_of(e) or self.zeros(e) for p, e in op.args.items() if p in rule.templates}
            return code(_substitute(value, op, subs))
        if jvp == MULTILINEAR:
            terms = [
                _paren_term(code(_substitute(value, op, {p: self.tangent_of(e)})))
                for p, e in op.args.items()
                if p in rule.templates and p in varying
            ]
            return " + ".join(terms)
        fill = self._fill(op)
        terms = []
        for p, e in op.args.items():
            if p in varying and p in jvp:
                terms.append(_paren_term(_format(jvp[p], {**fill, "t": self.tangent_of(e)}, self.np_name)))
        if op.key in TUPLE_TANGENTS and len(terms) > 1:  # tuples of tangents: added piece by piece
            total = terms[0]
            for term in terms[1:]:
                total = f"rt.tangent_sum({total}, {term})"
            return total
        return " + ".join(terms) if terms else None

    def _check_covered(self, op: _Op, varying: dict) -> None:
        """A varying argument the rule gives no derivative for would lose its share silently."""
        if op.key in RUNTIME_DERIVATIVES:
            return  # the helpers' tables leave out the arguments read only for a shape
        for param, expr in varying.items():
            if param not in op.rule.templates and param not in SHAPE_ONLY.get(op.key, ()):
                names = [p.name.lstrip("*") for p in op.rule.params]
                nth = names.index(param) + 1 if param in names else 0
                where = f"argument {nth}" if nth else f"argument {param!r}"
                raise NoRuleError(f"{op.key} with respect to its {where} ({code(expr)})", self.line)

    def _fill(self, op: _Op) -> dict[str, str]:
        fill = {}
        for p in op.rule.params:
            name = p.name.lstrip("*")
            if name in op.args:
                fill[name] = code(op.args[name])
            else:
                fill[name] = p.default if p.default is not None else ("()" if p.name.startswith("*") else "None")
        fill["ans"] = _ANS
        return fill

    def _elementwise(self, op: _Op, varying: dict) -> str:
        fill = self._fill(op)
        terms = []
        covers = False  # does some term have the result's full shape?
        for param, expr in varying.items():
            partial = _format(op.rule.templates[param], fill, self.np_name)
            t = self.tangent_of(expr)
            terms.append(times(t, partial, partial_first=True))
            others = {code(e) for p, e in op.args.items() if p != param and isinstance(e, cst.Name)}
            if "{ans}" in op.rule.templates[param] or others & names_in(cst.parse_expression(partial)):
                covers = True
            if param in self.same_shape and self.same_shape[param] is None:
                covers = True  # this operand has the result's shape (analysis.shapes)
        text = _sum(terms)
        constant_names = [e for p, e in op.args.items() if p not in varying and isinstance(e, cst.Name)]
        if constant_names and not covers:  # a constant operand may broadcast the result up
            text = f"{_paren_term(text)} + rt.zeros_like({_ANS})"
        return text

    def _emit_callee(self, op: _Op, target: str, primal: str, depth: int) -> None:
        fn, params, texts = op.extra["fn"], op.extra["params"], op.extra["texts"]
        active = tuple(p for p in params if p in op.args and self.tangent_of(op.args[p]) is not None)
        primal_args = ", ".join(texts[p] for p in params)
        if not active:
            self.emit(primal, depth)
            self.emit(f"{self.dot(target)} = rt.zeros_like({target})", depth)
            return
        name = self.callee_jvp(fn, active) if self.callee_jvp is not None else None
        if name is None:
            raise NotDifferentiable(f"cannot differentiate the call of {op.extra['label']}", self.line)
        tangents = ", ".join(self.tangent_of(op.args[p]) for p in active)
        self.emit(f"{target}, {self.dot(target)} = {name}({primal_args}, {tangents})", depth)

    def _emit_vmapped(self, op: _Op, target: str, primal: str, depth: int) -> None:
        args = list(op.args.values())
        tangents = [self.tangent_of(a) for a in args]
        if not any(tangents):
            self.emit(primal, depth)
            self.emit(f"{self.dot(target)} = rt.zeros_like({target})", depth)
            return
        comma = "," if len(args) == 1 else ""
        primals = ", ".join(code(a) for a in args) + comma
        dots = ", ".join(t or "None" for t in tangents) + comma  # None: held constant
        self.emit(f"{target}, {self.dot(target)} = {op.extra['receiver']}.jvp(({primals}), ({dots}))", depth)

    def _emit_custom(self, op: _Op, target: str, depth: int) -> None:
        rule = self.custom_rule(op.extra["obj"]) if self.custom_rule is not None else None
        if rule is None:
            raise NotDifferentiable(f"cannot differentiate the call of {op.extra['label']}", self.line)
        args = [op.args[p] for p in op.extra["params"]]
        primals = ", ".join(code(a) for a in args) + ("," if len(args) == 1 else "")
        tangents = ", ".join(self.tangent_of(a) or self.zeros(a) for a in args) + ("," if len(args) == 1 else "")
        self.emit(f"{target}, {self.dot(target)} = {rule}(({primals}), ({tangents}))", depth)

    # --- the whole function -----------------------------------------------------------------

    def run(self) -> cst.FunctionDef:
        last = self.body[-1] if self.body else None
        ret = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return) else None
        if ret is None:
            raise NotDifferentiable("the function must end with a return statement", self.line)
        value = ret.value
        if self.has_aux:
            if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
                raise NotDifferentiable("with has_aux=True the function must return a pair (output, aux)", self.line)
            value = value.elements[0].value
        self.useful = self.act.useful(names_in(value) if value is not None else set())
        for p in self.wrt:
            self.dot(p)  # the tangent parameters keep their plain names
        for p in self.params:  # an argument not differentiated that later holds a value that is
            if p not in self.wrt and p in self.useful:  # (a loop's state): it starts with a zero tangent
                self.emit(f"{self.dot(p)} = rt.zeros_like({p})", 1)
        for p in self.wrt:  # written in place: work on copies, never the caller's arrays
            if p in self.useful and p in self.mutated:
                self.emit(f"{p} = {self.np_name}.copy({p})", 1)
            if p in self.useful and (p in self.mutated or (p in self.aliased and self.aliased & self.mutated)):
                self.emit(f"{self.dot(p)} = {self.np_name}.copy({self.dot(p)})", 1)
        self.ret = None
        self.analyzing = True  # looking at the operations only
        try:
            self.shapes = same_shapes(self.body, self._kind, self._counts)
        finally:
            self.analyzing = False
        self.block(self.body, 1)
        out = code(value) if value is not None else "None"
        if isinstance(value, cst.Tuple):
            parts = [self.tangent_of(el.value) or self.zeros(el.value) for el in value.elements]
            out_dot = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
            if not value.lpar:
                out = f"({out})"
        elif value is None:
            out_dot = "None"
        else:
            out_dot = self.tangent_of(value) or self.zeros(value)
        params = [*self.params, *(self.dot(p) for p in self.wrt)]
        if self.has_aux:
            aux = code(ret.value.elements[1].value)
            tail = f"    return {out}, {aux}, {out_dot}"
        else:
            tail = f"    return {out}, {out_dot}"
        text = "\n".join([f"def {self.name}({', '.join(params)}):", *self.lines, tail]) + "\n"
        try:
            fn = cst.parse_statement(text)
        except cst.ParserSyntaxError as err:  # pragma: no cover - a bug here, shown with the text
            raise RuntimeError(f"forward mode produced invalid code:\n{text}") from err
        return _fuse(fn, self.np_name)


# --- small helpers ---------------------------------------------------------------------------

# the temporaries of A-normal form and their tangents: inlined into their one reader when
# elementwise, so Numba computes a line's value, or its tangent, in one loop
_TEMPORARY = re.compile(r"^t\d+(_dot)?$")
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)


def _fuse(fn: cst.FunctionDef, np_name: str) -> cst.FunctionDef:
    """``fn`` with its elementwise temporaries read once inlined (:mod:`srctrans.passes.fuse`)."""
    body = list(fn.body.body)
    once = assigned_once(body)
    fusible: set[int] = set()

    def walk(stmts: list) -> None:
        for st in stmts:
            small = st.body[0] if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 else None
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                name = small.targets[0].target.value
                if _TEMPORARY.match(name) and name in once and _elementwise(small.value, np_name):
                    fusible.add(id(st))
            for child in fuse_children(st):
                walk(child)

    walk(body)
    if not fusible:
        return fn
    return fn.with_changes(body=fn.body.with_changes(body=inline_temporaries(body, fusible)))


def _elementwise(node: cst.BaseExpression, np_name: str) -> bool:
    """Arithmetic and elementwise NumPy functions of names and numbers: one loop under Numba."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, _ARITHMETIC) and _elementwise(node.left, np_name) and _elementwise(node.right, np_name)
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, (cst.Minus, cst.Plus)) and _elementwise(node.expression, np_name)
    if isinstance(node, cst.Call):
        func = node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == np_name):
            return False
        rule = DERIVATIVES.get(f"numpy.{func.attr.value}")
        return (
            rule is not None and rule.kind == "elementwise"
            and all(a.keyword is None and a.star == "" and _elementwise(a.value, np_name) for a in node.args)
        )
    return False



def _popped(value: cst.BaseExpression, lists: set[str]) -> str | None:
    """The stack ``value`` pops (``stack.pop()``), if it does."""
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute):
        receiver = value.func.value
        if value.func.attr.value == "pop" and isinstance(receiver, cst.Name) and receiver.value in lists:
            return receiver.value
    return None


def _is_name(text: str) -> bool:
    return text.isidentifier()


class _Renamer(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.mapping.get(updated.value, updated.value))


def _rename(text: str, mapping: dict[str, str]) -> str:
    return code(cst.parse_expression(text).visit(_Renamer(mapping)))


def _format(template: str, fill: dict[str, str], np_name: str) -> str:

    out = template
    for key, value in fill.items():
        out = out.replace("{" + key + "}", paren(value))
    if np_name != "np":
        out = out.replace("np.", np_name + ".")
    return fold_literals(out)


def _sum(terms: list[str]) -> str:
    """``a + b``, and ``a - b`` for a term ``-b``."""
    out = terms[0]
    for t in terms[1:]:
        out += f" - {t[1:]}" if t.startswith("-") and t[1:].isidentifier() else f" + {t}"
    return out


def _paren_term(text: str) -> str:
    """A term of a sum: parenthesized when it is itself a sum or difference."""
    node = cst.parse_expression(text)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)) and not node.lpar:
        return f"({text})"
    return text


def _substitute(value: cst.BaseExpression, op: _Op, subs: dict[str, str]) -> cst.BaseExpression:
    """``value`` with the arguments of the parameters in ``subs`` replaced by those texts."""
    for param, text in subs.items():
        new = cst.parse_expression(text)
        where = op.positions.get(param)
        if where is None:
            continue
        if where[0] == "receiver":  # x.reshape(...): x is the method's object
            value = value.with_changes(func=value.func.with_changes(value=new))
        elif where[0] == "arg":
            args = list(value.args)
            args[where[1]] = args[where[1]].with_changes(value=new)
            value = value.with_changes(args=args)
        else:  # an attribute of the node itself: left, right, expression, value
            value = value.with_changes(**{where[0]: new})
    return value


def forward(node, resolve, wrt, name, np_name="np", callee_jvp=None, custom_rule=None, has_aux=False) -> cst.FunctionDef:
    """The tangent function of ``node`` (ANF) with respect to the parameters ``wrt``.

    ``callee_jvp(fn, params)`` names the tangent function of a user function ``fn`` called
    here with tangents for ``params`` (and arranges for it to be generated), or returns None.
    """
    return Forward(node, resolve, wrt, name, np_name, callee_jvp, custom_rule, has_aux).run()


def tangent_functions(entry, by_fn: dict, transform, np_name: str, params_meta, namespace, add_function):
    """Forward mode on the entry of a file being built and, once per set of differentiated
    parameters, on every user function it calls (``g_jvp``). Called by :mod:`srctrans.build`.

    Returns the callees' tangent functions (the entry's replaces ``entry.node``) and the
    names of the entry's tangent parameters, in order.
    """
    from ..emit import clean_signature
    from ..errors import NoDerivativeError, UnsupportedSyntaxError
    from ..normal_form import at_line, desugared, normalize, resolver

    names: dict[tuple[int, tuple[str, ...]], str] = {}
    queue: list[tuple[Any, tuple[str, ...], tuple]] = []
    taken: set[str] = {u.emit_name for u in by_fn.values()}

    def callee_jvp(fn, active: tuple[str, ...]) -> str | None:
        unit = by_fn.get(id(fn))
        if unit is None:
            return None
        key = (id(fn), active)
        if key not in names:
            params = list(inspect.signature(fn).parameters)
            base = f"{unit.emit_name}_jvp" if list(active) == params else f"{unit.emit_name}_jvp_{'_'.join(active)}"
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            taken.add(name)
            names[key] = name
            queue.append((unit, active, key))
        return names[key]

    def custom_rule(obj) -> str | None:
        return add_function(getattr(obj.jvp, "__srctrans_function__", obj.jvp)).emit_name

    def run(unit, node, wrt, name, has_aux=False):
        resolve = resolver(unit, node, np_name, LOCAL)
        try:
            return forward(node, resolve, wrt, name, np_name, callee_jvp, custom_rule, has_aux)
        except NoRuleError as err:
            raise at_line(unit.pf, NoDerivativeError, err.line, f"no derivative rule for {err.what}",
                           "srctrans.custom_jvp will let you give one; until then, compute this outside the differentiated function") from None
        except NotDifferentiable as err:
            raise at_line(unit.pf, UnsupportedSyntaxError, err.line, err.what, err.hint or None) from None

    options = dict(transform.options)
    params = [p.name.value for p in entry.node.params.params]
    wrt = tuple(options.get("wrt") or params[:1])
    entry.node = run(entry, entry.node, wrt, entry.emit_name, bool(options.get("has_aux")))
    tangents = [p.name.value for p in entry.node.params.params][len(params):]
    out = []
    done = 0
    while done < len(queue):
        unit, active, key = queue[done]
        done += 1
        node = normalize(unit, desugared(unit, np_name), namespace)
        name = names[key]
        node = clean_signature(node, name)
        out.append(run(unit, node, active, name))
    return out, tangents
