"""Every derivative rule, checked against central differences along random directions.

One spec per table entry (``specs.py``); a test asserts the table and the specs
agree, and a planted wrong rule must be caught. (Forward mode: tests/forward/test_rules_forward.py.)

In float32 too: the adjoint file's cotangents and the tangent file's tangents, computed from
float32 arguments, have the dtypes of what they belong to (float32 in, float32 out: no silent
float64) and the values the float64 files (checked against central differences) give at the
same point, to float32 precision.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import srctrans
from srctrans.nesting import tangent_function, vjp_function
from srctrans.rules import derivatives
from srctrans.rules.derivatives import DERIVATIVES, elementwise
from srctrans.tree import tree_flatten, tree_map

from .specs import FIRST_ORDER_SPECS, SPECS, B, normal

# Rules whose derivative deliberately differs from central differences, tested elsewhere.
# Rules checked elsewhere: a collective's derivative needs a batch of examples (pmap or vmap).
NOT_NUMERIC = {
    "srctrans.stop_gradient": "tests/test_grad_api.py::test_custom_vjp_and_stop_gradient",
    "srctrans.parallel.collectives.psum": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
    "srctrans.parallel.collectives.pmean": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
    "srctrans.parallel.collectives.all_gather": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
    "srctrans.parallel.collectives.axis_index": "tests/parallel/test_pmap.py::test_grad_through_a_collective",
}

CASES = [
    (key, i, fn, makers)
    for key, entries in SPECS.items()
    if key not in NOT_NUMERIC
    for i, (fn, makers) in enumerate(entries)
]


def test_every_rule_has_a_spec():
    assert set(DERIVATIVES) - set(SPECS) - set(NOT_NUMERIC) == set(), "rules without a spec"
    assert set(SPECS) - set(DERIVATIVES) == set(), "specs without a rule"


# Rules whose adjoint calls a helper without a rule of its own yet: their second order (the
# adjoint file differentiated again) is refused with NoDerivativeError, checked below.
# For the srctrans.runtime helpers, order 2 is the third derivative of the user's function.
FIRST_ORDER_ONLY = {
    "srctrans.runtime.prod_grad_grad": "rt.prod_grad3",
    "numpy.linalg.multi_dot": "rt.multi_dot_grad",
    "numpy.linalg.eigh": "rt.eigh_grad",
    "numpy.linalg.svd": "rt.svd_grad",
    "numpy.linalg.qr": "rt.qr_grad",
    "numpy.linalg.lstsq": "rt.lstsq_grad_a",
    "numpy.linalg.eig": "rt.eig_grad",
    "scipy.linalg.lu": "rt.lu_grad",
    "scipy.integrate.odeint": "rt.odeint_grad",
}


def _args(key, i, makers):
    rng = np.random.default_rng(zlib.crc32(f"{key}-{i}".encode()))  # the same point in every process
    return tuple(make(rng) for make in makers)


@pytest.mark.parametrize("key,i,fn,makers", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rule_matches_central_differences(key, i, fn, makers):
    """First and second order: the VJP, then the VJP of the generated adjoint file."""
    order = 1 if key in FIRST_ORDER_ONLY or (key, i) in FIRST_ORDER_SPECS else 2
    srctrans.check_grads(fn, _args(key, i, makers), order=order, modes=("rev",))


@pytest.mark.parametrize("key,i", sorted(FIRST_ORDER_SPECS))
def test_a_second_derivative_refused_for_a_spec_is_refused_not_wrong(key, i):
    fn, makers = SPECS[key][i]
    with pytest.raises(NotImplementedError, match="differentiated once only"):
        srctrans.check_grads(fn, _args(key, i, makers), order=2, modes=("rev",))


@pytest.mark.parametrize("key", sorted(FIRST_ORDER_ONLY))
def test_second_order_without_a_rule_is_refused_not_wrong(key):
    fn, makers = SPECS[key][0]
    with pytest.raises(srctrans.NoDerivativeError, match=FIRST_ORDER_ONLY[key].replace("rt.", "srctrans.runtime.")):
        srctrans.check_grads(fn, _args(key, 0, makers), order=2, modes=("rev",))


def _full_svd(x):
    u, s, vt = np.linalg.svd(x)
    return np.sum(u) + np.sum(s) + np.sum(vt)


def test_the_svd_of_a_matrix_not_square_with_full_matrices_is_refused():
    """The extra columns of a full u (rows of a full vt) are not unique: no derivative."""
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        srctrans.grad(_full_svd)(np.random.default_rng(0).standard_normal((4, 3)))


def _eig_values(x):
    w, _ = np.linalg.eig(x)
    return np.sum(w)


def test_eig_of_a_complex_spectrum_is_refused():
    with pytest.raises(NotImplementedError, match="real eigenvalues only"):
        srctrans.grad(_eig_values)(np.array([[0.0, 1.0], [-1.0, 0.0]]))


def test_a_planted_wrong_rule_is_caught(monkeypatch):
    fn, makers = SPECS["numpy.sin"][0]
    args = tuple(make(np.random.default_rng(0)) for make in makers)
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.sin", elementwise("-np.cos({x})"))
    with pytest.raises(AssertionError, match="reverse mode"):
        srctrans.check_grads(fn, args, order=1, modes=("rev",))


# --- every argument, stacks of matrices, float32: what the specs must exercise ---------------------

# Parameters that take ints, axes, flags, strings or shapes: never a differentiated value.
NOT_VALUES = frozenset(
    "axis axes keepdims ddof index indices k offset axis1 axis2 n shift reps repeats pad_width mode subscripts "
    "ord source destination endpoint at_stop dtype out shape condition num kind order axis_name indices_or_sections "
    "start condlist returned left right period edge_order".split()
)
# The runtime helpers' parameters read only for a shape, for positions or as a constant have no
# template; the specs pass each as a differentiated argument, so that the numerical check sees
# its zero adjoint is right. Except:
HELPER_PARAMS_NOT_EXERCISED = {
    ("srctrans.runtime.logsumexp_grad", "b"): "logsumexp's b= is refused (NotImplementedError), not differentiated",
    ("srctrans.runtime.shift_right", "fill"): "the rules that call it pass a literal",
    ("srctrans.runtime.gradient_grad", "spacing"): "np.gradient's spacing is a constant: its rule refuses a differentiated one",
    ("srctrans.runtime.interp_grad", "x"): "np.interp is differentiated in fp only: its rule refuses a differentiated x",
    ("srctrans.runtime.interp_grad", "xp"): "np.interp is differentiated in fp only: its rule refuses a differentiated xp",
    ("srctrans.runtime.interp_linear", "x"): "np.interp is differentiated in fp only: its rule refuses a differentiated x",
    ("srctrans.runtime.interp_linear", "xp"): "np.interp is differentiated in fp only: its rule refuses a differentiated xp",
    # scipy.special's orders and parameters: refused when differentiated (no derivative there)
    **{(f"srctrans.runtime.{name}", "x"): "a Bessel function's order: its rule refuses a differentiated one"
       for name in ("jv", "yv", "yn", "iv", "ive", "kv", "kve")},
    ("srctrans.runtime.zeta", "x"): "zeta's exponent: its rule refuses a differentiated one",
    ("srctrans.runtime.hyp1f1", "x"): "1F1's parameter a: its rule refuses a differentiated one",
    ("srctrans.runtime.hyp1f1", "y"): "1F1's parameter b: its rule refuses a differentiated one",
    **{("srctrans.runtime.hyp2f1", p): f"2F1's parameter {p}: its rule refuses a differentiated one" for p in "abc"},
    ("srctrans.runtime.multipolygamma", "d"): "multigammaln's dimension, an integer",
}


def _unreachable_keys() -> set[str]:
    """Table entries that name the same object as an earlier one (np.absolute is np.abs): never looked up."""
    from srctrans.rules import object_named
    from srctrans.rules.lookup import rule_keys_by_id

    named = {k: obj for k in DERIVATIVES if (obj := object_named(k)) is not None}  # (imports their modules)
    by_id = rule_keys_by_id()
    return {k for k, obj in named.items() if by_id.get(id(obj)) != k}


def _required_arguments(keys) -> set[tuple[str, str]]:
    """(rule, parameter): every parameter a rule has a derivative template for, and every value
    parameter of a runtime helper read without one."""
    from srctrans.rules.runtime_helpers import RUNTIME_DERIVATIVES

    required = set()
    for key in keys:
        rule = DERIVATIVES[key]
        if rule.kind not in ("elementwise", "vjp"):
            continue
        required |= {(key, p) for p in rule.templates}
        if key in RUNTIME_DERIVATIVES:
            required |= {(key, p.name.lstrip("*")) for p in rule.params if p.name.lstrip("*") not in NOT_VALUES}
    return required - set(HELPER_PARAMS_NOT_EXERCISED)


def exercised_arguments(specs, monkeypatch) -> set[tuple[str, str]]:
    """(rule, parameter) pairs that the adjoint files of ``specs`` apply a rule to with a
    differentiated value in that parameter (files are written again, not reused, to see it)."""
    from srctrans import pipeline
    from srctrans.ad import reverse

    seen: set[tuple[str, str]] = set()
    apply = reverse.Reverse._apply

    def recording(self, op, g, target, values, depth, block):
        if op.rule is not None and op.key in DERIVATIVES:
            seen.update((op.key, p.name.lstrip("*")) for p in op.rule.params if self._carries(op.args.get(p.name.lstrip("*"))))
        return apply(self, op, g, target, values, depth, block)

    monkeypatch.setattr(reverse.Reverse, "_apply", recording)
    monkeypatch.setattr(pipeline, "_reuse", lambda *args, **kwargs: None)
    for key, entries in specs.items():
        wanted = _required_arguments([key])
        for fn, makers in entries:
            if wanted <= seen:
                break  # (writing files is slow: enough specs of this rule seen)
            vjp_function(fn, len(makers))
    return seen


def test_the_specs_differentiate_every_argument_of_every_rule(monkeypatch):
    """A rule's template for an argument is checked only where a spec differentiates that argument."""
    keys = set(SPECS) - set(NOT_NUMERIC) - _unreachable_keys()
    specs = {k: SPECS[k] for k in sorted(keys)}
    missing = _required_arguments(keys) - exercised_arguments(specs, monkeypatch)
    assert not missing, f"no spec differentiates these arguments: {sorted(missing)}"


