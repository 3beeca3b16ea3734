import math
import srctrans.runtime as rt


def f_grad(x):
    # early_return.py:5  if x > 2.0:
    t1 = x > 2.0
    if t1:
        # early_return.py:6  return math.log(x)
        result = math.log(x)
    else:
        # early_return.py:7  y = x * x
        y = x * x
        # early_return.py:8  if y < 0.25:
        t2 = y < 0.25
        if t2:
            # early_return.py:9  return y
            result = y
        else:
            # early_return.py:10  return math.sin(y) * x
            t3 = math.sin(y)
            result = t3 * x
    # --- backward ---
    x_bar = rt.zeros_like(x)
    # early_return.py:5  if x > 2.0:
    result_bar = rt.grad_seed(result)
    if t1:
        # early_return.py:6  return math.log(x)
        x_bar = x_bar + result_bar / x
    else:
        y_bar = rt.zeros_like(y)
        # early_return.py:8  if y < 0.25:
        if t2:
            # early_return.py:9  return y
            y_bar = y_bar + result_bar
        else:
            # early_return.py:10  return math.sin(y) * x
            t3_bar = result_bar * x
            x_bar = x_bar + result_bar * t3
            y_bar = y_bar + t3_bar * math.cos(y)
        # early_return.py:7  y = x * x
        x_bar = x_bar + y_bar * x
        x_bar = x_bar + y_bar * x
    return result, x_bar
