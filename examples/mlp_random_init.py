"""A small MLP whose data, initial weights, minibatches and input noise all come from explicit keys.

Every random number below is a pure function of a key, so the run is reproducible
under compilation, and the same keys give the same numbers as ``jax.random``
(with float64 enabled in JAX): ``srctrans.random.normal(srctrans.random.key(0), 3)``
equals ``jax.random.normal(jax.random.PRNGKey(0), (3,))`` bit for bit.

``grad`` trains it, ``vmap`` gives every example of a minibatch a key of its own (input
noise) and the test set's per-example errors, ``jit`` compiles all three.

Run: ``python examples/mlp_random_init.py``
"""

from __future__ import annotations

import numpy as np

import srctrans
from srctrans import random


def init_layer(key, n_in, n_out):
    """Glorot-normal weights and zero biases."""
    w = random.normal(key, (n_in, n_out)) * np.sqrt(2.0 / (n_in + n_out))
    return w, np.zeros(n_out)


def loss(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    return np.mean((out - y) ** 2)


def jitter(key, x):
    """One input with a little noise of its own: each example gets its own key."""
    return x + 0.02 * random.normal(key, x.shape)


def example_error(w1, b1, w2, b2, x, y):
    """The squared error of one example."""
    h = np.tanh(x @ w1 + b1)
    return np.sum((h @ w2 + b2 - y) ** 2)


def make_data(key, n):
    """Points in the square [-2, 2)^2 and a smooth target with a little noise."""
    kx, kn = random.split(key)
    x = random.uniform(kx, (n, 2), minval=-2.0, maxval=2.0)
    y = (np.sin(x[:, 0]) * np.cos(x[:, 1]))[:, None] + 0.05 * random.normal(kn, (n, 1))
    return x, y


def main(steps=300, batch=64, lr=0.1, seed=0):
    key = random.key(seed)
    data_key, test_key, k1, k2, shuffle_key, noise_key = random.split(key, 6)
    x, y = make_data(data_key, 1024)
    x_test, y_test = make_data(test_key, 256)
    w1, b1 = init_layer(k1, 2, 32)
    w2, b2 = init_layer(k2, 32, 1)

    step_fn = srctrans.jit(srctrans.value_and_grad(loss, argnums=(0, 1, 2, 3)))
    test_loss = srctrans.jit(loss)
    noisy = srctrans.jit(srctrans.vmap(jitter))  # a batch of keys and a batch of inputs
    errors = srctrans.jit(srctrans.vmap(example_error, in_axes=(None, None, None, None, 0, 0)))
    print(f"initial test loss {test_loss(w1, b1, w2, b2, x_test, y_test):.4f}")
    n_batches = len(x) // batch
    for step in range(steps):
        epoch, i = divmod(step, n_batches)
        if i == 0:   # a fresh order each epoch: fold the epoch number into the key
            order = random.permutation(random.fold_in(shuffle_key, epoch), len(x))
        idx = order[i * batch:(i + 1) * batch]
        xb = noisy(random.split(random.fold_in(noise_key, step), batch), x[idx])
        value, (g1, gb1, g2, gb2) = step_fn(w1, b1, w2, b2, xb, y[idx])
        w1, b1, w2, b2 = w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2
        if step % 100 == 0:
            print(f"step {step:4d}  batch loss {value:.4f}")
    final = test_loss(w1, b1, w2, b2, x_test, y_test)
    per_example = errors(w1, b1, w2, b2, x_test, y_test)
    assert np.isclose(per_example.mean(), final)
    print(f"final test loss {final:.4f}; worst example {per_example.max():.4f} at {x_test[per_example.argmax()]}")
    return final


if __name__ == "__main__":
    main()
