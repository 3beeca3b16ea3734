"""Specs for the rules of ``srctrans.rules.runtime_helpers`` (merged into ``specs.SPECS``).

Each function calls a helper of ``srctrans.runtime`` directly, the way adjoint files do
(every argument positionally). Arguments that give only a shape (the ``x`` of
``unbroadcast(g, x)``) are passed as arguments too, so the check also sees that they get a
zero adjoint; a reduction's ``ans`` is computed from ``x`` inside the function, as in an
adjoint file, except in one ``std_grad`` spec that checks its partial for ``ans`` alone.
"""

import numpy as np

import srctrans.runtime as rt

IDX = (slice(1, None), 0)  # a basic index into a (3, 4) array
REP = np.array([0, 0, 2])  # an index array repeating an entry
MASK = np.array([True, False, True, True])
ALONG = np.array([[3, 0, 0], [1, 2, 1]])  # indices into the rows of a (2, 4) array
TIES = np.array([[1.0, 2.0, 2.0], [3.0, 0.5, 3.0]])  # maxima reached twice in each row
# columns with no, one, two and three zeros: prod's second derivative in each case
ZEROS = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])


def normal(rng, *shape):
    return rng.standard_normal(shape)


def pos(rng, *shape):
    return rng.uniform(0.5, 1.5, shape)


def scalar(rng):
    return float(rng.standard_normal())


def wellposed(rng, *shape):
    """Matrices (a stack of them, for more than two axes) far from singular."""
    return rng.standard_normal(shape) + 3.0 * np.eye(shape[-1])


def _stack_grad_spec(g, x, y):
    a, b = rt.stack_grad(g, [x, y], 1)
    return a * 2.0 + b * b


def _array_grad_spec(g, x, y):
    a, b = rt.array_grad(g, [x, y])
    return a * 2.0 + b * b


def _array_grad_of_an_array_spec(g, x):
    return rt.array_grad(g, x) * x


def _concatenate_grad_spec(g, x, y):
    a, b = rt.concatenate_grad(g, [x, y], 1)
    return np.sum(a * a) + np.sum(b * 3.0)


def _concatenate_grad_flat_spec(g, x, y):
    a, b = rt.concatenate_grad(g, [x, y], None)
    return np.sum(a * a) + np.sum(b * b * b)


def _hstack_grad_spec(g, x, y):
    a, b = rt.hstack_grad(g, [x, y])
    return np.sum(a * a) + np.sum(b) * 2.0


def _vstack_grad_spec(g, x, y):
    a, b = rt.vstack_grad(g, [x, y])
    return np.sum(a * b * b)


def _split_grad_spec(p, q):
    return rt.split_grad((p, q * q), 1) ** 2


