"""Checking derivatives against central differences: :func:`check_grads`, as in JAX.

This module owns srctrans's gradient checker. It follows ``jax.test_util.check_grads``:
derivatives are compared with central differences along *one random direction* (so the
cost does not grow with the number of inputs or outputs):

- forward mode (``"fwd"``): ``jvp(f, args, u)`` against ``(f(args + eps*u) - f(args - eps*u)) / (2*eps)``
  for a random tangent ``u``;
- reverse mode (``"rev"``): for a random tangent ``u`` and a random output cotangent ``v``,
  ``<u, vjp(v)>`` against ``<numerical_jvp(u), v>``.

With ``order=k > 1`` the derivative functions themselves are checked the same way, down to
order ``k``: in forward mode ``(primals, tangents) -> jvp(f, primals, tangents)`` at
``(args, args)``, in reverse mode ``args -> vjp_fn(f(*args))``, as JAX does. With srctrans's
own transformations these are the generated files themselves (the tangent file
``(*primals, *tangents) -> (out, tangent_out)``, the adjoint file ``(*primals, cotangent)``),
so order 2 checks forward over forward, reverse over forward, forward over reverse and
reverse over reverse. Arguments and
results may be pytrees (:mod:`srctrans.tree`); every argument leaf must be a float or
complex number or array. Random directions come from ``numpy.random.RandomState(0)``, so
checks are deterministic.

Default tolerances (``atol`` and ``rtol`` alike) are JAX's gradient tolerances by dtype:
float64 1e-5, float32 2e-3, float16 1e-2, complex128 1e-5, complex64 1e-3; as in JAX both
are multiplied by the number of elements of the arrays compared. The default step is
``eps=1e-4``, JAX's ``EPS`` for every dtype. ``atol``/``rtol`` may be a number or a
``{dtype: tolerance}`` dict that overrides the defaults for those dtypes.

The transformations are imported late from :mod:`srctrans` (``srctrans.vjp``,
``srctrans.jvp``), only for the modes requested; tests and other libraries may pass their
own with the private keywords ``_vjp`` and ``_jvp``:

- ``vjp(f, *primals) -> (out, vjp_fn)``, ``vjp_fn(cotangent) -> tuple`` of one cotangent
  per primal;
- ``jvp(f, primals, tangents) -> (out, tangent_out)`` with ``primals``/``tangents`` tuples.

>>> import numpy as np
>>> def vjp_sin(f, x):
...     return np.sin(x), lambda ct: (ct * np.cos(x),)
>>> check_grads(np.sin, (np.linspace(0.0, 1.0, 3),), order=1, _vjp=vjp_sin)
>>> def vjp_wrong(f, x):
...     return np.sin(x), lambda ct: (-ct * np.cos(x),)
>>> check_grads(np.sin, (np.linspace(0.0, 1.0, 3),), order=1, _vjp=vjp_wrong)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: check_grads: reverse mode (VJP), order 1: cotangent projection does not match central differences...
  automatic <u, vjp(v)>           = -4.09208648...
  central differences <jvp(u), v> = 4.09208646...
...

This module never imports Numba.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_structure

__all__ = [
    "DEFAULT_GRADIENT_TOLERANCE",
    "EPS",
    "check_grads",
    "check_jvp",
    "check_vjp",
    "numerical_jvp",
]

#: Central-difference step, JAX's ``EPS`` (the same for every dtype).
EPS: float = 1e-4

#: Default ``atol`` and ``rtol`` by dtype: JAX's ``default_gradient_tolerance``.
DEFAULT_GRADIENT_TOLERANCE: dict[np.dtype, float] = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
}

Tolerance = float | Mapping[Any, float] | None
Vjp = Callable[..., tuple[Any, Callable[[Any], Any]]]
Jvp = Callable[[Callable[..., Any], Sequence[Any], Sequence[Any]], tuple[Any, Any]]

_MODES = ("fwd", "rev")
_MODE_NAMES = {"fwd": "forward mode (JVP)", "rev": "reverse mode (VJP)"}


# ---------------------------------------------------------------------------------------
# Leafwise arithmetic that keeps each leaf's type (Python scalar, NumPy scalar, array)


def _dtype(x: Any) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, int):
        return np.dtype(np.int64)
    if isinstance(x, float):
        return np.dtype(np.float64)
    if isinstance(x, complex):
        return np.dtype(np.complex128)
    return np.asarray(x).dtype


def _is_python_scalar(x: Any) -> bool:
    return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _like(x: Any, value: Any, dtype: np.dtype) -> Any:
    """``value`` as ``dtype``, in the same kind of container as the leaf ``x``."""
    result = np.asarray(value, dtype=dtype)
    if _is_python_scalar(x):
        return result.item()
    if isinstance(x, np.generic):
        return result[()]
    return result


def _leafwise(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(x: Any, y: Any) -> Any:
        dtype = _dtype(x)
        return _like(x, op(np.asarray(x), np.asarray(y)), dtype)

    return apply


_add = _leafwise(operator.add)
_sub = _leafwise(operator.sub)


def _safe_sub(x: Any, y: Any) -> Any:
    """``x - y`` with ``inf - inf == 0``, in ``x``'s dtype."""
    dtype = _dtype(x)
    with np.errstate(invalid="ignore"):
        a, b = np.asarray(x), np.asarray(y)
        return _like(x, np.where(a == b, np.zeros((), dtype), np.subtract(a, b, dtype=dtype)), dtype)


