import numpy as np


def f(A):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            total = total + np.sin(A[i, j]) * (i - j)
    return total


INPUTS = [(np.arange(6.0).reshape(2, 3),)]
ARGNUMS = 0
