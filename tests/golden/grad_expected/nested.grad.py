import numpy as np
import srctrans.runtime as rt


def f_grad(A):
    trips_1_tape = []
    i_tape = []
    j_tape = []
    t7_tape = []
    total_tape = []
    # nested.py:5  total = 0.0
    total = 0.0
    # nested.py:6  for i in range(A.shape[0]):
    t1 = A.shape
    t2 = t1[0]
    trips = len(range(t2))
    for i in range(t2):
        # nested.py:7  for j in range(A.shape[1]):
        t3 = A.shape
        t4 = t3[1]
        trips_1 = len(range(t4))
        for j in range(t4):
            # nested.py:8  total = total + np.sin(A[i, j]) * (i - j)
            i_tape.append(i)
            j_tape.append(j)
            t5 = A[i, j]
            t6 = np.sin(t5)
            t7 = i - j
            t7_tape.append(t7)
            t8 = t6 * t7
            total_tape.append(total)
            total = total + t8
        trips_1_tape.append(trips_1)
    # nested.py:9  return total
    # --- backward ---
    A_bar = rt.zeros_like(A)
    total_bar = rt.zeros_like(total)
    # nested.py:9  return total
    total_bar = total_bar + rt.grad_seed(total)
    # nested.py:6  for i in range(A.shape[0]):
    A_loop_bar = rt.zeros_like(A)
    for _ in range(trips):
        # nested.py:7  for j in range(A.shape[1]):
        for _ in range(trips_1_tape.pop()):
            # nested.py:8  total = total + np.sin(A[i, j]) * (i - j)
            total_1 = total_tape.pop()
            i_1 = i_tape.pop()
            j_1 = j_tape.pop()
            t5_1 = A[i_1, j_1]
            total_bar_1 = total_bar
            total_bar = rt.unbroadcast(total_bar_1, total_1)
            t8_bar = rt.unbroadcast(total_bar_1, t5_1)
            t7_1 = t7_tape.pop()
            t6_bar = t8_bar * t7_1
            t5_bar = t6_bar * np.cos(t5_1)
            rt.getitem_grad_add(A_loop_bar, t5_bar, (i_1, j_1))
    A_bar = A_bar + A_loop_bar
    return total, A_bar
