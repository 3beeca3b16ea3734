import numpy as np

from srctrans import pmean


def f(w, x):
    # pmap(grad(f)): the adjoint file has the forward pmean and its adjoint, a pmean of the adjoint
    t = np.tanh(x * w)
    m = pmean(t, "i")
    return np.sum((t - m) ** 2)


IN_AXES = (None, 0)
GRAD = True
INPUTS = [(np.array([0.3, -0.2]), np.array([[0.5, 1.0], [1.5, 0.7], [0.9, 1.2], [1.1, 0.6]]))]


def expected(w, x):
    # d(sum over examples)/d(each example's w): (t - m) * 2 * (1 - t^2) * x, m's own terms summing to zero
    t = np.tanh(x * w)
    m = t.mean(0)
    return 2.0 * (t - m) * (1.0 - t * t) * x
