"""What every public transformation shares: one generated file per specialization, and pytrees at the boundary.

A :class:`Specialization` is one generated file (one set of static values and pytree
structures) and its entry points, loaded and compiled on first use. An argument that is a
tuple, list, dict or namedtuple is flattened at every call; its structure picks the
specialization, and the generated function takes its leaves as parameters
(``params["W"]`` -> ``params_W``, :func:`leaf_names`). Returned lists and dicts are rebuilt from
the tuples the generated function returns (:func:`rebuild`; :func:`unbuild` the other way, for
cotangents). A compile failure becomes a :class:`~srctrans.errors.CompileError` at the user's
line (:func:`compile_error`).

Used by :mod:`srctrans.api` (jit, grad, jvp, jacobians), :mod:`srctrans.batching.api` (vmap) and
:mod:`srctrans.parallel` (pmap).
"""

from __future__ import annotations

import re
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backend import jit_module
from .cache import file_lock, load_module, origin_map
from .errors import CompileError
from .tree import DictKey, PyTreeDef, SequenceKey, keystr, tree_flatten_with_path

if TYPE_CHECKING:  # pragma: no cover
    from .variant import Generated


def normalize_argnums(value, name: str) -> tuple:
    """``argnums``/``static_argnums`` as a tuple (one int or str, or a sequence of them)."""
    if isinstance(value, (int, str)):
        value = (value,)
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, a str or a sequence of them, got {value!r}") from None