def test_an_argument_no_spec_differentiates_is_found(monkeypatch):
    x_only = {"numpy.multiply": [(lambda x: np.multiply(x, B), (lambda r: normal(r, 4),))]}
    seen = exercised_arguments(x_only, monkeypatch)
    assert ("numpy.multiply", "x") in seen and ("numpy.multiply", "y") not in seen


def test_every_tangent_rule_covers_the_arguments_of_the_adjoint_rule():
    """A differentiated argument with a reverse template but no tangent term would be dropped in forward mode."""
    for key, rule in DERIVATIVES.items():
        if isinstance(rule.jvp, dict):
            assert set(rule.jvp) == set(rule.templates), key


# linear algebra: rules that must hold matrix by matrix on stacks (..., n, n)
STACKED = [
    k for k in DERIVATIVES
    # (np.linalg.multi_dot and lstsq take matrices and vectors only)
    if (k.startswith("numpy.linalg.") and k not in ("numpy.linalg.multi_dot", "numpy.linalg.lstsq")) or k in ("numpy.matmul", "numpy.trace", "numpy.einsum")
    or k in {f"srctrans.runtime.{h}" for h in (
        "matmul dot dot_grad_x dot_grad_y slogdet_grad solve_grad_a solve_grad_b matrix_transpose half_tril half_tril_sym "
        "sym_half_tril scale_matrices matrix_inner zeros_per_matrix trace_grad as_columns from_columns put_block block_of"
    ).split()}
]


