# vmap method: vectorized (every statement has a batching rule)

import numpy as np


def f_vmap(W, b, x):
    # a matrix-vector product over a batch of x: one matrix-matrix product
    # batched_tanh_layer.py:6  return np.tanh(W @ x + b)
    t1 = x @ np.transpose(W)
    out = np.tanh(t1 + b)
    return out
