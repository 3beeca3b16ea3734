import math


def f(a, b, c):
    # chains.py:5  lo = a if a < b else b
    t1 = a < b
    if t1:
        lo = a
    else:
        lo = b
    # chains.py:6  ok = a < b <= c
    ok = a < b
    if ok:
        ok = b <= c
    # chains.py:7  both = a > 0 and b > 0 or c > 0
    t2 = a > 0
    if t2:
        t2 = b > 0
    both = t2
    t3 = not both
    if t3:
        both = c > 0
    # chains.py:8  m = max(abs(a - b), math.sqrt(abs(c)))
    t4 = a - b
    t5 = abs(t4)
    t6 = abs(c)
    t7 = math.sqrt(t6)
    m = max(t5, t7)
    # chains.py:9  return lo + m if ok and both else not ok
    t8 = ok
    if t8:
        t8 = both
    if t8:
        t9 = lo + m
    else:
        t9 = not ok
    return t9
