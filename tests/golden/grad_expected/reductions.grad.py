import numpy as np
import srctrans.runtime as rt


def f_grad(X):
    # reductions.py:5  mu = np.mean(X, axis=0, keepdims=True)
    mu = np.mean(X, axis=0, keepdims=True)
    # reductions.py:6  spread = np.max(X, axis=1) - np.min(X, axis=1)
    t1 = np.max(X, axis=1)
    t2 = np.min(X, axis=1)
    spread = t1 - t2
    # reductions.py:7  return np.sum((X - mu) ** 2) + np.sum(spread) + np.std(X)
    t3 = X - mu
    t4 = t3 ** 2
    t5 = np.sum(t4)
    t6 = np.sum(spread)
    t7 = t5 + t6
    t8 = np.std(X)
    out = t7 + t8
    # --- backward ---
    # reductions.py:7  return np.sum((X - mu) ** 2) + np.sum(spread) + np.std(X)
    out_bar = rt.grad_seed(out)
    t7_bar = out_bar
    t8_bar = out_bar
    X_bar = rt.std_grad(t8_bar, X, t8, None, 0, False)
    t5_bar = t7_bar
    t6_bar = t7_bar
    spread_bar = rt.sum_grad(t6_bar, spread, None, False)
    t4_bar = rt.sum_grad(t5_bar, t4, None, False)
    t3_bar = t4_bar * (2 * t3)
    X_bar = X_bar + rt.unbroadcast(t3_bar, X)
    mu_bar = rt.unbroadcast(-t3_bar, mu)
    # reductions.py:6  spread = np.max(X, axis=1) - np.min(X, axis=1)
    t1_bar = rt.unbroadcast(spread_bar, t1)
    t2_bar = rt.unbroadcast(-spread_bar, t2)
    X_bar = X_bar + rt.extremum_grad(t2_bar, X, t2, 1, False)
    X_bar = X_bar + rt.extremum_grad(t1_bar, X, t1, 1, False)
    # reductions.py:5  mu = np.mean(X, axis=0, keepdims=True)
    X_bar = X_bar + rt.mean_grad(mu_bar, X, 0, True)
    return out, X_bar