class Specialization:
    """One generated file (one set of static values and pytree structures) and its entry points.

    ``trees`` maps each pytree argument to ``(treedef, leaf parameter names)``; ``layout``
    says, for each differentiated argument, how its gradient is made from the flat ones
    the generated function returns: ``"one"``, ``None`` (a ``None`` argument) or a treedef.
    """

    def __init__(
        self,
        gen: Generated,
        options: dict[str, Any],
        trees: dict[str, tuple[PyTreeDef, list[str]]] | None = None,
        layout: list[tuple[str, Any]] | None = None,
    ) -> None:
        self.gen = gen
        self.options = options
        self.trees = trees or {}
        self.layout = layout or []
        self.total = sum(1 if kind == "one" else 0 if kind is None else kind.num_leaves for _, kind in self.layout)
        self.plain = all(kind == "one" for _, kind in self.layout)  # one gradient per argument, as returned
        params = gen.meta["params"]
        self.arity = sum(1 for m in params if m[0] in ("arg", "attr", "leaf"))
        self.returns = next((m[1] for m in params if m[0] == "returns"), None)
        self._python = None
        self._compiled = None
        self._lock = threading.Lock()
        self._origins: dict[int, tuple[str, int, str]] | None = None

    @property
    def python(self) -> Callable:
        if self._python is None:
            with file_lock(self.gen.path):
                self.gen.ensure_file()  # written again if it went since it was generated
                module = load_module(self.gen.path, self.gen.module_name + "_py", self.gen.bound)
            self._python = getattr(module, self.gen.entry)
        return self._python

    @property
    def compiled(self) -> Callable:
        if self._compiled is None:
            with self._lock:
                if self._compiled is None and self.options.get("target") == "cuda":
                    path = self.gen.path
                    self._compiled = jit_module("cuda").compile_module(
                        path, self.gen.module_name, self.gen.entry, self.gen.bound, lock=lambda: file_lock(path)
                    )
                elif self._compiled is None:
                    compile_module = jit_module("cpu").compile_module
                    path = self.gen.path
                    with file_lock(path):  # the file is as generated while Numba reads it
                        self.gen.ensure_file()
                        self._compiled = compile_module(
                            path,
                            self.gen.module_name,
                            self.gen.meta["functions"],
                            self.gen.entry,
                            self.gen.bound,
                            lock=lambda: file_lock(path),
                            parallel=self.options["parallel"],
                            fastmath=self.options["fastmath"],
                            cache=self.options["cache"],
                            boundscheck=self.options["boundscheck"],
                        )
        return self._compiled

    def rebuild(self, raw: Any) -> Any:
        """The function's result: returned lists and dicts rebuilt from the generated tuples."""
        return raw if self.returns is None else rebuild(self.returns, raw)

    def rebuild_aux(self, aux: Any) -> Any:
        """``aux`` of a ``has_aux`` function, which returned ``(value, aux)``."""
        struct = self.returns
        if isinstance(struct, dict) and len(struct.get("tuple", ())) == 2:
            return rebuild(struct["tuple"][1], aux)
        return aux

    def group(self, grads: Any) -> tuple:
        """The generated function's flat gradients, one per differentiated argument, in its structure."""
        flat = (grads,) if self.total == 1 else tuple(grads)
        if self.plain:
            return flat
        out: list[Any] = []
        i = 0
        for _, kind in self.layout:
            if kind is None:
                out.append(None)
            elif kind == "one":
                out.append(flat[i])
                i += 1
            else:
                out.append(kind.unflatten(flat[i : i + kind.num_leaves]))
                i += kind.num_leaves
        return tuple(out)

    def leaf_path(self, name: str, index: int) -> str:
        """``params['W']``: how the user writes leaf ``index`` of pytree argument ``name``."""
        treedef = self.trees[name][0]
        path = tree_flatten_with_path(treedef.unflatten(range(treedef.num_leaves)))[0][index][0]
        return name + keystr(path)

    def origins(self) -> dict[int, tuple[str, int, str]]:
        if self._origins is None:
            self._origins = origin_map(self.gen.text)
        return self._origins

    def user_location(self, line: int | None) -> tuple[str, int, str] | None:
        """The user's (file, line, text) for a generated line, full path when known."""
        if line is None:
            return None
        found = self.origins().get(line)
        if found is None:
            return None
        file, user_line, text = found
        return self.gen.meta.get("sources", {}).get(file, file), user_line, text

    def explain(self, err: BaseException) -> None:
        """Add a note naming the user's line to an exception raised in the generated file."""
        if hasattr(err, "locate"):  # raised by a check in generated code: it names the user's line
            err.locate(self.gen.meta.get("sources", {}))
            return
        tb = err.__traceback__
        where = None
        target = str(self.gen.path)
        cuda = target[:-3] + ".cuda.py" if self.options.get("target") == "cuda" else None
        origins = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == target:
                where, origins = tb.tb_lineno, None
            elif tb.tb_frame.f_code.co_filename == cuda:  # the file that ran on the GPU: its own origin comments
                where, origins = tb.tb_lineno, cuda
            tb = tb.tb_next
        if origins is not None:
            target = origins
            found = origin_map(Path(origins).read_text()).get(where)
            loc = None if found is None else (self.gen.meta.get("sources", {}).get(found[0], found[0]), found[1], found[2])
        else:
            loc = self.user_location(where)
            if loc is None and str(err).startswith("grad requires a scalar output"):  # compiled: the seed's line
                seeds = [n for n, text in enumerate(self.gen.text.splitlines(), 1) if "rt.grad_seed(" in text]
                if len(seeds) == 1:
                    where = seeds[0]
                    loc = self.user_location(where)
        if not hasattr(err, "add_note"):  # pragma: no cover - Python 3.10
            return
        if loc is not None:
            file, line, text = loc
            err.add_note(f"in your code: {file}:{line}  {text}\n(generated file: {target}:{where})")
        elif self._compiled is not None:
            err.add_note(
                f"raised by compiled code from {target}; to see the line, run it uncompiled with "
                "srctrans.config.update('disable_jit', True) or SRCTRANS_DISABLE_JIT=1"
            )
            if isinstance(err, NotImplementedError) and str(err) == "incompatible shape for array":
                err.add_note(  # Numba's reshape of an array that is not C-contiguous (a.T.reshape(2, -1))
                    "Numba reshapes only C-contiguous arrays (NumPy copies the others): write "
                    "np.ascontiguousarray(a.T).reshape(...) for a transposed or strided a"
                )


# names generated code may use besides the user's: numpy (under any name desugar picks), runtime helpers
RESERVED = frozenset({"np", "numpy", "np_", "np__", "rt", "math"})


def code_names(code: types.CodeType) -> set[str]:
    """Every name a function's code (nested comprehensions included) uses."""
    names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars) | set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names


