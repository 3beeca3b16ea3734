"""Sharding: meshes, partition specs, sharded arrays, and jit/grad of functions called on them.

The oracle is the unsharded call: the same function on the whole arrays. A sharded call
either runs per shard (the plan says so, and the runner's trace shows every device did
its block of rows) or gathers and runs unsharded, saying why (a warning and
``srctrans.sharding.explain``). Most tests run the stages in Python (the reference
runner); one compiles them.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import srctrans
from srctrans import sharding
from srctrans.parallel.devices import Device
from srctrans.sharding import AxisType, NamedSharding, P, ShardedArray, ShardingFallbackWarning

N = 64


@pytest.fixture
def mesh(monkeypatch):
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "8")
    mesh = sharding.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with sharding.set_mesh(mesh):
        yield mesh


@pytest.fixture
def python_stages(monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = {
        "W1": rng.normal(size=(4, 16)),
        "b1": rng.normal(size=16),
        "W2": rng.normal(size=(16, 3)),
        "b2": rng.normal(size=3),
    }
    return params, rng.normal(size=(N, 4)), rng.normal(size=(N, 3))


def loss_fn(params, batch):
    inputs, targets = batch
    h = np.tanh(inputs @ params["W1"] + params["b1"])
    predictions = h @ params["W2"] + params["b2"]
    return np.mean(np.sum((predictions - targets) ** 2, axis=-1))


def _close(a, b):
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-12)


# --- the API ----------------------------------------------------------------------------------


def test_make_mesh_and_set_mesh(mesh):
    assert mesh.shape == {"data": 8}
    assert mesh.size == 8 and mesh.axis_types == (AxisType.Explicit,)
    assert mesh.device_list == [Device("cpu", i) for i in range(8)]
    assert sharding.get_abstract_mesh() is mesh
    other = sharding.make_mesh((2, 4), ("a", "b"))
    with other:
        assert sharding.get_abstract_mesh() is other
    assert sharding.get_abstract_mesh() is mesh
    sharding.set_mesh(other)  # as a plain call, too
    assert sharding.get_abstract_mesh() is other


def test_device_put_returns_the_whole_array_carrying_its_sharding(mesh):
    x = np.arange(16.0).reshape(8, 2)
    xs = sharding.device_put(x, P("data"))
    assert isinstance(xs, ShardedArray) and xs.sharding == NamedSharding(mesh, P("data"))
    np.testing.assert_array_equal(np.asarray(xs), x)
    assert type(np.asarray(xs)) is np.ndarray and type(xs + 1.0) is np.ndarray and type(np.sum(xs, axis=0)) is np.ndarray
    assert [(d.index, b.tolist()) for d, b in xs.shards] == [(i, [x[i].tolist()]) for i in range(8)]
    both = sharding.device_put((x, x[:, 0]), P("data"))
    assert all(isinstance(v, ShardedArray) for v in both)


def test_bad_input_is_a_clear_error(mesh, monkeypatch):
    with pytest.raises(ValueError, match=r"needs 16 devices, but there are only 8"):
        sharding.make_mesh((16,), ("data",))
    with pytest.raises(ValueError, match=r"length 12, which does not divide into 8 shards"):
        sharding.device_put(np.zeros((12, 2)), P("data"))
    with pytest.raises(ValueError, match=r"unknown mesh axis name 'model'.*\('data',\)"):
        sharding.device_put(np.zeros((8, 2)), P("model"))
    with pytest.raises(ValueError, match="unknown mesh axis name 'model'"):
        NamedSharding(mesh, P(None, "model"))
    with sharding.set_mesh(None), pytest.raises(ValueError, match="needs a mesh"):
        sharding.device_put(np.zeros(8), P("data"))
    with pytest.raises(ValueError, match="2 axis sizes"):
        sharding.make_mesh((2, 4), ("data",))


# --- the seed's sharded gradient -------------------------------------------------------------


def test_seed_snippet_gives_the_unsharded_gradient_per_shard(mesh, python_stages):
    params, x, y = _data()
    inputs = sharding.device_put(x, P("data"))
    targets = sharding.device_put(y, P("data"))
    step = srctrans.jit(srctrans.grad(loss_fn))
    grads = step(params, (inputs, targets))
    _close(grads, srctrans.grad(loss_fn)(params, (x, y)))
    assert all(type(v) is np.ndarray for v in grads.values())
    plan = sharding.last_call(step)
    assert plan.sharded, plan.explain()
    assert sharding.explain(step).startswith("ran per shard on 8 devices")
    # the loss's mean and the four parameter gradients are all-reduced
    assert plan.reductions == ["mean -> out"] + [f"sum -> params_{k}_bar" for k in ("b2", "W2", "b1", "W1")]
    text = plan.path.read_text()
    assert "run.reduce(\"sum\", params_W1_bar_part)" in text
    assert re.search(r"rt\.sum_grad\(out_bar, (t\d+), None, False\) / \(\1\.size \* 8\)", text)  # mean_grad: the global count
    # every stage ran on each of the 8 devices, on its own block of rows
    trace = plan.trace
    for stage in plan.stages:
        records = [r for r in trace if r["stage"] == stage.name]
        assert [r["device"] for r in records] == mesh.device_list
        assert [r["rows"] for r in records] == [(8 * d, 8 * d + 8) for d in range(8)]


def test_each_stage_sees_only_its_shard(mesh, python_stages, monkeypatch):
    params, x, y = _data(1)
    step = srctrans.grad(loss_fn)
    batch = (sharding.device_put(x, P("data")), sharding.device_put(y, P("data")))
    step(params, batch)
    runner = sharding.last_call(step).runner
    seen = []
    plain_run = runner.run_shard
    monkeypatch.setattr(runner, "run_shard", lambda fn, args: seen.append([np.shape(a) for a in args]) or plain_run(fn, args))
    grads = step(params, batch)
    _close(grads, srctrans.grad(loss_fn)(params, (x, y)))
    assert len(seen) == 16  # 2 stages x 8 devices
    first = seen[0]  # stage 1: batch_0, batch_1 (8 rows each), then the replicated parameters
    assert first[:2] == [(8, 4), (8, 3)]


def test_compiled_stages(mesh):
    params, x, y = _data(2)
    step = srctrans.jit(srctrans.grad(loss_fn))
    grads = step(params, (sharding.device_put(x, P("data")), sharding.device_put(y, P("data"))))
    _close(grads, srctrans.grad(loss_fn)(params, (x, y)))
    plan = sharding.last_call(step)
    assert plan.sharded and type(plan.runner).__name__ == "CpuRunner"
    assert {r["device"] for r in plan.trace} == set(mesh.device_list)


def test_compiled_stages_run_one_shard_per_thread(monkeypatch):
    import numba

    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "2")
    two = sharding.make_mesh((2,), ("data",))
    params, x, y = _data(3)
    batch = (sharding.device_put(x, NamedSharding(two, P("data"))), sharding.device_put(y, NamedSharding(two, P("data"))))
    step = srctrans.jit(srctrans.grad(loss_fn))
    for _ in range(2):  # the second call reuses the compiled stages
        _close(step(params, batch), srctrans.grad(loss_fn)(params, (x, y)))
    plan = sharding.last_call(step)
    assert plan.sharded, plan.explain()
    # each stage's two shards ran on two threads at once, as compiled code that releases the GIL
    for stage in plan.stages:
        records = [r for r in plan.trace if r["stage"] == stage.name]
        assert [r["rows"] for r in records] == [(0, N // 2), (N // 2, N)]
        if numba.get_num_threads() >= 2:
            assert len({r["thread"] for r in records}) == 2  # the calling thread and one of the pool's
            assert any(r["thread"].startswith("srctrans-cpu") for r in records)
    copy = plan.path.with_name(plan.path.stem + ".shards.py")
    text = copy.read_text()
    assert "def loss_fn_grad_stage0(" in text and "def loss_fn_grad_sharded(" not in text  # the stages, not the driver
    from numba_backend.parallel_cpu import whole_shards_function

    assert whole_shards_function(plan.stages[0], {}).targetoptions["nogil"]
    # the gradient of the sharded rows too: gathered from the shards' parts
    g_batch = srctrans.jit(srctrans.grad(loss_fn, argnums=1))
    for a, b in zip(g_batch(params, batch), srctrans.grad(loss_fn, argnums=1)(params, (x, y))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_an_error_in_a_compiled_stage_is_raised_as_it_is(mesh):
    X = sharding.device_put(np.ones((N, 3)), P("data"))
    # 3 columns against 4 rows, in every shard's thread: Numba's own '@' (BLAS) raises
    with pytest.raises(ValueError, match="incompatible array sizes for np.dot"):
        srctrans.jit(features)(X, np.ones((4, 2)))


# --- other splits ----------------------------------------------------------------------------


def least_squares(w, X, y):
    r = X @ w - y
    return np.mean(r**2)


def normal_product(X, r):
    return X.T @ r


def column_means(x):
    return np.mean(x, axis=0) + np.max(x) - np.min(x, axis=0)


def features(x, w):
    return np.tanh(x @ w)[:, 0] * 2.0


def softmax_cross_entropy(W, X, Y):
    z = X @ W
    m = np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m
    return -np.mean(np.sum(Y * (z - lse), axis=1))


def relu_regression(W1, w2, X, y):
    h = np.maximum(X @ W1, 0.0)
    r = h @ w2 - y
    return 0.5 * np.sum(r * r) / X.shape[0]  # the whole batch's length, written into the sharded file


def branchy(x, w, flag):
    if flag > 0:  # replicated: runs in the driver, between the stages
        s = 2.0
    else:
        s = 3.0
    y = np.tanh(x @ w) * s
    return np.sum(y**2) + np.mean(y)


def _as(like, value):
    """``value`` sharded as ``like`` is."""
    return sharding.device_put(value, P("data")) if isinstance(like, ShardedArray) else value


@pytest.mark.parametrize(
    "fn",
    [
        lambda X, y: srctrans.grad(least_squares)(np.arange(3.0), X, y),
        lambda X, y: srctrans.jit(normal_product)(X, y),
        lambda X, y: srctrans.jit(column_means)(X),
        lambda X, y: srctrans.jit(features)(X, np.ones((3, 2))),
        lambda X, y: srctrans.grad(branchy, argnums=1)(X, np.ones(3), -1.0),
        lambda X, y: srctrans.grad(softmax_cross_entropy)(np.eye(3, 4), X, _as(X, np.eye(4)[(np.asarray(y) > 0) * 1])),
        lambda X, y: srctrans.grad(relu_regression)(np.eye(3, 5), np.arange(5.0), X, y),
    ],
    ids=["grad-least-squares", "X.T@r", "mean-max-min", "row-wise-result", "grad-with-a-branch", "softmax-ce", "x.shape[0]"],
)
def test_splits_match_the_unsharded_call(mesh, python_stages, fn):
    """Each runs per shard: a fallback would raise (its warning is an error here)."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(N, 3)), rng.normal(size=N)
    expected = fn(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShardingFallbackWarning)
        got = fn(sharding.device_put(X, P("data")), sharding.device_put(y, P("data")))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(expected)


