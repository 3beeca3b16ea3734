import numpy as np


def f_stage0(x, w):
    # one psum: two stages, the sum of every example's squares between them
    # staged_normalize.py:8  h = np.tanh(x @ w)
    t1 = x @ w
    h = np.tanh(t1)
    # staged_normalize.py:9  s = psum(np.sum(h * h), "i")
    t2 = h * h
    t3 = np.sum(t2)
    return h, t3


def f_stage1(s, h):
    # staged_normalize.py:10  return h / np.sqrt(s)
    den = np.sqrt(s)
    out = h / den
    return out,


def f_pmap(run, x, w):
    """f over the devices of `run`: 2 stages of per-example code, the collectives between them."""
    # stage 1 of 2: map over the examples
    h, t3 = run.map(f_stage0, (x, w), batched=(True, False))
    # combine: psum over all the examples (staged_normalize.py:9)
    s = run.reduce("sum", t3)
    # stage 2 of 2: map over the examples again
    out, = run.map(f_stage1, (s, h), batched=(False, True))
    return out,
