import numpy as np
import srctrans.runtime as rt


def f_grad(x0, k):
    # inplace.py:5  ys = np.zeros(5)
    ys = np.zeros(5)
    # inplace.py:6  ys[0] = x0
    ys[0] = x0
    # inplace.py:7  for i in range(1, 5):
    trips = len(range(1, 5))
    trip = 0
    for i in range(1, 5):
        # inplace.py:8  ys[i] = ys[i - 1] - 0.1 * k * ys[i - 1]
        t1 = i - 1
        if trip == 0:
            t1_tape = rt.tape(t1, trips)
            ys_tape = rt.tape(ys, trips)
        t1_tape[trip] = t1
        ys_tape[trip] = ys
        t2 = ys[t1]
        t3 = 0.1 * k
        t4 = i - 1
        if trip == 0:
            t4_tape = rt.tape(t4, trips)
        t4_tape[trip] = t4
        t5 = ys[t4]
        if trip == 0:
            t5_tape = rt.tape(t5, trips)
        t5_tape[trip] = rt.snapshot(t5)
        t6 = t3 * t5
        if trip == 0:
            t2_tape = rt.tape(t2, trips)
            t6_tape = rt.tape(t6, trips)
        t2_tape[trip] = t2
        t6_tape[trip] = t6
        t7 = t2 - t6
        if trip == 0:
            i_tape = rt.tape(i, trips)
            t7_tape = rt.tape(t7, trips)
        i_tape[trip] = i
        t7_tape[trip] = t7
        ys[i] = t7
        trip += 1
    # inplace.py:9  ys[1:3] *= k
    ys_1 = ys
    t9 = ys[1:3]
    t9_1 = rt.snapshot(t9)
    t10 = t9 * k
    ys[1:3] = t10
    # inplace.py:10  return np.sum(ys * ys)
    t8 = ys * ys
    out = np.sum(t8)
    # --- backward ---
    k_bar = rt.zeros_like(k)
    t9_bar = rt.zeros_like(t9)
    ys_bar = rt.zeros_like(ys)
    # inplace.py:10  return np.sum(ys * ys)
    out_bar = rt.grad_seed(out)
    t8_bar = rt.sum_grad(out_bar, t8, None, False)
    ys_bar = ys_bar + t8_bar * ys
    ys_bar = ys_bar + t8_bar * ys
    # inplace.py:9  ys[1:3] *= k
    t10_bar = rt.setitem_grad(ys_bar, slice(1, 3, None), t10)
    t9_bar = t9_bar + rt.unbroadcast(t10_bar * k, t9_1)
    k_bar = k_bar + rt.unbroadcast(t10_bar * t9_1, k)
    ys_bar = ys_bar + rt.getitem_grad(t9_bar, ys_1, slice(1, 3, None))
    # inplace.py:7  for i in range(1, 5):
    k_loop_bar = rt.zeros_like(k)
    for trip in range(trips - 1, -1, -1):
        t2_bar = rt.zeros_like(t2)
        t5_bar = rt.zeros_like(t5)
        # inplace.py:8  ys[i] = ys[i - 1] - 0.1 * k * ys[i - 1]
        i_1 = i_tape[trip]
        t7_1 = t7_tape[trip]
        t7_bar = rt.setitem_grad(ys_bar, i_1, t7_1)
        t2_1 = t2_tape[trip]
        t6_1 = t6_tape[trip]
        t2_bar = t2_bar + rt.unbroadcast(t7_bar, t2_1)
        t6_bar = rt.unbroadcast(-t7_bar, t6_1)
        t5_1 = t5_tape[trip]
        t3_bar = rt.unbroadcast(t6_bar * t5_1, k)
        t5_bar = t5_bar + rt.unbroadcast(t6_bar * t3, t5_1)
        t4_1 = t4_tape[trip]
        ys_2 = ys_tape[trip]
        t5_bar_1 = t5_bar
        t5_bar = rt.zeros_like(t5_bar_1)
        ys_bar = ys_bar + rt.getitem_grad(t5_bar_1, ys_2, t4_1)
        k_loop_bar += t3_bar * 0.1
        t1_1 = t1_tape[trip]
        t2_bar_1 = t2_bar
        t2_bar = rt.zeros_like(t2_bar_1)
        ys_bar = ys_bar + rt.getitem_grad(t2_bar_1, ys_2, t1_1)
    k_bar = k_bar + k_loop_bar
    # inplace.py:6  ys[0] = x0
    x0_bar = rt.setitem_grad(ys_bar, 0, x0)
    return out, (x0_bar, k_bar)
