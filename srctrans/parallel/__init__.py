"""Parallel transformations: ``pmap`` over devices and the collectives it shares with vmap.

- :mod:`.collectives`: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``.
- :mod:`.devices`: :class:`Device` and :func:`devices` (``SRCTRANS_CPU_DEVICES`` logical CPUs).
- :mod:`.stages`: the generated parallel file (per-example stages and a driver).
- :mod:`.runner`: :class:`Stage`, the :class:`Runner` protocol, the reference runner, ``runner_for``.
- :mod:`.api`: :func:`pmap`.
"""

from .api import PMapped, pmap
from .collectives import all_gather, axis_index, pmax, pmean, pmin, psum
from .devices import Device, devices

__all__ = ["Device", "PMapped", "all_gather", "axis_index", "devices", "pmap", "pmax", "pmean", "pmin", "psum"]
