"""Data-parallel training on a mesh of 8 CPU devices: the gradient computed per shard and all-reduced.

The seed's snippet, as JAX users write it::

    mesh = make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    set_mesh(mesh)
    inputs = device_put(inputs, P("data"))
    targets = device_put(targets, P("data"))
    grads = jit(grad(loss_fn))(params, (inputs, targets))

``grads`` is the ordinary gradient (the same numbers as on the whole batch). srctrans
walks the adjoint file of ``loss_fn``, keeps the row-wise work on each device's block of
rows, and turns the mean and the parameters' gradients (sums over the batch) into
per-shard partial sums plus an all-reduce. ``srctrans.sharding.explain`` says what ran,
and the sharded file shows the stages.

Run: ``python examples/sharded_training.py`` (it asks for 8 logical CPU devices with
``SRCTRANS_CPU_DEVICES=8``, as JAX's forced host device count does).
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("SRCTRANS_CPU_DEVICES", "8")

import srctrans  # noqa: E402
from srctrans import sharding  # noqa: E402
from srctrans.sharding import AxisType, P  # noqa: E402


def loss_fn(params, batch):
    inputs, targets = batch
    h = np.tanh(inputs @ params["W1"] + params["b1"])
    predictions = h @ params["W2"] + params["b2"]
    return np.mean(np.sum((predictions - targets) ** 2, axis=-1))


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    inputs = rng.uniform(-2.0, 2.0, size=(n, 2))
    targets = np.stack([np.sin(inputs[:, 0]) * np.cos(inputs[:, 1]), inputs[:, 0] * inputs[:, 1] / 4.0], axis=1)
    return inputs, targets


def init_params(seed=1, hidden=32):
    rng = np.random.default_rng(seed)
    return {
        "W1": rng.normal(size=(2, hidden)) / np.sqrt(2.0),
        "b1": np.zeros(hidden),
        "W2": rng.normal(size=(hidden, 2)) / np.sqrt(hidden),
        "b2": np.zeros(2),
    }


def main(steps=200, n=1024, lr=0.2):
    mesh = sharding.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    sharding.set_mesh(mesh)
    x, y = make_data(n)
    inputs = sharding.device_put(x, P("data"))
    targets = sharding.device_put(y, P("data"))
    params = init_params()

    grad_fn = srctrans.jit(srctrans.grad(loss_fn))
    grads = grad_fn(params, (inputs, targets))
    reference = srctrans.grad(loss_fn)(params, (x, y))  # the whole batch, unsharded
    worst = max(float(np.max(np.abs(grads[k] - reference[k]))) for k in grads)
    print(sharding.explain(grad_fn))
    print(f"largest difference from the unsharded gradient: {worst:.1e}")
    plan = sharding.last_call(grad_fn)
    for stage in plan.stages:
        rows = [r["rows"] for r in plan.trace if r["stage"] == stage.name]
        print(f"  {stage.name}: ran on {len(rows)} devices, rows {rows[0]} ... {rows[-1]}")

    loss = srctrans.jit(loss_fn)
    print(f"step   0: loss {float(loss(params, (inputs, targets))):.4f}")
    for step in range(1, steps + 1):
        grads = grad_fn(params, (inputs, targets))
        params = {k: params[k] - lr * grads[k] for k in params}
        if step % 50 == 0:
            print(f"step {step:3d}: loss {float(loss(params, (inputs, targets))):.4f}")
    return params


if __name__ == "__main__":
    main()
