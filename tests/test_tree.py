"""Pytrees: flatten/unflatten round trips, None, namedtuples, dict order, errors, treedefs."""

from __future__ import annotations

import doctest
import pickle
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import srctrans.tree as tree_module
from srctrans.tree import (
    DictKey,
    GetAttrKey,
    PyTreeDef,
    SequenceKey,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_unflatten,
)

Point = namedtuple("Point", ["x", "y"])
Other = namedtuple("Other", ["x", "y"])

TREES = [
    1.0,
    np.arange(3.0),
    None,
    (),
    [],
    {},
    (1,),
    (1.0, [2.0, 3.0]),
    {"b": 1, "a": [2, None]},
    Point(1.0, (2.0, 3.0)),
    [None, (None,), {"k": None}],
    {"a": {}, "b": ((), [])},
    {"w": np.ones((2, 2)), "b": np.float32(0.5), "layers": [{"w": 1, "b": 2}, {"w": 3, "b": 4}]},
]


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _sorted_dicts(tree):
    if isinstance(tree, dict):
        return {k: _sorted_dicts(tree[k]) for k in sorted(tree)}
    if isinstance(tree, list):
        return [_sorted_dicts(x) for x in tree]
    if isinstance(tree, tuple):
        return type(tree)(*map(_sorted_dicts, tree)) if hasattr(tree, "_fields") else tuple(map(_sorted_dicts, tree))
    return tree


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_round_trip(tree):
    leaves, treedef = tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    back = tree_unflatten(treedef, leaves)
    assert _same(back, _sorted_dicts(tree))
    assert tree_structure(back) == treedef
    assert all(x is y for x, y in zip(tree_leaves(tree), leaves, strict=True))


def test_leaves_in_order_and_leaves_kept_identical():
    a = np.zeros(2)
    leaves, _ = tree_flatten([a, (1, {"z": "s", "y": 2.5})])
    assert leaves[0] is a
    assert leaves[1:] == [1, 2.5, "s"]


def test_none_is_an_empty_subtree():
    leaves, treedef = tree_flatten((1, None, [None]))
    assert leaves == [1]
    assert repr(treedef) == "PyTreeDef((*, None, [None]))"
    assert tree_flatten(None) == ([], tree_structure(None))
    assert tree_structure(None).num_leaves == 0
    assert tree_map(lambda x: x + 1, (1, None)) == (2, None)
    assert tree_unflatten(tree_structure(None), []) is None


def test_namedtuple_type_is_kept():
    leaves, treedef = tree_flatten(Point(1, Point(2, 3)))
    assert leaves == [1, 2, 3]
    back = tree_unflatten(treedef, [4, 5, 6])
    assert type(back) is Point and type(back.y) is Point and back == Point(4, Point(5, 6))
    assert repr(tree_structure(Point(1, 2))) == "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
    assert tree_structure(Point(1, 2)) != tree_structure(Other(1, 2))
    assert tree_structure(Point(1, 2)) != tree_structure((1, 2))
    assert tree_map(lambda v: v * 10, Point(1, 2)) == Point(10, 20)


def test_dict_keys_sorted_like_jax():
    leaves, treedef = tree_flatten({"b": 2, "a": 1, "c": 3})
    assert leaves == [1, 2, 3]
    assert list(tree_unflatten(treedef, leaves)) == ["a", "b", "c"]
    assert tree_structure({"b": 0, "a": 0}) == tree_structure({"a": 0, "b": 0})
    assert tree_leaves({2: "two", 1: "one"}) == ["one", "two"]
    with pytest.raises(TypeError, match="sorted"):
        tree_flatten({1: 0, "a": 0})


def test_everything_else_is_a_leaf():
    for leaf in [np.zeros(3), np.float64(1.0), 3, 2.5, True, "text", OrderedDict(a=1), object()]:
        leaves, treedef = tree_flatten(leaf)
        assert leaves == [leaf] or leaves[0] is leaf
        assert treedef.is_leaf() and repr(treedef) == "PyTreeDef(*)"


def test_is_leaf():
    leaves, treedef = tree_flatten({"a": (1, 2), "b": [3]}, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3]
    assert repr(treedef) == "PyTreeDef({'a': *, 'b': [*]})"


