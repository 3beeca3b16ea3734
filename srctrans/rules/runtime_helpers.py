"""Derivative rules for the helpers generated adjoints call (``srctrans.runtime``).

An adjoint file calls ``rt.unbroadcast``, ``rt.sum_grad`` and the other helpers of
:mod:`srctrans.runtime`; differentiating that file again (``grad(grad(f))``) needs a
rule for each of them. They use the same constructors as
:mod:`srctrans.rules.derivatives` and are merged into its table.

Parameter names follow each helper's signature, except that a helper's own ``g`` and
``ans`` are spelled ``g_`` and ``ans_`` here: in a template ``{g}`` is always the incoming
adjoint and ``{ans}`` this call's result, so the helper's arguments of those names need
names of their own (calls are matched by position; generated files pass every argument
positionally).

Parameters that give only a shape, an axis or a selection (the ``x`` of
``unbroadcast(g, x)``, ``sum_to``'s ``g``, ``index``, ``axis`` ...) have no template. The
reductions' ``ans_`` is the reduction's value, a function of ``x``: ``extremum_grad`` and
``prod_grad`` give it no adjoint and differentiate through ``x`` alone (``prod_grad_grad``
is the whole second derivative of the product, exact where ``x`` has zeros), while
``std_grad``'s rule has a partial for ``ans_`` and one for ``x`` holding ``ans_`` fixed.

Linear helpers are differentiated by their transposes: the adjoint of ``g`` in a helper
``expand(g) * K(x)`` (every reduction adjoint) is ``sum_to(u * K(x))`` with
``K(x) = helper(ones_like(g), x, ...)``.

The helpers that take a joined array apart or put the pieces together (``stack_grad``,
``concatenate_grad``, ``hstack_grad``, ``vstack_grad``, ``split_grad``) are linear in their
``g_``, which is (or whose adjoint is) a tuple of the pieces' adjoints: each one's rule is
the other's operation.

Higher derivatives. Some families close on themselves: ``sinc_derivative(n, x)`` and
``polygamma(n, x)`` differentiate to ``n + 1``; cumprod's rules are made of two linear
recurrences and two shifts (``linrec``, ``linrec_rev``, ``shift_right``, ``shift_left``),
each the transpose of another and all multiplications, so exact where ``x`` has zeros;
cholesky's rule is written with ``np.linalg.solve`` and three linear helpers
(``half_tril`` ...), so it is differentiated like any other code; einsum's adjoints
(``einsum_grad_x``, ``_y``, ``_z``) and ``einsum`` are each other's derivatives. One does
not close: the rule of ``prod_grad_grad`` calls ``prod_grad3`` (prod's third derivative),
which has no rule of its own.

Helpers without a rule (differentiating a file that calls them stops with "no rule"):
``setitem_grad`` (it writes into its ``g``, which a rule cannot say; the file the next
``grad`` reads takes a copy and writes zeros instead), ``prod_grad3`` (a fourth derivative
of the user's function), and ``einsum_grad``, ``cholesky_grad`` and ``cholesky_jvp``,
which no rule calls any more. The linear algebra of issue 20 adds, differentiated once:
``multi_dot_grad``/``_jvp``, ``eigh_grad``/``_jvp``, ``svd_grad``/``_jvp``,
``qr_grad``/``_jvp``, ``lstsq_grad_a``/``_b``, ``lstsq_jvp_a``/``_b`` and ``tangent_sum``;
``norm_grad``'s own rule holds for the 2-norm and Frobenius norm, and ``norm_ord_once``
refuses the second derivatives of the other orders (NotImplementedError). ``put_block`` and
``block_of`` (matrix_power's rule) are each other's transposes.

Forward mode (``jvp(grad(f))``, Hessian-vector products) reads the ``jvp=`` of the same
entries: most helpers are linear in their ``g_`` (``LINEAR``) or linear in each of two
operands (``MULTILINEAR``); the others say how their result moves with each operand.
``std_grad``, ``norm_grad`` and ``logsumexp_grad`` are linear in ``g_`` and proportional
to ``1 / ans_`` (or ``exp(-ans_)``), which gives their ``ans_`` terms; ``prod_grad``'s
``x`` term is the product's whole second derivative, its ``ans_`` none (as in reverse mode).
"""

from __future__ import annotations

from .model import LINEAR, MULTILINEAR, elementwise, nondiff, vjp

RUNTIME_DERIVATIVES: dict = {}  # merged into srctrans.rules.derivatives.DERIVATIVES there


# ``sum_to(u * helper(ones, ...))``: the adjoint of ``g`` in a reduction's adjoint ``expand(g) * K(x)``
def _g_of_reduction(helper: str, rest: str) -> str:
    return f"rt.sum_to({{g}} * rt.{helper}(rt.ones_like({{g_}}), {rest}), {{g_}}, {{axis}}, {{keepdims}})"


def _sylvester(a: str, b: str, q: str) -> str:
    return f"rt.solve_sylvester({a}, {b}, {q})"


