"""What the pipeline knows of a function another one calls, before either is transformed.

:func:`outputs_of`: how many outputs a function in A-normal form returns. :func:`loop_axes`
and :func:`loop_refusal`: whether a compiled loop over the examples can call a function
``srctrans.vmap`` made (a ``VMapped``), and with which axes; the normal form names such a
call's callee a loop (:mod:`srctrans.normal_form`), the nested-calls pass writes the loop
(:mod:`srctrans.nested_calls`). The class ``VMapped`` is the public API's: it is looked up
in :mod:`srctrans.faces`, so this module does not import the API.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..faces import is_instance

__all__ = ["is_int", "is_vmapped", "loop_axes", "loop_refusal", "outputs_of"]


def outputs_of(node: cst.FunctionDef) -> int | None:
    """How many outputs a function in A-normal form returns: ``k`` for ``return a, b`` everywhere, None for one."""
    counts: set[int | None] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_Return(self, n: cst.Return) -> None:
            counts.add(len(n.value.elements) if isinstance(n.value, cst.Tuple) else None)

    node.visit(V())
    return counts.pop() if len(counts) == 1 else None


def is_vmapped(obj: Any) -> bool:
    """Whether ``obj`` is a function ``srctrans.vmap`` made."""
    return is_instance(obj, "VMapped")


def loop_axes(obj: Any, nest: bool = False) -> tuple[tuple, tuple] | None:
    """``(in_axes, out_axes)``, one int or None per parameter and one int per output (or one int
    for every output), of a vmapped function a compiled loop can call; None for what it cannot
    (:func:`loop_refusal` says why; ``nest``: a vmap of a vmapped function is looped too)."""
    if not is_vmapped(obj) or loop_refusal(obj, nest) is not None:
        return None
    spec = obj.in_axes if isinstance(obj.in_axes, tuple) else (obj.in_axes,) * len(obj._params)
    out = obj.out_axes if isinstance(obj.out_axes, tuple) else (obj.out_axes,)
    return spec, out


def is_int(a: Any) -> bool:
    """An axis: an int, not a bool."""
    return isinstance(a, int) and not isinstance(a, bool)


def loop_refusal(obj: Any, nest: bool = False) -> tuple[str, str] | None:
    """Why a compiled loop over the examples cannot call the vmapped ``obj``: ``(the option, what
    to write instead)``; None when it can. Loops take one int or None per parameter, one int per
    output: nested vmaps, pytrees of axes, ``out_axes=None`` and named axes are not looped."""
    outside = "or call it outside the compiled function"
    if obj._inner is not None and (not nest or loop_refusal(obj._inner, nest) is not None):
        return ("a nested vmap (vmap of a vmapped function)",
                f"compile the whole nest instead: srctrans.jit(srctrans.vmap(srctrans.vmap(f, ...), ...)), {outside}")
    if obj.axis_name is not None:
        return (f"axis_name={obj.axis_name!r} (a collective needs every example at once, a loop sees one)",
                f"compute the collective in the compiled function from the batched result, {outside}")
    if obj._one_tuple:
        return ("a vmapped grad with argnums=(k,), which returns a tuple of one gradient", f"use argnums=k, {outside}")
    spec = obj.in_axes if isinstance(obj.in_axes, tuple) else (obj.in_axes,) * len(obj._params)
    if not all(a is None or is_int(a) for a in spec):
        return (f"in_axes={obj.in_axes!r} (axes for the parts of a pytree argument)",
                f"pass arrays, with one int or None per argument, {outside}")
    if len(spec) != len(obj._params):
        return (f"in_axes={obj.in_axes!r} for {len(obj._params)} parameters", "give one int or None per parameter")
    out = obj.out_axes if isinstance(obj.out_axes, tuple) else (obj.out_axes,)
    if any(a is None for a in out):
        return ("out_axes=None (an output the same for every example)",
                f"use out_axes=0 and take [0] of that output, {outside}")
    if not all(is_int(a) for a in out):
        return (f"out_axes={obj.out_axes!r} (axes for the parts of a pytree result)",
                f"return arrays, with one int per output, {outside}")
    if all(a is None for a in spec) and obj.axis_size is None:
        return ("in_axes None for every argument without axis_size", "give axis_size")
    return None
