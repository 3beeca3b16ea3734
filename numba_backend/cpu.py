"""Compile a generated module's functions for the CPU with Numba.

:func:`compile_module` loads the generated file as its own module (registered
in ``sys.modules`` so Numba's on-disk cache can find it again), wraps every
generated function in ``numba.njit(cache=..., error_model='numpy')`` and
rebinds the module's names to the compiled dispatchers, so generated functions
call each other compiled. Recursive functions, and those that call one, are not
cached on disk: Numba loads a cached recursive function into a segmentation fault
(numba/numba#6061), so they are compiled again in each process. Each dispatcher's first compile for a new signature
runs under the caller's lock; Numba's typing errors come back as
:class:`GeneratedCodeError`, which names the generated file and line. A cache entry
that cannot be read back (a truncated ``.nbi``/``.nbc``) is discarded and compiled
again, with a :class:`~srctrans.errors.CacheWarning`.
"""

from __future__ import annotations

import ast
import contextlib
import glob
import re
import traceback
import types
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any

import numba
from numba.core import errors as numba_errors

from srctrans.cache import load_module
from srctrans.errors import CacheWarning

from . import compile_budget, flat_loops, memory, shared_cache, vector_math, weak_scalars

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
memory.install()  # large arrays on huge pages, as NumPy does
vector_math.install()  # SIMD exp/log/tanh/sin... from glibc's libmvec where it exists
flat_loops.install()  # elementwise lines of generated files as one loop over memory
weak_scalars.install()  # Python numbers take the array's dtype, as in NumPy 2 (NEP 50)
shared_cache.install()  # helpers compiled once per machine, loaded by every later compile


class GeneratedCodeError(Exception):
    """Numba refused a generated file. ``generated_file``/``generated_line`` say where."""

    def __init__(self, summary: str, generated_file: str, generated_line: int | None, details: str) -> None:
        super().__init__(summary)
        self.summary = summary
        self.generated_file = generated_file
        self.generated_line = generated_line
        self.details = details


def _locate(message: str, path: str) -> int | None:
    line = None
    for m in re.finditer(r'File "([^"]+)", line (\d+)', message):
        if Path(m.group(1)).resolve() == Path(path).resolve():
            line = int(m.group(2))
    return line


def _typing_line(tb, path: str) -> int | None:
    """The generated file's line that Numba was compiling when ``tb`` was raised (the innermost
    frame holding a ``loc``, itself or as its ``self``'s, in ``path``), or None."""
    from numba.core import ir

    target, line = Path(path).resolve(), None
    while tb is not None:
        local = tb.tb_frame.f_locals
        for loc in (local.get("loc"), getattr(local.get("self"), "loc", None), getattr(local.get("inst"), "loc", None)):
            if isinstance(loc, ir.Loc) and loc.filename and loc.line and Path(loc.filename).resolve() == target:
                line = loc.line
        tb = tb.tb_next
    return line


def _known_gap(path: str, line: int | None, summary: str) -> str:
    """What numba_backend.coverage says of the functions the generated line calls that do not
    compile (and of those that do in some forms only, which Numba's ``summary`` names): lines
    to add to Numba's own message, or ''."""
    from .coverage import NOT_COMPILED, PARTLY

    try:
        text = Path(path).read_text().splitlines()[line - 1] if line else ""
    except (OSError, IndexError):
        return ""
    notes = []
    for name in dict.fromkeys(re.findall(r"\b((?:np|numpy|scipy)(?:\.\w+)+)\s*\(", text)):
        key = re.sub(r"^np\.", "numpy.", name)
        if key in NOT_COMPILED:
            notes.append(f"srctrans: {key} does not compile under jit: {NOT_COMPILED[key]} (grad, jvp and vjp work without jit)")
        elif key in PARTLY and re.search(rf"\b{key.rsplit('.', 1)[1]}\b", summary):
            notes.append(f"srctrans: {key} compiles under jit except with {PARTLY[key]}")
    return "".join(f"\n{n}".replace("``", "") for n in notes)


def _summary(message: str) -> str:
    """The first lines of a Numba error, before its own source excerpts and candidate lists."""
    keep = []
    lines = _ANSI.sub("", message).splitlines()
    for ln in lines:
        ln = ln.strip()
        if ln.startswith(('File "', "During:", "There are ", "- Of which")):
            break
        if ln and not ln.startswith("^"):
            keep.append(ln)
    # the reasons an overload gave for refusing these arguments (numba_backend's say what to do)
    reasons = []
    for before, ln in zip(lines, lines[1:]):
        if before.strip().startswith("Rejected as the implementation raised a specific error"):
            reason = ln.strip().removeprefix("TypingError: ")
            if reason not in reasons and not reason.startswith(("Failed in", "No implementation")):
                reasons.append(reason)
    return "\n".join(keep[:5] + [f"because: {r}" for r in reasons[:2]])


