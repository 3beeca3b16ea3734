import numpy as np


def f_jvp(x, w, x_dot, w_dot):
    # jvp_branches.py:5  s = np.sum(x)
    s = np.sum(x)
    s_dot = np.sum(x_dot)
    # jvp_branches.py:6  if s > 1.0:
    t1 = s > 1.0
    if t1:
        # jvp_branches.py:7  r = s * w
        r = s * w
        r_dot = w * s_dot + s * w_dot
    else:
        # jvp_branches.py:8  elif s > -1.0:
        t2 = s > -1.0
        if t2:
            # jvp_branches.py:9  r = s * s + w
            r = s * s + w
            r_dot = s * s_dot + s * s_dot + w_dot
        else:
            # jvp_branches.py:11  r = np.exp(s) * w
            t4 = np.exp(s)
            r = t4 * w
            r_dot = w * (t4 * s_dot) + t4 * w_dot
    # jvp_branches.py:12  return r
    return r, r_dot
