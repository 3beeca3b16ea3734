"""The public faces as the layers below them see them: a table the public API fills.

Composition makes the lower layers need what the top one makes. Reverse mode recognizes a
``srctrans.vmap(f)`` called in a body; a function that calls ``srctrans.grad(g)(x)`` inside
is built with ``g``'s adjoint file, which the API's grad object writes
(:mod:`srctrans.nested_calls`, :mod:`srctrans.nesting`); a parallel stage runs as a
vmapped function. The API imports those layers, so they may not import it: instead each
module of the public API (:mod:`srctrans.api`, :mod:`srctrans.tangents`,
:mod:`srctrans.jacobians`, :mod:`srctrans.batching.api`) registers here, when it is
imported, the functions and classes the layers below may use, and those look them up when
they run. ``import srctrans`` imports them all (any ``import srctrans.x`` runs it first), so
every face is registered before any function is transformed.

The faces (:data:`FACES`): the API's transformations (``jit grad value_and_grad vjp jvp
linearize jacfwd jacrev hessian``, and ``vmap``) and the classes of what they return
(``Jitted``, ``Grad``, ``VMapped``), and ``algebra``: :mod:`srctrans.algebra`, which the
transformations consult for what has no one file to transform (it imports them all).
"""

from __future__ import annotations

from typing import Any

__all__ = ["API_TRANSFORMATIONS", "FACES", "api_transformation", "face", "is_instance", "register", "registered"]

# the transformations that are not vmap (srctrans.api, srctrans.tangents, srctrans.jacobians)
API_TRANSFORMATIONS = ("jit", "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian")
FACES = frozenset(API_TRANSFORMATIONS) | {"vmap", "Jitted", "Grad", "VMapped", "algebra"}

_registered: dict[str, Any] = {}


def register(**faces: Any) -> None:
    """Called by the public API when it is imported: ``register(grad=grad, Grad=Grad, ...)``."""
    unknown = set(faces) - FACES
    if unknown:
        raise ValueError(f"not a face of srctrans: {sorted(unknown)}")
    _registered.update(faces)


def face(name: str) -> Any:
    """The registered face ``name`` (``face("grad")`` is ``srctrans.grad``)."""
    try:
        return _registered[name]
    except KeyError:
        raise RuntimeError(f"srctrans.{name} is not registered yet: import srctrans before transforming a function") from None


def registered(name: str) -> Any | None:
    """The face ``name``, or None when none is registered under that name."""
    return _registered.get(name)


def is_instance(obj: Any, class_name: str) -> bool:
    """``isinstance(obj, face(class_name))``; False while that class is not registered (then no
    object of it exists)."""
    cls = _registered.get(class_name)
    return cls is not None and isinstance(obj, cls)


def api_transformation(obj: Any) -> str | None:
    """``"grad"`` when ``obj`` is ``srctrans.grad`` itself, and so on for the API's transformations
    (not ``vmap``); None for anything else."""
    for name in API_TRANSFORMATIONS:
        if _registered.get(name) is obj:
            return name
    return None
