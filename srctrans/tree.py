"""Pytrees: nested containers of arrays, flattened at the boundary of every transformation.

This module owns the pytree model of srctrans, which is JAX's: a *pytree* is a leaf or a
container of pytrees. Containers are ``tuple``, ``list``, ``dict`` (children taken in
sorted key order, as JAX does), namedtuples (the type is kept) and ``None`` (a container
with no children, so an empty subtree without leaves). Everything else is a leaf: NumPy
arrays, Python and NumPy scalars, strings, objects. Subclasses of ``tuple``/``list``/
``dict`` other than namedtuples are leaves too, as in JAX.

:func:`tree_flatten` splits a pytree into its leaves and a hashable :class:`PyTreeDef`
describing the containers; :func:`tree_unflatten` puts them back together. Transformations
use the treedef as part of the abstract signature they specialize on, and hand generated
code only the flat leaves.

>>> leaves, treedef = tree_flatten((1.0, {"b": [2.0, 3.0], "a": None}))
>>> leaves
[1.0, 2.0, 3.0]
>>> treedef
PyTreeDef((*, {'a': None, 'b': [*, *]}))
>>> tree_unflatten(treedef, [10.0, 20.0, 30.0])
(10.0, {'a': None, 'b': [20.0, 30.0]})
>>> tree_map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)])
[11, (22, 33)]

This module never imports Numba.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DictKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "PyTreeDef",
    "SequenceKey",
    "keystr",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_map",
    "tree_reduce",
    "tree_structure",
    "tree_unflatten",
]

PyTree = Any
Leaf = Any
IsLeaf = Callable[[Any], bool] | None


class _Leaf:
    """Node kind of a leaf (a class, so that treedefs pickle and compare by identity)."""


# Node kinds are types: _Leaf, NoneType, tuple, list, dict, or a namedtuple class.
_LEAF = _Leaf
_NONE = type(None)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields") and type(x) is not tuple


def _sorted_keys(d: dict) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as err:
        raise TypeError(
            f"pytree dict keys must be mutually comparable to be sorted; got keys {list(d)!r} ({err})"
        ) from None


# ---------------------------------------------------------------------------------------
# Key paths


@dataclass(frozen=True)
class SequenceKey:
    """Position ``idx`` in a tuple or list: ``str`` gives ``[idx]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclass(frozen=True)
class DictKey:
    """Key ``key`` of a dict: ``str`` gives ``['key']``."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class GetAttrKey:
    """Field ``name`` of a namedtuple: ``str`` gives ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


KeyEntry = SequenceKey | DictKey | GetAttrKey
KeyPath = tuple[KeyEntry, ...]


def keystr(path: KeyPath) -> str:
    """Render a key path as Python indexing syntax.

    >>> keystr((DictKey("a"), SequenceKey(1), GetAttrKey("y")))
    "['a'][1].y"
    >>> keystr(())
    ''
    """
    return "".join(str(k) for k in path)


# ---------------------------------------------------------------------------------------
# PyTreeDef


