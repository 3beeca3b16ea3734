"""Python numbers in compiled generated code take the array's dtype, as NumPy 2 does (NEP 50).

NumPy treats a Python ``int``, ``float`` or ``complex`` as *weak*: ``float32_array * 2.0``
is float32, ``uint8_array - 1`` is uint8 (and wraps), ``float32_array == 0.1`` compares in
float32. Numba types every Python float as float64 and every int as int64, so the same
line compiled gave float64 and int64 results. The generated file stays as written (it is
what runs uncompiled, where NumPy already does this); :func:`install` registers a Numba
rewrite that, in functions of generated files only, passes each such number through
:func:`weak` before it meets an array or a NumPy scalar:

- an operand of ``+ - * / // % ** & | ^ << >>`` (also in place) and of comparisons
  (for comparisons floats and complex numbers only: NumPy compares a Python int out of the
  array's range correctly, as Numba's int64 comparison does);
- an argument of a NumPy ufunc of two or more inputs (``np.maximum(x, 0.0)``), of
  ``np.where`` and of ``np.clip``.

A number is a literal of the line, or a name bound once to one (a value written into the
file, a local ``scale = 2.0``). ``weak(2.0, x)`` is ``np.float32(2.0)`` when ``x`` holds
float32, the number unchanged when NumPy would promote (a float against integers). An
``int`` literal out of the range of the array's integer dtype raises ``OverflowError``
where the line runs, as NumPy 2 does (with NumPy's message). What stays different: a variable Numba must give one type (``s = 0.0`` then
``s = s + x[i]`` in a loop accumulates in float64; NumPy's ``s`` becomes float32 after the
first step), and a Python number passed as an argument (Numba types it float64/int64).
"""

from __future__ import annotations

import operator

import numpy as np
from numba.core import cgutils, ir, types
from numba.core.ir_utils import find_callname, get_definition, guard
from numba.core.rewrites import Rewrite, register_rewrite
from numba.extending import intrinsic

_GENERATED = "_srctrans_"  # module names of generated files (srctrans.cache.module_name_for)

_ARITHMETIC = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
    operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
}
_COMPARISONS = {operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge}
_POW = {operator.pow, operator.ipow}


def _dtype_of(like) -> types.Type | None:
    if isinstance(like, types.Array):
        return like.dtype
    if isinstance(like, (types.Integer, types.Float, types.Complex)):
        return like
    return None


def _target(value, like) -> types.Type | None:
    """The Numba type ``value`` takes beside ``like``, or None: unchanged."""
    dtype = _dtype_of(like)
    if dtype is None or dtype in (types.int64, types.float64, types.complex128):
        return None  # (what Numba gives a Python number already)
    if isinstance(value, types.Integer) and isinstance(dtype, (types.Integer, types.Float, types.Complex)):
        return dtype
    if isinstance(value, types.Float) and isinstance(dtype, (types.Float, types.Complex)):
        return dtype if dtype.bitwidth > 16 else None  # (Numba computes no float16)
    if isinstance(value, types.Complex):
        if isinstance(dtype, types.Complex):
            return dtype
        if isinstance(dtype, types.Float) and dtype.bitwidth == 32:
            return types.complex64
    return None


def _out_of_range(value, target) -> str | None:
    """NumPy's message when the int literal ``value`` does not fit ``target``, else None."""
    number = getattr(value, "literal_value", None)
    if not isinstance(target, types.Integer) or not isinstance(number, int):
        return None
    info = np.iinfo(np.dtype(str(target)))
    return None if info.min <= number <= info.max else f"Python integer {number} out of bounds for {target}"


@intrinsic(prefer_literal=True)
def weak(typingctx, value, like):
    """``value`` (a Python number) as NumPy 2 combines it with ``like``: cast to its dtype where
    NEP 50 says so. An intrinsic, not an overload: a cast in place, no function to compile."""
    plain = types.unliteral(value)
    target = _target(plain, types.unliteral(like)) or plain
    message = _out_of_range(value, target)

    def codegen(context, builder, signature, args):
        if message is not None:  # known when compiling: raise where the line runs, as NumPy does
            with cgutils.if_unlikely(builder, cgutils.true_bit):
                context.call_conv.return_user_exc(builder, OverflowError, (message,))
        return context.cast(builder, args[0], signature.args[0], signature.return_type)

    return target(value, like), codegen


