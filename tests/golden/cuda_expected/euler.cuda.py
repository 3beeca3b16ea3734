from numba_backend.cuda_arrays import xp as np  # NumPy's functions on device arrays (CuPy's on a GPU)
from numba_backend.cuda_arrays import runtime as rt  # srctrans.runtime on device arrays
import math

from numba import cuda

from numba_backend.cuda_arrays import fused, ld, maximum, minimum, sign


@cuda.jit(cache=True)
def t1_kernel(out, k):
    # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
    # -k, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        k_i = ld(k, i)
        out[i] = -k_i


t1_fused = fused(t1_kernel, lambda k: -k)


@cuda.jit(cache=True)
def y_kernel(out, y, t1, i):
    # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
    # y + 0.01 * (t1 * y + np.sin(0.1 * i)), one thread per element
    i_1 = cuda.grid(1)
    if i_1 < out.shape[0]:
        y_i = ld(y, i_1)
        t1_i = ld(t1, i_1)
        i_i = ld(i, i_1)
        out[i_1] = y_i + 0.01 * (t1_i * y_i + math.sin(0.1 * i_i))


y_fused = fused(y_kernel, lambda y, t1, i: y + 0.01 * (t1 * y + np.sin(0.1 * i)))


@cuda.jit(cache=True)
def out_kernel(out, y):
    # euler.py:8  return y * y
    # y * y, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        y_i = ld(y, i)
        out[i] = y_i * y_i


out_fused = fused(out_kernel, lambda y: y * y)


@cuda.jit(cache=True)
def y_bar_kernel(out, y_bar, out_bar, y_1):
    # euler.py:8  return y * y
    # y_bar + out_bar * y_1, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        y_bar_i = ld(y_bar, i)
        out_bar_i = ld(out_bar, i)
        y_1_i = ld(y_1, i)
        out[i] = y_bar_i + out_bar_i * y_1_i


y_bar_fused = fused(y_bar_kernel, lambda y_bar, out_bar, y_1: y_bar + out_bar * y_1)


@cuda.jit(cache=True)
def y_bar_kernel_1(out, y_bar, out_bar, y_1):
    # euler.py:8  return y * y
    # y_bar + out_bar * y_1, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        y_bar_i = ld(y_bar, i)
        out_bar_i = ld(out_bar, i)
        y_1_i = ld(y_1, i)
        out[i] = y_bar_i + out_bar_i * y_1_i


y_bar_fused_1 = fused(y_bar_kernel_1, lambda y_bar, out_bar, y_1: y_bar + out_bar * y_1)


@cuda.jit(cache=True)
def k_loop_bar_kernel(out, y_bar_1, y_2):
    # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
    # -y_bar_1 * (0.01 * y_2), one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        y_bar_1_i = ld(y_bar_1, i)
        y_2_i = ld(y_2, i)
        out[i] = -y_bar_1_i * (0.01 * y_2_i)


k_loop_bar_fused = fused(k_loop_bar_kernel, lambda y_bar_1, y_2: -y_bar_1 * (0.01 * y_2))


@cuda.jit(cache=True)
def y_bar_kernel_2(out, y_bar_1, t1):
    # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
    # y_bar_1 * (1.0 + 0.01 * t1), one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        y_bar_1_i = ld(y_bar_1, i)
        t1_i = ld(t1, i)
        out[i] = y_bar_1_i * (1.0 + 0.01 * t1_i)


y_bar_fused_2 = fused(y_bar_kernel_2, lambda y_bar_1, t1: y_bar_1 * (1.0 + 0.01 * t1))


@cuda.jit(cache=True)
def k_bar_kernel(out, k_bar, k_loop_bar):
    # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
    # k_bar + k_loop_bar, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        k_bar_i = ld(k_bar, i)
        k_loop_bar_i = ld(k_loop_bar, i)
        out[i] = k_bar_i + k_loop_bar_i


k_bar_fused = fused(k_bar_kernel, lambda k_bar, k_loop_bar: k_bar + k_loop_bar)


def f_grad(k, y0):
    # euler.py:5  y = y0
    y = y0
    # euler.py:6  for i in range(100):
    trips = len(range(100))
    trip = 0
    for i in range(100):
        # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        t1 = t1_fused(k)
        if trip == 0:
            y_tape = rt.tape(y, trips)
        y_tape[trip] = y
        y = y_fused(y, t1, i)
        trip += 1
    # euler.py:8  return y * y
    y_1 = y
    out = out_fused(y)
    # --- backward ---
    k_bar = rt.zeros_like(k)
    y_bar = rt.zeros_like(y)
    # euler.py:8  return y * y
    out_bar = rt.grad_seed(out)
    y_bar = y_bar_fused(y_bar, out_bar, y_1)
    y_bar = y_bar_fused_1(y_bar, out_bar, y_1)
    # euler.py:6  for i in range(100):
    k_loop_bar = rt.zeros_like(k)
    for trip in range(trips - 1, -1, -1):
        # euler.py:7  y = y + 0.01 * (-k * y + np.sin(0.1 * i))
        y_2 = y_tape[trip]
        y_bar_1 = y_bar
        k_loop_bar += rt.unbroadcast(k_loop_bar_fused(y_bar_1, y_2), k)
        y_bar = rt.unbroadcast(y_bar_fused_2(y_bar_1, t1), y_2)
    k_bar = k_bar_fused(k_bar, k_loop_bar)
    # euler.py:5  y = y0
    return out, (k_bar, y_bar)
