"""CUDA kernels from per-example stage functions: the scalarization pass (pure Python, no Numba).

Numba's CUDA device code cannot allocate arrays, and per-example code is array code
(``z = np.dot(w, x)``, ``g = (p - y) * x``). A CUDA runner knows the shape and dtype of
every per-example argument at call time, so this pass specializes the stage function on
them and writes *scalar* code:

- every array a statement makes becomes a fixed-size ``cuda.local.array(shape, dtype)``
  filled by explicit loops; elementwise expressions (``+ - * / **``, NumPy ufuncs,
  broadcasting, ``np.where``) are fused into one loop nest per statement;
- reductions and products (``np.sum``/``mean``/``max``/``min``/``prod``, ``np.dot``,
  ``@``, ``np.outer``, ``rt.unbroadcast``, ``rt.dot_grad_x``/``dot_grad_y``) become
  loops with an accumulator;
- indexing with integers and constant slices, ``.T``, ``.shape`` and ``len`` are
  resolved from the known shapes;
- ``srctrans.random.bits``/``uniform``/``normal``/``split``/``fold_in`` call the same
  scalar Threefry kernels as the CPU path, one element at a time
  (:mod:`numba_backend.cuda_random`), so a kernel draws the same numbers.

The result is a readable generated file beside the stage's: a device function
``<stage>_device`` (array outputs written into rows the caller passes, number outputs
returned) and a kernel ``<stage>_kernel`` with one thread per example. What cannot be
scalarized is refused with a :class:`~srctrans.errors.SrcTransError` naming the
operation and its line in the stage's file, never compiled into something wrong.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SrcTransError

# --- values the pass computes with ---------------------------------------------------------

_WEAK = {"float": 0.0, "int": 0, "bool": False}  # Python numbers: NumPy's weak scalars


def result_dtype(*dtypes: str) -> str:
    """NumPy's promotion, Python numbers weak (``float32 * 0.5`` stays float32)."""
    strong = [np.dtype(d) for d in dtypes if d not in _WEAK]
    weak = [_WEAK[d] for d in dtypes if d in _WEAK]
    if not strong:
        return "bool" if all(isinstance(w, bool) for w in weak) else ("float" if any(isinstance(w, float) for w in weak) else "int")
    return np.result_type(*strong, *weak).name


def float_dtype(dtype: str) -> str:
    """The dtype a transcendental function returns for ``dtype``."""
    if dtype in _WEAK:
        return "float"
    return "float32" if dtype == "float32" else "float64"


def storage_dtype(dtype: str) -> str:
    """The dtype an array of these elements is stored with."""
    return {"float": "float64", "int": "int64", "bool": "bool"}.get(dtype, dtype)


@dataclass
class Sca:
    """A number: the text of an expression and its dtype."""

    text: str
    dtype: str


@dataclass
class Arr:
    """An array of known shape, read one element at a time: ``at(index texts) -> element text``."""

    shape: tuple[int, ...]
    dtype: str
    at: Callable[[list[str]], str]
    storage: str | None = None  # the name of a materialized array holding it, if any
    values: tuple | None = None  # the elements, when they are constants known while generating (index tables)


@dataclass
class Const:
    """A value known while generating: a shape tuple, an int, a dtype, a string, a module."""

    value: Any


Value = Sca | Arr | Const


@dataclass(frozen=True)
class ArgSpec:
    """One parameter of a per-example function: per-example ``shape`` (``()`` for a number) and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    batched: bool


@dataclass
class KernelSource:
    """The generated CUDA file's text and what the runner needs to launch it."""

    text: str
    device: str  # the device function's name
    kernel: str  # the kernel's name
    args: list[ArgSpec]
    outputs: list[tuple[tuple[int, ...], str]]  # per output: per-example shape and dtype
    meta: dict = field(default_factory=dict)


# --- what each call becomes -------------------------------------------------------------------

_MATH1 = {
    "exp": "math.exp", "log": "math.log", "log1p": "math.log1p", "expm1": "math.expm1", "sqrt": "math.sqrt",
    "sin": "math.sin", "cos": "math.cos", "tan": "math.tan", "arcsin": "math.asin", "arccos": "math.acos",
    "arctan": "math.atan", "sinh": "math.sinh", "cosh": "math.cosh", "tanh": "math.tanh", "log2": "math.log2",
    "log10": "math.log10", "floor": "math.floor", "ceil": "math.ceil", "erf": "math.erf",
}
_MATH_NAMES = {f"math.{m.split('.')[1]}" for m in _MATH1.values()} | {
    "math.atan2", "math.pow", "math.hypot", "math.fabs", "math.lgamma", "math.gamma", "math.erfc", "math.asinh",
    "math.acosh", "math.atanh", "math.copysign", "math.degrees", "math.radians",
}
_REDUCE = {"sum", "mean", "max", "amax", "min", "amin", "prod", "var", "std"}
_OPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_DTYPE_NAMES = {"float64", "float32", "int64", "int32", "uint32", "uint64", "bool"}
_NUMBA_TYPE = {"float64": "float64", "float32": "float32", "int64": "int64", "int32": "int32", "uint32": "uint32", "uint64": "uint64", "bool": "boolean"}


