"""Case ``programs``: ten complete programs as scientists and ML engineers write them, against JAX.

Each program is written once the way NumPy code is written (plain Python ``for`` loops and
``if`` where they come naturally) and run three ways:

- **srctrans**: the program under ``srctrans.jit`` with the transformation it needs
  (``grad``, ``value_and_grad``, ``vmap(grad)``, ``jvp`` of ``grad``, ``jacfwd``) written
  where JAX users write it, inside the program or around it;
- **JAX**: a line-for-line ``jax.numpy`` twin under ``jax.jit``, float64
  (``jax_enable_x64``), with ``lax.scan`` / ``lax.fori_loop`` where JAX needs them (a Python
  loop of hundreds of steps would be unrolled while tracing) and ``jnp.where`` for ``if`` on
  traced values; inputs already on its device, results waited for with
  ``jax.block_until_ready``;
- **NumPy**: the plain program with a hand-written gradient where one is short to write
  (logistic regression, DP-SGD, Gaussian process, RNN, Newton's Jacobian, HMC, Rosenbrock's
  Hessian-vector product, n-body forces, Huber), otherwise the primal alone, for reference
  (RK4).

The programs:

1. ``logistic``: logistic regression, 200 gradient-descent steps in one call (N=500, D=10),
   ``srctrans.grad(loss)(w, X, y)`` inside the training loop; times per step.
2. ``dpsgd``: one DP-SGD step of a 2-layer tanh MLP (N=256 examples, 16-32-1): per-example
   gradients ``vmap(grad(loss))``, each clipped to norm 1, summed, Gaussian noise from
   ``srctrans.random`` (JAX's bits, so the twins agree). As written, the step names the
   vmapped gradient in its body (``per_example_grads = srctrans.vmap(...)``, as JAX code does);
   adjusted forms: the vmap called where it is written, and a global ``per_example_grads``.
3. ``rk4``: gradient of a fitting loss through 500 RK4 steps of the Lotka-Volterra ODE with
   respect to its four parameters.
4. ``gp``: a Gaussian process's negative log marginal likelihood, n=300 points in 2-d, RBF
   kernel, and its gradient with respect to the three log hyperparameters
   (``value_and_grad``; ``np.linalg.cholesky`` and ``np.linalg.solve``).
5. ``rnn``: a tanh RNN (T=100, H=32, 8 inputs, 4 outputs), squared loss at every step,
   gradient with respect to its four weight arrays by BPTT (a loop over time).
6. ``newton``: Newton's method on a 3x3 nonlinear system, the Jacobian from
   ``srctrans.jacfwd`` inside the loop, 20 iterations in one call; times per iteration.
   Adjusted form: the loop in Python around ``jit(jacfwd(system))`` and ``jit(system)``.
7. ``hmc``: Hamiltonian Monte Carlo on a Bayesian logistic regression posterior (n=100, d=5),
   momenta and the accept test from ``srctrans.random``, 10 leapfrog steps with
   ``srctrans.grad`` of the log density, 100 samples in one call; times per sample.
8. ``hvp``: the Hessian-vector product of the extended Rosenbrock function, d=100, as
   ``jvp`` of ``grad``.
9. ``nbody``: the gradient of the gravitational potential energy of 64 bodies (softened),
   written as a double loop over pairs (JAX's twin is the vectorized pairwise form: JAX
   would unroll 2016 pairs). Adjusted form: the same vectorized form under srctrans.
10. ``huber``: per-example gradients ``vmap(grad(huber))`` of a Huber loss written with
    ``if``/``else`` (two ``return``), N=10,000 examples of 8 features.

Every program runs in fresh child processes (``harness.in_child``), BLAS on one thread
(``OPENBLAS_NUM_THREADS=1`` unless set; several programs call small matrix products and
LAPACK, and OpenBLAS's thread pools spread the medians on a small shared machine):

- **first call, srctrans**: a child with a new, empty ``SRCTRANS_CACHE_DIR`` and
  ``NUMBA_CACHE_DIR``: ``import srctrans`` (when this module loads; Numba is not imported yet)
  + building the transformation + the first call (generate the file, import Numba, compile,
  run). The first such child also times the steady state (below), so the program is compiled
  once per child. Where the program as written fails, the figure is that of the first adjusted
  form that works, each in a fresh child of its own.
- **first call, JAX**: a child that imports jax, builds ``jax.jit(...)``, puts the inputs on
  its device and calls once (trace, compile, run); no persistent compilation cache.
- **steady state**: in the first srctrans child, after its first call: NumPy and JAX
  (imported and compiled there, not counted), then ``harness.compare`` round-robin,
  ``--repeats`` samples each; calls of a few microseconds are batched (the sample divided by
  the batch). Programs that run many steps in one call report per step, iteration or sample.

The srctrans result is checked against JAX's and the NumPy version's (relative error of the
largest element, ``<= 1e-9``); a disagreement is printed in the table (``MISMATCH``) and
under it, never hidden. A program that srctrans refuses or fails on, as written, is a
``FAILED`` row with the first line of the error (no time: ``nan``); where adjusted forms are
given beside it, their rows follow (``srctrans, adjusted: ...``), failed or timed.

Goals: steady state, srctrans faster than JAX on every program and the median of
JAX / srctrans over the ten >= 1.5; first call (fresh process, cold cache) of srctrans <= 3x
JAX's on every program. They are judged on the programs as written: a failed program counts
as missed (speedup 0); a line under the goals gives the same figures for the best form of each.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from harness import CaseResult, Row, compare, fmt_time, goal_line, in_child

_IMPORT_START = time.perf_counter()
import srctrans  # noqa: E402  (timed: a first-call figure includes it; Numba is not imported yet)
from srctrans import random  # noqa: E402

SRCTRANS_IMPORT = time.perf_counter() - _IMPORT_START

NAME = "programs"
RTOL = 1e-9

# ============================================================================ the programs, as written


# 1. logistic regression, gradient descent -------------------------------------------------------


def logistic_loss(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def train_logistic(w, X, y, lr, steps):
    for _ in range(steps):
        w = w - lr * srctrans.grad(logistic_loss)(w, X, y)
    return w


def train_logistic_numpy(w, X, y, lr, steps):
    n = X.shape[0]
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - lr * (X.T @ (p - y)) / n
    return w


# 2. DP-SGD: per-example gradients, clipped, noised ----------------------------------------------


def example_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(W1 @ x + b1)
    out = W2 @ h + b2
    return 0.5 * np.sum((out - y) ** 2)


def dp_sgd_step(W1, b1, W2, b2, X, Y, key, lr, clip, sigma):
    per_example_grads = srctrans.vmap(srctrans.grad(example_loss, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0))
    g1, gb1, g2, gb2 = per_example_grads(W1, b1, W2, b2, X, Y)
    n = X.shape[0]
    sq = np.sum(g1**2, axis=(1, 2)) + np.sum(gb1**2, axis=1) + np.sum(g2**2, axis=(1, 2)) + np.sum(gb2**2, axis=1)
    scale = np.minimum(1.0, clip / np.sqrt(sq))
    k1, k2, k3, k4 = random.split(key, 4)
    W1 = W1 - lr * (np.sum(scale[:, None, None] * g1, axis=0) + sigma * clip * random.normal(k1, W1.shape)) / n
    b1 = b1 - lr * (np.sum(scale[:, None] * gb1, axis=0) + sigma * clip * random.normal(k2, b1.shape)) / n
    W2 = W2 - lr * (np.sum(scale[:, None, None] * g2, axis=0) + sigma * clip * random.normal(k3, W2.shape)) / n
    b2 = b2 - lr * (np.sum(scale[:, None] * gb2, axis=0) + sigma * clip * random.normal(k4, b2.shape)) / n
    return W1, b1, W2, b2


def dp_sgd_step_inline(W1, b1, W2, b2, X, Y, key, lr, clip, sigma):
    """``dp_sgd_step`` with the vmapped gradient called where it is written (no local name for it)."""
    g1, gb1, g2, gb2 = srctrans.vmap(srctrans.grad(example_loss, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0))(
        W1, b1, W2, b2, X, Y
    )
    n = X.shape[0]
    sq = np.sum(g1**2, axis=(1, 2)) + np.sum(gb1**2, axis=1) + np.sum(g2**2, axis=(1, 2)) + np.sum(gb2**2, axis=1)
    scale = np.minimum(1.0, clip / np.sqrt(sq))
    k1, k2, k3, k4 = random.split(key, 4)
    W1 = W1 - lr * (np.sum(scale[:, None, None] * g1, axis=0) + sigma * clip * random.normal(k1, W1.shape)) / n
    b1 = b1 - lr * (np.sum(scale[:, None] * gb1, axis=0) + sigma * clip * random.normal(k2, b1.shape)) / n
    W2 = W2 - lr * (np.sum(scale[:, None, None] * g2, axis=0) + sigma * clip * random.normal(k3, W2.shape)) / n
    b2 = b2 - lr * (np.sum(scale[:, None] * gb2, axis=0) + sigma * clip * random.normal(k4, b2.shape)) / n
    return W1, b1, W2, b2


per_example_grads = None  # made by _dpsgd_global(): see there


def dp_sgd_step_global(W1, b1, W2, b2, X, Y, key, lr, clip, sigma):
    """``dp_sgd_step`` with the vmapped gradient a global, ``per_example_grads``."""
    g1, gb1, g2, gb2 = per_example_grads(W1, b1, W2, b2, X, Y)
    n = X.shape[0]
    sq = np.sum(g1**2, axis=(1, 2)) + np.sum(gb1**2, axis=1) + np.sum(g2**2, axis=(1, 2)) + np.sum(gb2**2, axis=1)
    scale = np.minimum(1.0, clip / np.sqrt(sq))
    k1, k2, k3, k4 = random.split(key, 4)
    W1 = W1 - lr * (np.sum(scale[:, None, None] * g1, axis=0) + sigma * clip * random.normal(k1, W1.shape)) / n
    b1 = b1 - lr * (np.sum(scale[:, None] * gb1, axis=0) + sigma * clip * random.normal(k2, b1.shape)) / n
    W2 = W2 - lr * (np.sum(scale[:, None, None] * g2, axis=0) + sigma * clip * random.normal(k3, W2.shape)) / n
    b2 = b2 - lr * (np.sum(scale[:, None] * gb2, axis=0) + sigma * clip * random.normal(k4, b2.shape)) / n
    return W1, b1, W2, b2


def _dpsgd_global():
    """The global ``per_example_grads`` is made here, not as this module loads: making
    ``vmap(grad(f))`` writes grad's adjoint file at once, and the parent process, which imports
    this module too, has no SRCTRANS_CACHE_DIR (the file would go into the repository)."""
    global per_example_grads
    per_example_grads = srctrans.vmap(
        srctrans.grad(example_loss, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0)
    )
    return srctrans.jit(dp_sgd_step_global)


def dp_sgd_step_numpy(W1, b1, W2, b2, X, Y, key, lr, clip, sigma):
    n = X.shape[0]
    h = np.tanh(X @ W1.T + b1)  # (n, H)
    r = h @ W2.T + b2 - Y  # (n, 1)
    gb2 = r
    g2 = r[:, :, None] * h[:, None, :]
    dz = (r @ W2) * (1.0 - h * h)
    gb1 = dz
    g1 = dz[:, :, None] * X[:, None, :]
    sq = np.sum(g1**2, axis=(1, 2)) + np.sum(gb1**2, axis=1) + np.sum(g2**2, axis=(1, 2)) + np.sum(gb2**2, axis=1)
    scale = np.minimum(1.0, clip / np.sqrt(sq))
    k1, k2, k3, k4 = random.split(key, 4)
    W1 = W1 - lr * (np.sum(scale[:, None, None] * g1, axis=0) + sigma * clip * random.normal(k1, W1.shape)) / n
    b1 = b1 - lr * (np.sum(scale[:, None] * gb1, axis=0) + sigma * clip * random.normal(k2, b1.shape)) / n
    W2 = W2 - lr * (np.sum(scale[:, None, None] * g2, axis=0) + sigma * clip * random.normal(k3, W2.shape)) / n
    b2 = b2 - lr * (np.sum(scale[:, None] * gb2, axis=0) + sigma * clip * random.normal(k4, b2.shape)) / n
    return W1, b1, W2, b2


# 3. RK4 through an ODE ------------------------------------------------------------------------------


def lotka_volterra(y, theta):
    prey, pred = y[0], y[1]
    return np.array([theta[0] * prey - theta[1] * prey * pred, -theta[2] * pred + theta[3] * prey * pred])


def rk4_loss(theta, y0, data, dt):
    y = y0
    loss = 0.0
    for i in range(data.shape[0]):
        k1 = lotka_volterra(y, theta)
        k2 = lotka_volterra(y + 0.5 * dt * k1, theta)
        k3 = lotka_volterra(y + 0.5 * dt * k2, theta)
        k4 = lotka_volterra(y + dt * k3, theta)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        loss = loss + np.sum((y - data[i]) ** 2)
    return loss


# 4. Gaussian process marginal likelihood ----------------------------------------------------------


def gp_nlml(log_params, X, y):
    lengthscale = np.exp(log_params[0])
    signal = np.exp(log_params[1])
    noise = np.exp(log_params[2])
    n = X.shape[0]
    sqdist = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = signal * np.exp(-0.5 * sqdist / lengthscale**2) + noise * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2.0 * np.pi)


def gp_nlml_and_grad_numpy(log_params, X, y):
    lengthscale, signal, noise = np.exp(log_params)
    n = X.shape[0]
    sqdist = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    E = np.exp(-0.5 * sqdist / lengthscale**2)
    K = signal * E + noise * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    value = 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2.0 * np.pi)
    L_inv = np.linalg.solve(L, np.eye(n))
    W = L_inv.T @ L_inv - np.outer(alpha, alpha)  # K^-1 - alpha alpha^T
    grad = np.array(
        [
            0.5 * np.sum(W * (signal * E * sqdist / lengthscale**2)),
            0.5 * np.sum(W * (signal * E)),
            0.5 * noise * np.trace(W),
        ]
    )
    return value, grad


# 5. RNN, backpropagation through time ----------------------------------------------------------------


def rnn_loss(Wh, Wx, b, Wo, xs, ys, h0):
    h = h0
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(Wh @ h + Wx @ xs[t] + b)
        loss = loss + np.sum((Wo @ h - ys[t]) ** 2)
    return loss / xs.shape[0]


def rnn_grad_numpy(Wh, Wx, b, Wo, xs, ys, h0):
    T = xs.shape[0]
    hs = np.empty((T + 1, h0.shape[0]))
    hs[0] = h0
    for t in range(T):
        hs[t + 1] = np.tanh(Wh @ hs[t] + Wx @ xs[t] + b)
    dWh, dWx, db, dWo = np.zeros_like(Wh), np.zeros_like(Wx), np.zeros_like(b), np.zeros_like(Wo)
    dh_next = np.zeros_like(h0)
    for t in range(T - 1, -1, -1):
        e = 2.0 * (Wo @ hs[t + 1] - ys[t]) / T
        dWo += np.outer(e, hs[t + 1])
        dz = (Wo.T @ e + dh_next) * (1.0 - hs[t + 1] ** 2)
        dWh += np.outer(dz, hs[t])
        dWx += np.outer(dz, xs[t])
        db += dz
        dh_next = Wh.T @ dz
    return dWh, dWx, db, dWo


# 6. Newton's method with jacfwd --------------------------------------------------------------------


def system(x, p):
    return np.array(
        [
            x[0] ** 2 + x[1] ** 2 + x[2] ** 2 - p[0],
            x[0] * x[1] * x[2] - p[1],
            np.exp(x[0]) - x[1] + np.sin(x[2]) - p[2],
        ]
    )


def newton(x, p, iters):
    for _ in range(iters):
        J = srctrans.jacfwd(system)(x, p)
        x = x - np.linalg.solve(J, system(x, p))
    return x


def system_jacobian_numpy(x, p):
    return np.array(
        [
            [2.0 * x[0], 2.0 * x[1], 2.0 * x[2]],
            [x[1] * x[2], x[0] * x[2], x[0] * x[1]],
            [np.exp(x[0]), -1.0, np.cos(x[2])],
        ]
    )


def newton_numpy(x, p, iters):
    for _ in range(iters):
        x = x - np.linalg.solve(system_jacobian_numpy(x, p), system(x, p))
    return x


# 7. Hamiltonian Monte Carlo ---------------------------------------------------------------------------


def log_posterior(w, X, y):
    z = X @ w
    return np.sum(y * z - np.log1p(np.exp(z))) - 0.5 * np.sum(w**2)


def hmc(w, X, y, key, n_samples, eps, n_leapfrog):
    samples = np.zeros((n_samples, w.shape[0]))
    logp = log_posterior(w, X, y)
    for s in range(n_samples):
        key, k_momentum, k_accept = random.split(key, 3)
        p = random.normal(k_momentum, w.shape)
        w_new = w
        p_new = p + 0.5 * eps * srctrans.grad(log_posterior)(w_new, X, y)
        for i in range(n_leapfrog):
            w_new = w_new + eps * p_new
            if i < n_leapfrog - 1:
                p_new = p_new + eps * srctrans.grad(log_posterior)(w_new, X, y)
            else:
                p_new = p_new + 0.5 * eps * srctrans.grad(log_posterior)(w_new, X, y)
        logp_new = log_posterior(w_new, X, y)
        log_ratio = logp_new - 0.5 * np.sum(p_new**2) - logp + 0.5 * np.sum(p**2)
        if np.log(random.uniform(k_accept)) < log_ratio:
            w = w_new
            logp = logp_new
        samples[s] = w
    return samples


def log_posterior_grad_numpy(w, X, y):
    return X.T @ (y - 1.0 / (1.0 + np.exp(-(X @ w)))) - w


def hmc_numpy(w, X, y, key, n_samples, eps, n_leapfrog):
    samples = np.zeros((n_samples, w.shape[0]))
    logp = log_posterior(w, X, y)
    for s in range(n_samples):
        key, k_momentum, k_accept = random.split(key, 3)
        p = random.normal(k_momentum, w.shape)
        w_new = w
        p_new = p + 0.5 * eps * log_posterior_grad_numpy(w_new, X, y)
        for i in range(n_leapfrog):
            w_new = w_new + eps * p_new
            if i < n_leapfrog - 1:
                p_new = p_new + eps * log_posterior_grad_numpy(w_new, X, y)
            else:
                p_new = p_new + 0.5 * eps * log_posterior_grad_numpy(w_new, X, y)
        logp_new = log_posterior(w_new, X, y)
        log_ratio = logp_new - 0.5 * np.sum(p_new**2) - logp + 0.5 * np.sum(p**2)
        if np.log(random.uniform(k_accept)) < log_ratio:
            w = w_new
            logp = logp_new
        samples[s] = w
    return samples


# 8. Hessian-vector products ----------------------------------------------------------------------------


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hvp(x, v):
    return srctrans.jvp(srctrans.grad(rosenbrock), (x,), (v,))[1]


def rosenbrock_hvp_numpy(x, v):
    diag = np.zeros_like(x)
    diag[:-1] = 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    diag[1:] += 200.0
    off = -400.0 * x[:-1]  # H[i, i + 1] = H[i + 1, i]
    hv = diag * v
    hv[:-1] += off * v[1:]
    hv[1:] += off * v[:-1]
    return hv


# 9. n-body potential energy -----------------------------------------------------------------------------


def potential_energy(pos, mass, soft):
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            energy = energy - mass[i] * mass[j] / np.sqrt(np.sum(d * d) + soft)
    return energy


def potential_energy_vectorized(pos, mass, soft):
    d = pos[:, None, :] - pos[None, :, :]
    r = np.sqrt(np.sum(d * d, axis=-1) + soft)
    return -np.sum(np.triu(mass[:, None] * mass[None, :] / r, 1))


def potential_energy_grad_numpy(pos, mass, soft):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + soft
    coef = mass[:, None] * mass[None, :] / r2**1.5
    np.fill_diagonal(coef, 0.0)
    return np.sum(coef[:, :, None] * d, axis=1)


# 10. per-example gradients of a Huber loss with a branch ----------------------------------------------


def huber_loss(w, x, y, delta):
    r = np.dot(x, w) - y
    if abs(r) <= delta:
        return 0.5 * r * r
    else:
        return delta * (abs(r) - 0.5 * delta)


def huber_grads_numpy(w, X, y, delta):
    r = X @ w - y
    return np.where(np.abs(r) <= delta, r, delta * np.sign(r))[:, None] * X


# ============================================================================ JAX twins


def _jax_logistic(jax, jnp, lax, args):
    w, X, y, lr, steps = args

    def loss(w, X, y):
        p = 1.0 / (1.0 + jnp.exp(-(X @ w)))
        return -jnp.mean(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))

    def train(w, X, y, lr):
        return lax.fori_loop(0, steps, lambda i, w: w - lr * jax.grad(loss)(w, X, y), w)

    return jax.jit(train), (w, X, y, lr)


def _jax_dpsgd(jax, jnp, lax, args):
    def loss(W1, b1, W2, b2, x, y):
        h = jnp.tanh(W1 @ x + b1)
        return 0.5 * jnp.sum((W2 @ h + b2 - y) ** 2)

    grads = jax.vmap(jax.grad(loss, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0))

    def step(W1, b1, W2, b2, X, Y, key, lr, clip, sigma):
        g1, gb1, g2, gb2 = grads(W1, b1, W2, b2, X, Y)
        n = X.shape[0]
        sq = jnp.sum(g1**2, axis=(1, 2)) + jnp.sum(gb1**2, axis=1) + jnp.sum(g2**2, axis=(1, 2)) + jnp.sum(gb2**2, axis=1)
        scale = jnp.minimum(1.0, clip / jnp.sqrt(sq))
        k1, k2, k3, k4 = jax.random.split(key, 4)
        W1 = W1 - lr * (jnp.sum(scale[:, None, None] * g1, axis=0) + sigma * clip * jax.random.normal(k1, W1.shape)) / n
        b1 = b1 - lr * (jnp.sum(scale[:, None] * gb1, axis=0) + sigma * clip * jax.random.normal(k2, b1.shape)) / n
        W2 = W2 - lr * (jnp.sum(scale[:, None, None] * g2, axis=0) + sigma * clip * jax.random.normal(k3, W2.shape)) / n
        b2 = b2 - lr * (jnp.sum(scale[:, None] * gb2, axis=0) + sigma * clip * jax.random.normal(k4, b2.shape)) / n
        return W1, b1, W2, b2

    return jax.jit(step), args


def _jax_rk4(jax, jnp, lax, args):
    theta, y0, data, dt = args

    def f(y, theta):
        prey, pred = y[0], y[1]
        return jnp.array([theta[0] * prey - theta[1] * prey * pred, -theta[2] * pred + theta[3] * prey * pred])

    def loss(theta, y0, data, dt):
        def step(carry, target):
            y, total = carry
            k1 = f(y, theta)
            k2 = f(y + 0.5 * dt * k1, theta)
            k3 = f(y + 0.5 * dt * k2, theta)
            k4 = f(y + dt * k3, theta)
            y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return (y, total + jnp.sum((y - target) ** 2)), None

        (_, total), _ = lax.scan(step, (y0, 0.0), data)
        return total

    return jax.jit(jax.grad(loss)), args


def _jax_gp(jax, jnp, lax, args):
    def nlml(log_params, X, y):
        lengthscale = jnp.exp(log_params[0])
        signal = jnp.exp(log_params[1])
        noise = jnp.exp(log_params[2])
        n = X.shape[0]
        sqdist = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = signal * jnp.exp(-0.5 * sqdist / lengthscale**2) + noise * jnp.eye(n)
        L = jnp.linalg.cholesky(K)
        alpha = jnp.linalg.solve(L.T, jnp.linalg.solve(L, y))
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * n * jnp.log(2.0 * jnp.pi)

    return jax.jit(jax.value_and_grad(nlml)), args


def _jax_rnn(jax, jnp, lax, args):
    def loss(Wh, Wx, b, Wo, xs, ys, h0):
        def step(carry, xy):
            h, total = carry
            x, y = xy
            h = jnp.tanh(Wh @ h + Wx @ x + b)
            return (h, total + jnp.sum((Wo @ h - y) ** 2)), None

        (_, total), _ = lax.scan(step, (h0, 0.0), (xs, ys))
        return total / xs.shape[0]

    return jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3))), args


def _jax_newton(jax, jnp, lax, args):
    x, p, iters = args

    def F(x, p):
        return jnp.array(
            [
                x[0] ** 2 + x[1] ** 2 + x[2] ** 2 - p[0],
                x[0] * x[1] * x[2] - p[1],
                jnp.exp(x[0]) - x[1] + jnp.sin(x[2]) - p[2],
            ]
        )

    def solve(x, p):
        return lax.fori_loop(0, iters, lambda i, x: x - jnp.linalg.solve(jax.jacfwd(F)(x, p), F(x, p)), x)

    return jax.jit(solve), (x, p)


def _jax_hmc(jax, jnp, lax, args):
    w, X, y, key, n_samples, eps, n_leapfrog = args

    def logp_fn(w):
        z = X @ w
        return jnp.sum(y * z - jnp.log1p(jnp.exp(z))) - 0.5 * jnp.sum(w**2)

    grad = jax.grad(logp_fn)

    def sample(w, key):
        def one(carry, _):
            w, logp, key = carry
            key, k_momentum, k_accept = jax.random.split(key, 3)
            p = jax.random.normal(k_momentum, w.shape)
            p_new = p + 0.5 * eps * grad(w)

            def leap(i, state):
                w_new, p_new = state
                w_new = w_new + eps * p_new
                return w_new, p_new + eps * grad(w_new)

            w_new, p_new = lax.fori_loop(0, n_leapfrog - 1, leap, (w, p_new))
            w_new = w_new + eps * p_new
            p_new = p_new + 0.5 * eps * grad(w_new)
            logp_new = logp_fn(w_new)
            log_ratio = logp_new - 0.5 * jnp.sum(p_new**2) - logp + 0.5 * jnp.sum(p**2)
            accept = jnp.log(jax.random.uniform(k_accept)) < log_ratio
            w = jnp.where(accept, w_new, w)
            logp = jnp.where(accept, logp_new, logp)
            return (w, logp, key), w

        _, samples = lax.scan(one, (w, logp_fn(w), key), None, length=n_samples)
        return samples

    return jax.jit(sample), (w, key)


def _jax_hvp(jax, jnp, lax, args):
    def rosen(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    return jax.jit(lambda x, v: jax.jvp(jax.grad(rosen), (x,), (v,))[1]), args


def _jax_nbody(jax, jnp, lax, args):
    pos, mass, soft = args
    n = pos.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)

    def energy(pos, mass):
        d = pos[:, None, :] - pos[None, :, :]
        r = jnp.sqrt(jnp.sum(d * d, axis=-1) + soft)
        return -jnp.sum(jnp.where(upper, mass[:, None] * mass[None, :] / r, 0.0))

    return jax.jit(jax.grad(energy)), (pos, mass)


def _jax_huber(jax, jnp, lax, args):
    w, X, y, delta = args

    def loss(w, x, y):
        r = jnp.dot(x, w) - y
        return jnp.where(jnp.abs(r) <= delta, 0.5 * r * r, delta * (jnp.abs(r) - 0.5 * delta))

    return jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))), (w, X, y)


# ============================================================================ data and the three versions


def _data_logistic():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 10))
    y = (X @ rng.standard_normal(10) + 0.5 * rng.standard_normal(500) > 0) * 1.0
    return (np.zeros(10), X, y, 0.5, 200)


def _data_dpsgd():
    rng = np.random.default_rng(2)
    n, d, h = 256, 16, 32
    return (
        rng.standard_normal((h, d)) / 4.0,
        0.1 * rng.standard_normal(h),
        rng.standard_normal((1, h)) / math.sqrt(h),
        np.zeros(1),
        rng.standard_normal((n, d)),
        rng.standard_normal((n, 1)),
        random.key(7),
        0.1,
        1.0,
        1.1,
    )


def _data_rk4():
    theta_true = np.array([1.0, 0.5, 1.0, 0.3])
    steps, dt = 500, 0.01
    y = np.array([2.0, 1.0])
    data = np.empty((steps, 2))
    f = lotka_volterra
    for i in range(steps):
        k1 = f(y, theta_true)
        k2 = f(y + 0.5 * dt * k1, theta_true)
        k3 = f(y + 0.5 * dt * k2, theta_true)
        k4 = f(y + dt * k3, theta_true)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        data[i] = y
    data += 0.05 * np.random.default_rng(3).standard_normal(data.shape)
    return (np.array([0.9, 0.6, 1.1, 0.25]), np.array([2.0, 1.0]), data, dt)


def _data_gp():
    rng = np.random.default_rng(4)
    X = rng.uniform(-3.0, 3.0, size=(300, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(300)
    return (np.log(np.array([1.2, 0.8, 0.05])), X, y)


def _data_rnn():
    rng = np.random.default_rng(5)
    T, H, D, n_out = 100, 32, 8, 4
    return (
        0.9 * rng.standard_normal((H, H)) / math.sqrt(H),
        rng.standard_normal((H, D)) / math.sqrt(D),
        0.1 * rng.standard_normal(H),
        rng.standard_normal((n_out, H)) / math.sqrt(H),
        rng.standard_normal((T, D)),
        rng.standard_normal((T, n_out)),
        np.zeros(H),
    )


def _data_newton():
    root = np.array([1.0, 0.8, 0.6])
    p = np.array([np.sum(root**2), np.prod(root), np.exp(root[0]) - root[1] + np.sin(root[2])])
    return (np.array([1.3, 0.6, 0.4]), p, 20)


def _data_hmc():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((100, 5))
    y = (X @ np.array([1.0, -0.5, 0.25, 0.0, 2.0]) + rng.standard_normal(100) > 0) * 1.0
    return (np.zeros(5), X, y, random.key(11), 100, 0.05, 10)


def _data_hvp():
    rng = np.random.default_rng(8)
    return (1.0 + 0.1 * rng.standard_normal(100), rng.standard_normal(100))


def _data_nbody():
    rng = np.random.default_rng(9)
    return (rng.standard_normal((64, 3)), rng.uniform(0.5, 1.5, 64), 0.01)


def _data_huber():
    rng = np.random.default_rng(10)
    return (rng.standard_normal(8), rng.standard_normal((10_000, 8)), 2.0 * rng.standard_normal(10_000), 1.0)


def _newton_adjusted():
    """Newton's loop in Python around compiled ``jacfwd(system)`` and ``system``: a jacfwd in a jitted function is refused."""
    jac = srctrans.jit(srctrans.jacfwd(system))
    F = srctrans.jit(system)

    def newton_loop(x, p, iters):
        for _ in range(iters):
            x = x - np.linalg.solve(jac(x, p), F(x, p))
        return x

    return newton_loop


