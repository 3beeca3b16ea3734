def f(a):
    x = a
    k = 0
    while abs(x * x - a) > 1e-10 and k < 50:
        x = 0.5 * (x + a / x)
        k += 1
    return x


INPUTS = [(2.0,), (9.0,)]
ARGNUMS = 0
