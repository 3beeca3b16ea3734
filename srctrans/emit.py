"""Emit: render transformed functions into one self-explaining Python module.

The text is deterministic: the same functions and options give byte-identical
files. Layout::

    # header: generator, source, transform chain, load-time values, hashes
    imports (sorted)
    values written in at generation time (closure constants, __main__ globals)
    the callees, then the entry function

Before each statement sits an *origin comment*, ``# model.py:14  y = np.sin(x) * w``,
linking it to the user's line; :func:`srctrans.cache.origin_map` reads them back to turn a
generated line into the user's ``file:line``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst

from .analysis.names import dotted
from .cache import HASH_PREFIX, META_PREFIX
from .parse import ParsedFunction
from .version import __version__


class _Origins(cst.CSTTransformer):
    """Put an origin comment before every statement of the user's function, write one-line
    blocks as lines, and call each function of the file by its one name there (``aliases``)."""

    def __init__(self, pf: ParsedFunction, aliases: Mapping[str, str]) -> None:
        super().__init__()
        self.pf = pf
        self.aliases = aliases

    def leave_Name(self, original, updated):
        """A call by another name of a function in the file (``_cube`` where ``cubed = _cube`` was
        met first) uses its name there; the names are free in the function, nothing local."""
        name = self.aliases.get(updated.value)
        return updated if name is None else updated.with_changes(value=name)

    def leave_Attribute(self, original, updated):
        name = self.aliases.get(dotted(original))  # ``helpers.norm``, a function of the file
        if name is not None:
            return cst.Name(name)
        return updated.with_changes(attr=original.attr)  # ``obj._cube`` is not the name

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)  # nor is ``g(_cube=...)``

    def _comment(self, original: cst.CSTNode, updated):
        line = self.pf.positions[original].start.line
        text = self.pf.source_line(line)
        comment = cst.EmptyLine(comment=cst.Comment(f"# {self.pf.display_file}:{line}  {text}".rstrip()))
        return updated.with_changes(leading_lines=[*updated.leading_lines, comment])

    def leave_SimpleStatementLine(self, original, updated):
        return self._comment(original, updated)

    def leave_SimpleStatementSuite(self, original, updated):
        """``def f(x): return x * 2`` and ``if c: y = 1``, one line: a block of its statements, as
        if written out (the passes after this one read blocks of lines)."""
        lines = [cst.SimpleStatementLine([s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]) for s in updated.body]
        return cst.IndentedBlock([self._comment(original, lines[0]), *lines[1:]])

    def leave_If(self, original, updated):
        return self._comment(original, updated)

    def leave_For(self, original, updated):
        return self._comment(original, updated)

    def leave_While(self, original, updated):
        return self._comment(original, updated)


def with_origins(pf: ParsedFunction, aliases: Mapping[str, str] | None = None) -> cst.FunctionDef:
    """The user's function as a ``def`` (lambdas too), origin comments before each statement;
    ``aliases``: other names of functions in the file, and the names they have there."""
    node = pf.node
    aliases = aliases or {}
    if isinstance(node, cst.Lambda):
        line = pf.positions[node].start.line
        comment = cst.EmptyLine(comment=cst.Comment(f"# {pf.display_file}:{line}  {pf.source_line(line)}".rstrip()))
        body = node.body.visit(_Origins(pf, aliases)) if aliases else node.body
        ret = cst.SimpleStatementLine([cst.Return(body.with_changes(lpar=[], rpar=[]))], leading_lines=[comment])
        return cst.FunctionDef(
            name=cst.Name(pf.captured.name),
            params=node.params,
            body=cst.IndentedBlock([ret]),
        )
    body = node.body.visit(_Origins(pf, aliases))
    return node.with_changes(body=body, decorators=[], leading_lines=[])


def clean_signature(node: cst.FunctionDef, name: str) -> cst.FunctionDef:
    """Drop decorators and annotations; rename to ``name``. Defaults stay: the build has made
    them the values the function object holds (a literal, or a name bound at load time)."""

    def param(p: cst.Param) -> cst.Param:
        return p.with_changes(annotation=None)

    params = node.params
    params = params.with_changes(
        posonly_params=[param(p) for p in params.posonly_params],
        params=[param(p) for p in params.params],
        kwonly_params=[param(p) for p in params.kwonly_params],
    )
    return node.with_changes(
        name=cst.Name(name), params=params, returns=None, decorators=[], leading_lines=[], asynchronous=None
    )


@dataclass
class ModuleSpec:
    """Everything that goes into one generated file."""

    title: str  # e.g. "quickstart.py:calc -- jit"
    show_command: str
    transforms: str
    imports: list[str]
    literals: list[tuple[str, str, str]]  # (name, text, note)
    bound_notes: list[str]
    functions: list[cst.FunctionDef]  # callees first, entry last
    meta: dict = field(default_factory=dict)
    dependency_hash: str = ""


def render(spec: ModuleSpec) -> str:
    """The generated module's text, header included."""
    body_parts: list[str] = []
    imports = sorted(set(spec.imports), key=lambda s: (not s.startswith("import "), s))
    if imports:
        body_parts.append("\n".join(imports) + "\n")
    if spec.literals:
        lines = ["# values written in at generation time"]
        for name, text, note in spec.literals:
            lines.append(f"{name} = {text}  # {note}")
        body_parts.append("\n".join(lines) + "\n")
    mod = cst.Module(body=[])
    for fn in spec.functions:
        body_parts.append(mod.code_for_node(fn).strip("\n") + "\n")
    body = "\n\n".join(body_parts)
    body_hash = hashlib.sha256(body.encode()).hexdigest()[:16]
    header = [
        f"# Generated by srctrans {__version__} from {spec.title}",
        "# Do not edit: srctrans rewrites this file when the function or anything it uses changes.",
        f"# show again: {spec.show_command}",
    ]
    if spec.transforms:
        header.append(f"# {spec.transforms}")
    if spec.bound_notes:
        header.append("# bound at load time (not importable, put into the module by srctrans):")
        header += [f"#   {note}" for note in spec.bound_notes]
    header.append(META_PREFIX + json.dumps(spec.meta, sort_keys=True))
    header.append(f"{HASH_PREFIX}{spec.dependency_hash}  body hash: {body_hash}")
    return "\n".join(header) + "\n\n" + body
