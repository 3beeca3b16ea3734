# vmap method: vectorized (every statement has a batching rule)

import numpy as np


def f_vmap(k, y0):
    # a loop over range: the batch rides along in every trip
    # batched_euler.py:6  y = y0
    y = y0
    # batched_euler.py:7  for i in range(5):
    for i in range(5):
        # batched_euler.py:8  y = y + 0.1 * (-k * y + np.sin(0.1 * i))
        y = y + 0.1 * (-k * y + np.sin(0.1 * i))
    # batched_euler.py:9  return y
    return y