def test_repr_like_jax():
    assert repr(tree_structure((1, {"a": 1, "b": [1, 1]}))) == "PyTreeDef((*, {'a': *, 'b': [*, *]}))"
    assert repr(tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tree_structure(())) == "PyTreeDef(())"
    assert repr(tree_structure({"a": {}})) == "PyTreeDef({'a': {}})"
    assert repr(tree_structure({1: 0})) == "PyTreeDef({1: *})"


def test_treedef_equality_hash_and_counts():
    t1 = tree_structure({"x": [np.zeros(2), 1.0], "y": None})
    t2 = tree_structure({"y": None, "x": ["a", "b"]})
    t3 = tree_structure({"x": (0, 0), "y": None})
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != t3
    assert t1 != "PyTreeDef"
    assert len({t1, t2, t3}) == 2
    assert {t1: "cached"}[t2] == "cached"
    assert (t1.num_leaves, t1.num_nodes) == (2, 5)
    assert isinstance(t1, PyTreeDef)
    assert t1.children()[0] == tree_structure([0, 0])
    assert t1.node_data() == (dict, ("x", "y"))
    assert tree_structure(1).node_data() is None
    assert pickle.loads(pickle.dumps(t1)) == t1


def test_unflatten_errors():
    treedef = tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match="Too few leaves.*expected 3, got 2"):
        tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match="Too many leaves.*expected 3, got 4"):
        tree_unflatten(treedef, [1, 2, 3, 4])
    with pytest.raises(TypeError):
        tree_unflatten((1, 2), [1, 2])


def test_tree_map_several_trees_and_prefix():
    assert tree_map(lambda a, b, c: a + b + c, [1, {"k": 2}], [10, {"k": 20}], [100, {"k": 200}]) == [
        111,
        {"k": 222},
    ]
    assert tree_map(lambda a, b: (a, b), (1, 2), ({"u": 0}, [3, None])) == ((1, {"u": 0}), (2, [3, None]))


@pytest.mark.parametrize(
    "first, second, where",
    [
        ((1, 2), [1, 2], "the root: expected a tuple, got a list"),
        ((1, 2), (1, 2, 3), "expected a tuple of length 2, got length 3"),
        ({"a": 1}, {"b": 1}, "expected dict keys \\['a'\\], got \\['b'\\]"),
        ({"a": [1, (2, 3)]}, {"a": [1, (2,)]}, "\\['a'\\]\\[1\\]: expected a tuple of length 2"),
        ((None, 1), (0, 1), "\\[0\\]: expected None, got a leaf of type int"),
        (Point(1, 2), (1, 2), "expected a Point namedtuple, got a tuple"),
        ([[1]], [5], "\\[0\\]: expected a list, got a leaf of type int"),
    ],
)
def test_tree_map_mismatch_names_both_structures(first, second, where):
    with pytest.raises(ValueError, match=where) as info:
        tree_map(lambda *xs: xs[0], first, second)
    msg = str(info.value)
    assert f"expected structure: {tree_structure(first)!r}" in msg
    assert f"got structure:      {tree_structure(second)!r}" in msg


def test_paths():
    pairs, treedef = tree_flatten_with_path({"a": [1, Point(2, 3)], "b": None})
    assert [p for p, _ in pairs] == [
        (DictKey("a"), SequenceKey(0)),
        (DictKey("a"), SequenceKey(1), GetAttrKey("x")),
        (DictKey("a"), SequenceKey(1), GetAttrKey("y")),
    ]
    assert [keystr(p) for p, _ in pairs] == ["['a'][0]", "['a'][1].x", "['a'][1].y"]
    assert [x for _, x in pairs] == [1, 2, 3]
    assert treedef == tree_structure({"a": [0, Point(0, 0)], "b": None})


def test_tree_reduce():
    assert tree_reduce(lambda a, b: a * b, [2, (3, {"k": 4})]) == 24
    assert tree_reduce(lambda a, b: a + b, (), 5) == 5


def test_doctests():
    result = doctest.testmod(tree_module)
    assert result.attempted > 0 and result.failed == 0
