import numpy as np


def f(X):
    # reductions shift their axis; axis=None reduces one example
    mu = np.mean(X, axis=0)
    c = X - mu
    return np.max(c, axis=1) + np.sum(c * c)


IN_AXES = 0
INPUTS = [(np.arange(24.0).reshape(2, 4, 3) ** 0.5,)]
