import srctrans.runtime as rt


def f_grad(a):
    x_tape = []
    t7_tape = []
    # newton.py:2  x = a
    x = a
    # newton.py:3  k = 0
    k = 0
    # newton.py:4  while abs(x * x - a) > 1e-10 and k < 50:
    t1 = x * x
    t2 = t1 - a
    t3 = abs(t2)
    cond = t3 > 1e-10
    if cond:
        cond = k < 50
    trips = 0
    while cond:
        trips += 1
        # newton.py:5  x = 0.5 * (x + a / x)
        x_tape.append(x)
        t7 = a / x
        t7_tape.append(t7)
        t8 = x + t7
        x = 0.5 * t8
        # newton.py:6  k += 1
        k = k + 1
        t4 = x * x
        t5 = t4 - a
        t6 = abs(t5)
        cond = t6 > 1e-10
        if cond:
            cond = k < 50
    # newton.py:7  return x
    # --- backward ---
    a_bar = rt.zeros_like(a)
    x_bar = rt.zeros_like(x)
    # newton.py:7  return x
    x_bar = x_bar + rt.grad_seed(x)
    # newton.py:4  while abs(x * x - a) > 1e-10 and k < 50:
    a_loop_bar = rt.zeros_like(a)
    for _ in range(trips):
        # newton.py:5  x = 0.5 * (x + a / x)
        x_1 = x_tape.pop()
        t7_1 = t7_tape.pop()
        x_bar_1 = x_bar
        a_loop_bar += rt.unbroadcast(x_bar_1 * (0.5 / x_1), a)
        x_bar = rt.unbroadcast(x_bar_1 * (0.5 - 0.5 * (t7_1 / x_1)), x_1)
    a_bar = a_bar + a_loop_bar
    # newton.py:2  x = a
    a_bar = a_bar + x_bar
    return x, a_bar