@dataclass
class Program:
    key: str
    title: str
    data: Callable[[], tuple]  # the arguments, made the same way in every process
    srctrans: Callable[[], Callable]  # builds the srctrans version, as written
    srctrans_what: str
    jax: Callable  # (jax, jnp, lax, args) -> (the jitted twin, its arguments)
    jax_what: str
    numpy: Callable | None  # the plain program
    numpy_what: str
    per: Callable[[tuple], int] = lambda args: 1  # units of work in one call (steps, iterations, samples)
    unit: str = ""  # "per step" ...
    inner: int = 1  # calls per timed sample
    adjusted: list[tuple[str, Callable[[], Callable]]] = field(default_factory=list)  # (what, builder): other srctrans forms
    numpy_compare: bool = True  # whether the NumPy result must equal srctrans's (False: primal only)


PROGRAMS = [
    Program(
        "logistic", "logistic regression, 200 GD steps, N=500 D=10", _data_logistic,
        lambda: srctrans.jit(train_logistic), "jit(train), grad(loss) in the loop",
        _jax_logistic, "jit, fori_loop",
        train_logistic_numpy, "hand-written gradient",
        per=lambda args: args[4], unit="per step",
    ),
    Program(
        "dpsgd", "DP-SGD step, MLP 16-32-1, N=256, vmap(grad), clip + noise", _data_dpsgd,
        lambda: srctrans.jit(dp_sgd_step), "jit(step), vmap(grad(loss)) in it",
        _jax_dpsgd, "jit(step), vmap(grad) in it",
        dp_sgd_step_numpy, "hand-written per-example grads",
        adjusted=[
            ("vmap(grad(loss))(...) called where written", lambda: srctrans.jit(dp_sgd_step_inline)),
            ("vmap(grad(loss)) a global", _dpsgd_global),
        ],
    ),
    Program(
        "rk4", "grad through 500 RK4 steps, Lotka-Volterra, 4 parameters", _data_rk4,
        lambda: srctrans.jit(srctrans.grad(rk4_loss)), "jit(grad(loss))",
        _jax_rk4, "jit(grad), lax.scan",
        rk4_loss, "primal only", numpy_compare=False,
    ),
    Program(
        "gp", "GP negative log marginal likelihood + grad, n=300", _data_gp,
        lambda: srctrans.jit(srctrans.value_and_grad(gp_nlml)), "jit(value_and_grad(nlml))",
        _jax_gp, "jit(value_and_grad)",
        gp_nlml_and_grad_numpy, "hand-written gradient",
    ),
    Program(
        "rnn", "tanh RNN T=100 H=32, grad by BPTT", _data_rnn,
        lambda: srctrans.jit(srctrans.grad(rnn_loss, argnums=(0, 1, 2, 3))), "jit(grad(loss))",
        _jax_rnn, "jit(grad), lax.scan",
        rnn_grad_numpy, "hand-written BPTT", inner=5,
    ),
    Program(
        "newton", "Newton's method, 3x3 system, jacfwd, 20 iterations", _data_newton,
        lambda: srctrans.jit(newton), "jit(newton), jacfwd(system) in the loop",
        _jax_newton, "jit, fori_loop, jacfwd",
        newton_numpy, "hand-written Jacobian",
        per=lambda args: args[2], unit="per iteration", inner=20,
        adjusted=[("Python loop, jit(jacfwd(system)), jit(system)", _newton_adjusted)],
    ),
    Program(
        "hmc", "HMC, Bayesian logistic regression d=5 n=100, 10 leapfrog steps", _data_hmc,
        lambda: srctrans.jit(hmc), "jit(hmc), grad(log_posterior) in it",
        _jax_hmc, "jit, lax.scan + fori_loop",
        hmc_numpy, "hand-written grad, random uncompiled",
        per=lambda args: args[4], unit="per sample",
    ),
    Program(
        "hvp", "Hessian-vector product jvp(grad(rosenbrock)), d=100", _data_hvp,
        lambda: srctrans.jit(rosenbrock_hvp), "jit(hvp), jvp(grad(f)) in it",
        _jax_hvp, "jit(jvp(grad(f)))",
        rosenbrock_hvp_numpy, "hand-written HVP", inner=200,
    ),
    Program(
        "nbody", "n-body, 64 bodies, grad of the potential (loop over pairs)", _data_nbody,
        lambda: srctrans.jit(srctrans.grad(potential_energy)), "jit(grad(energy)), double loop",
        _jax_nbody, "jit(grad), vectorized pairs",
        potential_energy_grad_numpy, "hand-written forces, vectorized", inner=5,
        adjusted=[("jit(grad(energy)), vectorized pairs", lambda: srctrans.jit(srctrans.grad(potential_energy_vectorized)))],
    ),
    Program(
        "huber", "vmap(grad(huber)) with if/else, N=10,000, 8 features", _data_huber,
        lambda: srctrans.jit(srctrans.vmap(srctrans.grad(huber_loss), in_axes=(None, 0, 0, None))),
        "jit(vmap(grad(huber)))",
        _jax_huber, "jit(vmap(grad)), jnp.where",
        huber_grads_numpy, "hand-written, vectorized", inner=5,
    ),
]
BY_KEY = {p.key: p for p in PROGRAMS}

