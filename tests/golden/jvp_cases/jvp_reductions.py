import numpy as np


def f(X):
    mu = np.mean(X, axis=0, keepdims=True)
    spread = np.max(X, axis=1) - np.min(X, axis=1)
    return np.sum((X - mu) ** 2) + np.sum(spread) + np.std(X)


INPUTS = [(np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]]),)]
ARGNUMS = 0
