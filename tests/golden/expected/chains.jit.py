import math


def f(a, b, c):
    # chains.py:5  lo = a if a < b else b
    lo = a if a < b else b
    # chains.py:6  ok = a < b <= c
    ok = a < b and b <= c
    # chains.py:7  both = a > 0 and b > 0 or c > 0
    both = a > 0 and b > 0 or c > 0
    # chains.py:8  m = max(abs(a - b), math.sqrt(abs(c)))
    m = max(abs(a - b), math.sqrt(abs(c)))
    # chains.py:9  return lo + m if ok and both else not ok
    return lo + m if ok and both else not ok
