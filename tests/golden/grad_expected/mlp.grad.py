import numpy as np
import srctrans.runtime as rt


def f_grad(W, b, x):
    # mlp.py:5  h = np.tanh(W @ x + b)
    t1 = W @ x
    t2 = t1 + b
    h = np.tanh(t2)
    # mlp.py:6  return np.sum(h * h) / h.shape[0]
    t3 = h * h
    num = np.sum(t3)
    t4 = h.shape
    den = t4[0]
    out = num / den
    # --- backward ---
    # mlp.py:6  return np.sum(h * h) / h.shape[0]
    out_bar = rt.grad_seed(out)
    num_bar = rt.unbroadcast(out_bar / den, num)
    t3_bar = rt.sum_grad(num_bar, t3, None, False)
    h_bar = t3_bar * h
    h_bar = h_bar + t3_bar * h
    # mlp.py:5  h = np.tanh(W @ x + b)
    t2_bar = h_bar * (1.0 - h * h)
    t1_bar = rt.unbroadcast(t2_bar, t1)
    b_bar = rt.unbroadcast(t2_bar, b)
    W_bar = rt.dot_grad_x(t1_bar, W, x)
    return out, (W_bar, b_bar)
