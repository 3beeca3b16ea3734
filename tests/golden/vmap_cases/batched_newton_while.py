def f(a):
    # a while loop whose trip count depends on the example: only the loop can batch it
    x = a
    while abs(x * x - a) > 1e-10:
        x = 0.5 * (x + a / x)
    return x


IN_AXES = 0
INPUTS = [(__import__("numpy").array([2.0, 9.0, 0.5]),)]
