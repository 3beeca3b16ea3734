"""Cache: where generated files live, writing them safely, locking, and loading them.

Files go to ``__srctrans__/`` beside the user's module (like ``__pycache__``);
to a per-user folder when that is not writable or the function has no file (a
notebook cell); anywhere ``SRCTRANS_CACHE_DIR`` (or ``config.cache_dir``) says.
Writes are atomic (a temporary file, then :func:`os.replace`); a file whose
text already matches is left untouched, so its modification time, and Numba's
cache keyed on it, survive. Nothing is ever written outside these folders.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .capture import Captured
from .config import config

FOLDER = "__srctrans__"
ORIGIN_RE = re.compile(r"^\s*# (?P<file>[^\s:]+):(?P<line>\d+)  ")
META_PREFIX = "# srctrans-meta: "
HASH_PREFIX = "# dependency hash: "


def user_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "srctrans"


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def cache_dir(cap: Captured) -> Path:
    """The folder for ``cap``'s generated files (created if needed)."""
    if config.cache_dir:
        return _shared_subfolder(Path(config.cache_dir), cap)
    if cap.is_real_file:
        folder = Path(os.path.dirname(os.path.abspath(cap.filename)))
        # a generated file transformed again (grad(grad(f))) keeps its files beside it
        beside = folder if folder.name == FOLDER else folder / FOLDER
        if _writable_dir(beside):
            return beside
    return _shared_subfolder(user_cache_root(), cap)


def _shared_subfolder(root: Path, cap: Captured) -> Path:
    """In a shared cache, keep each source folder apart: ``<root>/<folder>-<hash>/``."""
    src = os.path.dirname(os.path.abspath(cap.filename)) if cap.is_real_file else "notebook"
    tag = hashlib.sha1(src.encode()).hexdigest()[:8]
    name = re.sub(r"[^0-9A-Za-z_.-]+", "_", os.path.basename(src) or "root")
    folder = root / f"{name}-{tag}"
    if not _writable_dir(folder):
        raise OSError(f"srctrans cannot write its generated files to {folder}; set SRCTRANS_CACHE_DIR to a writable folder")
    return folder


def module_name_for(path: Path) -> str:
    """A stable, flat module name for a generated file (same path -> same name, in every process)."""
    tag = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.name[:-3])
    return f"_srctrans_{stem}_{tag}"


def write_if_changed(path: Path, text: str) -> bool:
    """Atomically write ``text`` unless the file already holds exactly it. True if written."""
    try:
        if path.read_text() == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name, suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock on ``<folder>/.<name>.lock`` (POSIX flock; msvcrt on Windows)."""
    lock_path = path.parent / f".{path.name}.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.name == "nt":  # pragma: no cover - exercised on Windows only
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if os.name != "nt":
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def load_module(path: Path, name: str, bound: dict[str, Any] | None = None) -> types.ModuleType:
    """Import the file at ``path`` as module ``name``: registered in ``sys.modules`` before it runs,
    with the load-time ``bound`` values already in its namespace."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - only for non-.py paths
        raise ImportError(f"cannot load generated file {path}")
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(bound or {})
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def clean(root: Path) -> list[Path]:
    """Remove every ``__srctrans__`` folder under ``root``; returns what was removed."""
    import shutil

    removed = []
    for folder in sorted(root.rglob(FOLDER)):
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


# --- what a generated file's meaning depends on besides the user's code ----------

_TOOLCHAIN: list[str] = []


def toolchain_fingerprint() -> str:
    """A hash of everything that gives a generated file its meaning besides the user's code
    (:func:`_toolchain_parts`), computed once per process; part of every dependency hash."""
    if not _TOOLCHAIN:
        digest = hashlib.sha256()
        for name, value in _toolchain_parts():
            digest.update(f"{name}={value}\n".encode())
        _TOOLCHAIN.append(digest.hexdigest()[:16])
    return _TOOLCHAIN[0]


def _toolchain_parts() -> list[tuple[str, str]]:
    """The source of srctrans (the transformations that write a file, the runtime helpers it
    calls) and of numba_backend (the overloads Numba compiles it with), and the versions of
    Python, NumPy, Numba and llvmlite, which Numba's own cache does not look at (it keys a
    compiled function by its file's modification time and size)."""
    import importlib.metadata
    import importlib.util

    import numpy

    parts = [("srctrans", _package_digest(Path(__file__).resolve().parent))]
    spec = importlib.util.find_spec("numba_backend")  # found, not imported (srctrans never imports numba)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    parts.append(("numba_backend", _package_digest(Path(places[0])) if places else "absent"))
    parts.append(("python", f"{sys.version} {sys.implementation.cache_tag}"))
    parts.append(("numpy", numpy.__version__))
    for dist in ("numba", "llvmlite"):
        try:
            parts.append((dist, importlib.metadata.version(dist)))
        except importlib.metadata.PackageNotFoundError:
            parts.append((dist, "absent"))
    return parts


def _package_digest(root: Path) -> str:
    """A hash of the ``.py`` files of the package at ``root`` (names and bytes)."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("__", ".")))  # __pycache__, __srctrans__
        for name in sorted(files):
            if name.endswith(".py"):
                path = Path(folder, name)
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# --- reading generated files back (no libcst needed) -------------------------


def read_header(text: str) -> tuple[dict, str, str] | None:
    """``(meta, dependency_hash, body_hash_ok)`` from a generated file's text, or None if not ours/damaged."""
    meta = None
    for i, line in enumerate(text.split("\n")):
        if line.startswith(META_PREFIX):
            try:
                meta = json.loads(line[len(META_PREFIX) :])
            except ValueError:
                return None
        elif line.startswith(HASH_PREFIX):
            fields = line[len(HASH_PREFIX) :].split()
            if meta is None or len(fields) != 4:
                return None
            rest = text.split("\n", i + 1)[-1]
            body = rest[1:] if rest.startswith("\n") else rest
            if hashlib.sha256(body.encode()).hexdigest()[:16] != fields[3]:
                return None
            return meta, fields[0], fields[3]
        elif not line.startswith("#"):
            return None
    return None


def origin_map(text: str) -> dict[int, tuple[str, int, str]]:
    """Generated line number -> (user file as written in the comment, user line, user text)."""
    result: dict[int, tuple[str, int, str]] = {}
    current = None
    for number, line in enumerate(text.split("\n"), start=1):
        m = ORIGIN_RE.match(line)
        if m:
            current = (m["file"], int(m["line"]), line[m.end() :].strip())
        elif not line.strip() or line.startswith(("def ", "import ", "from ", "#")):
            if line.startswith("def "):
                current = None
            continue
        if current is not None:
            result[number] = current
    return result
