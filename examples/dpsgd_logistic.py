"""DP-SGD for logistic regression: per-example gradients with ``vmap(grad)``, clipped, then noised.

Differentially private SGD (Abadi et al., 2016) needs the gradient of every example on its
own: each is clipped to an L2 norm of at most ``CLIP`` before they are summed, so that no
example moves the model by more than ``CLIP``; Gaussian noise scaled to ``CLIP`` then hides
any single example. ``srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0))`` gives the
(N, D) matrix of per-example gradients from the one-example loss: the generated file is the
adjoint of ``loss`` rewritten to carry the batch axis (``np.dot(x, w)`` over a batch of ``x``
becomes one matrix-vector product), and ``srctrans.jit`` compiles it.

Run:  python examples/dpsgd_logistic.py
"""

import numpy as np

import srctrans

CLIP = 1.0  # largest L2 norm of one example's gradient
NOISE = 1.1  # noise multiplier: standard deviation NOISE * CLIP on the summed gradient
LEARNING_RATE = 0.5
BATCH = 256


def loss(w, x, y):
    """Logistic loss of one example (features x, label y in {0, 1})."""
    z = np.dot(x, w)
    p = 1.0 / (1.0 + np.exp(-z))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


per_example_grads = srctrans.jit(srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0, 0)))


def clipped_noisy_gradient(w, X, y, rng):
    g = per_example_grads(w, X, y)  # (batch, D): one gradient per example
    norms = np.sqrt(np.sum(g * g, axis=1))
    g = g / np.maximum(1.0, norms / CLIP)[:, None]  # each row now has norm <= CLIP
    noise = rng.normal(0.0, NOISE * CLIP, size=w.shape)
    return (np.sum(g, axis=0) + noise) / X.shape[0]


def main() -> None:
    rng = np.random.default_rng(0)
    n, d = 4000, 10
    true_w = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ true_w))) * 1.0

    # the batched gradients equal the per-example gradients stacked, and a hand-written formula
    w = np.zeros(d)
    g = per_example_grads(w, X[:5], y[:5])
    one_by_one = np.stack([srctrans.grad(loss)(w, X[i], y[i]) for i in range(5)])
    p = 1.0 / (1.0 + np.exp(-X[:5] @ w))
    assert np.allclose(g, one_by_one) and np.allclose(g, (p - y[:5])[:, None] * X[:5])

    for step in range(300):
        idx = rng.choice(n, size=BATCH, replace=False)
        w = w - LEARNING_RATE * clipped_noisy_gradient(w, X[idx], y[idx], rng)
        if step % 100 == 0 or step == 299:
            p = 1.0 / (1.0 + np.exp(-X @ w))
            mean_loss = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
            accuracy = np.mean((p > 0.5) == (y > 0.5))
            print(f"step {step:3d}  loss {mean_loss:.4f}  accuracy {accuracy:.3f}")
    cosine = w @ true_w / (np.linalg.norm(w) * np.linalg.norm(true_w))
    print(f"cosine(w, true w) = {cosine:.3f}")
    print(f"generated file: {per_example_grads.source_path()}")
    print(per_example_grads.source())


if __name__ == "__main__":
    main()
