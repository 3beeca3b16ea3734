"""Cache: where generated files live, writing them safely, locking, and loading them.

Files go to ``__srctrans__/`` beside the user's module (like ``__pycache__``);
to a per-user folder when that is not writable or the function has no file (a
notebook cell); anywhere ``SRCTRANS_CACHE_DIR`` (or ``config.cache_dir``) says.
Nothing is ever written outside these folders.

The cache is content-addressed: a file's name ends in its dependency hash
(:func:`variant_path`, ``model.loss.grad.3f2a9c41d0e7.py``), so a name stands for
one text for good and two variants of a function (another value of a global it
reads, another version of srctrans) never share a file, nor the Numba cache
entries kept beside it under the file's name. Writes are atomic (a temporary
file, then :func:`os.replace`) and made under the file's lock, the lock its
compiles and Numba's cache reads and writes take too; a file whose text already
matches is left untouched, so its modification time, and Numba's cache keyed on
it, survive. Old variants of a function are removed after a while
(:func:`prune_variants`).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.util
import json
import os
import re
import sys
import tempfile
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import config
from .errors import CacheError

if TYPE_CHECKING:  # pragma: no cover
    from .capture import Captured

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


HASH_DIGITS = 12  # of the dependency hash, in a generated file's name
_VARIANT_RE = re.compile(rf"^(?P<stem>.+)\.(?P<hash>[0-9a-f]{{{HASH_DIGITS}}})\.py$")


# Numba names its cache files ``<file stem>.<function>-<line>.py311.nbi.tmp.<16 hex>``, and a
# file name has at most 255 bytes: a stem longer than this keeps its two ends around a hash.
MAX_STEM = 100


def variant_path(folder: Path, stem: str, dep_hash: str) -> Path:
    """``<folder>/<stem>.<dependency hash>.py``: the file of one variant of a function."""
    if len(stem.encode()) > MAX_STEM:  # a long chain of transformations, long names
        digest = hashlib.sha1(stem.encode()).hexdigest()[:8]
        keep = (MAX_STEM - len(digest) - 2) // 2
        stem = f"{stem[:keep]}~{digest}~{stem[-keep:]}"
    return folder / f"{stem}.{dep_hash[:HASH_DIGITS]}.py"


def readable_name(path: Path) -> str:
    """A generated file's name without its dependency hash (``model.loss.grad.py``), for copies."""
    m = _VARIANT_RE.match(path.name)
    return f"{m['stem']}.py" if m else path.name


def source_stem(cap: Captured) -> str:
    """How a generated file's name begins: the user's module (``model``); for a function of a
    generated file (``grad(grad(f))``), that file's name without its hash, so that names do not
    gather a hash per transformation."""
    return readable_name(Path(cap.filename))[:-3] if cap.is_generated else cap.module_stem


