import numpy as np


def f(x, scale):
    rows, cols = x.shape
    out = np.zeros((rows, cols + 1))
    out[:, 1:] = x * scale
    out[0, 0] += x.sum(axis=0).max() / rows
    a = b = x.mean()
    if 0.0 < a < 1.0:
        out[rows - 1, :] -= b
    return out.T, x.dot(x.T)[0, -1]


INPUTS = [(np.arange(6.0).reshape(2, 3) / 10.0, 3.0), (np.ones((3, 2)), -1.0)]
