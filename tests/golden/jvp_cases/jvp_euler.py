import numpy as np


def f(k, y0):
    y = y0
    for i in range(100):
        y = y + 0.01 * (-k * y + np.sin(0.1 * i))
    return y * y


INPUTS = [(0.7, 1.2)]
ARGNUMS = (0, 1)
