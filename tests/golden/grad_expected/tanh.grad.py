import numpy as np
import srctrans.runtime as rt


def f_grad(x):
    # tanh.py:5  y = np.exp(-2.0 * x)
    t1 = -2.0 * x
    y = np.exp(t1)
    # tanh.py:6  return (1.0 - y) / (1.0 + y)
    num = 1.0 - y
    den = 1.0 + y
    out = num / den
    # --- backward ---
    # tanh.py:6  return (1.0 - y) / (1.0 + y)
    out_bar = rt.grad_seed(out)
    num_bar = out_bar / den
    den_bar = out_bar * (-out / den)
    y_bar = den_bar
    y_bar = y_bar + -num_bar
    # tanh.py:5  y = np.exp(-2.0 * x)
    t1_bar = y_bar * y
    x_bar = t1_bar * (-2.0)
    return out, x_bar
