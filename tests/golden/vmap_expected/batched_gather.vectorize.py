# vmap method: vectorized (every statement has a batching rule)

import numpy as np


def f_vmap(table, i, x):
    # indexing with a batched index: a gather
    # batched_gather.py:6  row = table[i]
    row = table[i]
    # batched_gather.py:7  return np.dot(row, x)
    out = np.sum(row * x, axis=1)
    return out
