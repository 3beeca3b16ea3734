# vmap method: vectorized (every statement has a batching rule)

import numpy as np
import srctrans.runtime as rt


def f_vmap(X):
    # reductions shift their axis; axis=None reduces one example
    # batched_reductions.py:6  mu = np.mean(X, axis=0)
    mu = np.mean(X, axis=1)
    # batched_reductions.py:7  c = X - mu
    c = X - mu[:, None]
    # batched_reductions.py:8  return np.max(c, axis=1) + np.sum(c * c)
    t1 = np.max(c, axis=2)
    t3 = np.sum(rt.batch_flatten(c * c), axis=1)
    out = t1 + t3[:, None]
    return out
