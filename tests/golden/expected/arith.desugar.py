import numpy as np


def f(x, w):
    # arith.py:5  y = np.sin(x) * w + np.exp(-2.0 * x)
    y = np.sin(x) * w + np.exp(-2.0 * x)
    # arith.py:6  return (1.0 - y) / (1.0 + y)
    return (1.0 - y) / (1.0 + y)
