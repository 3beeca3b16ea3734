"""pmap on a Dask cluster: each worker of a 2-worker LocalCluster (started once for this module) is a device.

The oracle is vmap of the same function with the same axis name. Most tests run the
shipped files as Python on the workers (``disable_jit``), which is quick; one compiles
them with Numba on the workers. A worker is killed (SIGKILL of its process) in the
middle of a call: the call rebuilds what the worker held on the others and returns the
right result, or, with no retries allowed, raises :class:`DaskWorkerLostError`.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

import srctrans  # noqa: E402
from numba_backend import dask_runner  # noqa: E402
from numba_backend.dask_runner import DaskRunner, DaskSharded, DaskWorkerLostError  # noqa: E402
from srctrans import distributed as sd  # noqa: E402
from srctrans.parallel.runner import runner_for  # noqa: E402

from . import pmap_functions as fns  # noqa: E402

RNG = np.random.default_rng(1)
X = RNG.normal(size=(8, 3))
W = RNG.normal(size=3)

SLOW = """
import time
import numpy as np
from srctrans import psum

def slow_share(x):
    time.sleep(1.0)
    t = np.tanh(x)
    s = psum(t, "i")
    return t / s
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask-workers")
    client = sd.connect(n_workers=2, env={"SRCTRANS_CACHE_DIR": str(folder)})
    yield client
    sd.close()


@pytest.fixture(autouse=True)
def _two_workers(request):
    """A test starts with both workers there (the nanny restarts a killed one, with a new address)."""
    if "client" in request.fixturenames:
        request.getfixturevalue("client").wait_for_workers(2, timeout=30)


@pytest.fixture
def python_workers(monkeypatch):
    """The workers run the shipped files as Python (no Numba compile)."""
    monkeypatch.setattr(srctrans.config, "disable_jit", True)


def _runner(client) -> DaskRunner:
    runner = runner_for("dask")
    assert isinstance(runner, DaskRunner)
    return runner


def _pids(client) -> dict[str, int]:
    return client.run(os.getpid)


