import numpy as np


def f(x, y):
    return np.sum(np.abs(x - y))


IN_AXES = (0, None)
INPUTS = [(np.arange(6.0).reshape(3, 2), np.array([1.0, -1.0]))]
