"""Collectives over a named batch axis, as in JAX: ``psum``, ``pmean``, ``pmax``, ``pmin``,
``all_gather`` and ``axis_index``.

Inside ``vmap(f, axis_name="i")`` or ``pmap(f, axis_name="i")``, ``psum(x, "i")`` is the sum
of ``x`` over the examples of that batch, the same value for each example; ``pmean`` its
mean, ``pmax``/``pmin`` the elementwise extremes, ``all_gather`` every example's ``x``
stacked on a new axis 0, ``axis_index("i")`` the example's index in the batch. They mean
something only where a transformation gives the axis name a batch: vmap's vectorized
rewrite replaces them by ``np.sum(x, axis=0)`` and the like (rules in
:mod:`srctrans.rules.batching`; a collective over the name of an outer vmap passes
through an inner one unchanged); pmap splits the function at each into stages and
combines across devices between them (:mod:`srctrans.parallel.stages`). Called anywhere
else (outside vmap, or one example at a time in vmap's per-example loop) they raise
``NameError``: one example cannot see the others.
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


def pmax(x: Any, axis_name: str) -> Any:
    """The elementwise maximum of ``x`` over the batch named ``axis_name``."""
    raise _unbound("pmax", axis_name)


def pmin(x: Any, axis_name: str) -> Any:
    """The elementwise minimum of ``x`` over the batch named ``axis_name``."""
    raise _unbound("pmin", axis_name)


def all_gather(x: Any, axis_name: str) -> Any:
    """Every example's ``x``, stacked on a new axis 0 (shape ``(N, *x.shape)``), the same for each example."""
    raise _unbound("all_gather", axis_name)


def axis_index(axis_name: str) -> Any:
    """The index of this example in the batch named ``axis_name`` (0 to N - 1)."""
    raise _unbound("axis_index", axis_name)
