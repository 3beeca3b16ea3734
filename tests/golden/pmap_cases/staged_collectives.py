import numpy as np

from srctrans import all_gather, axis_index, pmax, pmin


def f(x):
    # four collectives: a stage before each that needs a new value, a last stage after them
    lo = pmin(x, "i")
    hi = pmax(x, "i")
    scaled = (x - lo) / (hi - lo)
    every = all_gather(scaled, "i")
    i = axis_index("i")
    return every @ scaled + i, hi


IN_AXES = 0
GRAD = False
INPUTS = [(np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0], [2.0, 2.0]]),)]


def expected(x):
    scaled = (x - x.min(0)) / (x.max(0) - x.min(0))
    return scaled @ scaled.T + np.arange(len(x))[:, None], np.broadcast_to(x.max(0), x.shape)
