"""Functions the pmap tests map over devices (a real module, so srctrans reads their source)."""

import numpy as np

from srctrans import all_gather, axis_index, pmax, pmean, pmin, psum


def normalized(x, w):
    h = np.tanh(x @ w)
    s = psum(np.sum(h * h), "i")
    return h / np.sqrt(s)


def centered(x):
    return x - pmean(x, "i")


def extremes(x):
    hi = pmax(x, "i")
    lo = pmin(x, "i")
    return (x - lo) / (hi - lo)


def gathered(x):
    every = all_gather(x, "i")
    return every @ x


def ranked(x):
    i = axis_index("i")
    return x * i


def replicated_sum(w, x):
    s = psum(w, "i")
    return x + s


def no_collective(x, w):
    return np.sin(x) * w


def tree(p, x):
    y = p["a"] * x + p["b"]
    return {"y": y, "mean": pmean(y, "i"), "pair": (y, 2.0 * y)}


def logistic_loss(w, x, y):
    z = np.dot(x, w)
    p = 1.0 / (1.0 + np.exp(-z))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def spread(w, x):
    t = np.tanh(x * w)
    m = pmean(t, "i")
    return np.sum((t - m) ** 2)


def share(w, x):
    t = np.tanh(x * w)
    s = psum(t, "i")
    return np.sum(t / s)


def in_loop(x):
    s = 0.0
    for _ in range(2):
        s = s + psum(x, "i")
    return s


def in_branch(x):
    if x > 0.0:
        y = psum(x, "i")
    else:
        y = x
    return y


def helper(x):
    return psum(x, "i")


def in_callee(x):
    return helper(x) + 1.0


def other_axis(x):
    return psum(x, "j")


def early_return(x):
    m = pmean(x, "i")
    if m > 0.0:
        return x - m
    return x + m


def counted(x):
    n = psum(1.0, "i")
    return x / n


def pmax_elsewhere(x):
    return pmax(x, "elsewhere") * 1.0


def pmin_elsewhere(x):
    return pmin(x, "elsewhere") * 1.0


def all_gather_elsewhere(x):
    return all_gather(x, "elsewhere") * 1.0


def axis_index_elsewhere(x):
    return x * axis_index("elsewhere")


def mixed(w, x):
    t = np.tanh(x * w)
    every = all_gather(t, "i")
    return np.sum(every[0] * t) + np.sum(every * every)


def euler_loss(y0, k):
    y = y0
    for step in range(12):
        y = y + 0.05 * (-k * y * y + np.sin(y))
    return np.sum(y * y)
