import math


def f_jvp(x, x_dot):
    # jvp_early_return.py:5  if x > 2.0:
    t1 = x > 2.0
    if t1:
        # jvp_early_return.py:6  return math.log(x)
        result = math.log(x)
        result_dot = x_dot / x
    else:
        # jvp_early_return.py:7  y = x * x
        y = x * x
        y_dot = x * x_dot + x * x_dot
        # jvp_early_return.py:8  if y < 0.25:
        t2 = y < 0.25
        if t2:
            # jvp_early_return.py:9  return y
            result = y
            result_dot = y_dot
        else:
            # jvp_early_return.py:10  return math.sin(y) * x
            t3 = math.sin(y)
            t3_dot = math.cos(y) * y_dot
            result = t3 * x
            result_dot = x * t3_dot + t3 * x_dot
    return result, result_dot
