import numpy as np


def f(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        if t % 2 == 0:
            h = np.tanh(W @ h + xs[t])
        else:
            h = h * 0.5 + xs[t]
    return np.sum(h * h)


INPUTS = [(np.eye(2) * 0.5, np.array([0.1, -0.2]), np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]))]
ARGNUMS = (0, 1)
