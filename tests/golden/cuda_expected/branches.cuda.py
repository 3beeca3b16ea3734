from numba_backend.cuda_arrays import xp as np  # NumPy's functions on device arrays (CuPy's on a GPU)
from numba_backend.cuda_arrays import runtime as rt  # srctrans.runtime on device arrays
import math

from numba import cuda

from numba_backend.cuda_arrays import fused, ld, maximum, minimum, sign


@cuda.jit(cache=True)
def t1_kernel(out, s):
    # branches.py:6  if s > 1.0:
    # s > 1.0, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_i = ld(s, i)
        out[i] = s_i > 1.0


t1_fused = fused(t1_kernel, lambda s: s > 1.0)


@cuda.jit(cache=True)
def r_kernel(out, s, w):
    # branches.py:7  r = s * w
    # s * w, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_i = ld(s, i)
        w_i = ld(w, i)
        out[i] = s_i * w_i


r_fused = fused(r_kernel, lambda s, w: s * w)


@cuda.jit(cache=True)
def t2_kernel(out, s):
    # branches.py:8  elif s > -1.0:
    # s > -1.0, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_i = ld(s, i)
        out[i] = s_i > -1.0


t2_fused = fused(t2_kernel, lambda s: s > -1.0)


@cuda.jit(cache=True)
def t3_kernel(out, s):
    # branches.py:9  r = s * s + w
    # s * s, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_i = ld(s, i)
        out[i] = s_i * s_i


t3_fused = fused(t3_kernel, lambda s: s * s)


@cuda.jit(cache=True)
def r_kernel_1(out, t3, w):
    # branches.py:9  r = s * s + w
    # t3 + w, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        t3_i = ld(t3, i)
        w_i = ld(w, i)
        out[i] = t3_i + w_i


r_fused_1 = fused(r_kernel_1, lambda t3, w: t3 + w)


@cuda.jit(cache=True)
def t4_kernel(out, s):
    # branches.py:11  r = np.exp(s) * w
    # np.exp(s), one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_i = ld(s, i)
        out[i] = math.exp(s_i)


t4_fused = fused(t4_kernel, lambda s: np.exp(s))


@cuda.jit(cache=True)
def r_kernel_2(out, t4, w):
    # branches.py:11  r = np.exp(s) * w
    # t4 * w, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        t4_i = ld(t4, i)
        w_i = ld(w, i)
        out[i] = t4_i * w_i


r_fused_2 = fused(r_kernel_2, lambda t4, w: t4 * w)


@cuda.jit(cache=True)
def s_bar_kernel(out, s_bar, v):
    # branches.py:7  r = s * w
    # s_bar + v, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_bar_i = ld(s_bar, i)
        v_i = ld(v, i)
        out[i] = s_bar_i + v_i


s_bar_fused = fused(s_bar_kernel, lambda s_bar, v: s_bar + v)


@cuda.jit(cache=True)
def w_bar_kernel(out, w_bar, r_bar, s):
    # branches.py:7  r = s * w
    # w_bar + r_bar * s, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        w_bar_i = ld(w_bar, i)
        r_bar_i = ld(r_bar, i)
        s_i = ld(s, i)
        out[i] = w_bar_i + r_bar_i * s_i


w_bar_fused = fused(w_bar_kernel, lambda w_bar, r_bar, s: w_bar + r_bar * s)


@cuda.jit(cache=True)
def w_bar_kernel_1(out, w_bar, r_bar):
    # branches.py:9  r = s * s + w
    # w_bar + r_bar, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        w_bar_i = ld(w_bar, i)
        r_bar_i = ld(r_bar, i)
        out[i] = w_bar_i + r_bar_i


w_bar_fused_1 = fused(w_bar_kernel_1, lambda w_bar, r_bar: w_bar + r_bar)


@cuda.jit(cache=True)
def s_bar_kernel_1(out, s_bar, t3_bar, s):
    # branches.py:9  r = s * s + w
    # s_bar + t3_bar * s, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_bar_i = ld(s_bar, i)
        t3_bar_i = ld(t3_bar, i)
        s_i = ld(s, i)
        out[i] = s_bar_i + t3_bar_i * s_i