def _guard(dispatcher, path: str, lock: Callable[[], ContextManager]) -> None:
    """Run the dispatcher's compile step under ``lock`` and translate Numba's errors; a
    function whose compile would go over ``srctrans.config.compile_budget`` runs uncompiled
    (:mod:`numba_backend.compile_budget`)."""
    compile_for_args = dispatcher._compile_for_args
    uncompiled: set[tuple] = set()  # argument types whose compile went over the budget

    def locked_compile(*args, **kwargs):
        key = tuple(dispatcher.typeof_pyval(a) for a in args) if uncompiled else None
        if key in uncompiled:
            return dispatcher.py_func  # (Numba's dispatcher calls what this returns)
        with lock(), compile_budget.session() as budget:
            try:
                return compile_for_args(*args, **kwargs)
            except Exception as err:
                if budget.exceeded is None:
                    _translate(err, path)
                    raise
        _warn_uncompiled(dispatcher.py_func, path, budget.exceeded)
        uncompiled.add(tuple(dispatcher.typeof_pyval(a) for a in args))
        return dispatcher.py_func

    dispatcher._compile_for_args = locked_compile


def _translate(err: Exception, path: str) -> None:
    """Raise a :class:`GeneratedCodeError` for Numba's ``err`` when it names a line of ``path``."""
    if isinstance(err, (numba_errors.NumbaError, NotImplementedError)):  # (Numba's lowering raises the latter)
        message = str(err)
        line = _locate(message, path)
        summary = _summary(message)
        summary += _known_gap(path, line, summary)
        called = re.search(r"Unknown attribute '(\w+)' of type Module\((?:<module ')?(srctrans[\w.]*)", summary)
        if called:  # a transformation used where srctrans could not turn it into a call of a generated file
            summary += (
                f"\nsrctrans: inside a compiled function, {called[2]}.{called[1]} compiles when it is called "
                f"where it is written, {called[2]}.{called[1]}(f, ...)(x), or named once and then only called, "
                "with f a function defined outside (a global or closure value) and its options literals"
            )
        raise GeneratedCodeError(summary, path, line, _ANSI.sub("", message)) from None
    # Numba's typing tripped on a call it half supports (``h.view()`` meets ``dtype, = args``;
    # ``astype(..., copy=False)`` meets ``assert not kws``): a plain Python error from inside
    # Numba, which names no line; the typing step it came from knows which line of the generated
    # file it was reading. An error with no such line came from typing the arguments (a ragged
    # nested list: "cannot reflect element of reflected container"): raised as it is.
    line = _typing_line(err.__traceback__, path)
    if line is not None:
        summary = f"{type(err).__name__} inside Numba: {err}".rstrip(": ")
        details = "".join(traceback.format_exception(err))
        raise GeneratedCodeError(summary, path, line, details) from None


