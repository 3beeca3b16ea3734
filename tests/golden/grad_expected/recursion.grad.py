import srctrans.runtime as rt


def power(x, n):
    # recursion.py:2  if n <= 1:
    if n <= 1:
        # recursion.py:3  r = x
        r = x
    else:
        # recursion.py:5  r = x * power(x, n - 1)
        r = x * power(x, n - 1)
    # recursion.py:6  return r
    return r


def power_vjp_x(x, n, r_bar):
    # recursion.py:2  if n <= 1:
    t1 = n <= 1
    if t1:
        # recursion.py:3  r = x
        r = x
    else:
        # recursion.py:5  r = x * power(x, n - 1)
        t2 = n - 1
        t3 = power(x, t2)
        r = x * t3
    # recursion.py:6  return r
    # --- backward ---
    x_bar = rt.zeros_like(x)
    # recursion.py:2  if n <= 1:
    if t1:
        # recursion.py:3  r = x
        x_bar = x_bar + r_bar
    else:
        # recursion.py:5  r = x * power(x, n - 1)
        x_bar = x_bar + rt.unbroadcast(r_bar * t3, x)
        t3_bar = rt.unbroadcast(r_bar * x, t3)
        power_vjp_x_out, power_vjp_x_bars = power_vjp_x(x, t2, t3_bar)
        power_x_bar, = power_vjp_x_bars
        x_bar = x_bar + power_x_bar
    return r, (x_bar,)


def f_grad(x):
    # recursion.py:10  return power(x, 5) + x
    t1 = power(x, 5)
    out = t1 + x
    # --- backward ---
    # recursion.py:10  return power(x, 5) + x
    out_bar = rt.grad_seed(out)
    t1_bar = rt.unbroadcast(out_bar, t1)
    x_bar = rt.unbroadcast(out_bar, x)
    power_vjp_x_out, power_vjp_x_bars = power_vjp_x(x, 5, t1_bar)
    power_x_bar, = power_vjp_x_bars
    x_bar = x_bar + power_x_bar
    return out, x_bar
