import numpy as np


def f(x, limit):
    total = 0.0
    for i in range(len(x)):
        if x[i] < 0.0:
            continue
        total = total + np.sqrt(x[i])
        if total > limit:
            break
    return total * total


INPUTS = [(np.array([0.5, -1.0, 2.0, 3.0, 1.0]), 2.0), (np.array([0.5, 1.5, -2.0]), 10.0)]
ARGNUMS = 0