def _warn_uncompiled(py_func, path: str, exceeded) -> None:
    """Say which function runs uncompiled, where the user wrote it, and why."""
    where = f"{py_func.__name__}"
    try:
        lines = Path(path).read_text().splitlines()
        for text in lines[py_func.__code__.co_firstlineno :]:
            m = re.match(r"\s*# (\S+:\d+)\s", text + " ")
            if m:
                where = f"{py_func.__name__} ({m.group(1)})"
                break
    except (OSError, AttributeError):
        pass
    arrays = f"{exceeded.arrays} array expressions, " if exceeded.arrays else ""
    warnings.warn(
        f"{where} runs uncompiled: compiling it would take about {exceeded.estimate:.0f} s "
        f"({arrays}{exceeded.statements} Numba statements in {exceeded.function}), over "
        f"srctrans.config.compile_budget = {exceeded.budget:.0f} s. NumPy runs its array lines and "
        f"the functions it calls compile on their own; split it into functions to compile it in "
        f"parts, or raise the budget with srctrans.config.update('compile_budget', seconds) "
        f"(None: no bound). Generated file: {path}",
        compile_budget.CompileBudgetWarning,
        stacklevel=_user_stacklevel(),
    )


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the innermost caller outside srctrans, numba_backend and Numba."""
    import sys

    ours = tuple(
        str(Path(m.__file__).resolve().parent) for m in (sys.modules["srctrans"], sys.modules["numba_backend"], numba)
    )
    frame, level = sys._getframe(2), 2  # (1: the function that calls warnings.warn)
    while frame is not None and frame.f_code.co_filename.startswith(ours):
        frame, level = frame.f_back, level + 1
    return level


def _mend_damaged_cache(dispatcher) -> None:
    """An on-disk entry of ``dispatcher`` that cannot be read back (a truncated or garbage
    ``.nbi``/``.nbc``, as after a full disk or a power loss) is discarded with a
    :class:`~srctrans.errors.CacheWarning` and the function compiled again, rather than
    failing that function in every later process; one that cannot be written leaves the
    function compiled, uncached. (Runs under the file's lock, as every compile does.)"""
    cache = dispatcher._cache
    load, save = cache.load_overload, cache.save_overload

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except OSError:  # not readable (permissions ...): compiled as if not cached; a save says why
            return None
        except Exception as err:  # noqa: BLE001 - whatever unpickling a damaged file raises
            _discard(cache, err)
            return None

    def save_overload(sig, data):
        try:
            try:
                save(sig, data)
            except OSError:  # a full disk, a folder not writable: the index is as it was
                raise
            except Exception as err:  # noqa: BLE001 - the index it adds the entry to is damaged
                _discard(cache, err)
                save(sig, data)
        except Exception as err:  # noqa: BLE001
            warnings.warn(
                f"Numba could not save compiled code in {cache.cache_path} ({type(err).__name__}: {err}); "
                "it runs, and is compiled again in the next process",
                CacheWarning,
                stacklevel=2,
            )

    cache.load_overload = load_overload
    cache.save_overload = save_overload


def _discard(cache, err: Exception) -> None:
    """Remove the index of ``cache``'s function and its data files."""
    index = Path(cache._cache_file._index_path)
    doomed = [index, *index.parent.glob(glob.escape(index.name[: -len(".nbi")]) + ".*.nbc")]
    for path in doomed:
        with contextlib.suppress(OSError):
            path.unlink()
    warnings.warn(
        f"discarded a damaged Numba cache entry {index} ({type(err).__name__}: {err}); compiling the function again",
        CacheWarning,
        stacklevel=2,
    )


# Which of our overload modules a generated file needs, judged from its text (importing them
# all costs ~0.15 s of first-call latency that most small functions do not need).
_NEEDS = {
    "overloads": re.compile(
        r"\b(sum|prod|mean|std|var|max|amax|min|amin|all|any|argmax|argmin|norm|einsum|tensordot|"
        r"squeeze|tile|stack|concatenate|hstack|vstack|array|at|matmul|dot|repeat|diff|roll|diagonal|pad|"
        r"cholesky|atleast_1d|atleast_2d|atleast_3d|nansum|nanmean|nanmax|nanmin|median|rot90|rollaxis|"
        r"column_stack|multi_dot|fix|frexp|full|cumprod|lstsq|sort|argsort|real_if_close|gradient|select|"
        r"inv|det|slogdet|solve|matrix_power|inner)\b|@|=\s*\["  # (=\s*\[: a list, which may index an array)
    ),
    "runtime_overloads": re.compile(r"\bsrctrans\.runtime\b|\brt\.|\bstop_gradient\b"),
    "random_overloads": re.compile(r"\brandom\b"),
    "batching_overloads": re.compile(r"\brt\.(batch_|prange\b)"),
    "forward_overloads": re.compile(r"\brt\.(cholesky_jvp|pad_tangent)\b"),
    "scipy_overloads": re.compile(r"\bscipy\b|\bi0\b|\brt\.(jv|yv|yn|iv|ive|kv|kve|gammaln|erf|hyp1f1|hyp2f1|zeta|solve_sylvester|lu_jvp|lu_grad)\b"),
    "matrix_exponential": re.compile(r"\bexpm\b"),
}


def _register_overloads(text: str) -> None:
    import importlib

    for module, pattern in _NEEDS.items():
        if pattern.search(text):
            importlib.import_module(f"{__package__}.{module}")


def recursive_reach(text: str, functions: list[str]) -> set[str]:
    """The functions of ``functions`` (defined in the module ``text``) that call themselves,
    directly or through others, or call such a function."""
    names = set(functions)
    calls: dict[str, set[str]] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            calls[node.name] = {
                c.func.id
                for c in ast.walk(node)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in names
            }

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(calls.get(start, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(calls.get(name, ()))
        return seen

    reached = {name: reach(name) for name in calls}
    cyclic = {name for name, r in reached.items() if name in r}
    return {name for name, r in reached.items() if name in cyclic or r & cyclic}


def compile_module(
    path: str | Path,
    module_name: str,
    functions: list[str],
    entry: str,
    bound: dict[str, Any],
    *,
    lock: Callable[[], ContextManager],
    parallel: bool = False,
    fastmath: bool = False,
    cache: bool = True,
    boundscheck: bool = True,
):
    """Compile the generated file at ``path``; returns the entry function's dispatcher."""
    path = str(path)
    text = Path(path).read_text()
    _register_overloads(text)
    module = load_module(Path(path), module_name, bound)
    pyfuncs = {name: module.__dict__[name] for name in functions}
    uncached = recursive_reach(text, functions) if cache else set()
    dispatchers = {}
    for name, fn in pyfuncs.items():
        jitted = numba.njit(
            pipeline_class=compile_budget.pipeline_class(),
            cache=cache and name not in uncached,
            error_model="numpy",
            parallel=parallel and name == entry,
            fastmath=fastmath,
            boundscheck=boundscheck,
        )(fn)
        _guard(jitted, path, lock)
        if cache and name not in uncached:
            _mend_damaged_cache(jitted)
        dispatchers[name] = jitted
    by_id = {id(fn): dispatchers[name] for name, fn in pyfuncs.items()}
    for key, value in list(module.__dict__.items()):
        if isinstance(value, types.FunctionType) and id(value) in by_id:
            module.__dict__[key] = by_id[id(value)]
    return dispatchers[entry]
