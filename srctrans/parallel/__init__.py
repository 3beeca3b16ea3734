"""Parallel transformations: collectives over named axes (``psum``, ``pmean``), shared by vmap and pmap."""

from .collectives import pmean, psum

__all__ = ["pmean", "psum"]
