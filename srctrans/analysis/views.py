"""Which names may share an array with another name: views and writes in place, by source.

``row = X[i]``, ``Y = X.T`` and ``Z = np.reshape(X, s)`` may make ``row``, ``Y`` and ``Z``
views of ``X``: a later ``row += v`` or ``row[0] = v`` changes ``X`` too. A
transformation that turns the update into a new value (reverse and forward mode), or
that gives ``row`` an array of its own (vmap copies an unbatched value to batch it),
would lose that change; these helpers tell it where to refuse or check.

Reverse and forward mode read one :class:`ArrayFacts` (:func:`array_facts`); A-normal form
and vmap read :func:`written_in_place` and :func:`view_roots`. A user function's call may
return a view of an argument too (:func:`returned_views` reads the function's source). Which
NumPy operations return views is data, in :mod:`srctrans.rules.memory`.
"""

from __future__ import annotations

import threading
import types
from dataclasses import dataclass

import libcst as cst

from ..rules.memory import MAYBE_VIEW_RESULTS, NEW_ARRAYS, VIEW_RESULTS, last_names
from .activity import names_in, targets_of

_CODE = cst.Module(body=[])

VIEW_CALLS = last_names(VIEW_RESULTS)
MAYBE_VIEW_CALLS = last_names(MAYBE_VIEW_RESULTS)  # the argument itself when it is an array


_NEW_ARRAY_CALLS = last_names(NEW_ARRAYS)
_MODULES = ("np", "numpy")


def new_array(value: cst.BaseExpression) -> bool:
    """Whether ``value`` is a new array for certain (arithmetic, a comparison, ``np.tanh(x)``,
    ``np.zeros(n)``, ``x.copy()``), which no other name shares. False where it may not be:
    anything else (``x.real``, ``np.flip(x)``, ``x.view()``, a call of yours) may be a view."""
    import numpy

    if isinstance(value, (cst.BinaryOperation, cst.Comparison)):
        return True
    if isinstance(value, cst.UnaryOperation):
        return not isinstance(value.operator, cst.Plus)  # (+x may be x itself)
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    if any(a.keyword is not None and a.keyword.value in ("out", "copy") for a in value.args):
        return False
    name, receiver = value.func.attr.value, value.func.value
    if isinstance(receiver, cst.Name) and receiver.value in _MODULES:
        ufunc = getattr(numpy, name, None)
        if isinstance(ufunc, numpy.ufunc):  # np.add(a, b, c): c itself (desugar passes out= so)
            return sum(1 for a in value.args if a.keyword is None) <= ufunc.nin
        return name in _NEW_ARRAY_CALLS
    if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value in _MODULES:
        return receiver.attr.value in _NEW_ARRAY_CALLS  # np.linalg.solve(a, b)
    return name == "copy" and not value.args


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


