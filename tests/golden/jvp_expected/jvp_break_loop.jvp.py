import numpy as np


def f_jvp(x, limit, x_dot):
    # jvp_break_loop.py:5  total = 0.0
    total = 0.0
    total_dot = 0.0
    stop = False
    # jvp_break_loop.py:6  for i in range(len(x)):
    t1 = len(x)
    for i in range(t1):
        t2 = not stop
        if t2:
            # jvp_break_loop.py:7  if x[i] < 0.0:
            t3 = x[i]
            t4 = t3 < 0.0
            if t4:
                pass
            else:
                # jvp_break_loop.py:9  total = total + np.sqrt(x[i])
                t5 = x[i]
                t5_dot = x_dot[i]
                t6 = np.sqrt(t5)
                total = total + t6
                total_dot = total_dot + (0.5 / t6) * t5_dot
                # jvp_break_loop.py:10  if total > limit:
                t7 = total > limit
                if t7:
                    # jvp_break_loop.py:11  break
                    stop = True
    # jvp_break_loop.py:12  return total * total
    out = total * total
    out_dot = total * total_dot + total * total_dot
    return out, out_dot
