import numpy as np


def f(x, scale):
    # arrays.py:5  rows, cols = x.shape
    t1 = x.shape
    rows, cols = t1
    # arrays.py:6  out = np.zeros((rows, cols + 1))
    t2 = cols + 1
    out = np.zeros((rows, t2))
    # arrays.py:7  out[:, 1:] = x * scale
    t3 = x * scale
    out[:, 1:] = t3
    # arrays.py:8  out[0, 0] += x.sum(axis=0).max() / rows
    t4 = np.sum(x, axis=0)
    num = np.max(t4)
    t5 = num / rows
    out[0, 0] += t5
    # arrays.py:9  a = b = x.mean()
    a = np.mean(x)
    b = a
    # arrays.py:10  if 0.0 < a < 1.0:
    t6 = 0.0 < a
    if t6:
        t6 = a < 1.0
    if t6:
        # arrays.py:11  out[rows - 1, :] -= b
        t7 = rows - 1
        out[t7, :] -= b
    # arrays.py:12  return out.T, x.dot(x.T)[0, -1]
    t8 = out.T
    t9 = x.T
    t10 = np.dot(x, t9)
    t11 = t10[0, -1]
    return t8, t11