@pytest.mark.parametrize("key", STACKED)
def test_linear_algebra_rules_have_a_spec_on_a_stack_of_matrices(key):
    assert any(
        np.ndim(a) >= 3 for i, (fn, makers) in enumerate(SPECS[key]) for a in _args(key, i, makers)
    ), f"{key}: no spec with a stack of matrices"


def test_a_rule_that_drops_an_argument_is_caught(monkeypatch):
    """np.linspace's endpoints taken for constants (its rule was nondiff): the spec that moves them fails."""
    key = "numpy.linspace"
    i = next(i for i, (fn, makers) in enumerate(SPECS[key]) if len(makers) == 2)
    fn, makers = SPECS[key][i]
    monkeypatch.setitem(derivatives.DERIVATIVES, key, derivatives.nondiff("start, stop, num=50"))
    with pytest.raises(AssertionError, match="reverse mode"):
        srctrans.check_grads(fn, _args(key, i, makers), order=1, modes=("rev",))


def test_a_zero_adjoint_for_one_argument_is_caught(monkeypatch):
    fn, makers = SPECS["numpy.multiply"][0]
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.multiply", elementwise("{y}", "0.0 * {x}"))
    with pytest.raises(AssertionError, match="reverse mode"):
        srctrans.check_grads(fn, _args("numpy.multiply", 0, makers), order=1, modes=("rev",))


