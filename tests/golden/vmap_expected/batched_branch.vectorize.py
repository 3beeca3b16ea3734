# vmap method: vectorized (every statement has a batching rule)

import numpy as np


def f_vmap(x):
    # an if on a batched value: a masked select
    # batched_branch.py:6  s = np.sum(x)
    s = np.sum(x, axis=1)
    # batched_branch.py:7  if s > 1.0:
    # (a branch on a batched value: both sides computed, then selected)
    # batched_branch.py:8  r = s * s
    r_then = s * s
    # batched_branch.py:10  r = -s * 3.0
    t2_else = -s
    r_else = t2_else * 3.0
    r = np.where(s > 1.0, r_then, r_else)
    # batched_branch.py:11  return r + s
    out = r + s
    return out
