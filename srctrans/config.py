"""Global settings, read from the environment at import and changeable at run time.

>>> import srctrans
>>> srctrans.config.update("disable_jit", True)
>>> srctrans.config.disable_jit
True
>>> srctrans.config.update("disable_jit", False)

Settings:

``disable_jit`` (``SRCTRANS_DISABLE_JIT=1``)
    Run the generated Python file instead of compiled code, so ``print``,
    ``breakpoint()`` and pdb work inside the real generated file.
``cache_dir`` (``SRCTRANS_CACHE_DIR``)
    Write every generated file under this folder instead of ``__srctrans__/``
    beside the user's module.
``compile_budget`` (``SRCTRANS_COMPILE_BUDGET``, seconds; 60 unless set)
    The longest a compile may take, as estimated after Numba has typed the function: a
    function over it runs uncompiled, with a ``CompileBudgetWarning`` (see
    ``numba_backend.compile_budget``). 0 or None: no bound.
"""

from __future__ import annotations

import os
from typing import Any

_TRUE = {"1", "true", "yes", "on"}


class Config:
    """Holds srctrans's settings; change them with :meth:`update`."""

    _names = ("disable_jit", "cache_dir", "compile_budget")

    def __init__(self) -> None:
        self.disable_jit: bool = os.environ.get("SRCTRANS_DISABLE_JIT", "").strip().lower() in _TRUE
        self.cache_dir: str | None = os.environ.get("SRCTRANS_CACHE_DIR") or None
        self.compile_budget: float | None = _seconds("SRCTRANS_COMPILE_BUDGET", os.environ.get("SRCTRANS_COMPILE_BUDGET", "60"))

    def update(self, name: str, value: Any) -> None:
        """Set one setting, e.g. ``config.update("disable_jit", True)``."""
        if name not in self._names:
            raise ValueError(f"unknown srctrans setting {name!r}; known: {', '.join(self._names)}")
        if name == "disable_jit":
            value = bool(value)
        elif name == "compile_budget":
            value = _seconds("compile_budget", value)
        elif value is not None:
            value = os.fspath(value)
        setattr(self, name, value)

    def __repr__(self) -> str:
        items = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"srctrans.config({items})"


def _seconds(name: str, value: Any) -> float | None:
    """A number of seconds (None, 0 or "none": no bound)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "0")):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds or None, got {value!r}") from None
    if seconds < 0:
        raise ValueError(f"{name} must be a number of seconds or None, got {value!r}")
    return seconds or None


config = Config()
