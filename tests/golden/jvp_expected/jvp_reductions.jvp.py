import numpy as np
import srctrans.runtime as rt


def f_jvp(X, X_dot):
    # jvp_reductions.py:5  mu = np.mean(X, axis=0, keepdims=True)
    mu = np.mean(X, axis=0, keepdims=True)
    mu_dot = np.mean(X_dot, axis=0, keepdims=True)
    # jvp_reductions.py:6  spread = np.max(X, axis=1) - np.min(X, axis=1)
    t1 = np.max(X, axis=1)
    t1_dot = rt.sum_to(X_dot * rt.extremum_grad(rt.ones_like(t1), X, t1, 1, False), t1, 1, False)
    t2 = np.min(X, axis=1)
    t2_dot = rt.sum_to(X_dot * rt.extremum_grad(rt.ones_like(t2), X, t2, 1, False), t2, 1, False)
    spread = t1 - t2
    spread_dot = t1_dot - t2_dot
    # jvp_reductions.py:7  return np.sum((X - mu) ** 2) + np.sum(spread) + np.std(X)
    t3 = X - mu
    t5 = np.sum(t3 ** 2)
    t5_dot = np.sum((2 * t3) * (X_dot - mu_dot))
    t6 = np.sum(spread)
    t6_dot = np.sum(spread_dot)
    t8 = np.std(X)
    t8_dot = rt.sum_to(X_dot * rt.std_grad(rt.ones_like(t8), X, t8, None, 0, False), t8, None, False)
    out = t5 + t6 + t8
    out_dot = t5_dot + t6_dot + t8_dot
    return out, out_dot
