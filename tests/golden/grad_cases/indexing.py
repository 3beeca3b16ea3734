import numpy as np


def f(x):
    first = x[0]
    tail = x[1:] * first
    picks = x[np.array([0, 2, 2])]
    return np.sum(tail * tail) + np.sum(picks)


INPUTS = [(np.array([0.5, -1.0, 2.0, 3.0]),)]
ARGNUMS = 0