class PyTreeDef:
    """The container structure of a pytree, without its leaves.

    Hashable and comparable, so it can key caches of specialized code. ``num_leaves`` and
    ``num_nodes`` count as JAX does (``None`` and empty containers are nodes, not leaves).

    >>> treedef = tree_structure({"w": [1.0, 2.0], "b": None})
    >>> treedef
    PyTreeDef({'b': None, 'w': [*, *]})
    >>> treedef.num_leaves, treedef.num_nodes
    (2, 5)
    >>> treedef == tree_structure({"b": None, "w": [0, 0]})
    True
    >>> treedef.unflatten(["x", "y"])
    {'b': None, 'w': ['x', 'y']}
    """

    __slots__ = ("_kind", "_aux", "_children", "_num_leaves", "_num_nodes", "_hash")

    def __init__(self, kind: Any, aux: Any, children: tuple[PyTreeDef, ...]) -> None:
        self._kind = kind
        self._aux = aux
        self._children = tuple(children)
        if kind is _LEAF:
            self._num_leaves = 1
        else:
            self._num_leaves = sum(c._num_leaves for c in self._children)
        self._num_nodes = 1 + sum(c._num_nodes for c in self._children)
        self._hash = hash((kind, aux, self._children))

    # -- structure -------------------------------------------------------------------
    @property
    def num_leaves(self) -> int:
        """How many leaves a pytree of this structure has."""
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """How many nodes (containers, ``None`` and leaves) the structure has."""
        return self._num_nodes

    def is_leaf(self) -> bool:
        """Whether this is the structure of a single leaf (``PyTreeDef(*)``)."""
        return self._kind is _LEAF

    def children(self) -> list[PyTreeDef]:
        """The treedefs of the immediate children, in flattening order."""
        return list(self._children)

    def node_data(self) -> tuple[type, Any] | None:
        """``(type, metadata)`` of the root node (dict: its sorted keys); ``None`` for a leaf."""
        if self._kind is _LEAF:
            return None
        return (self._kind, self._aux)

    # -- (un)flattening ----------------------------------------------------------------
    def unflatten(self, leaves: Iterable[Leaf]) -> PyTree:
        """Build the pytree of this structure from ``leaves`` (in flattening order)."""
        leaves = list(leaves)
        if len(leaves) != self._num_leaves:
            few = "few" if len(leaves) < self._num_leaves else "many"
            raise ValueError(f"Too {few} leaves for {self!r}; expected {self._num_leaves}, got {len(leaves)}")
        it = iter(leaves)
        return self._build(it)

    def _build(self, it) -> PyTree:
        kind = self._kind
        if kind is _LEAF:
            return next(it)
        if kind is _NONE:
            return None
        kids = [c._build(it) for c in self._children]
        if kind is tuple:
            return tuple(kids)
        if kind is list:
            return kids
        if kind is dict:
            return dict(zip(self._aux, kids))
        return kind(*kids)  # namedtuple

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """Cut ``tree`` at this structure's leaves: one subtree of ``tree`` per leaf here.

        ``tree`` must have this structure, with any pytree (not only a leaf) where this one
        has a leaf. Raises ``ValueError`` naming both structures otherwise.

        >>> tree_structure((1, 2)).flatten_up_to(([1, 2], {"a": 3}))
        [[1, 2], {'a': 3}]
        """
        out: list[PyTree] = []
        self._cut(tree, out, (), tree, self)
        return out

    def _cut(self, sub: PyTree, out: list, path: KeyPath, whole: PyTree, root: PyTreeDef) -> None:
        kind = self._kind
        if kind is _LEAF:
            out.append(sub)
            return

        def mismatch(why: str) -> ValueError:
            where = keystr(path) or "the root"
            return ValueError(
                f"pytree structures do not match at {where}: {why}.\n"
                f"  expected structure: {root!r}\n"
                f"  got structure:      {_safe_structure(whole)!r}"
            )

        if kind is _NONE:
            if sub is not None:
                raise mismatch(f"expected None, got {_describe(sub)}")
            return
        if kind is dict:
            if type(sub) is not dict:
                raise mismatch(f"expected a dict, got {_describe(sub)}")
            keys = _sorted_keys(sub)
            if keys != self._aux:
                raise mismatch(f"expected dict keys {list(self._aux)!r}, got {list(keys)!r}")
            for k, c in zip(keys, self._children):
                c._cut(sub[k], out, path + (DictKey(k),), whole, root)
            return
        if kind is tuple or kind is list:
            if type(sub) is not kind:
                raise mismatch(f"expected a {kind.__name__}, got {_describe(sub)}")
            if len(sub) != len(self._children):
                raise mismatch(f"expected a {kind.__name__} of length {len(self._children)}, got length {len(sub)}")
            for i, (x, c) in enumerate(zip(sub, self._children)):
                c._cut(x, out, path + (SequenceKey(i),), whole, root)
            return
        # namedtuple
        if type(sub) is not kind:
            raise mismatch(f"expected a {kind.__name__} namedtuple, got {_describe(sub)}")
        for name, x, c in zip(kind._fields, sub, self._children):
            c._cut(x, out, path + (GetAttrKey(name),), whole, root)

    # -- comparison, hashing, printing -------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        if self is other:
            return True
        return (
            self._hash == other._hash
            and self._kind is other._kind
            and self._aux == other._aux
            and self._children == other._children
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"PyTreeDef({self._body()})"

    def _body(self) -> str:
        kind = self._kind
        if kind is _LEAF:
            return "*"
        if kind is _NONE:
            return "None"
        kids = [c._body() for c in self._children]
        if kind is tuple:
            return "(" + kids[0] + ",)" if len(kids) == 1 else "(" + ", ".join(kids) + ")"
        if kind is list:
            return "[" + ", ".join(kids) + "]"
        if kind is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(self._aux, kids)) + "}"
        return f"CustomNode(namedtuple[{kind.__name__}], [" + ", ".join(kids) + "])"

    def __reduce__(self):
        return (PyTreeDef, (self._kind, self._aux, self._children))


def _describe(x: Any) -> str:
    if x is None:
        return "None"
    if _is_namedtuple(x):
        return f"a {type(x).__name__} namedtuple"
    if type(x) in (tuple, list, dict):
        return f"a {type(x).__name__}"
    return f"a leaf of type {type(x).__name__}"


def _safe_structure(tree: PyTree) -> PyTreeDef | str:
    try:
        return tree_structure(tree)
    except Exception as err:  # unsortable dict keys, say
        return f"<no structure: {err}>"


_LEAF_DEF = PyTreeDef(_LEAF, None, ())


# ---------------------------------------------------------------------------------------
# Flattening


