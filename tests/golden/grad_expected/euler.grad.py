import numpy as np
import srctrans.runtime as rt


def f_grad(k, y0):
    y_tape = []
    t2_tape = []
    t6_tape = []
    # euler.py:5  y = y0
    y = y0
    # euler.py:6  for i in range(100):
    trips = 0
    for i in range(100):
        trips += 1
        # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        t1 = -k
        y_tape.append(y)
        t2 = t1 * y
        t3 = 0.1 * i
        t4 = np.sin(t3)
        t2_tape.append(t2)
        t5 = t2 + t4
        t6 = 0.01 * t5
        t6_tape.append(t6)
        y = y + t6
    # euler.py:8  return y * y
    y_1 = y
    out = y * y
    # --- backward ---
    k_bar = rt.zeros_like(k)
    y_bar = rt.zeros_like(y)
    # euler.py:8  return y * y
    out_bar = rt.grad_seed(out)
    y_bar = y_bar + rt.unbroadcast(out_bar * y_1, y_1)
    y_bar = y_bar + rt.unbroadcast(out_bar * y_1, y_1)
    # euler.py:6  for i in range(100):
    for _ in range(trips):
        # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        y_2 = y_tape.pop()
        t6_1 = t6_tape.pop()
        y_bar_1 = y_bar
        y_bar = rt.unbroadcast(y_bar_1, y_2)
        t6_bar = rt.unbroadcast(y_bar_1, t6_1)
        t5_bar = t6_bar * 0.01
        t2_1 = t2_tape.pop()
        t2_bar = rt.unbroadcast(t5_bar, t2_1)
        t1_bar = rt.unbroadcast(t2_bar * y_2, t1)
        y_bar = y_bar + rt.unbroadcast(t2_bar * t1, y_2)
        k_bar = k_bar + -t1_bar
    # euler.py:5  y = y0
    y0_bar = y_bar
    return out, (k_bar, y0_bar)
