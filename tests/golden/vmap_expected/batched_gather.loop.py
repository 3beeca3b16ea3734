# vmap method: a loop over the examples, because method='loop' was asked for

import numpy as np
import srctrans.runtime as rt


def f(table, i, x):
    # indexing with a batched index: a gather
    # batched_gather.py:6  row = table[i]
    row = table[i]
    # batched_gather.py:7  return np.dot(row, x)
    return np.dot(row, x)


def f_vmap(table, i, x):
    # vmap by a loop over the examples: method='loop' was asked for
    n = i.shape[0]  # the batch size
    out = f(table, rt.batch_example(i), rt.batch_example(x))  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i_1 in range(1, n):
        out_i_1 = f(table, i[i_1], x[i_1])
        out_batch[i_1] = out_i_1
    return out_batch