def _kill(client, address: str, pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while address in client.scheduler_info(n_workers=-1)["workers"] and time.monotonic() < deadline:
        time.sleep(0.05)


def _close(a, b):
    la, ta = srctrans.tree.tree_flatten(a)
    lb, tb = srctrans.tree.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


# --- devices and results --------------------------------------------------------------------------


def test_each_worker_is_a_device(client):
    listed = srctrans.devices("dask")
    assert [d.index for d in listed] == [0, 1]
    assert [d.name for d in listed] == sd.worker_addresses(client)
    assert set(d.name for d in listed) == set(client.scheduler_info(n_workers=-1)["workers"])


@pytest.mark.parametrize(
    "fn, in_axes, args",
    [
        (fns.normalized, (0, None), (X, W)),
        (fns.centered, 0, (X,)),
        (fns.extremes, 0, (X,)),
        (fns.gathered, 0, (X,)),
        (fns.ranked, 0, (X[:, 0],)),
        (fns.no_collective, (0, None), (X, W)),
    ],
    ids=["psum", "pmean", "pmax_pmin", "all_gather", "axis_index", "no_collective"],
)
def test_pmap_on_dask_equals_vmap(client, python_workers, fn, in_axes, args):
    got = srctrans.pmap(fn, axis_name="i", in_axes=in_axes, backend="dask")(*args)
    want = srctrans.vmap(fn, in_axes=in_axes, axis_name="i")(*args)
    _close(got, want)


def test_pytree_arguments_and_results(client, python_workers):
    got = srctrans.pmap(fns.tree, axis_name="i", in_axes=({"a": None, "b": 0}, 0), backend="dask")(
        {"a": 2.0, "b": X}, X
    )
    y = 2.0 * X + X
    _close(got, {"y": y, "mean": np.broadcast_to(y.mean(axis=0), y.shape), "pair": (y, 2.0 * y)})


def test_compiled_on_the_workers_equals_vmap_and_ran_on_each_worker(client):
    p = srctrans.pmap(fns.normalized, axis_name="i", in_axes=(0, None), backend="dask")
    want = srctrans.vmap(fns.normalized, in_axes=(0, None), axis_name="i")(X, W)
    _close(p(X, W), want)
    trace = p.trace()
    addresses = sd.worker_addresses(client)
    assert [(r["stage"], r["device"].index, r["rows"], r["worker"]) for r in trace] == [
        ("normalized_stage0", 0, (0, 4), addresses[0]),
        ("normalized_stage0", 1, (4, 8), addresses[1]),
        ("normalized_stage1", 0, (0, 4), addresses[0]),
        ("normalized_stage1", 1, (4, 8), addresses[1]),
    ]
    # each worker compiled the shipped files with Numba in its own process
    shipped = {
        plan.program.key
        for plan in _runner(client)._plans.values()
        if plan.stage.path == p.source_path() and plan.program.options is not None
    }
    assert len(shipped) == 2  # one file per stage
    loaded = client.run(dask_runner.loaded)
    assert set(loaded) == set(addresses)
    for kinds in loaded.values():
        assert {kinds.get(key) for key in shipped} == {"CPUDispatcher"}
    _close(p(2.0 * X, W), srctrans.vmap(fns.normalized, in_axes=(0, None), axis_name="i")(2.0 * X, W))


# --- pmap of what has no one file: a vmap, a Jacobian (srctrans.algebra) ------------------------------

ON_WORKERS = [
    ("mlp", ("pmap", "vmap", "grad")),  # a vmap: pmap of its function over both axes (params a tuple)
    ("branchy", ("pmap", "vmap", "jacfwd")),  # a vmap of a Jacobian
    ("euler", ("pmap", "jacrev")),  # a Jacobian: its vmap over basis vectors on the workers
    ("system", ("pmap", "hessian")),
    ("euler", ("pmap", "hessian", "jacfwd")),  # a third derivative: pairs of pairs of pairs returned
]


@pytest.fixture(scope="module")
def matrix_user(tmp_path_factory):
    from .. import composition_matrix as cm
    from ..conftest import module_from_text

    with module_from_text(tmp_path_factory.mktemp("dask-matrix"), "dask_matrix_user", cm.CODE) as mod:
        yield mod


@pytest.mark.parametrize("base,comp", ON_WORKERS, ids=["(".join(c) + f"({b}" + ")" * len(c) for b, c in ON_WORKERS])
def test_pmap_of_a_vmap_or_a_jacobian_runs_on_the_workers(client, python_workers, matrix_user, base, comp):
    from .. import composition_matrix as cm

    matrix = cm.Matrix(matrix_user, "dask")
    outcome = cm.run_case(matrix, cm.BASES[base], comp)
    assert outcome.status == "pass", outcome.detail
    ran = matrix.function(cm.BASES[base], comp).trace()
    assert {r["worker"] for r in ran} == set(sd.worker_addresses(client))  # the generated files ran there


def test_pmap_of_a_vmap_whose_function_calls_a_collective_is_refused(client, python_workers):
    """pmap(vmap(g)) runs as pmap(g) over both axes at once: a collective would see both."""
    mapped = srctrans.pmap(srctrans.vmap(fns.normalized, in_axes=(0, None), axis_name="j"), axis_name="i",
                           in_axes=(0, None), backend="dask")
    with pytest.raises(TypeError, match="calls a collective .* is not supported yet"):
        mapped(X.reshape(2, 4, 3), W)


# --- shards stay on their workers -------------------------------------------------------------------


def test_shards_stay_resident_between_calls(client, python_workers):
    runner = _runner(client)
    x = RNG.normal(size=(8, 3))
    placed = runner.put(x)
    assert isinstance(placed, DaskSharded) and placed.rows == [4, 4]
    keys = [f.key for f in placed.parts]
    held = client.who_has(placed.parts)
    assert [set(held[k]) for k in keys] == [{w} for w in runner.where()]
    # the same array again: the same blocks, nothing scattered
    assert runner.put(x) is placed
    p = srctrans.pmap(fns.centered, axis_name="i", backend="dask")
    first = p(x)
    second = p(x)
    np.testing.assert_allclose(first, x - x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(second, first, rtol=0, atol=0)
    assert runner.put(x) is placed and [f.key for f in placed.parts] == keys
    on_workers = client.run(lambda dask_worker: sorted(k for k in dask_worker.data.keys() if k in keys))
    assert sorted(k for ks in on_workers.values() for k in ks) == sorted(keys)
    # changed contents: scattered again
    x[0, 0] += 1.0
    assert runner.put(x) is not placed


# --- a worker dies in the middle of a call --------------------------------------------------------------


def test_worker_killed_between_stages_the_call_is_still_right(client, python_workers, monkeypatch):
    runner = _runner(client)
    x = RNG.normal(size=(8, 3))
    p = srctrans.pmap(fns.normalized, axis_name="i", in_axes=(0, None), backend="dask")
    want = srctrans.vmap(fns.normalized, in_axes=(0, None), axis_name="i")(x, W)
    victim = runner.where()[0]
    pid = _pids(client)[victim]
    reduce = runner.reduce

    def reduce_after_a_kill(kind, value):  # stage 0's outputs are on the workers; one worker dies
        _kill(client, victim, pid)
        return reduce(kind, value)

    monkeypatch.setattr(runner, "reduce", reduce_after_a_kill)
    got = p(x, W)
    _close(got, want)
    assert victim not in runner.where()
    recovered = [r for r in p.trace() if r.get("recovered")]
    assert recovered and {r["device"].index for r in recovered} == {0}
    assert all(r["worker"] != victim for r in recovered)


def test_worker_killed_between_calls_its_resident_shards_are_sent_again(client, python_workers):
    runner = _runner(client)
    x = RNG.normal(size=(8, 3))
    p = srctrans.pmap(fns.centered, axis_name="i", backend="dask")
    np.testing.assert_allclose(p(x), x - x.mean(axis=0), rtol=1e-12)
    placed = runner.put(x)
    victim = placed.workers[0]
    _kill(client, victim, _pids(client)[victim])
    client.wait_for_workers(2, timeout=30)  # the nanny's new worker: pmap runs on 2 devices again, the same runner
    np.testing.assert_allclose(p(x), x - x.mean(axis=0), rtol=1e-12)
    assert runner.put(x) is placed and victim not in placed.workers
    assert set(placed.workers) == set(client.scheduler_info(n_workers=-1)["workers"])


def test_worker_killed_while_a_stage_runs_the_call_is_still_right(client, python_workers, make_module, monkeypatch):
    mod = make_module(SLOW)
    runner = _runner(client)
    x = RNG.normal(size=16) + 2.0
    want = srctrans.vmap(mod.slow_share, axis_name="i")(x)
    p = srctrans.pmap(mod.slow_share, axis_name="i", backend="dask")
    p(x[:2])  # files written and loaded on the workers: the next call is all running
    victim = runner.where()[1]
    pid = _pids(client)[victim]
    killers = []
    map_ = runner.map

    def map_then_kill(stage, args, batched):  # stage 0 sleeps 1 s on each shard; the worker dies after 0.3 s
        out = map_(stage, args, batched)
        if not killers:
            killers.append(threading.Timer(0.3, _kill, (client, victim, pid)))
            killers[0].start()
        return out

    monkeypatch.setattr(runner, "map", map_then_kill)
    start = time.monotonic()
    got = p(x)
    killers[0].join()
    assert time.monotonic() - start > 0.3  # the kill came while the call ran
    _close(got, want)
    assert victim not in runner.where()
    assert any(r.get("recovered") and r["device"].index == 1 and r["rows"] == (8, 16) for r in p.trace())


def test_worker_lost_without_retries_is_a_clear_error(client, python_workers, monkeypatch):
    runner = _runner(client)
    monkeypatch.setattr(runner, "retries", 0)
    x = RNG.normal(size=(8, 3))
    p = srctrans.pmap(fns.centered, axis_name="i", backend="dask")
    victim = runner.where()[0]
    pid = _pids(client)[victim]
    reduce = runner.reduce

    def reduce_after_a_kill(kind, value):
        _kill(client, victim, pid)
        return reduce(kind, value)

    monkeypatch.setattr(runner, "reduce", reduce_after_a_kill)
    with pytest.raises(
        DaskWorkerLostError, match=r"reduce\('sum'\) on backend='dask': Dask workers were lost .*no result is returned"
    ):
        p(x)


# --- what a worker does with a shipped file (in this process: no cluster needed) ---------------------


def test_a_shipped_file_and_the_generated_module_it_imports_load_on_a_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(srctrans.config, "cache_dir", str(tmp_path / "worker-cache"))
    helper = tmp_path / "__srctrans__" / "_srctrans_test_dask_helper.py"
    helper.parent.mkdir()
    helper.write_text("def twice(x):\n    return 2.0 * x\n")
    monkeypatch.syspath_prepend(str(helper.parent))
    import _srctrans_test_dask_helper  # noqa: F401  (the client has it loaded, as a generated module)

    text = (
        "import _srctrans_test_dask_helper\n\n\ndef shard(x):\n    return _srctrans_test_dask_helper.twice(x) + 1.0,\n"
    )
    extras = dask_runner._generated_imports(text)
    assert [name for name, _ in extras] == ["_srctrans_test_dask_helper"]
    monkeypatch.delitem(__import__("sys").modules, "_srctrans_test_dask_helper")  # a worker has never seen it
    program = dask_runner.Program("main.py", text, "shard", ("shard",), extras=extras)
    (out,) = dask_runner.run_shard(program, (None,), np.arange(3.0))
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])
    written = dask_runner.worker_folder() / program.key[:16]
    assert sorted(p.name for p in written.glob("*.py")) == ["_srctrans_test_dask_helper.py", "main.py"]
