"""The cache runs only what the current source says: a reloaded module, a generated file
deleted or in the way, old variants, a damaged Numba cache entry, an edited backend."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import srctrans
from srctrans import cache

from .conftest import REPO

EDITABLE = """
import numpy as np
import pytest

def helper(x):
    return x + {offset}

def f(x):
    return helper(x) * {factor}
"""


def _rewrite(module, text: str) -> None:
    """Write the module's file anew (another size, so Python's own bytecode cache sees the edit) and reload it."""
    with open(module.__file__, "w") as fh:
        fh.write(textwrap.dedent(text))
    importlib.reload(module)


def test_reloaded_module_runs_its_new_code(make_module, tmp_path, monkeypatch):
    mod = make_module(EDITABLE.format(offset="1.0", factor="2.0"))
    monkeypatch.syspath_prepend(str(tmp_path))  # for importlib.reload
    x = np.array([1.0])
    assert srctrans.jit(mod.f)(x)[0] == 4.0
    assert srctrans.grad(lambda x: mod.f(x)[0])(x)[0] == 2.0
    _rewrite(mod, EDITABLE.format(offset="10.0", factor="2.0"))  # the callee changed
    assert srctrans.jit(mod.f)(x)[0] == mod.f(x)[0] == 22.0
    _rewrite(mod, "\n\n\n" + EDITABLE.format(offset="100.0", factor="3.0"))  # both, on shifted lines
    assert srctrans.jit(mod.f)(x)[0] == mod.f(x)[0] == 303.0
    assert srctrans.grad(lambda x: mod.f(x)[0])(x)[0] == 3.0


SIMPLE = """
def f(x):
    return x * 2.0 + 1.0
"""


@pytest.mark.parametrize("gone", ["file", "folder"])
@pytest.mark.parametrize("disable_jit", [False, True], ids=["compiled", "python"])
def test_generated_file_deleted_before_the_first_call_is_written_again(make_module, monkeypatch, disable_jit, gone):
    monkeypatch.setattr(srctrans.config, "disable_jit", disable_jit)
    f = srctrans.jit(make_module(SIMPLE).f)
    path = srctrans.source_path(f)
    text = path.read_text()
    if gone == "file":
        path.unlink()
    else:  # srctrans clean meanwhile
        shutil.rmtree(path.parent)
    for _ in range(2):
        np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [3.0, 5.0])
    assert path.read_text() == text


def test_directory_in_the_way_of_a_generated_file_is_named(make_module):
    f = srctrans.jit(make_module(SIMPLE).f)
    path = srctrans.source_path(f)
    path.unlink()
    path.mkdir()
    with pytest.raises(srctrans.CacheError) as info:
        f(np.array([1.0]))
    message = str(info.value)
    assert str(path) in message and "is a directory" in message
    assert "srctrans clean" in message
    shutil.rmtree(path)
    assert f(np.array([1.0]))[0] == 3.0  # and it works again once the directory is gone


def test_old_variants_of_a_function_are_removed(make_module):
    """Each variant has a file of its own; beside a new one, the newest few older ones stay
    (with their compiled code), and none written in the last minutes (another process may be
    about to run it)."""
    mod = make_module("SCALE = 0.0\n\ndef f(x):\n    return x * SCALE\n")

    def variant(scale):
        mod.SCALE = scale
        f = srctrans.jit(mod.f)
        assert f(2.0) == 2.0 * scale
        return srctrans.source_path(f)

    paths = [variant(float(i)) for i in range(10)]
    assert len(set(paths)) == 10 and all(p.exists() for p in paths)  # all recent: all kept
    long_ago = time.time() - 3600
    for i, path in enumerate(paths):
        os.utime(path, (long_ago + i, long_ago + i))
    newest = variant(10.0)
    folder = newest.parent
    kept = set(folder.glob(newest.name.split(".")[0] + ".f.jit.*.py"))
    assert kept == {*paths[-(cache.KEEP_VARIANTS - 1) :], newest}
    for gone in paths[: -(cache.KEEP_VARIANTS - 1)]:
        stem = gone.name[:-3]
        assert not list(folder.glob(f".{gone.name}*")) and not list((folder / "__pycache__").glob(stem + ".*"))
    assert list((folder / "__pycache__").glob(paths[-1].name[:-3] + ".*.nbi"))  # what stays keeps its compiled code
    assert variant(0.0) == paths[0] and paths[0].exists()  # a removed variant is written again when needed


# --- Numba's cache files -------------------------------------------------------------

RUN = """
import warnings, numpy as np, srctrans, damaged
warnings.simplefilter("always")
print(srctrans.jit(damaged.f)(np.array([1.0, 2.0])).tolist())
"""


def _damage_garbage(path):
    path.write_bytes(b"\x80\x05garbage that is not a pickle")


def _damage_truncate(path):
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
@pytest.mark.parametrize("damage", [_damage_garbage, _damage_truncate], ids=["garbage", "truncated"])
def test_damaged_numba_cache_entry_is_compiled_again(tmp_path, python, suffix, damage):
    (tmp_path / "damaged.py").write_text(textwrap.dedent(SIMPLE))
    first = python(RUN, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["[3.0,", "5.0]"]
    entries = list((tmp_path / "__srctrans__" / "__pycache__").glob(f"*{suffix}"))
    assert entries, "Numba cached the function"
    for entry in entries:
        damage(entry)
    second = python(RUN, cwd=tmp_path)
    assert second.returncode == 0, second.stderr  # not a raw UnpicklingError / EOFError
    assert second.stdout.split() == ["[3.0,", "5.0]"]
    assert "discarded" in second.stderr and entries[0].name.split(".py")[0] in second.stderr
    third = python(RUN, cwd=tmp_path)  # the entry written again is sound
    assert third.returncode == 0 and third.stdout.split() == ["[3.0,", "5.0]"]
    assert "discarded" not in third.stderr, third.stderr


# --- what the dependency hash covers ---------------------------------------------------

MEAN = """
import numpy as np
import pytest