def view_check_bases(body: list, params, made_by_calls: dict[str, tuple[str, ...]] | None = None) -> dict[int, tuple[str, ...] | None]:
    """For each ``name op= ...`` (by ``id``) on a name some statement assigns a possible view
    (``row = X[i]``, ``a, b = X``, ``row = pick(X, i)`` with ``made_by_calls`` from
    :func:`call_views`): the arrays to compare ``name`` with before that line, at run time;
    None where they cannot be named safely there (views of several arrays by indexing, an
    array assigned more than once, or one assigned later than that line).

    An array of the function's own that nothing reads but the one line taking the view
    (``row = (Z * 2.0)[0]``, a temporary in A-normal form) needs no check: no one sees it change."""
    made_by_calls = made_by_calls or {}
    view_of: dict[str, list[tuple[str, int, bool]]] = {}  # name -> (base, top-level statement, taken there)
    called: dict[str, list[tuple[str, int, bool]]] = {}  # the same, for what a user function's call may return
    assigned: dict[str, int] = {}
    top: dict[str, int] = {}  # name -> index of a top-level statement assigning it
    sites: list[tuple[int, str, int]] = []
    fresh: set[str] = set()  # names assigned a new array for certain (see new_array)

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
                # a, b = X: the rows of X (of a tuple a call of yours returned: see below)
                base = None if n.value.value in made_by_calls else n.value.value
                names = [el.value.value for el in target.elements if isinstance(el.value, cst.Name)]
            else:
                names = [target.value] if isinstance(target, cst.Name) else []
            if isinstance(target, cst.Name) and new_array(n.value):
                fresh.add(target.value)
            if base is not None:
                for name in names:
                    view_of.setdefault(name, []).append((base, self.k, self.at_top))
            for name in targets_of(target) if isinstance(n.value, (cst.Call, cst.Name)) else ():
                for base in made_by_calls.get(name, ()):
                    called.setdefault(name, []).append((base, self.k, self.at_top))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            if isinstance(n.target, cst.Name):
                count(n.target, self.k, False)
                sites.append((id(n), n.target.value, self.k))

        def visit_For(self, n: cst.For) -> None:
            count(n.target, self.k, False)

    for k, stmt in enumerate(body):
        stmt.visit(V(k, isinstance(stmt, cst.SimpleStatementLine)))
    mentions = _mentions(body)

    def nameable(base: str, k: int) -> bool:
        return (base in params and base not in assigned) or (assigned.get(base) == 1 and top.get(base, k) < k)

    def unseen(base: str, at_top: bool) -> bool:  # an array of its own that only the line taking the view reads
        return at_top and base in fresh and assigned.get(base) == 1 and base in top and mentions.get(base) == 2

    found: dict[int, tuple[str, ...] | None] = {}
    for sid, name, k in sites:
        bases = {b for b, j, t in view_of.get(name, ()) if j <= k and not unseen(b, t)}  # (a later top-level statement cannot reach it)
        returned = {b for b, j, t in called.get(name, ()) if j <= k and b != name and not unseen(b, t)}
        if not bases and not returned:
            continue
        every = sorted(bases | returned)
        if len(bases) > 1 or not all(nameable(b, k) for b in every):
            found[sid] = None
        else:
            found[sid] = tuple(every)
    return found


def _mentions(body: list) -> dict[str, int]:
    """How many times each name is written in ``body`` (read or assigned)."""
    counts: dict[str, int] = {}

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            counts[n.value] = counts.get(n.value, 0) + 1

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)  # (not the attribute's own name)
            return False

    for stmt in body:
        stmt.visit(V())
    return counts


# --- views made by the user's own functions --------------------------------------------

_BUSY = threading.local()  # per thread: the functions whose returned views are being worked out


def _call_args(call: cst.Call, params: list[str]) -> dict[int, str]:
    """Position of each parameter given a plain name in ``call`` -> that name."""
    given: dict[int, str] = {}
    for k, arg in enumerate(call.args):
        if not isinstance(arg.value, cst.Name) or arg.star:
            continue
        if arg.keyword is None:
            given[k] = arg.value.value
        elif arg.keyword.value in params:
            given[params.index(arg.keyword.value)] = arg.value.value
    return given


def _params_of(fn) -> list[str]:
    import inspect

    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def returned_views(fn) -> frozenset[int]:
    """Positions of the parameters that user function ``fn`` may return, or return a view of
    (``return Z[i]``, ``return Z.T``, ``return Z``, either one of a returned tuple), directly or
    through the user functions it calls. The caller's name for the result then shares memory
    with its argument: ``row = pick(Z, 0); row *= 2.0`` changes ``Z``. A parameter the function
    assigns anew before it returns (``h = np.tanh(h)``) is not the caller's array any more.

    Worked out afresh for each outermost call (a global the function reads may have changed
    since), each function once within it; a function that calls itself sees no views of its
    own while its own are worked out."""
    fn = getattr(fn, "__srctrans_function__", fn)
    if isinstance(fn, types.MethodType):  # m.first(a, b): the call's arguments come after self
        return frozenset(k - 1 for k in returned_views(fn.__func__) if k > 0)
    if getattr(fn, "__code__", None) is None:
        return frozenset()
    busy = _BUSY.__dict__.setdefault("ids", set())
    if id(fn) in busy:
        return frozenset()
    outermost = not busy
    memo = _BUSY.__dict__.setdefault("memo", {})  # for one outermost call: each function read once
    if id(fn) in memo:
        return memo[id(fn)][1]
    busy.add(id(fn))
    try:
        found = _returned_views(fn)
    except Exception:  # its own transformation reports any problem with its source
        found = frozenset()
    finally:
        busy.discard(id(fn))
    memo[id(fn)] = (fn, found)  # (holding fn keeps its id from being reused meanwhile)
    if outermost:
        memo.clear()
    return found


