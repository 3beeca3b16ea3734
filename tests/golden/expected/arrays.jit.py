import numpy as np


def f(x, scale):
    # arrays.py:5  rows, cols = x.shape
    rows, cols = x.shape
    # arrays.py:6  out = np.zeros((rows, cols + 1))
    out = np.zeros((rows, cols + 1))
    # arrays.py:7  out[:, 1:] = x * scale
    out[:, 1:] = x * scale
    # arrays.py:8  out[0, 0] += x.sum(axis=0).max() / rows
    out[0, 0] += np.max(np.sum(x, axis=0)) / rows
    # arrays.py:9  a = b = x.mean()
    a = np.mean(x)
    b = a
    # arrays.py:10  if 0.0 < a < 1.0:
    if 0.0 < a and a < 1.0:
        # arrays.py:11  out[rows - 1, :] -= b
        out[rows - 1, :] -= b
    # arrays.py:12  return out.T, x.dot(x.T)[0, -1]
    return out.T, np.dot(x, x.T)[0, -1]