def test_plan_of_reductions(mesh, python_stages):
    X = sharding.device_put(np.ones((N, 3)), P("data"))
    f = srctrans.jit(column_means)
    np.testing.assert_allclose(f(X), np.ones(3))
    assert [r.split(" ")[0] for r in sharding.last_call(f).reductions] == ["mean", "max", "min"]


# --- falling back: gather and run unsharded, and say so ---------------------------------------


def first_row(x):
    return np.sum(x[0] * 2.0)


def uses_length(x):
    y = x * 2.0
    return np.sum(y) / y.shape[0]  # (a sharded argument's own shape is written into the file)


def running_total(x):
    return np.cumsum(x, axis=0)


def rolled(x):
    return np.roll(x, 1) * 2.0


def biggest(x):
    return np.max(x) * 2.0


def looped(x):
    t = 0.0
    for _ in range(3):
        t = t + np.sum(x)
    return t


def same_rank_broadcast(x, m):
    return np.sum(x * m)


def flattened(x):
    return np.sum(x.reshape(-1)[:8])


@pytest.mark.parametrize(
    "fn, extra, why",
    [
        (first_row, (), "indexing along the sharded axis"),
        (uses_length, (), "`.shape` of a sharded value"),
        (running_total, (), "cumsum along the sharded axis"),
        (rolled, (), "no sharding rule for numpy.roll"),
        (same_rank_broadcast, (np.ones((1, 3)),), "broadcasting could touch the sharded axis"),
        (flattened, (), "`.reshape(...)` of a sharded value"),
        (looped, (), "control flow over a sharded value"),
        (srctrans.grad(biggest), (), "extremum_grad along the sharded axis"),
    ],
    ids=["x[0]", "x.shape", "cumsum", "roll", "same-rank-broadcast", "reshape", "loop", "grad-of-max"],
)
def test_falls_back_to_gathering(mesh, python_stages, fn, extra, why):
    x = np.random.default_rng(4).normal(size=(N, 3))
    f = srctrans.jit(fn)
    with pytest.warns(ShardingFallbackWarning, match=re.escape(why)):
        got = f(sharding.device_put(x, P("data")), *extra)
    np.testing.assert_allclose(got, fn(x, *extra), rtol=1e-12)
    assert not sharding.last_call(f).sharded
    text = sharding.explain(f)
    assert text.startswith("gathered the shards and ran unsharded") and why in text
    assert "test_sharding.py:" in text  # names the user's line


