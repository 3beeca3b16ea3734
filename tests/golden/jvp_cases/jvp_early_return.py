import math


def f(x):
    if x > 2.0:
        return math.log(x)
    y = x * x
    if y < 0.25:
        return y
    return math.sin(y) * x


INPUTS = [(3.0,), (0.3,), (1.2,)]
ARGNUMS = 0