def write_if_changed(path: Path, text: str) -> bool:
    """Atomically write ``text`` unless the file already holds exactly it. True if written.

    A folder removed meanwhile (``srctrans clean``) is made again; a directory where the
    file should be is a :class:`~srctrans.errors.CacheError` that names it."""
    try:
        if path.read_text() == text:
            return False
    except IsADirectoryError:
        raise _in_the_way(path) from None
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
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
    except IsADirectoryError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _in_the_way(path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


def _in_the_way(path: Path) -> CacheError:
    return CacheError(
        f"{path} is a directory, where srctrans writes a generated file",
        hint=f"remove it (rm -r '{path}', or srctrans clean for the whole {path.parent.name} folder), "
        "or set SRCTRANS_CACHE_DIR to another folder",
    )


def write_generated(path: Path, text: str) -> bool:
    """Write a generated file under its lock; when a new variant was written, remove old ones."""
    with file_lock(path):
        written = write_if_changed(path, text)
    if written:
        prune_variants(path)
    return written


KEEP_VARIANTS = 8  # the newest variants of a function kept beside a new one
_PRUNE_AGE = 600.0  # seconds: a younger file may be in use by a process started at the same time


def prune_variants(path: Path, keep: int = KEEP_VARIANTS, min_age: float = _PRUNE_AGE) -> list[Path]:
    """Remove old variants of ``path``'s function (same name but for the hash): all but the
    ``keep`` newest, and only those written more than ``min_age`` seconds ago, with their
    derived files, lock and compiled code. Returns the removed files."""
    m = _VARIANT_RE.match(path.name)
    if m is None:
        return []
    siblings = []
    for other in path.parent.glob(f"{glob.escape(m['stem'])}.*.py"):
        found = _VARIANT_RE.match(other.name)
        if found is not None and found["stem"] == m["stem"] and other != path:
            with contextlib.suppress(OSError):
                siblings.append((other.stat().st_mtime, other))
    siblings.sort(reverse=True)
    now = time.time()
    removed = []
    for mtime, other in siblings[max(keep - 1, 0) :]:
        if now - mtime < min_age:
            continue
        prefix = glob.escape(other.name[:-3]) + "."  # its files, those made from it (.shards.py ...), their locks
        lock = _lock_path(other)
        try:
            with file_lock(other, blocking=False):
                folder = other.parent
                doomed = [*folder.glob(prefix + "*"), *folder.glob("." + prefix + "*.lock"), *(folder / "__pycache__").glob(prefix + "*")]
                for item in doomed:
                    if item != lock:
                        with contextlib.suppress(OSError):
                            item.unlink()
        except BlockingIOError:  # being compiled or written right now: not so old after all
            continue
        with contextlib.suppress(OSError):
            lock.unlink()
        removed.append(other)
    return removed


_HELD = threading.local()  # lock files this thread holds, with their depth


def _lock_path(path: Path) -> Path:
    return path.parent / f".{path.name}.lock"


@contextlib.contextmanager
def file_lock(path: Path, blocking: bool = True) -> Iterator[None]:
    """An exclusive inter-process lock on ``<folder>/.<name>.lock`` (POSIX flock; msvcrt on Windows).

    Re-entrant within a thread (writing a file, then compiling it, takes it again); other
    threads of the process wait for it as other processes do. Not ``blocking``: raises
    :class:`BlockingIOError` when another holds it."""
    lock_path = _lock_path(path)
    held = getattr(_HELD, "depth", None)
    if held is None:
        held = _HELD.depth = {}
    key = str(lock_path)
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.name == "nt":  # pragma: no cover - exercised on Windows only
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK, 1)
            except OSError:
                raise BlockingIOError(f"{lock_path} is held") from None
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        held[key] = 1
        try:
            yield
        finally:
            held.pop(key, None)
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
    import numpy

    parts = [("srctrans", _package_digest(Path(__file__).resolve().parent))]
    backend = _package_folder("numba_backend")
    parts.append(("numba_backend", _package_digest(backend) if backend else "absent"))
    parts.append(("python", f"{sys.version} {sys.implementation.cache_tag}"))
    parts.append(("numpy", numpy.__version__))
    for dist in ("numba", "llvmlite"):
        parts.append((dist, _installed_version(dist)))
    return parts


def _package_folder(name: str) -> Path | None:
    """Where the top-level package ``name`` is, found without importing it (srctrans never imports Numba)."""
    spec = importlib.util.find_spec(name)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(places[0]) if places else None


def _installed_version(dist: str) -> str:
    """``dist``'s version, from the name of its ``.dist-info`` folder beside the package
    (importing importlib.metadata would cost a cold start ~25 ms)."""
    folder = _package_folder(dist)
    if folder is None:
        return "absent"
    found = list(folder.parent.glob(f"{glob.escape(dist)}-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len(dist) + 1 : -len(".dist-info")]
    import importlib.metadata  # an unusual install: ask the slow way

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return f"at {folder}"


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
