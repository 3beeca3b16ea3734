import numpy as np


def f(x, w):
    s = np.sum(x)
    if s > 1.0:
        r = s * w
    elif s > -1.0:
        r = s * s + w
    else:
        r = np.exp(s) * w
    return r


INPUTS = [(np.array([0.5, 0.9]), 2.0), (np.array([0.1, 0.2]), 2.0), (np.array([-1.0, -2.0]), 2.0)]
ARGNUMS = (0, 1)
