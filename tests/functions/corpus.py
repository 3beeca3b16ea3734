"""The end-to-end corpus: ordinary NumPy functions, each differentiated as written.

``CORPUS`` lists (function, argument makers); ``argnums`` default to every
argument. The functions cover straight-line code, branches, loops over
``range`` and over a data-dependent ``while``, reassignment, reductions,
indexing, matrix products and Python scalars.
"""

import math

import numpy as np


def poly(x):
    return 3.0 * x ** 3 - 2.0 * x * x + x - 1.0


def tanh_by_exp(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def softplus_sum(x):
    return np.sum(np.log1p(np.exp(x)))


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def mlp(W1, b1, W2, x):
    h = np.tanh(W1 @ x + b1)
    out = W2 @ h
    return np.sum(out * out) / 2.0


def logistic_loss(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def euler_ode(k, y0):
    y = y0
    dt = 0.01
    for i in range(100):
        y = y + dt * (-k * y + np.sin(0.1 * i))
    return y * y


def euler_vector(k, y0):
    y = y0
    for i in range(20):
        dy = -k * y + np.cos(y)
        y = y + 0.05 * dy
    return np.sum(y ** 2)


def branch_sign(x):
    if x > 0.0:
        y = x * x
    else:
        y = -x * 3.0
    return y + x


def elif_chain(x, w):
    s = np.sum(x)
    if s > 1.0:
        r = s * w
    elif s > -1.0:
        r = s * s + w
    else:
        r = np.exp(s) * w * w
    return r


def conditional_expression(x):
    y = x * 2.0 if x > 0.5 else x * x
    return y * x


def while_until(x):
    s = x
    k = 0
    while s < 10.0 and k < 100:
        s = s * 1.5 + 0.1
        k += 1
    return s


def accumulate_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * x[i] * (i + 1)
    return total


def nested_loops(A):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            total = total + np.sin(A[i, j]) * (i - j)
    return total


def loop_with_branch(x):
    acc = 0.0
    for i in range(6):
        if i % 2 == 0:
            acc = acc + np.sum(x) * i
        else:
            acc = acc * 0.9 + np.prod(x)
    return acc


def reassign_many(x):
    y = x * 2.0
    y = np.sin(y)
    y = y * x
    y = np.sum(y)
    return y


def augmented(x, w):
    s = 0.0
    s += np.sum(x * w)
    s *= 2.0
    s -= np.sum(w)
    return s


def reductions_axes(x):
    a = np.sum(x, axis=0)
    b = np.mean(x, axis=1)
    c = np.max(x, axis=0)
    return np.sum(a * a) + np.sum(b) + np.sum(c)


def variance(x):
    return np.var(x) + np.std(x, axis=0).sum()


def indexing_reads(x):
    first = x[0]
    last = x[-1]
    middle = x[1:-1].sum()
    return first * last + middle + x[::2].sum()


def fancy_index(x):
    idx = np.array([0, 2, 2, 1])
    return np.sum(x[idx] ** 2)


def matrix_2d_index(A):
    return A[0, 1] * A[1, 0] + np.sum(A[:, 1])


def matmul_chain(A, B, v):
    return np.sum((A @ B) @ v)


def dot_forms(x, y):
    return np.dot(x, y) + x.dot(y) + np.vdot(x, y)


def outer_trace(x):
    M = np.outer(x, x)
    return np.trace(M) + np.sum(M)


def shape_ops(x):
    y = x.reshape(2, 3)
    z = y.T
    w = np.ravel(z)
    return np.sum(w * np.arange(6.0))


def where_mask(x):
    return np.sum(np.where(x > 0.0, x * x, -x))


def maximum_relu(x):
    return np.sum(np.maximum(x, 0.0) * x)


def clip_loss(x):
    return np.sum(np.clip(x, -1.0, 1.0) ** 2)


def abs_and_sign(x):
    return np.sum(np.abs(x) * np.sign(x) + abs(x[0]))


def math_scalars(x):
    return math.sin(x) * math.exp(-x) + math.sqrt(x * x + 1.0) + math.log(2.0 + x)


def python_builtins(x, y):
    return max(x, y) * min(x, y) + abs(x - y)


def hypot_atan(x, y):
    return np.sum(np.hypot(x, y) + np.arctan2(y, x))


def power_general(x, y):
    return np.sum(x ** y + np.power(y, 2.0))


def broadcast_add(x, b):
    return np.sum(np.tanh(x + b) * b)


def scalar_times_array(s, x):
    return np.sum(s * x + x / s)


def constants_and_ints(x):
    n = x.shape[0]
    half = n // 2
    return np.sum(x[:half]) * n + float(half) * x[-1]


def gmm_like(alphas, means, x):
    k = alphas.shape[0]
    total = 0.0
    for i in range(x.shape[0]):
        d = x[i] - means
        e = alphas - 0.5 * np.sum(d * d, axis=1)
        m = np.max(e)
        total = total + m + np.log(np.sum(np.exp(e - m)))
    return total - x.shape[0] * np.log(np.sum(np.exp(alphas))) + k * 0.0


def rnn_step(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def pairwise_energy(P):
    e = 0.0
    for i in range(P.shape[0]):
        for j in range(i + 1, P.shape[0]):
            d = P[i] - P[j]
            e = e + 1.0 / np.sqrt(np.sum(d * d) + 0.1)
    return e


def newton_sqrt(a):
    x = a
    k = 0
    while k < 8:
        x = 0.5 * (x + a / x)
        k += 1
    return x


def piecewise_loop(x):
    y = x
    for i in range(5):
        if y > 1.0:
            y = np.sqrt(y)
        else:
            y = y * 2.0 + 0.1
    return y


def normalize(x):
    mu = np.mean(x)
    sd = np.std(x)
    z = (x - mu) / sd
    return np.sum(z * np.arange(float(x.shape[0])))


def softmax_cross_entropy(logits, target):
    m = np.max(logits)
    e = np.exp(logits - m)
    p = e / np.sum(e)
    return -np.sum(target * np.log(p))


def prod_and_cumulative(x):
    return np.prod(x) + np.prod(x[1:] / x[:-1])


def expm1_log1p(x):
    return np.sum(np.expm1(x) * np.log1p(x * x))


def trig_mix(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x) + np.tan(0.3 * x) - np.arctan(x))


def hyperbolic(x):
    return np.sum(np.sinh(x) / np.cosh(x) + np.arcsinh(x))


def copy_then_use(x):
    y = x.copy()
    z = np.copy(y)
    return np.sum(z * y)


def astype_float(x):
    return np.sum(x.astype(float) * x)


def expand_squeeze(x):
    y = np.expand_dims(x, 0)
    z = np.squeeze(y * 2.0, axis=0)
    return np.sum(z * x)


def keepdims_mean(X):
    mu = np.mean(X, axis=0, keepdims=True)
    return np.sum((X - mu) ** 2)


def logaddexp_pair(x, y):
    return np.sum(np.logaddexp(x, y))


def minimum_maximum(x, y):
    return np.sum(np.minimum(x, y) * np.maximum(x, y))


def counter_while(x):
    s = 0.0
    i = 0
    while i < 5:
        s = s + x * i
        i = i + 1
    return s * x


def chained_compare(x):
    if 0.0 < x < 2.0:
        return_value = x * x
    else:
        return_value = x
    return return_value


def boolean_ops(x, y):
    if x > 0.0 and y > 0.0:
        r = x * y
    elif x > 0.0 or y > 0.0:
        r = x + y
    else:
        r = x - y
    return r


def sinc_exp2(x):
    return np.sum(np.sinc(x) + np.exp2(x) + np.log2(x) + np.log10(x))


def reciprocal_sqrt(x):
    return np.sum(np.reciprocal(np.sqrt(x)) + np.cbrt(x))


def square_sum(x):
    return np.sum(np.square(x - 1.0))


def floor_is_constant(x):
    return np.sum(x * np.floor(x) + np.ceil(x))


def argmax_pick(x):
    i = np.argmax(x)
    return x[i] * 2.0


def linspace_weights(x):
    w = np.linspace(0.0, 1.0, x.shape[0])
    return np.sum(w * x * x)


def zeros_then_fill(x):
    z = np.zeros(3)
    return np.sum(z + x * 2.0)


def two_outputs_sum(x):
    a = np.sum(x)
    b = np.sum(x * x)
    return a * b


def deep_expression(x, y):
    return np.sum(np.exp(np.sin(x * y) + np.cos(x - y)) / (1.0 + x * x))


def loop_matrix_power(A):
    M = A
    for i in range(3):
        M = M @ A
    return np.sum(M)


def running_max(x):
    best = x[0]
    for i in range(1, x.shape[0]):
        best = np.maximum(best, x[i])
    return best


def decay_sum(x, rate):
    total = 0.0
    w = 1.0
    for i in range(x.shape[0]):
        total = total + w * x[i]
        w = w * rate
    return total


def transpose_product(A):
    return np.sum(np.transpose(A) @ A)


def mean_of_squares(x):
    return np.mean(x ** 2)


def quadratic_form(A, x):
    return x @ A @ x


def scalar_loop_pow(x):
    y = 1.0
    for i in range(4):
        y = y * x + math.cos(y)
    return y


def hypot_scalar(x, y):
    return math.hypot(x, y) + math.atan(x / y)


def erf_lgamma(x):
    return math.erf(x) + math.lgamma(x + 1.5)


def residual_norm(A, x, b):
    r = A @ x - b
    return np.sqrt(np.sum(r * r))


def huber(x):
    total = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        if a < 1.0:
            total = total + 0.5 * x[i] * x[i]
        else:
            total = total + a - 0.5
    return total


def polynomial_horner(c, x):
    acc = 0.0
    for i in range(c.shape[0]):
        acc = acc * x + c[i]
    return acc


def bilinear(x, A, y):
    return np.dot(x, np.dot(A, y))


def cosine_similarity(x, y):
    return np.dot(x, y) / (np.sqrt(np.dot(x, x)) * np.sqrt(np.dot(y, y)))


def leaky_relu_layer(W, x):
    z = W @ x
    a = np.where(z > 0.0, z, 0.01 * z)
    return np.sum(a * a)


def damped_oscillator(k, c):
    x = 1.0
    v = 0.0
    dt = 0.05
    for step in range(60):
        a = -k * x - c * v
        v = v + dt * a
        x = x + dt * v
    return x * x + v * v


def reset_by_constant(x):
    y = x * x
    z = y * 1.0
    y = 0.0
    return z + y


def reset_in_branch_of_loop(x):
    y = x * 2.0
    for i in range(2):
        if i == 1:
            y = 3.0
    return y * x


def shape_changes(x):
    y = np.sum(x)
    for i in range(2):
        y = y * 1.5
    y = np.outer(x, x) * y
    return np.sum(y)


def branch_then_reassign(x, flag):
    y = x * 2.0
    if flag > 0.0:
        y = y + 1.0
        y = x * 3.0
    return y


def zero_trip_loop(x, n):
    y = x * 2.0
    for i in range(int(n)):
        y = y + 1.0
        y = x * 3.0
    return y


def assigned_only_in_loop(x):
    for i in range(3):
        p = x * (i + 1.0)
    return p * p


def mutated_buffer(x):
    buf = np.zeros(3)
    s = 0.0
    for i in range(3):
        buf[i] = 1.0 + i
        s = s + np.sum(buf * x)
    return s


def mutated_after_use(w):
    y = np.ones(3)
    z = w * y
    y[0] = 5.0
    z2 = w * y
    return np.sum(z) + np.sum(z2)


def pos(r, *shape):
    return r.uniform(0.5, 1.5, shape)


def nrm(r, *shape):
    return r.standard_normal(shape)


def sc(r, lo=-1.0, hi=1.0):
    return float(r.uniform(lo, hi))


# --- break, continue and early return ------------------------------------------------


def early_return_sign(x):
    if x > 0.0:
        return x * x
    return -2.0 * x


def elif_returns(x, y):
    if x > 1.0:
        return x * y
    elif x > 0.0:
        return np.sin(x) + y
    else:
        return x - y * y


def first_above(x, limit):
    # the first partial sum of squares above the limit
    total = 0.0
    for i in range(len(x)):
        total = total + x[i] * x[i]
        if total > limit:
            break
    return total * limit


def skip_negatives(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] < 0.0:
            continue
        total = total + np.exp(x[i]) * x[i]
    return total


def return_from_loop(x):
    y = x
    for i in range(20):
        y = y * 1.3 + 0.1
        if y > 4.0:
            return y * x
    return y


def while_break_continue(x):
    y = x
    n = 0
    while n < 30:
        n += 1
        if n % 3 == 0:
            continue
        y = np.sin(y) + y * 0.9
        if y > 2.5:
            break
    return y * y


def nested_break(a):
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] > 1.0:
                break
            total = total + a[i, j] * a[i, j]
    return total


def newton_sqrt_early(a):
    x = a
    for i in range(50):
        nxt = 0.5 * (x + a / x)
        if abs(nxt - x) < 1e-12:
            return nxt
        x = nxt
    return x


# --- in-place writes -----------------------------------------------------------------


def trajectory_buffer(x0, k):
    # explicit Euler, storing every state in a preallocated array
    ys = np.zeros(12)
    ys[0] = x0
    for i in range(1, 12):
        ys[i] = ys[i - 1] + 0.1 * (-k * ys[i - 1] + np.sin(ys[i - 1]))
    return np.sum(ys * ys)


def scale_columns(a, s):
    b = a.copy()
    for j in range(b.shape[1]):
        b[:, j] *= s[j]
    return np.sum(b * b)


def slice_updates(x):
    y = np.ones(6)
    y[1:4] = x[:3] * 2.0
    y[::2] += x[3:6]
    y[-1] -= x[0] * y[2]
    return np.sum(np.sin(y) * y)


def write_rows_by_index(x):
    y = np.zeros((5, 2))
    rows = np.array([4, 0, 2])
    y[rows] = x * 3.0
    y[1, :] = y[4, :] * y[0, :]
    return np.sum(y ** 2)


def overwrite_then_read(x):
    y = x * 1.0
    t = y[1:3]
    s = np.sum(t * t)
    y[1:3] = 0.0
    return s + np.sum(y * x)


def inplace_running_product(x):
    p = np.ones(len(x))
    for i in range(1, len(x)):
        p[i] = p[i - 1] * x[i - 1]
    return np.sum(p)



def rows_loop(X, w):
    # a loop over the rows of an array
    total = 0.0
    for row in X:
        total = total + np.tanh(row @ w) ** 2
    return total



def enumerate_zip(X, w):
    # loops over an expression, enumerate and zip
    total = 0.0
    for row in X * 2.0:
        total = total + np.sin(row @ w)
    for i, row in enumerate(X):
        if i > 0:
            for a, b in zip(row, w):
                total = total + a * b * i
    return total



def mean_and_variance(x):
    m = np.mean(x)
    v = np.mean((x - m) ** 2)
    return m, v


def unpack_results(x):
    # tuple unpacking of a call that returns two values, and of a tuple display
    m, v = mean_and_variance(x)
    a, b = x[0] * 2.0, np.sin(x[1])
    return m * v + a * b


CORPUS = [
    (poly, (lambda r: nrm(r, 4),)),
    (poly, (lambda r: sc(r),)),
    (tanh_by_exp, (lambda r: sc(r),)),
    (softplus_sum, (lambda r: nrm(r, 5),)),
    (logsumexp, (lambda r: nrm(r, 5),)),
    (mlp, (lambda r: nrm(r, 4, 3), lambda r: nrm(r, 4), lambda r: nrm(r, 2, 4), lambda r: nrm(r, 3))),
    (logistic_loss, (lambda r: nrm(r, 3), lambda r: nrm(r, 6, 3), lambda r: (r.uniform(0, 1, 6) > 0.5) * 1.0)),
    (euler_ode, (lambda r: sc(r, 0.2, 1.0), lambda r: sc(r, 0.5, 1.5))),
    (euler_vector, (lambda r: pos(r, 3), lambda r: nrm(r, 3))),
    (branch_sign, (lambda r: sc(r, 0.2, 1.0),)),
    (branch_sign, (lambda r: sc(r, -1.0, -0.2),)),
    (elif_chain, (lambda r: pos(r, 3), lambda r: sc(r))),
    (elif_chain, (lambda r: nrm(r, 3) * 0.1, lambda r: sc(r))),
    (elif_chain, (lambda r: -pos(r, 3), lambda r: sc(r))),
    (conditional_expression, (lambda r: sc(r, 0.6, 1.0),)),
    (conditional_expression, (lambda r: sc(r, 0.0, 0.4),)),
    (while_until, (lambda r: sc(r, 0.5, 2.0),)),
    (accumulate_loop, (lambda r: nrm(r, 5),)),
    (nested_loops, (lambda r: nrm(r, 3, 4),)),
    (loop_with_branch, (lambda r: pos(r, 3),)),
    (reassign_many, (lambda r: nrm(r, 4),)),
    (augmented, (lambda r: nrm(r, 3), lambda r: nrm(r, 3))),
    (reductions_axes, (lambda r: nrm(r, 3, 4),)),
    (variance, (lambda r: nrm(r, 4, 3),)),
    (indexing_reads, (lambda r: nrm(r, 6),)),
    (fancy_index, (lambda r: nrm(r, 4),)),
    (matrix_2d_index, (lambda r: nrm(r, 3, 3),)),
    (matmul_chain, (lambda r: nrm(r, 3, 4), lambda r: nrm(r, 4, 2), lambda r: nrm(r, 2))),
    (dot_forms, (lambda r: nrm(r, 4), lambda r: nrm(r, 4))),
    (outer_trace, (lambda r: nrm(r, 3),)),
    (shape_ops, (lambda r: nrm(r, 6),)),
    (where_mask, (lambda r: nrm(r, 6) + 0.05,)),
    (maximum_relu, (lambda r: nrm(r, 6) + 0.05,)),
    (clip_loss, (lambda r: nrm(r, 6) * 2.0 + 0.03,)),
    (abs_and_sign, (lambda r: nrm(r, 4) + 0.05,)),
    (math_scalars, (lambda r: sc(r, 0.1, 1.0),)),
    (python_builtins, (lambda r: sc(r), lambda r: sc(r) + 2.5)),
    (hypot_atan, (lambda r: pos(r, 3), lambda r: nrm(r, 3))),
    (power_general, (lambda r: pos(r, 3), lambda r: nrm(r, 3))),
    (broadcast_add, (lambda r: nrm(r, 3, 4), lambda r: nrm(r, 4))),
    (scalar_times_array, (lambda r: sc(r, 0.5, 2.0), lambda r: nrm(r, 4))),
    (constants_and_ints, (lambda r: nrm(r, 6),)),
    (gmm_like, (lambda r: nrm(r, 3), lambda r: nrm(r, 3, 2), lambda r: nrm(r, 5, 2))),
    (rnn_step, (lambda r: nrm(r, 3, 3) * 0.5, lambda r: nrm(r, 3), lambda r: nrm(r, 4, 3))),
    (pairwise_energy, (lambda r: nrm(r, 4, 2),)),
    (newton_sqrt, (lambda r: sc(r, 1.0, 4.0),)),
    (piecewise_loop, (lambda r: sc(r, 0.2, 3.0),)),
    (normalize, (lambda r: nrm(r, 5),)),
    (softmax_cross_entropy, (lambda r: nrm(r, 4), lambda r: pos(r, 4))),
    (prod_and_cumulative, (lambda r: pos(r, 4),)),
    (expm1_log1p, (lambda r: nrm(r, 4),)),
    (trig_mix, (lambda r: nrm(r, 4),)),
    (hyperbolic, (lambda r: nrm(r, 4),)),
    (copy_then_use, (lambda r: nrm(r, 4),)),
    (astype_float, (lambda r: nrm(r, 4),)),
    (expand_squeeze, (lambda r: nrm(r, 4),)),
    (keepdims_mean, (lambda r: nrm(r, 4, 3),)),
    (logaddexp_pair, (lambda r: nrm(r, 4), lambda r: nrm(r, 4))),
    (minimum_maximum, (lambda r: nrm(r, 4), lambda r: nrm(r, 4) + 0.05)),
    (counter_while, (lambda r: sc(r),)),
    (chained_compare, (lambda r: sc(r, 0.2, 1.8),)),
    (chained_compare, (lambda r: sc(r, 2.2, 3.0),)),
    (boolean_ops, (lambda r: sc(r, 0.2, 1.0), lambda r: sc(r, 0.2, 1.0))),
    (boolean_ops, (lambda r: sc(r, 0.2, 1.0), lambda r: sc(r, -1.0, -0.2))),
    (boolean_ops, (lambda r: sc(r, -1.0, -0.2), lambda r: sc(r, -1.0, -0.2))),
    (sinc_exp2, (lambda r: pos(r, 4),)),
    (reciprocal_sqrt, (lambda r: pos(r, 4),)),
    (square_sum, (lambda r: nrm(r, 4),)),
    (floor_is_constant, (lambda r: nrm(r, 4) + 0.05,)),
    (argmax_pick, (lambda r: nrm(r, 5),)),
    (linspace_weights, (lambda r: nrm(r, 5),)),
    (zeros_then_fill, (lambda r: nrm(r, 3),)),
    (two_outputs_sum, (lambda r: nrm(r, 4),)),
    (deep_expression, (lambda r: nrm(r, 4), lambda r: nrm(r, 4))),
    (loop_matrix_power, (lambda r: nrm(r, 3, 3) * 0.5,)),
    (running_max, (lambda r: nrm(r, 6),)),
    (decay_sum, (lambda r: nrm(r, 5), lambda r: sc(r, 0.5, 0.9))),
    (transpose_product, (lambda r: nrm(r, 3, 2),)),
    (mean_of_squares, (lambda r: nrm(r, 5),)),
    (quadratic_form, (lambda r: nrm(r, 3, 3), lambda r: nrm(r, 3))),
    (scalar_loop_pow, (lambda r: sc(r, 0.2, 0.9),)),
    (hypot_scalar, (lambda r: sc(r, 0.5, 1.0), lambda r: sc(r, 0.5, 1.0))),
    (erf_lgamma, (lambda r: sc(r, 0.2, 1.0),)),
    (residual_norm, (lambda r: nrm(r, 3, 3), lambda r: nrm(r, 3), lambda r: nrm(r, 3))),
    (huber, (lambda r: nrm(r, 6) * 1.5 + 0.01,)),
    (polynomial_horner, (lambda r: nrm(r, 4), lambda r: sc(r))),
    (bilinear, (lambda r: nrm(r, 3), lambda r: nrm(r, 3, 4), lambda r: nrm(r, 4))),
    (cosine_similarity, (lambda r: nrm(r, 4), lambda r: nrm(r, 4))),
    (leaky_relu_layer, (lambda r: nrm(r, 3, 4), lambda r: nrm(r, 4) + 0.01)),
    (damped_oscillator, (lambda r: sc(r, 0.5, 2.0), lambda r: sc(r, 0.1, 0.5))),
    (reset_by_constant, (lambda r: sc(r),)),
    (reset_in_branch_of_loop, (lambda r: sc(r),)),
    (shape_changes, (lambda r: nrm(r, 3),)),
    (branch_then_reassign, (lambda r: sc(r), lambda r: -1.0)),
    (branch_then_reassign, (lambda r: sc(r), lambda r: 1.0)),
    (zero_trip_loop, (lambda r: sc(r), lambda r: 0.0)),
    (zero_trip_loop, (lambda r: sc(r), lambda r: 2.0)),
    (assigned_only_in_loop, (lambda r: sc(r),)),
    (mutated_buffer, (lambda r: nrm(r, 3),)),
    (mutated_after_use, (lambda r: sc(r),)),
    (early_return_sign, (lambda r: sc(r, 0.2, 1.0),)),
    (early_return_sign, (lambda r: sc(r, -1.0, -0.2),)),
    (elif_returns, (lambda r: sc(r, 1.2, 2.0), lambda r: sc(r))),
    (elif_returns, (lambda r: sc(r, 0.2, 0.8), lambda r: sc(r))),
    (elif_returns, (lambda r: sc(r, -1.0, -0.2), lambda r: sc(r))),
    (first_above, (lambda r: nrm(r, 8), lambda r: 2.5)),
    (skip_negatives, (lambda r: nrm(r, 7) + 0.05,)),
    (return_from_loop, (lambda r: sc(r, 0.5, 1.0),)),
    (return_from_loop, (lambda r: sc(r, -1.0, -0.5),)),
    (while_break_continue, (lambda r: sc(r, 0.2, 0.6),)),
    (nested_break, (lambda r: nrm(r, 4, 5) + 0.03,)),
    (newton_sqrt_early, (lambda r: sc(r, 1.0, 3.0),)),
    (trajectory_buffer, (lambda r: sc(r, 0.5, 1.5), lambda r: sc(r, 0.5, 2.0))),
    (scale_columns, (lambda r: nrm(r, 3, 4), lambda r: nrm(r, 4))),
    (slice_updates, (lambda r: nrm(r, 6),)),
    (write_rows_by_index, (lambda r: nrm(r, 3, 2),)),
    (overwrite_then_read, (lambda r: nrm(r, 5),)),
    (inplace_running_product, (lambda r: nrm(r, 6),)),
    (rows_loop, (lambda r: nrm(r, 5, 3), lambda r: nrm(r, 3))),
    (enumerate_zip, (lambda r: nrm(r, 4, 3), lambda r: nrm(r, 3))),
    (unpack_results, (lambda r: nrm(r, 5),)),
]
