import numpy as np


def f(x0, k):
    ys = np.zeros(5)
    ys[0] = x0
    for i in range(1, 5):
        ys[i] = ys[i - 1] - 0.1 * k * ys[i - 1]
    ys[1:3] *= k
    return np.sum(ys * ys)


INPUTS = [(0.8, 1.5), (-1.2, 0.3)]
ARGNUMS = (0, 1)
