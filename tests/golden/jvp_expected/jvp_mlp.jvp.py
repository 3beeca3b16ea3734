import numpy as np


def f_jvp(W, b, x, W_dot, b_dot):
    # jvp_mlp.py:5  h = np.tanh(W @ x + b)
    t1 = W @ x
    t1_dot = W_dot @ x
    h = np.tanh(t1 + b)
    h_dot = (1.0 - h * h) * (t1_dot + b_dot)
    # jvp_mlp.py:6  return np.sum(h * h) / h.shape[0]
    num = np.sum(h * h)
    num_dot = np.sum(h * h_dot + h * h_dot)
    t4 = h.shape
    den = t4[0]
    out = num / den
    out_dot = num_dot / den
    return out, out_dot
