import numpy as np


def f(x, w):
    # arith.py:5  y = np.sin(x) * w + np.exp(-2.0 * x)
    t1 = np.sin(x)
    t2 = t1 * w
    t3 = -2.0 * x
    t4 = np.exp(t3)
    y = t2 + t4
    # arith.py:6  return (1.0 - y) / (1.0 + y)
    num = 1.0 - y
    den = 1.0 + y
    out = num / den
    return out
