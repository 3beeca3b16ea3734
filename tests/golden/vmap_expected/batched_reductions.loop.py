# vmap method: a loop over the examples, because method='loop' was asked for

import numpy as np
import srctrans.runtime as rt


def f(X):
    # reductions shift their axis; axis=None reduces one example
    # batched_reductions.py:6  mu = np.mean(X, axis=0)
    mu = np.mean(X, axis=0)
    # batched_reductions.py:7  c = X - mu
    c = X - mu
    # batched_reductions.py:8  return np.max(c, axis=1) + np.sum(c * c)
    return np.max(c, axis=1) + np.sum(c * c)


def f_vmap(X):
    # vmap by a loop over the examples: method='loop' was asked for
    n = X.shape[0]  # the batch size
    out = f(rt.batch_example(X))  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i in range(1, n):
        out_i = f(X[i])
        out_batch[i] = out_i
    return out_batch
