import numpy as np
import srctrans.runtime as rt


def f_grad(x):
    # reassign.py:5  y = x * 2.0
    y = x * 2.0
    # reassign.py:6  y = np.sin(y)
    y_1 = y
    y = np.sin(y)
    # reassign.py:7  y = y * x
    y_2 = y
    y = y * x
    # reassign.py:8  s = 0.0
    s = 0.0
    # reassign.py:9  s += np.sum(y)
    y_3 = y
    t1 = np.sum(y)
    s_1 = s
    s = s + t1
    # reassign.py:10  s *= 3.0
    s_2 = s
    s = s * 3.0
    # reassign.py:11  return s
    # --- backward ---
    s_bar = rt.zeros_like(s)
    y_bar = rt.zeros_like(y)
    # reassign.py:11  return s
    s_bar = s_bar + rt.grad_seed(s)
    # reassign.py:10  s *= 3.0
    s_bar_1 = s_bar
    s_bar = s_bar_1 * 3.0
    # reassign.py:9  s += np.sum(y)
    s_bar_2 = s_bar
    s_bar = s_bar_2
    t1_bar = s_bar_2
    y_bar = y_bar + rt.sum_grad(t1_bar, y_3, None, False)
    # reassign.py:7  y = y * x
    y_bar_1 = y_bar
    y_bar = y_bar_1 * x
    x_bar = y_bar_1 * y_2
    # reassign.py:6  y = np.sin(y)
    y_bar_2 = y_bar
    y_bar = y_bar_2 * np.cos(y_1)
    # reassign.py:5  y = x * 2.0
    x_bar = x_bar + y_bar * 2.0
    return s, x_bar