def _scalar_mul(tree: Any, a: float) -> Any:
    def mul(x: Any) -> Any:
        dtype = _dtype(x)
        return _like(x, np.multiply(np.asarray(x), np.array(a, dtype=dtype), dtype=dtype), dtype)

    return tree_map(mul, tree)


def _conj(tree: Any) -> Any:
    return tree_map(lambda x: _like(x, np.conj(x), _dtype(x)) if np.iscomplexobj(x) else x, tree)


def _is_inexact(x: Any) -> bool:
    return bool(np.issubdtype(_dtype(x), np.inexact))


def _zeros_like(x: Any) -> Any:
    return _like(x, np.zeros(np.shape(x)), _dtype(x))


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    shape = np.shape(x)
    dtype = _dtype(x)
    result = np.asarray(rng.randn(*shape), dtype=dtype)
    if np.issubdtype(dtype, np.complexfloating):
        result = result + dtype.type(1j) * np.asarray(rng.randn(*shape), dtype=dtype)
    return _like(x, result, dtype)


def _inner_prod(xs: Any, ys: Any) -> float:
    """``sum over leaves of Re <x, y>``: the real inner product of two pytrees of one structure."""
    total = 0.0
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        x, y = np.asarray(x), np.asarray(y)
        total += float(np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1))))
    return total


def numerical_jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS) -> Any:
    """Central difference ``(f(*(primals + eps*tangents)) - f(*(primals - eps*tangents))) / (2*eps)``.

    ``primals`` and ``tangents`` are tuples of pytrees of one structure; the result has the
    structure of ``f``'s output. Leaves keep their type (a Python float stays a float) and
    dtype. Output leaves that are not floating point (integers, booleans) have derivative
    zero, and get zeros.

    >>> import numpy as np
    >>> t = numerical_jvp(np.sin, (np.array([0.0, 1.0]),), (np.array([1.0, 2.0]),))
    >>> np.allclose(t, np.cos([0.0, 1.0]) * [1.0, 2.0])
    True
    >>> round(numerical_jvp(lambda d: d["a"] * d["b"], ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": 0.0},)), 9)
    3.0
    """
    primals, tangents = tuple(primals), tuple(tangents)
    _require_same_structure(primals, tangents, "numerical_jvp: primals and tangents")
    delta = _scalar_mul(tangents, eps)
    f_pos = f(*tree_map(_add, primals, delta))
    f_neg = f(*tree_map(_sub, primals, delta))

    def diff(p: Any, n: Any) -> Any:
        dtype = _dtype(p)
        if not np.issubdtype(dtype, np.inexact):
            return _like(p, np.zeros(np.shape(p)), np.dtype(np.float64))  # piecewise constant: derivative 0
        d = _safe_sub(p, n)
        return _like(d, np.multiply(np.asarray(d), np.array(0.5 / eps, dtype=dtype), dtype=dtype), dtype)

    _require_same_structure(f_pos, f_neg, "numerical_jvp: f's outputs at the two points")
    return tree_map(diff, f_pos, f_neg)


# ---------------------------------------------------------------------------------------
# Comparison


def _merge_tolerance(tol: Tolerance) -> float | dict[np.dtype, float]:
    if tol is None:
        return dict(DEFAULT_GRADIENT_TOLERANCE)
    if isinstance(tol, Mapping):
        merged = dict(DEFAULT_GRADIENT_TOLERANCE)
        merged.update({np.dtype(k): float(v) for k, v in tol.items()})
        return merged
    return float(tol)


