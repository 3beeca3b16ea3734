"""Transformations of transformations: ``grad(grad(f))``, by transforming generated source again.

A ``grad`` hands the next transformation its adjoint file, written in a variant that
returns the gradient alone (``f_grad(x) -> x_bar``). That file is ordinary Python, so the
next ``grad`` reads it like any user function: its tapes are lists pushed and popped, its
helpers (``rt.unbroadcast``, ``rt.sum_grad`` ...) have rules of their own
(:mod:`srctrans.rules.runtime_helpers`). The generated files stay readable at every
order, each line under the comments of the lines it came from.
"""

from __future__ import annotations

from collections.abc import Callable

from .faces import face
from .variant import Transform


def value_and_adjoint_function(inner) -> Callable:
    """The adjoint file of ``inner`` (a ``srctrans.value_and_grad``) as a plain function returning
    ``(value, gradient)``, as the adjoint file does (``f_grad(x) -> (out, x_bar)``). Raises
    ``TypeError`` for what it cannot give yet: ``has_aux``, static arguments, ``argnums=(k,)``."""

    args = getattr(inner, "_grad_args", None)
    if args is None:
        raise TypeError(f"expected a srctrans.value_and_grad, got {inner!r}")
    if args["has_aux"]:
        raise TypeError("has_aux=True is not supported here yet")
    if inner._static:
        raise TypeError("static arguments are not supported here yet")
    if not inner._single and len(inner._wrt) == 1:
        raise TypeError("argnums=(k,) (a tuple of one gradient) is not supported here yet; write argnums=k")
    options = tuple(o for o in inner._transform.options if o[0] in ("wrt", "compiled"))
    return _adjoint_file(inner, options, "methods and pytree arguments are not supported here yet")


def adjoint_function(inner, indexed: bool = False, trees: dict | None = None) -> Callable:
    """The adjoint file of ``inner`` (a ``srctrans.grad``) as a plain function returning the gradient.

    ``indexed``: loops over ``range`` save on preallocated tapes (``rt.tape``), which ``vmap``
    batches, instead of lists another ``grad`` pushes and pops.
    ``trees``: the structures (parameter -> ``PyTreeDef``) of the pytree arguments it will be
    given. The file is then that structure's specialization, in a *structured* variant: it
    takes each pytree argument whole, reads its leaves with constant keys first thing, and
    returns the gradient of one in the argument's structure (displays), as the user's own
    function would; the next transformation reads it as it reads any function.
    Raises ``TypeError`` for what has no such function yet: ``value_and_grad`` (its output
    is a pair), ``has_aux``, static arguments.
    """

    args = getattr(inner, "_grad_args", None)
    if args is None:
        raise TypeError(f"expected a srctrans.grad, got {inner!r}")
    if args["with_value"]:
        raise TypeError(
            "value_and_grad returns a pair (value, gradient), which has no gradient; "
            "differentiate a srctrans.grad instead"
        )
    if args["has_aux"]:
        raise TypeError("a grad with has_aux=True returns a pair (gradient, aux); nest a grad without has_aux")
    if inner._static:
        raise TypeError("a grad with static arguments cannot be differentiated again yet")
    # (a compiled grad's file loops over the examples of the vmapped functions it calls)
    options = tuple(o for o in inner._transform.options if o[0] in ("wrt", "has_aux", "compiled")) + (("grads_only", True),)
    if indexed:
        options += (("indexed", True),)
    if trees:
        options += (("structured", True),)
    return _adjoint_file(inner, options, "a grad of a method cannot be differentiated again yet", trees)


def function_copy(fn, trees: dict | None = None) -> Callable:
    """A function object of its own with ``fn``'s code (a build finds a callee's unit by the object's
    identity): a stand-in for ``fn``'s version taking the pytree arguments ``trees`` as leaves,
    whose signature lists the leaves."""
    import inspect
    import types

    trees = trees or {}
    version = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    version.__kwdefaults__ = fn.__kwdefaults__
    version.__qualname__ = fn.__qualname__
    version.__module__ = fn.__module__
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in trees:
            params += [inspect.Parameter(leaf, inspect.Parameter.POSITIONAL_OR_KEYWORD) for leaf in trees[p.name][1]]
        else:
            params.append(p)
    version.__signature__ = inspect.Signature(params)
    return version


