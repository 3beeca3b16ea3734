"""Where the CUDA form of a generated file goes, and when it is written again.

:func:`cuda_file` writes ``<file>.cuda.py`` beside a generated file (the rewrite is
:func:`srctrans.gpu_source.cuda_source`) and keeps it while its dependency hash, made of
the text of the file it comes from and of the rewrite's own source, matches. Reusing a
file imports neither libcst nor Numba.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .cache import read_header, write_if_changed

_REWRITE = Path(__file__).with_name("gpu_source.py")


def dependency_hash(text: str) -> str:
    return hashlib.sha256((text + _REWRITE.read_text()).encode()).hexdigest()[:16]


def cuda_file(path: Path) -> Path:
    """Write (or keep) the CUDA form of the generated file at ``path`` beside it; returns its path."""
    text = path.read_text()
    out = path.with_name(path.name[:-3] + ".cuda.py")
    try:
        existing = read_header(out.read_text())
    except OSError:
        existing = None
    if existing is not None and existing[1] == dependency_hash(text):
        return out
    from .gpu_source import cuda_source

    write_if_changed(out, cuda_source(text, path.name, dependency_hash(text)))
    return out
