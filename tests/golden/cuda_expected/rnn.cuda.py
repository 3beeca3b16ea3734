from numba_backend.cuda_arrays import xp as np  # NumPy's functions on device arrays (CuPy's on a GPU)
from numba_backend.cuda_arrays import runtime as rt  # srctrans.runtime on device arrays
import math

from numba import cuda

from numba_backend.cuda_arrays import fused, ld, maximum, minimum, sign


@cuda.jit(cache=True)
def t4_kernel(out, t3):
    # rnn.py:7  if t % 2 == 0:
    # t3 == 0, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        t3_i = ld(t3, i)
        out[i] = t3_i == 0


t4_fused = fused(t4_kernel, lambda t3: t3 == 0)


@cuda.jit(cache=True)
def h_kernel(out, t5, t6):
    # rnn.py:8  h = np.tanh(W @ h + xs[t])
    # np.tanh(t5 + t6), one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        t5_i = ld(t5, i)
        t6_i = ld(t6, i)
        out[i] = math.tanh(t5_i + t6_i)


h_fused = fused(h_kernel, lambda t5, t6: np.tanh(t5 + t6))


@cuda.jit(cache=True)
def t8_kernel(out, h):
    # rnn.py:10  h = h * 0.5 + xs[t]
    # h * 0.5, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_i = ld(h, i)
        out[i] = h_i * 0.5


t8_fused = fused(t8_kernel, lambda h: h * 0.5)


@cuda.jit(cache=True)
def h_kernel_1(out, t8, t9):
    # rnn.py:10  h = h * 0.5 + xs[t]
    # t8 + t9, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        t8_i = ld(t8, i)
        t9_i = ld(t9, i)
        out[i] = t8_i + t9_i


h_fused_1 = fused(h_kernel_1, lambda t8, t9: t8 + t9)


@cuda.jit(cache=True)
def t10_kernel(out, h):
    # rnn.py:11  return np.sum(h * h)
    # h * h, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_i = ld(h, i)
        out[i] = h_i * h_i


t10_fused = fused(t10_kernel, lambda h: h * h)


@cuda.jit(cache=True)
def h_bar_kernel(out, h_bar, t10_bar, h_1):
    # rnn.py:11  return np.sum(h * h)
    # h_bar + t10_bar * h_1, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_bar_i = ld(h_bar, i)
        t10_bar_i = ld(t10_bar, i)
        h_1_i = ld(h_1, i)
        out[i] = h_bar_i + t10_bar_i * h_1_i


h_bar_fused = fused(h_bar_kernel, lambda h_bar, t10_bar, h_1: h_bar + t10_bar * h_1)


@cuda.jit(cache=True)
def h_bar_kernel_1(out, h_bar, t10_bar, h_1):
    # rnn.py:11  return np.sum(h * h)
    # h_bar + t10_bar * h_1, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_bar_i = ld(h_bar, i)
        t10_bar_i = ld(t10_bar, i)
        h_1_i = ld(h_1, i)
        out[i] = h_bar_i + t10_bar_i * h_1_i


h_bar_fused_1 = fused(h_bar_kernel_1, lambda h_bar, t10_bar, h_1: h_bar + t10_bar * h_1)


@cuda.jit(cache=True)
def t7_bar_kernel(out, h_bar, h_3):
    # rnn.py:8  h = np.tanh(W @ h + xs[t])
    # h_bar * (1.0 - h_3 * h_3), one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_bar_i = ld(h_bar, i)
        h_3_i = ld(h_3, i)
        out[i] = h_bar_i * (1.0 - h_3_i * h_3_i)


t7_bar_fused = fused(t7_bar_kernel, lambda h_bar, h_3: h_bar * (1.0 - h_3 * h_3))


@cuda.jit(cache=True)
def h_bar_kernel_2(out, h_bar, v):
    # rnn.py:8  h = np.tanh(W @ h + xs[t])
    # h_bar + v, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_bar_i = ld(h_bar, i)
        v_i = ld(v, i)
        out[i] = h_bar_i + v_i


h_bar_fused_2 = fused(h_bar_kernel_2, lambda h_bar, v: h_bar + v)


@cuda.jit(cache=True)
def h_bar_kernel_3(out, h_bar):
    # rnn.py:10  h = h * 0.5 + xs[t]
    # h_bar * 0.5, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        h_bar_i = ld(h_bar, i)
        out[i] = h_bar_i * 0.5


h_bar_fused_3 = fused(h_bar_kernel_3, lambda h_bar: h_bar * 0.5)


@cuda.jit(cache=True)
def W_bar_kernel(out, W_bar, W_loop_bar):
    # rnn.py:10  h = h * 0.5 + xs[t]
    # W_bar + W_loop_bar, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        W_bar_i = ld(W_bar, i)
        W_loop_bar_i = ld(W_loop_bar, i)
        out[i] = W_bar_i + W_loop_bar_i


W_bar_fused = fused(W_bar_kernel, lambda W_bar, W_loop_bar: W_bar + W_loop_bar)


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
        t4 = t4_fused(t3)
        if trip == 0:
            t4_tape = rt.tape(t4, trips)
        t4_tape[trip] = t4
        if t4:
            # rnn.py:8  h = np.tanh(W @ h + xs[t])
            h_tape.append(h)
            t5 = W @ h
            t6 = xs[t]
            t5_tape.append(t5)
            h = h_fused(t5, t6)
            h_tape_1.append(h)
        else:
            # rnn.py:10  h = h * 0.5 + xs[t]
            t9 = xs[t]
            t8 = t8_fused(h)
            h_tape_2.append(h)
            h = h_fused_1(t8, t9)
        trip += 1
    # rnn.py:11  return np.sum(h * h)
    h_1 = h
    t10 = t10_fused(h)
    out = np.sum(t10)
    # --- backward ---
    W_bar = rt.zeros_like(W)
    h_bar = rt.zeros_like(h)
    # rnn.py:11  return np.sum(h * h)
    out_bar = rt.grad_seed(out)
    t10_bar = rt.sum_grad(out_bar, t10, None, False)
    h_bar = h_bar_fused(h_bar, t10_bar, h_1)
    h_bar = h_bar_fused_1(h_bar, t10_bar, h_1)
    # rnn.py:6  for t in range(xs.shape[0]):
    W_loop_bar = rt.zeros_like(W)
    for trip in range(trips - 1, -1, -1):
        # rnn.py:7  if t % 2 == 0:
        t4_1 = t4_tape[trip]
        if t4_1:
            # rnn.py:8  h = np.tanh(W @ h + xs[t])
            h_2 = h_tape.pop()
            h_3 = h_tape_1.pop()
            t7_bar = t7_bar_fused(h_bar, h_3)
            h_bar = rt.zeros_like(h_2)
            t5_1 = t5_tape.pop()
            t5_bar = rt.unbroadcast(t7_bar, t5_1)
            W_loop_bar = rt.dot_grad_x_add(W_loop_bar, t5_bar, W, h_2)
            h_bar = h_bar_fused_2(h_bar, rt.dot_grad_y(t5_bar, W, h_2))
        else:
            # rnn.py:10  h = h * 0.5 + xs[t]
            h_4 = h_tape_2.pop()
            h_bar = rt.unbroadcast(h_bar_fused_3(h_bar), h_4)
    W_bar = W_bar_fused(W_bar, W_loop_bar)
    # rnn.py:5  h = h0
    return out, (W_bar, h_bar)