def _flatten(tree: PyTree, leaves: list, is_leaf: IsLeaf, path: KeyPath | None, paths: list | None) -> PyTreeDef:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        if paths is not None:
            paths.append(path)
        return _LEAF_DEF
    if tree is None:
        return PyTreeDef(_NONE, None, ())
    t = type(tree)
    if t is tuple or t is list:
        kids = tuple(
            _flatten(x, leaves, is_leaf, None if path is None else path + (SequenceKey(i),), paths)
            for i, x in enumerate(tree)
        )
        return PyTreeDef(t, None, kids)
    if t is dict:
        keys = _sorted_keys(tree)
        kids = tuple(
            _flatten(tree[k], leaves, is_leaf, None if path is None else path + (DictKey(k),), paths) for k in keys
        )
        return PyTreeDef(dict, keys, kids)
    if _is_namedtuple(tree):
        kids = tuple(
            _flatten(x, leaves, is_leaf, None if path is None else path + (GetAttrKey(name),), paths)
            for name, x in zip(t._fields, tree)
        )
        return PyTreeDef(t, None, kids)
    leaves.append(tree)
    if paths is not None:
        paths.append(path)
    return _LEAF_DEF


def tree_flatten(tree: PyTree, is_leaf: IsLeaf = None) -> tuple[list[Leaf], PyTreeDef]:
    """Split ``tree`` into its leaves (depth first, dict keys sorted) and its structure.

    ``is_leaf``, when given, is asked about every node first; where it says ``True`` the
    node is kept whole as a leaf.

    >>> tree_flatten({"b": 2, "a": (1, None)})
    ([1, 2], PyTreeDef({'a': (*, None), 'b': *}))
    >>> tree_flatten(None)
    ([], PyTreeDef(None))
    >>> tree_flatten([(1, 2), (3, 4)], is_leaf=lambda x: isinstance(x, tuple))
    ([(1, 2), (3, 4)], PyTreeDef([*, *]))
    """
    leaves: list[Leaf] = []
    treedef = _flatten(tree, leaves, is_leaf, None, None)
    return leaves, treedef


def tree_flatten_with_path(tree: PyTree, is_leaf: IsLeaf = None) -> tuple[list[tuple[KeyPath, Leaf]], PyTreeDef]:
    """Like :func:`tree_flatten`, each leaf paired with its key path.

    >>> pairs, _ = tree_flatten_with_path({"a": [1.0, 2.0]})
    >>> [(keystr(p), x) for p, x in pairs]
    [("['a'][0]", 1.0), ("['a'][1]", 2.0)]
    """
    leaves: list[Leaf] = []
    paths: list[KeyPath] = []
    treedef = _flatten(tree, leaves, is_leaf, (), paths)
    return list(zip(paths, leaves)), treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> PyTree:
    """Build a pytree of structure ``treedef`` from ``leaves``; inverse of :func:`tree_flatten`.

    >>> _, treedef = tree_flatten([1, {"x": 2}])
    >>> tree_unflatten(treedef, ["a", "b"])
    ['a', {'x': 'b'}]
    """
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(f"tree_unflatten expects a PyTreeDef, got {type(treedef).__name__}")
    return treedef.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: IsLeaf = None) -> list[Leaf]:
    """The leaves of ``tree`` in flattening order.

    >>> tree_leaves([1, (None, 2), {"z": 3, "y": 4}])
    [1, 2, 4, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: IsLeaf = None) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``.

    >>> tree_structure((0, [0, 0]))
    PyTreeDef((*, [*, *]))
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """Apply ``f`` leafwise: ``f(x, *ys)`` for each leaf ``x`` of ``tree`` and the matching parts of ``rest``.

    Each tree in ``rest`` must have the structure of ``tree``, or have ``tree`` as a prefix
    (a whole subtree is then passed where ``tree`` has a leaf), as in JAX. A mismatch raises
    ``ValueError`` naming both structures.

    >>> tree_map(lambda x: x * 2, {"a": 1, "b": (2, None)})
    {'a': 2, 'b': (4, None)}
    >>> tree_map(lambda x, y: (x, y), (1, 2), (3, [4, 5]))
    ((1, 3), (2, [4, 5]))
    >>> tree_map(lambda x, y: x + y, (1, 2), [1, 2])
    Traceback (most recent call last):
    ...
    ValueError: pytree structures do not match at the root: expected a tuple, got a list.
      expected structure: PyTreeDef((*, *))
      got structure:      PyTreeDef([*, *])
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    columns: list[Sequence[Any]] = [leaves]
    for other in rest:
        columns.append(treedef.flatten_up_to(other))
    return treedef.unflatten(f(*xs) for xs in zip(*columns))


_NO_INITIAL = object()


def tree_reduce(
    f: Callable[[Any, Any], Any], tree: PyTree, initializer: Any = _NO_INITIAL, is_leaf: IsLeaf = None
) -> Any:
    """Fold ``f`` over the leaves of ``tree``, as :func:`functools.reduce`.

    >>> tree_reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]})
    6
    >>> tree_reduce(lambda a, b: a + b, None, 0)
    0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        return functools.reduce(f, leaves)
    return functools.reduce(f, leaves, initializer)
