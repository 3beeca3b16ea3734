import numpy as np
import srctrans.runtime as rt


def layer(W, x):
    # calls.py:5  return np.tanh(W @ x)
    return np.tanh(W @ x)


def layer_vjp_W(W, x, out_bar):
    # calls.py:5  return np.tanh(W @ x)
    t1 = W @ x
    out = np.tanh(t1)
    # --- backward ---
    # calls.py:5  return np.tanh(W @ x)
    t1_bar = out_bar * (1.0 - out * out)
    W_bar = rt.dot_grad_x(t1_bar, W, x)
    return out, (W_bar,)


def layer_vjp(W, x, out_bar):
    # calls.py:5  return np.tanh(W @ x)
    t1 = W @ x
    out = np.tanh(t1)
    # --- backward ---
    # calls.py:5  return np.tanh(W @ x)
    t1_bar = out_bar * (1.0 - out * out)
    W_bar = rt.dot_grad_x(t1_bar, W, x)
    x_bar = rt.dot_grad_y(t1_bar, W, x)
    return out, (W_bar, x_bar)


def f_grad(W1, W2, x):
    # calls.py:9  h = layer(W1, x)
    h = layer(W1, x)
    # calls.py:10  o = layer(W2, h)
    o = layer(W2, h)
    # calls.py:11  return np.sum(o * o)
    t1 = o * o
    out = np.sum(t1)
    # --- backward ---
    # calls.py:11  return np.sum(o * o)
    out_bar = rt.grad_seed(out)
    t1_bar = rt.sum_grad(out_bar, t1, None, False)
    o_bar = t1_bar * o
    o_bar = o_bar + t1_bar * o
    # calls.py:10  o = layer(W2, h)
    layer_vjp_out, layer_vjp_bars = layer_vjp(W2, h, o_bar)
    layer_W_bar, layer_x_bar = layer_vjp_bars
    W2_bar = layer_W_bar
    h_bar = layer_x_bar
    # calls.py:9  h = layer(W1, x)
    layer_vjp_W_out, layer_vjp_W_bars = layer_vjp_W(W1, x, h_bar)
    layer_W_bar_1, = layer_vjp_W_bars
    W1_bar = layer_W_bar_1
    return out, (W1_bar, W2_bar)