# X = solve_sylvester(a, b, q), a X + X b = q: da X + a dX + dX b + X db = dq, so
# dX = solve_sylvester(a, b, dq - da X - X db); its adjoint solves the transposed equation
_T = "rt.matrix_transpose({})".format
_ADJOINT_Q = _sylvester(_T("{a}"), _T("{b}"), "{g}")
SOLVE_SYLVESTER = vjp(
    "a, b, q",
    jvp=dict(a=_sylvester("{a}", "{b}", "-({t} @ {ans})"), b=_sylvester("{a}", "{b}", "-({ans} @ {t})"),
             q=_sylvester("{a}", "{b}", "{t}")),
    a=f"rt.unbroadcast(-({_ADJOINT_Q} @ {_T('{ans}')}), {{a}})",
    b=f"rt.unbroadcast(-({_T('{ans}')} @ {_ADJOINT_Q}), {{b}})",
    q=f"rt.unbroadcast({_ADJOINT_Q}, {{q}})",
)
# X = sqrtm(A), X X = A: X dX + dX X = dA
SQRTM = vjp(
    "A, disp=None, blocksize=None",
    jvp=dict(A=_sylvester("{ans}", "{ans}", "{t}")),
    A=_sylvester(_T("{ans}"), _T("{ans}"), "{g}"),
)