def _returned_views(fn) -> frozenset[int]:
    from ..capture import capture
    from ..parse import parse_function
    from .resolve import is_user_function, lookup

    node = parse_function(capture(fn)).node
    params = [p.name.value for p in node.params.params]
    if isinstance(node, cst.Lambda):  # one expression, returned
        node = cst.FunctionDef(cst.Name("_"), node.params, cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(node.body)])]))
    cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ()), strict=False))

    def callee(call: cst.Call):
        if not isinstance(call.func, cst.Name):
            return None
        found = lookup(fn, call.func.value, cells)
        return found[1] if found is not None and is_user_function(found[1]) else None

    body = list(node.body.body)
    may_view = call_views(body, callee)
    renewed = _renewed_params(body, params, may_view, callee)

    def sources(value: cst.BaseExpression) -> set[str]:
        """The names whose arrays ``value`` may be (or be a view of): none for a new array, the
        arguments a call of yours may return, and else, to be safe, every name it reads."""
        if isinstance(value, cst.Name):
            return {value.value}
        if isinstance(value, cst.IfExp):
            return sources(value.body) | sources(value.orelse)
        if isinstance(value, cst.BooleanOperation):
            return sources(value.left) | sources(value.right)
        if isinstance(value, (cst.Tuple, cst.List)):
            return set().union(*(sources(el.value) for el in value.elements)) if value.elements else set()
        if new_array(value):
            return set()
        if isinstance(value, cst.Call) and callee(value) is not None:
            fn_ = callee(value)
            given = _call_args(value, _params_of(getattr(fn_, "__srctrans_function__", fn_)))
            return {given[k] for k in returned_views(fn_) if k in given}
        if view_base(value) is not None:
            return {view_base(value)}
        return names_in(value)

    reach: dict[str, set[str]] = {p: set() if p in renewed else {p} for p in params}  # name -> names it may share memory with
    for n in _assignments(body):
        for t in n.targets:
            for name in targets_of(t.target):
                reach.setdefault(name, set()).update(sources(n.value) - {name})
    changed = True
    while changed:  # close over chains (a = Z[0]; b = a.T)
        changed = False
        for bases in reach.values():
            more = set().union(*(reach.get(b, set()) for b in bases)) - bases
            if more:
                bases |= more
                changed = True
    found: set[str] = set()

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Return(self, n: cst.Return) -> None:
            if n.value is not None:
                for b in sources(n.value):
                    found.update(reach.get(b, {b}))

    node.visit(Returns())
    return frozenset(k for k, p in enumerate(params) if p in found)


def _renewed_params(body: list, params: list[str], may_view: dict[str, tuple[str, ...]], callee) -> set[str]:
    """Parameters a top-level statement assigns a value that is not their own array nor a view of it
    (``h = np.tanh(h)``, ``x = np.copy(x)``) before any ``return``: the caller's array is not returned
    through that name. (Views taken before that statement keep their own names.)"""
    renewed: set[str] = set()
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            if _has_return(stmt):
                break
            continue
        if any(isinstance(small, cst.Return) for small in stmt.body):
            break
        for small in stmt.body:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                continue
            target = small.targets[0].target
            if not isinstance(target, cst.Name) or target.value not in params:
                continue
            p = target.value
            value = small.value
            yours = isinstance(value, cst.Call) and callee(value) is not None and p not in may_view
            if new_array(value) or yours:
                renewed.add(p)  # (a new array, or what a function of yours returns that is none of its arguments)
            else:
                renewed.discard(p)  # (its own array, a view, or what may be one: h.real, np.flip(h))
    return renewed


def _has_return(stmt: cst.CSTNode) -> bool:
    class V(cst.CSTVisitor):
        found = False

        def visit_Return(self, n: cst.Return) -> None:
            V.found = True

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

    stmt.visit(V())
    return V.found


