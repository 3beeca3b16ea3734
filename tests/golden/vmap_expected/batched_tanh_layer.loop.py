# vmap method: a loop over the examples, because method='loop' was asked for

import numpy as np
import srctrans.runtime as rt


def f(W, b, x):
    # a matrix-vector product over a batch of x: one matrix-matrix product
    # batched_tanh_layer.py:6  return np.tanh(W @ x + b)
    return np.tanh(W @ x + b)


def f_vmap(W, b, x):
    # vmap by a loop over the examples: method='loop' was asked for
    n = x.shape[0]  # the batch size
    out = f(W, b, rt.batch_example(x))  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i in range(1, n):
        out_i = f(W, b, x[i])
        out_batch[i] = out_i
    return out_batch
