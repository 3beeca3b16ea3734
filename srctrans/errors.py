"""Errors that srctrans raises, each pointing at the user's own code.

Every error about user code is a :class:`SrcTransError` carrying the file, line
and column it is about; ``str(err)`` renders it like a compiler would::

    examples/model.py:14:9: no derivative rule for numpy.argpartition
        idx = np.argpartition(scores, 3)
              ^^^^^^^^^^^^^^^
    register one with srctrans.custom_vjp, or mark it non-differentiable
"""

from __future__ import annotations

import linecache


class SrcTransError(Exception):
    """An error located in the user's source: ``file:line:col``, the line and a caret."""

    def __init__(
        self,
        message: str,
        *,
        filename: str | None = None,
        line: int | None = None,
        col: int | None = None,
        end_col: int | None = None,
        source_line: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.end_col = end_col
        if source_line is None and filename is not None and line is not None:
            source_line = linecache.getline(filename, line).rstrip("\n") or None
        self.source_line = source_line
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.filename is not None:
            where = self.filename
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col + 1}"
            where += ": "
        parts = [where + self.message]
        if self.source_line is not None:
            text = self.source_line.rstrip()
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            parts.append("    " + stripped)
            if self.col is not None and self.col >= indent:
                end = self.end_col if self.end_col and self.end_col > self.col else len(text)
                width = max(1, min(end, len(text)) - self.col)
                parts.append("    " + " " * (self.col - indent) + "^" * width)
        if self.hint:
            parts.append(self.hint)
        return "\n".join(parts)

    def __reduce__(self):  # keep the location when pickled (multiprocessing, Dask)
        return (_rebuild, (type(self), self.message, self.__dict__))


def _rebuild(cls, message, state):
    err = cls.__new__(cls)
    err.__dict__.update(state)
    Exception.__init__(err, err._render())
    return err


class UnsupportedSyntaxError(SrcTransError):
    """The function uses a construct that srctrans does not transform (the fence refused it)."""


class SourceUnavailableError(SrcTransError):
    """The function's source text cannot be found (made by ``exec``, a C function, ...)."""


class UnresolvedNameError(SrcTransError):
    """A name the function reads is neither local, global, a closure value nor a builtin."""


class NoDerivativeError(SrcTransError):
    """An operation whose value is differentiated has no derivative rule."""


class CompileError(SrcTransError):
    """The compiler (Numba) refused the generated code; located at the user's line."""


class CacheError(SrcTransError):
    """srctrans cannot keep a generated file where it goes (a directory is in the way ...)."""


class BackendUnavailableError(RuntimeError):
    """A backend was asked for that cannot run here (module missing, no GPU, no scheduler)."""


class CacheWarning(UserWarning):
    """Something in the cache was damaged and has been replaced (a Numba cache entry ...)."""


class CompileBudgetWarning(UserWarning):
    """A generated function runs uncompiled: compiling it would take longer than
    ``srctrans.config.compile_budget`` (see ``numba_backend/compile_budget.py``)."""


class ViewUpdateError(SrcTransError):
    """``row += v`` at run time on a ``row`` that shares its array with another name (``row = X[i]``).

    ``base`` names that array, or is empty when it has no name of the user's.

    A transformed function computes ``row = row + v``, a new array, so ``X`` would keep its
    old value; generated code raises this instead. ``file`` is the name in the generated
    file's origin comments; :meth:`locate` makes it the full path once the caller knows it.
    """

    def __init__(self, name: str, op: str, base: str, file: str, line: int) -> None:
        self.names = (name, op, base)
        of = f"{base}'s array in place ({name} is a view of {base})" if base else f"in place the array {name} is a view of"
        super().__init__(
            f"{name} {op} ... updates {of}, which this transformation cannot follow",
            filename=file,
            line=line,
            hint=f"make a new value ({name} = {name} {op[:-1]} ...), or copy the view first ({name} = np.copy(...))",
        )
        self._indent()

    def _indent(self) -> None:
        if self.source_line is not None:
            self.col = len(self.source_line) - len(self.source_line.lstrip())
            self.end_col = len(self.source_line.rstrip())
        self.args = (self._render(),)

    def locate(self, sources: dict[str, str]) -> None:
        """Name the user's file by its full path (``sources``: the generated file's meta)."""
        full = sources.get(self.filename)
        if full is not None and full != self.filename:
            self.filename = full
            self.source_line = linecache.getline(full, self.line).rstrip("\n") or None
            self._indent()