def call_views(body: list, resolve) -> dict[str, tuple[str, ...]]:
    """Names assigned the result of a call of a user function that may return one of its
    arguments or a view of one (``row = pick(Z, 0)`` where ``pick`` returns ``Z[i]``), mapped to
    the names of those arguments. ``resolve(call)`` gives the user function called, else None."""
    found: dict[str, tuple[str, ...]] = {}

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            if not isinstance(n.value, cst.Call):
                return
            fn = resolve(n.value)
            if fn is None:
                return
            viewed = returned_views(fn)
            if not viewed:
                return
            given = _call_args(n.value, _params_of(getattr(fn, "__srctrans_function__", fn)))
            bases = tuple(given[k] for k in sorted(viewed) if k in given)
            for t in n.targets:
                for name in targets_of(t.target):
                    if bases:
                        found[name] = tuple(dict.fromkeys(found.get(name, ()) + bases))

    for stmt in body:
        stmt.visit(V())
    changed = bool(found)
    while changed:  # t1 = split(Z); a, b = t1 (A-normal form): a and b too
        changed = False
        for n in _assignments(body):
            if isinstance(n.value, cst.Name) and n.value.value in found:
                for t in n.targets:
                    for name in targets_of(t.target):
                        merged = tuple(dict.fromkeys(found.get(name, ()) + found[n.value.value]))
                        if merged != found.get(name):
                            found[name] = merged
                            changed = True
    return found


def _assignments(body: list) -> list[cst.Assign]:
    found: list[cst.Assign] = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            found.append(n)

    for stmt in body:
        stmt.visit(V())
    return found


@dataclass
class ArrayFacts:
    """What a function's statements say about which names share arrays: one analysis, which
    reverse and forward mode read alike."""

    mutated: set[str]  # arrays written in place through an index (a view of one counts too)
    aliased: set[str]  # names that share a value with another name where that matters
    views: dict[str, str]  # names that may be views of another array -> that array
    certain_views: set[str]  # names assigned a view for certain (a = y[1:]): refused in a += v
    view_checks: dict[int, tuple[str, ...] | None]  # see view_check_bases
    own_updates: frozenset[int] = frozenset()  # see own_array_updates: never refused nor checked


def array_facts(body: list, params: tuple[str, ...], resolve) -> ArrayFacts:
    """The :class:`ArrayFacts` of ``body``; ``resolve(func)`` gives the object a call's function names."""
    made_by_calls = user_call_views(body, resolve)
    mutated, aliased, views = mutation_facts(body, params, made_by_calls)
    own = own_array_updates(body)
    checks = {k: v for k, v in view_check_bases(body, params, made_by_calls).items() if k not in own}
    return ArrayFacts(mutated, aliased, views, certain_views(body), checks, own)


def own_array_updates(body: list) -> frozenset[int]:
    """The ids of the top-level updates ``y op= v`` and writes ``y[i] = v`` where ``y`` holds,
    at that point, an array no other name shares: the last top-level statement that bound
    ``y`` gave it a new array (``y = y * a``, ``y = np.sin(t)``, see :func:`new_array`), and
    no statement since has let another name see it (``z = y``, ``z = y[1:]``, ``f(y)``,
    anything in a compound statement). ``y = a[1:]; y = y * 2.0; y += 1.0``: the update is
    of ``y``'s own array, whatever ``y`` was before."""
    own: set[str] = set()
    found: set[int] = set()
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            own -= names_in(stmt)  # (a loop or a branch may bind or share anything it names)
            continue
        for small in stmt.body:
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
                if small.target.value in own:
                    found.add(id(small))
                own -= names_in(small.value)
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                    if target.value.value in own:
                        found.add(id(small))
                    continue  # (the values stored are copied into y's array)
                own -= names_in(small.value)
                if isinstance(target, cst.Name):
                    if new_array(small.value):
                        own.add(target.value)
                    else:
                        own.discard(target.value)
                else:
                    own -= names_in(target)
            else:
                own -= names_in(small)
    return frozenset(found)


def user_call_views(body: list, resolve) -> dict[str, tuple[str, ...]]:
    """Names assigned what a call of a user function may return of its arguments (``row =
    pick(Z, 0)``, where ``pick`` returns ``Z[i]``) -> those arguments: such a name may be a view."""
    from .resolve import is_user_function

    def callee(call: cst.Call):
        obj = resolve(call.func)
        method = isinstance(obj, types.MethodType) and is_user_function(obj.__func__)  # m.first(a, b)
        return obj if method or is_user_function(obj) else None

    return call_views(body, callee)


