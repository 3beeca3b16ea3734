import numpy as np
import srctrans.runtime as rt


def f_grad(x, limit):
    i_tape = []
    t6_tape = []
    total_tape = []
    t4_tape = []
    # break_loop.py:5  total = 0.0
    total = 0.0
    stop = False
    # break_loop.py:6  for i in range(len(x)):
    t1 = len(x)
    trips = len(range(t1))
    trip = 0
    for i in range(t1):
        t2 = not stop
        if trip == 0:
            t2_tape = rt.tape(t2, trips)
        t2_tape[trip] = t2
        if t2:
            # break_loop.py:7  if x[i] < 0.0:
            t3 = x[i]
            t4 = t3 < 0.0
            t4_tape.append(t4)
            if t4:
                pass
            else:
                # break_loop.py:9  total = total + np.sqrt(x[i])
                i_tape.append(i)
                t5 = x[i]
                t6 = np.sqrt(t5)
                t6_tape.append(t6)
                total_tape.append(total)
                total = total + t6
                # break_loop.py:10  if total > limit:
                t7 = total > limit
                if t7:
                    # break_loop.py:11  break
                    stop = True
        trip += 1
    # break_loop.py:12  return total * total
    total_1 = total
    out = total * total
    # --- backward ---
    total_bar = rt.zeros_like(total)
    x_bar = rt.zeros_like(x)
    # break_loop.py:12  return total * total
    out_bar = rt.grad_seed(out)
    total_bar = total_bar + out_bar * total_1
    total_bar = total_bar + out_bar * total_1
    # break_loop.py:6  for i in range(len(x)):
    x_loop_bar = rt.zeros_like(x)
    for trip in range(trips - 1, -1, -1):
        t2_1 = t2_tape[trip]
        if t2_1:
            # break_loop.py:7  if x[i] < 0.0:
            t4_1 = t4_tape.pop()
            if not t4_1:
                # break_loop.py:9  total = total + np.sqrt(x[i])
                total_2 = total_tape.pop()
                i_1 = i_tape.pop()
                t5_1 = x[i_1]
                total_bar_1 = total_bar
                total_bar = rt.unbroadcast(total_bar_1, total_2)
                t6_bar = rt.unbroadcast(total_bar_1, t5_1)
                t6_1 = t6_tape.pop()
                t5_bar = t6_bar * (0.5 / t6_1)
                rt.getitem_grad_add(x_loop_bar, t5_bar, i_1)
    x_bar = x_bar + x_loop_bar
    return out, x_bar
