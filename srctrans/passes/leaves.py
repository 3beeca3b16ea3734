"""Leaves: pytree arguments come in as their leaves, pytree results go out as nested tuples.

Generated code only sees flat arrays and scalars (see docs/design.rst, "The normal form's contract"). The API
flattens each container argument (tuple, list, dict, namedtuple) at call time and the
generated function takes its leaves as separate parameters, named after their paths
(``params["W"]`` -> ``params_W``, ``params[0][1]`` -> ``params_0_1``). This pass rewrites
the function's reads of such a parameter to match. It runs on a function as written,
desugared, or in A-normal form; :func:`check_leaves` runs it on the user's own node so that
refusals carry the user's line and column.

Output contract of :func:`leaves` (and nothing else changes):

1. No container parameter is read any more. A *part* of one is the parameter itself or
   a constant-key read of a part: ``p["W"]``, ``p[0]``, ``p[-1]``, ``p[0]["b"]``, ``p.W``
   (a namedtuple field), or a name assigned once to a part (an *alias*, ``layer = p[0]``).
   A part that is a leaf becomes the leaf parameter's name; a part that is ``None``
   becomes ``None``; ``len(part)`` becomes its length, an integer.
2. ``a, (b, c) = part`` (nested tuple/list targets) becomes one assignment per target,
   in order: ``a = p_0``, ``b = p_1_0``, ``c = p_1_1``. So does a parallel assignment
   some of whose values read parts, ``W, b, s = p["W"], p["b"], 2.0`` (when no value reads
   a target, so the order cannot matter), also when an earlier pass put the display in a
   temporary that only this assignment reads (A-normal form: ``t3 = t1, t2`` then
   ``W, b = t3``). A temporary of an earlier pass assigned once to a part is an alias too.
   An alias's assignment is removed: its comments go to the next statement when that has
   none, and a block left empty holds ``pass``.
3. A call of a function of yours given parts (``predict(params, x)``) is a call of the
   name the ``specialize`` hook gives, with each part's leaves in its place
   (``predict_leaves(params_0, params_1, x)``): that function's version taking them as
   leaves (:data:`Specialize`). A constant slice of a part (``params[:-1]``) is a part. A
   loop over a part, or over ``enumerate`` of one, is written out once per entry, each copy
   beginning with ``target = part[k]`` (a target naming a container entry is renamed in all
   copies but the last, so each name is assigned once); loops with ``break``,
   ``continue`` or ``else``, or that assign their target, are not written out (rule 5).
4. A part made of tuples and lists alone (and its leaves) used as a whole value (passed to a
   function, returned, put in a display) is *rebuilt*: the function begins with one
   assignment per such part, a tuple display of its children, under the argument's own
   name for the whole argument (``params = (params_0, params_1)``) and a fresh name for a
   part of it, and the use reads that name. A container the function makes itself is an
   ordinary value for every transformation; so the rebuilt one is.
5. Any other use of a part that is a container raises the error built by ``error``:
   looping over it, a non-constant or missing key or slice bound, using a dict or
   namedtuple as a whole, unpacking a dict, writing into it or assigning to its name.

Output contract of :func:`results`: when a ``return`` gives (directly, or through a name
assigned once to a display and read only there) a list or dict display, every ``return``
gives the same structure, and each list/dict display on that path is a tuple display of
its values (dicts in sorted key order, ``None`` values left out). The structure is
returned as JSON-able data (``"*"`` a leaf, ``None``, ``{"tuple": [...]}``,
``{"list": [...]}``, ``{"dict": [[key, ...], ...]}``) for the API to rebuild the result.
A display assigned to a name gets atoms for elements (temporaries computed just before),
so a function in A-normal form stays in it. With ``flat``, any nested structure (nested
tuples too) is returned as one flat tuple of its leaves, as ``{"flat": structure}``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ..analysis.names import NameGen, params_of, scan
from ..tree import PyTreeDef
from .anf import ANF, is_atom

Error = Callable[[cst.CSTNode, str, str], Exception]
# (callee name, [(keyword or None, the container part given or None) per argument], the call)
#   -> (name of the callee's version taking those parts as leaves, [its leaf parameters per argument]) or None
Specialize = Callable[[str, list, cst.Call], "tuple[str, list[list[str] | None]] | None"]

__all__ = ["Part", "check_leaves", "check_results", "leaves", "part_of", "results", "tuples_alone"]


# --- the parts of a pytree argument -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Part:
    """A part of a pytree argument: a leaf (its parameter), ``None``, or a container of parts."""

    label: str  # how the user would write it: params['W']
    kind: Any  # "leaf", "none", tuple, list, dict, or a namedtuple class
    root: str = ""  # the argument it is part of
    leaf: str | None = None
    keys: tuple = ()  # dict keys (sorted) or namedtuple fields
    children: tuple[Part, ...] = ()
    tree: PyTreeDef | None = None  # the structure of this part

    def leaves(self) -> list[str]:
        """The leaf parameters of this part, in flattening order."""
        if self.kind == "leaf":
            return [self.leaf]
        return [name for child in self.children for name in child.leaves()]

    @property
    def is_container(self) -> bool:
        return self.kind not in ("leaf", "none")

    def describe(self) -> str:
        if self.kind is dict:
            return f"a dict with keys {list(self.keys)!r}"
        if self.kind in (tuple, list):
            return f"a {self.kind.__name__} of {len(self.children)}"
        return f"a {self.kind.__name__} namedtuple"


def part_of(name: str, treedef: PyTreeDef, leaf_names: list[str]) -> Part:
    """The :class:`Part` tree of argument ``name`` of structure ``treedef``, leaves named in order."""
    names = iter(leaf_names)

    def build(label: str, td: PyTreeDef) -> Part:
        if td.is_leaf():
            return Part(label, "leaf", name, leaf=next(names), tree=td)
        kind, aux = td.node_data()
        if kind is type(None):
            return Part(label, "none", name, tree=td)
        kids = td.children()
        if kind is dict:
            children = tuple(build(f"{label}[{k!r}]", c) for k, c in zip(aux, kids))
            return Part(label, dict, name, keys=aux, children=children, tree=td)
        if kind in (tuple, list):
            children = tuple(build(f"{label}[{i}]", c) for i, c in enumerate(kids))
            return Part(label, kind, name, children=children, tree=td)
        fields = tuple(kind._fields)
        children = tuple(build(f"{label}.{f}", c) for f, c in zip(fields, kids))
        return Part(label, kind, name, keys=fields, children=children, tree=td)

    return build(name, treedef)


_NO_CONSTANT = object()


def _constant(expr: cst.BaseExpression) -> Any:
    if isinstance(expr, (cst.Integer, cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if value is not None else _NO_CONSTANT
    if (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, cst.Integer)
    ):
        return -expr.expression.evaluated_value
    return _NO_CONSTANT


class _Refused(Exception):
    def __init__(self, node: cst.CSTNode, message: str, hint: str, root: str | None = None) -> None:
        super().__init__(message)
        self.node, self.message, self.hint, self.root = node, message, hint, root


_READ_HINT = "read the leaves you need with constant keys (W = params['W']) or unpack it (W, b = params)"


def _child(part: Part, node: cst.Subscript, cache: dict) -> Part:
    """``part[key]`` for a constant key; raises :class:`_Refused` for anything else."""
    if part.kind == "none":
        raise _Refused(node, f"{part.label} is None and cannot be indexed", "check the structure of the argument")
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice) and part.kind in (tuple, list):
        return _sliced(part, node, node.slice[0].slice, cache)
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        raise _Refused(node, f"slices of {part.label} ({part.describe()}) are not supported", _READ_HINT)
    key = _constant(node.slice[0].slice.value)
    if key is _NO_CONSTANT:
        raise _Refused(
            node,
            f"{part.label} ({part.describe()}) can only be indexed with a constant: srctrans passes it as its leaves",
            "write the index out (params[0], params['W']), or unpack it (a, b = params); "
            "a loop over its entries must be written out",
        )
    if part.kind is dict:
        if key not in part.keys:
            raise _Refused(node, f"{part.label} has no key {key!r}; its keys are {list(part.keys)!r}", "use one of its keys")
        return part.children[part.keys.index(key)]
    if not isinstance(key, int) or isinstance(key, bool):
        raise _Refused(node, f"{part.label} ({part.describe()}) is indexed with {key!r}", "index it with an integer")
    n = len(part.children)
    if not -n <= key < n:
        raise _Refused(node, f"index {key} is out of range for {part.label} ({part.describe()})", "check the structure of the argument")
    return part.children[key]


def _sliced(part: Part, node: cst.Subscript, sl: cst.Slice, cache: dict) -> Part:
    """``part[a:b:c]`` with constant bounds: a part of the same kind holding those children (one per slice)."""
    bounds = []
    for bound in (sl.lower, sl.upper, sl.step):
        value = None if bound is None or (isinstance(bound, cst.Name) and bound.value == "None") else _constant(bound)
        if value is _NO_CONSTANT or not (value is None or isinstance(value, int)):
            raise _Refused(
                node,
                f"{part.label} ({part.describe()}) can only be sliced with constants: srctrans passes it as its leaves",
                "write the bounds out (params[:-1], params[1:])",
            )
        bounds.append(value)
    if bounds[2] == 0:
        raise _Refused(node, f"slice step cannot be zero in a slice of {part.label}", "use a step other than 0")
    key = (id(part), *bounds)
    found = cache.get(key)
    if found is None:
        text = ":".join("" if b is None else str(b) for b in bounds[:2]) + ("" if bounds[2] is None else f":{bounds[2]}")
        children = part.children[slice(*bounds)]
        tree = PyTreeDef(part.kind, None, tuple(c.tree for c in children))
        found = Part(f"{part.label}[{text}]", part.kind, part.root, children=children, tree=tree)
        cache[key] = found
    return found


# --- reading a pytree argument through its leaves ------------------------------------------------


def _binding_counts(body: cst.CSTNode) -> Counter:
    counts: Counter = Counter()

    def store(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            counts[target.value] += 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                store(el.value)
        elif isinstance(target, cst.StarredElement):
            store(target.value)

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            store(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            store(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            store(node.target)

        def visit_For(self, node: cst.For) -> None:
            store(node.target)

        def visit_CompFor(self, node: cst.CompFor) -> None:
            store(node.target)

    body.visit(V())
    return counts


def _single_assignments(body: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """``(target, value)`` of every one-target assignment, in order."""
    found: list = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) == 1:
                found.append((node.targets[0].target, node.value))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if node.value is not None:
                found.append((node.target, node.value))

    body.visit(V())
    return found


class _Leaves(cst.CSTTransformer):
    """Rewrites reads of the parts of pytree arguments (see the module docstring)."""

    def __init__(
        self, parts: dict[str, Part], params: frozenset[str], len_builtin: bool, user_names: frozenset[str] | None
    ) -> None:
        super().__init__()
        self.names: dict[str, Part] = dict(parts)  # container parameters, then aliases
        self.containers = frozenset(parts)
        self.params = params
        self.len_builtin = len_builtin
        self.user_names = user_names  # None: every name is the user's
        self.displays: dict[str, cst.BaseExpression] = {}  # temporaries holding a display unpacked once
        self.replace: dict[int, tuple[cst.CSTNode, cst.CSTNode]] = {}
        self.skip: set[int] = set()  # Name nodes that are not reads (attribute names, keywords)
        self.statements: dict[int, tuple[cst.CSTNode, list[cst.BaseSmallStatement]]] = {}
        self.removed: set[int] = set()
        self.rebuilt: dict[int, tuple[Part, str]] = {}  # parts used whole: (part, the name holding it), children first
        self.fresh: NameGen | None = None
        self.slices: dict[tuple, Part] = {}  # constant slices of parts, one Part each
        self.specialize: Specialize | None = None

    # --- what an expression is -------------------------------------------------------------

    def resolve(self, expr: cst.BaseExpression) -> Part | None:
        """The part ``expr`` reads, or None when it is not a constant-key read of one."""
        if isinstance(expr, cst.Name):
            return self.names.get(expr.value)
        if isinstance(expr, cst.Subscript):
            base = self.resolve(expr.value)
            return None if base is None or base.kind == "leaf" else _child(base, expr, self.slices)
        if isinstance(expr, cst.Attribute):
            base = self.resolve(expr.value)
            if base is None or base.kind == "leaf":
                return None
            if base.kind not in (tuple, list, dict, "none") and expr.attr.value in base.keys:
                return base.children[base.keys.index(expr.attr.value)]
            what = "None" if base.kind == "none" else base.describe()
            if base.kind in (tuple, list, dict, "none"):
                message = f"{base.label}.{expr.attr.value} is not supported: {base.label} ({what}) is passed as its leaves"
            else:
                message = f"{base.label} ({what}) has no field {expr.attr.value!r}"
            raise _Refused(expr, message, _READ_HINT)
        return None

    def _try(self, expr: cst.BaseExpression) -> Part | None:
        try:
            return self.resolve(expr)
        except _Refused:
            return None

    def _is_temp(self, name: str) -> bool:
        return self.user_names is not None and name not in self.user_names

    def find_aliases(self, body: cst.CSTNode) -> None:
        """Aliases: names assigned once to a container part, and temporaries assigned once to any part.

        Also the temporaries holding a display that one parallel assignment unpacks (A-normal
        form of ``W, b = p["W"], p["b"]``).
        """
        counts = _binding_counts(body)
        reads = _read_counts(body)
        assignments = _single_assignments(body)
        candidates = {
            t.value: v
            for t, v in assignments
            if isinstance(t, cst.Name) and isinstance(v, (cst.Tuple, cst.List))
            and self._is_temp(t.value) and counts[t.value] == 1 and reads[t.value] == 1
        }
        changed = True
        while changed:
            changed = False
            for target, value in assignments:
                elements = _elements(value, candidates)
                if elements is not None and isinstance(target, (cst.Tuple, cst.List)):
                    if self._parallel(target, elements):
                        if isinstance(value, cst.Name) and value.value not in self.displays:
                            self.displays[value.value] = candidates[value.value]
                            changed = True
                        for t, e in zip(target.elements, elements):
                            part = self._try(e)
                            if part is not None and part.is_container:
                                changed |= self._alias(t.value, part, counts)
                    continue
                part = self._try(value)
                if part is None:
                    continue
                if part.is_container:
                    changed |= self._alias(target, part, counts)
                elif (
                    isinstance(target, cst.Name)
                    and self._is_temp(target.value)
                    and counts[target.value] == 1
                    and target.value not in self.names
                ):
                    self.names[target.value] = part
                    changed = True

    def _parallel(self, target: cst.Tuple | cst.List, elements: list[cst.BaseExpression]) -> bool:
        """Whether ``target = elements`` may be one assignment per element, in order (values read parts)."""
        if len(target.elements) != len(elements):
            return False
        found = _target_names(target)
        if found is None:
            return False
        names = [n.value for n in found]
        if len(set(names)) != len(names):
            return False
        some_part = False
        for t, e in zip(target.elements, elements):
            part = self._try(e)
            nested = isinstance(t.value, (cst.Tuple, cst.List))
            if part is not None:
                some_part = True
                if nested and not part.is_container:
                    return False
            elif nested or _names_in(e) & set(names):
                return False
        return some_part

    def _alias(self, target: cst.BaseExpression, part: Part, counts: Counter) -> bool:
        if isinstance(target, cst.Name):
            name = target.value
            if name in self.names or name in self.params or counts[name] != 1:
                return False
            self.names[name] = part
            return True
        if isinstance(target, (cst.Tuple, cst.List)) and part.kind is not dict and len(target.elements) == len(part.children):
            changed = False
            for el, child in zip(target.elements, part.children):
                if child.is_container:
                    changed |= self._alias(el.value, child, counts)
            return changed
        return False

    # --- refusals ---------------------------------------------------------------------------

    def _whole(self, node: cst.CSTNode, part: Part) -> _Refused:
        return _Refused(
            node,
            f"{part.label} ({part.describe()}) is used as a whole; srctrans passes a pytree argument as its "
            "leaves, so it can only be indexed with constants, unpacked or given to len()",
            _READ_HINT,
        )

    def _container(self, expr: cst.BaseExpression) -> Part | None:
        part = self.resolve(expr)
        return part if part is not None and part.is_container else None

    def _check_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and target.value in self.containers:
            raise _Refused(
                target,
                f"assigning to {target.value}, a pytree argument, is not supported",
                f"give the new value another name; {target.value} is passed as its leaves",
            )
        if isinstance(target, (cst.Subscript, cst.Attribute)):
            part = self.resolve(target)
            if part is not None:
                raise _Refused(
                    target,
                    f"writing into {part.label} is not supported: srctrans passes pytree arguments as their leaves",
                    "build a new value under a new name instead",
                )
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._check_target(el.value)
        if isinstance(target, cst.StarredElement):
            self._check_target(target.value)

    # --- parts used as a whole ------------------------------------------------------------------

    def rebuilt_name(self, part: Part) -> str:
        """The name of the tuple rebuilding ``part`` (tuples and lists alone), made once."""
        found = self.rebuilt.get(id(part))
        if found is not None:
            return found[1]
        for child in part.children:
            if child.is_container:
                self.rebuilt_name(child)
        if part.label == part.root:
            name = part.root
        else:
            stem = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in part.label)
            name = self.fresh.fresh("_".join(filter(None, stem.split("_"))), numbered=False)
        self.rebuilt[id(part)] = (part, name)
        return name

    def rebuild_statements(self) -> list[cst.SimpleStatementLine]:
        """``name = (leaf, ...)`` for every part used whole, children before their parents."""
        lines = []
        for part, name in self.rebuilt.values():
            elements = []
            for child in part.children:
                value = child.leaf if child.kind == "leaf" else "None" if child.kind == "none" else self.rebuilt[id(child)][1]
                elements.append(cst.Element(cst.Name(value)))
            display = cst.Tuple(elements) if elements else cst.Tuple([], lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            lines.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], display)]))
        return lines

    # --- traversal ---------------------------------------------------------------------------

    def _replace(self, node: cst.CSTNode, new: cst.CSTNode) -> None:
        if getattr(node, "lpar", None):
            new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
        self.replace[id(node)] = (node, new)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            return False
        if isinstance(node, (cst.Name, cst.Subscript, cst.Attribute)):
            part = self.resolve(node)
            if part is not None:
                if part.kind == "leaf":
                    self._replace(node, cst.Name(part.leaf))
                    return False
                if part.kind == "none":
                    self._replace(node, cst.Name("None"))
                    return False
                if tuples_alone(part):
                    self._replace(node, cst.Name(self.rebuilt_name(part)))
                    return False
                raise self._whole(node, part)
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        found = self.replace.get(id(original))
        if found is not None:
            return found[1]
        return super().on_leave(original, updated)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        if self.len_builtin and isinstance(func, cst.Name) and func.value == "len" and len(node.args) == 1:
            arg = node.args[0]
            part = self.resolve(arg.value) if arg.keyword is None and not arg.star else None
            if part is not None and part.kind != "leaf":
                if part.kind == "none":
                    raise _Refused(node, f"len({part.label}): {part.label} is None", "check the structure of the argument")
                self._replace(node, cst.Integer(str(len(part.children))))
                return False
        if self.specialize is not None and isinstance(func, cst.Name):
            made = self._specialized_call(node)
            if made is not None:
                self._replace(node, made)
                return False
        for arg in node.args:
            part = self._container(arg.value)
            if part is not None and not tuples_alone(part):
                raise _Refused(
                    arg,
                    f"passing {part.label} ({part.describe()}) to a function is not supported: "
                    "srctrans passes a pytree argument as its leaves",
                    "pass the leaves it needs (params['W'], ...) as separate arguments",
                )
        return True

    def _specialized_call(self, node: cst.Call) -> cst.Call | None:
        """``f(params, x)`` of your function ``f`` with a container part: a call of ``f``'s version
        that takes the part's leaves (``f_leaves(params_W, params_b, x)``), or None."""
        given: list[tuple[str | None, Part | None]] = []
        for arg in node.args:
            if arg.star:
                return None
            part = self._container(arg.value)
            given.append((arg.keyword.value if arg.keyword is not None else None, part))
        if all(part is None for _, part in given):
            return None
        found = self.specialize(node.func.value, given, node)
        if found is None:
            return None
        name, callee_leaves = found
        args: list[cst.Arg] = []
        for arg, (keyword, part), names in zip(node.args, given, callee_leaves):
            if part is None:
                args.append(arg.with_changes(value=arg.value.visit(self), comma=cst.MaybeSentinel.DEFAULT))
                continue
            for leaf, callee_leaf in zip(part.leaves(), names):
                kw = cst.Name(callee_leaf) if keyword is not None else None
                args.append(cst.Arg(cst.Name(leaf), keyword=kw, equal=cst.AssignEqual() if kw else cst.MaybeSentinel.DEFAULT))
        return node.with_changes(func=cst.Name(name), args=args)

    def _loop(self, target: cst.BaseExpression, it: cst.BaseExpression) -> None:
        self._check_target(target)
        part = self._container(it)
        if part is not None:
            raise _Refused(
                it,
                f"looping over {part.label} ({part.describe()}) is not supported: srctrans passes it as its leaves",
                "a loop over a pytree argument is written out once per entry, so it cannot hold break, continue "
                "or else, nor assign its target; write it out with constant indices (params[0], params[1])",
            )

    def visit_For(self, node: cst.For) -> None:
        self._loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._loop(node.target, node.iter)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)

    def _defines_alias(self, target: cst.BaseExpression) -> bool:
        return isinstance(target, cst.Name) and (
            (target.value in self.names and target.value not in self.containers) or target.value in self.displays
        )

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._check_target(node.target)
        if node.value is None:
            return False
        if self._defines_alias(node.target):  # aliases are assigned once: this is the assignment
            self.statements[id(node)] = (node, [])
            return False
        part = self._container(node.value)
        if part is None:
            return True
        self.statements[id(node)] = (node, self._bind(node.target, part))
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        for t in node.targets:
            self._check_target(t.target)
        target = node.targets[0].target
        if len(node.targets) == 1 and self._defines_alias(target):  # aliases are assigned once: this is the assignment
            self.statements[id(node)] = (node, [])
            return False
        elements = _elements(node.value, self.displays)
        if len(node.targets) == 1 and elements is not None and isinstance(target, (cst.Tuple, cst.List)):
            if self._parallel(target, elements):
                out: list[cst.BaseSmallStatement] = []
                for t, e in zip(target.elements, elements):
                    part = self.resolve(e)
                    if part is not None:
                        out += self._bind(t.value, part)
                    else:
                        out.append(cst.Assign([cst.AssignTarget(t.value)], e).visit(self))
                self.statements[id(node)] = (node, out)
                return False
        part = self._container(node.value)
        if part is None:
            return True
        if len(node.targets) != 1:
            raise self._whole(node.value, part)
        self.statements[id(node)] = (node, self._bind(node.targets[0].target, part))
        return False

    def _bind(self, target: cst.BaseExpression, part: Part) -> list[cst.BaseSmallStatement]:
        """Statements giving ``target`` the value of ``part`` (an alias needs none)."""
        if isinstance(target, cst.Name) and self.names.get(target.value) is part:
            return []
        if not part.is_container:
            value = cst.Name(part.leaf if part.kind == "leaf" else "None")
            target = target.with_changes(lpar=[], rpar=[]) if isinstance(target, cst.Tuple) else target
            return [cst.Assign([cst.AssignTarget(target)], value).visit(self)]
        if isinstance(target, cst.Name):
            raise _Refused(
                target,
                f"{target.value} names {part.label} ({part.describe()}) but is assigned more than once",
                "give a part of a pytree argument a name of its own, assigned once",
                part.root,
            )
        if isinstance(target, (cst.Tuple, cst.List)):
            if part.kind is dict:
                raise _Refused(
                    target,
                    f"unpacking {part.label} ({part.describe()}) would give its keys",
                    "read the values by key: W, b = params['W'], params['b']",
                )
            if len(target.elements) != len(part.children):
                raise _Refused(
                    target,
                    f"cannot unpack {part.label} ({part.describe()}) into {len(target.elements)} targets",
                    "unpack it into one target per entry",
                )
            out: list[cst.BaseSmallStatement] = []
            for el, child in zip(target.elements, part.children):
                out += self._bind(el.value, child)
            return out
        raise self._whole(target, part)

    # --- statements made or removed -------------------------------------------------------------

    def _smalls(self, original, updated) -> list[cst.BaseSmallStatement] | None:
        if not any(id(s) in self.statements for s in original.body):
            return None
        smalls: list[cst.BaseSmallStatement] = []
        for orig, upd in zip(original.body, updated.body):
            made = self.statements.get(id(orig))
            smalls += made[1] if made is not None else [upd]
        return [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in smalls]

    def leave_SimpleStatementLine(self, original, updated):
        smalls = self._smalls(original, updated)
        if smalls is None:
            return updated
        if not smalls:
            marker = cst.SimpleStatementLine([cst.Pass()], leading_lines=updated.leading_lines)
            self.removed.add(id(marker))
            self.replace[id(marker)] = (marker, marker)  # keeps the marker alive while its id is used
            return marker
        lines = [cst.SimpleStatementLine([s]) for s in smalls]
        lines[0] = lines[0].with_changes(leading_lines=updated.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=updated.trailing_whitespace)
        return cst.FlattenSentinel(lines)

    def leave_SimpleStatementSuite(self, original, updated):
        smalls = self._smalls(original, updated)
        if smalls is None:
            return updated
        smalls = smalls or [cst.Pass()]
        semi = cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))
        return updated.with_changes(body=[s.with_changes(semicolon=semi) for s in smalls[:-1]] + smalls[-1:])

    def leave_IndentedBlock(self, original, updated):
        if not any(id(s) in self.removed for s in updated.body):
            return updated
        body: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []
        for stmt in updated.body:
            if id(stmt) in self.removed:  # the latest origin comment is the one that stays
                commented = any(line.comment for line in stmt.leading_lines)
                pending = list(stmt.leading_lines) if commented else pending + list(stmt.leading_lines)
                continue
            if pending and not any(line.comment for line in stmt.leading_lines):
                stmt = stmt.with_changes(leading_lines=[*pending, *stmt.leading_lines])
            pending = []
            body.append(stmt)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=pending)]
        return updated.with_changes(body=body)


