import numpy as np
import srctrans.runtime as rt


def f_jvp(x0, k, x0_dot, k_dot):
    # jvp_inplace.py:5  ys = np.zeros(5)
    ys = np.zeros(5)
    ys_dot = rt.zeros_like(ys)
    # jvp_inplace.py:6  ys[0] = x0
    ys[0] = x0
    ys_dot[0] = x0_dot
    # jvp_inplace.py:7  for i in range(1, 5):
    for i in range(1, 5):
        # jvp_inplace.py:8  ys[i] = ys[i - 1] - 0.1 * k * ys[i - 1]
        t1 = i - 1
        t2 = ys[t1]
        t2_dot = ys_dot[t1]
        t3 = 0.1 * k
        t4 = i - 1
        t5 = ys[t4]
        t5_dot = ys_dot[t4]
        t6_dot = t5 * (0.1 * k_dot) + t3 * t5_dot
        t7_dot = t2_dot - t6_dot
        ys[i] = t2 - t3 * t5
        ys_dot[i] = t7_dot
    # jvp_inplace.py:9  ys[1:3] *= k
    t9 = ys[1:3]
    t9_dot = ys_dot[1:3]
    t10_dot = k * t9_dot + t9 * k_dot
    ys[1:3] = t9 * k
    ys_dot[1:3] = t10_dot
    # jvp_inplace.py:10  return np.sum(ys * ys)
    out = np.sum(ys * ys)
    out_dot = np.sum(ys * ys_dot + ys * ys_dot)
    return out, out_dot