# key -> list of (function, argument makers)
RUNTIME_SPECS = {
    # --- constants for differentiation ----------------------------------------------------
    "srctrans.runtime.grad_seed": [(lambda x: x * rt.grad_seed(np.sum(x)), (lambda r: normal(r, 3),))],
    "srctrans.runtime.zeros_like": [(lambda x: x * x + rt.zeros_like(x), (lambda r: normal(r, 3),))],
    "srctrans.runtime.ones_like": [(lambda x: x * rt.ones_like(x), (lambda r: normal(r, 3),))],
    "srctrans.runtime.ge_mask": [(lambda x, y: x * rt.ge_mask(x, y), (lambda r: normal(r, 5), lambda r: normal(r, 5)))],
    "srctrans.runtime.le_mask": [(lambda x, y: y * rt.le_mask(x, y), (lambda r: normal(r, 5), lambda r: normal(r, 5)))],
    "srctrans.runtime.inside_mask": [(lambda x: x * rt.inside_mask(x, -0.5, 0.5), (lambda r: normal(r, 6),))],
    # --- linear in g ------------------------------------------------------------------------
    "srctrans.runtime.unbroadcast": [
        (lambda g, x: rt.unbroadcast(g, x), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda g, x: rt.unbroadcast(g, x), (lambda r: normal(r, 3, 1), lambda r: normal(r, 2, 3, 4))),
        (lambda g, x: rt.unbroadcast(g, x), (lambda r: normal(r, 3), scalar)),
        (lambda g, x: rt.unbroadcast(g, x) * x, (scalar, lambda r: normal(r, 3))),
    ],
    "srctrans.runtime.sum_grad": [
        (lambda g, x: rt.sum_grad(g, x, None, False), (scalar, lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.sum_grad(g, x, 1, False) * x, (lambda r: normal(r, 3), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.sum_grad(g, x, (0, 2), True), (lambda r: normal(r, 1, 3, 1), lambda r: normal(r, 2, 3, 4))),
    ],
    "srctrans.runtime.mean_grad": [
        (lambda g, x: rt.mean_grad(g, x, 0, False), (lambda r: normal(r, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.mean_grad(g, x, None, True), (lambda r: normal(r, 1, 1), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.sum_to": [
        (lambda h, g: rt.sum_to(h, g, 1, False), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3))),
        (lambda h, g: rt.sum_to(h, g, None, False) * g, (lambda r: normal(r, 3, 4), scalar)),
        (lambda h, g: rt.sum_to(h, g, -1, True), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 1))),
    ],
    "srctrans.runtime.transpose_grad": [
        (lambda g: rt.transpose_grad(g, (1, 2, 0)), (lambda r: normal(r, 2, 3, 4),)),
        (lambda g: rt.transpose_grad(g, None), (lambda r: normal(r, 3, 4),)),
        (lambda g: rt.transpose_grad(g, ()), (lambda r: normal(r, 3, 4),)),
    ],
    "srctrans.runtime.transpose": [
        (lambda x: rt.transpose(x, (2, 0, 1)), (lambda r: normal(r, 2, 3, 4),)),
        (lambda x: rt.transpose(x, None) * x[0], (lambda r: normal(r, 4, 4),)),
    ],
    "srctrans.runtime.diag_grad": [
        (lambda g, x: rt.diag_grad(g, x, 1), (lambda r: normal(r, 5, 5), lambda r: normal(r, 4))),
        (lambda g, x: rt.diag_grad(g, x, -1), (lambda r: normal(r, 2), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.diag_grad(g, x, 0), (lambda r: normal(r, 3), lambda r: normal(r, 3, 3))),
    ],
    "srctrans.runtime.getitem_grad": [
        (lambda g, x: rt.getitem_grad(g, x, IDX), (lambda r: normal(r, 2), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.getitem_grad(g, x, REP), (lambda r: normal(r, 3), lambda r: normal(r, 4))),
        (lambda g, x: rt.getitem_grad(g, x, MASK), (lambda r: normal(r, 3), lambda r: normal(r, 4))),
        (lambda g, x: rt.getitem_grad(g, x, (1, 2)), (scalar, lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.snapshot": [
        (lambda v: rt.snapshot(v) * v, (lambda r: normal(r, 3),)),
        (lambda v: rt.snapshot(v) * 2.0, (scalar,)),
    ],
    # --- reductions' adjoints -----------------------------------------------------------------
    "srctrans.runtime.extremum_grad": [
        (lambda g, x: rt.extremum_grad(g, x, np.max(x, axis=0), 0, False), (lambda r: normal(r, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.extremum_grad(g, x, np.min(x), None, False), (scalar, lambda r: normal(r, 5))),
        (lambda g: rt.extremum_grad(g, TIES, np.max(TIES, axis=1), 1, False), (lambda r: normal(r, 2),)),
    ],
    "srctrans.runtime.prod_grad": [
        (lambda g, x: rt.prod_grad(g, x, np.prod(x, axis=0), 0, False), (lambda r: normal(r, 4), lambda r: pos(r, 3, 4))),
        (lambda g, x: rt.prod_grad(g, x, np.prod(x, axis=0), 0, False), (lambda r: normal(r, 4), lambda r: pos(r, 3, 4) * ZEROS)),
        (lambda g, x: rt.prod_grad(g, x, np.prod(x), None, False), (scalar, lambda r: normal(r, 4))),
        (lambda g, x: rt.prod_grad(g, x, np.prod(x, axis=1, keepdims=True), 1, True), (lambda r: normal(r, 3, 1), lambda r: pos(r, 3, 4))),
        (lambda g, x: rt.prod_grad(g, x, np.prod(x), None, False), (scalar, lambda r: pos(r, 4) * ZEROS[1])),
    ],
    "srctrans.runtime.prod_grad_grad": [
        (lambda u, g, x: rt.prod_grad_grad(u, g, x, 0, False), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: pos(r, 3, 4))),
        (lambda u, g, x: rt.prod_grad_grad(u, g, x * ZEROS, 0, False), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: pos(r, 3, 4))),
        (lambda u, g, x: rt.prod_grad_grad(u, g, x * ZEROS, 1, True), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 1), lambda r: pos(r, 3, 4))),
        (lambda u, g, x: rt.prod_grad_grad(u, g, x, None, False), (lambda r: normal(r, 5), scalar, lambda r: pos(r, 5))),
    ],
    "srctrans.runtime.var_grad": [
        (lambda g, x: rt.var_grad(g, x, 1, 0, False), (lambda r: normal(r, 3), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.var_grad(g, x, None, 1, False), (scalar, lambda r: normal(r, 5))),
    ],
    "srctrans.runtime.std_grad": [
        (lambda g, x: rt.std_grad(g, x, np.std(x, axis=0), 0, 0, False), (lambda r: normal(r, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.std_grad(g, x, np.std(x, ddof=1), None, 1, False), (scalar, lambda r: normal(r, 5))),
        (lambda g, x, a: rt.std_grad(g, x, a, 1, 1, False), (lambda r: normal(r, 3), lambda r: normal(r, 3, 4), lambda r: pos(r, 3))),
    ],
    # --- products -------------------------------------------------------------------------------
    "srctrans.runtime.dot_grad_x": [
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 2), lambda r: normal(r, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (scalar, lambda r: normal(r, 4), lambda r: normal(r, 4))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 4), scalar, lambda r: normal(r, 4))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4), scalar)),
        # x @ y with stacks of matrices
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 2, 3, 5), lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 2, 4, 5))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 2, 3, 5), lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4, 5))),
        (lambda g, x, y: rt.dot_grad_x(g, x, y), (lambda r: normal(r, 2, 5), lambda r: normal(r, 4), lambda r: normal(r, 2, 4, 5))),
    ],
    "srctrans.runtime.dot_grad_y": [
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 3), lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 2), lambda r: normal(r, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (scalar, lambda r: normal(r, 4), lambda r: normal(r, 4))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 4), scalar, lambda r: normal(r, 4))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4), scalar)),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 2, 3, 5), lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 2, 4, 5))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 2, 3, 5), lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4, 5))),
        (lambda g, x, y: rt.dot_grad_y(g, x, y), (lambda r: normal(r, 2, 5), lambda r: normal(r, 4), lambda r: normal(r, 2, 4, 5))),
    ],
    "srctrans.runtime.dot": [
        (lambda x, y: rt.dot(x, y), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x, y: rt.dot(x, y), (lambda r: normal(r, 4), lambda r: normal(r, 4))),
        (lambda x, y: rt.dot(x, y), (scalar, lambda r: normal(r, 3))),
        (lambda x, y: rt.dot(x, y), (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 2, 4, 5))),
    ],
    "srctrans.runtime.matmul": [
        (lambda x1, x2: rt.matmul(x1, x2), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x1, x2: rt.matmul(x1, x2), (lambda r: normal(r, 2, 3), lambda r: normal(r, 3))),
        (lambda x1, x2: rt.matmul(x1, x2), (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4, 2))),
    ],
    # --- elementwise ------------------------------------------------------------------------------
    "srctrans.runtime.xlogy": [
        (lambda a, b: rt.xlogy(a, b), (lambda r: normal(r, 3, 2), lambda r: pos(r, 2))),
        (lambda a, b: rt.xlogy(a, b), (scalar, lambda r: float(pos(r)))),
        (lambda a, b: rt.xlogy(a * ZEROS[1], b), (lambda r: normal(r, 4), lambda r: pos(r, 4))),
    ],
    "srctrans.runtime.sinc_grad": [(lambda x: rt.sinc_grad(x), (lambda r: normal(r, 4) + 0.05,))],
    "srctrans.runtime.digamma": [(lambda x: rt.digamma(x), (lambda r: pos(r, 4) + 0.5,))],
    # n-th derivatives (the series near 0 too)
    "srctrans.runtime.sinc_grad2": [(lambda x: rt.sinc_grad2(x), (lambda r: normal(r, 4) + 0.05,))],
    "srctrans.runtime.sinc_derivative": [
        (lambda x: rt.sinc_derivative(3, x), (lambda r: normal(r, 4) + 0.05,)),
        (lambda x: rt.sinc_derivative(2, x) * x, (lambda r: normal(r, 3) * 0.01,)),
        (lambda x: rt.sinc_derivative(5, x), (lambda r: float(normal(r)) + 3.0,)),
    ],
    "srctrans.runtime.trigamma": [(lambda x: rt.trigamma(x), (lambda r: pos(r, 4) + 0.5,))],
    "srctrans.runtime.polygamma": [
        (lambda x: rt.polygamma(2, x), (lambda r: pos(r, 4) + 0.5,)),
        (lambda x: rt.polygamma(4, x) * x, (lambda r: pos(r, 3) * 8.0,)),
    ],
    # --- adjoints of shape and linear-algebra functions ---------------------------------------------
    "srctrans.runtime.cumprod_grad": [
        (lambda g, x: rt.cumprod_grad(g, x, np.cumprod(x, 1), 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.cumprod_grad(g, x * ZEROS, np.cumprod(x * ZEROS, 0), 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.cumprod_grad(g, x * ZEROS, np.cumprod(x * ZEROS, 1), 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.cumprod_grad(g, x, np.cumprod(x), None), (lambda r: normal(r, 6), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.cumprod_jvp": [
        (lambda t, x: rt.cumprod_jvp(t, x, np.cumprod(x, 1), 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda t, x: rt.cumprod_jvp(t, x * ZEROS, np.cumprod(x * ZEROS, 1), 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda t, x: rt.cumprod_jvp(t, x, np.cumprod(x), None), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.linrec": [
        (lambda b, a: rt.linrec(b, a, 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda b, a: rt.linrec(b, a * ZEROS, 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda b, a: rt.linrec(b, a, None), (lambda r: normal(r, 6), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.linrec_rev": [
        (lambda b, a: rt.linrec_rev(b, a, 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda b, a: rt.linrec_rev(b, a * ZEROS, 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda b, a: rt.linrec_rev(b, a, None), (lambda r: normal(r, 6), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.shift_right": [
        (lambda z: rt.shift_right(z, 1, 1.0) * z, (lambda r: normal(r, 3, 4),)),
        (lambda z: rt.shift_right(z, None, 0.0), (lambda r: normal(r, 2, 3),)),
    ],
    "srctrans.runtime.shift_left": [
        (lambda z: rt.shift_left(z, 0) * z, (lambda r: normal(r, 3, 4),)),
        (lambda z: rt.shift_left(z, None), (lambda r: normal(r, 5),)),
    ],
    "srctrans.runtime.cumsum_grad": [
        (lambda g, x: rt.cumsum_grad(g, x, 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.cumsum_grad(g, x, None), (lambda r: normal(r, 6), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.diagonal_grad": [
        (lambda g, x: rt.diagonal_grad(g, x, 1, 0, 1), (lambda r: normal(r, 3), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.diagonal_grad(g, x, 0, 1, 2), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 3, 3))),
    ],
    "srctrans.runtime.moveaxis_grad": [
        (lambda g, x: rt.moveaxis_grad(g, x, 0, -1), (lambda r: normal(r, 3, 2, 4), lambda r: normal(r, 4, 3, 2))),
        (lambda g, x: rt.moveaxis_grad(g, x, (0, 1), (2, 0)), (lambda r: normal(r, 3, 2, 4), lambda r: normal(r, 4, 3, 2))),
    ],
    "srctrans.runtime.flip_grad": [
        (lambda g, x: rt.flip_grad(g, x, 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.flip_grad(g, x, None), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.diff_grad": [
        (lambda g, x: rt.diff_grad(g, x, 1, -1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 5))),
        (lambda g, x: rt.diff_grad(g, x, 2, 0), (lambda r: normal(r, 2, 4), lambda r: normal(r, 4, 4))),
    ],
    "srctrans.runtime.roll_grad": [
        (lambda g, x: rt.roll_grad(g, x, 5, None), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.roll_grad(g, x, -1, 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.tile_grad": [
        (lambda g, x: rt.tile_grad(g, x, (2, 1)), (lambda r: normal(r, 6, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.tile_grad(g, x, (3, 1)), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
    ],
    "srctrans.runtime.repeat_grad": [
        (lambda g, x: rt.repeat_grad(g, x, 2, 0), (lambda r: normal(r, 6, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.repeat_grad(g, x, REP, None), (lambda r: normal(r, 2), lambda r: normal(r, 3))),
    ],
    "srctrans.runtime.pad_tangent": [
        (lambda t: rt.pad_tangent(t, ((1, 0), (2, 1)), "constant") ** 2, (lambda r: normal(r, 3, 4),)),
        (lambda t: rt.pad_tangent(t, 1, "constant") * t[0], (lambda r: normal(r, 4),)),
    ],
    "srctrans.runtime.linspace_grad": [
        (lambda g, x: rt.linspace_grad(g, x, True, False), (lambda r: normal(r, 5), scalar)),
        (lambda g, x: rt.linspace_grad(g, x, False, True) * x, (lambda r: normal(r, 4, 3), lambda r: normal(r, 3))),
    ],
    "srctrans.runtime.linspace_spread": [
        (lambda u, g: rt.linspace_spread(u, g, True, True), (scalar, lambda r: normal(r, 5))),
        (lambda u, g: rt.linspace_spread(u, g, False, False) * g, (lambda r: normal(r, 3), lambda r: normal(r, 4, 3))),
    ],
    "srctrans.runtime.pad_grad": [
        (lambda g, x: rt.pad_grad(g, x, ((1, 0), (2, 1))), (lambda r: normal(r, 4, 7), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.pad_grad(g, x, 1), (lambda r: normal(r, 6), lambda r: normal(r, 4))),
    ],
    "srctrans.runtime.sort_grad": [
        (lambda g, x: rt.sort_grad(g, x, -1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.sort_grad(g, x, None), (lambda r: normal(r, 12), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.sort_grad(g, x, 0) * x, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.take_sorted": [
        (lambda u, x: rt.take_sorted(u, x, 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda u, x: rt.take_sorted(u, x, None) * x[0, 0], (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.take_grad": [
        (lambda g, x: rt.take_grad(g, x, REP, None), (lambda r: normal(r, 3), lambda r: normal(r, 2, 2))),
        (lambda g, x: rt.take_grad(g, x, REP, 1), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 4))),
    ],
    "srctrans.runtime.take_along_axis_grad": [
        (lambda g, x: rt.take_along_axis_grad(g, x, ALONG, 1), (lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 4))),
        (lambda g, x: rt.take_along_axis_grad(g, x, REP, None), (lambda r: normal(r, 3), lambda r: normal(r, 4))),
    ],
    "srctrans.runtime.inner_grad_x": [
        (lambda g, x, y: rt.inner_grad_x(g, x, y), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4))),
        (lambda g, x, y: rt.inner_grad_x(g, x, y), (scalar, lambda r: normal(r, 4), lambda r: normal(r, 4))),
    ],
    "srctrans.runtime.inner_grad_y": [
        (lambda g, x, y: rt.inner_grad_y(g, x, y), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4))),
        (lambda g, x, y: rt.inner_grad_y(g, x, y), (lambda r: normal(r, 2), lambda r: normal(r, 4), lambda r: normal(r, 2, 4))),
    ],
    "srctrans.runtime.tensordot_grad_x": [
        (lambda g, x, y: rt.tensordot_grad_x(g, x, y, 1), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x, y: rt.tensordot_grad_x(g, x, y, ((0, 2), (1, 0))), (lambda r: normal(r, 3, 5), lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4, 2, 5))),
    ],
    "srctrans.runtime.tensordot_grad_y": [
        (lambda g, x, y: rt.tensordot_grad_y(g, x, y, 1), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x, y: rt.tensordot_grad_y(g, x, y, ((0, 2), (1, 0))), (lambda r: normal(r, 3, 5), lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 4, 2, 5))),
    ],
    "srctrans.runtime.einsum": [
        (lambda x, y: rt.einsum("ij,jk->ik", x, y, None), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda x: rt.einsum("ii->i", x, None, None) * x[0], (lambda r: normal(r, 3, 3),)),
        (lambda x, y, z: rt.einsum("ij,j,k", x, y, z), (lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: normal(r, 2))),
    ],
    "srctrans.runtime.einsum_grad_x": [
        (lambda g, x, y: rt.einsum_grad_x("ij,jk->ik", g, x, y, None), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4, 2))),
        (lambda g, x: rt.einsum_grad_x("ii->i", g, x, None, None) * x[0], (lambda r: normal(r, 3), lambda r: normal(r, 3, 3))),
        (lambda g, x, y, z: rt.einsum_grad_x("ij,j,k", g, x, y, z), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: normal(r, 2))),
    ],
    "srctrans.runtime.einsum_grad_y": [
        (lambda g, x, y: rt.einsum_grad_y("ij,kj->ik", g, x, y, None), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4))),
        (lambda g, x, y, z: rt.einsum_grad_y("ij,j,k", g, x, y, z), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: normal(r, 2))),
    ],
    "srctrans.runtime.einsum_grad_z": [
        (lambda g, x, y, z: rt.einsum_grad_z("ij,j,k", g, x, y, z) * z, (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: normal(r, 2))),
    ],
    "srctrans.runtime.solve_grad_b": [
        (lambda g, a, b: rt.solve_grad_b(g, a, b), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3, 2))),
        (lambda g, a, b: rt.solve_grad_b(g, a, b), (lambda r: normal(r, 3), lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3))),
        (lambda g, a, b: rt.solve_grad_b(g, a, b), (lambda r: normal(r, 2, 3, 2), lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 2, 3, 2))),
        (lambda g, a, b: rt.solve_grad_b(g, a, b), (lambda r: normal(r, 2, 3), lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 3))),
    ],
    "srctrans.runtime.norm_grad": [
        (lambda g, x: rt.norm_grad(g, x, np.linalg.norm(x, None, 1), None, 1, False), (lambda r: normal(r, 3), lambda r: normal(r, 3, 4))),
        (lambda g, x, a: rt.norm_grad(g, x, a, None, None, False), (scalar, lambda r: normal(r, 3, 4), lambda r: float(pos(r)))),
        (lambda g, x, a: rt.norm_grad(g, x, a, None, 0, True), (lambda r: normal(r, 1, 4), lambda r: normal(r, 3, 4), lambda r: pos(r, 1, 4))),
    ],
    "srctrans.runtime.norm_ord_once": [
        (lambda x: rt.norm_grad(1.0, x, np.linalg.norm(x, 2), rt.norm_ord_once(2, x, None), None, False), (lambda r: normal(r, 4),)),
    ],
    "srctrans.runtime.logsumexp_grad": [
        (lambda g, x, a: rt.logsumexp_grad(g, x, a, 0, False, None), (lambda r: normal(r, 4), lambda r: normal(r, 3, 4), lambda r: normal(r, 4))),
        (lambda g, x, a: rt.logsumexp_grad(g, x, a, None, False, None), (scalar, lambda r: normal(r, 5), lambda r: float(normal(r)))),
    ],
    # --- the pieces of a joined array and the joined pieces ---------------------------------
    "srctrans.runtime.array_grad": [
        (_array_grad_spec, (lambda r: normal(r, 2, 4), lambda r: normal(r, 4), lambda r: normal(r, 4))),
        (_array_grad_of_an_array_spec, (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 2))),
    ],
    "srctrans.runtime.stack_grad": [(_stack_grad_spec, (lambda r: normal(r, 3, 2, 4), lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4)))],
    "srctrans.runtime.concatenate_grad": [
        (_concatenate_grad_spec, (lambda r: normal(r, 3, 6), lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 2))),
        (_concatenate_grad_flat_spec, (lambda r: normal(r, 10), lambda r: normal(r, 2, 2), lambda r: normal(r, 3, 2))),
    ],
    "srctrans.runtime.hstack_grad": [(_hstack_grad_spec, (lambda r: normal(r, 6), lambda r: normal(r, 4), lambda r: normal(r, 2)))],
    "srctrans.runtime.vstack_grad": [(_vstack_grad_spec, (lambda r: normal(r, 3, 4), lambda r: normal(r, 4), lambda r: normal(r, 2, 4)))],
    "srctrans.runtime.split_grad": [(_split_grad_spec, (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 2)))],
    # --- linear algebra -------------------------------------------------------------------------
    "srctrans.runtime.matrix_transpose": [
        (lambda x: rt.matrix_transpose(x) * x, (lambda r: normal(r, 3, 3),)),
        (lambda x: rt.matrix_transpose(x), (lambda r: normal(r, 2, 3, 4),)),
    ],
    "srctrans.runtime.c_column": [
        (lambda x: rt.c_column(x) * x[:, None], (lambda r: normal(r, 4),)),
        (lambda x: rt.c_column(x) * x, (lambda r: normal(r, 3, 2),)),
    ],
    "srctrans.runtime.half_tril": [
        (lambda m: rt.half_tril(m) * m, (lambda r: normal(r, 3, 3),)),
        (lambda m: rt.half_tril(m) * m, (lambda r: normal(r, 2, 3, 3),)),
    ],
    "srctrans.runtime.half_tril_sym": [
        (lambda m: rt.half_tril_sym(m) * m, (lambda r: normal(r, 3, 3),)),
        (lambda m: rt.half_tril_sym(m) * m, (lambda r: normal(r, 2, 3, 3),)),
    ],
    "srctrans.runtime.sym_half_tril": [
        (lambda m: rt.sym_half_tril(m) * m, (lambda r: normal(r, 3, 3),)),
        (lambda m: rt.sym_half_tril(m) * m, (lambda r: normal(r, 2, 3, 3),)),
    ],
    # --- linear algebra (issue 20) ---
    "srctrans.runtime.put_block": [
        (lambda x: rt.put_block(x, (0, 1)) * rt.put_block(x * x, (0, 1)), (lambda r: normal(r, 3, 2),)),
        (lambda x: rt.put_block(x, (1, 1)) + rt.put_block(x, (0, 0)), (lambda r: normal(r, 2, 3, 3),)),
    ],
    "srctrans.runtime.block_of": [
        (lambda m: rt.block_of(m, (0, 1)) * rt.block_of(m * m, (1, 0)), (lambda r: normal(r, 4, 6),)),
        (lambda m: rt.block_of(m, (1, 1)) ** 2, (lambda r: normal(r, 2, 4, 4),)),
    ],
    "srctrans.runtime.slogdet_grad": [
        (lambda s, logdet, x: rt.slogdet_grad((s, logdet), x), (scalar, scalar, lambda r: normal(r, 3, 3) + 3.0 * np.eye(3))),
        (lambda s, logdet, x: rt.slogdet_grad((s, logdet), x), (lambda r: normal(r, 2), lambda r: normal(r, 2), lambda r: wellposed(r, 2, 3, 3))),
    ],
    # one number per matrix
    "srctrans.runtime.scale_matrices": [
        (lambda s, m: rt.scale_matrices(s, m), (scalar, lambda r: normal(r, 3, 3))),
        (lambda s, m: rt.scale_matrices(s, m), (lambda r: normal(r, 2), lambda r: normal(r, 2, 3, 3))),
        (lambda s, m: rt.scale_matrices(s, m), (lambda r: normal(r, 2), lambda r: normal(r, 3, 3))),  # one matrix, scaled twice
    ],
    "srctrans.runtime.matrix_inner": [
        (lambda a, b: rt.matrix_inner(a, b), (lambda r: normal(r, 3, 3), lambda r: normal(r, 3, 3))),
        (lambda a, b: rt.matrix_inner(a, b) * a[:, 0, 0], (lambda r: normal(r, 2, 3, 4), lambda r: normal(r, 2, 3, 4))),
        (lambda a, b: rt.matrix_inner(a, b), (lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 3, 4))),
    ],
    "srctrans.runtime.zeros_per_matrix": [
        (lambda x: np.linalg.det(x) + rt.zeros_per_matrix(x), (lambda r: wellposed(r, 3, 3),)),
        (lambda x: np.linalg.det(x) + rt.zeros_per_matrix(x), (lambda r: wellposed(r, 2, 3, 3),)),
    ],
    "srctrans.runtime.trace_grad": [
        (lambda g, x: rt.trace_grad(g, x, 0, 0, 1), (scalar, lambda r: normal(r, 3, 3))),
        (lambda g, x: rt.trace_grad(g, x, 1, 0, 1) * x, (scalar, lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.trace_grad(g, x, -1, 1, 2), (lambda r: normal(r, 2), lambda r: normal(r, 2, 3, 4))),
    ],
    # a vector b is one column for every matrix of a stack a
    "srctrans.runtime.as_columns": [
        (lambda v, b: rt.as_columns(v, b), (lambda r: normal(r, 2, 3), lambda r: normal(r, 3))),
        (lambda v, b: rt.as_columns(v, b), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 2))),
        (lambda v, b: rt.as_columns(v, b) * v[0, 0, 0], (lambda r: normal(r, 2, 2, 3), lambda r: normal(r, 3))),
    ],
    "srctrans.runtime.from_columns": [
        (lambda m, b: rt.from_columns(m, b), (lambda r: normal(r, 2, 3, 1), lambda r: normal(r, 3))),
        (lambda m, b: rt.from_columns(m, b), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 2))),
    ],
    "srctrans.runtime.solve_grad_a": [
        (lambda g, a, b: rt.solve_grad_a(g, a, b, np.linalg.solve(a, b)), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3, 2))),
        (lambda g, a, b: rt.solve_grad_a(g, a, b, np.linalg.solve(a, b)), (lambda r: normal(r, 3), lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3))),
        (lambda g, a, v: rt.solve_grad_a(g, a, v, v * 2.0), (lambda r: normal(r, 3, 2), lambda r: normal(r, 3, 3) + 3.0 * np.eye(3), lambda r: normal(r, 3, 2))),
        (lambda g, a, b: rt.solve_grad_a(g, a, b, np.linalg.solve(a, b)), (lambda r: normal(r, 2, 3, 2), lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 2, 3, 2))),
        (lambda g, a, b: rt.solve_grad_a(g, a, b, np.linalg.solve(a, b)), (lambda r: normal(r, 2, 3), lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 3))),
        (lambda g, a, v, w: rt.solve_grad_a(g, a, v, w), (lambda r: normal(r, 2, 3), lambda r: wellposed(r, 2, 3, 3), lambda r: normal(r, 3), lambda r: normal(r, 2, 3))),
    ],
}


