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