class _Unroll(cst.CSTTransformer):
    """``for target in part:`` (also ``enumerate(part)``) written out once per entry of the part.

    Each copy begins with ``target = part[k]`` (``i = k`` first for enumerate), which the
    leaves pass then reads as any constant-key read. A target naming a container entry is
    renamed in every copy but the last (``layer``, ``layer_1`` ...), so that each name is
    assigned once. Loops with ``break``, ``continue`` or ``else``, or whose body assigns the
    target, are left for the leaves pass to refuse.
    """

    def __init__(self, leaves: _Leaves, builtins: frozenset[str]) -> None:
        super().__init__()
        self.leaves = leaves
        self.builtins = builtins
        self.unrolled = False
        self.changed: list[bool] = []  # per node being visited: whether something below it changed

    # Unchanged nodes are kept (not copies), so that what the leaves pass refuses is still located.
    def on_visit(self, node: cst.CSTNode) -> bool:
        self.changed.append(False)
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        changed = self.changed.pop()
        result = super().on_leave(original, updated)
        if result is updated and not changed:
            result = original
        if result is not original and self.changed:
            self.changed[-1] = True
        return result

    def leave_For(self, original: cst.For, updated: cst.For):
        it, counted = updated.iter, False
        if (
            isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate"
            and "enumerate" in self.builtins and len(it.args) == 1 and it.args[0].keyword is None and not it.args[0].star
        ):
            it, counted = it.args[0].value, True
        part = self.leaves._try(it)
        if part is None or part.kind not in (tuple, list) or updated.orelse is not None or updated.asynchronous:
            return updated
        target = updated.target
        if counted:
            if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2):
                return updated
            count_target, target = target.elements[0].value, target.elements[1].value
        if _breaks(updated.body) or _target_names(target) is None or _names_in_targets(updated.body) & {
            n.value for n in _target_names(target) + ([count_target] if counted and isinstance(count_target, cst.Name) else [])
        }:
            return updated
        body = list(updated.body.body) if isinstance(updated.body, cst.IndentedBlock) else [
            cst.SimpleStatementLine(list(updated.body.body))
        ]
        made: list[cst.BaseStatement] = []
        n = len(part.children)
        for k, child in enumerate(part.children):
            this_target, copy = target, body
            if isinstance(target, cst.Name) and child.is_container and k < n - 1:
                new = self.leaves.fresh.fresh(target.value, numbered=True)
                this_target = cst.Name(new)
                copy = [stmt.visit(_Rename({target.value: new})) for stmt in body]
            read = cst.Subscript(it.with_changes(lpar=[], rpar=[]) if isinstance(it, cst.Name) else it, [
                cst.SubscriptElement(cst.Index(cst.Integer(str(k))))
            ])
            lines = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(this_target)], read)])]
            if counted:
                lines.insert(0, cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(count_target)], cst.Integer(str(k)))]))
            lines[0] = lines[0].with_changes(leading_lines=updated.leading_lines)  # each copy under the loop's line
            made += lines + list(copy)
        self.unrolled = True
        if not made:
            return cst.SimpleStatementLine([cst.Pass()], leading_lines=updated.leading_lines)
        return cst.FlattenSentinel(made)