RUNTIME_DERIVATIVES.update({
    # --- constants for differentiation: seeds, zeros, masks -------------------------------
    "srctrans.runtime.grad_seed": nondiff("out"),
    "srctrans.runtime.zeros_like": nondiff("x"),
    "srctrans.runtime.ones_like": nondiff("x"),
    "srctrans.runtime.ge_mask": nondiff("x, y"),
    "srctrans.runtime.le_mask": nondiff("x, y"),
    "srctrans.runtime.inside_mask": nondiff("x, lo, hi"),
    # --- linear in g: the adjoint is the transposed operation -------------------------------
    "srctrans.runtime.unbroadcast": vjp("g_, x", jvp=LINEAR, g_="rt.unbroadcast({g}, {g_})"),
    "srctrans.runtime.sum_grad": vjp("g_, x, axis=None, keepdims=False", jvp=LINEAR, g_="rt.sum_to({g}, {g_}, {axis}, {keepdims})"),
    "srctrans.runtime.mean_grad": vjp(
        "g_, x, axis=None, keepdims=False", jvp=LINEAR, g_=_g_of_reduction("mean_grad", "{x}, {axis}, {keepdims}")
    ),
    "srctrans.runtime.sum_to": vjp("h, g_, axis=None, keepdims=False", jvp=LINEAR, h="rt.sum_grad({g}, {h}, {axis}, {keepdims})"),
    "srctrans.runtime.transpose_grad": vjp("g_, axes=None", jvp=LINEAR, g_="rt.transpose({g}, {axes})"),
    "srctrans.runtime.transpose": vjp("x, axes=None", jvp=LINEAR, x="rt.transpose_grad({g}, {axes})"),
    "srctrans.runtime.diag_grad": vjp("g_, x, k=0", jvp=LINEAR, g_="rt.diag_grad({g}, {g_}, {k})"),
    "srctrans.runtime.getitem_grad": vjp("g_, x, index", jvp=LINEAR, g_="rt.unbroadcast({g}[{index}], {g_})"),
    "srctrans.runtime.snapshot": vjp("v", jvp=LINEAR, v="{g}"),
    # --- reductions' adjoints: g, and x where the adjoint depends on its values -------------
    # max/min: x and ans only choose the positions, a piecewise constant choice
    "srctrans.runtime.extremum_grad": vjp(
        "g_, x, ans_, axis=None, keepdims=False", jvp=LINEAR,
        g_=_g_of_reduction("extremum_grad", "{x}, {ans_}, {axis}, {keepdims}"),
    ),
    "srctrans.runtime.prod_grad": vjp(
        "g_, x, ans_, axis=None, keepdims=False", jvp=dict(g_="rt.prod_grad({t}, {x}, {ans_}, {axis}, {keepdims})", x="rt.prod_grad_grad({t}, {g_}, {x}, {axis}, {keepdims})"),
        g_=_g_of_reduction("prod_grad", "{x}, {ans_}, {axis}, {keepdims}"),
        x="rt.prod_grad_grad({g}, {g_}, {x}, {axis}, {keepdims})",
    ),
    # 2 g (x - mean(x)) / (n - ddof): x is centered, and centering is its own transpose
    "srctrans.runtime.var_grad": vjp(
        "g_, x, axis=None, ddof=0, keepdims=False", jvp=MULTILINEAR,
        g_=_g_of_reduction("var_grad", "{x}, {axis}, {ddof}, {keepdims}"),
        x="rt.var_grad(rt.ones_like({g_}), {g} * rt.sum_grad({g_}, {x}, {axis}, {keepdims}), {axis}, {ddof}, {keepdims})",
    ),
    # var_grad(g / (2 ans), x): the result is proportional to 1 / ans
    "srctrans.runtime.std_grad": vjp(
        "g_, x, ans_, axis=None, ddof=0, keepdims=False", jvp=dict(g_="rt.std_grad({t}, {x}, {ans_}, {axis}, {ddof}, {keepdims})", x="rt.std_grad({g_}, {t}, {ans_}, {axis}, {ddof}, {keepdims})", ans_="-rt.std_grad({g_} * {t} / {ans_}, {x}, {ans_}, {axis}, {ddof}, {keepdims})"),
        g_=_g_of_reduction("std_grad", "{x}, {ans_}, {axis}, {ddof}, {keepdims}"),
        x="rt.var_grad(rt.ones_like({g_}), {g} * rt.sum_grad({g_} / (2.0 * {ans_}), {x}, {axis}, {keepdims}), "
        "{axis}, {ddof}, {keepdims})",
        ans_="-rt.sum_to({g} * {ans}, {ans_}, {axis}, {keepdims}) / {ans_}",
    ),
    # --- products: bilinear in g and the other operand; x (dot_grad_x) and y (dot_grad_y) give shapes
    # <u, dot_grad_x(g, x, y)> = <g, dot(u, y)>; <u, dot_grad_y(g, x, y)> = <g, dot(x, u)>
    "srctrans.runtime.dot_grad_x": vjp(
        "g_, x, y", jvp=MULTILINEAR, g_="rt.unbroadcast(rt.dot({g}, {y}), {g_})", y="rt.dot_grad_y({g_}, {g}, {y})"
    ),
    "srctrans.runtime.dot_grad_y": vjp(
        "g_, x, y", jvp=MULTILINEAR, g_="rt.unbroadcast(rt.dot({x}, {g}), {g_})", x="rt.dot_grad_x({g_}, {x}, {g})"
    ),
    "srctrans.runtime.dot": vjp("x, y", jvp=MULTILINEAR, x="rt.dot_grad_x({g}, {x}, {y})", y="rt.dot_grad_y({g}, {x}, {y})"),
    "srctrans.runtime.matmul": vjp("x1, x2", jvp=MULTILINEAR, x1="rt.dot_grad_x({g}, {x1}, {x2})", x2="rt.dot_grad_y({g}, {x1}, {x2})"),
    # --- elementwise partials --------------------------------------------------------------
    # a * log(b), 0 where a is 0. Where b is 0 the partials would be infinite while the value
    # is 0 (a = 0) or infinite (a != 0): b + (b == 0) keeps x ** y's second derivatives at x = 0 finite
    "srctrans.runtime.xlogy": vjp(
        "a, b", jvp=dict(a="{t} * np.log({b} + ({b} == 0))", b="{a} * {t} / ({b} + ({b} == 0))"),
        a="rt.unbroadcast({g} * np.log({b} + ({b} == 0)), {a})",
        b="rt.unbroadcast({g} * {a} / ({b} + ({b} == 0)), {b})",
    ),
    "srctrans.runtime.sinc_grad": elementwise("rt.sinc_grad2({x})"),
    "srctrans.runtime.digamma": elementwise("rt.trigamma({x})"),
    # --- adjoints of shape and linear-algebra functions ----------------------------------------
    # rearranging elements: linear in g, the adjoint is the forward function (x gives shapes)
    "srctrans.runtime.cumsum_grad": vjp("g_, x, axis=None", jvp=LINEAR, g_="rt.unbroadcast(np.cumsum({g}, {axis}), {g_})"),
    "srctrans.runtime.diagonal_grad": vjp(
        "g_, x, offset=0, axis1=0, axis2=1", jvp=LINEAR, g_="rt.unbroadcast(np.diagonal({g}, {offset}, {axis1}, {axis2}), {g_})"
    ),
    "srctrans.runtime.moveaxis_grad": vjp(
        "g_, x, source, destination", jvp=LINEAR, g_="rt.moveaxis_grad({g}, {g_}, {destination}, {source})"
    ),
    "srctrans.runtime.flip_grad": vjp("g_, x, axis=None", jvp=LINEAR, g_="rt.flip_grad({g}, {g_}, {axis})"),
    "srctrans.runtime.diff_grad": vjp("g_, x, n=1, axis=-1", jvp=LINEAR, g_="np.diff({g}, {n}, {axis})"),
    "srctrans.runtime.roll_grad": vjp("g_, x, shift, axis=None", jvp=LINEAR, g_="rt.roll_grad({g}, {g_}, np.negative({shift}), {axis})"),
    "srctrans.runtime.tile_grad": vjp("g_, x, reps", jvp=LINEAR, g_="rt.unbroadcast(np.tile({g}, {reps}), {g_})"),
    "srctrans.runtime.repeat_grad": vjp(
        "g_, x, repeats, axis=None", jvp=LINEAR, g_="rt.unbroadcast(np.repeat({g}, {repeats}, {axis}), {g_})"
    ),
    "srctrans.runtime.pad_grad": vjp('g_, x, pad_width, mode="constant"', jvp=LINEAR, g_="rt.unbroadcast(np.pad({g}, {pad_width}), {g_})"),
    # x only orders the elements (piecewise constant): g's adjoint is u gathered in sorted order
    "srctrans.runtime.sort_grad": vjp(
        "g_, x, axis=-1", jvp=LINEAR,
        g_="rt.unbroadcast(rt.take_sorted({g}, {x}, {axis}), {g_})",
    ),
    "srctrans.runtime.take_sorted": vjp("u, x, axis=-1", jvp=LINEAR, u="rt.sort_grad({g}, {x}, {axis})"),
    "srctrans.runtime.take_grad": vjp(
        "g_, x, indices, axis=None", jvp=LINEAR, g_="rt.unbroadcast(np.take({g}, {indices}, {axis}), {g_})"
    ),
    "srctrans.runtime.take_along_axis_grad": vjp(
        "g_, x, indices, axis=-1", jvp=LINEAR, g_="rt.unbroadcast(np.take_along_axis({g}, {indices}, {axis}), {g_})"
    ),
    # bilinear, as dot_grad_x/y: <u, inner_grad_x(g, x, y)> = <g, inner(u, y)> ...
    "srctrans.runtime.inner_grad_x": vjp(
        "g_, x, y", jvp=MULTILINEAR, g_="rt.unbroadcast(np.inner({g}, {y}), {g_})", y="rt.inner_grad_y({g_}, {g}, {y})"
    ),
    "srctrans.runtime.inner_grad_y": vjp(
        "g_, x, y", jvp=MULTILINEAR, g_="rt.unbroadcast(np.inner({x}, {g}), {g_})", x="rt.inner_grad_x({g_}, {x}, {g})"
    ),
    "srctrans.runtime.tensordot_grad_x": vjp(
        "g_, x, y, axes=2", jvp=MULTILINEAR,
        g_="rt.unbroadcast(np.tensordot({g}, {y}, {axes}), {g_})",
        y="rt.tensordot_grad_y({g_}, {g}, {y}, {axes})",
    ),
    "srctrans.runtime.tensordot_grad_y": vjp(
        "g_, x, y, axes=2", jvp=MULTILINEAR,
        g_="rt.unbroadcast(np.tensordot({x}, {g}, {axes}), {g_})",
        x="rt.tensordot_grad_x({g_}, {x}, {g}, {axes})",
    ),
    # solve(a.T, g): its adjoint in g is solve(a, u); in a, -solve(a.T, g) solve(a, u).T, which
    # is solve_grad_a with solve(a, u) in the place of the answer
    "srctrans.runtime.solve_grad_b": vjp(
        "g_, a, b",
        jvp=dict(
            g_="rt.solve_grad_b({t}, {a}, {b})",
            # (solve(a.T, g_) again, not {ans}: summed over a stack a for a b shared by its matrices)
            a="-rt.solve_grad_b(rt.from_columns(rt.matrix_transpose({t}) @ np.linalg.solve(rt.matrix_transpose({a}), "
            "rt.as_columns({g_}, {b})), {b}), {a}, {b})",
        ),
        g_="rt.unbroadcast(np.linalg.solve({a}, {g}), {g_})",
        a="rt.solve_grad_a({g_}, {a}, {b}, np.linalg.solve({a}, {g}))",
    ),
    # g x / norm (0 where the norm is 0): linear in x for a fixed norm, proportional to 1 / norm
    # (the x and ans_ terms hold for the 2-norm and Frobenius norm only: rt.norm_ord_once refuses
    # the other orders' second derivatives; the g_ term, expand(g) * K(x), holds for every order)
    "srctrans.runtime.norm_grad": vjp(
        "g_, x, ans_, ord=None, axis=None, keepdims=False", jvp=dict(g_="rt.norm_grad({t}, {x}, {ans_}, {ord}, {axis}, {keepdims})", x="rt.norm_grad({g_}, {t}, {ans_}, rt.norm_ord_once({ord}, {x}, {axis}), {axis}, {keepdims})", ans_="-rt.norm_grad({g_} * {t} / {ans_}, {x}, {ans_}, rt.norm_ord_once({ord}, {x}, {axis}), {axis}, {keepdims})"),
        g_=_g_of_reduction("norm_grad", "{x}, {ans_}, {ord}, {axis}, {keepdims}"),
        x="rt.norm_grad({g_}, {g}, {ans_}, rt.norm_ord_once({ord}, {x}, {axis}), {axis}, {keepdims})",
        ans_="-rt.sum_to(rt.norm_grad({g_}, {g} * {x}, {ans_} * {ans_}, rt.norm_ord_once({ord}, {x}, {axis}), {axis}, {keepdims}), {ans_}, {axis}, {keepdims})",
    ),
    "srctrans.runtime.norm_ord_once": nondiff("ord, x, axis=None"),
    # g exp(x - ans): its partials in x and in ans are the result itself, with opposite signs
    "srctrans.runtime.logsumexp_grad": vjp(
        "g_, x, ans_, axis=None, keepdims=False, b=None", jvp=dict(g_="rt.logsumexp_grad({t}, {x}, {ans_}, {axis}, {keepdims}, {b})", x="{ans} * {t}", ans_="-rt.logsumexp_grad({g_} * {t}, {x}, {ans_}, {axis}, {keepdims}, {b})"),
        g_=_g_of_reduction("logsumexp_grad", "{x}, {ans_}, {axis}, {keepdims}, {b}"),
        x="{g} * {ans}",
        ans_="-rt.sum_to({g} * {ans}, {ans_}, {axis}, {keepdims})",
    ),
    # --- the pieces of a joined array, and the joined pieces: each the other's transpose ----
    # (``{g}`` is the tuple of the pieces' adjoints; the arrays give only shapes)
    "srctrans.runtime.stack_grad": vjp("g_, arrays, axis=0", jvp=LINEAR, g_="np.stack({g}, {axis})"),
    "srctrans.runtime.array_grad": vjp("g_, x", jvp=LINEAR, g_="np.array({g})"),
    "srctrans.runtime.concatenate_grad": vjp("g_, arrays, axis=0", jvp=LINEAR, g_="np.concatenate({g}, {axis})"),
    "srctrans.runtime.hstack_grad": vjp("g_, arrays", jvp=LINEAR, g_="np.hstack({g})"),
    "srctrans.runtime.vstack_grad": vjp("g_, arrays", jvp=LINEAR, g_="np.vstack({g})"),
    "srctrans.runtime.split_grad": vjp("g_, axis=0", jvp=LINEAR, g_="rt.concatenate_grad({g}, {g_}, {axis})"),
    # --- linear algebra --------------------------------------------------------------------
    # l inv(x).T (g_ = (sign's adjoint, l)): linear in l; d inv(x).T = -(inv(x) dx inv(x)).T;
    # matrix by matrix for a stack
    "srctrans.runtime.slogdet_grad": vjp(
        "g_, x",
        jvp=dict(g_="rt.slogdet_grad({t}, {x})", x="-{ans} @ rt.matrix_transpose({t}) @ rt.matrix_transpose(np.linalg.inv({x}))"),
        g_="(rt.zeros_per_matrix({x}), rt.matrix_inner({g}, rt.matrix_transpose(np.linalg.inv({x}))))",
        x="-rt.slogdet_grad({g_}, {x}) @ rt.matrix_transpose({g}) @ rt.matrix_transpose(np.linalg.inv({x}))",
    ),
    # -solve(a.T, g_) ans_.T (an outer product for a vector b): linear in g_ and in ans_, and
    # d solve(a.T, g_) = -solve(a.T, da.T solve(a.T, g_)); a vector b's g_ and ans_ are columns
    # (rt.as_columns) for every matrix of a stack a
    "srctrans.runtime.solve_grad_a": vjp(
        "g_, a, b, ans_", jvp=dict(
            g_="rt.solve_grad_a({t}, {a}, {b}, {ans_})",
            ans_="rt.solve_grad_a({g_}, {a}, {b}, {t})",
            a="-rt.solve_grad_a(rt.from_columns(np.swapaxes({t}, -1, -2) @ np.linalg.solve(np.swapaxes({a}, -1, -2), "
            "rt.as_columns({g_}, {b})), {b}), {a}, {b}, {ans_})",
        ),
        g_="rt.from_columns(-np.linalg.solve({a}, {g} @ rt.as_columns({ans_}, {b})), {b})",
        ans_="rt.from_columns(-np.swapaxes({g}, -1, -2) @ np.linalg.solve(np.swapaxes({a}, -1, -2), rt.as_columns({g_}, {b})), {b})",
        a="rt.solve_grad_a({g_}, {a}, {b}, rt.from_columns(-np.linalg.solve({a}, {g} @ rt.as_columns({ans_}, {b})), {b}))",
    ),
    "srctrans.runtime.as_columns": vjp("v, b", jvp=LINEAR, v="rt.from_columns({g}, {b})"),
    "srctrans.runtime.from_columns": vjp("m, b", jvp=LINEAR, m="rt.as_columns({g}, {b})"),
    # one number per matrix: each the other's transpose (det's adjoint and tangent)
    "srctrans.runtime.scale_matrices": vjp(
        "s, m", jvp=MULTILINEAR, s="rt.unbroadcast(rt.matrix_inner({g}, {m}), {s})", m="rt.unbroadcast(rt.scale_matrices({s}, {g}), {m})"
    ),
    "srctrans.runtime.matrix_inner": vjp(
        "a, b", jvp=MULTILINEAR, a="rt.unbroadcast(rt.scale_matrices({g}, {b}), {a})", b="rt.unbroadcast(rt.scale_matrices({g}, {a}), {b})"
    ),
    "srctrans.runtime.zeros_per_matrix": nondiff("x"),
    "srctrans.runtime.trace_grad": vjp(
        "g_, x, offset=0, axis1=0, axis2=1", jvp=LINEAR, g_="rt.unbroadcast(np.trace({g}, {offset}, {axis1}, {axis2}), {g_})"
    ),
    # linspace's shares of start (or stop): spreading a number over the points, and summing them back
    "srctrans.runtime.linspace_grad": vjp(
        "g_, x, endpoint=True, at_stop=False", jvp=LINEAR, g_="rt.linspace_spread({g}, {g_}, {endpoint}, {at_stop})"
    ),
    "srctrans.runtime.linspace_spread": vjp(
        "u, g_, endpoint=True, at_stop=False", jvp=LINEAR, u="rt.linspace_grad({g}, {u}, {endpoint}, {at_stop})"
    ),
    "srctrans.runtime.pad_tangent": vjp('t_, pad_width, mode="constant"', jvp=LINEAR, t_="rt.pad_grad({g}, {t_}, {pad_width}, {mode})"),
})

