"""numba_backend's compiled helpers are kept on disk and shared by later functions and processes
(numba_backend/shared_cache.py): each fresh process below counts what Numba compiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import srctrans

CHILD = """
import json, sys
import numpy as np
from numba.core import compiler

compiled = []
compile_extra = compiler.compile_extra

def counting(typingctx, targetctx, func, *args, **kwargs):
    compiled.append(f"{getattr(func, '__module__', None)}.{getattr(func, '__qualname__', '?')}")
    return compile_extra(typingctx, targetctx, func, *args, **kwargs)

compiler.compile_extra = counting
import srctrans
import usermod

rng = np.random.default_rng(0)
W, x, b = rng.normal(size=(6, 4)), rng.normal(size=4), rng.normal(size=6)
fn = getattr(usermod, sys.argv[1])
fastmath = sys.argv[2] == "fastmath"
grads = srctrans.jit(srctrans.grad(fn, argnums=(0, 2)), fastmath=fastmath)(W, x, b)
print(json.dumps({
    "helpers": sorted({c for c in compiled if c.startswith("numba_backend")}),
    "bits": [g.tobytes().hex() for g in grads],
}))
"""

USER = """
import numpy as np

def layer(W, x, b):
    return np.sum(np.tanh(W @ x + b))

def squares(W, x, b):
    h = np.tanh(W @ x + b)
    return np.sum(h * h) + 0.5 * np.sum(b)
"""


def _run(python, folder: Path, cache: Path, fn: str, mode: str = "plain", **env) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "usermod.py").write_text(USER)
    code = CHILD.replace("sys.argv[1]", repr(fn)).replace("sys.argv[2]", repr(mode))
    done = python(code, folder, env={"SRCTRANS_CACHE_DIR": str(cache), **env}, timeout=400)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_helpers_compiled_once_are_loaded_by_later_functions_and_processes(python, tmp_path):
    shared = tmp_path / "shared"
    first = _run(python, tmp_path / "a", shared, "layer")
    assert any("unbroadcast" in h for h in first["helpers"]), first["helpers"]

    # another function, another process: every numba_backend helper comes from the disk ...
    later = _run(python, tmp_path / "b", shared, "squares")
    assert later["helpers"] == []
    # ... and gives what compiling it gave, to the bit
    alone = _run(python, tmp_path / "c", tmp_path / "alone", "squares", SRCTRANS_SHARED_HELPERS="0")
    assert alone["helpers"], "with the shared helpers off, Numba compiles them"
    assert later["bits"] == alone["bits"]

    # a caller with other options (fastmath, which the helpers inherit) never loads them
    fast = _run(python, tmp_path / "d", shared, "layer", "fastmath")
    assert any("unbroadcast" in h for h in fast["helpers"]), fast["helpers"]

    # damaged entries (a full disk, a crash mid-write) are compiled again, not loaded or raised
    folders = list(shared.glob("numba_backend-*"))
    assert len(folders) == 1 and folders[0].name == f"numba_backend-{srctrans.cache.toolchain_fingerprint()}"
    entries = list(folders[0].rglob("*.nbc"))
    assert entries
    for entry in entries:
        entry.write_bytes(b"not a pickle")
    mended = _run(python, tmp_path / "e", shared, "squares")
    assert mended["helpers"] and mended["bits"] == alone["bits"]


def test_no_writable_folder_means_no_shared_helpers(monkeypatch, tmp_path):
    from numba_backend import shared_cache

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(srctrans.config, "cache_dir", str(blocker))
    assert shared_cache.root() is None


def test_other_toolchains_folders_unused_for_weeks_are_removed(monkeypatch, tmp_path):
    import os
    import time

    from numba_backend import shared_cache

    old, recent = tmp_path / "numba_backend-0000000000000000", tmp_path / "numba_backend-1111111111111111"
    for folder in (old, recent):
        folder.mkdir()
    weeks_ago = time.time() - (shared_cache.KEEP_DAYS + 1) * 86400
    os.utime(old, (weeks_ago, weeks_ago))
    monkeypatch.setattr(srctrans.config, "cache_dir", str(tmp_path))
    current = shared_cache.root()
    assert current is not None and current.exists()
    assert not old.exists() and recent.exists()


@pytest.mark.parametrize("inherited", [{"fastmath": True}, {"error_model": "python"}, {"boundscheck": True}])
def test_the_key_holds_the_options_a_helper_inherits(inherited):
    from numba.core import compiler, targetconfig
    from numba.core.registry import cpu_target

    from numba_backend import shared_cache

    def helper(a):
        return a + 1.0

    helper.__module__ = "numba_backend.example"
    cache = shared_cache.SharedCache(helper)
    codegen = cpu_target.target_context.codegen()

    def key(**options):
        flags = compiler.Flags()
        flags.error_model = "numpy"
        for name, value in options.items():
            setattr(flags, name, value)
        with targetconfig.ConfigStack().enter(flags):
            return cache._index_key((), codegen)

    assert key() == key()
    assert key(**inherited) != key()


def test_an_entry_is_loaded_only_under_its_own_key(monkeypatch, tmp_path):
    """Two processes saving two signatures of one helper at once must not leave one's machine code
    under the other's key (Numba's own cache numbers data files in the order saved)."""
    from numba_backend import shared_cache

    monkeypatch.setattr(srctrans.config, "cache_dir", str(tmp_path))

    def helper(a):
        return a + 1.0

    helper.__module__ = "numba_backend.example"
    first, second = shared_cache.SharedCache(helper), shared_cache.SharedCache(helper)  # two processes
    files = first._cache_file
    files.save(("float64",), "code for float64")
    second._cache_file.save(("int64",), "code for int64")
    assert files.load(("float64",)) == "code for float64" and files.load(("int64",)) == "code for int64"
    # one data file written over by another signature's (the race Numba's numbering loses)
    a, b = files._name_of(("float64",)), files._name_of(("int64",))
    assert a != b
    (Path(files._cache_path) / a).write_bytes((Path(files._cache_path) / b).read_bytes())
    assert files.load(("float64",)) is None
