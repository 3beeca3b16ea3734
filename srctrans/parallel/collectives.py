"""Collectives over a named batch axis: ``psum`` and ``pmean``, as in JAX.

Inside ``vmap(f, axis_name="i")``, ``psum(x, "i")`` is the sum of ``x`` over the examples
of that batch, the same value for each example; ``pmean`` its mean. They mean something
only where a transformation gives the axis name a batch: vmap's vectorized rewrite
replaces them by ``np.sum(x, axis=0)`` / ``np.mean(x, axis=0)`` (rules in
:mod:`srctrans.rules.batching`); a collective over the name of an outer vmap passes
through an inner one unchanged. Called anywhere else (outside vmap, or one example at a
time in vmap's per-example loop) they raise ``NameError``: one example cannot see the
others. ``pmap`` will use the same functions.
"""

from __future__ import annotations

from typing import Any


def _unbound(name: str, axis_name: Any) -> NameError:
    return NameError(
        f"{name}(..., {axis_name!r}): unbound axis name {axis_name!r}; call it inside "
        f"srctrans.vmap(f, axis_name={axis_name!r}), whose vectorized rewrite gives it the batch "
        "(the per-example loop sees one example at a time and cannot)"
    )


def psum(x: Any, axis_name: str) -> Any:
    """The sum of ``x`` over the batch named ``axis_name`` (inside ``vmap(..., axis_name=...)``)."""
    raise _unbound("psum", axis_name)


def pmean(x: Any, axis_name: str) -> Any:
    """The mean of ``x`` over the batch named ``axis_name`` (inside ``vmap(..., axis_name=...)``)."""
    raise _unbound("pmean", axis_name)
