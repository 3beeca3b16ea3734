"""The seed's sharded gradient on a Dask cluster: each worker of a 2-worker LocalCluster is a device of the mesh.

The shipped stage files run as Python on the workers (``disable_jit``), which is quick; the
oracle is the unsharded gradient.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("distributed")

import srctrans  # noqa: E402
from srctrans import distributed as sd  # noqa: E402
from srctrans import sharding  # noqa: E402
from srctrans.parallel.devices import devices  # noqa: E402
from srctrans.sharding import P, ShardingFallbackWarning  # noqa: E402

from .test_sharding import _close, _data, loss_fn  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask-workers")
    client = sd.connect(n_workers=2, env={"SRCTRANS_CACHE_DIR": str(folder)})
    yield client
    sd.close()


def test_seed_snippet_on_a_dask_cluster(client, monkeypatch):
    monkeypatch.setattr(srctrans.config, "disable_jit", True)
    client.wait_for_workers(2, timeout=30)
    workers = devices("dask")
    mesh = sharding.make_mesh((2,), ("data",), devices=workers)
    params, x, y = _data(9)
    with mesh:
        batch = (sharding.device_put(x, P("data")), sharding.device_put(y, P("data")))
        step = srctrans.jit(srctrans.grad(loss_fn))
        with warnings.catch_warnings():
            warnings.simplefilter("error", ShardingFallbackWarning)
            grads = step(params, batch)
    _close(grads, srctrans.grad(loss_fn)(params, (x, y)))
    plan = sharding.last_call(step)
    assert plan.sharded and type(plan.runner).__name__ == "DaskRunner"
    for stage in plan.stages:  # each worker ran its half of the rows, in every stage
        assert sorted((r["device"].index, r["rows"]) for r in plan.trace if r["stage"] == stage.name) == [
            (0, (0, 32)),
            (1, (32, 64)),
        ]
    with pytest.raises(ValueError, match="needs 4 devices, but there are only 2"):
        sharding.make_mesh((4,), ("data",), devices=workers)