# --- array functions and reductions (issue 20) ---
CONDS = [np.array([True, False, True, False]), np.array([[True], [False], [True]])]  # broadcast to (3, 4)
XP = np.array([-1.0, -0.2, 0.5, 0.9, 2.0])
XS = np.array([-1.5, -1.0, -0.6, 0.0, 0.5, 0.7, 1.9, 2.0, 2.5])


def _column_stack_grad_spec(g, x, y):
    a, b = rt.column_stack_grad(g, [x, y])
    return np.sum(a * a) + np.sum(b * 3.0)


def _select_grad_spec(g, x, y):
    a, b = rt.select_grad(g, CONDS, [x, y])
    return np.sum(a * a) + np.sum(b * b * b)


def _gradient_grad_spec(p, q, f):
    return rt.gradient_grad((p, q * q), f, 0.3, None, 2) ** 2


XC = np.array([0.0, 0.4, 1.1, 1.5, 2.6])


RUNTIME_SPECS.update({
    "srctrans.runtime.append_grad_arr": [
        (lambda g, a, v: rt.append_grad_arr(g, a, v, None), (lambda r: normal(r, 10), lambda r: normal(r, 2, 3), lambda r: normal(r, 4))),
        (lambda g, a, v: rt.append_grad_arr(g, a, v, 1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 1), lambda r: normal(r, 3, 3))),
    ],
    "srctrans.runtime.append_grad_values": [
        (lambda g, a, v: rt.append_grad_values(g, a, v, None), (lambda r: normal(r, 10), lambda r: normal(r, 2, 3), lambda r: normal(r, 4))),
        (lambda g, a, v: rt.append_grad_values(g, a, v, 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 2, 4), lambda r: normal(r, 1, 4))),
    ],
    "srctrans.runtime.column_stack_grad": [(_column_stack_grad_spec, (lambda r: normal(r, 3, 3), lambda r: normal(r, 3), lambda r: normal(r, 3, 2)))],
    "srctrans.runtime.kron_grad_a": [
        (lambda g, a, b: rt.kron_grad_a(g, a, b), (lambda r: normal(r, 4, 6), lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 2))),
        (lambda g, a, b: rt.kron_grad_a(g, a, b), (lambda r: normal(r, 2, 6), lambda r: normal(r, 2), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.kron_grad_b": [
        (lambda g, a, b: rt.kron_grad_b(g, a, b), (lambda r: normal(r, 4, 6), lambda r: normal(r, 2, 3), lambda r: normal(r, 2, 2))),
        (lambda g, a, b: rt.kron_grad_b(g, a, b), (lambda r: normal(r, 6), lambda r: normal(r, 3), lambda r: normal(r, 2))),
    ],
    "srctrans.runtime.rollaxis_grad": [
        (lambda g, x: rt.rollaxis_grad(g, x, 2, 0), (lambda r: normal(r, 4, 2, 3), lambda r: normal(r, 2, 3, 4))),
        (lambda g, x: rt.rollaxis_grad(g, x, 0, 3), (lambda r: normal(r, 3, 4, 2), lambda r: normal(r, 2, 3, 4))),
    ],
    "srctrans.runtime.select_grad": [(_select_grad_spec, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4), lambda r: normal(r, 4)))],
    "srctrans.runtime.select_default": [(lambda g: rt.select_default(CONDS, g) * 2.0, (lambda r: normal(r, 3, 4),))],
    "srctrans.runtime.average_weights": [
        (lambda w, a: rt.average_weights(w, a, 1, False) * a, (lambda r: normal(r, 4), lambda r: normal(r, 3, 4))),
        (lambda w, a: rt.average_weights(w, a, None, False) ** 2, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.median_grad": [
        (lambda g, x: rt.median_grad(g, x, None, False), (scalar, lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.median_grad(g, x, 0, False), (lambda r: normal(r, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.median_grad(g, x, 1, True), (lambda r: normal(r, 3, 1), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.permutation_grad": [
        (lambda g, x: rt.permutation_grad(g, x, np.partition(x, 1), -1), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.permutation_grad(g, x, np.partition(x, 4, axis=None), None), (lambda r: normal(r, 12), lambda r: normal(r, 3, 4))),
        (lambda g, x: rt.permutation_grad(g, x, np.partition(x, 1, axis=0), 0), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.convolve_grad": [
        (lambda g, v: rt.convolve_grad(g, v, "full"), (lambda r: normal(r, 7), lambda r: normal(r, 3))),
        (lambda g, v: rt.convolve_grad(g, v, "full") ** 2, (lambda r: normal(r, 5), lambda r: normal(r, 4))),
    ],
    "srctrans.runtime.gradient_grad": [
        (lambda g, f: rt.gradient_grad(g, f, 1.0, None, 1), (lambda r: normal(r, 5), lambda r: normal(r, 5))),
        (lambda g, f: rt.gradient_grad(g, f, XC, None, 2) ** 2, (lambda r: normal(r, 5), lambda r: normal(r, 5))),
        (_gradient_grad_spec, (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
        (lambda g, f: rt.gradient_grad(g, f, 0.5, -1, 2), (lambda r: normal(r, 3, 4), lambda r: normal(r, 3, 4))),
    ],
    "srctrans.runtime.interp_grad": [
        (lambda g, fp: rt.interp_grad(g, XS, XP, fp, None, None, None), (lambda r: normal(r, 9), lambda r: normal(r, 5))),
        (lambda g, fp: rt.interp_grad(g, XS, XP, fp, -1.0, 2.0, None) * fp, (lambda r: normal(r, 9), lambda r: normal(r, 5))),
        (lambda g, fp: rt.interp_grad(g, 0.3, XP, fp, None, None, None), (scalar, lambda r: normal(r, 5))),
    ],
    "srctrans.runtime.interp_linear": [
        (lambda u: rt.interp_linear(XS, XP, u, None, None, None), (lambda r: normal(r, 5),)),
        (lambda u: rt.interp_linear(XS, XP, u, 1.0, -1.0, None) ** 2, (lambda r: normal(r, 5),)),
    ],
})

# the helpers of scipy.special's Bessel functions and their kin: each one's derivative is itself
# (or its family) again
RUNTIME_SPECS.update({
    "srctrans.runtime.jv": [(lambda x: rt.jv(1.5, x), (lambda r: pos(r, 4) * 2.0,)), (lambda x: rt.jv(-1.0, x), (lambda r: normal(r, 3, 2),))],
    "srctrans.runtime.yv": [(lambda x: rt.yv(2.0, x), (lambda r: pos(r, 4) * 2.0,))],
    "srctrans.runtime.yn": [(lambda x: rt.yn(2, x), (lambda r: pos(r, 4) * 2.0,))],
    "srctrans.runtime.iv": [(lambda x: rt.iv(0.5, x), (lambda r: pos(r, 4),))],
    "srctrans.runtime.ive": [(lambda x: rt.ive(1.0, x), (lambda r: normal(r, 4) * 2.0,))],
    "srctrans.runtime.kv": [(lambda x: rt.kv(1.0, x), (lambda r: pos(r, 4),))],
    "srctrans.runtime.kve": [(lambda x: rt.kve(0.0, x), (lambda r: pos(r, 4),))],
    "srctrans.runtime.gammaln": [(lambda x: rt.gammaln(x), (lambda r: pos(r, 4) + 0.5,))],
    "srctrans.runtime.erf": [(lambda x: rt.erf(x), (lambda r: normal(r, 4),))],
    "srctrans.runtime.expm": [(lambda x: rt.expm(x), (lambda r: 0.5 * normal(r, 3, 3),))],
    "srctrans.runtime.solve_sylvester": [
        (lambda a, b, q: rt.solve_sylvester(a, b, q), (lambda r: wellposed(r, 2, 2), lambda r: wellposed(r, 3, 3), lambda r: normal(r, 2, 3))),
    ],
    "srctrans.runtime.zeta": [(lambda q: rt.zeta(4.0, q), (lambda r: pos(r, 4),))],
    "srctrans.runtime.hyp1f1": [(lambda x: rt.hyp1f1(1.5, 2.5, x), (lambda r: normal(r, 4),))],
    "srctrans.runtime.hyp2f1": [(lambda x: rt.hyp2f1(1.5, 2.0, 2.5, x), (lambda r: pos(r, 4) * 0.5,))],
    "srctrans.runtime.multipolygamma": [(lambda a: rt.multipolygamma(1, a, 2), (lambda r: pos(r, 4) + 1.0,))],
})
