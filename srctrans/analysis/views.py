"""Which names may share an array with another name: views and writes in place, by source.

``row = X[i]``, ``Y = X.T`` and ``Z = np.reshape(X, s)`` may make ``row``, ``Y`` and ``Z``
views of ``X``: a later ``row += v`` or ``row[0] = v`` changes ``X`` too. A
transformation that turns the update into a new value (reverse and forward mode), or
that gives ``row`` an array of its own (vmap copies an unbatched value to batch it),
would lose that change; these helpers tell it where to refuse or check.
"""

from __future__ import annotations

import libcst as cst

VIEW_CALLS = frozenset(
    {"reshape", "ravel", "transpose", "squeeze", "expand_dims", "swapaxes", "diagonal", "atleast_1d", "atleast_2d",
     "broadcast_to"}
)


def view_base(value: cst.BaseExpression) -> str | None:
    """The array ``value`` may be a view of (``y[1:3]``, ``y.T``, ``np.reshape(y, s)``), if any."""
    if isinstance(value, (cst.Subscript, cst.Attribute)) and isinstance(value.value, cst.Name):
        if isinstance(value, cst.Attribute) and value.attr.value != "T":
            return None
        return value.value.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in VIEW_CALLS:
        receiver = value.func.value
        if isinstance(receiver, cst.Name) and receiver.value not in ("np", "numpy"):
            return receiver.value  # y.reshape(...)
        if value.args and isinstance(value.args[0].value, cst.Name):
            return value.args[0].value.value  # np.reshape(y, ...)
    return None


def written_in_place(body: list) -> set[str]:
    """Names whose array some statement may change in place (``y[i] = v``, ``y += v``, ``y *= 2``)."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                if isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name):
                    found.add(t.target.value.value)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            target = n.target.value if isinstance(n.target, cst.Subscript) else n.target
            if isinstance(target, cst.Name):
                found.add(target.value)

    for stmt in body:
        stmt.visit(V())
    return found
