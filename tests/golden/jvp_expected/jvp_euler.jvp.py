import numpy as np


def f_jvp(k, y0, k_dot, y0_dot):
    # jvp_euler.py:5  y = y0
    y = y0
    y_dot = y0_dot
    # jvp_euler.py:6  for i in range(100):
    for i in range(100):
        # jvp_euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        t1 = -k
        t6_dot = 0.01 * (y * -k_dot + t1 * y_dot)
        y = y + 0.01 * (t1 * y + np.sin(0.1 * i))
        y_dot = y_dot + t6_dot
    # jvp_euler.py:8  return y * y
    out = y * y
    out_dot = y * y_dot + y * y_dot
    return out, out_dot