def test_a_grad_that_cannot_be_split_still_gives_the_gradient(mesh, python_stages):
    def loss(w, x):
        return np.sum(np.cumsum(x @ w, axis=0))

    x = np.random.default_rng(5).normal(size=(N, 3))
    g = srctrans.grad(loss)
    with pytest.warns(ShardingFallbackWarning):
        got = g(np.ones(3), sharding.device_put(x, P("data")))
    np.testing.assert_allclose(got, g(np.ones(3), x), rtol=1e-12)


def test_split_other_than_axis_0_falls_back(mesh, python_stages):
    mesh2 = sharding.make_mesh((2,), ("model",))
    x = np.random.default_rng(6).normal(size=(8, 4))
    xs = sharding.device_put(x, NamedSharding(mesh2, P(None, "model")))
    f = srctrans.jit(lambda v: np.sum(v * 2.0))
    with pytest.warns(ShardingFallbackWarning, match="axis other than 0"):
        np.testing.assert_allclose(f(xs), np.sum(x * 2.0))


def test_replicated_parameters_and_with_mesh(python_stages, monkeypatch):
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "8")
    params, x, y = _data(7)
    mesh = sharding.make_mesh((4,), ("batch",))  # 4 of the 8 devices
    with mesh:
        rep = sharding.device_put(params, P())  # replicated: an ordinary argument
        batch = sharding.device_put((x, y), NamedSharding(mesh, P("batch")))
        step = srctrans.jit(srctrans.grad(loss_fn))
        with warnings.catch_warnings():
            warnings.simplefilter("error", ShardingFallbackWarning)
            grads = step(rep, batch)
        _close(grads, srctrans.grad(loss_fn)(params, (x, y)))
        plan = sharding.last_call(step)
        assert plan.sharded and {r["device"].index for r in plan.trace} == {0, 1, 2, 3}
        np.testing.assert_allclose(srctrans.jit(loss_fn)(rep, (x, y)), loss_fn(params, (x, y)))
        assert sharding.last_call(srctrans.jit(loss_fn)) is None
    assert sharding.get_abstract_mesh() is None


