"""User-given derivatives: ``custom_vjp`` and ``stop_gradient``.

>>> import numpy as np, srctrans
>>> @srctrans.custom_vjp
... def clip_gradient(x):
...     return x
>>> def clip_fwd(x):
...     return x, None
>>> def clip_bwd(res, g):
...     return (np.clip(g, -1.0, 1.0),)
>>> clip_gradient.defvjp(clip_fwd, clip_bwd)
>>> clip_gradient(3.0)
3.0
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def stop_gradient(x: Any) -> Any:
    """``x`` itself, but differentiation treats it as a constant (like ``jax.lax.stop_gradient``)."""
    return x


class custom_vjp:  # noqa: N801 - named like jax.custom_vjp
    """A function whose reverse-mode derivative the user gives, as in ``jax.custom_vjp``.

    ``f.defvjp(fwd, bwd)``: ``fwd(*args)`` returns ``(f(*args), residuals)``;
    ``bwd(residuals, g)`` returns a tuple with one adjoint per argument. Inside a
    differentiated function, a call ``y = f(a, b)`` becomes ``y, res = fwd(a, b)``
    in the forward sweep and ``bwd(res, y_bar)`` in the backward sweep.
    """

    def __init__(self, fun: Callable) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        if not callable(fwd) or not callable(bwd):
            raise TypeError("defvjp(fwd, bwd) takes two functions")
        self.fwd = fwd
        self.bwd = bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<srctrans.custom_vjp {getattr(self.fun, '__qualname__', self.fun)}>"