s_bar_fused_1 = fused(s_bar_kernel_1, lambda s_bar, t3_bar, s: s_bar + t3_bar * s)


@cuda.jit(cache=True)
def s_bar_kernel_2(out, s_bar, t3_bar, s):
    # branches.py:9  r = s * s + w
    # s_bar + t3_bar * s, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_bar_i = ld(s_bar, i)
        t3_bar_i = ld(t3_bar, i)
        s_i = ld(s, i)
        out[i] = s_bar_i + t3_bar_i * s_i


s_bar_fused_2 = fused(s_bar_kernel_2, lambda s_bar, t3_bar, s: s_bar + t3_bar * s)


@cuda.jit(cache=True)
def t4_bar_kernel(out, r_bar, w):
    # branches.py:11  r = np.exp(s) * w
    # r_bar * w, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        r_bar_i = ld(r_bar, i)
        w_i = ld(w, i)
        out[i] = r_bar_i * w_i


t4_bar_fused = fused(t4_bar_kernel, lambda r_bar, w: r_bar * w)


@cuda.jit(cache=True)
def w_bar_kernel_2(out, w_bar, r_bar, t4):
    # branches.py:11  r = np.exp(s) * w
    # w_bar + r_bar * t4, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        w_bar_i = ld(w_bar, i)
        r_bar_i = ld(r_bar, i)
        t4_i = ld(t4, i)
        out[i] = w_bar_i + r_bar_i * t4_i


w_bar_fused_2 = fused(w_bar_kernel_2, lambda w_bar, r_bar, t4: w_bar + r_bar * t4)


@cuda.jit(cache=True)
def s_bar_kernel_3(out, s_bar, t4_bar, t4):
    # branches.py:11  r = np.exp(s) * w
    # s_bar + t4_bar * t4, one thread per element
    i = cuda.grid(1)
    if i < out.shape[0]:
        s_bar_i = ld(s_bar, i)
        t4_bar_i = ld(t4_bar, i)
        t4_i = ld(t4, i)
        out[i] = s_bar_i + t4_bar_i * t4_i


s_bar_fused_3 = fused(s_bar_kernel_3, lambda s_bar, t4_bar, t4: s_bar + t4_bar * t4)


def f_grad(x, w):
    # branches.py:5  s = np.sum(x)
    s = np.sum(x)
    # branches.py:6  if s > 1.0:
    t1 = t1_fused(s)
    if t1:
        # branches.py:7  r = s * w
        r = r_fused(s, w)
    else:
        # branches.py:8  elif s > -1.0:
        t2 = t2_fused(s)
        if t2:
            # branches.py:9  r = s * s + w
            t3 = t3_fused(s)
            r = r_fused_1(t3, w)
        else:
            # branches.py:11  r = np.exp(s) * w
            t4 = t4_fused(s)
            r = r_fused_2(t4, w)
    # branches.py:12  return r
    # --- backward ---
    s_bar = rt.zeros_like(s)
    w_bar = rt.zeros_like(w)
    # branches.py:12  return r
    r_bar = rt.grad_seed(r)
    # branches.py:6  if s > 1.0:
    if t1:
        # branches.py:7  r = s * w
        s_bar = s_bar_fused(s_bar, rt.unbroadcast(r_bar * w, s))
        w_bar = w_bar_fused(w_bar, r_bar, s)
    else:
        # branches.py:8  elif s > -1.0:
        if t2:
            # branches.py:9  r = s * s + w
            t3_bar = rt.unbroadcast(r_bar, t3)
            w_bar = w_bar_fused_1(w_bar, r_bar)
            s_bar = s_bar_fused_1(s_bar, t3_bar, s)
            s_bar = s_bar_fused_2(s_bar, t3_bar, s)
        else:
            # branches.py:11  r = np.exp(s) * w
            t4_bar = rt.unbroadcast(t4_bar_fused(r_bar, w), t4)
            w_bar = w_bar_fused_2(w_bar, r_bar, t4)
            s_bar = s_bar_fused_3(s_bar, t4_bar, t4)
    # branches.py:5  s = np.sum(x)
    x_bar = rt.sum_grad(s_bar, x, None, False)
    return r, (x_bar, w_bar)
