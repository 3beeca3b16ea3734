"""Typing-time helpers the overload modules share: read an argument's Numba type as the
value it must be (``None``, a constant bool or int, an axis), cast literals away, and the
dtype of an adjoint. Plain Python run while Numba types a call, except ``unliteral`` (an
intrinsic) and ``norm_axis`` (jitted)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, register_jitable
from numba.np.numpy_support import as_dtype

__all__ = [
    "axis_kind",
    "const_bool",
    "const_int",
    "grad_dtype",
    "is_int_tuple",
    "is_none",
    "norm_axis",
    "unliteral",
    "unliteral_type",
]


def is_none(t: Any) -> bool:
    """True for an omitted argument whose default is None, or an explicit None."""
    if t is None or isinstance(t, types.NoneType):
        return True
    return isinstance(t, types.Omitted) and t.value is None


def const_bool(t: Any, fname: str, name: str) -> bool:
    """Value of an argument that must be a compile-time True/False (like keepdims)."""
    if isinstance(t, bool):
        return t
    if isinstance(t, types.Omitted):
        return bool(t.value)
    if isinstance(t, (types.BooleanLiteral, types.IntegerLiteral)):
        return bool(t.literal_value)
    if is_none(t):
        return False
    raise TypingError(f"{fname}: {name}= must be a constant True or False, got {t}")


def const_int(t: Any, fname: str, name: str) -> int:
    """Value of an argument that must be a compile-time integer."""
    if isinstance(t, int) and not isinstance(t, bool):
        return t
    if isinstance(t, types.Omitted) and isinstance(t.value, int):
        return t.value
    if isinstance(t, types.IntegerLiteral):
        return t.literal_value
    raise TypingError(f"{fname}: {name}= must be a constant integer, got {t}")


def is_int_tuple(t: Any) -> bool:
    return isinstance(t, types.BaseTuple) and all(isinstance(x, types.Integer) for x in t.types)


def axis_kind(axis: Any, fname: str, allow_tuple: bool = True) -> tuple[str, int]:
    """Classify an axis argument as ('none', 0), ('int', 1) or ('tuple', len)."""
    if is_none(axis):
        return "none", 0
    if isinstance(axis, types.Integer) or (isinstance(axis, int) and not isinstance(axis, bool)):
        return "int", 1
    if isinstance(axis, types.Omitted) and isinstance(axis.value, int):
        return "int", 1
    if allow_tuple and is_int_tuple(axis):
        return "tuple", len(axis.types)
    what = "an int or a tuple of ints" if allow_tuple else "an int"
    raise TypingError(f"{fname}: axis= must be None or {what}, got {axis}")


def unliteral_type(t: types.Type) -> types.Type:
    """Integers become intp, integer tuples UniTuple(intp); other types lose literal-ness."""
    if isinstance(t, types.Integer):
        return types.intp
    if isinstance(t, types.BaseTuple):
        inner = [unliteral_type(x) for x in t.types]
        if inner and all(x == inner[0] for x in inner):
            return types.UniTuple(inner[0], len(inner))
        return types.Tuple(inner)
    return types.unliteral(t)


@intrinsic
def unliteral(typingctx, x):
    """Cast away literal types so that helpers compile once, not once per constant axis."""
    ret = unliteral_type(x)

    def codegen(context, builder, sig, args):
        return context.cast(builder, args[0], sig.args[0], sig.return_type)

    return ret(x), codegen


@register_jitable
def norm_axis(axis, ndim):
    ax = axis + ndim if axis < 0 else axis
    if ax < 0 or ax >= ndim:
        raise ValueError("axis is out of bounds for the array's dimension")
    return ax


def grad_dtype(x: Any) -> np.dtype:
    """The dtype of the adjoint of an array ``x``: its own if inexact, else float64."""
    dt = x.dtype
    if isinstance(dt, (types.Float, types.Complex)):
        return as_dtype(dt)
    return np.dtype(np.float64)
