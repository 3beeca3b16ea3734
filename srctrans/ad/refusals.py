"""What reverse and forward mode refuse, located at the user's line: operations without a rule,
NumPy's index tricks, writes that a derivative cannot follow (hidden writes into arguments,
updates through views), complex values. Both modes call these; a refusal is an error, never a
wrong number.
"""

from __future__ import annotations

import re

import libcst as cst
import numpy as np

from ..analysis.activity import names_in
from ..analysis.resolve import LOCAL
from ..rules.memory import COMPLEX_DTYPES, REAL_PARTS, WRITES_FIRST_ARGUMENT, last_names
from .statements import simple_statements
from .text import code

# --- rule lookup by identity ----------------------------------------------------------


class NoRuleError(Exception):
    """An active operation without a derivative rule (turned into a located error by the caller)."""

    def __init__(self, what: str, line: int | None) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


class NotDifferentiable(Exception):
    """A construct reverse mode does not handle yet (turned into a located error by the caller)."""

    def __init__(self, what: str, line: int | None, hint: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.line = line
        self.hint = hint


def index_tricks(body: list, resolve) -> dict[str, str]:
    """``{"t1": "r_"}`` for each ``t1 = np.r_`` (or ``np.c_``) in A-normal form: what
    desugar did not write as ``np.concatenate`` (a string directive, ``np.r_['0,2', a, b]``)."""
    import numpy

    found: dict[str, str] = {}

    class Find(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            if len(node.targets) == 1 and isinstance(target, cst.Name) and isinstance(node.value, cst.Attribute):
                value = resolve(node.value)
                for name in ("r_", "c_"):
                    if value is not None and value is getattr(numpy, name, None):
                        found[target.value] = name

    for stmt in body:
        stmt.visit(Find())
    return found


def refuse_index_trick(tricks: dict[str, str], value: cst.Subscript, line: int | None) -> None:
    """Refuse ``t1[...]`` where ``t1 = np.r_`` (see :func:`index_tricks`): its key holds the
    values, which indexing gives no derivative (jvp's tangent was zero)."""
    base = value.value
    if isinstance(base, cst.Name) and base.value in tricks:
        raise NotDifferentiable(
            f"np.{tricks[base.value]}[...] with a string directive ('0,2', 'r', 'c') or a step held in a name "
            "is not differentiated",
            line,
            "write it with np.concatenate, np.stack or np.expand_dims",
        )


_WRITING_FUNCTIONS = last_names(WRITES_FIRST_ARGUMENT)


def refuse_hidden_write(small, active: set[str], resolve, line) -> None:
    """Refuse a call that may write into an array where derivatives flow: ``out=``, a method
    called for its effect (``y.sort()``, ``y.fill(v)``), ``np.copyto(y, x)``, ``np.add.at(y, i, x)``.
    The derivative would not see the change (it gave wrong gradients, silently)."""
    call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
    if not isinstance(call, cst.Call) or not (names_in(call) & active):
        return
    func = call.func
    what = None
    ufunc = resolve(func)
    given = [a for a in call.args if a.keyword is None]
    if any(a.keyword is not None and a.keyword.value == "out" for a in call.args) or (
        isinstance(ufunc, np.ufunc) and len(given) > ufunc.nin
    ):
        what = f"{code(func)}(..., out=...) writes into an array"
    elif isinstance(small, cst.Expr):
        obj = resolve(func)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and resolve(func.value) is LOCAL:
            what = f"{code(func)}() called for its effect may change {func.value.value} in place"
        elif isinstance(getattr(obj, "__self__", None), np.ufunc) or (
            getattr(obj, "__name__", None) in _WRITING_FUNCTIONS
            and (getattr(obj, "__module__", None) or type(getattr(obj, "__self__", None)).__module__ or "").startswith("numpy")
        ):
            what = f"{code(func)}(...) writes into its first argument"
    if what is not None:
        raise NotDifferentiable(
            f"{what} where derivatives flow, and the derivative would not see the change",
            line,
            "write the new value as an assignment (y = y + x, y = np.sort(y), y = np.full_like(y, v))",
        )


_COMPLEX_NAMES = last_names(COMPLEX_DTYPES)
_REAL_PARTS = last_names(REAL_PARTS)


def _complex_value(obj) -> bool:
    """A complex number or array (a global constant the function reads)."""
    return isinstance(obj, (complex, np.complexfloating)) or (isinstance(obj, np.ndarray) and obj.dtype.kind == "c")


def _mentions_complex(value: cst.CSTNode, names: frozenset = frozenset(), resolve=None) -> bool:
    """Whether ``value`` writes a complex number or dtype (``1j``, ``np.complex128``, ``"complex"``),
    reads one of ``names`` (names assigned one, as ``t1 = np.complex128`` in A-normal form) or,
    with ``resolve``, a global or closure value that is complex."""

    class V(cst.CSTVisitor):
        found = False

        def visit_Imaginary(self, n: cst.Imaginary) -> None:
            V.found = True

        def visit_Name(self, n: cst.Name) -> None:
            V.found |= n.value in _COMPLEX_NAMES or n.value in names
            if resolve is not None and not V.found:
                V.found = _complex_value(resolve(n))

        def visit_Attribute(self, n: cst.Attribute) -> None:
            V.found |= n.attr.value in _COMPLEX_NAMES

        def visit_SimpleString(self, n: cst.SimpleString) -> None:
            V.found |= n.evaluated_value.startswith("complex")

    value.visit(V())
    return V.found


def _real_part(value: cst.BaseExpression) -> bool:
    """``np.abs(z)``, ``np.real(z)``, ``z.imag`` ...: a real value, even of a complex one."""
    if isinstance(value, cst.Attribute):
        return value.attr.value in _REAL_PARTS
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        return name in _REAL_PARTS
    return False


def complex_names(body: list, resolve=None) -> frozenset:
    """Names some statement assigns a complex number or dtype (see :func:`refuse_complex`)."""
    found: set[str] = set()
    for stmt in simple_statements(body):
        for small in stmt.body:
            if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name):
                if not _real_part(small.value) and _mentions_complex(small.value, frozenset(found), resolve):
                    found.add(small.targets[0].target.value)
    return frozenset(found)


def refuse_complex(value: cst.BaseExpression, line, names: frozenset = frozenset(), resolve=None) -> None:
    """Refuse a differentiated value made with a complex number or dtype (``1j``, ``np.complex128``,
    ``dtype="complex"``, a complex global): the rules hold for real values; a complex one would give
    wrong derivatives."""
    if _mentions_complex(value, names, resolve):
        raise NotDifferentiable(
            "a complex value where derivatives flow: srctrans differentiates real values only",
            line,
            "write the real and imaginary parts as two real arrays, or compute this outside the differentiated function",
        )


def view_update_check(small: cst.AugAssign, bases: dict[int, tuple[str, ...] | None], certain: set[str], file: str | None, line) -> list[str]:
    """The run-time checks to emit before ``name op= ...`` (which a transformation computes as a
    new value) when ``name`` may be a view of another array (``row = X[i]``: a view when ``X``
    has two axes, a number when it has one; ``row = pick(X, i)``, where ``pick`` may return a
    view of ``X``); none when no check is needed. ``bases``: from
    :func:`~srctrans.analysis.views.view_check_bases`; where no array can be named, refused.
    Certain views were refused by :func:`refuse_view_update` already."""
    name = small.target.value
    if id(small) not in bases or name in certain:
        return []
    op = code(small.operator).strip()
    if bases[id(small)] is None or file is None or line is None:
        raise NotDifferentiable(
            f"{name} {op} ... may update an array another name refers to ({name} may be a view), "
            "which this transformation cannot check here",
            line,
            f"make a new value: {name} = {name} {op[:-1]} ...",
        )
    checks = []
    for base in bases[id(small)]:
        label = "" if re.fullmatch(r"t\d+", base) else base  # (a temporary of A-normal form has no name of yours)
        checks.append(f'rt.refuse_view_update({name}, {base}, "{name}", "{op}", "{label}", "{file}", {line})')
    return checks


def refuse_shared_write(base: str, views: dict[str, str], aliased: set[str], line) -> None:
    """``base[i] = v`` where ``base`` may share its array with another name: refused (the write
    would change that name's value too, which the derivative would not see)."""
    if base in views or base in aliased:
        of = f"which may be a view of {views[base]}" if base in views else "which another name also refers to"
        raise NotDifferentiable(
            f"writing into {base}, {of}", line, f"make {base} an array of its own first, e.g. {base} = np.copy(...)"
        )


def refuse_view_update(small: cst.AugAssign, views: set[str], aliased: set[str], line) -> None:
    """``a += v`` where ``a`` shares its array with another name: refused (a transformation makes a new value)."""
    name = small.target.value
    if name in views or name in aliased:
        op = code(small.operator).strip()
        raise NotDifferentiable(
            f"{name} {op} ... updates an array another name also refers to"
            + (" (a view of another array)" if name in views else ""),
            line,
            f"write into the array itself ({name} is a view: y[1:] {op} v), or write {name} = {name} "
            f"{op[:-1]} ... to make a new value",
        )
