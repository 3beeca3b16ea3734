# vmap method: a loop over the examples, because method='loop' was asked for

import numpy as np
import srctrans.runtime as rt


def f(k, y0):
    # a loop over range: the batch rides along in every trip
    # batched_euler.py:6  y = y0
    y = y0
    # batched_euler.py:7  for i in range(5):
    for i in range(5):
        # batched_euler.py:8  y = y + 0.1 * (-k * y + np.sin(0.1 * i))
        y = y + 0.1 * (-k * y + np.sin(0.1 * i))
    # batched_euler.py:9  return y
    return y


def f_vmap(k, y0):
    # vmap by a loop over the examples: method='loop' was asked for
    n = y0.shape[0]  # the batch size
    out = f(k, rt.batch_example(y0))  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i in range(1, n):
        out_i = f(k, y0[i])
        out_batch[i] = out_i
    return out_batch
