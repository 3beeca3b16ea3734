import numpy as np


def f(W, b, x):
    h = np.tanh(W @ x + b)
    return np.sum(h * h) / h.shape[0]


INPUTS = [(np.arange(6.0).reshape(2, 3) / 10.0, np.ones(2), np.linspace(0.0, 1.0, 3))]
ARGNUMS = (0, 1)
