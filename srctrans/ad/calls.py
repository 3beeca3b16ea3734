"""Calls of transformed functions inside a differentiated body, as both AD modes read them: a
function ``srctrans.vmap`` made (called, or made in the body), and calls of srctrans's own
transformations, which are refused where they cannot be differentiated yet. The API's objects
are recognized through :mod:`srctrans.faces`.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..analysis.resolve import LOCAL
from ..analysis.shapes import operation_kind
from ..faces import api_transformation, face, is_instance
from .refusals import NoRuleError, NotDifferentiable
from .statements import assigned_in, simple_statements


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
    if name in params or sum(name in assigned_in(stmt) for stmt in simple_statements(body)) != 1:
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
