"""NumPy (and ``math``, ``scipy.special``) functions as Python functions srctrans can read.

``srctrans.grad(np.sin)`` works on the NumPy function itself, as in JAX: a function
with a derivative rule gets a one-line Python wrapper, written once to the user cache
folder (``numpy.sin.py``: ``def sin(x): return np.sin(x)``), which the transformations
read like any user function. Functions without a rule are not wrapped.
"""

from __future__ import annotations

import keyword
import types
from pathlib import Path
from typing import Any

_MADE: dict[int, types.FunctionType] = {}


def as_python_function(obj: Any) -> types.FunctionType | None:
    """The wrapper of library function ``obj``, or None when it has no derivative rule."""
    made = _MADE.get(id(obj))
    if made is not None:
        return made
    from .rules.derivatives import DERIVATIVES
    from .rules.lookup import rule_keys_by_id

    key = rule_keys_by_id().get(id(obj))
    if key is None:
        return None
    parts = key.split(".")
    name = parts[-1]
    if not name.isidentifier() or keyword.iskeyword(name):
        return None
    params = [p.name for p in DERIVATIVES[key].params if p.default is None and not p.name.startswith("*")]
    if parts[0] == "numpy":
        imports, call = "import numpy as np\n", "np." + ".".join(parts[1:])
    elif parts[0] == "builtins":
        imports, call = "", name
    else:
        imports, call = f"import {'.'.join(parts[:-1])}\n", key
    args = ", ".join(params)
    text = (
        f'"""``{key}`` as a Python function, for srctrans\'s transformations (written by srctrans)."""\n\n'
        f"{imports}\n\ndef {name}({args}):\n    return {call}({args})\n"
    )
    from .cache import load_module, user_cache_root, write_if_changed
    from .config import config

    folder = Path(config.cache_dir) if config.cache_dir else user_cache_root()
    path = folder / "library_functions" / f"{key}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(path, text)
    module = load_module(path, "srctrans_library_" + key.replace(".", "_"))
    fn = getattr(module, name)
    _MADE[id(obj)] = fn
    return fn
