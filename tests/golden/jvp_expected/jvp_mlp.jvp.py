import numpy as np


def f_jvp(W, b, x, W_dot, b_dot):
    # jvp_mlp.py:5  h = np.tanh(W @ x + b)
    t1 = W @ x
    t1_dot = W_dot @ x
    t2 = t1 + b
    t2_dot = t1_dot + b_dot
    h = np.tanh(t2)
    h_dot = (1.0 - h * h) * t2_dot
    # jvp_mlp.py:6  return np.sum(h * h) / h.shape[0]
    t3 = h * h
    t3_dot = h * h_dot + h * h_dot
    num = np.sum(t3)
    num_dot = np.sum(t3_dot)
    t4 = h.shape
    den = t4[0]
    out = num / den
    out_dot = num_dot / den
    return out, out_dot
