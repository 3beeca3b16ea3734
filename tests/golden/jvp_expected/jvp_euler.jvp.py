import numpy as np


def f_jvp(k, y0, k_dot, y0_dot):
    # jvp_euler.py:5  y = y0
    y = y0
    y_dot = y0_dot
    # jvp_euler.py:6  for i in range(100):
    for i in range(100):
        # jvp_euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        t1 = -k
        t1_dot = -k_dot
        t2 = t1 * y
        t2_dot = y * t1_dot + t1 * y_dot
        t3 = 0.1 * i
        t4 = np.sin(t3)
        t5 = t2 + t4
        t5_dot = t2_dot
        t6 = 0.01 * t5
        t6_dot = 0.01 * t5_dot
        y = y + t6
        y_dot = y_dot + t6_dot
    # jvp_euler.py:8  return y * y
    out = y * y
    out_dot = y * y_dot + y * y_dot
    return out, out_dot
