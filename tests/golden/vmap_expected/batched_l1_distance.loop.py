# vmap method: a loop over the examples, because method='loop' was asked for

import numpy as np
import srctrans.runtime as rt


def f(x, y):
    # batched_l1_distance.py:5  return np.sum(np.abs(x - y))
    return np.sum(np.abs(x - y))


def f_vmap(x, y):
    # vmap by a loop over the examples: method='loop' was asked for
    n = x.shape[0]  # the batch size
    out = f(rt.batch_example(x), y)  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i in range(1, n):
        out_i = f(x[i], y)
        out_batch[i] = out_i
    return out_batch