def test_explain_before_any_sharded_call():
    assert "has not been called" in sharding.explain(srctrans.jit(loss_fn))


def test_value_and_grad_and_gradients_of_the_sharded_inputs(mesh, python_stages):
    params, x, y = _data(8)
    batch = (sharding.device_put(x, P("data")), sharding.device_put(y, P("data")))
    vg = srctrans.value_and_grad(loss_fn)
    value, grads = vg(params, batch)
    value0, grads0 = vg(params, (x, y))
    np.testing.assert_allclose(value, value0, rtol=1e-13)
    _close(grads, grads0)
    g_batch = srctrans.grad(loss_fn, argnums=1)  # the gradient of each example's rows: gathered
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShardingFallbackWarning)
        got = g_batch(params, batch)
    for a, b in zip(got, srctrans.grad(loss_fn, argnums=1)(params, (x, y))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert "run.get(batch_0_bar)" in sharding.last_call(g_batch).path.read_text()


def test_an_error_in_a_stage_names_the_users_line(mesh, python_stages):
    X = sharding.device_put(np.ones((N, 3)), P("data"))
    with pytest.raises(ValueError) as info:
        srctrans.jit(features)(X, np.ones((4, 2)))  # 3 columns against 4 rows
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "in your code: test_sharding.py:" in notes and "np.tanh(x @ w)" in notes and "sharded file" in notes
