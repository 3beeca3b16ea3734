"""Parse: the user's file with libcst, position metadata, and the function's node in it.

The whole file (or notebook cell) is parsed, so every position is the user's
real ``line:col``. :class:`ParsedFunction` is what the fence, the passes and
the error messages work from.
"""

from __future__ import annotations

import hashlib
import os
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .cache import readable_name
from .capture import Captured, lambda_column
from .errors import SourceUnavailableError, SrcTransError

_PARSED: dict[str, tuple[cst.Module, Mapping[cst.CSTNode, CodeRange]]] = {}
# per parsed file (keyed like _PARSED): its lambdas by first line, its functions by (name, first line)
_DEFINITIONS: dict[str, tuple[dict[int, list[cst.Lambda]], dict[tuple[str, int], list[cst.FunctionDef]]]] = {}


def parse_text(text: str) -> tuple[cst.Module, Mapping[cst.CSTNode, CodeRange]]:
    """Parse ``text`` once per distinct content; returns the module and node positions."""
    key = hashlib.sha1(text.encode()).hexdigest()
    if key not in _PARSED:
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        _PARSED[key] = (wrapper.module, wrapper.resolve(PositionProvider))
    return _PARSED[key]


def _definitions(text: str):
    """The lambdas and function definitions of the file ``text``, by the line they start on (a
    function's first decorator's line): found once per file from the positions, which hold every
    node in source order, not by walking the tree for each function taken from the file."""
    key = hashlib.sha1(text.encode()).hexdigest()
    if key not in _DEFINITIONS:
        _, positions = parse_text(text)
        lambdas: dict[int, list[cst.Lambda]] = {}
        functions: dict[tuple[str, int], list[cst.FunctionDef]] = {}
        for node, rng in positions.items():
            if isinstance(node, cst.Lambda):
                lambdas.setdefault(rng.start.line, []).append(node)
            elif isinstance(node, cst.FunctionDef):
                first = min([positions[d].start.line for d in node.decorators] + [rng.start.line])
                functions.setdefault((node.name.value, first), []).append(node)
        _DEFINITIONS[key] = (lambdas, functions)
    return _DEFINITIONS[key]


@dataclass
class ParsedFunction:
    """A captured function and its libcst node, with positions in the user's file."""

    captured: Captured
    module: cst.Module
    node: cst.FunctionDef | cst.Lambda
    positions: Mapping[cst.CSTNode, CodeRange]

    @property
    def display_file(self) -> str:
        """The file as origin comments name it: its base name; a generated file's without the
        dependency hash its name ends in, so what is made from it reads the same under any hash."""
        if not self.captured.is_real_file:
            return self.captured.filename
        name = os.path.basename(self.captured.filename)
        return readable_name(Path(name)) if self.captured.is_generated else name

    def line_of(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def error(self, cls: type[SrcTransError], node: cst.CSTNode, message: str, hint: str | None = None) -> SrcTransError:
        """Build an error of class ``cls`` pointing at ``node`` in the user's file."""
        rng = self.positions.get(node)
        if rng is None:
            return cls(message, filename=self.captured.filename, hint=hint)
        lines = self.captured.file_text.splitlines()
        src = lines[rng.start.line - 1] if rng.start.line <= len(lines) else None
        end_col = rng.end.column if rng.end.line == rng.start.line else None
        return cls(
            message,
            filename=self.captured.filename,
            line=rng.start.line,
            col=rng.start.column,
            end_col=end_col,
            source_line=src,
            hint=hint,
        )

    def source_line(self, line: int) -> str:
        lines = self.captured.file_text.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def parse_function(cap: Captured) -> ParsedFunction:
    """Find the captured function's node in its parsed file."""
    lifted = getattr(cap.fn, "__srctrans_lifted__", None)
    if lifted is not None:  # an inner function lifted out of the function it was in (srctrans.lifting)
        return ParsedFunction(cap, lifted.outer.module, lifted.node, ChainMap(lifted.positions, lifted.outer.positions))
    try:
        module, positions = parse_text(cap.file_text)
    except cst.ParserSyntaxError as err:
        raise SourceUnavailableError(
            f"cannot parse the file holding {cap.qualname}: {err.message}",
            filename=cap.filename,
            line=err.raw_line,
            col=err.raw_column,
        ) from None
    lambdas, functions = _definitions(cap.file_text)
    if cap.fn.__name__ == "<lambda>":
        node = _pick_lambda(cap, lambdas.get(cap.firstlineno, []), positions)
    else:
        found = functions.get((cap.fn.__name__, cap.firstlineno), [])
        if len(found) != 1:
            raise SourceUnavailableError(
                f"cannot find the definition of {cap.qualname} at line {cap.firstlineno}; "
                "the file may have changed since it was imported",
                filename=cap.filename,
                line=cap.firstlineno,
                hint="reload the module (or restart the kernel) so the code and the file agree",
            )
        node = found[0]
    return ParsedFunction(cap, module, node, positions)


def _pick_lambda(cap: Captured, on_line: list[cst.Lambda], positions) -> cst.Lambda:
    params = cap.fn.__code__.co_varnames[: cap.fn.__code__.co_argcount + cap.fn.__code__.co_kwonlyargcount]
    candidates = [
        lam for lam in on_line if tuple(p.name.value for p in _lambda_params(lam)) == tuple(params)
    ]
    if len(candidates) > 1:
        col = lambda_column(cap.fn)
        if col is not None:
            candidates = [
                lam
                for lam in candidates
                if (positions[lam.body].start.line, positions[lam.body].start.column) <= (cap.firstlineno, col)
                and (cap.firstlineno, col) < (positions[lam.body].end.line, positions[lam.body].end.column)
            ]
    if len(candidates) != 1:
        raise SourceUnavailableError(
            f"cannot tell which lambda on line {cap.firstlineno} is being transformed "
            f"({len(candidates)} candidates)",
            filename=cap.filename,
            line=cap.firstlineno,
            hint="give the lambda a name with def, or put it on its own line",
        )
    return candidates[0]


def _lambda_params(lam: cst.Lambda) -> list[cst.Param]:
    p = lam.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]
