"""Derivative rules: one line per operation, read by reverse mode (and forward mode).

Templates are Python expressions over the operation's parameters in braces
(``{x}``, ``{y}``, ``{axis}``), the result ``{ans}`` and, in vector-Jacobian
templates, the incoming adjoint ``{g}``. Runtime helpers (``unbroadcast``,
``sum_grad`` ...) come from :mod:`srctrans.runtime`, imported as ``rt``.

Constructors:

``elementwise(*partials)``
    Elementwise functions: one partial derivative per argument (``None`` where the
    argument is not differentiable). Reverse mode emits
    ``x_bar += unbroadcast(g * partial, x)``; forward mode emits
    ``ans_dot = partial * x_dot + ...``: the partials are written once for both.
``vjp(signature, jvp=..., **templates)``
    Any other differentiable function: its parameters (with defaults) and, for each
    differentiable parameter, the expression of its adjoint contribution. ``accumulate``
    (optional) gives, per parameter, a statement that adds that contribution into
    ``{sink}`` in place, which a loop uses for a value it reads but never changes
    (``W @ h`` in a recurrence adds into ``W_loop_bar`` with no temporaries). ``jvp`` gives
    forward mode's tangent: ``LINEAR`` (the function is linear in its differentiable
    parameters together: the tangent is the same call with each of them replaced by its
    tangent, zeros for the constant ones), ``MULTILINEAR`` (linear in each separately:
    the sum, over the varying parameters, of the call with that one replaced by its
    tangent), or ``{param: template}``, whose terms are summed, ``{t}`` being that
    parameter's tangent. Without ``jvp``, forward mode refuses the function.
``nondiff(signature)``
    Results that carry no derivative with respect to any argument: piecewise constant
    (comparisons, ``argmax``, ``floor``) or reading only shapes (``zeros_like``). Their outputs
    are constants for differentiation.
``constant_only(signature)``
    Functions differentiated with respect to none of their arguments although their values
    move with them (``np.arange(start, stop, step)``): constant arguments give a constant
    result; a differentiated argument is refused at its line (NoDerivativeError), never
    taken for a constant.

Every argument of a ``vjp`` or ``elementwise`` rule that is not read only for its shape
(``SHAPE_ONLY``) needs a template: reverse and forward mode refuse a differentiated argument
without one.
"""

from __future__ import annotations

from .model import LINEAR, MULTILINEAR, Param, Rule, constant_only, elementwise, nondiff, parse_signature, vjp


def _reduction_jvp(helper: str, rest: str) -> dict[str, str]:
    """A reduction whose adjoint is ``expand(g) * K(x)``: its tangent is ``sum_to(t * K(x))``."""
    return {"x": f"rt.sum_to({{t}} * rt.{helper}(rt.ones_like({{ans}}), {{x}}, {rest}), {{ans}}, {{axis}}, {{keepdims}})"}


# Python operators map onto the NumPy functions with the same meaning.
OPERATORS: dict[str, str] = {
    "Add": "numpy.add",
    "Subtract": "numpy.subtract",
    "Multiply": "numpy.multiply",
    "Divide": "numpy.divide",
    "Power": "numpy.power",
    "FloorDivide": "numpy.floor_divide",
    "Modulo": "numpy.remainder",
    "MatrixMultiply": "numpy.matmul",
    "Minus": "numpy.negative",
    "Plus": "numpy.positive",
}

_DOT_ADD = dict(x="{sink} = rt.dot_grad_x_add({sink}, {g}, {x}, {y})")  # W @ h: the outer product, added in place

