import numpy as np
import srctrans.runtime as rt


def f_grad(W, h0, xs):
    h_tape = []
    t5_tape = []
    h_tape_1 = []
    h_tape_2 = []
    # rnn.py:5  h = h0
    h = h0
    # rnn.py:6  for t in range(xs.shape[0]):
    t1 = xs.shape
    t2 = t1[0]
    trips = len(range(t2))
    trip = 0
    for t in range(t2):
        # rnn.py:7  if t % 2 == 0:
        t3 = t % 2
        t4 = t3 == 0
        if trip == 0:
            t4_tape = rt.tape(t4, trips)
        t4_tape[trip] = t4
        if t4:
            # rnn.py:8  h = np.tanh(W @ h + xs[t])
            h_tape.append(h)
            t5 = W @ h
            t6 = xs[t]
            t5_tape.append(t5)
            t7 = t5 + t6
            h = np.tanh(t7)
            h_tape_1.append(h)
        else:
            # rnn.py:10  h = h * 0.5 + xs[t]
            t8 = h * 0.5
            t9 = xs[t]
            h_tape_2.append(h)
            h = t8 + t9
        trip += 1
    # rnn.py:11  return np.sum(h * h)
    h_1 = h
    t10 = h * h
    out = np.sum(t10)
    # --- backward ---
    W_bar = rt.zeros_like(W)
    h_bar = rt.zeros_like(h)
    # rnn.py:11  return np.sum(h * h)
    out_bar = rt.grad_seed(out)
    t10_bar = rt.sum_grad(out_bar, t10, None, False)
    h_bar = h_bar + t10_bar * h_1
    h_bar = h_bar + t10_bar * h_1
    # rnn.py:6  for t in range(xs.shape[0]):
    W_loop_bar = rt.zeros_like(W)
    for trip in range(trips - 1, -1, -1):
        # rnn.py:7  if t % 2 == 0:
        t4_1 = t4_tape[trip]
        if t4_1:
            # rnn.py:8  h = np.tanh(W @ h + xs[t])
            h_2 = h_tape.pop()
            h_3 = h_tape_1.pop()
            h_bar_1 = h_bar
            t7_bar = h_bar_1 * (1.0 - h_3 * h_3)
            h_bar = rt.zeros_like(h_2)
            t5_1 = t5_tape.pop()
            t5_bar = rt.unbroadcast(t7_bar, t5_1)
            W_loop_bar = rt.dot_grad_x_add(W_loop_bar, t5_bar, W, h_2)
            h_bar = h_bar + rt.dot_grad_y(t5_bar, W, h_2)
        else:
            # rnn.py:10  h = h * 0.5 + xs[t]
            h_4 = h_tape_2.pop()
            h_bar_2 = h_bar
            h_bar = rt.unbroadcast(h_bar_2 * 0.5, h_4)
    W_bar = W_bar + W_loop_bar
    # rnn.py:5  h = h0
    h0_bar = h_bar
    return out, (W_bar, h0_bar)
