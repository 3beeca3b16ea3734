import numpy as np


def layer(W, x):
    # jvp_calls.py:5  return np.tanh(W @ x)
    return np.tanh(W @ x)


def layer_jvp_W(W, x, W_dot):
    # jvp_calls.py:5  return np.tanh(W @ x)
    t1 = W @ x
    t1_dot = W_dot @ x
    out = np.tanh(t1)
    out_dot = (1.0 - out * out) * t1_dot
    return out, out_dot


def layer_jvp(W, x, W_dot, x_dot):
    # jvp_calls.py:5  return np.tanh(W @ x)
    t1 = W @ x
    t1_dot = W_dot @ x + W @ x_dot
    out = np.tanh(t1)
    out_dot = (1.0 - out * out) * t1_dot
    return out, out_dot


def f_jvp(W1, W2, x, W1_dot, W2_dot):
    # jvp_calls.py:9  h = layer(W1, x)
    h, h_dot = layer_jvp_W(W1, x, W1_dot)
    # jvp_calls.py:10  o = layer(W2, h)
    o, o_dot = layer_jvp(W2, h, W2_dot, h_dot)
    # jvp_calls.py:11  return np.sum(o * o)
    out = np.sum(o * o)
    out_dot = np.sum(o * o_dot + o * o_dot)
    return out, out_dot