# --- higher derivatives: rules for the helpers that the rules above call -------------------------
RUNTIME_DERIVATIVES.update({
    # n-th derivatives: each one's derivative is the next
    "srctrans.runtime.sinc_grad2": elementwise("rt.sinc_derivative(3, {x})"),
    "srctrans.runtime.sinc_derivative": vjp(
        "n, x", jvp=dict(x="{t} * rt.sinc_derivative({n} + 1, {x})"), x="{g} * rt.sinc_derivative({n} + 1, {x})"
    ),
    "srctrans.runtime.trigamma": elementwise("rt.polygamma(2, {x})"),
    "srctrans.runtime.polygamma": vjp("n, x", jvp=dict(x="{t} * rt.polygamma({n} + 1, {x})"), x="{g} * rt.polygamma({n} + 1, {x})"),
    # g H(x) u, H prod's Hessian (symmetric): linear in u and in g; its x derivative is prod's third
    "srctrans.runtime.prod_grad_grad": vjp(
        "u, g_, x, axis=None, keepdims=False",
        jvp=dict(
            u="rt.prod_grad_grad({t}, {g_}, {x}, {axis}, {keepdims})",
            g_="rt.prod_grad_grad({u}, {t}, {x}, {axis}, {keepdims})",
            x="rt.prod_grad3({t}, {u}, {g_}, {x}, {axis}, {keepdims})",
        ),
        u="rt.prod_grad_grad({g}, {g_}, {x}, {axis}, {keepdims})",
        g_="rt.sum_to({g} * rt.prod_grad_grad({u}, rt.ones_like({g_}), {x}, {axis}, {keepdims}), {g_}, {axis}, {keepdims})",
        x="rt.prod_grad3({g}, {u}, {g_}, {x}, {axis}, {keepdims})",
    ),
    # <g, einsum(x, y, z)> is linear in each of g, x, y, z, and each of these is its gradient in
    # one of them (the value there unread): a derivative puts the incoming adjoint (or the
    # tangent) in the place of one and asks for the gradient in another
    "srctrans.runtime.einsum": vjp(
        "subscripts, x, y=None, z=None", jvp=MULTILINEAR,
        x="rt.einsum_grad_x({subscripts}, {g}, {x}, {y}, {z})",
        y="rt.einsum_grad_y({subscripts}, {g}, {x}, {y}, {z})",
        z="rt.einsum_grad_z({subscripts}, {g}, {x}, {y}, {z})",
    ),
    "srctrans.runtime.einsum_grad_x": vjp(
        "subscripts, g_, x, y=None, z=None",
        jvp=dict(
            g_="rt.einsum_grad_x({subscripts}, {t}, {x}, {y}, {z})",
            y="rt.einsum_grad_x({subscripts}, {g_}, {x}, {t}, {z})",
            z="rt.einsum_grad_x({subscripts}, {g_}, {x}, {y}, {t})",
        ),
        g_="rt.einsum({subscripts}, {g}, {y}, {z})",
        y="rt.einsum_grad_y({subscripts}, {g_}, {g}, {y}, {z})",
        z="rt.einsum_grad_z({subscripts}, {g_}, {g}, {y}, {z})",
    ),
    "srctrans.runtime.einsum_grad_y": vjp(
        "subscripts, g_, x, y, z=None",
        jvp=dict(
            g_="rt.einsum_grad_y({subscripts}, {t}, {x}, {y}, {z})",
            x="rt.einsum_grad_y({subscripts}, {g_}, {t}, {y}, {z})",
            z="rt.einsum_grad_y({subscripts}, {g_}, {x}, {y}, {t})",
        ),
        g_="rt.einsum({subscripts}, {x}, {g}, {z})",
        x="rt.einsum_grad_x({subscripts}, {g_}, {x}, {g}, {z})",
        z="rt.einsum_grad_z({subscripts}, {g_}, {x}, {g}, {z})",
    ),
    "srctrans.runtime.einsum_grad_z": vjp(
        "subscripts, g_, x, y, z",
        jvp=dict(
            g_="rt.einsum_grad_z({subscripts}, {t}, {x}, {y}, {z})",
            x="rt.einsum_grad_z({subscripts}, {g_}, {t}, {y}, {z})",
            y="rt.einsum_grad_z({subscripts}, {g_}, {x}, {t}, {z})",
        ),
        g_="rt.einsum({subscripts}, {x}, {y}, {g})",
        x="rt.einsum_grad_x({subscripts}, {g_}, {x}, {y}, {g})",
        y="rt.einsum_grad_y({subscripts}, {g_}, {x}, {y}, {g})",
    ),
    # cholesky's rule: the lower triangle with its diagonal halved, and the two ways of
    # symmetrizing with it (each the other's transpose)
    "srctrans.runtime.matrix_transpose": vjp("x", jvp=LINEAR, x="rt.matrix_transpose({g})"),
    # np.c_'s items (desugar): a reshape, so the adjoint is g reshaped back
    "srctrans.runtime.c_column": vjp("x", jvp=LINEAR, x="np.reshape(np.ascontiguousarray({g}), np.shape({x}))"),
    "srctrans.runtime.half_tril": vjp("m", jvp=LINEAR, m="rt.half_tril({g})"),
    "srctrans.runtime.half_tril_sym": vjp("m", jvp=LINEAR, m="rt.sym_half_tril({g})"),
    "srctrans.runtime.sym_half_tril": vjp("m", jvp=LINEAR, m="rt.half_tril_sym({g})"),
    # --- linear algebra (issue 20) ---
    "srctrans.runtime.put_block": vjp("x, index", jvp=LINEAR, x="rt.block_of({g}, {index})"),
    "srctrans.runtime.block_of": vjp("m, index", jvp=LINEAR, m="rt.put_block({g}, {index})"),
    # cumprod: ans[i] = x[i] ans[i - 1]. Its adjoint is L * linrec_rev(g, x) and its tangent
    # linrec(t * L, x), L = shift_right(ans, axis, 1.0) the products before each element; the
    # recurrences and shifts below are each other's transposes, and multiply only (exact at zeros).
    # (With axis=None, x is flat for them: np.reshape gives shapes back.)
    "srctrans.runtime.cumprod_grad": vjp(
        "g_, x, ans_, axis=None",
        jvp=dict(
            g_="rt.cumprod_grad({t}, {x}, {ans_}, {axis})",
            x="rt.cumprod_grad(rt.shift_left(np.reshape({t}, np.shape({ans_})) * rt.linrec_rev({g_}, {x}, {axis}), {axis}), "
            "{x}, {ans_}, {axis})",
            ans_="np.reshape(rt.shift_right({t}, {axis}, 0.0) * rt.linrec_rev({g_}, {x}, {axis}), np.shape({x}))",
        ),
        g_="rt.cumprod_jvp({g}, {x}, {ans_}, {axis})",
        x="np.reshape(rt.linrec_rev({g_}, {x}, {axis}) * rt.shift_right(rt.cumprod_jvp({g}, {x}, {ans_}, {axis}), {axis}, 0.0), "
        "np.shape({x}))",
        ans_="rt.shift_left(np.reshape({g}, np.shape({ans_})) * rt.linrec_rev({g_}, {x}, {axis}), {axis})",
    ),
    "srctrans.runtime.cumprod_jvp": vjp(
        "t_, x, ans_, axis=None",
        jvp=dict(
            t_="rt.cumprod_jvp({t}, {x}, {ans_}, {axis})",
            x="rt.linrec(np.reshape({t}, np.shape({ans_})) * rt.shift_right({ans}, {axis}, 0.0), {x}, {axis})",
            ans_="rt.linrec(np.reshape({t_}, np.shape({ans_})) * rt.shift_right({t}, {axis}, 0.0), {x}, {axis})",
        ),
        t_="rt.cumprod_grad({g}, {x}, {ans_}, {axis})",
        x="np.reshape(rt.shift_right({ans}, {axis}, 0.0) * rt.linrec_rev({g}, {x}, {axis}), np.shape({x}))",
        ans_="rt.shift_left(np.reshape({t_}, np.shape({ans_})) * rt.linrec_rev({g}, {x}, {axis}), {axis})",
    ),
    # z = linrec(b, a): z[i] = b[i] + a[i] z[i - 1]; linrec_rev is its transpose in b
    "srctrans.runtime.linrec": vjp(
        "b, a, axis=None",
        jvp=dict(
            b="rt.linrec({t}, {a}, {axis})",
            a="rt.linrec(np.reshape({t}, np.shape({ans})) * rt.shift_right({ans}, {axis}, 0.0), {a}, {axis})",
        ),
        b="np.reshape(rt.linrec_rev({g}, {a}, {axis}), np.shape({b}))",
        a="np.reshape(rt.shift_right({ans}, {axis}, 0.0) * rt.linrec_rev({g}, {a}, {axis}), np.shape({a}))",
    ),
    # s = linrec_rev(b, a): s[j] = b[j] + a[j + 1] s[j + 1]
    "srctrans.runtime.linrec_rev": vjp(
        "b, a, axis=None",
        jvp=dict(
            b="rt.linrec_rev({t}, {a}, {axis})",
            a="rt.linrec_rev(rt.shift_left(np.reshape({t}, np.shape({ans})) * {ans}, {axis}), {a}, {axis})",
        ),
        b="np.reshape(rt.linrec({g}, {a}, {axis}), np.shape({b}))",
        a="np.reshape({ans} * rt.shift_right(rt.linrec({g}, {a}, {axis}), {axis}, 0.0), np.shape({a}))",
    ),
    "srctrans.runtime.shift_right": vjp(
        "z, axis=None, fill=0.0", jvp=dict(z="rt.shift_right({t}, {axis}, 0.0)"), z="np.reshape(rt.shift_left({g}, {axis}), np.shape({z}))"
    ),
    "srctrans.runtime.shift_left": vjp("z, axis=None", jvp=LINEAR, z="np.reshape(rt.shift_right({g}, {axis}, 0.0), np.shape({z}))"),
})
# --- array functions and reductions (issue 20) ---
# The helpers of np.append, np.column_stack, np.kron, np.rollaxis, np.select, np.average, np.median,
# np.partition, np.convolve and np.interp: linear in their g_ (each one's adjoint is the function
# itself or its transpose); the other operands give shapes and positions, except the second operand
# of the bilinear ones (kron's, convolve's)
RUNTIME_DERIVATIVES.update({
    "srctrans.runtime.append_grad_arr": vjp(
        "g_, arr, values, axis=None", jvp=LINEAR, g_="rt.unbroadcast(np.append({g}, rt.zeros_like({values}), {axis}), {g_})"
    ),
    "srctrans.runtime.append_grad_values": vjp(
        "g_, arr, values, axis=None", jvp=LINEAR, g_="rt.unbroadcast(np.append(rt.zeros_like({arr}), {g}, {axis}), {g_})"
    ),
    "srctrans.runtime.column_stack_grad": vjp("g_, arrays", jvp=LINEAR, g_="np.column_stack({g})"),
    # <u, kron_grad_a(g, a, b)> = <g, kron(u, b)>; <u, kron_grad_b(g, a, b)> = <g, kron(a, u)>
    "srctrans.runtime.kron_grad_a": vjp(
        "g_, a, b", jvp=MULTILINEAR, g_="rt.unbroadcast(np.kron({g}, {b}), {g_})", b="rt.kron_grad_b({g_}, {g}, {b})"
    ),
    "srctrans.runtime.kron_grad_b": vjp(
        "g_, a, b", jvp=MULTILINEAR, g_="rt.unbroadcast(np.kron({a}, {g}), {g_})", a="rt.kron_grad_a({g_}, {a}, {g})"
    ),
    "srctrans.runtime.rollaxis_grad": vjp("g_, x, axis, start=0", jvp=LINEAR, g_="rt.unbroadcast(np.rollaxis({g}, {axis}, {start}), {g_})"),
    # ({g}: the tuple of the choices' adjoints)
    "srctrans.runtime.select_grad": vjp("g_, condlist, choicelist", jvp=LINEAR, g_="rt.unbroadcast(np.select({condlist}, {g}, 0.0), {g_})"),
    "srctrans.runtime.select_default": vjp("condlist, g_", jvp=LINEAR, g_="rt.unbroadcast(rt.select_default({condlist}, {g}), {g_})"),
    "srctrans.runtime.average_weights": vjp(
        "w, a, axis=None, returned=False", jvp=LINEAR, w="rt.unbroadcast(np.reshape({g}, np.shape({w})), {w})"
    ),
    # x only chooses the middle positions (piecewise constant)
    "srctrans.runtime.median_grad": vjp(
        "g_, x, axis=None, keepdims=False", jvp=LINEAR, g_=_g_of_reduction("median_grad", "{x}, {axis}, {keepdims}")
    ),
    # a rearrangement's transpose: the same values the other way round
    "srctrans.runtime.permutation_grad": vjp("g_, src, dst, axis=-1", jvp=LINEAR, g_="rt.permutation_grad({g}, {dst}, {src}, {axis})"),
    # <u, correlate(g, other)> = <g, convolve(u, other)>
    "srctrans.runtime.convolve_grad": vjp(
        "g_, other, mode='full'", jvp=MULTILINEAR, g_="np.convolve({g}, {other})", other="rt.convolve_grad({g_}, {g}, {mode})"
    ),
    # (a tuple of adjoints, one per axis, where np.gradient gives a tuple)
    "srctrans.runtime.gradient_grad": vjp(
        "g_, f, spacing=1.0, axis=None, edge_order=1", jvp=LINEAR,
        g_="np.gradient({g}, {spacing}, axis={axis}, edge_order={edge_order})",
    ),
    "srctrans.runtime.interp_grad": vjp(
        "g_, x, xp, fp, left=None, right=None, period=None", jvp=LINEAR,
        g_="rt.unbroadcast(rt.interp_linear({x}, {xp}, {g}, {left}, {right}, {period}), {g_})",
    ),
    "srctrans.runtime.interp_linear": vjp(
        "x, xp, u, left=None, right=None, period=None", jvp=LINEAR,
        u="rt.interp_grad({g}, {x}, {xp}, {u}, {left}, {right}, {period})",
    ),
})