def _tolerance(dtype: np.dtype, tol: float | dict[np.dtype, float]) -> float:
    if not isinstance(tol, dict):
        return tol
    if dtype in tol:
        return tol[dtype]
    if np.issubdtype(dtype, np.complexfloating):
        return tol.get(np.dtype(np.complex128), 1e-5)
    if np.issubdtype(dtype, np.floating):
        return tol.get(np.dtype(np.float64), 1e-5)
    return 0.0  # integers and booleans must match exactly


def _fmt(x: Any) -> str:
    text = np.array2string(np.asarray(x), precision=12, threshold=20, edgeitems=3, max_line_width=100)
    return "\n".join("    " + line for line in text.splitlines())


def _num(x: Any) -> str:
    return repr(np.asarray(x)[()].item())


def _require_same_structure(actual: Any, expected: Any, what: str) -> None:
    s_act, s_exp = tree_structure(actual), tree_structure(expected)
    if s_act != s_exp:
        raise AssertionError(f"{what}: structure {s_act!r} differs from the expected {s_exp!r}")


def _assert_close(
    actual: Any,
    expected: Any,
    atol: float | dict[np.dtype, float],
    rtol: float | dict[np.dtype, float],
    header: str,
    names: tuple[str, str],
) -> None:
    """Leafwise ``|actual - expected| <= atol*size + rtol*size*|expected|``, or an AssertionError."""
    _require_same_structure(actual, expected, header)
    pairs, _ = tree_flatten_with_path(actual)
    for (path, a), e in zip(pairs, tree_flatten(expected)[0]):
        where = f" at {keystr(path)}" if path else ""
        a_arr, e_arr = np.asarray(a), np.asarray(e)
        if a_arr.shape != e_arr.shape:
            raise AssertionError(
                f"{header}{where}: shape {a_arr.shape} ({names[0]}) differs from shape {e_arr.shape} ({names[1]})"
            )
        at = max(_tolerance(a_arr.dtype, atol), _tolerance(e_arr.dtype, atol)) * a_arr.size
        rt = max(_tolerance(a_arr.dtype, rtol), _tolerance(e_arr.dtype, rtol)) * e_arr.size
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(a_arr - e_arr)
            allowed = at + rt * np.abs(e_arr)
            ok = (a_arr == e_arr) | (err <= allowed) | (np.isnan(a_arr) & np.isnan(e_arr))
        if np.all(ok):
            continue
        bad = ~ok
        if a_arr.ndim == 0:
            worst_at, a_val, e_val = "", a_arr[()], e_arr[()]
            count = ""
            err_val, allowed_val = err[()], np.broadcast_to(allowed, err.shape)[()]
        else:
            score = np.where(bad, np.nan_to_num(err - allowed, nan=np.inf, posinf=np.inf), -np.inf)
            idx = np.unravel_index(int(np.argmax(score)), a_arr.shape)
            worst_at = f" (worst element {tuple(int(i) for i in idx)})"
            a_val, e_val = a_arr[idx], e_arr[idx]
            err_val, allowed_val = err[idx], np.broadcast_to(allowed, err.shape)[idx]
            count = f"\n  {int(bad.sum())} of {a_arr.size} elements differ{worst_at}"
        width = max(len(names[0]), len(names[1]))
        lines = [
            f"{header}{where}{count}",
            f"  {names[0]:<{width}} = {_num(a_val)}",
            f"  {names[1]:<{width}} = {_num(e_val)}",
            f"  |difference| = {err_val:.6g} > allowed {allowed_val:.6g} (atol {at:.3g} + rtol {rt:.3g} * |expected|)",
        ]
        if a_arr.ndim > 0:
            lines.append(f"  {names[0]}:\n{_fmt(a_arr)}")
            lines.append(f"  {names[1]}:\n{_fmt(e_arr)}")
        raise AssertionError("\n".join(lines))


def _check_dtypes_match(values: Any, tangents: Any, header: str) -> None:
    for (path, v), t in zip(tree_flatten_with_path(values)[0], tree_flatten(tangents)[0]):
        dv, dt = _dtype(v), _dtype(t)
        if np.issubdtype(dv, np.inexact) and dv != dt:
            where = f" at {keystr(path)}" if path else ""
            raise AssertionError(f"{header}{where}: tangent dtype {dt} differs from primal output dtype {dv}")


def _check_inexact_args(args: tuple, who: str) -> None:
    for path, leaf in tree_flatten_with_path(args)[0]:
        dtype = _dtype(leaf)
        if not np.issubdtype(dtype, np.inexact):
            raise TypeError(
                f"{who}: argument leaf args{keystr(path)} has dtype {dtype}; derivatives are checked with "
                f"respect to every argument leaf, which must be floating point or complex. Close over "
                f"integer or boolean arguments instead (functools.partial or a lambda)."
            )


