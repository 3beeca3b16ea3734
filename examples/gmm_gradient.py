"""Gradient of a Gaussian-mixture log-likelihood (the ADBench GMM objective), by srctrans.grad.

Reads an ADBench GMM input (../shared/data/adbench/gmm/...), differentiates the
objective with respect to all its parameters, checks the gradient against central
differences on a few coordinates, and prints the generated adjoint's path.

Run:  python examples/gmm_gradient.py [path/to/gmm_d10_K25.txt]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

import srctrans

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adbench" / "gmm" / "1k" / "gmm_d10_K25.txt"


def read_gmm(path):
    """ADBench's GMM file format: ``D K n``, alphas, means, icf, x, ``gamma m``."""
    tokens = Path(path).read_text().split()
    d, k, n = (int(t) for t in tokens[:3])
    values = np.array(tokens[3:], dtype=float)
    alphas, values = values[:k], values[k:]
    means, values = values[: k * d].reshape(k, d), values[k * d :]
    icf_size = d * (d + 1) // 2
    icf, values = values[: k * icf_size].reshape(k, icf_size), values[k * icf_size :]
    x, values = values[: n * d].reshape(n, d), values[n * d :]
    return alphas, means, icf, x, float(values[0]), int(values[1])


def lower_triangle_index(d):
    """Where each entry of a d x d lower-triangular factor sits in ADBench's packed ``icf`` row."""
    index = np.zeros((d, d), dtype=np.int64)
    mask = np.zeros((d, d, 1), dtype=bool)
    position = d  # the packed strictly-lower part follows the d log-diagonal entries (column-major)
    for col in range(d):
        for row in range(col + 1, d):
            index[row, col] = position
            mask[row, col, 0] = True
            position += 1
    return index, mask


def gmm_objective(alphas, means, icf, x, index, mask, wishart_gamma, wishart_m):
    """ADBench's GMM objective. Arrays are laid out (point, dimension, component)."""
    n = x.shape[0]
    d = x.shape[1]
    log_diag = icf[:, :d]
    q_diag = np.exp(log_diag)
    sum_log_diag = np.sum(log_diag, axis=1)
    L = np.where(mask, icf.T[index], 0.0)  # (d, d, K): the strictly lower part of each factor
    centered = np.expand_dims(x, 2) - np.expand_dims(means.T, 0)  # (n, d, K)
    lower = np.sum(np.expand_dims(L, 0) * np.expand_dims(centered, 1), axis=2)
    scaled = np.expand_dims(q_diag.T, 0) * centered + lower
    main = alphas + sum_log_diag - 0.5 * np.sum(scaled * scaled, axis=1)  # (n, K)
    biggest = np.max(main, axis=1, keepdims=True)
    log_likelihood = np.sum(np.log(np.sum(np.exp(main - biggest), axis=1)) + biggest[:, 0])
    top = np.max(alphas)
    log_mix = top + np.log(np.sum(np.exp(alphas - top)))
    prior = 0.5 * wishart_gamma * wishart_gamma * (np.sum(q_diag * q_diag) + np.sum(L * L))
    prior = prior - wishart_m * np.sum(sum_log_diag)
    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    return constant + log_likelihood - n * log_mix + prior


def gmm_objective_loops(alphas, means, icf, x, wishart_gamma, wishart_m):
    """The same objective written with loops, as one writes it from the formula: the factors
    built entry by entry, then a loop over the points and one over the components."""
    n = x.shape[0]
    d = x.shape[1]
    K = alphas.shape[0]
    qs = np.exp(icf[:, :d])
    sum_log_diag = np.sum(icf[:, :d], axis=1)
    Ls = np.zeros((K, d, d))
    for k in range(K):
        pos = d
        for c in range(d):
            for r in range(c + 1, d):
                Ls[k, r, c] = icf[k, pos]
                pos += 1
    total = 0.0
    for i in range(n):
        main = np.zeros(K)
        for k in range(K):
            centered = x[i] - means[k]
            z = qs[k] * centered + Ls[k] @ centered
            main[k] = alphas[k] + sum_log_diag[k] - 0.5 * np.dot(z, z)
        top = np.max(main)
        total = total + top + np.log(np.sum(np.exp(main - top)))
    top = np.max(alphas)
    log_mix = top + np.log(np.sum(np.exp(alphas - top)))
    prior = 0.5 * wishart_gamma * wishart_gamma * (np.sum(qs * qs) + np.sum(Ls * Ls))
    prior = prior - wishart_m * np.sum(sum_log_diag)
    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    return constant + total - n * log_mix + prior


def main(path=DEFAULT):
    alphas, means, icf, x, gamma, m = read_gmm(path)
    index, mask = lower_triangle_index(x.shape[1])
    args = (alphas, means, icf, x, index, mask, gamma, m)
    print(f"{Path(path).name}: d={x.shape[1]} K={alphas.shape[0]} n={x.shape[0]}")

    grad = srctrans.grad(gmm_objective, argnums=(0, 1, 2))
    start = time.perf_counter()
    g_alphas, g_means, g_icf = grad(*args)
    print(f"objective {gmm_objective(*args):.6f}; gradient in {time.perf_counter() - start:.3f} s (generated Python)")

    rng = np.random.default_rng(0)
    eps = 1e-6
    for name, value, g in (("alphas", alphas, g_alphas), ("means", means, g_means), ("icf", icf, g_icf)):
        for _ in range(2):
            i = tuple(int(rng.integers(s)) for s in value.shape)
            up, down = value.copy(), value.copy()
            up[i] += eps
            down[i] -= eps
            swap = {"alphas": 0, "means": 1, "icf": 2}[name]
            a_up, a_down = list(args), list(args)
            a_up[swap], a_down[swap] = up, down
            numeric = (gmm_objective(*a_up) - gmm_objective(*a_down)) / (2 * eps)
            print(f"  d/d{name}{list(i)}: srctrans {g[i]: .8e}   central difference {numeric: .8e}")
    print(f"generated adjoint: {srctrans.source_path(grad)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
