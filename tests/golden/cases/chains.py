import math


def f(a, b, c):
    lo = a if a < b else b
    ok = a < b <= c
    both = a > 0 and b > 0 or c > 0
    m = max(abs(a - b), math.sqrt(abs(c)))
    return lo + m if ok and both else not ok


INPUTS = [(1.0, 2.0, 3.0), (3.0, 2.0, -1.0), (-1.0, -2.0, 4.0)]
