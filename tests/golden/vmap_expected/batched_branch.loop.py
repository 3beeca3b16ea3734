# vmap method: a loop over the examples, because method='loop' was asked for

import numpy as np
import srctrans.runtime as rt


def f(x):
    # an if on a batched value: a masked select
    # batched_branch.py:6  s = np.sum(x)
    s = np.sum(x)
    # batched_branch.py:7  if s > 1.0:
    if s > 1.0:
        # batched_branch.py:8  r = s * s
        r = s * s
    else:
        # batched_branch.py:10  r = -s * 3.0
        r = -s * 3.0
    # batched_branch.py:11  return r + s
    return r + s


def f_vmap(x):
    # vmap by a loop over the examples: method='loop' was asked for
    n = x.shape[0]  # the batch size
    out = f(rt.batch_example(x))  # the first example (zeros for an empty batch) sizes the results
    out_batch = rt.batch_alloc(out, n)
    for i in range(1, n):
        out_i = f(x[i])
        out_batch[i] = out_i
    return out_batch
