"""Derivative rules for the helpers generated adjoints call (``srctrans.runtime``).

An adjoint file calls ``rt.unbroadcast``, ``rt.sum_grad`` and the other helpers of
:mod:`srctrans.runtime`; differentiating that file again (``grad(grad(f))``) needs a
rule for each of them. They use the same constructors as
:mod:`srctrans.rules.derivatives` and are merged into its table.
"""

from __future__ import annotations

from .derivatives import elementwise, nondiff, vjp  # noqa: F401  (defined before derivatives imports this module)

RUNTIME_DERIVATIVES: dict = {}
