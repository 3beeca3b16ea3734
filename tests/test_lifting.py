"""Lambdas and defs inside a transformed function (srctrans.lifting): lifted to functions of their own,
the enclosing names they read passed at each call; checked against central differences, stacking,
and the same function run by Python."""

from __future__ import annotations

import numpy as np
import pytest

import srctrans

SOURCE = '''
import numpy as np
import srctrans


def loss(w, X, y):
    return np.mean((np.tanh(X @ w) - y) ** 2)


grad_loss = srctrans.grad(loss)


def hvp(w, X, y, v):
    return srctrans.jvp(lambda w_: grad_loss(w_, X, y), (w,), (v,))[1]


def newton_cg(w, X, y, iters, cg_iters):
    for _ in range(iters):
        r = -grad_loss(w, X, y)
        p = np.zeros_like(w)
        d = r
        rs = np.dot(r, r)
        for _ in range(cg_iters):
            Hd = srctrans.jvp(lambda w_: grad_loss(w_, X, y), (w,), (d,))[1]
            alpha = rs / np.dot(d, Hd)
            p = p + alpha * d
            r = r - alpha * Hd
            rs_new = np.dot(r, r)
            d = r + (rs_new / rs) * d
            rs = rs_new
        w = w + p
    return w


def scaled(x, a):
    h = lambda t: np.sin(t) * a
    return np.sum(h(x) + h(2.0 * x))


def stepped(x, a):
    def step(t):
        return t * a + np.cos(t)
    y = step(x)
    for _ in range(3):
        y = step(y)
    return np.sum(y)


def inline(x, a):
    return np.sum((lambda t: t * t * a)(x))


def two(x, a):
    h1 = lambda t: t * a
    def h2(t):
        return h1(t) + h1(t * t)
    return np.sum(h2(x))


def per_example(x, W):
    f = lambda r: np.tanh(r @ W)
    return np.sum(srctrans.vmap(f)(x))


def grad_inside(x, X):
    g = srctrans.grad(lambda u: np.sum(np.tanh(X @ u)))(x)
    return np.sum(g * g)


def system(x, c):
    rhs = lambda s: np.array([s[1] * c, -np.sin(s[0]), s[0] * s[2]])
    return rhs(x) + 0.5 * rhs(rhs(x))
'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    from tests.conftest import module_from_text

    with module_from_text(tmp_path_factory.mktemp("lifting"), "lifted_user", SOURCE) as module:
        yield module


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    return {"x": rng.normal(size=3), "X": rng.normal(size=(5, 3)), "y": rng.normal(size=5), "v": rng.normal(size=3),
            "W": rng.normal(size=(3, 2)), "xs": rng.normal(size=(4, 3))}


# name -> arguments (the first is differentiated)
SCALARS = {
    "scaled": lambda d: (d["x"], 1.3),
    "stepped": lambda d: (d["x"], 0.7),
    "inline": lambda d: (d["x"], 0.3),
    "two": lambda d: (d["x"], 0.5),
    "per_example": lambda d: (d["xs"], d["W"]),
    "grad_inside": lambda d: (d["x"], d["X"]),
}


def _jacobian(f, x, eps=1e-6):
    """Central differences, a column per entry of ``x``."""
    cols = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


def _directional(f, args, direction):
    def along(t):
        return f(args[0] + t * direction, *args[1:])

    return (along(1e-6) - along(-1e-6)) / 2e-6


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_grad_of_a_function_with_inner_functions(mod, data, as_python, name):
    f = getattr(mod, name)
    args = SCALARS[name](data)
    direction = np.random.default_rng(1).normal(size=np.shape(args[0]))
    g = srctrans.grad(f)(*args)
    assert np.sum(g * direction) == pytest.approx(_directional(f, args, direction), rel=1e-6, abs=1e-8)
    assert srctrans.value_and_grad(f)(*args)[0] == pytest.approx(f(*args), rel=1e-12)


@pytest.mark.parametrize("name", ["two", "grad_inside"])
def test_jit_and_jit_of_grad_agree_with_python(mod, data, name):
    f = getattr(mod, name)
    args = SCALARS[name](data)
    assert srctrans.jit(f)(*args) == pytest.approx(f(*args), rel=1e-12)
    np.testing.assert_allclose(srctrans.jit(srctrans.grad(f))(*args), srctrans.grad(f)(*args), rtol=1e-12)


def test_hessian_vector_product_by_a_jvp_of_a_lambda(mod, data, as_python):
    w, X, y, v = data["x"], data["X"], data["y"], data["v"]
    expected = _jacobian(lambda w_: mod.grad_loss(w_, X, y), w) @ v
    np.testing.assert_allclose(mod.hvp(w, X, y, v), expected, rtol=1e-6)
    np.testing.assert_allclose(srctrans.jit(mod.hvp)(w, X, y, v), expected, rtol=1e-6)  # (compiled: newton_cg below)
    # the names the lambda reads are constants of the jvp, not of an outer derivative
    dX = np.random.default_rng(2).normal(size=X.shape)
    f = lambda X_: np.sum(mod.hvp(w, X_, y, v))  # noqa: E731
    g = srctrans.grad(lambda w, X, y, v: np.sum(mod.hvp(w, X, y, v)), argnums=1)(w, X, y, v)
    assert np.sum(g * dX) == pytest.approx((f(X + 1e-6 * dX) - f(X - 1e-6 * dX)) / 2e-6, rel=1e-5)


def test_newton_cg_under_jit(mod, data):
    """The JAX idiom: a Hessian-vector product by jvp of a lambda, inside a jitted Newton-CG solver."""
    w0, X = np.zeros(3), data["X"]
    y = np.tanh(X @ np.array([0.3, -0.2, 0.5]))
    solved = srctrans.jit(mod.newton_cg)(w0, X, y, 4, 3)
    np.testing.assert_allclose(solved, mod.newton_cg(w0, X, y, 4, 3), rtol=1e-9)
    assert np.linalg.norm(mod.grad_loss(solved, X, y)) < 1e-3 * np.linalg.norm(mod.grad_loss(w0, X, y))
    text = srctrans.source(srctrans.jit(mod.newton_cg))
    assert "def newton_cg_lambda_jvp(w_, X, y, w__dot):" in text  # the lambda's names after its own, held constant
    body = text.split("def newton_cg(")[1]
    code = [line for line in body.splitlines() if not line.strip().startswith("#")]
    assert not any("lambda " in line for line in code)
    assert any("newton_cg_lambda_jvp(w, X, y, d)" in line for line in code)


def test_vmap_jacobians_and_pmap_of_inner_functions(mod, data, as_python):
    x, xs = data["x"], data["xs"]
    stacked = np.stack([srctrans.grad(mod.stepped)(row, 0.7) for row in xs])
    np.testing.assert_allclose(srctrans.vmap(srctrans.grad(mod.stepped), in_axes=(0, None))(xs, 0.7), stacked, rtol=1e-12)
    np.testing.assert_allclose(srctrans.pmap(srctrans.grad(mod.stepped), in_axes=(0, None))(xs, 0.7), stacked, rtol=1e-12)
    expected = _jacobian(lambda s: mod.system(s, 0.4), x)
    np.testing.assert_allclose(srctrans.jacfwd(mod.system)(x, 0.4), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(srctrans.jacrev(mod.system)(x, 0.4), expected, rtol=1e-6, atol=1e-9)
    H = srctrans.hessian(mod.scaled)(x, 1.3)
    np.testing.assert_allclose(H, _jacobian(lambda s: srctrans.grad(mod.scaled)(s, 1.3), x), rtol=1e-6, atol=1e-9)


def test_the_lifted_functions_read_like_the_users(mod, data):
    f = srctrans.jit(mod.two)
    f(data["x"], 0.5)
    text = srctrans.source(f)
    assert "def two_h1(t, a):" in text and "def two_h2(t, a):" in text
    assert "return two_h1(t, a) + two_h1(t * t, a)" in text
    assert "return np.sum(two_h2(x, a))" in text
    assert "lifted_user.py:" in text.split("def two_h1")[1].split("\n")[1]  # its line of the user's file


REFUSED = [
    ("given to another function", "    return np.sum(np.apply_along_axis(lambda r: r * 2, 1, x))", 39,
     "can only be called or given to a transformation"),
    ("stored", "    fs = [lambda t: t * 2]\n    return fs[0](x)", 11, "can only be called or given to a transformation"),
    ("default values", "    h = lambda t, k=x: t * k\n    return h(x)", 9, "default values"),
    ("recursion", "    def h(n):\n        return 1.0 if n == 0 else h(n - 1)\n    return h(3) * x", 5, "calls itself"),
    ("nonlocal", "    def h():\n        nonlocal x\n        return x\n    return h()", 9, "nonlocal statements"),
    ("jvp with a tangent too many", "    return srctrans.jvp(lambda t: t * x, (x,), (1.0, 2.0))[1]", 12, "1 primals but 2 tangents"),
]


@pytest.mark.parametrize("what,body,col,message", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_cannot_be_lifted_is_refused_at_the_users_line(make_module, what, body, col, message):
    mod = make_module(f"import numpy as np\nimport srctrans\n\ndef f(x):\n{body}\n")
    with pytest.raises(srctrans.UnsupportedSyntaxError) as info:
        srctrans.grad(mod.f)(np.ones(2) if what == "given to another function" else 1.5)
    err = info.value
    assert message in err.message
    assert err.filename == mod.__file__
    line = 6 if what == "nonlocal" else 5
    assert (err.line, err.col + 1) == (line, col)
