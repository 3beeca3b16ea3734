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
# calls that return their argument itself when it is an array (a new array when it is a list)
MAYBE_VIEW_CALLS = frozenset({"asarray", "asanyarray", "ascontiguousarray", "asfortranarray"})


def view_base(value: cst.BaseExpression) -> str | None:
    """The array ``value`` may be a view of (``y[1:3]``, ``y.T``, ``np.reshape(y, s)``), if any."""
    if isinstance(value, (cst.Subscript, cst.Attribute)) and isinstance(value.value, cst.Name):
        if isinstance(value, cst.Attribute) and value.attr.value != "T":
            return None
        return value.value.value
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in VIEW_CALLS | MAYBE_VIEW_CALLS
    ):
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


def view_roots(body: list) -> dict[str, str]:
    """Each name assigned another name or a view of one (``Y = X``, ``row = X[i]``, ``W = X.T``),
    mapped to the array at the end of that chain (``X``), over every assignment of the function."""
    parent: dict[str, str] = {}

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            target = n.targets[0].target
            base = n.value.value if isinstance(n.value, cst.Name) else view_base(n.value)
            if isinstance(target, cst.Name) and base is not None and base != target.value:
                parent.setdefault(target.value, base)

    for stmt in body:
        stmt.visit(V())
    roots: dict[str, str] = {}
    for name in parent:
        root, seen = name, {name}
        while root in parent and parent[root] not in seen:
            root = parent[root]
            seen.add(root)
        roots[name] = root
    return roots


def view_check_bases(body: list, params) -> dict[int, str | None]:
    """For each ``name op= ...`` (by ``id``) on a name some statement assigns a possible view
    (``row = X[i]``, ``a, b = X``): the one array to compare ``name`` with before that line, at
    run time; None where no one array can be named safely there (views of several arrays, an
    array assigned more than once, or one assigned later than that line)."""
    view_of: dict[str, list[tuple[str, int]]] = {}  # name -> (base, index of the top-level statement)
    assigned: dict[str, int] = {}
    top: dict[str, int] = {}  # name -> index of a top-level statement assigning it
    sites: list[tuple[int, str, int]] = []

    def count(target: cst.BaseExpression, k: int, at_top: bool) -> None:
        if isinstance(target, cst.Name):
            assigned[target.value] = assigned.get(target.value, 0) + 1
            if at_top:
                top[target.value] = k
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                count(el.value, k, at_top)
        elif isinstance(target, cst.StarredElement):
            count(target.value, k, at_top)

    class V(cst.CSTVisitor):
        def __init__(self, k: int, at_top: bool) -> None:
            self.k, self.at_top = k, at_top

        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                count(t.target, self.k, self.at_top)
            target = n.targets[0].target
            base = view_base(n.value)
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(n.value, cst.Name):
                base = n.value.value  # a, b = X: the rows of X
                names = [el.value.value for el in target.elements if isinstance(el.value, cst.Name)]
            else:
                names = [target.value] if isinstance(target, cst.Name) else []
            if base is not None:
                for name in names:
                    view_of.setdefault(name, []).append((base, self.k))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            if isinstance(n.target, cst.Name):
                count(n.target, self.k, False)
                sites.append((id(n), n.target.value, self.k))

        def visit_For(self, n: cst.For) -> None:
            count(n.target, self.k, False)

    for k, stmt in enumerate(body):
        stmt.visit(V(k, isinstance(stmt, cst.SimpleStatementLine)))
    found: dict[int, str | None] = {}
    for sid, name, k in sites:
        bases = {b for b, j in view_of.get(name, ()) if j <= k}  # (a later top-level statement cannot reach it)
        if not bases:
            continue
        base = next(iter(bases)) if len(bases) == 1 else None
        if base is not None and not (
            (base in params and base not in assigned)
            or (assigned.get(base) == 1 and top.get(base, k) < k)
        ):
            base = None
        found[sid] = base
    return found