# ============================================================================ measuring, in child processes


def _flat(value) -> np.ndarray:
    """Every leaf of a result (tuples, lists, arrays, numbers), as one float64 vector."""
    if isinstance(value, (tuple, list)):
        parts = [_flat(v) for v in value]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.ravel(np.asarray(value, dtype=np.float64))


def _rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want|: the largest error relative to the result's scale."""
    if got.shape != want.shape:
        return math.inf
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return float(np.max(np.abs(got - want))) / (scale or 1.0) if want.size else 0.0


def _first_line(err: BaseException) -> str:
    """The error's first line, paths shortened; where it ends in ':' (Numba's errors), the reason that follows."""
    lines = [line.strip() for line in f"{type(err).__name__}: {err}".splitlines() if line.strip()]
    line = lines[0]
    if line.endswith(":"):
        reason = next((r for r in lines[1:] if not r.startswith("Failed in ")), "")
        line = f"{line} {reason}"
    line = line.replace(str(Path(__file__).resolve().parent) + os.sep, "")
    line = re.sub(r"<module '([\w.]+)' from '[^']*'>", r"\1", line)
    return line[:170] + ("..." if len(line) > 170 else "")


def _batched(fn: Callable[[], object], inner: int) -> Callable[[], None]:
    if inner == 1:
        return fn

    def many():
        for _ in range(inner):
            fn()

    return many


