"""Python as people write it (issue 20 §2-§3): indexed tuples of library results and displays,
grad of a non-scalar function, chained methods, ``np.r_``/``np.c_``, names that stop aliasing."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

from ..conftest import central_differences, module_from_text

MODEL = '''
import numpy as np


def slogdet_indexed(a):
    return np.linalg.slogdet(a)[1]


def split_indexed(x):
    return np.sum(np.split(x, 2)[0] ** 2) + np.sum(np.sin(np.split(x, [1, 3])[-1]))


def split_indexed_and_measured(x):
    parts = np.split(x, 2)
    return np.sum(parts[0] ** 2) * len(parts) + np.sum(np.cos(parts[-1]))


def slogdet_both_indexed(a):
    return np.linalg.slogdet(a)[0] * np.linalg.slogdet(a * a)[-1]


def tuple_display_indexed(x):
    y = x * 2.0
    t = (x, y)
    return np.sum(t[0] * t[1])


def list_display_indexed(x):
    t = [x, np.sin(x)]
    return np.sum(t[-1] ** 2 * t[0])


def doubled(x):
    return x * 2.0


def outer(x):
    return np.outer(x, np.sin(x))


def two_sums(x):
    return np.sum(x), np.sum(x * x)


def vector_with_aux(x):
    return x * 2.0, np.sum(x)


def transposed_reshaped(a):
    return np.sum(np.sin(a.T.reshape(2, -1)) * np.arange(6.0).reshape(2, 3))


def summed_then_max(a):
    return (a**2).sum(axis=0).max()


def copied_raveled_cumsum(a):
    return a.T.copy().ravel().cumsum()[-2]


def transposed_three_times(a):
    return a.T.transpose().T.sum(axis=1).prod()


def reshaped_raveled(a):
    return np.sum(np.cos(a.reshape(3, 2).ravel()) * np.arange(6.0))


def r_of_arrays(x):
    return np.sum(np.r_[x, x * 2] ** 2 * np.arange(8.0))


def r_of_slices_of_x(x):
    return np.sum(np.r_[x[1:], x[:2]] ** 3)


def c_of_arrays(x):
    return np.sum(np.c_[x, x * 2] ** 2 * np.arange(8.0).reshape(4, 2))


def r_with_numbers_and_ranges(x):
    return np.sum(np.r_[0:4] * x) + np.sum(np.r_[x, 1.0, 0:2, 0:1:3j] ** 2 * np.arange(10.0))


def c_with_a_matrix_and_a_range(x):
    return np.sum(np.c_[np.outer(x, x), np.sin(x), 0:4] * np.arange(24.0).reshape(4, 6))


def r_with_a_directive(x):
    return np.sum(np.r_['0,2', x, x] ** 2)


def rebound_then_updated(a):
    y = a
    y = y * y
    y = y * a
    y /= 3.0
    return np.sum(y)


def slice_rebound_then_updated(a):
    y = a[1:]
    y = y * 2.0
    y += 1.0
    return np.sum(y * y)


def transposed_rebound_then_written(a):
    b = a * 1.0
    y = b.T
    y = np.sin(y)
    y *= 3.0
    y[0] = 2.0
    b[1] = 5.0
    return np.sum(y * b)


def alias_updated(a):
    y = a * 1.0
    z = y
    y /= 3.0
    return np.sum(y * z)


def alias_updated_after_the_other_is_rebound(a):
    b = a * 1.0
    y = b
    b += 1.0
    y = y * y
    return np.sum(y * b)


def indexed_in_a_loop(x):
    s = 0.0
    for i in range(3):
        parts = np.split(x * (i + 1.0), 2)
        s = s + np.sum(parts[1] ** 2)
    return s
'''

A = np.array([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.3, 0.2, 1.5]])
X = np.array([0.3, 0.7, -0.2, 1.1])


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with module_from_text(tmp_path_factory.mktemp("written"), "pythonaswritten", MODEL) as module:
        yield module


INDEXED = [("slogdet_indexed", A), ("split_indexed", X), ("slogdet_both_indexed", A), ("tuple_display_indexed", X), ("split_indexed_and_measured", X),
           ("list_display_indexed", X), ("indexed_in_a_loop", X)]


@pytest.mark.parametrize("name,arg", INDEXED, ids=[n for n, _ in INDEXED])
def test_grad_jit_grad_and_jvp_of_an_indexed_tuple(m, name, arg):
    f = getattr(m, name)
    want = central_differences(f, (arg,), 0)
    got = srctrans.grad(f)(arg)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(arg), got, rtol=1e-12, atol=1e-14)
    t = np.linspace(0.5, 1.5, arg.size).reshape(arg.shape)
    value, tangent = srctrans.jvp(f, (arg,), (t,))
    np.testing.assert_allclose(value, f(arg), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(want * t), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["split_indexed", "list_display_indexed"])
def test_vmap_of_an_indexed_tuple(m, name):
    f = getattr(m, name)
    xs = np.stack([X, 2.0 * X, -X])
    np.testing.assert_allclose(srctrans.vmap(f)(xs), [f(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(
        srctrans.vmap(srctrans.grad(f))(xs), [central_differences(f, (x,), 0) for x in xs], rtol=1e-6, atol=1e-8
    )


def test_an_indexed_library_result_is_read_as_an_unpacking(m):
    text = srctrans.grad(m.slogdet_indexed).source()
    assert "_0, " in text and "slogdet" in text


NON_SCALAR = [
    ("grad", "doubled", "an array of shape \\(4,\\)"),
    ("grad", "outer", "an array of shape \\(4, 4\\)"),
    ("grad", "two_sums", "a tuple of 2 values; return \\(output, aux\\) with has_aux=True"),
    ("value_and_grad", "doubled", "an array of shape \\(4,\\)"),
    ("value_and_grad", "two_sums", "a tuple of 2 values"),
    ("grad_aux", "vector_with_aux", "an array of shape \\(4,\\)"),
]


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
@pytest.mark.parametrize("how,name,says", NON_SCALAR, ids=[f"{h}-{n}" for h, n, _ in NON_SCALAR])
def test_grad_of_a_non_scalar_output_says_what_it_got(m, how, name, says, compiled):
    """JAX: 'Gradient only defined for scalar-output functions. Output had shape: (3,)'. The
    2-D output failed to compile under jit, and a tuple said 'grad_seed() takes 1 positional
    argument but 2 were given'."""
    f = getattr(m, name)
    g = srctrans.grad(f, has_aux=True) if how == "grad_aux" else getattr(srctrans, how)(f)
    if compiled:
        g = srctrans.jit(g)
    with pytest.raises(TypeError, match="grad requires a scalar output, got " + says) as info:
        g(X)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"pythonaswritten.py:{f.__code__.co_firstlineno + 1}" in notes  # the user's return line


