"""NumPy array subclasses at the boundary of a transformation.

Generated code computes with NumPy's plain arrays: ``x * x`` elementwise, every element
read. Compiled code reads any array subclass as a plain array, and the derivative and
batching rules assume one, so a subclass that means something else by the same code
would come back as a wrong number without a word: ``np.matrix`` (``*`` and ``**`` are
matrix products, results stay 2-D) or ``np.ma.MaskedArray`` (masked elements are left
out). :func:`plain` refuses such an argument with a ``TypeError`` naming it: a subclass
that overrides any of ``numpy.ndarray``'s operators, methods or protocols
(``__array_ufunc__``, ``__array_function__``). A subclass that only adds attributes and
methods of its own (and ``np.memmap``, a file's bytes) means what a plain array means,
as NumPy's functions treat it: it is passed on as a plain ``ndarray`` view, not copied,
compiled or not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# what a subclass may define without changing what NumPy's operators and functions do with it
_HARMLESS = frozenset({
    "__new__", "__init__", "__array_finalize__", "__reduce__", "__reduce_ex__", "__setstate__",
    "__getstate__", "__repr__", "__str__", "__format__", "__doc__", "__module__", "__qualname__",
    "__dict__", "__weakref__", "__slots__", "__annotations__", "__init_subclass__",
    "__class_getitem__", "__hash__", "__firstlineno__", "__static_attributes__",
})
_PLAIN_SUBCLASSES = (np.memmap,)
_OVERRIDES: dict[type, tuple[str, ...]] = {}


def overrides(cls: type) -> tuple[str, ...]:
    """The names of ``numpy.ndarray``'s attributes that the subclass ``cls`` defines anew."""
    found = _OVERRIDES.get(cls)
    if found is None:
        ndarray_names = set(dir(np.ndarray))
        names: set[str] = set()
        for klass in cls.__mro__:
            if klass is np.ndarray or not issubclass(klass, np.ndarray):
                break
            if klass not in _PLAIN_SUBCLASSES:
                names |= (set(vars(klass)) & ndarray_names) - _HARMLESS
        found = _OVERRIDES[cls] = tuple(sorted(names))
    return found


def plain(value: Any, label: str) -> Any:
    """``value`` if it is not an array subclass; a plain ``ndarray`` view of a subclass that
    means what a plain array means; a ``TypeError`` naming ``label`` for any other."""
    cls = type(value)
    if cls is np.ndarray or not isinstance(value, np.ndarray):
        return value
    changed = overrides(cls)
    if not changed:
        return value.view(np.ndarray)
    if isinstance(value, np.matrix):
        why = "whose * and ** are matrix products and whose results stay 2-D"
        hint = "pass np.asarray(...) and write @ for a matrix product"
    elif isinstance(value, np.ma.MaskedArray):
        why = "whose masked elements NumPy leaves out"
        hint = "pass the data with its masked elements filled (x.filled(0.0)), and the mask as an array of its own"
    else:
        shown = ", ".join(changed[:6]) + (" ..." if len(changed) > 6 else "")
        why = f"which defines {shown} anew"
        hint = "pass np.asarray(...), a plain array"
    raise TypeError(
        f"{label} is a {cls.__module__}.{cls.__qualname__}, {why}. srctrans computes with plain NumPy "
        f"arrays, elementwise and with every element (compiled code would read it as one), so it "
        f"refuses it rather than give another number: {hint}"
    )


def plain_leaves(leaves: list, label_of) -> list:
    """:func:`plain` of each leaf (``label_of(i)``: how the user names leaf ``i``); the same list
    object when nothing changes."""
    out = leaves
    for i, leaf in enumerate(leaves):
        if type(leaf) is not np.ndarray and isinstance(leaf, np.ndarray):
            new = plain(leaf, label_of(i))
            if out is leaves:
                out = list(leaves)
            out[i] = new
    return out