def test_an_argument_without_a_template_is_refused(monkeypatch):
    fn, makers = SPECS["numpy.multiply"][0]
    monkeypatch.setitem(derivatives.DERIVATIVES, "numpy.multiply", elementwise("{y}", None))
    with pytest.raises(srctrans.NoDerivativeError, match="numpy.multiply with respect to its argument 2"):
        srctrans.check_grads(fn, _args("numpy.multiply", 0, makers), order=1, modes=("rev",))


def test_a_rule_that_transposes_a_whole_stack_is_caught(monkeypatch):
    """inv's adjoint as it was: np.transpose reverses every axis of a stack (3, 3, 3), not each matrix."""
    key = "numpy.linalg.inv"
    fn, _ = next((fn, makers) for i, (fn, makers) in enumerate(SPECS[key]) if np.ndim(_args(key, i, makers)[0]) == 3)
    wrong = derivatives.vjp("x", jvp=DERIVATIVES[key].jvp, x="-(np.transpose({ans}) @ {g} @ np.transpose({ans}))")
    monkeypatch.setitem(derivatives.DERIVATIVES, key, wrong)
    with pytest.raises(AssertionError, match="reverse mode"):
        srctrans.check_grads(fn, (np.random.default_rng(0).standard_normal((3, 3, 3)) + 3.0 * np.eye(3),), order=1, modes=("rev",))


def test_a_rule_that_widens_float32_is_caught(monkeypatch):
    """astype's adjoint as it was ({g}: float64 for a float32 x cast to float64)."""
    key = "ndarray.astype"
    i = next(i for i, (fn, _) in enumerate(SPECS[key]) if fn.__name__ == "_astype_round_trip")
    fn, makers = SPECS[key][i]
    monkeypatch.setitem(derivatives.DERIVATIVES, key, derivatives.vjp("x, dtype", jvp=derivatives.LINEAR, x="{g}"))
    with pytest.raises(AssertionError, match="cotangent of argument 0: float64"):
        check_float32(fn, _args(key, i, makers))


def _float32(value):
    return value.astype(np.float32) if isinstance(value, np.ndarray) and value.dtype == np.float64 else value


def _float64(value):
    return value.astype(np.float64) if isinstance(value, np.ndarray) and value.dtype == np.float32 else value


def _random_like(rng, value):
    if isinstance(value, np.ndarray):
        return rng.standard_normal(value.shape).astype(value.dtype)
    return float(rng.standard_normal())


def _leaves(tree) -> list:
    return tree_flatten(tree)[0]


def _close_in_float32(got, want, what: str) -> None:
    for g, w in zip(_leaves(got), _leaves(want)):
        w = np.asarray(w, dtype=np.float64)
        scale = 1.0 + float(np.max(np.abs(w), initial=0.0))
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), w, rtol=2e-3, atol=2e-3 * scale, err_msg=what)