def mutation_facts(
    body: list, params: tuple[str, ...], made_by_calls: dict[str, tuple[str, ...]] | None = None
) -> tuple[set[str], set[str], dict[str, str]]:
    """(arrays written in place through an index, names that share a value with another name,
    names that may be views of another array -> that array). ``made_by_calls``: names a user
    function's call may return (a view of) an argument into -> those arguments (see
    :func:`~srctrans.analysis.views.call_views`).

    A view of an array written in place changes with it: it counts as written too. ``z = y``
    among the top-level statements shares a value harmlessly when neither name (nor a view
    of either) is written in place afterwards, as ``x_bar = y_bar`` at the end of an adjoint,
    or before a later top-level statement binds either name anew (``y = a; y = y * y;
    y /= 3.0``: from ``y = y * y`` on, ``y`` has an array of its own).
    """
    mutated: set[str] = set()
    copies: set[str] = set()
    views: dict[str, str] = {}
    pairs: list[tuple[int | None, set[str]]] = []  # (top-level statement index or None, names)

    exchanged: list[set[str]] = []  # names a tuple passes between (t = (a, b); b, a = t)

    class V(cst.CSTVisitor):
        def __init__(self, at: int | None) -> None:
            self.at = at

        def visit_Assign(self, n: cst.Assign) -> None:
            target = n.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(n.value, cst.Name):
                exchanged.append({*targets_of(target), n.value.value})
            elif isinstance(target, cst.Name) and isinstance(n.value, (cst.Tuple, cst.List)):
                exchanged.append({target.value} | {el.value.value for el in n.value.elements if isinstance(el.value, cst.Name)})
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                mutated.add(target.value.value)
            if isinstance(target, cst.Name) and isinstance(n.value, cst.Name):
                pairs.append((self.at, {target.value, n.value.value}))
            if isinstance(target, cst.Name):
                base = view_base(n.value)
                if base is not None:
                    views[target.value] = base

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            if isinstance(n.target, cst.Subscript) and isinstance(n.target.value, cst.Name):
                mutated.add(n.target.value.value)
            elif isinstance(n.target, cst.Name):
                updated.add(n.target.value)  # y *= 2.0 updates an array in place

    written: list[set[str]] = []  # arrays written or updated in place by each top-level statement
    for k, stmt in enumerate(body):
        before = set(mutated)
        mutated.clear()
        updated: set[str] = set()
        stmt.visit(V(k if isinstance(stmt, cst.SimpleStatementLine) else None))
        written.append(mutated | updated)
        mutated |= before

    def reaches(name: str, pair: set[str]) -> bool:
        seen = set()
        while name not in pair and name in views and name not in seen:
            seen.add(name)
            name = views[name]
        return name in pair

    rebound = [_rebound(stmt) for stmt in body]  # names each top-level statement binds anew
    numbers = scalar_names(body)
    for at, pair in pairs:
        if pair & numbers:  # pos = d with d = x.shape[1]: a Python number, never an array to share
            continue
        if at is None:  # (in a block: shared for the whole function)
            copies.update(pair)
            continue
        viewed = False  # a view of the shared array, which outlives a new binding of either name
        for k in range(at + 1, len(body)):
            if any(reaches(w, pair) for w in written[k]):
                copies.update(pair)
                break
            viewed = viewed or _shares(body[k], pair)
            if rebound[k] & pair and not viewed:  # y = a; y = y * y: y has an array of its own from here on
                break
    for name, bases in (made_by_calls or {}).items():
        views.setdefault(name, bases[0])
    changed = True
    while changed:
        changed = False
        for view, base in views.items():
            if base in mutated and view not in mutated:
                mutated.add(view)
                changed = True
        for view, bases in (made_by_calls or {}).items():
            if view not in mutated and mutated.intersection(bases):
                mutated.add(view)
                changed = True
        for group in exchanged:  # cur, nxt = nxt, cur: each may hold the array written in place
            if group & mutated and not group <= mutated:
                mutated |= group
                changed = True
    return mutated, copies, views


_SCALAR_ATTRIBUTES = frozenset({"ndim", "size"})
_SCALAR_CALLS = frozenset({"len", "int", "float", "bool", "round", "abs", "min", "max"})


