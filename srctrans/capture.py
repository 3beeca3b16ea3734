"""Capture: from a Python callable to its source text, file, and the values it reads.

Handles plain functions, nested functions and closures, lambdas, methods (bound
and unbound), ``functools.partial`` objects, functions defined in IPython or
Jupyter cells (their text lives in :mod:`linecache`), and functions already
transformed by srctrans. Nothing here parses: :mod:`srctrans.parse` finds the
function's node in the file text captured here.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import SourceUnavailableError


@dataclass(frozen=True)
class Captured:
    """Everything srctrans needs to know about one user function.

    ``bound_args``/``bound_kwargs`` are passed in front of the caller's
    arguments at every call (a bound method's ``self``, a partial's arguments).
    """

    fn: types.FunctionType
    kind: str  # "function", "lambda", "method" or "partial"
    filename: str  # the code object's file name (a path, or a notebook cell's name)
    file_text: str  # the whole file or cell the function is defined in
    firstlineno: int  # first line of the definition (its first decorator)
    module_name: str
    qualname: str
    bound_args: tuple = ()
    bound_kwargs: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The name the generated function gets: ``f``, ``Model.predict`` -> ``predict``, lambdas ``lambda_L12``."""
        if self.fn.__name__ == "<lambda>":
            line = self.file_text.splitlines()[self.firstlineno - 1] if self.file_text else ""
            if line.count("lambda") > 1:  # several on one line: the column tells them apart
                return f"lambda_L{self.firstlineno}_C{lambda_column(self.fn)}"
            return f"lambda_L{self.firstlineno}"
        return self.fn.__name__

    @property
    def dotted_name(self) -> str:
        """``outer.inner``, ``Model.predict``, ``lambda_L12``: the function part of generated file names."""
        if self.fn.__name__ == "<lambda>":
            parts = [p for p in self.qualname.split(".") if p not in ("<locals>", "<lambda>")]
            return ".".join(parts + [self.name])
        return ".".join(p for p in self.qualname.split(".") if p != "<locals>")

    @property
    def is_real_file(self) -> bool:
        return os.path.isfile(self.filename)

    @property
    def module_stem(self) -> str:
        """``model`` for ``pkg/model.py``; a tidy name for notebook cells."""
        if self.is_real_file:
            return os.path.splitext(os.path.basename(self.filename))[0]
        stem = re.sub(r"[^0-9A-Za-z_]+", "_", self.filename).strip("_")
        return stem or "cell"

    @property
    def source(self) -> str:
        """The function's own lines (the definition block), for hashing and messages."""
        lines = self.file_text.splitlines(keepends=True)[self.firstlineno - 1 :]
        if self.kind == "lambda":
            return "".join(lines[:1])
        try:
            return "".join(inspect.getblock(lines))
        except Exception:  # tokenize trouble: fall back to the whole remainder
            return "".join(lines)

    @property
    def closure(self) -> dict[str, Any]:
        """Closure variables by name (cells that are still empty are left out)."""
        values = {}
        for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                values[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                continue
        return values

    @property
    def defaults(self) -> dict[str, Any]:
        """``{parameter: default}`` as the function object holds them: the values bound when
        ``def`` ran (``__defaults__``, ``__kwdefaults__``), not what the expressions say now."""
        code = self.fn.__code__
        positional = code.co_varnames[: code.co_argcount]
        defaults = self.fn.__defaults__ or ()
        values = dict(zip(positional[len(positional) - len(defaults) :], defaults))
        values.update(self.fn.__kwdefaults__ or {})
        return values


def unwrap(obj: Callable) -> tuple[types.FunctionType, str, tuple, dict]:
    """Peel partials, methods and srctrans wrappers down to a plain function."""
    args: tuple = ()
    kwargs: dict = {}
    kind = "function"
    while True:
        if isinstance(obj, functools.partial):
            args = obj.args + args
            kwargs = {**obj.keywords, **kwargs}
            kind = "partial"
            obj = obj.func
        elif isinstance(obj, types.MethodType):
            args = (obj.__self__,) + args
            kind = "method"
            obj = obj.__func__
        elif isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        elif hasattr(obj, "__srctrans_function__"):
            obj = obj.__srctrans_function__
        elif isinstance(obj, types.FunctionType):
            if obj.__name__ == "<lambda>" and kind == "function":
                kind = "lambda"
            return obj, kind, args, kwargs
        else:
            from .library_functions import as_python_function

            wrapper = as_python_function(obj)  # np.sin itself: a one-line wrapper
            if wrapper is not None:
                obj = wrapper
                continue
            raise TypeError(
                f"srctrans transforms Python functions, lambdas, methods, functools.partial "
                f"objects and the NumPy functions it has a derivative rule for; got {type(obj).__name__} {obj!r}"
            )


def capture(obj: Callable) -> Captured:
    """Capture ``obj``'s function, its source file text and its bound arguments."""
    fn, kind, args, kwargs = unwrap(obj)
    code = fn.__code__
    filename = code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise SourceUnavailableError(
            f"cannot find the source of {fn.__qualname__}: {filename!r} is not a file "
            "and no notebook or linecache entry holds it",
            hint="functions made by exec() or eval() have no source; define the function "
            "in a file or notebook cell, or add its text to linecache",
        )
    if fn.__name__ == "<lambda>" and kind != "lambda":
        kind = "lambda" if kind == "function" else kind
    return Captured(
        fn=fn,
        kind=kind,
        filename=filename,
        file_text="".join(lines),
        firstlineno=code.co_firstlineno,
        module_name=getattr(fn, "__module__", None) or "__main__",
        qualname=fn.__qualname__,
        bound_args=args,
        bound_kwargs=kwargs,
    )


def lambda_column(fn: types.FunctionType) -> int | None:
    """Column of the first operand of a lambda's body (to pick it among lambdas on its line)."""
    for line, _end, col, _end_col in fn.__code__.co_positions():
        if line == fn.__code__.co_firstlineno and col:
            return col
    return None
