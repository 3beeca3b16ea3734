"""Forward mode: ``jvp`` and ``linearize``, like JAX's.

``jvp`` runs the generated tangent file (:mod:`srctrans.ad.forward`) of the function, or of
a grad's adjoint file (forward over reverse: Hessian-vector products). :class:`Tangents` is
one function's tangent file for one set of differentiated arguments, kept for the process
(:func:`tangents_for`); the Jacobians (:mod:`srctrans.jacobians`) push basis vectors
through it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import faces
from .api import Grad, Jitted
from .boundary import COMPLEX_REFUSED, any_tree, differentiable, in_output_dtypes, leaf_dtype, zero_tangent
from .capture import unwrap
from .specialization import Specialization, rebuild
from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_map
from .variant import Transform

__all__ = ["Tangents", "forward_target", "jvp", "linearize", "tangents_for", "visible_params"]


def forward_target(fn) -> tuple[Callable, bool]:
    """The function whose tangent file a forward transformation runs, and whether it compiles."""
    compiled = isinstance(fn, Jitted) and fn._compile
    if isinstance(fn, Grad):  # forward over reverse: the adjoint file, returning the gradient
        from .nesting import adjoint_function

        return adjoint_function(fn), compiled
    if isinstance(fn, Jitted):
        return fn._fn, compiled
    if not callable(fn):
        raise TypeError(f"expected a function, got {type(fn).__name__}")
    return fn, False


def visible_params(target: Callable) -> list[str]:
    pyfn, _, bound_args, _ = unwrap(target)
    return [p.name for p in inspect.signature(pyfn).parameters.values()][len(bound_args):]


class Tangents:
    """The tangent file of one function for one set of differentiated arguments, ready to call."""

    def __init__(self, fn: Callable, wrt: tuple[str, ...], has_aux: bool) -> None:
        target, compiled = forward_target(fn)
        self.visible = visible_params(target)
        self.wrt = wrt
        self.has_aux = has_aux
        options: tuple = (("wrt", wrt),) + ((("has_aux", True),) if has_aux else ())
        self.runner = Jitted(target, _transform=Transform("jvp", options), _compile=compiled)
        self.runner._wrt = wrt

    def __call__(self, primals: tuple, tangents: dict[str, Any]) -> tuple:
        """``(out, tangent_out)`` (``(out, tangent_out, aux)`` with ``has_aux``); ``tangents`` by argument name."""
        spec = self.runner._simple
        if (
            spec is not None and self.runner._direct and len(primals) == spec.arity
            and not any_tree(primals, self.wrt) and spec.returns is None
        ):  # plain arrays and floats, seen before: no binding (jacfwd's loop)
            raw = self.runner._run(spec, [*primals, *(tangents[n] for n in self.wrt)])
            return (raw[0], raw[2], raw[1]) if self.has_aux else raw
        spec, call_args = self.runner._prepare(tuple(primals), {})
        flat: list[Any] = []
        for name, kind in spec.layout:
            if kind == "one":
                flat.append(tangents[name])
            elif kind is not None:
                flat.extend(tree_flatten(tangents[name])[0])
        raw = self.runner._run(spec, [*call_args, *flat])
        return self.finish(spec, raw)

    def finish(self, spec: Specialization, raw: Any) -> tuple:
        """The tangent file's raw result (tuples for returned lists and dicts) in the function's structure."""
        if self.has_aux:
            out, aux, out_dot = raw
            struct = spec.returns
            if isinstance(struct, dict) and len(struct.get("tuple", ())) == 2:
                out, out_dot = rebuild(struct["tuple"][0], out), rebuild(struct["tuple"][0], out_dot)
            return out, out_dot, spec.rebuild_aux(aux)
        out, out_dot = raw
        return spec.rebuild(out), spec.rebuild(out_dot)


_TANGENT_FILES: dict[tuple, Tangents] = {}  # (fn, wrt, has_aux) -> its tangent file
_VISIBLE: dict[Any, list[str]] = {}  # fn -> its parameters, for jvp's fast path
_TANGENT_LOCK = threading.Lock()


def tangents_for(fn: Callable, wrt: tuple[str, ...], has_aux: bool) -> Tangents:
    try:
        key = (fn, wrt, has_aux)
        hash(key)
    except TypeError:
        return Tangents(fn, wrt, has_aux)
    found = _TANGENT_FILES.get(key)
    if found is None:
        found = Tangents(fn, wrt, has_aux)
        with _TANGENT_LOCK:
            _TANGENT_FILES[key] = found
    return found


def _fast_jvp(fn: Callable, primals: tuple, tangents: tuple, has_aux: bool):
    """``jvp`` for float and float-array arguments of a function seen before; None: take the full path."""
    try:
        visible = _VISIBLE.get(fn)
    except TypeError:
        return None
    if visible is None or len(primals) != len(visible):
        return None
    names: list[str] = []
    moving: list[Any] = []
    for name, p, t in zip(visible, primals, tangents):
        tp = type(p)
        if tp is float:
            if type(t) is not float:
                return None
            if t != 0.0:
                names.append(name)
                moving.append(t)
        elif tp is np.ndarray:
            if type(t) is not np.ndarray or t.shape != p.shape or t.dtype != p.dtype or p.dtype.kind != "f":
                return None
            if t.size and (t.item(0) != 0 or t.any()):  # (the first entry decides most calls)
                names.append(name)
                moving.append(t)
        else:
            return None
    if not moving:
        return None
    found = _TANGENT_FILES.get((fn, tuple(names), has_aux))
    runner = found.runner if found is not None else None
    if runner is None or runner._simple is None or not runner._direct or runner._simple.returns is not None:
        return None
    raw = runner._run(runner._simple, [*primals, *moving])
    if has_aux:
        return raw[0], in_output_dtypes(raw[2], raw[0]), raw[1]
    return raw[0], in_output_dtypes(raw[1], raw[0])


def _check_tangents(who: str, names: list[str], primals: tuple, tangents: tuple) -> None:
    """Tangents must match their primals leaf by leaf: structure, shape and (floats) dtype."""
    from .tree import tree_structure

    for name, p, t in zip(names, primals, tangents):
        ps, ts = tree_structure(p), tree_structure(t)
        if ps != ts:
            raise TypeError(f"{who}: the tangent of argument {name!r} has structure {ts!r}, its primal {ps!r}")
        for (path, pl), tl in zip(tree_flatten_with_path(p)[0], tree_flatten(t)[0]):
            where = name + keystr(path)
            if np.shape(pl) != np.shape(tl):
                raise ValueError(f"{who}: the tangent of {where} has shape {np.shape(tl)}, its primal {np.shape(pl)}")
            pd, td = leaf_dtype(pl), leaf_dtype(tl)
            if pd.kind == "c":
                raise TypeError(f"{who}: {where}: {COMPLEX_REFUSED}")
            if pd.kind == "f":
                if td != pd:
                    raise TypeError(f"{who}: the tangent of {where} has dtype {td}, its primal {pd}; they must be equal")
            elif td.kind not in "biuf" or np.any(np.asarray(tl) != 0):
                raise ValueError(
                    f"{who}: {where} is {pd}, which has no derivative; its tangent must be zeros, got a nonzero tangent"
                )


def _nonzero(t: Any) -> bool:
    """Whether a tangent leaf has an entry that is not zero (nan counts as not zero)."""
    return bool(np.any(t)) if isinstance(t, np.ndarray) else bool(t != 0)


def _with_defaults(target: Callable, visible: list[str], primals: tuple, tangents: tuple) -> tuple[tuple, tuple]:
    """Primals and tangents for every parameter: those left out are their defaults (the values
    bound at ``def`` time), with zero tangents. Unchanged when one left out has no default."""
    params = inspect.signature(unwrap(target)[0]).parameters
    missing = [params[n].default for n in visible[len(primals) :]]
    if any(d is inspect.Parameter.empty for d in missing):
        return primals, tangents
    return primals + tuple(missing), tangents + tuple(tree_map(zero_tangent, d) for d in missing)


def _as_tangent(p: Any, t: Any) -> Any:
    """A tangent as the tangent file takes it: zeros of float type for integer primal leaves."""
    return tree_map(lambda pl, tl: tl if differentiable(pl) else zero_tangent(pl), p, t)


def jvp(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """``(out, tangent_out)``: ``fn``'s value and its directional derivative along ``tangents``, like ``jax.jvp``.

    ``primals`` and ``tangents`` are tuples with one entry per argument, of the same pytree
    structure, shapes and (floating-point) dtypes. Integer arguments carry no derivative:
    their tangents must be zeros. Runs ``fn``'s generated tangent file (``f.jvp.py``),
    compiled when ``fn`` is a ``srctrans.jit``. ``jvp(srctrans.grad(f), (x,), (v,))[1]`` is
    the Hessian-vector product ``H(x) @ v`` (forward mode over the adjoint file). With
    ``has_aux=True``, ``fn`` returns ``(out, aux)`` and the result is ``(out, tangent_out, aux)``.

    An argument whose tangent is all zeros is not differentiated: the tangent file for the
    other arguments runs (one file per such set), so ``jvp(loss, (W, b, x), (tW, tb,
    zeros))`` costs what a jvp along ``W`` and ``b`` alone costs. This is JAX's symbolic zero
    for a value a function closes over; computing with the zeros instead would differ only
    where it gives nan (zero times an infinite partial derivative).

    >>> import numpy as np, srctrans
    >>> def f(x):
    ...     return np.sin(x) * x
    >>> out, t = srctrans.jvp(f, (np.array([0.5, 1.0]),), (np.array([1.0, 0.0]),))   # doctest: +SKIP
    >>> t                                                                            # doctest: +SKIP
    array([0.95885108, 0.        ])
    """
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"jvp: primals must be a tuple with one entry per argument, got {type(primals).__name__}")
    if not isinstance(tangents, (tuple, list)):
        raise TypeError(f"jvp: tangents must be a tuple with one entry per argument, got {type(tangents).__name__}")
    primals, tangents = tuple(primals), tuple(tangents)
    if not inspect.isfunction(fn) or hasattr(fn, "_srctrans_state"):  # (a plain function goes straight on)
        algebra = faces.face("algebra")
        special = algebra.jvp(fn, primals, tangents, has_aux)  # vmap, a Jacobian, value_and_grad: no one file
        if special is not None:
            return special
        structured = algebra.structured_grad(fn, primals)  # a grad of pytree arguments: its file for their structures
        if structured is not None:
            return jvp(structured, primals, tangents, has_aux)
    fast = _fast_jvp(fn, primals, tangents, has_aux) if len(primals) == len(tangents) else None
    if fast is not None:
        return fast
    target, _ = (fn, None) if not isinstance(fn, Jitted) else (fn._fn, None)
    visible = visible_params(target)
    if len(tangents) == len(primals) < len(visible):  # fn(*primals), as JAX calls it: the rest take their defaults
        primals, tangents = _with_defaults(target, visible, primals, tangents)
    if len(primals) != len(visible):
        raise TypeError(f"jvp: the function takes {len(visible)} arguments ({', '.join(visible)}), got {len(primals)} primals")
    if len(tangents) != len(primals):
        raise TypeError(f"jvp: got {len(primals)} primals but {len(tangents)} tangents; give one tangent per argument")
    _check_tangents("jvp", visible, primals, tangents)
    wrt = tuple(
        n for n, p, t in zip(visible, primals, tangents)
        if any(differentiable(x) and _nonzero(y) for x, y in zip(tree_flatten(p)[0], tree_flatten(t)[0]))
    )
    if not wrt:  # nothing varies
        out = fn(*primals)
        if has_aux:
            out, aux = out
            return out, tree_map(zero_tangent, out), aux
        return out, tree_map(zero_tangent, out)
    by_name = {n: _as_tangent(p, t) for n, p, t in zip(visible, primals, tangents)}
    result = tangents_for(fn, wrt, has_aux)(primals, by_name)
    result = (result[0], in_output_dtypes(result[1], result[0]), *result[2:])
    try:
        _VISIBLE[fn] = visible
    except TypeError:
        pass
    return result


def linearize(fn: Callable, *primals):
    """``(out, f_jvp)`` with ``f_jvp(*tangents) == jvp(fn, primals, tangents)[1]``, like ``jax.linearize``.

    Each call of ``f_jvp`` runs the tangent file again, primal computation included (there is
    no partial evaluation yet): use it for its interface, not to save work.
    """
    out = jvp(fn, primals, tuple(tree_map(zero_tangent, p) for p in primals))[0]

    def f_jvp(*tangents):
        return jvp(fn, primals, tangents)[1]

    return out, f_jvp


faces.register(jvp=jvp, linearize=linearize)