def f(x):
    return np.mean(x, axis=0)
"""


@pytest.mark.slow
def test_edited_backend_overload_is_compiled_again(tmp_path):
    """A changed overload in numba_backend (here: the mean along an axis) reaches a program whose
    generated file and Numba cache entries were written with the old one."""
    tree = tmp_path / "tree"
    for package in ("srctrans", "numba_backend"):
        shutil.copytree(REPO / package, tree / package, ignore=shutil.ignore_patterns("__pycache__", "__srctrans__"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "meanmodel.py").write_text(textwrap.dedent(MEAN))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SRCTRANS_")}
    env["PYTHONPATH"] = f"{tree}{os.pathsep}{project}"
    code = "import numpy as np, srctrans, meanmodel; print(srctrans.jit(meanmodel.f)(np.ones((4, 3)) * 6.0).tolist())"

    def run():
        out = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run() == "[6.0, 6.0, 6.0]"
    overloads = tree / "numba_backend" / "overloads.py"
    text = overloads.read_text()
    assert "        return total / count\n" in text
    overloads.write_text(text.replace("        return total / count\n", "        return 2.0 * total / count\n"))
    assert run() == "[12.0, 12.0, 12.0]"


def test_dependency_hash_covers_the_toolchain(monkeypatch):
    from srctrans import cache

    base = cache.toolchain_fingerprint()
    assert cache.toolchain_fingerprint() == base  # computed once per process
    parts = cache._toolchain_parts()
    assert {"srctrans", "numba_backend", "numba", "llvmlite", "numpy", "python"} <= {name for name, _ in parts}
    for i, (name, value) in enumerate(parts):
        changed = [*parts[:i], (name, value + "+1"), *parts[i + 1 :]]
        monkeypatch.setattr(cache, "_toolchain_parts", lambda changed=changed: changed)
        monkeypatch.setattr(cache, "_TOOLCHAIN", [])
        assert cache.toolchain_fingerprint() != base, name


def test_names_stay_short_through_chains_of_transformations(make_module, recwarn):
    """A file made from a generated file is named after it without its hash, and a long name
    keeps its two ends around a hash: Numba's cache files add the function's name and some 40
    characters to the file's, and a file name has at most 255 (the Hessian of a function of a
    pytree could not be cached)."""
    mod = make_module(
        """
        import numpy as np

        def penalized_tree_loss_of_parameters(p, x):
            return np.sum(np.tanh(p["w"] * x + p["b"][0]) ** 2) + p["b"][1] * np.sum(p["w"] ** 2)
        """
    )
    p = {"w": np.linspace(0.1, 0.5, 3), "b": (np.float64(0.2), np.float64(0.3))}
    h = srctrans.jit(srctrans.hessian(mod.penalized_tree_loss_of_parameters))
    assert np.shape(h(p, np.ones(3))["w"]["w"]) == (3, 3)
    assert not [w for w in recwarn if issubclass(w.category, srctrans.CacheWarning)], [str(w.message) for w in recwarn]
    folder = srctrans.source_path(srctrans.grad(mod.penalized_tree_loss_of_parameters)).parent
    names = [p.name for p in folder.glob("*.py")]
    assert not [n for n in names if re.search(r"\.[0-9a-f]{12}\..*\.[0-9a-f]{12}\.py$", n)]  # one hash per name
    assert max(len(n) for n in names) <= cache.MAX_STEM + len(".0123456789ab.py"), max(names, key=len)
    assert list((folder / "__pycache__").glob("*compiled*.nbi"))  # Numba saved what it compiled