def _inexact_dtype(value):
    dtype = np.asarray(value).dtype
    return dtype if dtype.kind in "fc" else None


def check_float32(fn, args) -> None:
    """The adjoint and tangent files of ``fn`` at float32 arrays ``args``: dtypes, and values against float64."""
    args32 = tuple(_float32(a) for a in args)
    args64 = tuple(_float64(a) for a in args32)  # the same point
    rng = np.random.default_rng(32)
    out32 = fn(*args32)
    single_precision = all(_inexact_dtype(v) is None or _inexact_dtype(v) == np.float32 for v in _leaves(out32))
    # reverse: one cotangent per argument, in the argument's dtype where nothing promoted the output
    ct32 = tree_map(lambda v: _random_like(rng, v) if _inexact_dtype(v) is not None else 0.0, out32)
    adjoint = vjp_function(fn, len(args))
    got = adjoint(*args32, ct32)
    want = adjoint(*args64, tree_map(_float64, ct32))
    got, want = (got, want) if len(args) > 1 else ((got,), (want,))
    for k, (a, g) in enumerate(zip(args32, got)):
        if isinstance(a, np.ndarray) and a.dtype == np.float32 and single_precision:
            assert np.asarray(g).dtype == np.float32, f"cotangent of argument {k}: {np.asarray(g).dtype}, the argument float32"
    _close_in_float32(got, want, "cotangents in float32 against float64")
    # forward: the tangent of each output in that output's dtype (a Python float, weak, for a number)
    tangents = tuple(_random_like(rng, a) for a in args32)
    out, t_out = tangent_function(fn, len(args))(*args32, *tangents)
    for k, (v, t) in enumerate(zip(_leaves(out), _leaves(t_out))):
        if _inexact_dtype(v) is not None and type(t) is not float:
            assert np.asarray(t).dtype == np.asarray(v).dtype, f"tangent of output {k}: {np.asarray(t).dtype}, the output {np.asarray(v).dtype}"
    _, t_want = tangent_function(fn, len(args))(*args64, *(_float64(t) for t in tangents))
    _close_in_float32(t_out, t_want, "tangents in float32 against float64")


# functions that read their argument's dtype: another function in float32
F32_OTHER_FUNCTION = {"ndarray.dtype"}
F32_CASES = [
    c for c in CASES if c[0] not in F32_OTHER_FUNCTION and any(isinstance(a, np.ndarray) for a in _args(c[0], c[1], c[3]))
]


@pytest.mark.parametrize("key,i,fn,makers", F32_CASES, ids=[f"{c[0]}-{c[1]}" for c in F32_CASES])
def test_rule_in_float32(key, i, fn, makers):
    check_float32(fn, _args(key, i, makers))


def test_rule_lookup_imports_no_module_and_finds_those_imported_later(python, tmp_path):
    """Looking a call up in the rule tables never imports a module (scipy.integrate, scipy.special:
    a third of a second of every first call); a module imported later has its functions found."""
    (tmp_path / "lookups.py").write_text(
        "import numpy as np\n\ndef f(x):\n    return np.sum(np.tanh(x) ** 2)\n"
    )
    (tmp_path / "later.py").write_text(
        "import numpy as np\nimport scipy.special\n\ndef g(x):\n    return np.sum(scipy.special.gammaln(x))\n"
    )
    done = python(
        """
        import sys
        import numpy as np
        import srctrans
        from lookups import f

        srctrans.grad(f)(np.ones(3))
        srctrans.vmap(f)(np.ones((2, 3)))
        print(sorted(m for m in ("scipy.integrate", "scipy.special", "scipy.linalg", "scipy.stats") if m in sys.modules))
        import scipy.special
        from later import g

        x = np.array([1.5, 2.5])
        print(np.allclose(srctrans.grad(g)(x), scipy.special.digamma(x)))
        """,
        tmp_path,
        env={"SRCTRANS_DISABLE_JIT": "1", "SRCTRANS_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"]