B = np.arange(1.0, 7.0).reshape(2, 3) / 3
CHAINED = ["transposed_reshaped", "summed_then_max", "copied_raveled_cumsum", "transposed_three_times", "reshaped_raveled"]


@pytest.mark.parametrize("name", CHAINED)
def test_chained_methods_are_differentiated(m, name):
    """``a.T.reshape(2, -1)`` said 'cannot differentiate a call of a.T.reshape, a value computed
    inside the function', and a method of a method's result (``x.reshape(3, 2).ravel()``) 'a
    call of t1'; ``a.T.transpose()`` failed to compile in jit(grad)."""
    f = getattr(m, name)
    want = central_differences(f, (B,), 0)
    got = srctrans.grad(f)(B)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    if name != "transposed_reshaped":  # (Numba reshapes no transposed array: jit(f) refuses it as well)
        np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(B), got, rtol=1e-12, atol=1e-14)
    t = np.linspace(0.5, 1.5, B.size).reshape(B.shape)
    np.testing.assert_allclose(srctrans.jvp(f, (B,), (t,))[1], np.sum(want * t), rtol=1e-6, atol=1e-8)


JOINED = ["r_of_arrays", "r_of_slices_of_x", "c_of_arrays", "r_with_numbers_and_ranges", "c_with_a_matrix_and_a_range"]


@pytest.mark.parametrize("name", JOINED)
def test_r_and_c_are_differentiated(m, name):
    """np.r_[x, x * 2] said 'no derivative rule for getitem with respect to its argument 2',
    and jit could not compile np.r_ at all; both become np.concatenate."""
    f = getattr(m, name)
    want = central_differences(f, (X,), 0)
    got = srctrans.grad(f)(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(X), got, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(srctrans.jit(f)(X), f(X), rtol=1e-12)
    np.testing.assert_allclose(srctrans.jvp(f, (X,), (np.ones(4),))[1], np.sum(want), rtol=1e-6, atol=1e-8)
    xs = np.stack([X, 2.0 * X])
    np.testing.assert_allclose(srctrans.vmap(f)(xs), [f(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(
        srctrans.vmap(srctrans.grad(f))(xs), [central_differences(f, (x,), 0) for x in xs], rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_r_with_a_string_directive_is_refused_where_it_is(m, how):
    """jvp gave a zero tangent; grad said 'cannot differentiate through ('0,2', x, x) written
    inside the call'."""
    f = m.r_with_a_directive
    with pytest.raises(srctrans.errors.UnsupportedSyntaxError, match="np.r_\\[...\\] with a string directive") as info:
        srctrans.grad(f)(X) if how == "grad" else srctrans.jvp(f, (X,), (np.ones(4),))
    assert f"pythonaswritten.py:{f.__code__.co_firstlineno + 1}:" in str(info.value)


OWN = ["rebound_then_updated", "slice_rebound_then_updated", "transposed_rebound_then_written"]


@pytest.mark.parametrize("name", OWN)
def test_an_update_after_the_name_has_an_array_of_its_own(m, name):
    """``y = a; y = y * y; y = y * a; y /= 3.0`` was refused ('y /= ... updates an array another
    name also refers to') although from ``y = y * y`` on ``y`` no longer shares ``a``'s array."""
    f = getattr(m, name)
    want = central_differences(f, (X,), 0)
    got = srctrans.grad(f)(X.copy())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(X.copy()), got, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(srctrans.jvp(f, (X.copy(),), (np.ones(4),))[1], np.sum(want), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["alias_updated", "alias_updated_after_the_other_is_rebound"])
@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_an_update_of_a_shared_array_is_still_refused(m, name, how):
    f = getattr(m, name)
    with pytest.raises(srctrans.errors.UnsupportedSyntaxError, match="updates an array another name also refers to"):
        srctrans.grad(f)(X.copy()) if how == "grad" else srctrans.jvp(f, (X.copy(),), (np.ones(4),))


def test_jit_of_a_transposed_reshape_says_what_numba_wants(m):
    """Numba refuses to reshape a.T (NumPy copies it); the error says how to write it."""
    with pytest.raises(NotImplementedError) as info:
        srctrans.jit(srctrans.grad(m.transposed_reshaped))(B)
    assert "np.ascontiguousarray(a.T).reshape" in "\n".join(info.value.__notes__)
