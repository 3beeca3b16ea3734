import numpy as np


def f(x):
    y = x * 2.0
    y = np.sin(y)
    y = y * x
    s = 0.0
    s += np.sum(y)
    s *= 3.0
    return s


INPUTS = [(np.array([0.1, 0.2, 0.3]),)]
ARGNUMS = 0