# --- scipy.special's Bessel functions and their kin (issue 20) -----------------------------------
# The derivative in x of a Bessel function of order v is the same function at the orders v - 1 and
# v + 1 (DLMF 10.6.2, 10.29.2); of the scaled ones, that and the scale's derivative. So one template
# per family differentiates every order, and the helpers' own rules below (the same templates)
# every derivative of it. {x}: the order v, {y}: the argument x, {ans}: the function's value.
_BESSEL = {  # {lo}, {hi}: the neighbouring orders; {x}: the argument
    "jv": "0.5 * (rt.jv({lo}, {x}) - rt.jv({hi}, {x}))",
    "yv": "0.5 * (rt.yv({lo}, {x}) - rt.yv({hi}, {x}))",
    "iv": "0.5 * (rt.iv({lo}, {x}) + rt.iv({hi}, {x}))",
    "kv": "-0.5 * (rt.kv({lo}, {x}) + rt.kv({hi}, {x}))",
    "ive": "0.5 * (rt.ive({lo}, {x}) + rt.ive({hi}, {x})) - np.sign({x}) * {ans}",  # iv exp(-|x|)
    "kve": "{ans} - 0.5 * (rt.kve({lo}, {x}) + rt.kve({hi}, {x}))",  # kv exp(x)
    "yn": "0.5 * (rt.yn({lo}, {x}) - rt.yn({hi}, {x}))",  # (integer orders: yn's own dtypes)
}


