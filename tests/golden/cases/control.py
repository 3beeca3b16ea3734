import numpy as np


def f(x, n):
    total = 0.0
    i = 0
    while i < n and total < 10.0:
        i += 1
        if i % 3 == 0:
            continue
        elif i % 5 == 0 or x > 100.0:
            total = total + 2.0 * x
        else:
            total += x if x > 0 else -x
    for k in range(n - 1):
        total = total - 0.5 * k
    return total


INPUTS = [(1.5, 12), (-2.0, 7), (0.25, 0)]
