import numpy as np


def layer(W, x):
    return np.tanh(W @ x)


def f(W1, W2, x):
    h = layer(W1, x)
    o = layer(W2, h)
    return np.sum(o * o)


INPUTS = [(np.arange(6.0).reshape(3, 2) / 10.0, np.arange(6.0).reshape(2, 3) / 5.0, np.array([0.3, -0.4]))]
ARGNUMS = (0, 1)
