import numpy as np
import srctrans.runtime as rt


def f_grad(x, w):
    # branches.py:5  s = np.sum(x)
    s = np.sum(x)
    # branches.py:6  if s > 1.0:
    t1 = s > 1.0
    if t1:
        # branches.py:7  r = s * w
        r = s * w
    else:
        # branches.py:8  elif s > -1.0:
        t2 = s > -1.0
        if t2:
            # branches.py:9  r = s * s + w
            t3 = s * s
            r = t3 + w
        else:
            # branches.py:11  r = np.exp(s) * w
            t4 = np.exp(s)
            r = t4 * w
    # branches.py:12  return r
    # --- backward ---
    s_bar = rt.zeros_like(s)
    w_bar = rt.zeros_like(w)
    # branches.py:12  return r
    r_bar = rt.grad_seed(r)
    # branches.py:6  if s > 1.0:
    if t1:
        # branches.py:7  r = s * w
        s_bar = s_bar + rt.unbroadcast(r_bar * w, s)
        w_bar = w_bar + r_bar * s
    else:
        # branches.py:8  elif s > -1.0:
        if t2:
            # branches.py:9  r = s * s + w
            t3_bar = rt.unbroadcast(r_bar, t3)
            w_bar = w_bar + r_bar
            s_bar = s_bar + t3_bar * s
            s_bar = s_bar + t3_bar * s
        else:
            # branches.py:11  r = np.exp(s) * w
            t4_bar = rt.unbroadcast(r_bar * w, t4)
            w_bar = w_bar + r_bar * t4
            s_bar = s_bar + t4_bar * t4
    # branches.py:5  s = np.sum(x)
    x_bar = rt.sum_grad(s_bar, x, None, False)
    return r, (x_bar, w_bar)