def scalar_names(body: list) -> set[str]:
    """Names every assignment of which gives a Python number for certain: a literal, ``len(x)``,
    ``x.shape[k]``, ``x.ndim``, a ``range`` loop's variable, arithmetic of those. ``pos = d;
    pos += 1`` then rebinds ``pos`` to a new number, it shares no array with ``d``."""
    values: dict[str, list] = {}

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    values.setdefault(t.target.value, []).append(n.value)
                else:
                    for name in targets_of(t.target):
                        values.setdefault(name, []).append(None)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            if isinstance(n.target, cst.Name):
                values.setdefault(n.target.value, []).append(n.value)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if isinstance(n.target, cst.Name):
                values.setdefault(n.target.value, []).append(n.value)

        def visit_For(self, n: cst.For) -> None:
            ranged = (
                isinstance(n.iter, cst.Call) and isinstance(n.iter.func, cst.Name) and n.iter.func.value == "range"
            )
            for name in targets_of(n.target):
                values.setdefault(name, []).append("range" if ranged and isinstance(n.target, cst.Name) else None)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            if isinstance(n.target, cst.Name):
                values.setdefault(n.target.value, []).append(None)

    for stmt in body:
        stmt.visit(V())

    found: set[str] = set()
    shapes = {  # t1 = x.shape (the normal form's x.shape[0]: t1 = x.shape; n = t1[0])
        name
        for name, assigned in values.items()
        if all(isinstance(v, cst.Attribute) and v.attr.value == "shape" for v in assigned)
    }

    def number(expr) -> bool:
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.Name):
            return expr.value in found
        if isinstance(expr, cst.UnaryOperation):
            return number(expr.expression)
        if isinstance(expr, cst.BinaryOperation):
            return number(expr.left) and number(expr.right)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in _SCALAR_ATTRIBUTES
        if isinstance(expr, cst.Subscript):  # x.shape[1]
            shape = expr.value
            return (
                (
                    (isinstance(shape, cst.Attribute) and shape.attr.value == "shape")
                    or (isinstance(shape, cst.Name) and shape.value in shapes)
                )
                and len(expr.slice) == 1
                and isinstance(expr.slice[0].slice, cst.Index)
            )
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _SCALAR_CALLS:
            return expr.func.value == "len" or all(number(a.value) for a in expr.args)
        return False

    changed = True
    while changed:
        changed = False
        for name, assigned in values.items():
            if name not in found and all(v == "range" or (v is not None and v != "range" and number(v)) for v in assigned):
                found.add(name)
                changed = True
    return found


def _shares(stmt, names: set[str]) -> bool:
    """Whether ``stmt`` may let a name of its own see the array of one of ``names``
    (``row = y[1:]``, ``z = y``, ``w = f(y)``, anything in a compound statement)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return bool(names_in(stmt) & names)
    for small in stmt.body:
        if isinstance(small, cst.Assign) and not isinstance(small.targets[0].target, cst.Subscript):
            if names_in(small.value) & names and not new_array(small.value):
                return True
        elif not isinstance(small, (cst.Assign, cst.AugAssign)) and names_in(small) & names:
            return True
    return False


def _rebound(stmt) -> set[str]:
    """The names a top-level simple statement binds to a new value (``y = y * y``, ``a, b = t``;
    not ``y += v``, which may update ``y``'s array); none for a compound statement (which may
    not run its body)."""
    found: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    if isinstance(t.target, (cst.Name, cst.Tuple, cst.List)):
                        found |= set(targets_of(t.target))
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                found.add(small.target.value)
    return found


def certain_views(body: list) -> set[str]:
    """Names assigned a view of another array for certain (``a = y[1:]``, ``y.T``, ``y.reshape(s)``):
    ``a += v`` writes into that array, which a transformation's ``a = a + v`` would not."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            target, value = n.targets[0].target, n.value
            if not isinstance(target, cst.Name) or view_base(value) is None:
                return
            if isinstance(value, cst.Call) and value.func.attr.value in MAYBE_VIEW_CALLS:
                return  # np.asarray(a_list) is a new array
            if isinstance(value, cst.Subscript):
                parts = [el.slice for el in value.slice]
                if not any(
                    isinstance(p, cst.Slice) or (isinstance(p, cst.Index) and isinstance(p.value, (cst.Ellipsis, cst.Name)) and _CODE.code_for_node(p.value) in ("...", "None"))
                    for p in parts
                ):
                    return  # y[i]: a number from a vector, or a row of a matrix (not known here)
            found.add(target.value)

    for stmt in body:
        stmt.visit(V())
    return found
