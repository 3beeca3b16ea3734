"""Batching: ``vmap``, as a vectorized rewrite of the function or a generated per-example loop.

- :mod:`.api`: the user-facing :func:`vmap` and the boundary (pytrees, ``in_axes`` and
  ``out_axes`` moved to and from axis 0, nesting).
- :mod:`.generate`: the build step that writes the batched entry function.
- :mod:`.vectorize`: the rewrite, statement by statement, from the batching rules
  (:mod:`srctrans.rules.batching`), with the axes analysis (:mod:`srctrans.analysis.axes`).
- :mod:`.loop`: the per-example loop, for what the rewrite cannot express.
"""

from .api import VMapped, vmap

__all__ = ["VMapped", "vmap"]
