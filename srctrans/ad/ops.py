"""The operations of reverse mode: :class:`Op` (a rule and its arguments' text) and the
:class:`Operations` part of :class:`srctrans.ad.reverse.Reverse`, which classifies each
statement. Rules are looked up by the identity of the function called
(:mod:`srctrans.rules.lookup`); this module names no operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis.resolve import LOCAL
from ..rules.derivatives import DERIVATIVES, OPERATORS, Param, Rule
from ..rules.lookup import qualified_name, rule_keys_by_id
from .calls import check_vmapped_call, is_vmapped, shape_kind, transformation_refusal, vmap_made_here, vmapped_params
from .refusals import NoRuleError, NotDifferentiable, refuse_index_trick
from .statements import index_expr
from .text import code


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


class Operations:
    """What each statement of the function is to reverse mode: a differentiable operation with its
    rule (:meth:`op_of`), a constant, a call of a user function (its own adjoint), of a vmapped
    function or of a ``custom_vjp``. Part of :class:`srctrans.ad.reverse.Reverse`."""

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
            return self._op("getitem", [value.value, index_expr(value.slice)], {}, "indexing")
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
