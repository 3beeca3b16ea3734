"""The example that docs/how_it_works.rst follows through the pipeline.

    srctrans show docs/examples/walkthrough.py:calc
    srctrans show docs/examples/walkthrough.py:calc --transform anf
"""

import numpy as np

SCALE = 0.5


def soft_clip(v):
    return np.tanh(v / SCALE) * SCALE


def calc(x, w):
    y = x * w + 1.0
    if y.sum() > 0.0:
        y = soft_clip(y)
    total = y.sum(axis=0)
    return total / x.shape[0]