def bessel_grad(family: str, order: float | None = None) -> str:
    """The derivative in ``x`` of ``family`` (``"jv"``, ..., ``"kve"``): at a fixed ``order`` a
    template of one argument ``{x}`` (``j0``'s is ``bessel_grad("jv", 0)``); else of two, the
    order ``{x}`` and the argument ``{y}`` (``jv(v, x)``'s)."""
    text = _BESSEL[family]
    one = "1" if family == "yn" else "1.0"
    if order is not None:
        return text.replace("{lo}", repr(float(order) - 1.0)).replace("{hi}", repr(float(order) + 1.0))
    return text.replace("{x}", "{y}").replace("{lo}", f"{{x}} - {one}").replace("{hi}", f"{{x}} + {one}")


def expm_derivative(a: str, e: str) -> str:
    """The derivative of expm at ``a`` along ``e`` (a template): the upper right block of the
    exponential of [[a, e], [0, a]] (Higham's block form of the Frechet derivative). Its adjoint
    is the derivative at a's transpose along the cotangent; both are expm again, so every order follows."""
    top = f"np.concatenate(({a}, {e}), axis=-1)"
    bottom = f"np.concatenate((np.zeros_like({a}), {a}), axis=-1)"
    return f"rt.expm(np.concatenate(({top}, {bottom}), axis=-2))[..., :{{x}}.shape[-1], {{x}}.shape[-1]:]"


