"""User-given forward-mode derivatives: ``custom_jvp``, as in JAX.

>>> import numpy as np, srctrans
>>> @srctrans.custom_jvp
... def log1pexp(x):
...     return np.log1p(np.exp(x))
>>> @log1pexp.defjvp
... def log1pexp_jvp(primals, tangents):
...     x, = primals
...     t, = tangents
...     return np.log1p(np.exp(x)), t * (1.0 - 1.0 / (1.0 + np.exp(x)))
>>> round(float(log1pexp(0.0)), 6)
0.693147
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class custom_jvp:  # noqa: N801 - named like jax.custom_jvp
    """A function whose forward-mode derivative the user gives, as in ``jax.custom_jvp``.

    ``f.defjvp(rule)``: ``rule(primals, tangents)`` takes two tuples, one entry per argument,
    and returns ``(f(*primals), tangent_out)``. Inside a function differentiated in forward
    mode (``jvp``, ``jacfwd``, ``hessian``), a call ``y = f(a, b)`` becomes
    ``y, y_dot = rule((a, b), (a_dot, b_dot))``, zeros standing for the tangents of
    arguments that do not vary. Reverse mode (``grad``) does not transpose the rule: it
    refuses the call with a located ``NoDerivativeError``; use ``custom_vjp`` there.
    """

    def __init__(self, fun: Callable) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.jvp: Callable | None = None

    def defjvp(self, rule: Callable) -> Callable:
        if not callable(rule):
            raise TypeError("defjvp(rule) takes a function rule(primals, tangents) -> (out, tangent_out)")
        self.jvp = rule
        return rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<srctrans.custom_jvp {getattr(self.fun, '__qualname__', self.fun)}>"