def _import_jax():
    start = time.perf_counter()
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax

    return jax, jnp, lax, time.perf_counter() - start


def _jax_version(prog: Program, args: tuple):
    """(jax, the jitted twin, its arguments on JAX's device, seconds to import jax)."""
    jax, jnp, lax, imported = _import_jax()
    fn, jargs = prog.jax(jax, jnp, lax, args)
    jargs = tuple(jax.device_put(jnp.asarray(a)) if isinstance(a, np.ndarray) else a for a in jargs)
    return jax, fn, jargs, imported


def measure_jax_first(key: str) -> dict:
    """In a fresh process: import jax + jax.jit(...) + inputs to the device + first call; seconds and a checksum."""
    prog = BY_KEY[key]
    args = prog.data()
    start = time.perf_counter()
    jax, fn, jargs, imported = _jax_version(prog, args)
    out = jax.block_until_ready(fn(*jargs))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "import": imported, "sum": float(np.sum(_flat(out)))}


def _srctrans_forms(prog: Program) -> list[tuple[str, str, Callable[[], Callable]]]:
    """(impl name, row label, builder) of the program as written and of each adjusted form."""
    forms = [("srctrans", f"srctrans: {prog.srctrans_what}", prog.srctrans)]
    forms += [(f"adjusted {i}", f"srctrans, adjusted: {what}", build) for i, (what, build) in enumerate(prog.adjusted)]
    return forms


