import numpy as np


def f(x):
    # an if on a batched value: a masked select
    s = np.sum(x)
    if s > 1.0:
        r = s * s
    else:
        r = -s * 3.0
    return r + s


IN_AXES = 0
INPUTS = [(np.array([[0.5, 0.9], [0.1, 0.2], [-1.0, -2.0]]),)]
