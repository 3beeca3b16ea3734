def power(x, n):
    if n <= 1:
        r = x
    else:
        r = x * power(x, n - 1)
    return r


def f(x):
    return power(x, 5) + x


INPUTS = [(1.3,), (-0.7,)]
ARGNUMS = 0
