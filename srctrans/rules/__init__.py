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
    return ""
