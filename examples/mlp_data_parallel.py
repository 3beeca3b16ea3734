"""Training an MLP as ML code is written: params a pytree, a ``predict`` helper, per-example
gradients with ``vmap``, data parallel with ``pmap`` + ``pmean``, ``jit`` around the step.

``params`` is a list of ``(W, b)`` layers, handed to ``predict``, which loops over
``params[:-1]`` as JAX's tutorials do. srctrans gives ``predict`` a version that takes the
layers' arrays (``predict_leaves``) and writes the loop out once per layer, so every
transformation reads the code as written:

- ``jit(vmap(grad(loss), in_axes=(None, 0, 0)))``: one gradient per example (here to clip
  each example's gradient, as differentially private SGD does);
- ``jit(pmap(train_step, axis_name="devices", in_axes=(None, 0, 0)))``: each of 4 CPU devices
  differentiates the loss on its shard of the batch, ``pmean`` averages the gradients over
  the devices, and every device applies the same update.

Run:  python examples/mlp_data_parallel.py
(it asks for 4 logical CPU devices with ``SRCTRANS_CPU_DEVICES=4``).
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("SRCTRANS_CPU_DEVICES", "4")

import srctrans  # noqa: E402
from srctrans import grad, jit, pmap, pmean, vmap  # noqa: E402

DEVICES = 4
LEARNING_RATE = 0.05
CLIP = 1.0


def init_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return x @ W + b


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def train_step(params, x, y):
    """One SGD step on this device's shard; the gradients averaged over the devices."""
    (gW1, gb1), (gW2, gb2), (gW3, gb3) = grad(loss)(params, x, y)
    (W1, b1), (W2, b2), (W3, b3) = params
    return [
        (W1 - LEARNING_RATE * pmean(gW1, "devices"), b1 - LEARNING_RATE * pmean(gb1, "devices")),
        (W2 - LEARNING_RATE * pmean(gW2, "devices"), b2 - LEARNING_RATE * pmean(gb2, "devices")),
        (W3 - LEARNING_RATE * pmean(gW3, "devices"), b3 - LEARNING_RATE * pmean(gb3, "devices")),
    ]


per_example_grads = jit(vmap(grad(loss), in_axes=(None, 0, 0)))
parallel_step = jit(pmap(train_step, axis_name="devices", in_axes=(None, 0, 0)))


def make_data(n, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = np.sin(x[:, :1]) * np.cos(x[:, 1:])
    return x, y


def first_device(params):
    return [(W[0], b[0]) for W, b in params]


def main(steps=300, batch=256):
    x, y = make_data(4096)
    params = init_params([2, 32, 32, 1])

    # per-example gradients: the stacked gradients of one example at a time
    g = per_example_grads(params, x[:8], y[:8])
    one = grad(loss)(params, x[3], y[3])
    assert all(np.allclose(g[k][j][3], one[k][j]) for k in range(3) for j in range(2))
    norms = np.sqrt(sum(np.sum(gW.reshape(8, -1) ** 2, axis=1) + np.sum(gb ** 2, axis=1) for gW, gb in g))
    print("per-example gradient norms:", np.round(norms, 3))
    print(f"their scales when clipped to norm {CLIP}: {np.round(np.minimum(1.0, CLIP / norms), 3)}")

    # the data-parallel step is the full-batch step: equal shards, gradients averaged
    shards_x, shards_y = x[:batch].reshape(DEVICES, -1, 2), y[:batch].reshape(DEVICES, -1, 1)
    stepped = first_device(parallel_step(params, shards_x, shards_y))
    full = grad(loss)(params, x[:batch], y[:batch])
    assert all(np.allclose(stepped[k][j], params[k][j] - LEARNING_RATE * full[k][j]) for k in range(3) for j in range(2))

    rng = np.random.default_rng(2)
    for step in range(steps):
        idx = rng.choice(len(x), size=batch, replace=False)
        params = first_device(parallel_step(params, x[idx].reshape(DEVICES, -1, 2), y[idx].reshape(DEVICES, -1, 1)))
        if step % 100 == 0 or step == steps - 1:
            print(f"step {step:3d}  loss {loss(params, x, y):.5f}")
    print(f"generated files: {srctrans.source_path(per_example_grads)}")
    print(f"                 {parallel_step.source_path()}")


if __name__ == "__main__":
    main()