def measure_srctrans_first(key: str, form: str = "srctrans") -> dict:
    """In a fresh process (empty caches): import srctrans + build + first call; or the error."""
    prog = BY_KEY[key]
    build = next(b for name, _, b in _srctrans_forms(prog) if name == form)
    args = prog.data()
    start = time.perf_counter()
    try:
        out = build()(*args)
    except Exception as err:  # noqa: BLE001 - reported as a failure row
        return {"error": _first_line(err)}
    return {"seconds": SRCTRANS_IMPORT + time.perf_counter() - start, "sum": float(np.sum(_flat(out)))}


def measure_program(key: str, repeats: int) -> dict:
    """In a fresh process (empty caches): the srctrans first call, then the steady state of every version.

    Returns plain data: {"first": {form: seconds}, "samples": {impl: [seconds per unit]}, "errors": {impl: line},
    "labels": {impl: row label}, "checks": [(impl, other, relative error)], "log": [...], "per": n}.
    """
    prog = BY_KEY[key]
    args = prog.data()
    report: dict = {"log": [], "errors": {}, "checks": [], "samples": {}, "first": {}, "per": prog.per(args), "labels": {}}
    log = report["log"].append
    results: dict[str, np.ndarray] = {}
    impls: dict[str, Callable[[], object]] = {}

    # srctrans as written, then the adjusted forms: the first call of the first form that works is the cold figure
    for name, label, build in _srctrans_forms(prog):
        report["labels"][name] = label
        start = time.perf_counter()
        try:
            fn = build()
            out = fn(*args)
        except Exception as err:  # noqa: BLE001 - reported as a failure row
            report["errors"][name] = _first_line(err)
            log(f"  {label}: FAILED: {_first_line(err)}")
            log("    " + traceback.format_exc().rstrip().replace("\n", "\n    "))
            continue
        if not report["first"]:
            report["first"] = {name: SRCTRANS_IMPORT + time.perf_counter() - start}
        results[name] = _flat(out)
        impls[name] = lambda fn=fn: fn(*args)
        try:
            log(f"  {label}: generated file {srctrans.source_path(fn)}")
        except Exception:  # noqa: BLE001 - only a hint; a Jacobian has several files
            pass

    if prog.numpy is not None:
        results["numpy"] = _flat(prog.numpy(*args))
        impls["numpy"] = lambda: prog.numpy(*args)

    try:
        start = time.perf_counter()
        jax, jfn, jargs, _ = _jax_version(prog, args)
        results["jax"] = _flat(jax.block_until_ready(jfn(*jargs)))
        log(f"  JAX import + jit + first call in the same process: {time.perf_counter() - start:.2f} s")
        impls["jax"] = lambda: jax.block_until_ready(jfn(*jargs))
    except ImportError as err:
        report["errors"]["jax"] = f"jax not importable ({err}); JAX rows skipped"
    except Exception as err:  # noqa: BLE001 - a broken twin is reported, not fatal
        report["errors"]["jax"] = _first_line(err)
        log("  " + traceback.format_exc().rstrip().replace("\n", "\n  "))

    for name in report["labels"]:
        for other in ("jax", "numpy"):
            if name in results and other in results and (other == "jax" or prog.numpy_compare):
                report["checks"].append((name, other, _rel_err(results[name], results[other])))

    if impls:
        samples = compare({name: _batched(f, prog.inner) for name, f in impls.items()}, repeats)
        scale = prog.inner * report["per"]
        report["samples"] = {name: [s / scale for s in values] for name, values in samples.items()}
    return report