class _Refuse(Exception):
    def __init__(self, message: str, node: ast.AST | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.node, self.hint = message, node, hint


class _Names:
    """Fresh, readable names that collide with nothing in the function."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}{k}"
        self.taken.add(name)
        return name


class _Writing:
    """Writing the device function's lines: loops, local arrays, reductions (the state is _Scalarizer's)."""


    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def loop_names(self, count: int) -> list[str]:
        """``count`` loop indices: the first free of j, k, m, q, r, s (then numbered ones)."""
        out = []
        for _ in range(count):
            name = next((c for c in ("j", "k", "m", "q", "r", "s") if c not in self.names.taken), None)
            out.append(name or self.names.fresh("j"))
            self.names.taken.add(out[-1])
        return out

    def release(self, names: list[str]) -> None:
        """Loop indices may be reused by the next loop nest (they never outlive it)."""
        for n in names:
            self.names.taken.discard(n)

    def local_array(self, base: str, shape: tuple[int, ...], dtype: str, exact: bool = False) -> str:
        name = base if exact else self.names.fresh(base)
        if not exact:
            self.temps.add(name)
        nb = _NUMBA_TYPE[storage_dtype(dtype)]
        self.used_types.add(nb)
        dims = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"
        self.emit(f"{name} = cuda.local.array({dims}, {nb})")
        return name

    def fill(self, target: str, value: Arr) -> None:
        """``target[...] = value[...]`` over every element, one loop per axis."""
        idx = self.loop_names(len(value.shape))
        for i, n in zip(idx, value.shape):
            self.emit(f"for {i} in range({n}):")
            self.depth += 1
        self.emit(f"{target}[{', '.join(idx)}] = {_bare(value.at(idx))}")
        self.depth -= len(value.shape)
        self.release(idx)

    def materialize(self, value: Arr, base: str, first: bool = False) -> Arr:
        """``value`` in a local array of its own, named ``base`` when ``first`` (the user's name, first bound here)."""
        name = self.local_array(base, value.shape, value.dtype, exact=first)
        self.fill(name, value)
        return _named_array(name, value.shape, storage_dtype(value.dtype))

    def scalar_temp(self, value: Sca, base: str) -> Sca:
        name = self.names.fresh(base)
        self.temps.add(name)
        self.emit(f"{name} = {value.text}")
        return Sca(name, value.dtype)

    def accumulate(self, value: Arr, op: str, base: str, axes: tuple[int, ...] | None = None) -> Value:
        """A reduction (``sum``/``prod``/``max``/``min``) of ``value`` over ``axes`` (all when None)."""
        axes = tuple(range(len(value.shape))) if axes is None else axes
        keep = [d for d in range(len(value.shape)) if d not in axes]
        dtype = storage_dtype(value.dtype) if op in ("max", "min") else result_dtype(value.dtype, "int" if value.dtype in ("bool",) else value.dtype)
        if dtype == "bool":
            dtype = "int64"
        if not keep:
            acc = self.names.fresh(base)
            self.temps.add(acc)
            if any(value.shape[d] == 0 for d in axes) and op in ("max", "min"):
                raise _Refuse(f"np.{op} of an empty array")
            start = {"sum": "0", "prod": "1"}.get(op, value.at(["0"] * len(value.shape)))
            if op in ("sum", "prod") and dtype.startswith("float"):
                start += ".0"
            self.emit(f"{acc} = {start}")
            self._reduce_loops(acc, value, op, list(axes), [])
            return Sca(acc, dtype)
        out_shape = tuple(value.shape[d] for d in keep)
        out = self.local_array(base, out_shape, dtype)
        outer = self.loop_names(len(keep))
        for i, d in zip(outer, keep):
            self.emit(f"for {i} in range({value.shape[d]}):")
            self.depth += 1
        acc = self.names.fresh("acc")
        full = ["0"] * len(value.shape)
        for i, d in zip(outer, keep):
            full[d] = i
        start = {"sum": "0", "prod": "1"}.get(op, value.at(full))
        if op in ("sum", "prod") and dtype.startswith("float"):
            start += ".0"
        self.emit(f"{acc} = {start}")
        self._reduce_loops(acc, value, op, list(axes), list(zip(keep, outer)))
        self.emit(f"{out}[{', '.join(outer)}] = {acc}")
        self.depth -= len(keep)
        self.release(outer)
        return _named_array(out, out_shape, dtype)

    def _reduce_loops(self, acc: str, value: Arr, op: str, axes: list[int], fixed: list[tuple[int, str]]) -> None:
        inner = self.loop_names(len(axes))
        full = ["0"] * len(value.shape)
        for d, i in fixed:
            full[d] = i
        for i, d in zip(inner, axes):
            full[d] = i
            self.emit(f"for {i} in range({value.shape[d]}):")
            self.depth += 1
        element = value.at(full)
        if op == "sum":
            self.emit(f"{acc} += {element}")
        elif op == "prod":
            self.emit(f"{acc} *= {element}")
        else:
            # NaN wins, as in NumPy's max/min (Python's max(acc, nan) would keep acc)
            self.emit(f"{acc} = {_pick(op, acc, element)}")
        self.depth -= len(axes)
        self.release(inner)


class _Statements(_Writing):
    """Statements: assignments (arrays into local arrays), if/for/while, stores, the return."""


    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.origin(stmt)
            self.statement_start = len(self.lines)
            self.temps.clear()
            try:
                self.statement(stmt)
            except _Refuse as err:
                if err.node is None:
                    err.node = stmt
                raise

    def origin(self, stmt: ast.stmt) -> None:
        """Carry over the comments just above ``stmt`` in the stage's file (its origin comments)."""
        k = stmt.lineno - 2
        comments = []
        while k >= 0 and self.source_lines[k].strip().startswith("#"):
            comments.append(self.source_lines[k].strip())
            k -= 1
        for c in reversed(comments):
            self.emit(c)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.assign(stmt.targets[0], stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            if _OPS.get(type(stmt.op)) is None or not isinstance(stmt.target, (ast.Name, ast.Subscript)):
                raise _Refuse("this augmented assignment")
            load = ast.Name(stmt.target.id, ast.Load()) if isinstance(stmt.target, ast.Name) else ast.Subscript(stmt.target.value, stmt.target.slice, ast.Load())
            self.assign(stmt.target, ast.copy_location(ast.BinOp(left=load, op=stmt.op, right=stmt.value), stmt))
        elif isinstance(stmt, (ast.Break, ast.Continue)):
            self.emit("break" if isinstance(stmt, ast.Break) else "continue")
        elif isinstance(stmt, ast.Return):
            if self.control != (self.inlining[-1][0] if self.inlining else 0):
                raise _Refuse("a return inside an if or a loop", hint="return once, at the end of the function")
            if self.inlining:  # the end of a callee written in place: its value goes back to the call
                self.inlining[-1][1].append(self.expr(stmt.value) if stmt.value is not None else Const(None))
            else:
                self.outputs = self.returned(stmt.value)
        elif isinstance(stmt, (ast.If, ast.While)):
            self.anchor(stmt)
            before = len(self.lines)
            test = self.scalar(self.expr(stmt.test), stmt.test, "the condition")
            if isinstance(stmt, ast.While) and len(self.lines) != before:
                raise _Refuse("a while condition that needs a loop of its own (a reduction or product)", stmt.test, "compute it into a variable before the loop and again at the end of the body")
            self.emit(f"{'if' if isinstance(stmt, ast.If) else 'while'} {test.text}:")
            self.block(stmt.body)
            if stmt.orelse:
                self.emit("else:")
                self.block(stmt.orelse)
        elif isinstance(stmt, ast.For):
            if not (isinstance(stmt.target, ast.Name) and isinstance(stmt.iter, ast.Call) and _dotted(stmt.iter.func) == "range") or stmt.orelse:
                raise _Refuse("a for loop over something other than range(...)")
            self.anchor(stmt)
            bounds = [self.scalar(self.expr(a), a, "a range bound").text for a in stmt.iter.args]
            self.env[stmt.target.id] = Sca(stmt.target.id, "int64")
            self.emit(f"for {stmt.target.id} in range({', '.join(bounds)}):")
            self.block(stmt.body)
        elif isinstance(stmt, ast.Pass):
            self.emit("pass")
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            pass  # a docstring
        else:
            raise _Refuse(f"a statement of kind {type(stmt).__name__}")

    def anchor(self, stmt: ast.stmt) -> None:
        """At the outermost if/for/while: remember where it starts (arrays first assigned inside it are
        declared there), and give each array it reassigns a buffer of its own if that name shares one now
        (``y = y0`` before a loop that rebinds ``y``): the body reads and writes that buffer on every pass."""
        if self.control:
            return
        self.anchor_at = (len(self.lines), self.depth)
        params = {a.name for a in self.args}
        rebound = sorted({n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
        for name in rebound:
            value = self.env.get(name)
            if not isinstance(value, Arr):
                continue
            sharing = [n for n, v in self.env.items() if n != name and isinstance(v, Arr) and v.storage == value.storage]
            if value.storage in params or sharing:
                storage = self.names.fresh(name)
                self.declare(storage, value.shape, storage_dtype(value.dtype), initial=value)
                self.env[name] = _named_array(storage, value.shape, storage_dtype(value.dtype))
                if value.storage not in params:
                    self.copied |= {value.storage, storage}  # Python shares it until the rebinding

    def declare(self, name: str, shape: tuple[int, ...], dtype: str, initial: Arr | None = None) -> None:
        """``name = cuda.local.array(...)`` (filled from ``initial``) before the outermost if/for/while we are in."""
        saved, depth = self.lines, self.depth
        self.lines, self.depth = [], self.anchor_at[1]
        self.local_array(name, shape, dtype, exact=True)
        if initial is not None:
            self.fill(name, initial)
        made = self.lines
        self.lines, self.depth = saved, depth
        at = self.anchor_at[0]
        self.lines[at:at] = made
        self.anchor_at = (at + len(made), self.anchor_at[1])
        if self.statement_start >= at:
            self.statement_start += len(made)

    def assign_in_control(self, name: str, value: Arr) -> None:
        """An array assigned inside an if or a loop: computed into a temporary, then copied into the
        one buffer that name has for the whole function (so every path leaves it in the same place)."""
        previous = self.env.get(name)
        dtype = storage_dtype(value.dtype)
        if isinstance(previous, Arr):
            storage = previous.storage
            if storage is None or storage in {a.name for a in self.args} or previous.shape != value.shape or storage_dtype(previous.dtype) != dtype:
                raise _Refuse(
                    f"{name!r} is given an array of shape {value.shape} inside an if or a loop, but holds "
                    f"{'an argument' if storage in {a.name for a in self.args} else f'shape {previous.shape} ({previous.dtype})'} outside it",
                    hint="give the array a name of its own, first assigned before the if or loop",
                )
            shared = [n for n, v in self.env.items() if n != name and isinstance(v, Arr) and v.storage == storage]
            if shared:
                raise _Refuse(f"{name!r} is reassigned inside an if or a loop while {shared[0]!r} refers to the same array")
        elif previous is None:
            storage = name if name not in self.claimed else self.names.fresh(name)
            self.claimed.add(name)
            self.declare(storage, value.shape, dtype)
        else:
            raise _Refuse(f"{name!r} holds a number outside this if or loop and is given an array inside it")
        if value.storage is not None and value.storage != storage:
            self.copied |= {value.storage, storage}  # a copy where Python would share: no later writes into either
        value = self.materialize(value, "new_" + name)  # read everything before overwriting anything
        self.fill(storage, value)
        self.env[name] = _named_array(storage, value.shape, dtype)

    def block(self, body: list[ast.stmt]) -> None:
        self.depth += 1
        self.control += 1
        before = len(self.lines)
        self.statements(body)
        if len(self.lines) == before or all(ln.strip().startswith("#") for ln in self.lines[before:]):
            self.emit("pass")
        self.control -= 1
        self.depth -= 1

    def assign(self, target: ast.expr, value_node: ast.expr) -> None:
        if isinstance(target, ast.Tuple):
            value = self.expr(value_node)
            if not isinstance(value, Const) or not isinstance(value.value, tuple) or len(value.value) != len(target.elts):
                raise _Refuse("unpacking anything but a tuple of the same length")
            for t, v in zip(target.elts, value.value):
                self.bind(t, v if isinstance(v, (Sca, Arr, Const)) else Const(v))
            return
        if isinstance(target, ast.Subscript):
            self.store(target, value_node)
            return
        if not isinstance(target, ast.Name):
            raise _Refuse(f"assigning to a {type(target).__name__}")
        if isinstance(value_node, ast.Call) and self._is_tape(value_node.func):
            self.tape(target.id, value_node)
            return
        self.bind(target, self.expr(value_node))

    def _is_tape(self, func: ast.expr) -> bool:
        value = self.expr(func) if isinstance(func, (ast.Attribute, ast.Name)) else None
        return isinstance(value, Const) and isinstance(value.value, _Module) and value.value.name == "srctrans.runtime.tape"

    def tape(self, name: str, call: ast.Call) -> None:
        """``name = rt.tape(v, n)`` (a loop's first trip makes room for what its ``n`` trips save):
        one local array of ``n`` values like ``v``, declared before the outermost loop, written by
        ``name[trip] = v`` and read back by the backward loop. Its length must be known here."""
        if len(call.args) != 2 or call.keywords:
            raise _Refuse("rt.tape with other arguments than (value, length)", call)
        value = self.expr(call.args[0])
        count = _static_int(self.expr(call.args[1]), call, "a tape's length (the trips of its loop)")
        shape = (count,) + (value.shape if isinstance(value, Arr) else ())
        dtype = storage_dtype(value.dtype)
        if not dtype.startswith("float"):
            raise _Refuse(f"a tape of {dtype} values (a later trip may save another type)", call)
        dtype = "float64"  # what the first trip saves may be float32 and a later trip's float64
        previous = self.env.get(name)
        if isinstance(previous, Arr) and previous.storage is not None and previous.shape == shape:
            return  # made already (the first trip of an outer loop's earlier pass)
        storage = name if name not in self.claimed else self.names.fresh(name)
        self.claimed.add(name)
        if self.control:
            self.declare(storage, shape, dtype)
            self.emit(f"pass  # {storage} is made before the loop")
        else:
            self.local_array(storage, shape, dtype, exact=True)
        self.env[name] = _named_array(storage, shape, dtype)

    def bind(self, target: ast.expr, value: Value) -> None:
        if not isinstance(target, ast.Name):
            raise _Refuse(f"assigning to a {type(target).__name__}")
        name = target.id
        if isinstance(value, Const) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
            value = Sca(repr(value.value), "int" if isinstance(value.value, int) else "float")
        temp = value.storage if isinstance(value, Arr) else value.text if isinstance(value, Sca) else None
        if temp in self.temps and name not in self.claimed and not self.control:
            # the result of this statement sits in a temporary made just now: give it the user's name
            pattern = re.compile(rf"\b{re.escape(temp)}\b")
            self.lines[self.statement_start:] = [pattern.sub(name, ln) for ln in self.lines[self.statement_start:]]
            self.temps.discard(temp)
            self.claimed.add(name)
            if isinstance(value, Arr):
                self.env[name] = Arr(value.shape, value.dtype, _named_array(name, value.shape, value.dtype).at, name, value.values)
            else:
                self.env[name] = Sca(name, value.dtype)
            return
        if isinstance(value, Arr):
            if self.control:
                self.assign_in_control(name, value)
                return
            if value.storage is None:  # a lazy elementwise expression: give it storage of its own
                value = self.materialize(value, name, first=name not in self.claimed)
                self.claimed.add(name)
            self.env[name] = value  # a plain rebinding (y = x) shares the storage, as in Python
        elif isinstance(value, Sca):
            previous = self.env.get(name)
            code_name = name
            if isinstance(previous, Arr) or (isinstance(previous, Sca) and previous.text != name and name in self.claimed):
                if self.control:
                    raise _Refuse(f"{name!r} holds an array outside this if or loop and is given a number inside it")
                code_name = self.names.fresh(name + "_")  # Numba gives each variable one type
            self.emit(f"{code_name} = {_bare(value.text)}")
            self.claimed.add(name)
            literal = _bare(value.text)
            if not self.control and name not in self.assigned_in_control and _is_number_literal(literal):
                self.env[name] = Sca(literal, value.dtype)  # a constant: shapes and slices may use it
            else:
                self.env[name] = Sca(code_name, value.dtype)
        else:
            self.env[name] = value

    def store(self, target: ast.Subscript, value_node: ast.expr) -> None:
        """``a[i] = v`` into an array this function made (arguments are read-only)."""
        base = target.value
        if not isinstance(base, ast.Name) or not isinstance(self.env.get(base.id), Arr):
            raise _Refuse("writing into something that is not a local array")
        arr = self.env[base.id]
        if arr.storage in {a.name for a in self.args}:
            raise _Refuse(
                f"writing into {base.id!r}, which is the argument {arr.storage!r} (arguments are read-only in a kernel)",
                hint="write into a copy: y = x.copy()",
            )
        if arr.storage in self.copied:
            raise _Refuse(f"writing into {base.id!r}, which an if or a loop copied where Python would share the array")
        view = self.subscript(arr, target.slice, target)
        value = self.expr(value_node)
        if isinstance(value, Arr) and re.search(rf"\b{re.escape(arr.storage or '')}\b", value.at(["0"] * len(value.shape))):
            value = self.materialize(value, "new_" + base.id)  # the right side reads the target: read it all first
        if isinstance(view, Sca):
            self.emit(f"{view.text} = {self.scalar(value, value_node, 'the stored value').text}")
            return
        value = self.broadcast_to(value, view.shape, value_node)
        idx = self.loop_names(len(view.shape))
        for i, n in zip(idx, view.shape):
            self.emit(f"for {i} in range({n}):")
            self.depth += 1
        self.emit(f"{view.at(idx)} = {value.at(idx)}")
        self.depth -= len(view.shape)
        self.release(idx)

    def returned(self, node: ast.expr | None) -> list[Value]:
        if node is None:
            raise _Refuse("a function that returns nothing")
        value = self.expr(node)
        self.returns_tuple = isinstance(value, Const) and isinstance(value.value, tuple)
        items = list(value.value) if self.returns_tuple else [value]
        outs = []
        for v in items:
            if isinstance(v, Const) and isinstance(v.value, (int, float, bool)) and not isinstance(v.value, tuple):
                v = Sca(repr(v.value), "float" if isinstance(v.value, float) else "int")
            if not isinstance(v, (Sca, Arr)):
                raise _Refuse("returning something that is not a number or an array", node)
            outs.append(v)
        return outs


class _Expressions(_Statements):
    """Expressions: numbers as text, arrays as per-element readers (:class:`Arr`), broadcasting, indexing."""


    def expr(self, node: ast.expr) -> Value:
        try:
            return self._expr(node)
        except _Refuse as err:
            if err.node is None:
                err.node = node
            raise

    def _expr(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return Sca(repr(v), "bool")
            if isinstance(v, int):
                return Sca(repr(v), "int")
            if isinstance(v, float):
                return Sca(_float_text(v), "float")
            return Const(v)
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in self.constants:  # a number the module holds: frozen into the kernel, as jit does
                value = self.constants[node.id]
                self.used_constants.add(node.id)
                kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "float"
                return Sca(repr(value) if kind != "float" else _float_text(value), kind)
            if node.id in self.modules:
                return Const(_Module(self.modules[node.id]))
            if node.id in self.callees:
                return Const(_Callee(node.id))
            if node.id in ("float", "int", "bool", "len", "range", "abs", "min", "max", "math"):
                return Const(_Module(node.id))
            raise _Refuse(f"the name {node.id!r}, which is not an argument or a local of this function")
        if isinstance(node, (ast.Tuple, ast.List)):
            return Const(tuple(self._const_or_value(e) for e in node.elts))
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                return self.dot(self.expr(node.left), self.expr(node.right), "@")
            return self.binop(_OPS.get(type(node.op)), self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not ", ast.Invert: "~"}[type(node.op)]
            return self.elementwise(lambda a: f"({op}{a})", [operand], lambda d: "bool" if op == "not " else d[0], node)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
            op = _CMP[type(node.ops[0])]
            return self.elementwise(lambda a, b: f"({a} {op} {b})", [self.expr(node.left), self.expr(node.comparators[0])], lambda d: "bool", node)
        if isinstance(node, ast.BoolOp):
            op = " and " if isinstance(node.op, ast.And) else " or "
            vals = [self.scalar(self.expr(v), v, "an and/or operand") for v in node.values]
            return Sca("(" + op.join(v.text for v in vals) + ")", "bool")
        if isinstance(node, ast.IfExp):
            test = self.scalar(self.expr(node.test), node.test, "the condition")
            a, b = self.expr(node.body), self.expr(node.orelse)
            return self.elementwise(lambda x, y: f"({x} if {test.text} else {y})", [a, b], lambda d: result_dtype(*d), node)
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value)
            if isinstance(base, Const) and isinstance(base.value, tuple):
                index = self.expr(node.slice)
                if isinstance(index, Sca) and _is_int_literal(index.text):
                    item = base.value[int(_bare(index.text))]
                    return item if isinstance(item, (Sca, Arr, Const)) else Const(item)
                raise _Refuse("indexing a tuple with something other than a constant")
            if not isinstance(base, Arr):
                raise _Refuse("indexing something that is not an array")
            return self.subscript(base, node.slice, node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise _Refuse(f"an expression of kind {type(node).__name__}")

    def _const_or_value(self, node: ast.expr) -> Any:
        v = self.expr(node)
        if isinstance(v, Sca) and _is_int_literal(v.text):
            return int(_bare(v.text))
        return v.value if isinstance(v, Const) else v

    def attribute(self, node: ast.Attribute) -> Value:
        base = self.expr(node.value)
        if isinstance(base, Const) and isinstance(base.value, _Module):
            return Const(_Module(f"{base.value.name}.{node.attr}"))
        if isinstance(base, Arr):
            if node.attr == "T":
                return _transpose(base)
            if node.attr == "shape":
                return Const(base.shape)
            if node.attr == "ndim":
                return Sca(str(len(base.shape)), "int")
            if node.attr == "size":
                return Sca(str(math.prod(base.shape)), "int")
            if node.attr == "dtype":
                return Const(_Module(f"numpy.{storage_dtype(base.dtype)}"))
            return Const(_Method(base, node.attr))
        if isinstance(base, Sca):
            if node.attr in ("shape",):
                return Const(())
            if node.attr == "ndim":
                return Sca("0", "int")
            if node.attr in ("real",):
                return base
            return Const(_Method(base, node.attr))
        raise _Refuse(f"the attribute .{node.attr}")

    def scalar(self, value: Value, node: ast.AST, what: str) -> Sca:
        if isinstance(value, Sca):
            return value
        if isinstance(value, Const) and isinstance(value.value, (int, float, bool)):
            return Sca(repr(value.value), "int" if isinstance(value.value, int) else "float")
        shape = value.shape if isinstance(value, Arr) else "?"
        raise _Refuse(f"{what} must be a number here, got an array of shape {shape}", node)

    def elementwise(self, make: Callable[..., str], operands: list[Value], dtype: Callable[[list[str]], str], node: ast.AST) -> Value:
        vals = []
        for v in operands:
            if isinstance(v, Const) and isinstance(v.value, (int, float, bool)):
                v = Sca(repr(v.value), "float" if isinstance(v.value, float) else "int")
            if not isinstance(v, (Sca, Arr)):
                raise _Refuse("an operand that is neither a number nor an array", node)
            vals.append(v)
        out_dtype = dtype([v.dtype for v in vals])
        arrays = [v for v in vals if isinstance(v, Arr)]
        if not arrays:
            return Sca(make(*[v.text for v in vals]), out_dtype)
        shape = _broadcast([a.shape for a in arrays], node)
        reads = [self.broadcast_to(v, shape, node) if isinstance(v, Arr) else v for v in vals]

        def at(idx: list[str]) -> str:
            return make(*[r.at(idx) if isinstance(r, Arr) else r.text for r in reads])

        return Arr(shape, out_dtype, at)

    def broadcast_to(self, value: Value, shape: tuple[int, ...], node: ast.AST) -> Arr:
        if isinstance(value, Sca):
            return Arr(shape, value.dtype, lambda idx, t=value.text: t)
        if not isinstance(value, Arr):
            raise _Refuse("an operand that is neither a number nor an array", node)
        if value.shape == shape:
            return value
        lead = len(shape) - len(value.shape)
        if lead < 0 or any(s not in (1, t) for s, t in zip(value.shape, shape[lead:])):
            raise _Refuse(f"shapes {value.shape} and {shape} do not broadcast", node)

        def at(idx: list[str]) -> str:
            return value.at(["0" if s == 1 and t != 1 else i for i, s, t in zip(idx[lead:], value.shape, shape[lead:])])

        return Arr(shape, value.dtype, at)

    def binop(self, op: str | None, a: Value, b: Value, node: ast.AST) -> Value:
        if op is None:
            raise _Refuse("this operator", node)
        a, b = (Sca(repr(v.value), "int") if isinstance(v, Const) and type(v.value) is int else v for v in (a, b))

        def dtype(d: list[str]) -> str:
            r = result_dtype(*d)
            if op == "/":
                return float_dtype(r) if r in _WEAK or not r.startswith("float") else r
            return r

        if isinstance(a, Sca) and isinstance(b, Sca) and _is_int_literal(a.text) and _is_int_literal(b.text) and op in ("+", "-", "*", "//"):
            x, y = int(_bare(a.text)), int(_bare(b.text))
            if op != "//" or y != 0:
                return Sca(str({"+": x + y, "-": x - y, "*": x * y, "//": x // y if y else 0}[op]), result_dtype(a.dtype, b.dtype))
        if op == "//":
            return self.elementwise(lambda x, y: f"({x} // {y})", [a, b], dtype, node)
        return self.elementwise(lambda x, y: f"({x} {op} {y})", [a, b], dtype, node)

    def subscript(self, base: Arr, index_node: ast.expr, node: ast.AST) -> Value:
        parts = list(index_node.elts) if isinstance(index_node, ast.Tuple) else [index_node]
        shape: list[int] = []
        maps: list[Any] = []  # per axis of base: ("fix", text) or ("range", start, step, out axis)
        axis = 0
        for p in parts:
            if isinstance(p, ast.Constant) and p.value is None:  # np.newaxis
                shape.append(1)
                continue
            if axis >= len(base.shape):
                raise _Refuse(f"too many indices for an array of shape {base.shape}", node)
            n = base.shape[axis]
            if isinstance(p, ast.Slice):
                start, stop, step = (self._slice_bound(b) for b in (p.lower, p.upper, p.step))
                start, stop, step = slice(start, stop, step).indices(n)
                length = len(range(start, stop, step))
                maps.append(("range", start, step, len(shape)))
                shape.append(length)
            elif isinstance(table := self.expr(p), Arr):
                if table.values is None or len(table.shape) != 1 or table.storage is None:
                    raise _Refuse("indexing with an array whose values are not constants (fancy or boolean indexing)", p)
                bad = [v for v in table.values if not -n <= v < n]
                if bad:
                    raise _Refuse(f"index {bad[0]} is out of bounds for axis {axis} with size {n}", p)
                maps.append(("take", table.storage, len(shape), n))
                shape.append(table.shape[0])
            else:
                index = self.scalar(table, p, "an array index")
                if not index.dtype.startswith(("int", "uint")) and index.dtype != "int":
                    raise _Refuse(f"an index of dtype {index.dtype} (boolean or fancy indexing)", p)
                text = index.text
                if _is_int_literal(text):
                    k = int(_bare(text))
                    if not -n <= k < n:
                        raise _Refuse(f"index {k} is out of bounds for axis {axis} with size {n}", p)
                    text = str(k % n)
                maps.append(("fix", text))
            axis += 1
        for d in range(axis, len(base.shape)):
            maps.append(("range", 0, 1, len(shape)))
            shape.append(base.shape[d])

        def at(idx: list[str]) -> str:
            full = []
            for m in maps:
                if m[0] == "fix":
                    full.append(m[1])
                elif m[0] == "take":  # an index table of constants (negative ones wrap)
                    full.append(f"{m[1]}[{idx[m[2]]}] % {m[3]}")
                else:
                    _, start, step, k = m
                    i = idx[k]
                    term = i if step == 1 else f"{step} * {i}"
                    full.append(term if start == 0 else f"{start} + {term}")
            return base.at(full)

        if not shape:
            return Sca(at([]), base.dtype)
        return Arr(tuple(shape), base.dtype, at)

    def _slice_bound(self, node: ast.expr | None) -> int | None:
        if node is None:
            return None
        v = self.expr(node)
        if isinstance(v, Sca) and _is_int_literal(v.text):
            return int(_bare(v.text))
        raise _Refuse("a slice bound that is not a constant (the shapes must be known while generating)", node)


class _Library(_Expressions):
    """Calls: NumPy, math, srctrans.runtime's adjoint helpers, callees of the same file written in place."""


    def call(self, node: ast.Call) -> Value:
        func = self.expr(node.func)
        if isinstance(func, Const) and isinstance(func.value, _Callee):
            return self.inline(self.callees[func.value.name], node)
        if not isinstance(func, Const) or not isinstance(func.value, (_Module, _Method)):
            raise _Refuse("a call of something that is not a known function", node)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise _Refuse("**keyword arguments", node)
        if isinstance(func.value, _Method):
            return self.method(func.value, args, kwargs, node)
        name = func.value.name
        short = name.split(".")[-1]
        if name.startswith("numpy.random") or name.startswith("random."):
            raise _Refuse(f"{name}: NumPy's global random state", node, "use srctrans.random with an explicit key")
        if name.startswith("numpy.") and name.count(".") == 1 or name.startswith("math."):
            handled = self.numpy_call(short, args, kwargs, node, name)
            if handled is not None:
                return handled
        if name.startswith("srctrans.runtime."):
            handled = self.runtime_call(short, args, kwargs, node)
            if handled is not None:
                return handled
        if name.startswith("srctrans.random."):
            return self.random_call(short, args, kwargs, node)
        if name in ("float", "int", "bool"):
            (a,) = args
            s = self.scalar(a, node, f"{name}()'s argument")
            if name == "float" and _is_number_literal(s.text):
                return Sca(repr(float(_bare(s.text))), "float")
            if name == "int" and _is_int_literal(s.text):
                return Sca(str(int(_bare(s.text))), "int")
            return Sca(f"{name}({_bare(s.text)})", {"float": "float64", "int": "int64", "bool": "bool"}[name])
        if name == "range" and 1 <= len(args) <= 3 and not kwargs:
            bounds = [self.scalar(a, node, "a range bound") if not isinstance(a, Const) else a for a in args]
            if all(isinstance(b, Sca) and _is_int_literal(_bare(b.text)) for b in bounds):
                return Const(range(*(int(_bare(b.text)) for b in bounds)))  # (its length sizes tapes)
            raise _Refuse("range(...) with bounds that are not constants, outside a for statement", node)
        if name == "len":
            (a,) = args
            if isinstance(a, Arr):
                return Sca(str(a.shape[0]), "int")
            if isinstance(a, Const) and isinstance(a.value, (tuple, range)):
                return Sca(str(len(a.value)), "int")
        if name in ("abs", "min", "max") and all(isinstance(a, Sca) for a in args) and not kwargs:
            return Sca(f"{name}({', '.join(a.text for a in args)})", result_dtype(*[a.dtype for a in args]))
        if name.startswith("numpy.") and name.split(".")[1] in _DTYPE_NAMES and len(args) == 1:
            dt = name.split(".")[1]
            nb = _NUMBA_TYPE[dt]
            self.used_types.add(nb)
            return self.elementwise(lambda a: f"{nb}({a})", args, lambda d: dt, node)
        raise _Refuse(f"{name} (no scalar form in CUDA kernels yet)", node, "keep it out of pmap(backend='cuda') stages, or use backend='cpu'")

    def inline(self, callee: ast.FunctionDef, node: ast.Call) -> Value:
        """A call of another function of the same file, written in place (device code has no array calls)."""
        if len(self.inlining) >= 8:
            raise _Refuse(f"calls nested more than 8 deep (is {callee.name} recursive?)", node)
        a = callee.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or node.keywords:
            raise _Refuse(f"a call of {callee.name} with defaults, keywords or *args", node)
        if len(node.args) != len(a.args):
            raise _Refuse(f"{callee.name} takes {len(a.args)} arguments, the call gives {len(node.args)}", node)
        values = [self.expr(x) for x in node.args]
        local = {n.id for n in ast.walk(callee) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | {p.arg for p in a.args}
        rename = {n: self.names.fresh(n) for n in sorted(local)}  # the callee's names, kept apart from the caller's
        body = [_Rename(rename).visit(ast.fix_missing_locations(copy.deepcopy(stmt))) for stmt in callee.body]
        self.assigned_in_control |= {rename[n] for n in _assigned_in_control(callee)}
        for p, v in zip(a.args, values):
            self.env[rename[p.arg]] = v
            if isinstance(v, Sca) and v.text != rename[p.arg]:
                self.claimed.add(rename[p.arg])
        result: list[Value] = []
        self.emit(f"# {callee.name}(...), written in place")
        saved_start, saved_temps = self.statement_start, set(self.temps)
        self.inlining.append((self.control, result))
        try:
            self.statements(body)
        finally:
            self.inlining.pop()
            self.statement_start, self.temps = saved_start, saved_temps
        if len(result) != 1:
            raise _Refuse(f"{callee.name} must end with one return at its top level to be written in place", node)
        for n in rename.values():  # out of scope: a name of the callee never again shares an array of the caller's
            self.env.pop(n, None)
        return result[0]

    def numpy_call(self, short: str, args: list[Value], kwargs: dict, node: ast.AST, name: str) -> Value | None:
        if name.startswith("math."):
            if name in _MATH_NAMES:
                return self.elementwise(lambda *a: f"{name}({', '.join(map(_bare, a))})", args, lambda d: float_dtype(result_dtype(*d)), node)
            return None
        extra = self.more_numpy(short, args, kwargs, node)
        if extra is not None:
            return extra
        if short in _MATH1 and len(args) == 1 and not kwargs:
            fn = _MATH1[short]
            return self.elementwise(lambda a: f"{fn}({_bare(a)})", args, lambda d: float_dtype(d[0]), node)
        if short in ("abs", "absolute", "fabs") and len(args) == 1:
            return self.elementwise(lambda a: f"abs({_bare(a)})", args, lambda d: d[0], node)
        if short == "square" and len(args) == 1:
            return self.elementwise(lambda a: f"({a} * {a})", args, lambda d: d[0], node)
        if short == "negative" and len(args) == 1:
            return self.elementwise(lambda a: f"(-{a})", args, lambda d: d[0], node)
        if short == "sign" and len(args) == 1:
            return self.elementwise(lambda a: f"(1.0 if {a} > 0 else (-1.0 if {a} < 0 else {a} * 0.0))", args, lambda d: d[0], node)
        binary = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "true_divide": "/", "power": "**"}
        if short in binary and len(args) == 2 and not kwargs:
            return self.binop(binary[short], args[0], args[1], node)
        if short in ("maximum", "minimum") and len(args) == 2:  # NaN wins
            return self.elementwise(lambda a, b: _pick("max" if short == "maximum" else "min", a, b), args, lambda d: result_dtype(*d), node)
        if short in ("fmax", "fmin") and len(args) == 2:  # NaN loses
            return self.elementwise(lambda a, b: _pick("max" if short == "fmax" else "min", b, a, nan_wins=False), args, lambda d: result_dtype(*d), node)
        if short in ("arctan2", "hypot") and len(args) == 2:
            fn = "math.atan2" if short == "arctan2" else "math.hypot"
            return self.elementwise(lambda a, b: f"{fn}({a}, {b})", args, lambda d: float_dtype(result_dtype(*d)), node)
        if short == "where" and len(args) == 3:
            return self.elementwise(lambda c, a, b: f"({a} if {c} else {b})", args, lambda d: result_dtype(d[1], d[2]), node)
        if short == "clip" and len(args) == 3:
            return self.elementwise(lambda a, lo, hi: f"min(max({a}, {lo}), {hi})", args, lambda d: result_dtype(*d), node)
        if short in _REDUCE and len(args) == 1:
            return self.reduction(short, args[0], kwargs, node)
        if short in ("dot", "matmul", "inner", "vdot") and len(args) == 2 and not kwargs:
            return self.dot(args[0], args[1], short)
        if short == "outer" and len(args) == 2:
            a, b = (self._vector(v, node) for v in args)
            return self.elementwise(lambda x, y: f"({x} * {y})", [_expand(a, 1), _expand(b, 0)], lambda d: result_dtype(*d), node)
        if short in ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"):
            return self.filled(short, args, kwargs, node)
        if short in ("asarray", "array", "copy", "ascontiguousarray") and len(args) == 1 and set(kwargs) <= {"dtype"}:
            value = args[0]
            if "dtype" in kwargs:
                dt = _dtype_of(kwargs["dtype"], node)
                nb = _NUMBA_TYPE[dt]
                self.used_types.add(nb)
                return self.elementwise(lambda a: f"{nb}({a})", [value], lambda d: dt, node)
            if isinstance(value, Arr) and short in ("array", "copy"):
                return Arr(value.shape, value.dtype, value.at)  # a copy: materialized on assignment
            return value
        if short == "transpose" and len(args) == 1 and isinstance(args[0], Arr):
            return _transpose(args[0])
        return None

    def method(self, m: _Method, args: list[Value], kwargs: dict, node: ast.AST) -> Value:
        base, attr = m.base, m.attr
        if attr in _REDUCE and not args:
            return self.reduction(attr, base, kwargs, node)
        if attr == "dot" and len(args) == 1:
            return self.dot(base, args[0], "dot")
        if attr == "copy" and not args and isinstance(base, Arr):
            return Arr(base.shape, base.dtype, base.at)
        if attr == "astype" and len(args) == 1:
            dt = _dtype_of(args[0], node)
            nb = _NUMBA_TYPE[dt]
            self.used_types.add(nb)
            return self.elementwise(lambda a: f"{nb}({a})", [base], lambda d: dt, node)
        if attr in ("reshape", "ravel", "flatten", "squeeze") and isinstance(base, Arr):
            return self.reshaped("ravel" if attr == "flatten" else attr, base, args, kwargs, node)
        if attr in ("argmax", "argmin", "trace") and not args and not kwargs:
            return self.more_numpy(attr, [base], {}, node)  # type: ignore[return-value]
        if attr == "item" and not args and isinstance(base, Arr) and math.prod(base.shape) == 1:
            return Sca(base.at(["0"] * len(base.shape)), base.dtype)
        raise _Refuse(f".{attr}() (no scalar form in CUDA kernels yet)", node)

    def reduction(self, short: str, value: Value, kwargs: dict, node: ast.AST) -> Value:
        kwargs = dict(kwargs)
        keepdims = kwargs.pop("keepdims", None)
        if keepdims is not None and not (isinstance(keepdims, Sca) and keepdims.text in ("True", "False")):
            raise _Refuse(f"np.{short} with a keepdims that is not a constant", node)
        if keepdims is not None and keepdims.text == "True" and isinstance(value, Arr):
            out = self.reduction(short, value, kwargs, node)
            axes = self._axes(kwargs.get("axis"), len(value.shape), node)
            shape = tuple(1 if d in axes else n for d, n in enumerate(value.shape))
            kept = [d for d in range(len(value.shape)) if d not in axes]
            if isinstance(out, Sca):
                return Arr(shape, out.dtype, lambda idx, t=out.text: t)
            return Arr(shape, out.dtype, lambda idx, o=out: o.at([idx[d] for d in kept]))
        if short in ("var", "std"):
            return self.variance(short, value, kwargs, node)
        if set(kwargs) - {"axis"}:
            raise _Refuse(f"np.{short} with {', '.join(sorted(set(kwargs) - {'axis'}))}=", node)
        if isinstance(value, Sca):
            return value
        if not isinstance(value, Arr):
            raise _Refuse(f"np.{short} of something that is not an array", node)
        axes = None
        if "axis" in kwargs and not (isinstance(kwargs["axis"], Const) and kwargs["axis"].value is None):
            ax = kwargs["axis"]
            raw = [ax] if not isinstance(ax, Const) else list(ax.value)
            axes = []
            for a in raw:
                if isinstance(a, Sca) and _is_int_literal(a.text):
                    a = int(_bare(a.text))
                if not isinstance(a, int):
                    raise _Refuse(f"np.{short} with an axis that is not a constant", node)
                axes.append(a % len(value.shape))
            axes = tuple(sorted(axes))
        op = {"amax": "max", "amin": "min", "mean": "sum"}.get(short, short)
        out = self.accumulate(value, op, {"sum": "total", "max": "largest", "min": "smallest", "prod": "product"}[op], axes)
        if short != "mean":
            return out
        count = math.prod(value.shape[d] for d in (axes if axes is not None else range(len(value.shape))))
        dtype = float_dtype(out.dtype)
        if isinstance(out, Sca):
            return Sca(f"({out.text} / {count})", dtype)
        return Arr(out.shape, dtype, lambda idx, o=out: f"({o.at(idx)} / {count})")

    def _axes(self, axis: Value | None, nd: int, node: ast.AST) -> tuple[int, ...]:
        """The axes an ``axis=`` argument names (all for None), as sorted non-negative ints."""
        if axis is None or isinstance(axis, Const) and axis.value is None:
            return tuple(range(nd))
        raw = list(axis.value) if isinstance(axis, Const) and isinstance(axis.value, tuple) else [axis]
        return tuple(sorted(_static_int(a if isinstance(a, (Sca, Const)) else Const(a), node, "the axis") % nd for a in raw))

    def variance(self, short: str, value: Value, kwargs: dict, node: ast.AST) -> Value:
        """``np.var``/``np.std`` in two passes (the mean, then the squared deviations), as NumPy does."""
        if set(kwargs) - {"axis", "ddof"}:
            raise _Refuse(f"np.{short} with {', '.join(sorted(set(kwargs) - {'axis', 'ddof'}))}=", node)
        if not isinstance(value, Arr):
            return Sca("0.0", "float")
        ddof = _static_int(kwargs.get("ddof", Sca("0", "int")), node, "ddof")
        axes = self._axes(kwargs.get("axis"), len(value.shape), node)
        mean = self.reduction("mean", value, {"axis": Const(axes)}, node)
        if isinstance(mean, Arr) and mean.storage is None:
            mean = self.materialize(mean, "mean")
        kept = [d for d in range(len(value.shape)) if d not in axes]
        centre = mean if isinstance(mean, Sca) else Arr(value.shape, mean.dtype, lambda idx, m=mean: m.at([idx[d] for d in kept]))
        deviation = self.elementwise(lambda a, b: f"({a} - {b}) * ({a} - {b})", [value, centre], lambda d: float_dtype(result_dtype(*d)), node)
        total = self.accumulate(deviation, "sum", "squares", axes)
        count = math.prod(value.shape[d] for d in axes) - ddof
        root = "math.sqrt" if short == "std" else ""
        if isinstance(total, Sca):
            return Sca(f"{root}({total.text} / {count})", float_dtype(total.dtype))
        return Arr(total.shape, float_dtype(total.dtype), lambda idx, t=total: f"{root}({t.at(idx)} / {count})")

    def more_numpy(self, short: str, args: list[Value], kwargs: dict, node: ast.AST) -> Value | None:
        """NumPy functions written out as loops or scalar expressions (other than plain ufuncs)."""
        one = len(args) == 1 and not kwargs
        simple = {
            "arcsinh": "math.asinh({})", "arccosh": "math.acosh({})", "arctanh": "math.atanh({})",
            "exp2": "2.0 ** {}", "reciprocal": "1.0 / {}", "cbrt": "({0} ** (1.0 / 3.0) if {0} >= 0 else -((-{0}) ** (1.0 / 3.0)))", "deg2rad": "math.radians({})",
            "rad2deg": "math.degrees({})", "sinc": "(1.0 if {0} == 0 else math.sin(math.pi * {0}) / (math.pi * {0}))",
        }
        if short in simple and one:
            return self.elementwise(lambda a: "(" + simple[short].format(_bare(a)) + ")", args, lambda d: float_dtype(d[0]), node)
        if short == "logaddexp" and len(args) == 2 and not kwargs:
            return self.elementwise(
                lambda a, b: f"(max({a}, {b}) + math.log1p(math.exp(-abs({a} - {b}))) if {a} != {b} else {a} + math.log(2.0))",
                args, lambda d: float_dtype(result_dtype(*d)), node,
            )
        if short == "trace" and one and isinstance(args[0], Arr) and len(args[0].shape) == 2:
            m = args[0]
            diagonal = Arr((min(m.shape),), m.dtype, lambda idx: m.at([idx[0], idx[0]]))
            return self.accumulate(diagonal, "sum", "trace")
        if short in ("argmax", "argmin") and one and isinstance(args[0], Arr):
            flat = _flat(args[0])
            best, where = self.names.fresh("best"), self.names.fresh(short)
            self.temps.add(where)
            (j,) = self.loop_names(1)
            self.emit(f"{best} = {flat.at(['0'])}")
            self.emit(f"{where} = 0")
            self.emit(f"for {j} in range(1, {flat.shape[0]}):")
            self.emit(f"    if {flat.at([j])} {'>' if short == 'argmax' else '<'} {best}:")
            self.emit(f"        {best} = {flat.at([j])}")
            self.emit(f"        {where} = {j}")
            self.release([j])
            return Sca(where, "int64")
        if short in ("reshape", "ravel", "expand_dims", "squeeze") and args and isinstance(args[0], Arr):
            return self.reshaped(short, args[0], args[1:], kwargs, node)
        if short == "arange" and 1 <= len(args) <= 3 and set(kwargs) <= {"dtype"}:
            nums = [self.scalar(a, node, "an arange bound") for a in args]
            values = [float(_bare(v.text)) if not _is_int_literal(v.text) else int(_bare(v.text)) for v in nums if _is_number_literal(v.text)]
            if len(values) != len(nums):
                raise _Refuse("np.arange with bounds that are not constants", node)
            start, stop, step = (0, values[0], 1) if len(values) == 1 else (values[0], values[1], values[2] if len(values) == 3 else 1)
            count = len(np.arange(start, stop, step))
            dtype = _dtype_of(kwargs["dtype"], node) if "dtype" in kwargs else ("float64" if any(isinstance(v, float) for v in values) else "int64")
            start_text, step_text = repr(start), repr(step)
            return Arr((count,), dtype, lambda idx: idx[0] if (start, step) == (0, 1) and dtype == "int64" else f"({start_text} + {step_text} * {idx[0]})")
        if short == "linspace" and len(args) == 3 and not kwargs:
            lo, hi = (self.scalar(a, node, "a linspace bound") for a in args[:2])
            num = _static_int(args[2], node, "linspace's num")
            if num < 2:
                raise _Refuse("np.linspace with fewer than 2 points", node)
            return Arr((num,), "float64", lambda idx: f"({idx[0]} * (({hi.text} - {lo.text}) / {num - 1}) + {lo.text} if {idx[0]} < {num - 1} else float({hi.text}))")
        if short in ("array", "asarray") and args and isinstance(args[0], Const) and isinstance(args[0].value, tuple):
            return self.literal_array(args[0].value, kwargs, node)
        return None

    def literal_array(self, items: tuple, kwargs: dict, node: ast.AST) -> Arr:
        """``np.array([...])`` of numbers: a local array filled element by element."""
        def walk(v, prefix):
            if isinstance(v, tuple):
                for k, e in enumerate(v):
                    yield from walk(e, (*prefix, k))
            else:
                yield prefix, v

        flat = list(walk(items, ()))
        if not flat:
            raise _Refuse("np.array of an empty list", node)
        depth = {len(p) for p, _ in flat}
        if len(depth) != 1:
            raise _Refuse("np.array of a ragged list", node)
        shape = tuple(max(p[d] for p, _ in flat) + 1 for d in range(depth.pop()))
        elements = []
        for _, v in flat:
            if isinstance(v, (int, float, bool)):
                elements.append(Sca(repr(v), "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"))
            elif isinstance(v, Sca):
                elements.append(v)
            else:
                raise _Refuse("np.array of something other than numbers", node)
        dtype = _dtype_of(kwargs["dtype"], node) if "dtype" in kwargs else storage_dtype(result_dtype(*[e.dtype for e in elements]))
        name = self.local_array("table", shape, dtype)
        for (where, _), e in zip(flat, elements):
            self.emit(f"{name}[{', '.join(map(str, where))}] = {_bare(e.text)}")
        known = tuple(int(_bare(e.text)) for e in elements) if all(_is_int_literal(e.text) for e in elements) else None
        return Arr(shape, dtype, lambda idx: f"{name}[{', '.join(idx)}]", storage=name, values=known)

    def reshaped(self, short: str, a: Arr, args: list[Value], kwargs: dict, node: ast.AST) -> Arr:
        """``reshape``/``ravel``/``expand_dims``/``squeeze``: a view of ``a`` in C order."""
        size = math.prod(a.shape)
        if short == "ravel":
            shape: tuple[int, ...] = (size,)
        elif short == "expand_dims":
            axis = _static_int(args[0] if args else kwargs.get("axis", Const(None)), node, "expand_dims's axis")
            axis = axis % (len(a.shape) + 1)
            shape = a.shape[:axis] + (1,) + a.shape[axis:]
        elif short == "squeeze":
            axes = self._axes(args[0] if args else kwargs.get("axis"), len(a.shape), node) if (args or "axis" in kwargs) else tuple(d for d, n in enumerate(a.shape) if n == 1)
            if any(a.shape[d] != 1 for d in axes):
                raise _Refuse("np.squeeze of an axis whose size is not 1", node)
            shape = tuple(n for d, n in enumerate(a.shape) if d not in axes)
        else:
            dims = args[0].value if len(args) == 1 and isinstance(args[0], Const) and isinstance(args[0].value, tuple) else tuple(args)
            sizes = [_static_int(d if isinstance(d, (Sca, Const)) else Const(d), node, "a reshape size") for d in dims]
            if sizes.count(-1) == 1:
                known = math.prod(d for d in sizes if d != -1)
                sizes[sizes.index(-1)] = size // known if known else 0
            shape = tuple(sizes)
            if math.prod(shape) != size:
                raise _Refuse(f"cannot reshape an array of size {size} into shape {shape}", node)
        if tuple(n for n in shape if n != 1) == tuple(n for n in a.shape if n != 1):  # only axes of size 1 move
            src = [d for d, n in enumerate(a.shape) if n != 1]
            dst = [d for d, n in enumerate(shape) if n != 1]

            def at(idx: list[str]) -> str:
                full = ["0"] * len(a.shape)
                for s_, d_ in zip(src, dst):
                    full[s_] = idx[d_]
                return a.at(full)

            return Arr(shape, a.dtype, at)
        strides_new = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        strides_old = [math.prod(a.shape[d + 1:]) for d in range(len(a.shape))]

        def at_flat(idx: list[str]) -> str:
            flat = " + ".join(i if st == 1 else f"{st} * {i}" for i, st in zip(idx, strides_new))
            return a.at([f"(({flat}) // {st}) % {n}" if st > 1 else f"({flat}) % {n}" for st, n in zip(strides_old, a.shape)])

        return Arr(shape, a.dtype, at_flat)

    def _vector(self, value: Value, node: ast.AST) -> Arr:
        if isinstance(value, Arr) and len(value.shape) == 1:
            return value
        raise _Refuse("an operand that is not a 1-D array", node)

    def dot(self, a: Value, b: Value, what: str) -> Value:
        """``np.dot`` / ``@`` / ``np.inner`` of numbers, vectors and matrices, as loops."""
        if isinstance(a, Sca) or isinstance(b, Sca):
            if what == "@":
                raise _Refuse("@ with a number operand (NumPy refuses it too)")
            return self.binop("*", a, b, ast.Constant(None))
        if not isinstance(a, Arr) or not isinstance(b, Arr):
            raise _Refuse(f"{what} of something that is not an array")
        if what == "vdot":
            if math.prod(a.shape) != math.prod(b.shape):
                raise _Refuse(f"vdot of arrays of sizes {math.prod(a.shape)} and {math.prod(b.shape)}")
            a, b = _flat(a), _flat(b)
        if len(a.shape) > 2 or len(b.shape) > 2:
            raise _Refuse(f"{what} of arrays with more than 2 axes")
        if what == "inner" and len(b.shape) == 2:
            b = _transpose(b)
        ka, kb = a.shape[-1], b.shape[0]
        if ka != kb:
            raise _Refuse(f"{what}: shapes {a.shape} and {b.shape} are not aligned ({ka} != {kb})")
        dtype = result_dtype(a.dtype, b.dtype)
        out_shape = a.shape[:-1] + b.shape[1:]
        if not out_shape:
            acc = self.names.fresh("dot")
            self.temps.add(acc)
            self.emit(f"{acc} = {'0.0' if dtype.startswith('float') else '0'}")
            (i,) = self.loop_names(1)
            self.emit(f"for {i} in range({ka}):")
            self.emit(f"    {acc} += {a.at([i])} * {b.at([i])}")
            self.release([i])
            return Sca(acc, dtype)
        out = self.local_array("prod", out_shape, dtype)
        outer = self.loop_names(len(out_shape))
        for i, n in zip(outer, out_shape):
            self.emit(f"for {i} in range({n}):")
            self.depth += 1
        acc = self.names.fresh("acc")
        (k,) = self.loop_names(1)
        ia = outer[:1] if len(a.shape) == 2 else []
        ib = outer[len(ia):]
        self.emit(f"{acc} = {'0.0' if dtype.startswith('float') else '0'}")
        self.emit(f"for {k} in range({ka}):")
        self.emit(f"    {acc} += {a.at([*ia, k])} * {b.at([k, *ib])}")
        self.emit(f"{out}[{', '.join(outer)}] = {acc}")
        self.depth -= len(out_shape)
        self.release([*outer, k])
        self.names.taken.discard(acc)
        return _named_array(out, out_shape, dtype)

    def filled(self, short: str, args: list[Value], kwargs: dict, node: ast.AST) -> Value:
        like = short.endswith("_like")
        base = short[:-5] if like else short
        if not args:
            raise _Refuse(f"np.{short} without arguments", node)
        if like:
            ref = args[0]
            shape = ref.shape if isinstance(ref, Arr) else ()
            dtype = storage_dtype(ref.dtype) if isinstance(ref, (Arr, Sca)) else "float64"
        else:
            sv = args[0]
            if isinstance(sv, Sca) and sv.text.isdigit():
                shape = (int(_bare(sv.text)),)
            elif isinstance(sv, Const) and isinstance(sv.value, tuple) and all(isinstance(s, int) for s in sv.value):
                shape = tuple(sv.value)
            else:
                raise _Refuse(f"np.{short} with a shape that is not known while generating", node)
            dtype = "float64"
        fill_arg = 1 if base == "full" else None
        value = "1" if base == "ones" else "0"
        if fill_arg is not None:
            if len(args) <= fill_arg and "fill_value" not in kwargs:
                raise _Refuse(f"np.{short} without a fill value", node)
            fv = self.scalar(args[fill_arg] if len(args) > fill_arg else kwargs["fill_value"], node, "the fill value")
            value = fv.text
            if not like:
                dtype = storage_dtype(fv.dtype)
        dt_arg = kwargs.get("dtype") or (args[fill_arg + 1] if fill_arg is not None and len(args) > fill_arg + 1 else None) or (args[1] if fill_arg is None and len(args) > 1 else None)
        if dt_arg is not None:
            dtype = _dtype_of(dt_arg, node)
        if dtype.startswith("float") and value in ("0", "1"):
            value += ".0"
        if not shape:
            return Sca(value, dtype)
        return Arr(shape, dtype, lambda idx: value)

    def runtime_call(self, short: str, args: list[Value], kwargs: dict, node: ast.AST) -> Value | None:
        if short == "grad_seed" and len(args) == 1:
            if isinstance(args[0], Arr):
                raise _Refuse("grad of a non-scalar result", node)
            return Sca("1.0", float_dtype(args[0].dtype) if isinstance(args[0], Sca) else "float")
        if short == "unbroadcast" and len(args) == 2:
            return self.unbroadcast(args[0], args[1], node)
        if short in ("zeros_like",) and len(args) == 1:
            return self.filled("zeros_like", args, {}, node)
        if short in ("sum_grad", "mean_grad") and 2 <= len(args) <= 4 and not kwargs:
            return self.sum_grad(short == "mean_grad", *args, node=node)
        if short in ("dot_grad_x", "dot_grad_y") and len(args) == 3:
            g, x, y = args
            return self.dot_grad(short[-1], g, x, y, node)
        return None

    def unbroadcast(self, g: Value, x: Value, node: ast.AST) -> Value:
        """Sum ``g`` down to the shape of ``x`` (the adjoint of broadcasting)."""
        target = x.shape if isinstance(x, Arr) else ()
        if isinstance(g, Sca):
            if not target:
                return Sca(g.text, result_dtype(g.dtype, "float"))
            return Arr(target, g.dtype, lambda idx, t=g.text: t)
        if not isinstance(g, Arr):
            raise _Refuse("unbroadcast of something that is not an array", node)
        if not target:
            return self.accumulate(g, "sum", "total")
        lead = len(g.shape) - len(target)
        if lead < 0:
            return self.broadcast_to(g, target, node)
        axes = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(target) if s == 1 and g.shape[lead + d] != 1)
        if not axes:
            return g
        summed = self.accumulate(g, "sum", "total", axes)
        if isinstance(summed, Sca):
            return Arr(target, summed.dtype, lambda idx, t=summed.text: t)
        kept = [d for d in range(len(target)) if lead + d not in axes]  # the axes the sum kept
        return Arr(target, summed.dtype, lambda idx, s=summed: s.at([idx[d] for d in kept]))

    def sum_grad(self, mean: bool, g: Value, x: Value, axis: Value | None = None, keepdims: Value | None = None, *, node: ast.AST) -> Value:
        """``rt.sum_grad``/``mean_grad``: ``g`` spread back over the summed axes of ``x``."""
        axis = Const(None) if axis is None else axis
        if not isinstance(x, Arr):
            return self.unbroadcast(g, x, node)
        nd = len(x.shape)
        if isinstance(axis, Const) and axis.value is None:
            axes = tuple(range(nd))
        else:
            raw = list(axis.value) if isinstance(axis, Const) and isinstance(axis.value, tuple) else [axis]
            axes = tuple(sorted(_static_int(a if isinstance(a, (Sca, Const)) else Const(a), node, "the axis") % nd for a in raw))
        keep = isinstance(keepdims, Sca) and keepdims.text == "True" or isinstance(keepdims, Const) and keepdims.value is True
        count = math.prod(x.shape[d] for d in axes)
        if isinstance(g, Sca):
            spread: Arr = Arr(x.shape, g.dtype, lambda idx, t=g.text: t)
        elif keep or len(axes) == 0:
            spread = self.broadcast_to(g, x.shape, node)
        elif isinstance(g, Arr):
            kept = [d for d in range(nd) if d not in axes]
            spread = Arr(x.shape, g.dtype, lambda idx, a=g: a.at([idx[d] for d in kept]))
        else:
            raise _Refuse("sum_grad of something that is not an array", node)
        if not mean:
            return spread
        return Arr(x.shape, float_dtype(spread.dtype), lambda idx, a=spread: f"({a.at(idx)} / {count})")

    def dot_grad(self, which: str, g: Value, x: Value, y: Value, node: ast.AST) -> Value:
        """``rt.dot_grad_x``/``dot_grad_y``: the adjoints of ``np.dot(x, y)``, as srctrans.runtime defines them."""
        nx = len(x.shape) if isinstance(x, Arr) else 0
        ny = len(y.shape) if isinstance(y, Arr) else 0
        if which == "x":
            if nx == 0:
                prod = self.binop("*", g, y, node)
                return self.unbroadcast(self.reduction("sum", prod, {}, node), x, node)
            if ny == 0:
                return self.unbroadcast(self.binop("*", g, y, node), x, node)
            if ny == 1:
                if nx > 1:
                    return self.unbroadcast(self.elementwise(lambda a, b: f"({a} * {b})", [_expand(_as_arr(g), 1), _expand(y, 0)], lambda d: result_dtype(*d), node), x, node)
                return self.unbroadcast(self.binop("*", g, y, node), x, node)
            if nx == 1:
                return self.unbroadcast(self.dot(y, g, "dot"), x, node)
            return self.unbroadcast(self.dot(g, _transpose(y), "dot"), x, node)
        if ny == 0:
            prod = self.binop("*", g, x, node)
            return self.unbroadcast(self.reduction("sum", prod, {}, node), y, node)
        if nx == 0:
            return self.unbroadcast(self.binop("*", g, x, node), y, node)
        if nx == 1:
            if ny > 1:
                return self.unbroadcast(self.elementwise(lambda a, b: f"({a} * {b})", [_expand(x, 1), _expand(_as_arr(g), 0)], lambda d: result_dtype(*d), node), y, node)
            return self.unbroadcast(self.binop("*", g, x, node), y, node)
        if nx == 2:
            return self.unbroadcast(self.dot(_transpose(x), g, "dot"), y, node)
        raise _Refuse("the adjoint of a dot with operands of more than 2 axes", node)


class _Random(_Library):
    """srctrans.random: the CPU's scalar Threefry kernels, one element at a time (numba_backend.cuda_random)."""


    def random_call(self, short: str, args: list[Value], kwargs: dict, node: ast.AST) -> Value:
        params = {
            "bits": ["key", "shape", "dtype"],
            "uniform": ["key", "shape", "dtype", "minval", "maxval"],
            "normal": ["key", "shape", "dtype"],
            "split": ["key", "num"],
            "fold_in": ["key", "data"],
        }.get(short)
        if params is None:
            raise _Refuse(f"srctrans.random.{short} (in CUDA kernels: bits, uniform, normal, split, fold_in)", node)
        if len(args) > len(params) or set(kwargs) - set(params):
            raise _Refuse(f"srctrans.random.{short}: unexpected arguments", node)
        bound = dict(zip(params, args)) | kwargs
        key = bound.get("key")
        if not isinstance(key, Arr) or key.shape != (2,) or storage_dtype(key.dtype) != "uint32":
            raise _Refuse(f"srctrans.random.{short}: the key must be a uint32 array of shape (2,) here", node)
        self.uses_random = True
        k0, k1 = self.names.fresh("key0"), self.names.fresh("key1")
        self.emit(f"{k0}, {k1} = {key.at(['0'])}, {key.at(['1'])}  # the key's two words")
        if short == "fold_in":
            data = self.scalar(bound.get("data", Sca("0", "int")), node, "fold_in's data")
            return self._key_words(f"rk.fold_in_word({k0}, {k1}, {data.text}, {{c}})", (2,))
        if short == "split":
            num = bound.get("num", Sca("2", "int"))
            n = _static_int(num, node, "split's num")
            return self._key_words(f"rk.split_word({k0}, {k1}, {{j}}, {{c}})", (n, 2))
        shape = _static_shape(bound.get("shape", Const(())), node)
        dtype = _dtype_of(bound["dtype"], node) if bound.get("dtype") is not None and not (isinstance(bound["dtype"], Const) and bound["dtype"].value is None) else ("uint32" if short == "bits" else "float64")
        if short == "bits":
            if dtype != "uint32":
                raise _Refuse("srctrans.random.bits in a CUDA kernel: dtype uint32 only", node)
            element = f"rk.bits32_at({k0}, {k1}, {{flat}})"
        elif short == "normal":
            if dtype not in ("float32", "float64"):
                raise _Refuse(f"srctrans.random.normal: dtype {dtype}", node)
            element = f"rk.normal_{'f32' if dtype == 'float32' else 'f64'}_at({k0}, {k1}, {{flat}})"
        else:
            if dtype not in ("float32", "float64"):
                raise _Refuse(f"srctrans.random.uniform: dtype {dtype}", node)
            nb = _NUMBA_TYPE[dtype]
            self.used_types.add(nb)
            lo = self.scalar(bound.get("minval", Sca("0.0", "float")), node, "minval")
            hi = self.scalar(bound.get("maxval", Sca("1.0", "float")), node, "maxval")
            lo_name, span = self.names.fresh("lo"), self.names.fresh("span")
            self.emit(f"{lo_name} = {nb}({lo.text})")
            self.emit(f"{span} = {nb}({hi.text}) - {lo_name}")
            element = f"rk.uniform_{'f32' if dtype == 'float32' else 'f64'}_at({k0}, {k1}, {{flat}}, {lo_name}, {span})"
        if not shape:
            return self.scalar_temp(Sca(element.format(flat="0"), dtype), short)
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

        def at(idx: list[str]) -> str:
            flat = " + ".join(i if s == 1 else f"{s} * {i}" for i, s in zip(idx, strides))
            return element.format(flat=flat)

        return Arr(shape, dtype, at)

    def _key_words(self, template: str, shape: tuple[int, ...]) -> Arr:
        def at(idx: list[str]) -> str:
            if len(shape) == 1:
                return template.format(c=idx[0])
            return template.format(j=idx[0], c=idx[1])

        return Arr(shape, "uint32", at)


class _Scalarizer(_Random):
    """Writes the body of the device function for one per-example function, statement by statement."""

    def __init__(self, fn: ast.FunctionDef, args: list[ArgSpec], modules: dict[str, str], source_lines: list[str]) -> None:
        self.fn = fn
        self.args = args
        self.callees: dict[str, ast.FunctionDef] = {}  # functions of the same file, written in place when called
        self.constants: dict[str, Any] = {}  # numbers of the file's module (kernel_source's constants)
        self.returns_tuple = False  # the function returns a tuple (of one value, perhaps)
        self.used_constants: set[str] = set()
        self.inlining: list[tuple[int, list]] = []  # per callee being written in place: (control depth, its return)
        self.modules = modules  # alias -> module, from the file's imports
        self.source_lines = source_lines
        taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in fn.args.args}
        self.names = _Names(taken | set(modules) | {"cuda", "math", "rk", "range", "min", "max", "abs"})
        self.lines: list[str] = []
        self.depth = 1
        self.control = 0  # > 0 inside an if/for/while
        self.env: dict[str, Value] = {}
        self.used_types: set[str] = set()
        self.uses_random = False
        self.outputs: list[Value] | None = None
        self.claimed: set[str] = {a.name for a in args}  # user names already used in the written code
        self.temps: set[str] = set()  # temporaries made by the current statement
        self.anchor_at = (0, 1)
        self.copied: set[str] = set()
        self.assigned_in_control = _assigned_in_control(fn)
        self.statement_start = 0
        for a in args:
            if a.shape:
                self.env[a.name] = _named_array(a.name, a.shape, a.dtype)
            else:
                self.env[a.name] = Sca(a.name, a.dtype)


# --- small helpers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Module:
    name: str


@dataclass(frozen=True)
class _Callee:
    name: str


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.mapping.get(node.id, node.id), node.ctx), node)


@dataclass(frozen=True)
class _Method:
    base: Any
    attr: str


def _named_array(name: str, shape: tuple[int, ...], dtype: str) -> Arr:
    return Arr(tuple(shape), dtype, lambda idx: f"{name}[{', '.join(idx)}]", storage=name)


def _transpose(a: Arr) -> Arr:
    return Arr(a.shape[::-1], a.dtype, lambda idx: a.at(idx[::-1]))


def _expand(a: Arr, axis: int) -> Arr:
    """``a`` with a new axis of size 1 at ``axis`` (``a[:, None]`` / ``a[None, :]``)."""
    shape = a.shape[:axis] + (1,) + a.shape[axis:]
    return Arr(shape, a.dtype, lambda idx: a.at(idx[:axis] + idx[axis + 1:]))


def _as_arr(v: Value) -> Arr:
    if isinstance(v, Arr):
        return v
    if isinstance(v, Sca):
        return Arr((), v.dtype, lambda idx, t=v.text: t)
    raise _Refuse("an operand that is neither a number nor an array")


def _flat(a: Arr) -> Arr:
    shape = a.shape
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

    def at(idx: list[str]) -> str:
        (i,) = idx
        return a.at([f"({i} // {s}) % {n}" if s > 1 else f"{i} % {n}" for s, n in zip(strides, shape)])

    return Arr((math.prod(shape),), a.dtype, at)


def _broadcast(shapes: list[tuple[int, ...]], node: ast.AST) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _Refuse(f"shapes {' and '.join(map(str, shapes))} do not broadcast", node) from None


_NUMBER = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")


def _is_number_literal(text: str) -> bool:
    return _NUMBER.fullmatch(_bare(text)) is not None


def _is_int_literal(text: str) -> bool:
    return _bare(text).lstrip("-").isdigit()


def _assigned_in_control(fn: ast.FunctionDef) -> set[str]:
    """The names assigned anywhere inside an if, for or while of ``fn`` (never constants)."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.If, ast.For, ast.While)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    out.add(inner.id)
    return out


def _pick(op: str, a: str, b: str, nan_wins: bool = True) -> str:
    """``max``/``min`` of two numbers as NumPy's maximum/minimum (a NaN wins) or fmax/fmin (a NaN loses)."""
    cmp = ">=" if op == "max" else "<="
    if nan_wins:
        return f"({a} if {a} != {a} or {a} {cmp} {b} else {b})"
    return f"({a} if {b} != {b} or {a} {cmp} {b} else {b})"


def _bare(text: str) -> str:
    """``text`` without one pair of parentheses around all of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


def _float_text(v: float) -> str:
    if math.isinf(v):
        return "math.inf" if v > 0 else "-math.inf"
    if math.isnan(v):
        return "math.nan"
    return repr(v)


def _static_int(v: Value, node: ast.AST, what: str) -> int:
    if isinstance(v, Sca) and _is_int_literal(v.text):
        return int(_bare(v.text))
    if isinstance(v, Const) and isinstance(v.value, int):
        return v.value
    raise _Refuse(f"{what} must be a constant here", node)


def _static_shape(v: Value, node: ast.AST) -> tuple[int, ...]:
    if isinstance(v, Const) and isinstance(v.value, tuple):
        return tuple(_static_int(s if isinstance(s, (Sca, Const)) else Const(s), node, "a shape entry") for s in v.value)
    return (_static_int(v, node, "the shape"),)


def _dtype_of(v: Value, node: ast.AST) -> str:
    name = None
    if isinstance(v, Const):
        if isinstance(v.value, _Module):
            name = v.value.name.split(".")[-1]
        elif isinstance(v.value, str):
            name = v.value
    name = {"float_": "float64", "double": "float64", "single": "float32", "int_": "int64", "float": "float64", "int": "int64", "bool_": "bool", "uint32": "uint32"}.get(name, name)
    if name not in _DTYPE_NAMES:
        raise _Refuse(f"the dtype {name or '?'} (CUDA kernels here: {', '.join(sorted(_DTYPE_NAMES))})", node)
    return name


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _imports(tree: ast.Module) -> dict[str, str]:
    """alias -> module for the file's ``import a.b as c`` / ``from a import b`` lines."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for a in stmt.names:
                out[a.asname or a.name] = f"{stmt.module}.{a.name}"
    return out


# --- the generated file ----------------------------------------------------------------------


def _type_text(a: ArgSpec) -> str:
    return f"{storage_dtype(a.dtype)}{list(a.shape)}" if a.shape else storage_dtype(a.dtype)


def kernel_source(
    path: Path, name: str, args: list[ArgSpec], display: str | None = None, constants: dict | None = None
) -> KernelSource:
    """The CUDA file for the per-example function ``name`` of the file at ``path``, specialized to ``args``.

    ``constants``: numbers the file's module holds (``from model import STEPS``), read where a
    name is neither an argument nor a local; their values are written into the kernel."""
    path = Path(path)
    text = path.read_text()
    tree = ast.parse(text)
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name), None)
    if fn is None:
        raise ValueError(f"{path} defines no function {name!r}")
    params = [a.arg for a in fn.args.args]
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs:
        raise _located(path, fn, "a per-example function with *args, **kwargs or keyword-only parameters")
    if params != [a.name for a in args]:
        raise ValueError(f"{name} takes ({', '.join(params)}), but the kernel was asked for ({', '.join(a.name for a in args)})")
    lines = text.split("\n")
    sc = _Scalarizer(fn, args, _imports(tree), lines)
    sc.callees = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name != name}
    sc.constants = {k: v for k, v in (constants or {}).items() if type(v) in (int, float, bool)}
    sc.names.taken |= set(sc.callees)
    try:
        sc.statements(fn.body)
        if sc.outputs is None:
            raise _Refuse("a function that does not end with a return", fn.body[-1] if fn.body else fn)
    except _Refuse as err:
        raise _located(path, err.node or fn, f"cannot scalarize for a CUDA kernel: {err.message}", err.hint) from None
    outputs = [(o.shape if isinstance(o, Arr) else (), storage_dtype(o.dtype)) for o in sc.outputs]
    device, kernel = f"{name}_device", f"{name}_kernel"
    body = _device_function(sc, name, device, params, outputs)
    body += "\n\n" + _kernel_function(sc, kernel, device, args, outputs)
    types_used = sorted(sc.used_types)
    imports = ["import math", ""]
    imports.append("from numba import cuda" + ("".join(f", {t}" for t in types_used)))
    if sc.uses_random:
        imports.append("")
        imports.append("import numba_backend.cuda_random as rk")
    module_body = "\n".join(imports) + "\n\n\n" + body
    shapes = ", ".join(f"{a.name}: {_type_text(a)}{'' if a.batched else ' (same for every example)'}" for a in args)
    meta = {
        "entry": kernel,
        "device": device,
        "args": [[a.name, list(a.shape), storage_dtype(a.dtype), a.batched] for a in args],
        "outputs": [[list(s), d] for s, d in outputs],
    }
    if sc.returns_tuple:
        meta["tuple"] = True
    if sc.used_constants:
        meta["constants"] = {k: sc.constants[k] for k in sorted(sc.used_constants)}
    dep = hashlib.sha256((text + json.dumps(meta) + Path(__file__).read_text()).encode()).hexdigest()[:16]
    body_hash = hashlib.sha256(module_body.encode()).hexdigest()[:16]
    from ..cache import HASH_PREFIX, META_PREFIX
    from ..version import __version__

    header = [
        f"# Generated by srctrans {__version__} from {display or path.name}:{name} -- CUDA kernel (one thread per example)",
        "# Do not edit: srctrans rewrites this file when the function or anything it uses changes.",
        "# show again: call the pmap(..., backend='cuda') or jit(vmap(...), target='cuda') function, then srctrans.source(it)",
        f"# per example: {shapes}",
        "# arrays are fixed-size cuda.local.array buffers filled by loops (device code cannot allocate)",
        META_PREFIX + json.dumps(meta, sort_keys=True),
        f"{HASH_PREFIX}{dep}  body hash: {body_hash}",
    ]
    return KernelSource("\n".join(header) + "\n\n" + module_body, device, kernel, list(args), outputs, meta)


def _device_function(sc: _Scalarizer, name: str, device: str, params: list[str], outputs: list) -> str:
    out_rows = [f"out{k}" for k, (shape, _) in enumerate(outputs) if shape]
    out_rows = [sc.names.fresh(o) for o in out_rows]
    rows = iter(out_rows)
    tail: list[str] = []
    returned = []
    for value, (shape, _) in zip(sc.outputs or [], outputs):
        if shape:
            row = next(rows)
            sc.lines, saved = [], sc.lines
            sc.depth = 1
            sc.fill(row, value)  # type: ignore[arg-type]
            tail += sc.lines
            sc.lines = saved
        else:
            returned.append(value.text)
    doc = f'    """{name} for one example: {"array results written into " + ", ".join(out_rows) if out_rows else "no array results"}'
    doc += f'{", numbers returned" if returned else ""}."""'
    lines = ["@cuda.jit(device=True)", f"def {device}({', '.join(params + out_rows)}):", doc, *sc.lines]
    if tail:
        lines.append("    # the array results, into the rows the kernel passed")
        lines += tail
    if returned:
        lines.append(f"    return {', '.join(returned)}" + ("," if len(returned) == 1 and len(outputs) > 1 else ""))
    return "\n".join(lines) + "\n"


def _kernel_function(sc: _Scalarizer, kernel: str, device: str, args: list[ArgSpec], outputs: list) -> str:
    names = _Names({a.name for a in args} | {device, "cuda", "range"})
    outs = [names.fresh(f"out{k}") for k in range(len(outputs))]
    i, n = names.fresh("i"), names.fresh("n")
    first = next((a.name for a in args if a.batched), None)
    size = f"{first}.shape[0]" if first else f"{outs[0]}.shape[0]"
    call_args = [f"{a.name}[{i}]" if a.batched else a.name for a in args]
    call_args += [f"{o}[{i}]" for o, (shape, _) in zip(outs, outputs) if shape]
    scalars = [f"{o}[{i}]" for o, (shape, _) in zip(outs, outputs) if not shape]
    call = f"{device}({', '.join(call_args)})"
    lines = [
        "@cuda.jit",
        f"def {kernel}({', '.join([a.name for a in args] + outs)}):",
        '    """One thread per example; arguments batched on axis 0 are indexed by the thread, results too."""',
        f"    {i} = cuda.grid(1)",
        f"    {n} = {size}  # the examples of this shard",
        f"    if {i} < {n}:",
    ]
    if scalars:
        lines.append(f"        {', '.join(scalars)}{',' if len(scalars) == 1 and len(outputs) > 1 else ''} = {call}")
    else:
        lines.append(f"        {call}")
    return "\n".join(lines) + "\n"


def _located(path: Path, node: ast.AST, message: str, hint: str | None = None) -> SrcTransError:
    line = getattr(node, "lineno", None)
    col = getattr(node, "col_offset", None)
    end = getattr(node, "end_col_offset", None) if getattr(node, "end_lineno", line) == line else None
    return SrcTransError(message, filename=str(path), line=line, col=col, end_col=end, hint=hint)


def kernel_file(path: Path, name: str, args: list[ArgSpec], constants: dict | None = None) -> tuple[Path, KernelSource]:
    """Write (or keep) the CUDA file for ``name`` of ``path`` beside it; returns its path and source."""
    from ..cache import write_if_changed

    src = kernel_source(path, name, args, constants=constants)
    tag = hashlib.sha1(json.dumps([src.meta["args"], src.meta.get("constants")]).encode()).hexdigest()[:8]
    stem = path.name[:-3] if path.name.endswith(".py") else path.name
    out = path.parent / f"{stem}.{name}.cuda-{tag}.py"
    write_if_changed(out, src.text)
    return out, src