def _key_text(key: Any) -> str:
    raw = key.idx if isinstance(key, SequenceKey) else key.key if isinstance(key, DictKey) else key.name
    return re.sub(r"\W", "_", str(raw))


def leaf_names(name: str, treedef: PyTreeDef, taken: set[str]) -> list[str]:
    """Parameter names for the leaves of argument ``name``, after their paths.

    ``params["W"]`` -> ``params_W``, ``params[0][1]`` -> ``params_0_1``; a name in ``taken``
    gets a number (``params_W_1``). The names are added to ``taken``.
    """
    paths = [p for p, _ in tree_flatten_with_path(treedef.unflatten(range(treedef.num_leaves)))[0]]
    out = []
    for i, path in enumerate(paths):
        base = "_".join([name, *(_key_text(k) for k in path)])
        if not base.isidentifier():
            base = f"{name}_leaf{i}"
        candidate, n = base, 0
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def rebuild(struct: Any, raw: Any) -> Any:
    """A returned value from the tuples the generated function gives (see :func:`srctrans.passes.leaves.results`)."""
    if struct == "*" or raw is None:
        return raw
    if struct is None:
        return None
    if "flat" in struct:  # one flat tuple of the leaves
        return _rebuild_flat(struct["flat"], iter(raw))
    ((kind, kids),) = struct.items()
    subs = [s for _, s in kids] if kind == "dict" else kids
    it = iter(raw)
    values = [None if s is None else rebuild(s, next(it)) for s in subs]
    if kind == "dict":
        return dict(zip((k for k, _ in kids), values))
    return values if kind == "list" else tuple(values)


def _rebuild_flat(struct: Any, leaves) -> Any:
    if struct == "*":
        return next(leaves)
    if struct is None:
        return None
    ((kind, kids),) = struct.items()
    subs = [s for _, s in kids] if kind == "dict" else kids
    values = [_rebuild_flat(s, leaves) for s in subs]
    if kind == "dict":
        return dict(zip((k for k, _ in kids), values))
    return values if kind == "list" else tuple(values)


def unbuild(struct: Any, value: Any, where: str = "cotangent") -> Any:
    """The inverse of :func:`rebuild`: a value shaped like the function's result (a cotangent)
    as the tuples the generated function works with; a structure that differs is a ``TypeError``."""
    if struct == "*" or struct is None:
        return value
    ((kind, kids),) = struct.items()
    if kind == "dict":
        if not isinstance(value, dict) or set(value) != {k for k, _ in kids}:
            raise TypeError(f"vjp: the {where} must be a dict with keys {[k for k, _ in kids]}, like the result")
        parts = [(value[k], s, f"{where}[{k!r}]") for k, s in kids]
    else:
        want = list if kind == "list" else tuple
        if not isinstance(value, (list, tuple)) or len(value) != len(kids):
            raise TypeError(f"vjp: the {where} must be a {want.__name__} of {len(kids)}, like the result")
        parts = [(v, s, f"{where}[{i}]") for i, (v, s) in enumerate(zip(value, kids))]
    return tuple(unbuild(s, v, w) for v, s, w in parts if s is not None)


def normalize_argnames(value) -> tuple[str, ...]:
    """``static_argnames`` as a tuple of parameter names."""
    names = (value,) if isinstance(value, str) else tuple(value)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"static_argnames must hold parameter names, got {n!r}")
    return names


def compile_error(spec: Specialization, err) -> CompileError:
    """Numba's refusal of a generated line as a CompileError at the user's line it came from."""
    loc = spec.user_location(err.generated_line)
    message = "Numba could not compile this line:\n" + err.summary
    hint = f"generated file: {err.generated_file}" + (f":{err.generated_line}" if err.generated_line else "")
    if loc is None:
        return CompileError(message, filename=err.generated_file, line=err.generated_line, hint=hint)
    file, line, text = loc
    col = None
    try:
        src = Path(file).read_text().splitlines()[line - 1]
        col = len(src) - len(src.lstrip())
    except (OSError, IndexError):
        src = text
    return CompileError(message, filename=file, line=line, col=col, source_line=src, hint=hint)
