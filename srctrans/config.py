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
"""

from __future__ import annotations

import os
from typing import Any

_TRUE = {"1", "true", "yes", "on"}


class Config:
    """Holds srctrans's settings; change them with :meth:`update`."""

    _names = ("disable_jit", "cache_dir")

    def __init__(self) -> None:
        self.disable_jit: bool = os.environ.get("SRCTRANS_DISABLE_JIT", "").strip().lower() in _TRUE
        self.cache_dir: str | None = os.environ.get("SRCTRANS_CACHE_DIR") or None

    def update(self, name: str, value: Any) -> None:
        """Set one setting, e.g. ``config.update("disable_jit", True)``."""
        if name not in self._names:
            raise ValueError(f"unknown srctrans setting {name!r}; known: {', '.join(self._names)}")
        if name == "disable_jit":
            value = bool(value)
        elif value is not None:
            value = os.fspath(value)
        setattr(self, name, value)

    def __repr__(self) -> str:
        items = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"srctrans.config({items})"


config = Config()
