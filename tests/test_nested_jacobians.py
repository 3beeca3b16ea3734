"""Jacobians and named transformations inside a compiled function (srctrans.nested_calls).

``srctrans.jacfwd(f)(x, p)`` (``jacrev``, ``hessian``) written inside a function becomes a call
of a function building the Jacobian column by column from ``f``'s tangent file, which Numba
compiles with the caller: Newton's method with the Jacobian inside the compiled loop, as JAX
users write it. A transformation named once and then only called
(``per_example = srctrans.vmap(srctrans.grad(loss), ...)``) reads as if written in each call.
"""

from __future__ import annotations

import numpy as np
import pytest

import srctrans
from srctrans.errors import CompileError

MODEL = """
import numpy as np
import srctrans

def system(x, p):
    return np.array([x[0] ** 2 + x[1] ** 2 + x[2] ** 2 - p[0], x[0] * x[1] * x[2] - p[1],
                     np.exp(x[0]) - x[1] + np.sin(x[2]) - p[2]])

def newton(x, p, iters):
    for _ in range(iters):
        J = srctrans.jacfwd(system)(x, p)
        x = x - np.linalg.solve(J, system(x, p))
    return x

def newton_named(x, p, iters):
    jacobian = srctrans.jacfwd(system)
    for _ in range(iters):
        x = x - np.linalg.solve(jacobian(x, p), system(x, p))
    return x

def energy(x, p):
    return np.sum(np.sin(x) * p) ** 2 + x[0] * x[1]

def curvature(x, p):
    return srctrans.hessian(energy)(x, p), srctrans.jacrev(system, argnums=1)(x, p)

def along(t, p):
    return srctrans.jacfwd(np.multiply)(t, p)

def example_loss(W, b, x, y):
    return 0.5 * np.sum((np.tanh(W @ x + b) - y) ** 2)

def clipped_sum(W, b, X, Y):
    per_example = srctrans.vmap(srctrans.grad(example_loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))
    gW, gb = per_example(W, b, X, Y)
    norms = np.sqrt(np.sum(gW ** 2, axis=(1, 2)) + np.sum(gb ** 2, axis=1))
    scale = np.minimum(1.0, 1.0 / norms)
    return np.sum(scale[:, None, None] * gW, axis=0), np.sum(scale[:, None] * gb, axis=0)

def with_aux(x, p):
    return srctrans.jacfwd(system, has_aux=True)(x, p)
"""

X0 = np.array([1.0, 0.5, 0.3])
P = np.array([3.0, 0.2, 1.0])


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import importlib
    import sys

    folder = tmp_path_factory.mktemp("jacobians")
    (folder / "jacmodel.py").write_text(MODEL)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("jacmodel")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("jacmodel", None)


def _newton_outside(model, x, p, iters):
    jacobian = srctrans.jacfwd(model.system)
    for _ in range(iters):
        x = x - np.linalg.solve(jacobian(x, p), model.system(x, p))
    return x


@pytest.mark.parametrize("name", ["newton", "newton_named"])
def test_newton_with_the_jacobian_inside_the_compiled_loop(model, name):
    fast = srctrans.jit(getattr(model, name))
    got = fast(X0, P, 20)
    np.testing.assert_allclose(got, _newton_outside(model, X0, P, 20), rtol=1e-12)
    np.testing.assert_allclose(model.system(got, P), 0.0, atol=1e-12)
    code = [ln.strip() for ln in fast.source().splitlines() if not ln.strip().startswith("#")]
    assert any("system_jacfwd(x, p)" in ln for ln in code)
    assert not any("srctrans.jacfwd" in ln for ln in code)


def test_the_jacobian_matches_jacfwd_outside_at_random_points(model):
    fast = srctrans.jit(model.newton)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=3)
        np.testing.assert_allclose(fast(x, P, 1), _newton_outside(model, x, P, 1), rtol=1e-13)


def test_hessian_and_jacrev_with_argnums_inside(model):
    H, Jp = srctrans.jit(model.curvature)(X0, P)
    np.testing.assert_allclose(H, srctrans.hessian(model.energy)(X0, P), rtol=1e-12)
    np.testing.assert_allclose(Jp, srctrans.jacrev(model.system, argnums=1)(X0, P), rtol=1e-12)
    assert H.shape == (3, 3) and Jp.shape == (3, 3)
    # float32 stays float32, as JAX's Jacobians do
    H32, _ = srctrans.jit(model.curvature)(X0.astype(np.float32), P.astype(np.float32))
    assert H32.dtype == np.float32
    np.testing.assert_allclose(H32, H, rtol=1e-4)


def test_a_scalar_argument(model):
    got = srctrans.jit(model.along)(0.5, P)
    np.testing.assert_array_equal(got, P)
    assert got.shape == (3,)


def test_uncompiled_the_rewritten_function_gives_the_same(model, as_python):
    np.testing.assert_allclose(srctrans.jit(model.newton)(X0, P, 20), _newton_outside(model, X0, P, 20), rtol=1e-12)
    H, Jp = srctrans.jit(model.curvature)(X0, P)
    np.testing.assert_allclose(H, srctrans.hessian(model.energy)(X0, P), rtol=1e-12)


def test_a_named_vmap_of_a_grad_inside_a_compiled_function(model):
    """DP-SGD's per-example gradients, named in the step as JAX code does (Numba met the name)."""
    rng = np.random.default_rng(0)
    W, b, X, Y = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(6, 3)), rng.normal(size=(6, 4))
    gW, gb = srctrans.jit(model.clipped_sum)(W, b, X, Y)
    each = [srctrans.grad(model.example_loss, argnums=(0, 1))(W, b, x, y) for x, y in zip(X, Y)]
    scale = [min(1.0, 1.0 / np.sqrt(np.sum(a**2) + np.sum(c**2))) for a, c in each]
    np.testing.assert_allclose(gW, sum(s * a for s, (a, _) in zip(scale, each)), rtol=1e-12)
    np.testing.assert_allclose(gb, sum(s * c for s, (_, c) in zip(scale, each)), rtol=1e-12)


def test_what_stays_for_numba_says_what_compiles(model):
    with pytest.raises(CompileError, match="compiles when it is called where it is written"):
        srctrans.jit(model.with_aux)(X0, P)


def test_jit_of_a_small_jacobian_is_one_compiled_function(model):
    """jit(jacfwd(f)) of a few numbers runs one compiled function (the loop above), from the first
    call on: every call gives the same bits, the numbers of jacfwd without jit."""
    fast = srctrans.jit(srctrans.jacfwd(model.system))
    first, again = fast(X0, P), fast(X0, P)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, srctrans.jacfwd(model.system)(X0, P), rtol=1e-13)
    assert "system_jacfwd" in fast.source() and "for k in range(1, n):" in fast.source()
    by_p = srctrans.jit(srctrans.jacfwd(model.system, argnums=1))(X0, P)
    np.testing.assert_array_equal(by_p, -np.eye(3))
    # a pytree argument takes the vmap file, as before
    tree = srctrans.jit(srctrans.jacfwd(lambda d: model.system(d["x"], P)))({"x": X0})
    np.testing.assert_allclose(tree["x"], first, rtol=1e-13)


def test_jit_of_the_jacobian_of_an_empty_array_is_empty():
    jacobian = srctrans.jit(srctrans.jacfwd(lambda x: np.sin(x) * 2.0))
    assert jacobian(np.zeros(0)).shape == (0, 0)
    np.testing.assert_allclose(jacobian(np.array([0.1, 0.2])), np.diag(2.0 * np.cos([0.1, 0.2])), rtol=1e-14)