def _python_number(func_ir: ir.FunctionIR, var: ir.Var) -> int | float | complex | None:
    """The Python number ``var`` holds when it is a literal or a name bound once to one."""
    found = guard(get_definition, func_ir, var)
    if isinstance(found, (ir.Const, ir.Global, ir.FreeVar)) and type(found.value) in (int, float, complex):
        return found.value
    return None


class WeakScalars(Rewrite):
    """Route the Python numbers of a generated function's lines through :func:`weak`."""

    def __init__(self, state=None) -> None:
        super().__init__(state)
        func_id = getattr(getattr(state, "func_ir", None), "func_id", None)
        self.active = bool(func_id is not None and str(func_id.modname).startswith(_GENERATED))

    def match(self, func_ir, block, typemap, calltypes) -> bool:
        if not self.active:
            return False
        self.func_ir, self.block = func_ir, block
        self.todo: list[tuple[ir.Expr, str | int, ir.Var]] = []  # (expression, operand, the value it meets)
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                self._find(stmt.value)
        return bool(self.todo)

    def _find(self, expr: ir.Expr) -> None:
        if expr.op in ("binop", "inplace_binop") and (expr.fn in _ARITHMETIC or expr.fn in _COMPARISONS):
            self._pair(expr, "lhs", "rhs")
            self._pair(expr, "rhs", "lhs")
        elif expr.op == "call" and not expr.kws and not expr.vararg:
            self._call(expr)

    def _pair(self, expr: ir.Expr, side: str, other: str) -> None:
        number = _python_number(self.func_ir, getattr(expr, side))
        if number is None or _python_number(self.func_ir, getattr(expr, other)) is not None:
            return
        if expr.fn in _COMPARISONS and type(number) is int:
            return  # NumPy compares an out-of-range int correctly; so does int64
        if expr.fn in _POW and side == "rhs" and type(number) is int:
            return  # x ** 2: Numba's integer power, as before
        self.todo.append((expr, side, getattr(expr, other)))

    def _call(self, expr: ir.Expr) -> None:
        name = guard(find_callname, self.func_ir, expr)
        if not name or name[1] != "numpy":
            return
        fn = getattr(np, name[0], None)
        args = list(expr.args)
        if isinstance(fn, np.ufunc) and fn.nin >= 2:
            operands = list(range(min(fn.nin, len(args))))
        elif fn is np.where and len(args) == 3:
            operands = [1, 2]
        elif fn is np.clip and len(args) == 3:
            operands = [0, 1, 2]
        else:
            return
        numbers = {i for i in operands if _python_number(self.func_ir, args[i]) is not None}
        others = [i for i in operands if i not in numbers]
        if numbers and others:
            for i in sorted(numbers):
                self.todo.append((expr, i, args[others[0]]))

    def apply(self) -> ir.Block:
        new_body: list[ir.Stmt] = []
        pending = {id(expr) for expr, _, _ in self.todo}
        scope = self.block.scope
        for stmt in self.block.body:
            value = getattr(stmt, "value", None)
            if isinstance(stmt, ir.Assign) and isinstance(value, ir.Expr) and id(value) in pending:
                loc = stmt.loc
                fn_var = scope.redefine("$srctrans_weak", loc)
                new_body.append(ir.Assign(ir.Global("weak", weak, loc), fn_var, loc))
                for expr, where, like in self.todo:
                    if expr is not value:
                        continue
                    operand = getattr(expr, where) if isinstance(where, str) else expr.args[where]
                    weak_var = scope.redefine("$srctrans_weak_value", loc)
                    new_body.append(ir.Assign(ir.Expr.call(fn_var, [operand, like], (), loc), weak_var, loc))
                    if isinstance(where, str):
                        setattr(expr, where, weak_var)
                        if where == "rhs" and expr.fn in _POW:
                            expr.static_rhs = ir.UNDEFINED  # (Numba's rewrite had read the literal exponent)
                    else:
                        expr.args = [*expr.args[:where], weak_var, *expr.args[where + 1 :]]
            new_body.append(stmt)
        block = self.block.copy()
        block.body = new_body
        return block


_installed: list[bool] = []


def install() -> None:
    """Register the rewrite (once per process); it acts on functions of generated files only."""
    if not _installed:
        register_rewrite("before-inference")(WeakScalars)
        _installed.append(True)
