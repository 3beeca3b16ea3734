"""What a generated file is a variant of, and what answers it.

A :class:`Transform` names the transformation asked for (``grad``, ``jit(parallel=True)``);
:class:`StaticArgs` the static argument values and pytree structures a specialization was
made for; :class:`Generated` is the file :func:`srctrans.pipeline.generate` wrote or found.
Plain data, shared by the pipeline, the transformations that ask it for other files and the
public API, so that none of them imports another for these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import write_generated
from .capture import Captured
from .statics import key_text

__all__ = ["Generated", "StaticArgs", "Transform", "display_source", "static_suffix", "trees_text"]


@dataclass(frozen=True)
class Transform:
    """One step of a transform chain, e.g. ``Transform("jit", (("parallel", True),))``.

    ``tag``, when given, is the file-name part instead of one made from the options (a
    specialization whose ``wrt`` lists every leaf of a pytree argument keeps the short
    name of the transformation the user asked for).
    """

    name: str
    options: tuple[tuple[str, Any], ...] = ()
    tag: str | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        if not self.options:
            return self.name
        return f"{self.name}(" + ", ".join(f"{k}={v!r}" for k, v in self.options) + ")"

    @property
    def file_tag(self) -> str:
        """Part of the file name: ``jit``, ``jit_parallel_fastmath``, ``jit_noboundscheck``."""
        if self.tag is not None:
            return self.tag
        parts = [self.name]
        for k, v in self.options:
            if isinstance(v, bool):
                parts.append(k if v else "no" + k)
            elif isinstance(v, tuple):
                parts.append(k + "_" + "_".join(str(x) for x in v))
        return "_".join(parts)


@dataclass
class Generated:
    """A generated file and what is needed to load and call its entry function.

    ``source`` is the file's text as it was generated or found intact: :meth:`ensure_file`
    writes it again when the file has gone (deleted after :func:`srctrans.source_path`, a
    ``srctrans clean`` meanwhile) or changed.
    """

    path: Path
    module_name: str
    meta: dict
    bound: dict[str, Any] = field(default_factory=dict)
    captured: Captured | None = None
    source: str | None = field(default=None, repr=False)

    @property
    def entry(self) -> str:
        return self.meta["entry"]

    @property
    def text(self) -> str:
        return self.source if self.source is not None else self.path.read_text()

    def ensure_file(self) -> None:
        """Make sure the file holds :attr:`source` (a caller that then loads or compiles it
        holds the file's lock around both, so nothing comes between)."""
        if self.source is not None:
            write_generated(self.path, self.source)


class StaticArgs(dict):
    """The static argument values of one specialization, and (``trees``) its pytree arguments.

    ``trees`` maps a container argument's name to ``(treedef, leaf parameter names)``, the
    names in flattening order; the build replaces that parameter by its leaves
    (:mod:`srctrans.passes.leaves`). ``differentiated`` names the arguments a gradient is
    taken with respect to, which must be read leaf by leaf. A plain dict means no pytree
    arguments.
    """

    def __init__(
        self,
        values: Any = (),
        trees: dict[str, tuple[Any, list[str]]] | None = None,
        differentiated: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(values)
        self.trees = dict(trees or {})
        self.differentiated = frozenset(differentiated)


def trees_text(trees: dict[str, tuple[Any, list[str]]]) -> str:
    """The pytree arguments as text for hashes: structure, leaf paths (namedtuple fields too) and names."""
    from .tree import keystr, tree_flatten_with_path

    parts = []
    for name, (treedef, names) in sorted(trees.items()):
        paths = [keystr(p) for p, _ in tree_flatten_with_path(treedef.unflatten(range(treedef.num_leaves)))[0]]
        parts.append(f"{name}={treedef!r}:" + ",".join(f"{p}->{n}" for p, n in zip(paths, names)))
    return ";".join(parts)


def static_suffix(static: dict[str, Any]) -> str:
    """File-name part for static argument values: readable when short, else a hash."""
    import hashlib

    suffix = ""
    if static:  # by content, the same in every process (srctrans.statics)
        text = ",".join(f"{k}={key_text(v)}" for k, v in sorted(static.items()))
        suffix = ".static-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    trees = getattr(static, "trees", None)
    if trees:  # one file per structure of the pytree arguments
        suffix += ".tree-" + hashlib.sha1(trees_text(trees).encode()).hexdigest()[:8]
    return suffix


def display_source(cap: Captured, path: Path) -> str:
    """How the header names the user's file: relative to the generated file's folder's parent."""
    if not cap.is_real_file:
        return cap.filename
    src = os.path.abspath(cap.filename)
    parent = os.path.dirname(str(path.parent))
    rel = os.path.relpath(src, parent)
    return src if rel.startswith("..") else rel