EXPM = vjp("x", jvp=dict(x=expm_derivative("{x}", "{t}")),
           x=expm_derivative("rt.matrix_transpose({x})", "{g}"))


RUNTIME_DERIVATIVES.update({
    **{f"srctrans.runtime.{family}": elementwise(None, bessel_grad(family)) for family in _BESSEL},
    "srctrans.runtime.expm": EXPM,
    "srctrans.runtime.solve_sylvester": SOLVE_SYLVESTER,
    "srctrans.runtime.gammaln": elementwise("rt.digamma({x})"),
    "srctrans.runtime.erf": elementwise("1.1283791670955126 * np.exp(-{x} * {x})"),
    # Hurwitz's zeta in q (DLMF 25.11.17); in x it has no closed form: refused
    "srctrans.runtime.zeta": elementwise(None, "-{x} * rt.zeta({x} + 1.0, {y})"),
    # d/dx 1F1(a; b; x) = a / b 1F1(a + 1; b + 1; x), and 2F1 alike (DLMF 13.3.15, 15.5.1)
    "srctrans.runtime.hyp1f1": elementwise(None, None, "{x} / {y} * rt.hyp1f1({x} + 1.0, {y} + 1.0, {z})"),
    "srctrans.runtime.hyp2f1": vjp(
        "a, b, c, x",
        jvp=dict(x="{t} * ({a} * {b} / {c}) * rt.hyp2f1({a} + 1.0, {b} + 1.0, {c} + 1.0, {x})"),
        x="rt.unbroadcast({g} * ({a} * {b} / {c}) * rt.hyp2f1({a} + 1.0, {b} + 1.0, {c} + 1.0, {x}), {x})",
    ),
    "srctrans.runtime.multipolygamma": vjp(
        "n, a, d", jvp=dict(a="{t} * rt.multipolygamma({n} + 1, {a}, {d})"), a="{g} * rt.multipolygamma({n} + 1, {a}, {d})"
    ),
})