DERIVATIVES: dict[str, Rule] = {
    # --- binary arithmetic ------------------------------------------------------
    "numpy.add": elementwise("1.0", "1.0"),
    "numpy.subtract": elementwise("1.0", "-1.0"),
    "numpy.multiply": elementwise("{y}", "{x}"),
    "numpy.divide": elementwise("1.0 / {y}", "-{ans} / {y}"),
    "numpy.true_divide": elementwise("1.0 / {y}", "-{ans} / {y}"),
    "numpy.power": elementwise("{y} * {x} ** ({y} - 1.0)", "rt.xlogy({ans}, {x})"),
    "numpy.float_power": elementwise("{y} * {x} ** ({y} - 1.0)", "rt.xlogy({ans}, {x})"),
    "numpy.floor_divide": nondiff("x, y"),
    "numpy.remainder": elementwise("1.0", "-np.floor({x} / {y})"),
    "numpy.maximum": elementwise("rt.ge_mask({x}, {y})", "1.0 - rt.ge_mask({x}, {y})"),
    "numpy.minimum": elementwise("rt.le_mask({x}, {y})", "1.0 - rt.le_mask({x}, {y})"),
    "numpy.fmax": elementwise("rt.ge_mask({x}, {y})", "1.0 - rt.ge_mask({x}, {y})"),
    "numpy.fmin": elementwise("rt.le_mask({x}, {y})", "1.0 - rt.le_mask({x}, {y})"),
    "numpy.hypot": elementwise("{x} / {ans}", "{y} / {ans}"),
    "numpy.arctan2": elementwise("{y} / ({x} * {x} + {y} * {y})", "-{x} / ({x} * {x} + {y} * {y})"),
    "numpy.logaddexp": elementwise("np.exp({x} - {ans})", "np.exp({y} - {ans})"),
    "numpy.logaddexp2": elementwise("np.exp2({x} - {ans})", "np.exp2({y} - {ans})"),
    # --- unary elementwise ------------------------------------------------------
    "numpy.negative": elementwise("-1.0"),
    "numpy.positive": elementwise("1.0"),
    "numpy.square": elementwise("2.0 * {x}"),
    "numpy.sqrt": elementwise("0.5 / {ans}"),
    "numpy.cbrt": elementwise("1.0 / (3.0 * {ans} * {ans})"),
    "numpy.reciprocal": elementwise("-{ans} * {ans}"),
    "numpy.exp": elementwise("{ans}"),
    "numpy.exp2": elementwise("{ans} * 0.6931471805599453"),
    "numpy.expm1": elementwise("{ans} + 1.0"),
    "numpy.log": elementwise("1.0 / {x}"),
    "numpy.log2": elementwise("1.0 / ({x} * 0.6931471805599453)"),
    "numpy.log10": elementwise("1.0 / ({x} * 2.302585092994046)"),
    "numpy.log1p": elementwise("1.0 / (1.0 + {x})"),
    "numpy.sin": elementwise("np.cos({x})"),
    "numpy.cos": elementwise("-np.sin({x})"),
    "numpy.tan": elementwise("1.0 + {ans} * {ans}"),
    "numpy.arcsin": elementwise("1.0 / np.sqrt(1.0 - {x} * {x})"),
    "numpy.arccos": elementwise("-1.0 / np.sqrt(1.0 - {x} * {x})"),
    "numpy.arctan": elementwise("1.0 / (1.0 + {x} * {x})"),
    "numpy.sinh": elementwise("np.cosh({x})"),
    "numpy.cosh": elementwise("np.sinh({x})"),
    "numpy.tanh": elementwise("1.0 - {ans} * {ans}"),
    "numpy.arcsinh": elementwise("1.0 / np.sqrt({x} * {x} + 1.0)"),
    "numpy.arccosh": elementwise("1.0 / np.sqrt({x} * {x} - 1.0)"),
    "numpy.arctanh": elementwise("1.0 / (1.0 - {x} * {x})"),
    "numpy.abs": elementwise("np.sign({x})"),
    "numpy.absolute": elementwise("np.sign({x})"),
    "numpy.fabs": elementwise("np.sign({x})"),
    "numpy.deg2rad": elementwise("0.017453292519943295"),
    "numpy.rad2deg": elementwise("57.29577951308232"),
    "numpy.radians": elementwise("0.017453292519943295"),
    "numpy.degrees": elementwise("57.29577951308232"),
    # of real input (the only kind differentiated): the number itself, or its zero imaginary part
    "numpy.real": elementwise("1.0"),
    "numpy.conj": elementwise("1.0"),
    "numpy.conjugate": elementwise("1.0"),
    "numpy.imag": elementwise("0.0"),
    "numpy.sinc": elementwise("rt.sinc_grad({x})"),
    # (NumPy 2's min= and max= in the place of a_min and a_max: the other pair is None)
    "numpy.clip": Rule(
        "elementwise", parse_signature("x, a_min=None, a_max=None, out=None, min=None, max=None"),
        {"x": "rt.inside_mask({x}, {a_min}, {a_max}) * rt.inside_mask({x}, {min}, {max})"},
    ),
    # --- Python builtins and math -----------------------------------------------
    "builtins.abs": elementwise("np.sign({x})"),
    "builtins.max": elementwise("rt.ge_mask({x}, {y})", "1.0 - rt.ge_mask({x}, {y})"),
    "builtins.min": elementwise("rt.le_mask({x}, {y})", "1.0 - rt.le_mask({x}, {y})"),
    "builtins.float": elementwise("1.0"),
    "math.sin": elementwise("math.cos({x})"),
    "math.cos": elementwise("-math.sin({x})"),
    "math.tan": elementwise("1.0 + {ans} * {ans}"),
    "math.exp": elementwise("{ans}"),
    "math.log": elementwise("1.0 / {x}"),
    "math.sqrt": elementwise("0.5 / {ans}"),
    "math.tanh": elementwise("1.0 - {ans} * {ans}"),
    "math.atan": elementwise("1.0 / (1.0 + {x} * {x})"),
    "math.erf": elementwise("1.1283791670955126 * math.exp(-{x} * {x})"),
    "math.lgamma": elementwise("rt.digamma({x})"),
    "math.pow": elementwise("{y} * {x} ** ({y} - 1.0)", "rt.xlogy({ans}, {x})"),
    "math.fabs": elementwise("np.sign({x})"),
    "math.hypot": elementwise("{x} / {ans}", "{y} / {ans}"),
    "scipy.special.expit": elementwise("{ans} * (1.0 - {ans})"),
    "scipy.special.erf": elementwise("1.1283791670955126 * np.exp(-{x} * {x})"),
    "scipy.special.gammaln": elementwise("rt.digamma({x})"),
    # --- reductions -------------------------------------------------------------
    "numpy.sum": vjp("x, axis=None, dtype=None, out=None, keepdims=False", jvp=LINEAR, x="rt.sum_grad({g}, {x}, {axis}, {keepdims})"),
    "numpy.mean": vjp("x, axis=None, dtype=None, out=None, keepdims=False", jvp=LINEAR, x="rt.mean_grad({g}, {x}, {axis}, {keepdims})"),
    "numpy.max": vjp("x, axis=None, out=None, keepdims=False", jvp=_reduction_jvp("extremum_grad", "{ans}, {axis}, {keepdims}"), x="rt.extremum_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    "numpy.min": vjp("x, axis=None, out=None, keepdims=False", jvp=_reduction_jvp("extremum_grad", "{ans}, {axis}, {keepdims}"), x="rt.extremum_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    "numpy.amax": vjp("x, axis=None, out=None, keepdims=False", jvp=_reduction_jvp("extremum_grad", "{ans}, {axis}, {keepdims}"), x="rt.extremum_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    "numpy.amin": vjp("x, axis=None, out=None, keepdims=False", jvp=_reduction_jvp("extremum_grad", "{ans}, {axis}, {keepdims}"), x="rt.extremum_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    "numpy.prod": vjp("x, axis=None, dtype=None, out=None, keepdims=False", jvp=_reduction_jvp("prod_grad", "{ans}, {axis}, {keepdims}"), x="rt.prod_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    "numpy.var": vjp("x, axis=None, dtype=None, out=None, ddof=0, keepdims=False", jvp=_reduction_jvp("var_grad", "{axis}, {ddof}, {keepdims}"), x="rt.var_grad({g}, {x}, {axis}, {ddof}, {keepdims})"),
    "numpy.std": vjp("x, axis=None, dtype=None, out=None, ddof=0, keepdims=False", jvp=_reduction_jvp("std_grad", "{ans}, {axis}, {ddof}, {keepdims}"), x="rt.std_grad({g}, {x}, {ans}, {axis}, {ddof}, {keepdims})"),
    "numpy.cumsum": vjp("x, axis=None, dtype=None, out=None", jvp=LINEAR, x="rt.cumsum_grad({g}, {x}, {axis})"),
    "numpy.cumprod": vjp("x, axis=None, dtype=None, out=None", jvp=dict(x="rt.cumprod_jvp({t}, {x}, {ans}, {axis})"), x="rt.cumprod_grad({g}, {x}, {ans}, {axis})"),
    "scipy.special.logsumexp": vjp("x, axis=None, b=None, keepdims=False", jvp=_reduction_jvp("logsumexp_grad", "{ans}, {axis}, {keepdims}, {b}"), x="rt.logsumexp_grad({g}, {x}, {ans}, {axis}, {keepdims}, {b})"),
    # --- linear algebra -----------------------------------------------------------
    "numpy.dot": vjp("x, y", jvp=MULTILINEAR, accumulate=_DOT_ADD, x="rt.dot_grad_x({g}, {x}, {y})", y="rt.dot_grad_y({g}, {x}, {y})"),
    "numpy.matmul": vjp("x, y", jvp=MULTILINEAR, accumulate=_DOT_ADD, x="rt.dot_grad_x({g}, {x}, {y})", y="rt.dot_grad_y({g}, {x}, {y})"),
    "numpy.outer": vjp(
        "x, y", jvp=MULTILINEAR,
        x="np.reshape(np.dot({g}, np.ravel({y})), np.shape({x}))",
        y="np.reshape(np.dot(np.ravel({x}), {g}), np.shape({y}))",
    ),
    # (both flattened: each adjoint in its own shape)
    "numpy.vdot": vjp(
        "x, y", jvp=MULTILINEAR,
        x="rt.unbroadcast(np.reshape({g} * np.ravel({y}), np.shape({x})), {x})",
        y="rt.unbroadcast(np.reshape({g} * np.ravel({x}), np.shape({y})), {y})",
    ),
    "numpy.trace": vjp("x, offset=0, axis1=0, axis2=1", jvp=LINEAR, x="rt.trace_grad({g}, {x}, {offset}, {axis1}, {axis2})"),
    # np.linalg on a stack of matrices (..., n, n) works matrix by matrix: the rules transpose the
    # last two axes only (rt.matrix_transpose) and take one number per matrix (rt.scale_matrices,
    # rt.matrix_inner: a determinant's adjoint and tangent)
    "numpy.linalg.inv": vjp(
        "x", jvp=dict(x="-({ans} @ {t} @ {ans})"), x="-(rt.matrix_transpose({ans}) @ {g} @ rt.matrix_transpose({ans}))"
    ),
    "numpy.linalg.det": vjp(
        "x",
        jvp=dict(x="{ans} * rt.matrix_inner(rt.matrix_transpose(np.linalg.inv({x})), {t})"),
        x="rt.scale_matrices({g} * {ans}, rt.matrix_transpose(np.linalg.inv({x})))",
    ),
    # two results: {g} is the pair of their adjoints (sign, log|det|) / one adjoint per piece
    "numpy.linalg.slogdet": vjp(
        "x",
        jvp=dict(x="(rt.zeros_per_matrix({x}), rt.matrix_inner(rt.matrix_transpose(np.linalg.inv({x})), {t}))"),
        x="rt.slogdet_grad({g}, {x})",
    ),
    "numpy.split": vjp("x, indices_or_sections, axis=0", jvp=LINEAR, x="rt.split_grad({g}, {axis})"),
    "numpy.inner": vjp("x, y", jvp=MULTILINEAR, x="rt.inner_grad_x({g}, {x}, {y})", y="rt.inner_grad_y({g}, {x}, {y})"),
    "numpy.tensordot": vjp("x, y, axes=2", jvp=MULTILINEAR, x="rt.tensordot_grad_x({g}, {x}, {y}, {axes})", y="rt.tensordot_grad_y({g}, {x}, {y}, {axes})"),
    "numpy.einsum": vjp(  # one to three operands
        "subscripts, x, y=None, z=None", jvp=MULTILINEAR,
        x="rt.einsum_grad_x({subscripts}, {g}, {x}, {y}, {z})",
        y="rt.einsum_grad_y({subscripts}, {g}, {x}, {y}, {z})",
        z="rt.einsum_grad_z({subscripts}, {g}, {x}, {y}, {z})",
    ),
    # a vector b is one column for every matrix of a stack a (rt.as_columns, rt.from_columns)
    "numpy.linalg.solve": vjp(
        "a, b",
        jvp=dict(a="rt.from_columns(-np.linalg.solve({a}, {t} @ rt.as_columns({ans}, {b})), {b})", b="np.linalg.solve({a}, {t})"),
        a="rt.solve_grad_a({g}, {a}, {b}, {ans})",
        b="rt.solve_grad_b({g}, {a}, {b})",
    ),
    # L = cholesky(x) reads x's lower triangle. Tangent: L phi(L^-1 T L^-T), T the symmetric matrix with
    # t's lower triangle; adjoint: phi(S + S.T), S = L^-T phi(L^T g) L^-1 (phi: rt.half_tril). Written
    # with solve, so that they are differentiated again like any other code
    "numpy.linalg.cholesky": vjp(
        "x",
        jvp=dict(x="{ans} @ rt.half_tril(np.linalg.solve({ans}, rt.matrix_transpose(np.linalg.solve({ans}, rt.sym_half_tril({t})))))"),
        x="rt.half_tril_sym(np.linalg.solve(rt.matrix_transpose({ans}), "
        "rt.matrix_transpose(np.linalg.solve(rt.matrix_transpose({ans}), rt.half_tril(rt.matrix_transpose({ans}) @ {g})))))",
    ),
    "numpy.linalg.norm": vjp("x, ord=None, axis=None, keepdims=False", jvp=_reduction_jvp("norm_grad", "{ans}, {ord}, {axis}, {keepdims}"), x="rt.norm_grad({g}, {x}, {ans}, {ord}, {axis}, {keepdims})"),
    # --- linear algebra (issue 20) ---
    # P = pinv(A), for A of constant rank (full rank, or rcond cutting the same singular values):
    # dP = -P dA P + P P.T dA.T (I - A P) + (I - P A) dA.T P.T P, and its transpose. Written with
    # matmul and matrix_transpose, so that it is differentiated again like any other code.
    # (hermitian=True, which reads A's lower triangle only, is not in the signature: refused)
    "numpy.linalg.pinv": vjp(
        "x, rcond=None",
        jvp=dict(
            x="-({ans} @ {t} @ {ans}) + {ans} @ rt.matrix_transpose({ans}) @ (rt.matrix_transpose({t}) - rt.matrix_transpose({t}) @ {x} @ {ans}) "
            "+ (rt.matrix_transpose({t}) - {ans} @ {x} @ rt.matrix_transpose({t})) @ rt.matrix_transpose({ans}) @ {ans}"
        ),
        x="-(rt.matrix_transpose({ans}) @ {g} @ rt.matrix_transpose({ans})) "
        "+ (rt.matrix_transpose({g}) - {x} @ {ans} @ rt.matrix_transpose({g})) @ {ans} @ rt.matrix_transpose({ans}) "
        "+ rt.matrix_transpose({ans}) @ {ans} @ (rt.matrix_transpose({g}) - rt.matrix_transpose({g}) @ {ans} @ {x})",
    ),
    # f(x) = x ** n (n < 0: inv(x) ** -n): f([[x, t], [0, x]]) = [[f(x), df(x)[t]], [0, f(x)]], and
    # the transpose of df(x) is df(x.T). One matrix power of twice the size, differentiated again
    # like any other code
    "numpy.linalg.matrix_power": vjp(
        "x, n",
        jvp=dict(x="rt.block_of(np.linalg.matrix_power(rt.put_block({x}, (0, 0)) + rt.put_block({t}, (0, 1)) + rt.put_block({x}, (1, 1)), {n}), (0, 1))"),
        x="rt.block_of(np.linalg.matrix_power(rt.put_block(rt.matrix_transpose({x}), (0, 0)) + rt.put_block({g}, (0, 1)) "
        "+ rt.put_block(rt.matrix_transpose({x}), (1, 1)), {n}), (0, 1))",
    ),
    # a sequence of arrays: the template gives a tuple, one adjoint per array; helpers without rules
    # of their own (second derivatives are refused: NoDerivativeError)
    "numpy.linalg.multi_dot": vjp(
        "arrays, out=None", jvp=dict(arrays="rt.multi_dot_jvp({t}, {arrays})"), arrays="rt.multi_dot_grad({g}, {arrays})"
    ),
    # two results, the eigenvalues and eigenvectors of the symmetric matrix one triangle of x
    # gives: {g} is the pair of their adjoints; the tangent a pair too. First order only (helpers
    # without rules); repeated eigenvalues give infinities, as in JAX
    "numpy.linalg.eigh": vjp(
        "x, UPLO='L'", jvp=dict(x="rt.eigh_jvp({t}, {ans}, {UPLO})"), x="rt.eigh_grad({g}, {ans}, {UPLO})"
    ),
    # (u, s, vt) with full_matrices=False or a square x, or s alone (compute_uv=False): {g} the
    # adjoints of the results. First order only (helpers without rules); hermitian= is refused
    "numpy.linalg.svd": vjp(
        "x, full_matrices=True, compute_uv=True",
        jvp=dict(x="rt.svd_jvp({t}, {x}, {ans}, {full_matrices}, {compute_uv})"),
        x="rt.svd_grad({g}, {x}, {ans}, {full_matrices}, {compute_uv})",
    ),
    # q, r of a square or tall x (mode='reduced'): {g} the pair of their adjoints. First order only
    "numpy.linalg.qr": vjp("x, mode='reduced'", jvp=dict(x="rt.qr_jvp({t}, {x}, {ans}, {mode})"), x="rt.qr_grad({g}, {x}, {ans}, {mode})"),
    # (x, residuals, rank, sv): {g} their adjoints; x = pinv(a) b for a of constant rank. First order only
    "numpy.linalg.lstsq": vjp(
        "a, b, rcond=None",
        jvp=dict(a="rt.lstsq_jvp_a({t}, {a}, {b}, {ans}, {rcond})", b="rt.lstsq_jvp_b({t}, {a}, {b}, {ans}, {rcond})"),
        a="rt.lstsq_grad_a({g}, {a}, {b}, {ans}, {rcond})",
        b="rt.lstsq_grad_b({g}, {a}, {b}, {ans}, {rcond})",
    ),
    # a real spectrum only (complex eigenvalues: NotImplementedError); first order only
    "numpy.linalg.eig": vjp("x", jvp=dict(x="rt.eig_jvp({t}, {ans})"), x="rt.eig_grad({g}, {ans})"),
    # --- shape ----------------------------------------------------------------------
    "numpy.transpose": vjp("x, axes=None", jvp=LINEAR, x="rt.transpose_grad({g}, {axes})"),
    "numpy.reshape": vjp("x, shape", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.ravel": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.squeeze": vjp("x, axis=None", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.expand_dims": vjp("x, axis", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.copy": vjp("x", jvp=LINEAR, x="{g}"),
    "numpy.ascontiguousarray": vjp("x", jvp=LINEAR, x="{g}"),
    # an array, a number, or a list or tuple of them (np.array([x[0], 2.0 * x[1]]))
    "numpy.array": vjp("x, dtype=None", jvp=LINEAR, x="rt.array_grad({g}, {x})"),
    "numpy.asarray": vjp("x, dtype=None", jvp=LINEAR, x="rt.array_grad({g}, {x})"),
    "numpy.diag": vjp("x, k=0", jvp=LINEAR, x="rt.diag_grad({g}, {x}, {k})"),
    "numpy.triu": vjp("x, k=0", jvp=LINEAR, x="np.triu({g}, {k})"),
    "numpy.tril": vjp("x, k=0", jvp=LINEAR, x="np.tril({g}, {k})"),
    "numpy.swapaxes": vjp("x, axis1, axis2", jvp=LINEAR, x="np.swapaxes({g}, {axis1}, {axis2})"),
    "numpy.broadcast_to": vjp("x, shape", jvp=LINEAR, x="rt.unbroadcast({g}, {x})"),
    "numpy.atleast_1d": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.atleast_2d": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.atleast_3d": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "numpy.where": vjp("condition, x, y", jvp=LINEAR, x="rt.unbroadcast(np.where({condition}, {g}, 0.0), {x})", y="rt.unbroadcast(np.where({condition}, 0.0, {g}), {y})"),
    "numpy.diagonal": vjp("x, offset=0, axis1=0, axis2=1", jvp=LINEAR, x="rt.diagonal_grad({g}, {x}, {offset}, {axis1}, {axis2})"),
    "numpy.moveaxis": vjp("x, source, destination", jvp=LINEAR, x="rt.moveaxis_grad({g}, {x}, {source}, {destination})"),
    "numpy.flip": vjp("x, axis=None", jvp=LINEAR, x="rt.flip_grad({g}, {x}, {axis})"),
    "numpy.fliplr": vjp("x", jvp=LINEAR, x="rt.flip_grad({g}, {x}, 1)"),
    "numpy.flipud": vjp("x", jvp=LINEAR, x="rt.flip_grad({g}, {x}, 0)"),
    "numpy.diff": vjp("x, n=1, axis=-1", jvp=LINEAR, x="rt.diff_grad({g}, {x}, {n}, {axis})"),
    "numpy.roll": vjp("x, shift, axis=None", jvp=LINEAR, x="rt.roll_grad({g}, {x}, {shift}, {axis})"),
    "numpy.tile": vjp("x, reps", jvp=LINEAR, x="rt.tile_grad({g}, {x}, {reps})"),
    "numpy.repeat": vjp("x, repeats, axis=None", jvp=LINEAR, x="rt.repeat_grad({g}, {x}, {repeats}, {axis})"),
    "numpy.pad": vjp("x, pad_width, mode='constant', constant_values=0", jvp=dict(x="rt.pad_tangent({t}, {pad_width}, {mode})"), x="rt.pad_grad({g}, {x}, {pad_width}, {mode})"),
    "numpy.sort": vjp("x, axis=-1, kind=None, order=None", jvp=dict(x="rt.take_sorted({t}, {x}, {axis})"), x="rt.sort_grad({g}, {x}, {axis})"),
    "numpy.take": vjp("x, indices, axis=None", jvp=LINEAR, x="rt.take_grad({g}, {x}, {indices}, {axis})"),
    "numpy.take_along_axis": vjp("x, indices, axis=-1", jvp=LINEAR, x="rt.take_along_axis_grad({g}, {x}, {indices}, {axis})"),
    # a sequence of arrays: the template gives a tuple, one adjoint per array
    "numpy.stack": vjp("arrays, axis=0", jvp=LINEAR, arrays="rt.stack_grad({g}, {arrays}, {axis})"),
    "numpy.concatenate": vjp("arrays, axis=0", jvp=LINEAR, arrays="rt.concatenate_grad({g}, {arrays}, {axis})"),
    "numpy.hstack": vjp("arrays", jvp=LINEAR, arrays="rt.hstack_grad({g}, {arrays})"),
    "numpy.vstack": vjp("arrays", jvp=LINEAR, arrays="rt.vstack_grad({g}, {arrays})"),
    "ndarray.T": vjp("x", jvp=LINEAR, x="np.transpose({g})"),
    "ndarray.reshape": vjp("x, *shape", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "ndarray.copy": vjp("x", jvp=LINEAR, x="{g}"),
    "ndarray.ravel": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "ndarray.flatten": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),  # (a copy)
    "ndarray.astype": vjp("x, dtype", jvp=LINEAR, x="rt.unbroadcast({g}, {x})"),  # back in x's dtype
    "ndarray.transpose": vjp("x, *axes", jvp=LINEAR, x="rt.transpose_grad({g}, {axes})"),
    "getitem": vjp("x, index", jvp=LINEAR, accumulate=dict(x="rt.getitem_grad_add({sink}, {g}, {index})"), x="rt.getitem_grad({g}, {x}, {index})"),
    # JAX's functional updates, x.at[index].set(v) / .add(v) / .multiply(v) (desugared into these)
    "srctrans.runtime.at_set": vjp("x, index, v", jvp=LINEAR, x="rt.at_set({g}, {index}, 0.0)", v="rt.unbroadcast({g}[{index}], {v})"),
    "srctrans.runtime.at_add": vjp("x, index, v", jvp=LINEAR, x="{g}", v="rt.unbroadcast({g}[{index}], {v})"),
    "srctrans.runtime.at_multiply": vjp(
        "x, index, v",
        jvp=dict(x="rt.at_multiply({t}, {index}, {v})", v="rt.at_set(rt.zeros_like({x}), {index}, {x}[{index}] * {t})"), x="rt.at_multiply({g}, {index}, {v})", v="rt.unbroadcast({g}[{index}] * {x}[{index}], {v})"
    ),
    # --- no derivative ------------------------------------------------------------
    "srctrans.stop_gradient": nondiff(),
    "numpy.sign": nondiff(),
    "numpy.floor": nondiff(),
    "numpy.ceil": nondiff(),
    "numpy.trunc": nondiff(),
    "numpy.rint": nondiff(),
    "numpy.fix": nondiff(),
    "numpy.round": nondiff("x, decimals=0"),
    "numpy.argmax": nondiff("x, axis=None"),
    # comparisons and logic called as functions (x > y is one already): booleans, constants
    "numpy.equal": nondiff("x, y"),
    "numpy.not_equal": nondiff("x, y"),
    "numpy.greater": nondiff("x, y"),
    "numpy.greater_equal": nondiff("x, y"),
    "numpy.less": nondiff("x, y"),
    "numpy.less_equal": nondiff("x, y"),
    "numpy.logical_and": nondiff("x, y"),
    "numpy.logical_or": nondiff("x, y"),
    "numpy.logical_not": nondiff("x"),
    "numpy.all": nondiff("x, axis=None, keepdims=False"),
    "numpy.any": nondiff("x, axis=None, keepdims=False"),
    "numpy.argmin": nondiff("x, axis=None"),
    "numpy.argsort": nondiff("x, axis=-1"),
    "numpy.zeros": nondiff("shape, dtype=None"),
    "numpy.ones": nondiff("shape, dtype=None"),
    "numpy.zeros_like": nondiff("x, dtype=None"),
    "numpy.ones_like": nondiff("x, dtype=None"),
    "numpy.empty": nondiff("shape, dtype=None"),
    "numpy.empty_like": nondiff("x, dtype=None"),
    "numpy.arange": constant_only("start, stop=None, step=None"),  # (its length moves with them too)
    "numpy.eye": nondiff("N, M=None, k=0, dtype=None"),
    "numpy.identity": nondiff("n, dtype=None"),
    # linear in start and stop together: each point is start (1 - i / div) + stop (i / div)
    "numpy.linspace": vjp(
        "start, stop, num=50, endpoint=True", jvp=LINEAR,
        start="rt.linspace_grad({g}, {start}, {endpoint}, False)",
        stop="rt.linspace_grad({g}, {stop}, {endpoint}, True)",
    ),
    "numpy.full": vjp("shape, fill_value, dtype=None", jvp=LINEAR, fill_value="rt.unbroadcast({g}, {fill_value})"),  # shape carries none
    "numpy.full_like": vjp("x, fill_value, dtype=None", jvp=LINEAR, fill_value="rt.unbroadcast({g}, {fill_value})"),  # nor x
    "numpy.argwhere": nondiff(),
    "numpy.nonzero": nondiff(),
    "numpy.searchsorted": nondiff("a, v, side='left', sorter=None"),
    "numpy.shape": nondiff(),
    "numpy.size": nondiff(),
    "numpy.isnan": nondiff(),
    "numpy.isfinite": nondiff(),
    "builtins.len": nondiff(),
    "builtins.range": nondiff("start, stop=None, step=None"),
    "builtins.int": nondiff(),
    "builtins.round": nondiff("x, ndigits=None"),
    "builtins.print": nondiff("x"),
    "math.floor": nondiff(),
    "math.ceil": nondiff(),
    "ndarray.shape": nondiff(),
    "ndarray.ndim": nondiff(),
    "ndarray.size": nondiff(),
    "ndarray.dtype": nondiff(),
}

# Rules whose tangent is a tuple (one tangent per result) and whose jvp has terms for several
# parameters: forward mode adds the terms piece by piece (rt.tangent_sum), not as tuples
TUPLE_TANGENTS: frozenset[str] = frozenset({"numpy.linalg.lstsq"})

# Parameters a rule reads only for their shape and dtype, never their values: an array
# written in place after such a read needs no copy saved for the backward sweep.
SHAPE_ONLY: dict[str, frozenset[str]] = {
    key: frozenset({"x"})
    for key in """getitem numpy.sum numpy.mean numpy.reshape ndarray.reshape numpy.ravel ndarray.ravel
    numpy.squeeze numpy.expand_dims numpy.atleast_1d numpy.atleast_2d numpy.broadcast_to numpy.trace
    numpy.full_like""".split()
}

# Rules for the helpers adjoint files call, so an adjoint can be differentiated again.
from .runtime_helpers import RUNTIME_DERIVATIVES  # noqa: E402

DERIVATIVES.update(RUNTIME_DERIVATIVES)

# --- collectives over a named axis (srctrans.parallel.collectives; pmap's helper owns this block) ---
# psum's adjoint is the psum of the adjoint (every example's sum reads every example's x);
# pmean's likewise; all_gather's, the example's own row of that psum. Adjoint files call
# them as rt.psum, rt.pmean, rt.axis_index (srctrans.parallel puts the collectives on
# srctrans.runtime), which pmap's stage split and vmap's rewrite recognize as collectives.
DERIVATIVES.update({
    "srctrans.parallel.collectives.psum": vjp("x, axis_name", jvp=LINEAR, x="rt.psum({g}, {axis_name})"),
    "srctrans.parallel.collectives.pmean": vjp("x, axis_name", jvp=LINEAR, x="rt.pmean({g}, {axis_name})"),
    "srctrans.parallel.collectives.axis_index": nondiff("axis_name"),
    # all_gather: example i's x is row i of every example's result, so its adjoint is row i
    # of the psum of the adjoints
    "srctrans.parallel.collectives.all_gather": vjp(
        "x, axis_name", jvp=LINEAR, x="rt.psum({g}, {axis_name})[rt.axis_index({axis_name})]"
    ),
})
# --- end of the collectives' block ---

# --- array functions and reductions (issue 20) ---
# NaN-ignoring reductions: NaNs carry no
# derivative (rt.sum_grad / rt.extremum_grad with NaN's places zeroed; a NaN never equals the max).
_NANS_ZERO = "np.where(np.isnan({x}), 0.0, {v})"
_NAN_COUNT = "rt.sum_to(np.where(np.isnan({x}), 0.0, rt.ones_like({x})), {ans}, {axis}, {keepdims})"
# np.average: W the weights as they broadcast against a (1.0 without), S their sum along axis
_W = "rt.average_weights({weights}, {a}, {axis}, {returned})"
_S = f"rt.sum_to({_W} * rt.ones_like({{a}}), {{ans}}, {{axis}}, {{keepdims}})"
_CENTERED = "({a} - rt.sum_grad({ans}, {a}, {axis}, {keepdims}))"
_SPLIT = "rt.split_grad({g}, {axis})"
DERIVATIVES.update({
    "numpy.nansum": vjp(
        "x, axis=None, dtype=None, out=None, keepdims=False",
        jvp=dict(x="rt.sum_to(" + _NANS_ZERO.replace("{v}", "{t}") + ", {ans}, {axis}, {keepdims})"),
        x=_NANS_ZERO.replace("{v}", "rt.sum_grad({g}, {x}, {axis}, {keepdims})"),
    ),
    "numpy.nanmean": vjp(
        "x, axis=None, dtype=None, out=None, keepdims=False",
        jvp=dict(x="rt.sum_to(" + _NANS_ZERO.replace("{v}", "{t}") + ", {ans}, {axis}, {keepdims}) / " + _NAN_COUNT),
        x=_NANS_ZERO.replace("{v}", "rt.sum_grad({g} / " + _NAN_COUNT + ", {x}, {axis}, {keepdims})"),
    ),
    "numpy.nanmax": vjp("x, axis=None, out=None, keepdims=False", jvp=_reduction_jvp("extremum_grad", "{ans}, {axis}, {keepdims}"), x="rt.extremum_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    "numpy.nanmin": vjp("x, axis=None, out=None, keepdims=False", jvp=_reduction_jvp("extremum_grad", "{ans}, {axis}, {keepdims}"), x="rt.extremum_grad({g}, {x}, {ans}, {axis}, {keepdims})"),
    # sum(a W) / sum(W) along axis: linear in a; in the weights, (a - average) / sum(W)
    "numpy.average": vjp(
        "a, axis=None, weights=None, returned=False, keepdims=False",
        jvp=dict(
            a=f"rt.sum_to({_W} * {{t}}, {{ans}}, {{axis}}, {{keepdims}}) / {_S}",
            weights=f"rt.sum_to(rt.average_weights({{t}}, {{a}}, {{axis}}, {{returned}}) * {_CENTERED}, {{ans}}, {{axis}}, {{keepdims}}) / {_S}",
        ),
        a=f"rt.unbroadcast(rt.sum_grad({{g}} / {_S}, {{a}}, {{axis}}, {{keepdims}}) * {_W}, {{a}})",
        weights=f"rt.unbroadcast(np.reshape(rt.unbroadcast(rt.sum_grad({{g}} / {_S}, {{a}}, {{axis}}, {{keepdims}}) * {_CENTERED}, {_W}), np.shape({{weights}})), {{weights}})",
    ),
    "numpy.median": vjp(
        "x, axis=None, out=None, overwrite_input=False, keepdims=False",
        jvp=_reduction_jvp("median_grad", "{axis}, {keepdims}"), x="rt.median_grad({g}, {x}, {axis}, {keepdims})",
    ),
    "numpy.append": vjp(
        "arr, values, axis=None", jvp=LINEAR,
        arr="rt.append_grad_arr({g}, {arr}, {values}, {axis})", values="rt.append_grad_values({g}, {arr}, {values}, {axis})",
    ),
    "numpy.column_stack": vjp("arrays", jvp=LINEAR, arrays="rt.column_stack_grad({g}, {arrays})"),
    "numpy.kron": vjp("a, b", jvp=MULTILINEAR, a="rt.kron_grad_a({g}, {a}, {b})", b="rt.kron_grad_b({g}, {a}, {b})"),
    # <g, a x b> = <a, b x g> = <b, g x a> (3-vectors along the last axis)
    "numpy.cross": vjp("a, b", jvp=MULTILINEAR, a="rt.unbroadcast(np.cross({b}, {g}), {a})", b="rt.unbroadcast(np.cross({g}, {a}), {b})"),
    # each choice where its condition is the first that holds; the default where none does
    "numpy.select": vjp(
        "condlist, choicelist, default=0", jvp=LINEAR,
        choicelist="rt.select_grad({g}, {condlist}, {choicelist})",
        default="rt.unbroadcast(rt.select_default({condlist}, {g}), {default})",
    ),
    # NaNs and infinities are replaced by constants
    "numpy.nan_to_num": vjp(
        "x, copy=True, nan=0.0, posinf=None, neginf=None",
        jvp=dict(x="np.where(np.isfinite({x}), {t}, 0.0)"), x="rt.unbroadcast(np.where(np.isfinite({x}), {g}, 0.0), {x})",
    ),
    # (its signature written out: a default with a comma)
    "numpy.rot90": Rule("vjp", (Param("x"), Param("k", "1"), Param("axes", "(0, 1)")), {"x": "np.rot90({g}, -({k}), {axes})"}, jvp=LINEAR),
    "numpy.rollaxis": vjp("x, axis, start=0", jvp=LINEAR, x="rt.rollaxis_grad({g}, {x}, {axis}, {start})"),
    "numpy.array_split": vjp("x, indices_or_sections, axis=0", jvp=LINEAR, x=_SPLIT),
    "numpy.vsplit": vjp("x, indices_or_sections", jvp=LINEAR, x="rt.split_grad({g}, 0)"),
    "numpy.hsplit": vjp("x, indices_or_sections", jvp=LINEAR, x="rt.split_grad({g}, min(len(np.shape({x})) - 1, 1))"),
    "numpy.dsplit": vjp("x, indices_or_sections", jvp=LINEAR, x="rt.split_grad({g}, 2)"),
    # the k-th smallest of the result is the k-th smallest of x (ties: in their order)
    "numpy.partition": vjp("x, kth, axis=-1, kind='introselect', order=None", jvp=dict(x="rt.permutation_grad({t}, {ans}, {x}, {axis})"), x="rt.permutation_grad({g}, {x}, {ans}, {axis})"),
    # full mode: each operand's adjoint is g correlated with the other
    "numpy.convolve": vjp("a, v, mode='full'", jvp=MULTILINEAR, a="rt.convolve_grad({g}, {v}, {mode})", v="rt.convolve_grad({g}, {a}, {mode})"),
    # linear in fp (x and xp: constants); left and right add a constant part
    "numpy.interp": vjp(
        "x, xp, fp, left=None, right=None, period=None",
        jvp=dict(fp="rt.interp_linear({x}, {xp}, {t}, {left}, {right}, {period})"),
        fp="rt.interp_grad({g}, {x}, {xp}, {fp}, {left}, {right}, {period})",
    ),
    # (one spacing, a number or coordinates, for the axes it differentiates along; x is linear)
    "numpy.gradient": vjp(
        "f, spacing=1.0, axis=None, edge_order=1", jvp=LINEAR, f="rt.gradient_grad({g}, {f}, {spacing}, {axis}, {edge_order})"
    ),
    # scipy.special (psi is digamma)
    "scipy.special.digamma": elementwise("rt.trigamma({x})"),
    "scipy.special.psi": elementwise("rt.trigamma({x})"),
    "scipy.special.logit": elementwise("1.0 / ({x} * (1.0 - {x}))"),
    # x log(y); as rt.xlogy's rule, y + (y == 0) keeps the partials finite where y is 0
    "scipy.special.xlogy": elementwise("np.log({y} + ({y} == 0))", "{x} / ({y} + ({y} == 0))"),
    # issue 20, what autograd's and JAX's tests differentiate (tests/rules/peers.py): 2/sqrt(pi) is
    # 1.1283791670955126, 1/sqrt(2 pi) 0.3989422804014327, sqrt(2 pi) 2.5066282746310002, sqrt(pi)/2 0.886226925452758
    "scipy.special.erfc": elementwise("-1.1283791670955126 * np.exp(-{x} * {x})"),
    "scipy.special.erfcx": elementwise("2.0 * {x} * {ans} - 1.1283791670955126"),
    "scipy.special.erfinv": elementwise("0.886226925452758 * np.exp({ans} * {ans})"),
    "scipy.special.erfcinv": elementwise("-0.886226925452758 * np.exp({ans} * {ans})"),
    "scipy.special.ndtr": elementwise("0.3989422804014327 * np.exp(-0.5 * {x} * {x})"),
    "scipy.special.log_ndtr": elementwise("0.3989422804014327 * np.exp(-0.5 * {x} * {x} - {ans})"),
    "scipy.special.ndtri": elementwise("2.5066282746310002 * np.exp(0.5 * {ans} * {ans})"),
    "scipy.special.dawsn": elementwise("1.0 - 2.0 * {x} * {ans}"),
    "scipy.special.gamma": elementwise("{ans} * rt.digamma({x})"),
    "scipy.special.rgamma": elementwise("-{ans} * rt.digamma({x})"),
    "scipy.special.loggamma": elementwise("rt.digamma({x})"),  # (real arguments)
    "scipy.special.gammasgn": nondiff(),
    "scipy.special.beta": elementwise("{ans} * (rt.digamma({x}) - rt.digamma({x} + {y}))", "{ans} * (rt.digamma({y}) - rt.digamma({x} + {y}))"),
    "scipy.special.betaln": elementwise("rt.digamma({x}) - rt.digamma({x} + {y})", "rt.digamma({y}) - rt.digamma({x} + {y})"),
    "scipy.special.entr": elementwise("-np.log({x}) - 1.0"),
    "scipy.special.rel_entr": elementwise("np.log({x} / {y}) + 1.0", "-{x} / {y}"),
    "scipy.special.kl_div": elementwise("np.log({x} / {y})", "1.0 - {x} / {y}"),
    "scipy.special.xlog1py": elementwise("np.log1p({y})", "{x} / (1.0 + {y})"),
    # ans (g - sum(g ans)) along axis: a symmetric Jacobian
    "scipy.special.softmax": vjp(
        "x, axis=None", jvp=dict(x="{ans} * ({t} - np.sum({t} * {ans}, {axis}, None, None, True))"),
        x="rt.unbroadcast({ans} * ({g} - np.sum({g} * {ans}, {axis}, None, None, True)), {x})",
    ),
})

# --- more of the peers' functions (issue 20) ---
# np.nanvar: 2 (x - m) / (n - ddof) at the numbers, m their mean and n their count along axis
# (the mean's own derivative adds nothing: the deviations sum to zero); NaNs carry none
_NAN_MEAN = f"rt.sum_grad(rt.sum_to({_NANS_ZERO.replace('{v}', '{x}')}, {{ans}}, {{axis}}, {{keepdims}}) / {_NAN_COUNT}, {{x}}, {{axis}}, {{keepdims}})"
_DEVIATIONS = f"({_NANS_ZERO.replace('{v}', '{x}')} - {_NAN_MEAN})"  # (finite at the NaNs: 0 * NaN would be NaN)
_NANVAR_SCALE = f"(2.0 / ({_NAN_COUNT} - {{ddof}}))"


def _nanvar_grad(g: str) -> str:
    return _NANS_ZERO.replace("{v}", f"rt.sum_grad({g} * {_NANVAR_SCALE}, {{x}}, {{axis}}, {{keepdims}}) * {_DEVIATIONS}")


_NANVAR_JVP = f"rt.sum_to({_NANS_ZERO.replace('{v}', '{t} * ' + _DEVIATIONS)}, {{ans}}, {{axis}}, {{keepdims}}) * {_NANVAR_SCALE}"
_NANVAR_SIGNATURE = "x, axis=None, dtype=None, out=None, ddof=0, keepdims=False"
DERIVATIVES.update({
    "numpy.nanvar": vjp(_NANVAR_SIGNATURE, jvp=dict(x=_NANVAR_JVP), x=_nanvar_grad("{g}")),
    # sqrt of nanvar: nanvar's derivative over 2 ans
    "numpy.nanstd": vjp(_NANVAR_SIGNATURE, jvp=dict(x=f"{_NANVAR_JVP} / (2.0 * {{ans}})"), x=_nanvar_grad("({g} / (2.0 * {ans}))")),
    # x 2**y: linear in x (y is an integer: no derivative)
    # (y, the exponent, has an integer dtype: piecewise constant, as frexp's exponent below)
    "numpy.ldexp": vjp(
        "x, y", jvp=dict(x="np.ldexp({t}, {y})", y="np.zeros_like({ans})"),
        x="rt.unbroadcast(np.ldexp({g}, {y}), {x})", y="rt.zeros_like({y})",
    ),
    # (mantissa, exponent): the mantissa is x * 2**-exponent, the exponent piecewise constant
    "numpy.frexp": vjp(
        "x", jvp=dict(x="(np.ldexp({t}, -np.frexp({x})[1]), np.zeros_like({x}))"), x="np.ldexp({g}[0], -np.frexp({x})[1])"
    ),
    # of real arguments (complex values are refused): the argument itself, and 0 or pi
    "numpy.real_if_close": vjp("x, tol=100", jvp=LINEAR, x="{g}"),
    "numpy.angle": nondiff("x, deg=False"),
})

# --- scipy.special: Bessel functions, integrals and hypergeometric functions (issue 20) ----------
# (the orders v, n and d, and the parameters a, b, c of 1F1 and 2F1, take no derivative: refused)
from .runtime_helpers import EXPM, SOLVE_SYLVESTER, SQRTM, bessel_grad  # noqa: E402

_ODEINT_OPTIONS = "{full_output}, {tfirst}, rtol={rtol}, atol={atol}, mxstep={mxstep}, hmax={hmax}, h0={h0}, hmin={hmin}"
# x^(a-1) e^-x / Gamma(a); "* rt.ones_like({ans})": in the result's dtype, where SciPy gives float64
# for float32 arguments (gammainc, polygamma, multigammaln)
_IN_ANS_DTYPE = " * rt.ones_like({ans})"
_INCOMPLETE_GAMMA = "np.exp(rt.xlogy({x} - 1.0, {y}) - {y} - rt.gammaln({x}))" + _IN_ANS_DTYPE
DERIVATIVES.update({
    **{f"scipy.special.{name}": elementwise(bessel_grad(family, order)) for name, family, order in (
        ("j0", "jv", 0), ("j1", "jv", 1), ("y0", "yv", 0), ("y1", "yv", 1), ("i0", "iv", 0), ("i1", "iv", 1),
        ("i0e", "ive", 0), ("i1e", "ive", 1), ("k0", "kv", 0), ("k1", "kv", 1), ("k0e", "kve", 0), ("k1e", "kve", 1),
    )},
    **{f"scipy.special.{name}": elementwise(None, bessel_grad(name)) for name in ("jv", "yv", "iv", "ive", "kv", "kve")},
    "scipy.special.yn": elementwise(None, bessel_grad("yn")),  # (scipy.special.jn is jv)
    "numpy.i0": elementwise(bessel_grad("iv", 0)),
    # exponential integrals: e^x / x and -e^-x / x
    "scipy.special.expi": elementwise("np.exp({x}) / {x}"),
    "scipy.special.exp1": elementwise("-np.exp(-{x}) / {x}"),
    "scipy.special.polygamma": elementwise(None, "rt.polygamma({x} + 1, {y})" + _IN_ANS_DTYPE),
    "scipy.special.multigammaln": vjp(
        "a, d", jvp=dict(a="{t} * rt.multipolygamma(0, {a}, {d})" + _IN_ANS_DTYPE),
        a="rt.unbroadcast({g} * rt.multipolygamma(0, {a}, {d}), {a})",
    ),
    # regularized incomplete gamma and beta functions, in x: their densities
    "scipy.special.gammainc": elementwise(None, _INCOMPLETE_GAMMA),
    "scipy.special.gammaincc": elementwise(None, "-" + _INCOMPLETE_GAMMA),
    "scipy.special.betainc": elementwise(
        None, None, "np.exp(rt.xlogy({x} - 1.0, {z}) + rt.xlogy({y} - 1.0, 1.0 - {z}) - rt.gammaln({x}) - rt.gammaln({y}) + rt.gammaln({x} + {y}))"
    ),
    "scipy.special.zeta": vjp(
        "x, q=None", jvp=dict(q="{t} * -{x} * rt.zeta({x} + 1.0, {q})"), q="rt.unbroadcast({g} * -{x} * rt.zeta({x} + 1.0, {q}), {q})"
    ),
    # Pochhammer's (z)_m = Gamma(z + m) / Gamma(z), and factorial(n) = Gamma(n + 1)
    "scipy.special.poch": elementwise("{ans} * (rt.digamma({x} + {y}) - rt.digamma({x}))", "{ans} * rt.digamma({x} + {y})"),
    "scipy.special.factorial": vjp(
        "n, exact=False", jvp=dict(n="{t} * {ans} * rt.digamma({n} + 1.0)"), n="rt.unbroadcast({g} * {ans} * rt.digamma({n} + 1.0), {n})"
    ),
    # Box-Cox in x (in lmbda: refused)
    "scipy.special.boxcox": elementwise("{x} ** ({y} - 1.0)", None),
    "scipy.special.boxcox1p": elementwise("(1.0 + {x}) ** ({y} - 1.0)", None),
    # Owen's T(h, a): -phi(h) (Phi(a h) - 1/2) = -phi(h) erf(a h / sqrt 2) / 2 in h; e^(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2)) in a
    "scipy.special.owens_t": elementwise(
        "-0.19947114020071635 * np.exp(-0.5 * {x} * {x}) * rt.erf(0.7071067811865476 * {y} * {x})",
        "np.exp(-0.5 * {x} * {x} * (1.0 + {y} * {y})) / (6.283185307179586 * (1.0 + {y} * {y}))",
    ),
    "scipy.special.hyp1f1": elementwise(None, None, "{x} / {y} * rt.hyp1f1({x} + 1.0, {y} + 1.0, {z})"),
    "scipy.special.hyp2f1": RUNTIME_DERIVATIVES["srctrans.runtime.hyp2f1"],
    # two results: {g} and {t} are pairs (of the sine and cosine integrals; of Fresnel's S and C)
    "scipy.special.sici": vjp(
        "x", jvp=dict(x="({t} * np.sinc({x} / np.pi), {t} * np.cos({x}) / {x})"),
        x="{g}[0] * np.sinc({x} / np.pi) + {g}[1] * np.cos({x}) / {x}",
    ),
    "scipy.special.fresnel": vjp(
        "x", jvp=dict(x="({t} * np.sin(1.5707963267948966 * {x} * {x}), {t} * np.cos(1.5707963267948966 * {x} * {x}))"),
        x="{g}[0] * np.sin(1.5707963267948966 * {x} * {x}) + {g}[1] * np.cos(1.5707963267948966 * {x} * {x})",
    ),
    "scipy.linalg.expm": vjp("A", jvp=dict(A=EXPM.jvp["x"].replace("{x}", "{A}")), A=EXPM.templates["x"].replace("{x}", "{A}")),
    # the solution at the times t_ (named so: {t} is a tangent); the derivatives integrate
    # sensitivity equations with odeint, differentiating func with srctrans at run time
    "scipy.integrate.odeint": vjp(
        "func, y0, t_, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, "
        "tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False",
        jvp={
            param: f"rt.odeint_jvp({{func}}, {{y0}}, {{t_}}, {{args}}, {{ans}}, {tangents}, {_ODEINT_OPTIONS})"
            for param, tangents in (("y0", "{t}, None, None"), ("t_", "None, {t}, None"), ("args", "None, None, {t}"))
        },
        **{
            param: f"rt.odeint_grad({{g}}, {{func}}, {{y0}}, {{t_}}, {{args}}, {{ans}}, {which}, {_ODEINT_OPTIONS})"
            for which, param in enumerate(("y0", "t_", "args"))
        },
    ),
    "scipy.linalg.solve_sylvester": SOLVE_SYLVESTER,
    "scipy.linalg.sqrtm": SQRTM,
    # (p, l, u), or (p l, u) with permute_l=True: {g} their adjoints; square matrices (others are
    # refused at run time). First order only (helpers without rules)
    "scipy.linalg.lu": vjp(
        "a, permute_l=False, overwrite_a=False, check_finite=True",
        jvp=dict(a="rt.lu_jvp({t}, {a}, {ans}, {permute_l})"), a="rt.lu_grad({g}, {a}, {ans}, {permute_l})",
    ),
    # x - logsumexp(x) along axis: g minus softmax times g's sum
    "scipy.special.log_softmax": vjp(
        "x, axis=None", jvp=dict(x="{t} - np.sum(np.exp({ans}) * {t}, {axis}, None, None, True)"),
        x="rt.unbroadcast({g} - np.exp({ans}) * np.sum({g}, {axis}, None, None, True), {x})",
    ),
})