# ---------------------------------------------------------------------------------------
# The checks


def _label(err_msg: str, mode: str, order: int) -> str:
    chain = f" ({err_msg})" if order > 1 else ""
    return f"check_grads: {_MODE_NAMES[mode]}, order {order}{chain}"


def check_jvp(
    f: Callable[..., Any],
    f_jvp: Callable[[tuple, tuple], tuple[Any, Any]],
    args: Sequence[Any],
    atol: Tolerance = None,
    rtol: Tolerance = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """Check ``f_jvp(args, tangents) -> (out, tangent_out)`` against central differences of ``f``.

    One random tangent (``RandomState(0)``). Raises ``AssertionError`` on mismatch; the
    message starts with ``err_msg`` (default ``"check_jvp"``).
    """
    args = tuple(args)
    header = err_msg or "check_jvp"
    _check_inexact_args(args, header)
    atol_, rtol_ = _merge_tolerance(atol), _merge_tolerance(rtol)
    rng = np.random.RandomState(0)
    tangent = tree_map(lambda x: _rand_like(rng, x), args)
    result = f_jvp(args, tangent)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise AssertionError(f"{header}: jvp must return a pair (out, tangent_out), got {type(result).__name__}")
    v_out, t_out = result
    v_expected = f(*args)
    _require_same_structure(t_out, v_out, f"{header}: tangent output")
    _check_dtypes_match(v_out, t_out, f"{header}: tangent output")
    _assert_close(
        v_out,
        v_expected,
        atol_,
        rtol_,
        f"{header}: primal output of the JVP differs from f(*args)",
        ("jvp out", "f(*args)"),
    )
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    _assert_close(
        t_out,
        t_expected,
        atol_,
        rtol_,
        f"{header}: tangent output does not match central differences (random tangent, eps={eps:g})",
        ("automatic (jvp)", "central differences"),
    )


def check_vjp(
    f: Callable[..., Any],
    f_vjp: Callable[..., tuple[Any, Callable[[Any], Any]]],
    args: Sequence[Any],
    atol: Tolerance = None,
    rtol: Tolerance = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """Check ``f_vjp(*args) -> (out, vjp_fn)`` against central differences of ``f``.

    For a random tangent ``u`` and output cotangent ``v`` (``RandomState(0)``) compares
    ``<u, vjp_fn(v)>`` with ``<numerical_jvp(f, args, u), v>``. ``vjp_fn`` must return one
    cotangent per argument, of the argument's structure. Raises ``AssertionError`` on
    mismatch; the message starts with ``err_msg`` (default ``"check_vjp"``).
    """
    args = tuple(args)
    header = err_msg or "check_vjp"
    _check_inexact_args(args, header)
    atol_, rtol_ = _merge_tolerance(atol), _merge_tolerance(rtol)
    rng = np.random.RandomState(0)
    result = f_vjp(*args)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise AssertionError(f"{header}: vjp must return a pair (out, vjp_fn), got {type(result).__name__}")
    v_out, vjp_fn = result
    v_expected = f(*args)
    _assert_close(
        v_out,
        v_expected,
        atol_,
        rtol_,
        f"{header}: primal output of the VJP differs from f(*args)",
        ("vjp out", "f(*args)"),
    )
    tangent = tree_map(lambda x: _rand_like(rng, x), args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_map(lambda x: _rand_like(rng, x) if _is_inexact(x) else _zeros_like(x), v_out)
    cotangent_in = vjp_fn(_conj(cotangent))
    if tree_structure(cotangent_in) != tree_structure(args):
        raise AssertionError(
            f"{header}: vjp_fn returned cotangents of structure {tree_structure(cotangent_in)!r}; "
            f"expected one per argument, of the arguments' structure {tree_structure(args)!r}"
        )
    for (path, c), a in zip(tree_flatten_with_path(cotangent_in)[0], tree_flatten(args)[0]):
        if np.shape(c) != np.shape(a):
            raise AssertionError(
                f"{header}: cotangent args{keystr(path)} has shape {np.shape(c)}, the argument has shape {np.shape(a)}"
            )
    ip = _inner_prod(tangent, _conj(cotangent_in))
    ip_expected = _inner_prod(tangent_out, cotangent)
    _assert_close(
        ip,
        ip_expected,
        atol_,
        rtol_,
        f"{header}: cotangent projection does not match central differences "
        f"(random tangent u, random cotangent v, eps={eps:g})",
        ("automatic <u, vjp(v)>", "central differences <jvp(u), v>"),
    )


def _default_transform(name: str) -> Callable[..., Any]:
    from .faces import registered

    fn = registered(name)
    if fn is None:
        raise NotImplementedError(
            f"check_grads needs srctrans.{name}, which this version of srctrans does not provide; "
            f"pass a reference implementation with _{name}=..."
        )
    return fn


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = ("rev",),
    atol: Tolerance = None,
    rtol: Tolerance = None,
    eps: float | None = None,
    *,
    _vjp: Vjp | None = None,
    _jvp: Jvp | None = None,
) -> None:
    """Check ``f``'s derivatives at ``args`` against central differences, up to ``order``.

    Semantics of ``jax.test_util.check_grads``: for each mode in ``modes`` (``"fwd"``,
    ``"rev"``) check the JVP or VJP of ``f`` along random directions; when ``order > 1``,
    check the derivative function the same way, recursively, in every mode (so
    ``order=2, modes=("fwd", "rev")`` checks JVP, VJP, JVP of JVP, VJP of JVP, JVP of VJP
    and VJP of VJP).

    Args:
        f: the function, called as ``f(*args)``; arguments and result may be pytrees.
        args: tuple of arguments; every leaf floating point or complex.
        order: highest order of derivatives checked (``>= 1``).
        modes: among ``"fwd"`` (``srctrans.jvp``) and ``"rev"`` (``srctrans.vjp``).
        atol, rtol: a number, or ``{dtype: tol}`` overriding :data:`DEFAULT_GRADIENT_TOLERANCE`;
            scaled by the size of the arrays compared, as in JAX.
        eps: central-difference step, default :data:`EPS` (``1e-4``).
        _vjp, _jvp: the transformations to check (default ``srctrans.vjp``/``srctrans.jvp``).

    Raises:
        AssertionError: a derivative differs from central differences; the message names the
            mode, the order, what was compared and both numbers.
        TypeError: an argument leaf is not floating point.
        ValueError: a bad ``order`` or ``modes``.
    """
    args = tuple(args)
    if isinstance(modes, str):
        modes = (modes,)
    unknown = [m for m in modes if m not in _MODES]
    if unknown:
        raise ValueError(f"check_grads: unknown mode(s) {unknown!r}; modes are among {_MODES!r}")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be an integer >= 1, got {order!r}")
    _check_inexact_args(args, "check_grads")
    eps = eps or EPS
    vjp = (_vjp or _default_transform("vjp")) if "rev" in modes else None
    jvp = (_jvp or _default_transform("jvp")) if "fwd" in modes else None

    def check(fun: Callable[..., Any], fun_args: tuple, depth: int, chain: str) -> None:
        if "fwd" in modes:
            fwd_chain = f"JVP of {chain}" if chain else "JVP"

            def fun_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
                return jvp(fun, primals, tangents)

            check_jvp(fun, fun_jvp, fun_args, atol, rtol, eps, _label(fwd_chain, "fwd", depth))
            if depth < order and _jvp is None:
                # the JVP as a function of the primals and the tangents: srctrans's generated
                # tangent file, which the next level differentiates again, at (args, args)
                from .nesting import tangent_function

                tangent_file = tangent_function(fun, len(fun_args))
                check(tangent_file, (*fun_args, *fun_args), depth + 1, fwd_chain)
            elif depth < order:
                check(fun_jvp, (fun_args, fun_args), depth + 1, fwd_chain)
        if "rev" in modes:
            rev_chain = f"VJP of {chain}" if chain else "VJP"

            def fun_vjp(*primals: Any) -> tuple[Any, Callable[[Any], Any]]:
                return vjp(fun, *primals)

            check_vjp(fun, fun_vjp, fun_args, atol, rtol, eps, _label(rev_chain, "rev", depth))
            if depth < order and _vjp is None:
                # the VJP as a function of the primals and the cotangent: srctrans's generated
                # adjoint file, which the next level differentiates again (JAX uses the output
                # as the cotangent, as here)
                from .nesting import vjp_function

                adjoint = vjp_function(fun, len(fun_args))
                check(adjoint, (*fun_args, fun(*fun_args)), depth + 1, rev_chain)
            elif depth < order:

                def vjp_applied(*primals: Any) -> Any:
                    out, vjp_fn = vjp(fun, *primals)
                    return vjp_fn(out)

                check(vjp_applied, fun_args, depth + 1, rev_chain)

    check(f, args, 1, "")
