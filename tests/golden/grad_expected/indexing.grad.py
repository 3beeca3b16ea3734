import numpy as np
import srctrans.runtime as rt


def f_grad(x):
    # indexing.py:5  first = x[0]
    first = x[0]
    # indexing.py:6  tail = x[1:] * first
    t1 = x[1:]
    tail = t1 * first
    # indexing.py:7  picks = x[np.array([0, 2, 2])]
    t2 = [0, 2, 2]
    t3 = np.array(t2)
    picks = x[t3]
    # indexing.py:8  return np.sum(tail * tail) + np.sum(picks)
    t4 = tail * tail
    t5 = np.sum(t4)
    t6 = np.sum(picks)
    out = t5 + t6
    # --- backward ---
    # indexing.py:8  return np.sum(tail * tail) + np.sum(picks)
    out_bar = rt.grad_seed(out)
    t5_bar = out_bar
    t6_bar = out_bar
    picks_bar = rt.sum_grad(t6_bar, picks, None, False)
    t4_bar = rt.sum_grad(t5_bar, t4, None, False)
    tail_bar = t4_bar * tail
    tail_bar = tail_bar + t4_bar * tail
    # indexing.py:7  picks = x[np.array([0, 2, 2])]
    x_bar = rt.getitem_grad(picks_bar, x, t3)
    # indexing.py:6  tail = x[1:] * first
    t1_bar = rt.unbroadcast(tail_bar * first, t1)
    first_bar = rt.unbroadcast(tail_bar * t1, first)
    x_bar = x_bar + rt.getitem_grad(t1_bar, x, slice(1, None, None))
    # indexing.py:5  first = x[0]
    x_bar = x_bar + rt.getitem_grad(first_bar, x, 0)
    return out, x_bar
