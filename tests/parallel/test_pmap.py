"""pmap on logical CPU devices: the same results as vmap, collectives, pytrees, grad, errors.

The oracle is vmap of the same function with the same axis name (itself tested against
stacked per-example calls), and plain NumPy where the collective's meaning is simple to
write. Most tests run the stages in Python (the reference runner, SRCTRANS_DISABLE_JIT);
the ``compiled`` ones run them through the compiled prange runner on 1, 2 and 8 devices.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

import srctrans
from srctrans.errors import SrcTransError
from srctrans.parallel.devices import BackendUnavailableError, Device

from . import pmap_functions as fns

backend_module = importlib.import_module("srctrans.backend")
RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 3))
W = RNG.normal(size=3)


def _devices(monkeypatch, count: int) -> None:
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", str(count))


@pytest.fixture
def python_runner(monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)


def _assert_tree_close(a, b):
    la, ta = srctrans.tree.tree_flatten(a)
    lb, tb = srctrans.tree.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


# --- devices ---------------------------------------------------------------------------------


def test_devices_default_one_and_set_by_the_environment(monkeypatch):
    monkeypatch.delenv("SRCTRANS_CPU_DEVICES", raising=False)
    assert srctrans.devices() == [Device("cpu", 0)]
    _devices(monkeypatch, 8)
    listed = srctrans.devices("cpu")
    assert [d.index for d in listed] == list(range(8)) and {d.kind for d in listed} == {"cpu"}
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "zero")
    with pytest.raises(ValueError, match="SRCTRANS_CPU_DEVICES='zero'"):
        srctrans.devices()


def test_unknown_backend_and_missing_backend_module(monkeypatch):
    with pytest.raises(ValueError, match="backend must be one of"):
        srctrans.pmap(fns.centered, axis_name="i", backend="tpu")
    monkeypatch.setitem(backend_module.PARALLEL_MODULES, "cuda", "numba_backend.no_such_cuda_module")
    with pytest.raises(BackendUnavailableError, match="backend='cuda' is not available"):
        srctrans.pmap(fns.centered, axis_name="i", backend="cuda")(X[:, 0])


# --- compiled: pmap == vmap on 1, 2 and 8 devices ------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 8])
def test_compiled_pmap_equals_vmap(monkeypatch, count):
    _devices(monkeypatch, count)
    mapped = srctrans.pmap(fns.normalized, axis_name="i", in_axes=(0, None))
    got = mapped(X, W)
    want = srctrans.vmap(fns.normalized, in_axes=(0, None), axis_name="i")(X, W)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    h = np.tanh(X @ W)  # and by hand
    np.testing.assert_allclose(got, h / np.sqrt(np.sum(h * h)), rtol=1e-12)
    trace = mapped.trace()
    assert [(r["stage"], r["device"], r["rows"]) for r in trace] == [
        (stage, Device("cpu", d), (d * 16 // count, (d + 1) * 16 // count))
        for stage in ("normalized_stage0", "normalized_stage1")
        for d in range(count)
    ]
    assert all(isinstance(r["thread"], int) for r in trace)  # the Numba thread that ran the shard
    import numba

    threads = {r["thread"] for r in trace}
    assert threads <= set(range(numba.get_num_threads()))
    if count == 8 and numba.get_num_threads() > 1 and numba.threading_layer() in ("omp", "workqueue"):
        assert len(threads) > 1  # static schedules spread the 8 logical devices over the threads (TBB may not)


# --- collectives (the reference runner) ---------------------------------------------------------


@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize(
    "fn, expected",
    [
        (fns.centered, lambda x: x - x.mean(0)),
        (fns.extremes, lambda x: (x - x.min(0)) / (x.max(0) - x.min(0))),
        (fns.gathered, lambda x: x @ x.T),
        (fns.ranked, lambda x: x * np.arange(len(x))[:, None]),
    ],
    ids=["pmean", "pmax_pmin", "all_gather", "axis_index"],
)
def test_each_collective(monkeypatch, python_runner, count, fn, expected):
    _devices(monkeypatch, count)
    got = srctrans.pmap(fn, axis_name="i")(X)
    np.testing.assert_allclose(got, expected(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, srctrans.vmap(fn, axis_name="i")(X), rtol=1e-12, atol=1e-14)


def test_psum_of_an_unmapped_value_counts_the_examples(monkeypatch, python_runner):
    _devices(monkeypatch, 4)
    got = srctrans.pmap(fns.replicated_sum, axis_name="i", in_axes=(None, 0))(W, X)
    np.testing.assert_allclose(got, X + 16 * W)
    np.testing.assert_allclose(got, srctrans.vmap(fns.replicated_sum, in_axes=(None, 0), axis_name="i")(W, X))
    np.testing.assert_allclose(srctrans.pmap(fns.counted, axis_name="i")(X), X / 16)  # psum(1.0): the example count


def test_function_without_collectives_is_one_stage(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    mapped = srctrans.pmap(fns.no_collective, in_axes=(0, None))
    np.testing.assert_allclose(mapped(X, W), np.sin(X) * W)
    assert "def no_collective_stage1" not in mapped.source()


# --- pytrees and out_axes -------------------------------------------------------------------------


def test_pytrees_in_axes_and_out_axes(monkeypatch, python_runner):
    _devices(monkeypatch, 4)
    p = {"a": RNG.normal(size=8), "b": 0.5}
    x = RNG.normal(size=8)
    in_axes = ({"a": 0, "b": None}, 0)
    got = srctrans.pmap(fns.tree, axis_name="i", in_axes=in_axes)(p, x)
    y = p["a"] * x + 0.5  # (vmap loops over this function, where pmean cannot run: NumPy is the oracle)
    _assert_tree_close(got, {"y": y, "mean": np.full(8, y.mean()), "pair": (y, 2.0 * y)})
    out_axes = {"y": 0, "mean": None, "pair": (0, 0)}
    got = srctrans.pmap(fns.tree, axis_name="i", in_axes=in_axes, out_axes=out_axes)(p, x)
    np.testing.assert_allclose(got["mean"], y.mean())
    _assert_tree_close(got["pair"], (y, 2.0 * y))


def test_in_axes_one_and_out_axes_one(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    xt = X.T.copy()  # examples along axis 1
    got = srctrans.pmap(fns.centered, axis_name="i", in_axes=1, out_axes=1)(xt)
    np.testing.assert_allclose(got, xt - xt.mean(1, keepdims=True), rtol=1e-12)


# --- grad -------------------------------------------------------------------------------------


def test_pmap_of_grad_gives_per_example_gradients(monkeypatch):
    _devices(monkeypatch, 2)
    x, y = RNG.normal(size=(8, 3)), (RNG.random(8) > 0.5).astype(float)
    g = srctrans.pmap(srctrans.grad(fns.logistic_loss), in_axes=(None, 0, 0))(W, x, y)
    p = 1.0 / (1.0 + np.exp(-(x @ W)))
    np.testing.assert_allclose(g, (p - y)[:, None] * x, rtol=1e-10)
    np.testing.assert_allclose(g, srctrans.vmap(srctrans.grad(fns.logistic_loss), in_axes=(None, 0, 0))(W, x, y), rtol=1e-12)


def _total_gradient(total, w, x):
    """d(sum over examples)/d(each example's copy of w), by central differences."""
    n, eps = len(x), 1e-6
    wide = np.tile(w, (n, 1))
    out = np.zeros_like(wide)
    for k in range(n):
        for c in range(w.size):
            step = np.zeros_like(wide)
            step[k, c] = eps
            out[k, c] = (total(wide + step, x) - total(wide - step, x)) / (2 * eps)
    return out


@pytest.mark.parametrize(
    "fn, total",
    [
        (fns.spread, lambda ws, x: np.sum((np.tanh(x * ws) - np.tanh(x * ws).mean(0)) ** 2)),
        (fns.share, lambda ws, x: np.sum(np.tanh(x * ws) / np.tanh(x * ws).sum(0))),
        (fns.mixed, lambda ws, x: np.sum(np.tanh(x * ws)[0] * np.tanh(x * ws)) + len(x) * np.sum(np.tanh(x * ws) ** 2)),
    ],
    ids=["pmean", "psum", "all_gather"],
)
def test_grad_through_a_collective(monkeypatch, python_runner, fn, total):
    """psum's adjoint is the psum of the adjoint: each example gets d(sum of every example's f)/d(its w)."""
    _devices(monkeypatch, 4)
    x = RNG.uniform(0.5, 1.5, size=(8, 2))
    w = np.array([0.3, -0.2])
    mapped = srctrans.pmap(srctrans.grad(fn), axis_name="i", in_axes=(None, 0))
    got = mapped(w, x)
    np.testing.assert_allclose(got, _total_gradient(total, w, x), rtol=1e-6, atol=1e-8)
    assert mapped.source().count("run.reduce(") == 2  # the forward collective and its adjoint (a psum)


# --- errors -----------------------------------------------------------------------------------


def test_examples_that_do_not_split_over_the_devices(monkeypatch, python_runner):
    _devices(monkeypatch, 4)
    with pytest.raises(ValueError, match=r"argument 'x' has 10 examples .* 4 devices \(10 % 4 = 2\)"):
        srctrans.pmap(fns.centered, axis_name="i")(X[:10])


def test_more_devices_than_there_are(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    with pytest.raises(ValueError, match="devices=3, but there are only 2 cpu devices"):
        srctrans.pmap(fns.centered, axis_name="i", devices=3)(X[:6])
    with pytest.raises(ValueError, match="cpu:5 does not exist"):
        srctrans.pmap(fns.centered, axis_name="i", devices=[Device("cpu", 5)])(X)


def test_chosen_devices(monkeypatch, python_runner):
    _devices(monkeypatch, 4)
    mapped = srctrans.pmap(fns.centered, axis_name="i", devices=srctrans.devices()[1:3])
    np.testing.assert_allclose(mapped(X), X - X.mean(0))
    assert sorted({r["device"].index for r in mapped.trace()}) == [1, 2]


def test_unknown_axis_name_is_located(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    with pytest.raises(SrcTransError, match="unknown axis name 'j'") as err:
        srctrans.pmap(fns.other_axis, axis_name="i")(X)
    assert err.value.filename.endswith("pmap_functions.py") and "psum(x, \"j\")" in str(err.value)
    with pytest.raises(SrcTransError, match="this pmap has no axis_name"):
        srctrans.pmap(fns.centered)(X)


@pytest.mark.parametrize("fn, where", [(fns.in_loop, "a loop"), (fns.in_branch, "a branch"), (fns.in_callee, "helper")])
def test_collective_not_at_the_top_level_is_refused(monkeypatch, python_runner, fn, where):
    _devices(monkeypatch, 2)
    with pytest.raises(SrcTransError, match=f"psum inside {where}") as err:
        srctrans.pmap(fn, axis_name="i")(X[:, 0])
    assert err.value.filename.endswith("pmap_functions.py") and err.value.line is not None
    assert "psum(x, \"i\")" in str(err.value) and "^^^^" in str(err.value)


# --- compiling ----------------------------------------------------------------------------------


def test_jit_of_pmap_and_the_runner_it_uses(monkeypatch):
    _devices(monkeypatch, 2)
    from numba_backend.parallel_cpu import CpuRunner
    from srctrans.parallel.runner import PythonRunner

    mapped = srctrans.jit(srctrans.pmap(fns.centered, axis_name="i"), boundscheck=False)
    np.testing.assert_allclose(mapped(X), X - X.mean(0), rtol=1e-12)
    assert isinstance(mapped.runner(), CpuRunner)
    shards = sorted(mapped.source_path().parent.glob("pmap_functions.centered.pmap_i_b.*.shards.py"))
    assert shards and "rt.prange(" in shards[-1].read_text()  # the thin compiled wrapper over the devices
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    assert type(mapped.runner()) is PythonRunner


def test_early_return_after_a_collective(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    x = X[:, 0]
    m = x.mean()
    got = srctrans.pmap(fns.early_return, axis_name="i")(x)
    np.testing.assert_allclose(got, x - m if m > 0 else x + m)


# --- the runner contract ------------------------------------------------------------------------


def test_reference_runner_and_stage_contract(monkeypatch, python_runner):
    """What the CUDA and Dask runners build on: Stage.batched_function, put/map/reduce/get, trace."""
    from srctrans.parallel.runner import PythonRunner, Runner, runner_for

    _devices(monkeypatch, 4)
    mapped = srctrans.pmap(fns.normalized, axis_name="i", in_axes=(0, None))
    mapped(X, W)
    stages = mapped._last.stages
    first = stages["normalized_stage0"]
    assert first.batched == (True, False) and first.outputs == 2 and first.per_example
    path, name, shard_fn = first.batched_function(None, (X[:4], W))
    assert name == "normalized_stage0_vmap" and path.exists()
    h, t = shard_fn(X[:4], W)
    np.testing.assert_allclose(t, np.sum(np.tanh(X[:4] @ W)[:, None] ** 2, axis=1))

    runner = runner_for("cpu", srctrans.devices())
    assert isinstance(runner, PythonRunner) and isinstance(runner, Runner)
    assert runner is runner_for("cpu", srctrans.devices())  # one per (backend, devices)
    runner.start_call()
    x = runner.put(X)
    assert x.rows == [4, 4, 4, 4] and x.n == 16
    hs, ts = runner.map(first, (x, runner.replicate(W)), (True, False))
    np.testing.assert_allclose(runner.get(hs), np.tanh(X @ W))
    tv = np.sum(np.tanh(X @ W) ** 2)
    np.testing.assert_allclose(runner.reduce("sum", ts), tv)
    np.testing.assert_allclose(runner.reduce("max", ts), np.max(np.tanh(X @ W) ** 2))
    np.testing.assert_allclose(runner.reduce("min", ts), np.min(np.tanh(X @ W) ** 2))
    np.testing.assert_allclose(runner.reduce("gather", ts), np.tanh(X @ W) ** 2)
    assert [r["rows"] for r in runner.trace()] == [(0, 4), (4, 8), (8, 12), (12, 16)]
    with pytest.raises(ValueError, match="reduce kind must be one of"):
        runner.reduce("prod", ts)
    with pytest.raises(ValueError, match="has size 10, which does not divide into 4 devices"):
        runner.put(X[:10])


def test_vmap_rewrites_the_new_collectives_compiled():
    """vmap's batching rules for pmax and pmin (np.max/np.min over the batch), compiled."""
    batched = srctrans.jit(srctrans.vmap(fns.extremes, axis_name="i"))
    np.testing.assert_allclose(batched(X), (X - X.min(0)) / (X.max(0) - X.min(0)), rtol=1e-12)
    assert "vectorized" in batched.source().split("\n", 5)[3]


def test_other_bad_input(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    with pytest.raises(ValueError, match="every in_axes is None"):
        srctrans.pmap(fns.no_collective, in_axes=None)(X, W)
    with pytest.raises(ValueError, match="different sizes along the mapped axis"):
        srctrans.pmap(fns.no_collective)(X, X[:4])
    with pytest.raises(ValueError, match="pmap in_axes=2 is out of range for argument 'x'"):
        srctrans.pmap(fns.centered, axis_name="i", in_axes=2)(X)
    with pytest.raises(TypeError, match="pmap in_axes must be an int, None"):
        srctrans.pmap(fns.centered, in_axes="rows")
    with pytest.raises(TypeError, match="pmap of a pmap"):
        srctrans.pmap(srctrans.pmap(fns.centered, axis_name="i"))
    with pytest.raises(ValueError, match="out_axes=None for output 0 .* differs between examples"):
        srctrans.pmap(fns.centered, axis_name="i", out_axes=None)(X)


def test_pmap_of_jit(monkeypatch, python_runner):
    _devices(monkeypatch, 2)
    got = srctrans.pmap(srctrans.jit(fns.no_collective), in_axes=(0, None))(X, W)
    np.testing.assert_allclose(got, np.sin(X) * W)


@pytest.mark.parametrize("fn", [fns.pmax_elsewhere, fns.pmin_elsewhere, fns.all_gather_elsewhere, fns.axis_index_elsewhere])
def test_vmap_leaves_a_collective_of_another_axis_in_place(fn):
    batched = srctrans.vmap(fn, axis_name="mine")
    with pytest.raises(NameError, match="unbound axis name 'elsewhere'"):
        batched(np.ones((2, 3)))
    name = fn.__name__[: -len("_elsewhere")]
    assert f'{name}(' in batched.source().split("def ")[-1] and "vectorized" in batched.source()


def test_grad_through_pmean_equals_vmap_of_grad(monkeypatch, python_runner):
    """vmap's rewrite of the adjoint file (rt.pmean of the adjoint: a mean over the batch) agrees."""
    _devices(monkeypatch, 2)
    x, w = RNG.uniform(0.5, 1.5, size=6), 0.3
    via_vmap = srctrans.vmap(srctrans.grad(fns.spread), axis_name="i", in_axes=(None, 0))
    got = srctrans.pmap(srctrans.grad(fns.spread), axis_name="i", in_axes=(None, 0))(w, x)
    np.testing.assert_allclose(got, via_vmap(w, x), rtol=1e-12)
    assert "vmap method: vectorized" in via_vmap.source()


def test_openmp_threads_sleep_between_calls_unless_the_user_chose():
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    probe = "import os, srctrans; print(os.environ.get('GOMP_SPINCOUNT'))"

    def spin_count(**extra):
        env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
        env["PYTHONPATH"] = root
        env.update(extra)
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    assert spin_count() == "0"  # libgomp's threads sleep: a busy machine does not stall each pmap call
    assert spin_count(GOMP_SPINCOUNT="5000") == "5000"
    assert spin_count(OMP_WAIT_POLICY="active") == "None"


def per_example_cholesky(a):
    return np.linalg.cholesky(a)


@pytest.mark.parametrize("bad", [0, 3], ids=["device-0", "device-1"])
def test_an_error_in_one_shard_is_raised_not_lost(monkeypatch, bad):
    # Numba's prange loses an exception raised on a worker thread: the runner must notice
    monkeypatch.setenv("SRCTRANS_CPU_DEVICES", "2")
    f = srctrans.pmap(per_example_cholesky, devices=2)
    a = np.stack([np.eye(2) * (k + 1) for k in range(4)])
    np.testing.assert_allclose(f(a), np.sqrt(a))
    a[bad] = -np.eye(2)  # example `bad` is not positive definite
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        f(a)
