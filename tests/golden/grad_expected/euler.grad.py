import numpy as np
import srctrans.runtime as rt


def f_grad(k, y0):
    # euler.py:5  y = y0
    y = y0
    # euler.py:6  for i in range(100):
    trips = len(range(100))
    trip = 0
    for i in range(100):
        # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        t1 = -k
        if trip == 0:
            y_tape = rt.tape(y, trips)
        y_tape[trip] = y
        t2 = t1 * y
        t3 = 0.1 * i
        t4 = np.sin(t3)
        t5 = t2 + t4
        t6 = 0.01 * t5
        y = y + t6
        trip += 1
    # euler.py:8  return y * y
    y_1 = y
    out = y * y
    # --- backward ---
    k_bar = rt.zeros_like(k)
    y_bar = rt.zeros_like(y)
    # euler.py:8  return y * y
    out_bar = rt.grad_seed(out)
    y_bar = y_bar + out_bar * y_1
    y_bar = y_bar + out_bar * y_1
    # euler.py:6  for i in range(100):
    k_loop_bar = rt.zeros_like(k)
    for trip in range(trips - 1, -1, -1):
        # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        y_2 = y_tape[trip]
        y_bar_1 = y_bar
        k_loop_bar += rt.unbroadcast(-y_bar_1 * (0.01 * y_2), k)
        y_bar = rt.unbroadcast(y_bar_1 * (1.0 + 0.01 * t1), y_2)
    k_bar = k_bar + k_loop_bar
    # euler.py:5  y = y0
    y0_bar = y_bar
    return out, (k_bar, y0_bar)
