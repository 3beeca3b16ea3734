"""``row = X[i]; row += v`` updates ``X`` in NumPy: transformations follow it or refuse it.

Reverse and forward mode compute ``row += v`` as a new value (``row = row + v``). When
``row`` may be a view (``X[i]`` is a row of a matrix, a number of a vector: the source alone
cannot tell), the generated file checks at run time and raises a located
:class:`~srctrans.errors.ViewUpdateError` when the arrays really share memory; a number or a
copy (``X[idx]`` with an index array) goes on as before. vmap copies an unbatched value to
batch it, which would cut the view from its array: such a function runs one example at a
time. Every case was a silently wrong value before.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.errors import UnsupportedSyntaxError, ViewUpdateError

from .conftest import central_differences, module_from_text

MODEL = '''
import numpy as np


def row_update(X, v):
    row = X[0]
    row += v
    return np.sum(X * X)


def local_row_update(X, v):
    Z = X * 1.0
    row = Z[1]
    row *= v
    return np.sum(Z * X)


def number_update(x, v):
    s = x[0]
    s += v
    return s * x[1]


def copied_rows_update(X, v):
    rows = X[np.array([1, 0])]
    rows += v
    return np.sum(rows * rows) + np.sum(X)


def alias_write(X, v):
    Y = X
    Y[0] = v
    return np.sum(X * X)


def transposed_write(X, v):
    Y = X.T
    Y[0] = v[:2]
    return np.sum(X * np.sin(X))


def rows_unpacked(X, v):
    Z = X * 1.0
    a, b = Z
    a *= v
    return np.sum(Z * X)


def through_asarray(X, v):
    Z = X * 1.0
    row = np.asarray(Z[0])
    row *= v
    return np.sum(Z * X)


def view_in_a_branch(X, Y, v):
    if v[0] > 0:
        row = X[0]
    else:
        row = Y[0]
    row *= v
    return np.sum(X * X) + np.sum(Y * Y)


def base_reassigned(X, v):
    A = X * 1.0
    row = A[0]
    A = A * 2.0
    row *= v
    return np.sum(A)


def view_made_after_the_update(X, v):
    row = X[0] * 1.0
    row += v
    Z = X * 2.0
    row = Z[0]
    return np.sum(row * v)


def numbers_unpacked(x, v):
    a, b = x[0], x[1]
    a *= v
    return a * b


def second_view_written(X, v):
    W = X.T
    row = X[0]
    W[0, 0] = 5.0  # changes row too
    s = np.sum(row * v)
    row = row * v
    return s + np.sum(row)


def counts_in_its_argument(X, v):
    X[0, 0] += 1.0
    return np.sum(X) * v


def pick(Z, i):
    return Z[i]


def same(Z):
    return Z


def pick_through(Z, i):
    return pick(Z, i)


def one_of(A, B, first):
    if first:
        return A.T
    return B


def fresh_row(Z, i):
    return Z[i] * 1.0


def row_from_a_helper(X, v):
    Z = X * 1.0
    row = pick(Z, 0)
    row *= v
    return np.sum(Z * X)


def array_from_a_helper(X, v):
    Z = X * 1.0
    W = same(Z)
    W += v
    return np.sum(Z * X)


def row_from_a_wrapper(X, v):
    Z = X * 1.0
    row = pick_through(Z=Z, i=1)
    row -= v
    return np.sum(Z * X)


def view_of_either(X, v):
    Z = X * 1.0
    T = one_of(X, Z, False)
    T *= v
    return np.sum(Z * X)


def write_through_a_helper(X, v):
    Z = X * 1.0
    row = pick(Z, 0)
    row[1] = v[0]
    return np.sum(Z * X)


def fresh_from_a_helper(X, v):
    Z = X * 1.0
    row = fresh_row(Z, 0)
    row *= v
    row[0] = v[1]
    return np.sum(Z * X) + np.sum(row)


def double_buffered(x, n):
    cur = x * 1.0
    nxt = np.zeros_like(x)
    for _ in range(n):
        for i in range(1, x.shape[0] - 1):
            nxt[i] = 0.5 * (cur[i - 1] + cur[i + 1])
        cur, nxt = nxt, cur
    return np.sum(cur * x)


def renewed(h):
    h = np.tanh(h)
    return h


def copied_and_written(x):
    x = np.copy(x)
    x[0] = 0.0
    return x


def through_renewed(X, v):
    y = renewed(X * 1.0)
    y[0] = y[0] * v
    z = copied_and_written(X)
    z *= v
    return np.sum(y * y) + np.sum(z * X)


def split(Z):
    return Z[0], Z[1]


def from_a_tuple(X, v):
    Z = X * 1.0
    a, b = split(Z)
    a *= v
    return np.sum(Z * X) + np.sum(b)


def pick_columns(Z):
    return Z.T


def view_of_a_view(X, v):
    Z = X * 1.0
    r = pick(pick_columns(Z), 0)
    r *= v[:2]
    return np.sum(Z * X)


def of_a_temporary(X, v):
    row = pick(X * 2.0, 0)
    row *= v
    other = (X * 3.0)[1]
    other += v
    return np.sum(row * other)


lam_pick = lambda Z, i: Z[i]  # noqa: E731
lam_scale = lambda Z: Z * 2.0  # noqa: E731


def through_a_fresh_lambda(X, v):
    r = lam_scale(X)
    r[0] = r[0] * v
    return np.sum(r * r)


def through_a_lambda(X, v):
    Z = X * 1.0
    r = lam_pick(Z, 0)
    r *= v
    return np.sum(Z * X)


class Rows:
    def first(self, a, b):
        return a[0]


rows = Rows()


def through_a_method(X, v):
    Z = X * 1.0
    r = rows.first(Z, v)
    r *= v
    return np.sum(Z * X)


def make(h):
    def inner(Z):
        return h(Z)
    return inner


same_made = make(lambda Z: Z)
fresh_made = make(lambda Z: Z * 2.0)


def through_fresh_made(X, v):
    r = fresh_made(X)
    r[0] = r[0] * v
    return np.sum(r * r)


def through_same_made(X, v):
    Z = X * 1.0
    r = same_made(Z)
    r *= v
    return np.sum(Z * X)


def real_rows(h):
    h = h.real  # the same array (a view of it): not a new value
    return h[0]


def through_real_rows(X, v):
    Z = X * 1.0
    row = real_rows(Z)
    row *= v
    return np.sum(Z * X)


def through_a_flip(X, v):
    Z = X * 1.0
    T = np.flip(Z)  # a view the analysis does not name: T is not an array of its own
    row = T[0]
    row *= v
    return np.sum(Z * X)


def c3(x):
    return x[0:2]


def c2(x):
    a = c3(x * 1.0)
    b = c3(x * 2.0)
    return c3(x) if a is not b else a


def c1(x):
    a = c2(x * 1.0)
    b = c2(x * 2.0)
    return c2(x) if a is not b else a


def c0(x):
    a = c1(x * 1.0)
    b = c1(x * 2.0)
    return c1(x) if a is not b else a
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("views"), "viewmodel", MODEL) as module:
        yield module


X = np.arange(6.0).reshape(2, 3) / 7 + 0.3
V = np.array([0.3, 0.7, -0.2])


def _transforms():
    return {
        "grad": lambda f: srctrans.grad(f, argnums=(0, 1)),
        "jvp": lambda f: (lambda X, v: srctrans.jvp(f, (X, v), (np.ones_like(X), np.ones_like(v)))),
        "hessian": lambda f: srctrans.hessian(f, argnums=1),
    }


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("transform", sorted(_transforms()))
@pytest.mark.parametrize("name", ["row_update", "local_row_update"])
def test_an_update_through_a_view_is_refused_at_the_users_line(m, name, transform, compiled):
    fn = _transforms()[transform](getattr(m, name))
    if compiled:
        fn = srctrans.jit(fn)
    with pytest.raises(ViewUpdateError) as info:
        fn(X.copy(), V)
    err = info.value
    assert err.filename.endswith("viewmodel.py")
    line = {"row_update": 7, "local_row_update": 14}[name]
    assert (err.line, err.source_line.strip()) == (line, "row += v" if name == "row_update" else "row *= v")
    assert err.col == 4
    assert "is a view of" in str(err) and "^^^^" in str(err)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name, args", [("number_update", (V, 0.4)), ("copied_rows_update", (X, V))])
def test_a_number_or_a_copy_is_updated_as_a_new_value(m, name, args, compiled):
    f = getattr(m, name)
    g = srctrans.value_and_grad(f, argnums=(0, 1))
    if compiled:
        g = srctrans.jit(g)
    value, (g0, g1) = g(*[np.copy(a) for a in args])
    np.testing.assert_allclose(value, f(*[np.copy(a) for a in args]), rtol=1e-12)
    np.testing.assert_allclose(g0, central_differences(f, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g1, central_differences(f, args, 1), rtol=1e-6, atol=1e-8)
    tangent = srctrans.jvp(f, tuple(np.copy(a) for a in args), (np.zeros_like(args[0]), np.ones_like(args[1])))[1]
    np.testing.assert_allclose(tangent, np.sum(central_differences(f, args, 1)), rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(
    "name", ["row_update", "local_row_update", "alias_write", "transposed_write", "second_view_written", "counts_in_its_argument"]
)
def test_vmap_runs_one_example_at_a_time_when_a_copy_would_cut_a_view(m, name, compiled):
    f = getattr(m, name)
    vs = np.stack([V, 2 * V, -V])
    ours = X.copy()
    batched = srctrans.vmap(f, in_axes=(None, 0))
    got = (srctrans.jit(batched) if compiled else batched)(ours, vs)
    theirs = X.copy()  # per example, in order, each seeing the writes of the ones before
    want = np.stack([f(theirs, v) for v in vs])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if not compiled:
        header = next(line for line in batched._last()[0].gen.path.read_text().splitlines() if line.startswith("# vmap method"))
        assert "shares its array with" in header or "is written in place" in header


def test_a_batched_matrix_keeps_its_views(m):
    """With ``X`` batched, ``row`` is a view of the batched array: vectorized, and equal per example."""
    Xs = np.stack([X, X + 1.0, X * 2.0])
    batched = srctrans.vmap(m.row_update, in_axes=(0, None))
    got = batched(Xs.copy(), V)
    want = np.stack([m.row_update(x.copy(), V) for x in Xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert batched._last()[0].gen.meta["vmap"]["method"] == "vectorize"


@pytest.mark.parametrize("name", ["rows_unpacked", "through_asarray"])
def test_views_by_unpacking_and_asarray_are_checked(m, name):
    with pytest.raises(ViewUpdateError, match="is a view of"):
        srctrans.grad(getattr(m, name), argnums=(0, 1))(X.copy(), V)


@pytest.mark.parametrize("name", ["view_in_a_branch", "base_reassigned"])
def test_a_view_whose_array_cannot_be_named_is_refused_at_build(m, name):
    f = getattr(m, name)
    args = (X.copy(), X.copy() * 2.0, V) if name == "view_in_a_branch" else (X.copy(), V)
    for transform in (lambda: srctrans.grad(f, argnums=len(args) - 1)(*args),
                      lambda: srctrans.jvp(f, args, tuple(np.ones_like(a) for a in args))):
        with pytest.raises(UnsupportedSyntaxError, match="may update an array another name refers to"):
            transform()


@pytest.mark.parametrize("name, args", [
    ("view_made_after_the_update", (X, V)), ("numbers_unpacked", (V, 0.4)),
])
def test_updates_that_no_view_reaches_are_differentiated(m, name, args):
    f = getattr(m, name)
    g = srctrans.grad(f, argnums=(0, 1))
    for fn in (g, srctrans.jit(g)):
        got = fn(*[np.copy(a) for a in args])
        for i in (0, 1):
            np.testing.assert_allclose(got[i], central_differences(f, args, i), rtol=1e-6, atol=1e-8)


def test_double_buffering_keeps_its_forward_derivative(m):
    """cur, nxt = nxt, cur between arrays written in place stays one unpacking (no shared copies)."""
    x = np.array([0.2, 1.0, -0.5, 0.7, 0.3])
    f = m.double_buffered
    tangent = srctrans.jvp(f, (x, 3), (np.ones_like(x), 0))[1]
    np.testing.assert_allclose(tangent, np.sum(central_differences(lambda x: f(x, 3), (x,), 0)), rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("transform", sorted(_transforms()))
@pytest.mark.parametrize("name, line, text", [
    ("row_from_a_helper", 126, "row *= v"),
    ("array_from_a_helper", 133, "W += v"),
    ("row_from_a_wrapper", 140, "row -= v"),
    ("view_of_either", 147, "T *= v"),
])
def test_a_view_returned_by_a_function_of_yours_is_checked(m, name, line, text, transform, compiled):
    """``row = pick(Z, 0)`` where ``pick`` returns ``Z[i]`` (or ``Z``, or a view through another
    function of the user's): the update is checked like ``row = Z[0]`` (it gave wrong values)."""
    fn = _transforms()[transform](getattr(m, name))
    if compiled:
        fn = srctrans.jit(fn)
    with pytest.raises(ViewUpdateError, match="is a view of Z") as info:
        fn(X.copy(), V)
    assert (info.value.line, info.value.source_line.strip()) == (line, text)


@pytest.mark.parametrize("jvp", [False, True])
def test_a_write_into_a_view_returned_by_a_function_of_yours_is_refused(m, jvp):
    f = m.write_through_a_helper
    with pytest.raises(UnsupportedSyntaxError, match="writing into row, which may be a view of Z") as info:
        if jvp:
            srctrans.jvp(f, (X.copy(), V), (np.ones_like(X), np.ones_like(V)))
        else:
            srctrans.grad(f, argnums=(0, 1))(X.copy(), V)
    assert info.value.line == 154


def test_a_new_array_from_a_function_of_yours_is_differentiated(m):
    """``fresh_row`` returns a new array: no check, no refusal, and the right derivatives."""
    f = m.fresh_from_a_helper
    g = srctrans.grad(f, argnums=(0, 1))
    for fn in (g, srctrans.jit(g)):
        got = fn(X.copy(), V)
        for i in (0, 1):
            np.testing.assert_allclose(got[i], central_differences(f, (X, V), i), rtol=1e-6, atol=1e-8)
    assert "refuse_view_update" not in srctrans.source(g)
    tangent = srctrans.jvp(f, (X.copy(), V), (np.zeros_like(X), np.ones_like(V)))[1]
    np.testing.assert_allclose(tangent, np.sum(central_differences(f, (X, V), 1)), rtol=1e-6)


def test_which_parameters_a_function_may_return_a_view_of(m):
    from srctrans.analysis.views import returned_views

    assert returned_views(m.pick) == {0}
    assert returned_views(m.same) == {0}
    assert returned_views(m.pick_through) == {0}
    assert returned_views(m.one_of) == {0, 1}
    assert returned_views(m.fresh_row) == set()
    assert returned_views(m.row_update) == set()


@pytest.mark.parametrize("name", ["through_renewed", "of_a_temporary", "through_fresh_made", "through_a_fresh_lambda"])
def test_new_arrays_from_functions_of_yours_are_not_taken_for_views(m, name):
    """A function that assigns its parameter anew (h = np.tanh(h)), or a view of an array nothing
    else reads: differentiated as before, no refusal (the first version refused them)."""
    f = getattr(m, name)
    g = srctrans.grad(f, argnums=(0, 1))
    for fn in (g, srctrans.jit(g)):
        got = fn(X.copy(), V)
        for i in (0, 1):
            np.testing.assert_allclose(got[i], central_differences(f, (X, V), i), rtol=1e-6, atol=1e-8)
    tangent = srctrans.jvp(f, (X.copy(), V), (np.zeros_like(X), np.ones_like(V)))[1]
    np.testing.assert_allclose(tangent, np.sum(central_differences(f, (X, V), 1)), rtol=1e-6)


@pytest.mark.parametrize("name", ["from_a_tuple", "view_of_a_view", "through_a_lambda", "through_a_method", "through_same_made",
                                  "through_real_rows", "through_a_flip"])
def test_views_through_tuples_lambdas_methods_and_closures_are_checked(m, name):
    f = getattr(m, name)
    for transform in (lambda: srctrans.grad(f, argnums=(0, 1))(X.copy(), V),
                      lambda: srctrans.jvp(f, (X.copy(), V), (np.ones_like(X), np.ones_like(V)))):
        with pytest.raises(ViewUpdateError):
            transform()


def test_closures_of_one_factory_are_told_apart(m):
    """The same code object, other functions: which one returns a view does not depend on call order."""
    from srctrans.analysis.views import returned_views

    assert returned_views(m.fresh_made) == set() and returned_views(m.same_made) == {0}
    assert returned_views(m.renewed) == set() and returned_views(m.copied_and_written) == set()
    assert returned_views(m.rows.first) == {0} and returned_views(m.lam_pick) == {0}


def test_each_function_is_read_once_for_a_chain_of_calls(m, monkeypatch):
    """c0 calls c1 three times, c1 calls c2 three times ...: each is read once (the first version
    read them 3**depth times: a build of depth 10 took minutes)."""
    from srctrans.analysis import views

    read = []
    original = views._returned_views
    monkeypatch.setattr(views, "_returned_views", lambda fn: read.append(fn.__name__) or original(fn))
    assert views.returned_views(m.c0) == {0}
    assert sorted(read) == ["c0", "c1", "c2", "c3"]