class _Rename(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)  # (an attribute's own name is not a variable)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.mapping.get(updated.value, updated.value))


def _breaks(body: cst.CSTNode) -> bool:
    """Whether ``body`` holds a ``break`` or ``continue`` of its own loop (not of a loop inside it)."""

    class V(cst.CSTVisitor):
        found = False

        def visit_For(self, node: cst.For) -> bool:
            return False

        def visit_While(self, node: cst.While) -> bool:
            return False

        def visit_Break(self, node: cst.Break) -> None:
            V.found = True

        def visit_Continue(self, node: cst.Continue) -> None:
            V.found = True

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    v = V()
    body.visit(v)
    return V.found


def _names_in_targets(body: cst.CSTNode) -> set[str]:
    return {name for name, count in _binding_counts(body).items() if count}


def tuples_alone(part: Part) -> bool:
    """Whether ``part`` is made of tuples and lists (and leaves and Nones) alone."""
    if part.kind in ("leaf", "none"):
        return True
    return part.kind in (tuple, list) and all(tuples_alone(c) for c in part.children)


def _elements(value: cst.BaseExpression, displays: dict[str, cst.BaseExpression]) -> list[cst.BaseExpression] | None:
    """The elements of a tuple/list display, given directly or as a temporary holding one."""
    if isinstance(value, cst.Name) and value.value in displays:
        value = displays[value.value]
    if isinstance(value, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return [e.value for e in value.elements]
    return None


def _target_names(target: cst.BaseExpression) -> list[cst.Name] | None:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[cst.Name] = []
        for el in target.elements:
            inner = _target_names(el.value)
            if inner is None:
                return None
            out += inner
        return out
    return None


def _names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

    expr.visit(V())
    return found


def _run_leaves(
    node, parts: dict[str, Part], len_builtin: bool, error: Error, user_names: frozenset[str] | None,
    builtins: frozenset[str] = frozenset(), specialize: Specialize | None = None,
):
    params = frozenset(params_of(node))
    visitor = _Leaves(parts, params, len_builtin, user_names)
    visitor.specialize = specialize
    visitor.fresh = NameGen(scan(node).all | {p.leaf for part in parts.values() for p in _all_parts(part) if p.leaf})
    try:
        visitor.find_aliases(node.body)
        unroll = _Unroll(visitor, builtins)
        body = node.body.visit(unroll)
        if unroll.unrolled:
            visitor.find_aliases(body)
        body = body.visit(visitor)
    except _Refused as err:
        exc = error(err.node, err.message, err.hint)
        exc.pytree_argument = err.root or _root_in(err.node, visitor.names)
        raise exc from None
    made = visitor.rebuild_statements()
    if made and isinstance(body, cst.IndentedBlock):
        first = body.body[0]
        doc = _is_docstring(first)
        at = 1 if doc else 0
        if not doc and first.leading_lines:  # the first statement's origin comment stays above what is made
            made[0] = made[0].with_changes(leading_lines=first.leading_lines)
            body = body.with_changes(body=[first.with_changes(leading_lines=[]), *body.body[1:]])
        body = body.with_changes(body=[*body.body[:at], *made, *body.body[at:]])
    return node.with_changes(body=body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _all_parts(part: Part):
    yield part
    for child in part.children:
        yield from _all_parts(child)


def _root_in(node: cst.CSTNode, names: dict[str, Part]) -> str | None:
    """The pytree argument a refused node reads (the first part it names)."""
    for name in sorted(_names_in(node)):
        if name in names:
            return names[name].root
    return None


def check_leaves(
    node: cst.FunctionDef | cst.Lambda, parts: dict[str, Part], len_builtin: bool, error: Error,
    builtins: frozenset[str] = frozenset(), specialize: Specialize | None = None,
) -> None:
    """Raise ``error(node, message, hint)`` at the first use of a pytree argument :func:`leaves` refuses.

    The raised error's ``pytree_argument`` names the argument concerned.
    """
    _run_leaves(node, parts, len_builtin, error, None, builtins, specialize)


def leaves(
    node: cst.FunctionDef, parts: dict[str, Part], len_builtin: bool, error: Error, user_names: frozenset[str],
    builtins: frozenset[str] = frozenset(), specialize: Specialize | None = None,
) -> cst.FunctionDef:
    """Rewrite the reads of the pytree arguments ``parts`` (name -> :class:`Part`) into reads of leaves.

    ``len_builtin`` says whether ``len`` is Python's own here, ``builtins`` which other names
    are (a loop over ``enumerate(part)`` is written out only when it is); ``user_names`` are the names of
    the user's function (any other name is a temporary of an earlier pass, assigned once).
    The parameters themselves are left for the caller to replace.
    """
    return _run_leaves(node, parts, len_builtin, error, user_names, builtins, specialize)


# --- results: list and dict displays returned become tuples ---------------------------------------


LEAF = "*"


def _returns(node: cst.FunctionDef | cst.Lambda) -> list[tuple[cst.CSTNode, cst.BaseExpression | None]]:
    """``(return statement, value)`` of every return in the function; a lambda's body is its value."""
    if isinstance(node, cst.Lambda):
        return [(node.body, node.body)]
    found: list = []

    class V(cst.CSTVisitor):
        def visit_Return(self, ret: cst.Return) -> None:
            found.append((ret, ret.value))

    node.body.visit(V())
    return found


def _read_counts(body: cst.CSTNode) -> Counter:
    counts: Counter = Counter()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            counts[n.value] += 1

    body.visit(V())
    return counts - _binding_counts(body)


class _Structure:
    """The structure of the values a function returns, through names assigned once to a display."""

    def __init__(self, node: cst.FunctionDef | cst.Lambda) -> None:
        body = node.body
        bindings = _binding_counts(body)
        reads = _read_counts(body)
        params = set(params_of(node))
        self.displays: dict[str, cst.BaseExpression] = {}
        for target, value in _single_assignments(body):
            if (
                isinstance(target, cst.Name)
                and isinstance(value, (cst.Tuple, cst.List, cst.Dict))
                and bindings[target.value] == 1
                and reads[target.value] == 1
                and target.value not in params
            ):
                self.displays[target.value] = value
        self.followed: set[str] = set()

    def of(self, expr: cst.BaseExpression | None) -> Any:
        if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
            return None
        if isinstance(expr, cst.Name) and expr.value in self.displays:
            self.followed.add(expr.value)
            return self.of(self.displays[expr.value])
        if isinstance(expr, (cst.Tuple, cst.List)):
            kind = "tuple" if isinstance(expr, cst.Tuple) else "list"
            return {kind: [self.of(e.value) for e in expr.elements]}
        if isinstance(expr, cst.Dict):
            entries = _dict_entries(expr)
            if entries is not None:
                return {"dict": [[k, self.of(v)] for k, v in entries]}
        return LEAF


def _dict_entries(expr: cst.Dict) -> list[tuple[Any, cst.BaseExpression]] | None:
    """``(key, value)`` in sorted key order (last duplicate wins), or None when keys are not constants."""
    found: dict[Any, cst.BaseExpression] = {}
    for el in expr.elements:
        if not isinstance(el, cst.DictElement):
            return None
        key = _constant(el.key)
        if key is _NO_CONSTANT or not isinstance(key, (str, int)):
            return None
        found[key] = el.value
    try:
        return sorted(found.items(), key=lambda kv: kv[0])
    except TypeError:  # mixed key types: not a pytree dict
        return None


def _nested(struct: Any) -> bool:
    """A tuple holding a container."""
    return isinstance(struct, dict) and any(isinstance(k, dict) for k in next(iter(struct.values())))


def _has_display(struct: Any) -> bool:
    if isinstance(struct, dict):
        ((kind, kids),) = struct.items()
        if kind in ("list", "dict"):
            return True
        return any(_has_display(k) for k in kids)
    return False


def _structure(node, error: Error, nested_tuples: bool = False) -> tuple[Any, _Structure] | None:
    structure = _Structure(node)
    found = [(ret, structure.of(value)) for ret, value in _returns(node)]
    if not any(_has_display(s) or (nested_tuples and _nested(s)) for _, s in found):
        return None
    first = found[0][1]
    for ret, struct in found[1:]:
        if struct != first:
            raise error(
                ret,
                "every return must give the same structure of lists, dicts and tuples: "
                f"{describe_structure(struct)} here, {describe_structure(first)} at the first return",
                "return the same structure everywhere (use None or zeros for the values a branch does not have)",
            )
    return first, structure


def describe_structure(struct: Any) -> str:
    """``{'acc': *, 'loss': *}``: the structure in Python's notation, ``*`` for each leaf."""
    if struct == LEAF:
        return "*"
    if struct is None:
        return "None"
    ((kind, kids),) = struct.items()
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {describe_structure(v)}" for k, v in kids) + "}"
    inner = ", ".join(describe_structure(k) for k in kids)
    if kind == "tuple":
        return "(" + inner + ("," if len(kids) == 1 else "") + ")"
    return "[" + inner + "]"


def check_results(node: cst.FunctionDef | cst.Lambda, error: Error) -> None:
    """Raise ``error(node, message, hint)`` at a return whose structure differs from the first's."""
    _structure(node, error)


class _Flatten(cst.CSTTransformer):
    def __init__(self, structure: _Structure, names: NameGen, flat: bool = False) -> None:
        super().__init__()
        self.structure = structure
        self.names = names
        self.flat = flat  # nested displays as one flat tuple of the leaves
        self.before: dict[int, list[cst.BaseStatement]] = {}

    def tuple_of(self, expr: cst.BaseExpression, struct: Any, out: list | None) -> cst.BaseExpression:
        """``expr`` with its list/dict displays as tuples; with ``out``, elements are atoms computed into it."""
        if not isinstance(struct, dict) or isinstance(expr, cst.Name):
            return expr
        ((kind, kids),) = struct.items()
        if kind == "dict":
            values = [v for _, v in _dict_entries(expr)]
            kids = [s for _, s in kids]
        else:
            values = [e.value for e in expr.elements]
        elements = []
        for value, sub in zip(values, kids):
            if sub is None:
                continue
            value = self.tuple_of(value, sub, out)
            if self.flat and isinstance(sub, dict) and isinstance(value, cst.Tuple):
                elements += value.elements
                continue
            if out is not None and not is_atom(value):
                value = ANF(self.names).atom(value, out)
            elements.append(cst.Element(value))
        return cst.Tuple([e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in elements])

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        struct = self.structure.of(updated.value)
        if updated.value is None or not isinstance(struct, dict):
            return updated
        value = self.tuple_of(updated.value, struct, None)
        if isinstance(value, cst.Tuple) and value.elements:
            value = value.with_changes(lpar=[], rpar=[])
        return updated.with_changes(value=value)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        target = updated.targets[0].target
        if not (isinstance(target, cst.Name) and target.value in self.structure.followed):
            return updated
        out: list[cst.BaseStatement] = []
        value = self.tuple_of(updated.value, self.structure.of(updated.value), out)
        self.before[id(original)] = out
        return updated.with_changes(value=value)

    def leave_SimpleStatementLine(self, original, updated):
        made = [s for small in original.body for s in self.before.get(id(small), [])]
        if not made:
            return updated
        first = made[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel([first, *made[1:], updated.with_changes(leading_lines=[])])


def results(node: cst.FunctionDef, error: Error, flat: bool = False) -> tuple[cst.FunctionDef, Any]:
    """Returned list/dict displays as tuples; ``(node, structure)``, structure None when unchanged.

    ``flat``: nested displays (nested tuples too) as one flat tuple of the leaves, the structure
    as ``{"flat": structure}`` (a pmap's stages pass flat tuples of arrays)."""
    found = _structure(node, error, nested_tuples=flat)
    if found is None:
        return node, None
    struct, structure = found
    names = NameGen(scan(node).all)
    body = node.body.visit(_Flatten(structure, names, flat))
    return node.with_changes(body=body), ({"flat": struct} if flat else struct)
