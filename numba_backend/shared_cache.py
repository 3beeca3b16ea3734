"""Compiled helpers kept on disk and shared by every function and process.

A generated file calls ``rt.unbroadcast``, ``rt.sum_grad``, ``@`` ... whose Numba
implementations (numba_backend's ``@overload`` and ``register_jitable`` functions) Numba
compiles again in every process, for every new signature: for ``grad`` of a one-line layer
(``np.sum(np.tanh(W @ x + b))``) that was ~85% of the first call's 10 s, and every edit of
the user's function paid it again. :func:`install` gives each such implementation an
on-disk cache, so a helper is compiled once per signature on a machine and loaded (a few
milliseconds) by every later compile that needs it, whatever function, process or
generated file calls it.

Where and how it is keyed:

- ``<srctrans cache root>/numba_backend-<toolchain fingerprint>/``: the fingerprint is a hash
  of srctrans's and numba_backend's sources and of the Python, NumPy, Numba and llvmlite
  versions (:func:`srctrans.cache.toolchain_fingerprint`), so an edit of any overload (in
  whatever module a helper calls into) or an upgrade never loads code compiled before it.
- Numba's own key (signature, CPU and its features, the bytecode and closure values of the
  implementation) gains what Numba leaves out of it: the compile options a helper inherits
  from the function calling it (``fastmath``, ``error_model``, ``boundscheck``, ...) and the
  optimization level. A helper compiled for a ``fastmath`` caller is never loaded for one
  without it; so is one compiled at another optimization level (the suite compiles lower).
- An implementation Numba cannot cache (it holds a pointer, as SciPy's C functions do) is
  compiled as before, silently; a cache that cannot be read or written is left alone
  (compiled in memory, as before): caching only ever saves time.

``SRCTRANS_SHARED_HELPERS=0`` turns it off (every helper compiled in each process).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from numba.core import config as numba_config
from numba.core import targetconfig
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile, _CacheLocator
from numba.core.registry import CPUDispatcher
from numba.core.typing import templates

_PACKAGE = __package__  # "numba_backend"
# options a callee inherits from its caller when its own decorator does not set them
_INHERITED = ("fastmath", "error_model", "boundscheck", "nrt", "debuginfo", "_dbg_optnone", "auto_parallel")
_ROOTS: dict[Path, Path | None] = {}
KEEP_DAYS = 14  # other toolchains' folders not used for this long are removed


def root() -> Path | None:
    """This toolchain's folder of compiled helpers (created) under the cache root now in force
    (``srctrans.config.cache_dir``, or the per-user cache), or None where none is writable."""
    from srctrans.cache import toolchain_fingerprint, user_cache_root
    from srctrans.config import config

    base = Path(config.cache_dir) if config.cache_dir else user_cache_root()
    if base not in _ROOTS:
        folder: Path | None = base / f"{_PACKAGE}-{toolchain_fingerprint()}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            os.utime(folder)  # (used now: kept by _prune)
        except OSError:
            folder = None
        if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
            folder = None
        if folder is not None:
            _prune(folder)
        _ROOTS[base] = folder
    return _ROOTS[base]


def _prune(current: Path) -> None:
    """Remove the helper folders of other toolchains (an older srctrans, another Numba) that no
    process has used for :data:`KEEP_DAYS` days."""
    import shutil
    import time

    cutoff = time.time() - KEEP_DAYS * 86400
    with contextlib.suppress(OSError):
        for folder in current.parent.glob(f"{_PACKAGE}-*"):
            if folder != current and folder.is_dir() and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)


class _SharedLocator(_CacheLocator):
    """A numba_backend function's entries under :func:`root`, one folder per module; the
    toolchain fingerprint in the folder's name stands for the source stamp."""

    def __init__(self, py_func, folder: Path):
        self._lineno = py_func.__code__.co_firstlineno
        self._py_file = py_func.__code__.co_filename
        self._cache_path = str(folder / py_func.__module__)
        self._stamp = folder.name

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        folder = root()
        if folder is None:
            return None
        self = cls(py_func, folder)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


class _SharedImpl(CompileResultCacheImpl):
    _locator_classes = [_SharedLocator]

    def check_cachable(self, cres):
        # (Numba's version warns for each function it cannot cache: ours are known, and fine)
        return not cres.library.has_dynamic_globals and all(x.can_cache for x in cres.lifted)


class _KeyedFiles(IndexDataCacheFile):
    """Numba's index and data files, each data file named by a hash of its key and holding the key,
    checked when loaded. (Numba numbers a function's data files in the order they are saved: two
    processes saving two signatures at once can take the same number, and one signature's machine
    code would be loaded for the other. Here a lost race loses an index entry: compiled again.)"""

    def _name_of(self, key) -> str:
        return self._data_name_pattern.replace("{number:d}", hashlib.sha256(repr(key).encode()).hexdigest()[:24])

    def save(self, key, data):
        name = self._name_of(key)
        self._save_data(name, (key, data))  # the data first: an index never names a file not yet written
        overloads = self._load_index()
        overloads[key] = name
        self._save_index(overloads)

    def load(self, key):
        name = self._load_index().get(key)
        if name is None:
            return None
        try:
            stored, data = self._load_data(name)
        except OSError:
            return None
        return data if stored == key else None


class SharedCache(FunctionCache):
    """Numba's function cache, located by :class:`_SharedLocator`, keyed also by the options
    the helper inherits from its caller; failures to read, write or key an entry compile as
    if there were no cache."""

    _impl_class = _SharedImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _KeyedFiles(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )

    def _index_key(self, sig, codegen):
        key = super()._index_key(sig, codegen)
        top = targetconfig.ConfigStack.top_or_none()
        inherited = tuple((name, repr(getattr(top, name, None))) for name in _INHERITED) if top is not None else ()
        machine: dict = {}
        codegen._customize_tm_options(machine)  # (the machine code's level: the suite lowers it)
        return (*key, inherited, repr(numba_config.OPT), repr(sorted(machine.items())))

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - a damaged or unreadable entry: compile it
            return None

    def save_overload(self, sig, data):
        with contextlib.suppress(Exception):  # a full disk, a closure value pickle cannot key ...
            super().save_overload(sig, data)


def _ours(pyfunc) -> bool:
    return (getattr(pyfunc, "__module__", None) or "").split(".")[0] == _PACKAGE


_installed: list[bool] = []


def install() -> None:
    """Give numba_backend's overload implementations the shared on-disk cache (once)."""
    if _installed or os.environ.get("SRCTRANS_SHARED_HELPERS", "1") == "0":
        return
    _installed.append(True)
    get_jit_decorator = templates._OverloadFunctionTemplate._get_jit_decorator

    def jit_decorator(self):
        jitter = get_jit_decorator(self)

        def decorate(**options):
            make = jitter(**options)

            def dispatcher_of(pyfunc):
                disp = make(pyfunc)
                if (
                    _ours(pyfunc)
                    and isinstance(disp, CPUDispatcher)
                    and not options.get("cache")
                    and root() is not None
                ):
                    with contextlib.suppress(Exception):  # (no locator: compiled in memory, as before)
                        disp._cache = SharedCache(pyfunc)
                return disp

            return dispatcher_of

        return decorate

    templates._OverloadFunctionTemplate._get_jit_decorator = jit_decorator