# ============================================================================ the case


def _child_env(root: Path, label: str) -> dict[str, str]:
    folder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=root))
    (folder / "srctrans").mkdir()
    (folder / "numba").mkdir()
    return {
        "SRCTRANS_CACHE_DIR": str(folder / "srctrans"),
        "NUMBA_CACHE_DIR": str(folder / "numba"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1"),
        "JAX_ENABLE_COMPILATION_CACHE": "false",
    }


def _one_program(prog: Program, repeats: int, runs: int, root: Path, log) -> tuple[list[Row], dict]:
    """Rows for one program, and figures for the goals and the summary lines."""
    case = f"{NAME}/{prog.key}"
    rows: list[Row] = []
    report = in_child("cases.programs", "measure_program", prog.key, repeats, **_child_env(root, prog.key))
    for message in report["log"]:
        log(message)
    # the first form that worked: its first call in that child if it is the program as written (a failed
    # attempt before it would have warmed the process), and fresh children for the rest of the runs
    form, first = next(iter(report["first"].items()), (None, None))
    firsts = [first] if form == "srctrans" else []
    for _ in range(len(firsts), runs if form else 0):
        again = in_child("cases.programs", "measure_srctrans_first", prog.key, form, **_child_env(root, prog.key))
        if "seconds" in again:
            firsts.append(again["seconds"])
        else:
            log(f"  {prog.key}: a fresh process failed where the first did not: {again['error']}")
    jax_firsts: list[float] = []
    jax_imports: list[float] = []
    if "jax" in report["samples"]:
        for _ in range(runs):
            got = in_child("cases.programs", "measure_jax_first", prog.key, **_child_env(root, prog.key))
            jax_firsts.append(got["seconds"])
            jax_imports.append(got["import"])

    unit = f", {prog.unit}" if prog.unit else ""
    med = {name: statistics.median(s) for name, s in report["samples"].items()}
    jax_t = med.get("jax")
    bad = {(name, other): err for name, other, err in report["checks"] if not err <= RTOL}
    for name, label in report["labels"].items():
        if name in report["errors"]:
            rows.append(Row(case, f"{label.split(':')[0]} FAILED: {report['errors'][name]}", [math.nan]))
            continue
        notes = [f"JAX / srctrans {jax_t / med[name]:.2f}x"] if jax_t else []
        notes += [f"MISMATCH vs {other}: rel err {err:.1e}" for (who, other), err in bad.items() if who == name]
        rows.append(Row(case, label + unit, report["samples"][name], note="; ".join(notes)))
    if jax_t:
        rows.append(Row(case, f"JAX: {prog.jax_what}{unit}", report["samples"]["jax"]))
    elif "jax" in report["errors"]:
        log(f"  {prog.key}: {report['errors']['jax']}")
    if "numpy" in med:
        rows.append(Row(case, f"NumPy: {prog.numpy_what}{unit}", report["samples"]["numpy"]))
    jax_first = statistics.median(jax_firsts) if jax_firsts else None
    if firsts:
        which = "srctrans" if form == "srctrans" else "srctrans adjusted"
        note = f"{statistics.median(firsts) / jax_first:.2f}x JAX's" if jax_first else ""
        rows.append(Row(case, f"first call, {which}, fresh process, cold cache", firsts, note=note))
    if jax_firsts:
        rows.append(
            Row(case, "first call, JAX, fresh process", jax_firsts, note=f"import jax {fmt_time(statistics.median(jax_imports))}")
        )

    facts: dict = {"failed": report["errors"].get("srctrans"), "jax": bool(jax_t)}
    facts["mismatch"] = [
        f"{report['labels'][who]} vs {other}: relative error {err:.2e} (tolerance {RTOL:g})" for (who, other), err in bad.items()
    ]
    facts["speedup"] = jax_t / med["srctrans"] if jax_t and "srctrans" in med else None
    adjusted = [jax_t / med[name] for name in report["labels"] if name != "srctrans" and name in med and jax_t]
    facts["best_speedup"] = max([facts["speedup"] or 0.0] + adjusted) if jax_t else None
    ratio = statistics.median(firsts) / jax_first if firsts and jax_first else None
    facts["first_ratio"] = ratio if form == "srctrans" else None
    facts["best_first_ratio"] = ratio
    return rows, facts


def run(repeats: int, log=print, runs: int = 2) -> CaseResult:
    rows: list[Row] = []
    lines: list[str] = []
    facts: dict[str, dict] = {}
    root = Path(tempfile.mkdtemp(prefix="srctrans-bench-programs-"))
    try:
        for number, prog in enumerate(PROGRAMS, 1):
            log(f"-- {number}. {prog.key}: {prog.title}")
            start = time.perf_counter()
            try:
                got, facts[prog.key] = _one_program(prog, repeats, runs, root, log)
                rows += got
            except Exception as err:  # noqa: BLE001 - one program's crash (a child process's) does not stop the others
                log("  " + traceback.format_exc().rstrip().replace("\n", "\n  "))
                last = [line for line in str(err).splitlines() if line.strip()][-1:] or [type(err).__name__]
                rows.append(Row(f"{NAME}/{prog.key}", f"FAILED: {last[0].strip()[:150]}", [math.nan]))
                facts[prog.key] = {"failed": last[0].strip()[:150], "speedup": None, "first_ratio": None, "mismatch": []}
            log(f"  ({prog.key}: {time.perf_counter() - start:.0f} s)")
    finally:
        shutil.rmtree(root, ignore_errors=True)

    lines.append("programs (JAX / srctrans: above 1, srctrans is faster; first call: srctrans / JAX):")
    for number, prog in enumerate(PROGRAMS, 1):
        f = facts[prog.key]
        parts = []
        if f.get("speedup") is not None:
            parts.append(f"steady JAX / srctrans {f['speedup']:.2f}")
        if f.get("first_ratio") is not None:
            parts.append(f"first call {f['first_ratio']:.2f}")
        if f.get("failed"):
            parts.append(f"srctrans FAILED: {f['failed']}")
        if f.get("best_speedup") and f["best_speedup"] != f.get("speedup"):
            parts.append(f"best adjusted form: steady {f['best_speedup']:.2f}")
        if f.get("failed") and f.get("best_first_ratio") is not None:
            parts.append(f"first call {f['best_first_ratio']:.2f}")
        lines.append(f"  {number:2d}. {prog.key:<8} " + "; ".join(parts))
        for text in f.get("mismatch", []):
            lines.append(f"      MISMATCH: {text}")
    if not any(f.get("jax") for f in facts.values()):
        lines.append("  jax not importable: no JAX rows, no goals")
        return CaseResult(NAME, rows, lines=lines)

    speedups = [facts[p.key].get("speedup") or 0.0 for p in PROGRAMS]  # a failure counts as 0
    firsts = [facts[p.key].get("first_ratio") or math.inf for p in PROGRAMS]
    failed = [p.key for p in PROGRAMS if facts[p.key].get("speedup") is None]
    mismatched = [p.key for p in PROGRAMS if facts[p.key].get("mismatch")]
    lines.append("goals, the programs as written (one srctrans fails on counts as missed: speedup 0, first call inf):")
    lines.append(goal_line("steady: JAX / srctrans, slowest program", min(speedups), ">=", 1.0))
    lines.append(goal_line("steady: JAX / srctrans, median of the ten", statistics.median(speedups), ">=", 1.5))
    lines.append(goal_line("first call: srctrans / JAX, worst program", max(firsts), "<=", 3.0))
    lines.append(f"  srctrans faster than JAX on {sum(s > 1.0 for s in speedups)} of {len(PROGRAMS)} programs")
    if failed:
        lines.append(f"  srctrans failed on the program as written: {', '.join(failed)}")
    best = [facts[p.key].get("best_speedup") or 0.0 for p in PROGRAMS]
    best_first = [facts[p.key].get("best_first_ratio") or math.inf for p in PROGRAMS]
    if best != speedups:
        lines.append(
            f"  for reference, the best srctrans form of each: steady JAX / srctrans median {statistics.median(best):.2f},"
            f" slowest {min(best):.2f}; first call worst {max(best_first):.2f}"
        )
    if mismatched:
        lines.append(f"  MISMATCH: srctrans disagrees with JAX or NumPy on {', '.join(mismatched)}")
    else:
        lines.append(f"  every srctrans result agrees with JAX (and NumPy where compared) to {RTOL:g}")
    return CaseResult(NAME, rows, lines=lines)
