"""Rule tables, as data: derivatives (reverse and forward mode) and, later, batching.

Each table is keyed by the qualified name of the operation (``"numpy.sin"``);
entries are built by small constructors named after the kind of rule.
Transformations look rules up and never mention an operation by name.
"""


def fingerprint(transform_name: str) -> str:
    """A hash of the rule table a transformation reads (part of its files' dependency hash)."""
    import hashlib

    if transform_name in ("grad", "vjp"):
        from .derivatives import DERIVATIVES

        text = repr(sorted(DERIVATIVES.items()))
        return hashlib.sha1(text.encode()).hexdigest()[:16]
    if transform_name == "jvp":  # forward mode reads the same table, with its jvp= entries
        from .derivatives import DERIVATIVES

        text = repr(sorted((k, r, r.jvp) for k, r in DERIVATIVES.items()))
        return hashlib.sha1(text.encode()).hexdigest()[:16]
    if transform_name == "vmap":  # the batching rules are code: their text, and the rewrite's
        return _vmap_fingerprint()
    return ""


def object_named(key: str):
    """The object a rule key names (``numpy.linalg.inv`` -> the function); None for structural
    keys (``ndarray.T``, ``getitem``) and for names that do not import."""
    import importlib

    parts = key.split(".")
    if parts[0] not in ("numpy", "math", "builtins", "srctrans", "scipy"):
        return None
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


_NOT_YET = object()  # (imported_object: the module holding the name is not imported yet)


def imported_object(key: str):
    """What :func:`object_named` gives, from the modules imported so far, never importing one
    (looking a rule key up would import scipy.integrate and scipy.special for every program: a
    third of a second): ``_NOT_YET`` while the module holding the name is not imported."""
    import sys
    import types

    parts = key.split(".")
    if parts[0] not in ("numpy", "math", "builtins", "srctrans", "scipy"):
        return None
    for cut in range(len(parts) - 1, 0, -1):
        obj = sys.modules.get(".".join(parts[:cut]))
        if obj is None:
            continue
        for part in parts[cut:]:
            if isinstance(obj, types.ModuleType):  # (vars: a module's lazy __getattr__ would import)
                if part not in vars(obj):
                    return _NOT_YET
                obj = vars(obj)[part]
            else:
                obj = getattr(obj, part, None)
                if obj is None:
                    return None
        return obj
    return _NOT_YET


class KeysById:
    """A table's keys by the identity of the objects they name (aliases such as ``np.amax``
    resolve alike), of the modules imported so far: the user's code cannot hold a function of
    a module not imported, and the keys of modules imported later are added when they are."""

    def __init__(self, keys) -> None:
        roots = ("numpy", "math", "builtins", "srctrans", "scipy")
        self._pending = [(i, k) for i, k in enumerate(keys) if k.split(".")[0] in roots]
        self._found: dict[int, str] = {}
        self._order: dict[int, int] = {}  # of the key found for each object: the first in the table wins
        self._modules = -1

    def table(self) -> dict[int, str]:
        import sys

        if len(sys.modules) != self._modules:
            self._modules = len(sys.modules)
            waiting = []
            for i, key in self._pending:
                obj = imported_object(key)
                if obj is _NOT_YET:
                    waiting.append((i, key))
                elif obj is not None and self._order.get(id(obj), i + 1) > i:
                    self._found[id(obj)], self._order[id(obj)] = key, i
            self._pending = waiting
        return self._found


_VMAP_FINGERPRINT: list[str] = []


def _vmap_fingerprint() -> str:
    """The text of the batching rules and of the modules that write vmap files (read, not imported)."""
    import hashlib
    from pathlib import Path

    if not _VMAP_FINGERPRINT:
        root = Path(__file__).resolve().parent.parent
        parts = ["rules/batching.py", "analysis/axes.py", "batching/generate.py", "batching/loop.py", "batching/vectorize.py"]
        text = "".join((root / part).read_text() for part in parts)
        _VMAP_FINGERPRINT.append(hashlib.sha1(text.encode()).hexdigest()[:16])
    return _VMAP_FINGERPRINT[0]