class Unavailable:
    """A grad's adjoint file that could not be made without knowing the structures of its pytree
    arguments (their structure's file is made at the call): the user's function's signature,
    and the error to raise where the file is needed as it is."""

    def __init__(self, fn, error: Exception) -> None:
        import inspect

        self.error = error
        self.__signature__ = inspect.signature(fn)
        self.__name__ = getattr(fn, "__name__", "grad")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)

    def __call__(self, *args, **kwargs):
        raise self.error


def _adjoint_file(inner, options: tuple, refusal: str, trees: dict | None = None) -> Callable:
    """The function of ``inner``'s adjoint file generated with ``options``; ``refusal`` where its
    parameters are not plain arguments (a method's, pytree leaves)."""
    Jitted = face("Jitted")
    runner = Jitted(inner._fn, _transform=Transform("grad", options), _compile=False)
    runner._wrt = inner._wrt
    spec = runner._specialization({}, trees) if trees else runner._any_spec()
    if any(m[0] != "arg" for m in spec.gen.meta["params"]):
        raise TypeError(refusal)
    return spec.python


def vjp_function(fun: Callable, nargs: int, wrt: tuple[str, ...] | None = None) -> Callable:
    """``fun``'s adjoint file as a plain function ``(*primals, cotangent) -> cotangents``.

    The file of ``srctrans.vjp(fun, ...)``, in the variant that returns the cotangents of
    the primals alone (one, or a tuple of several); ``check_grads(order=2)`` checks its
    derivatives as it checks ``fun``'s. ``wrt``: the parameters whose cotangents it
    returns (default: every one).
    """
    import inspect

    from .capture import unwrap

    Jitted = face("Jitted")

    pyfn, _, bound_args, _ = unwrap(fun)
    visible = [p.name for p in inspect.signature(pyfn).parameters.values()][len(bound_args):]
    if len(visible) != nargs:
        raise TypeError(f"{pyfn.__qualname__} takes {len(visible)} arguments, got {nargs}")
    wrt = tuple(visible) if wrt is None else tuple(wrt)
    options = (("wrt", wrt), ("grads_only", True))
    runner = Jitted(fun, _transform=Transform("vjp", options), _compile=False)
    runner._wrt = wrt
    spec = runner._any_spec()
    if any(m[0] not in ("arg", "cotangent") for m in spec.gen.meta["params"]):
        raise TypeError("the vjp of a method or of pytree arguments cannot be differentiated again yet")
    return spec.python


def tangent_function(fun: Callable, nargs: int, wrt: tuple[str, ...] | None = None) -> Callable:
    """``fun``'s tangent file as a plain function ``(*primals, *tangents) -> (out, tangent_out)``.

    The file of ``srctrans.jvp(fun, ...)`` with respect to every argument (or to the
    parameters ``wrt``, one tangent each); ``check_grads`` with ``modes=("fwd", ...)`` and
    ``order=2`` checks its derivatives as it checks ``fun``'s (forward over forward, and
    reverse over forward).
    """
    import inspect

    from .capture import unwrap

    Jitted = face("Jitted")

    pyfn, _, bound_args, _ = unwrap(fun)
    visible = [p.name for p in inspect.signature(pyfn).parameters.values()][len(bound_args):]
    if len(visible) != nargs:
        raise TypeError(f"{pyfn.__qualname__} takes {len(visible)} arguments, got {nargs}")
    wrt = tuple(visible) if wrt is None else tuple(wrt)
    runner = Jitted(fun, _transform=Transform("jvp", (("wrt", wrt),)), _compile=False)
    runner._wrt = wrt
    spec = runner._any_spec()
    if any(m[0] not in ("arg", "tangent") for m in spec.gen.meta["params"]):
        raise TypeError("the jvp of a method or of pytree arguments cannot be differentiated again yet")
    return spec.python
