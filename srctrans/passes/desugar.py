"""Desugar: rewrite convenience forms into the plain forms later passes expect.

Output contract (what holds after this pass, and nothing else changes):

1. Array methods with a NumPy function of the same meaning are calls of that
   function: ``x.sum(axis=0)`` -> ``np.sum(x, axis=0)``, ``a.dot(b)`` ->
   ``np.dot(a, b)``; the methods are listed in :data:`METHOD_FUNCTIONS`. (NumPy's
   functions defer to a non-array receiver's own method, so this keeps meaning.)
2. Chained comparisons whose middle operands are names or constants are
   ``and`` chains: ``a < b < c`` -> ``a < b and b < c``.
3. A statement assigning to several targets, ``a = b = e``, is ``a = e`` then ``b = a``.
4. JAX's functional updates are calls of runtime helpers: ``x.at[i].set(v)`` ->
   ``rt.at_set(x, i, v)`` (``add``, ``multiply`` likewise; a slice index becomes
   ``slice(lo, hi, step)``), so ``x`` itself is never written.
5. ``elif`` stays ``elif`` and augmented assignments stay (``x += 1`` may update an
   array in place, and must keep doing so).
6. A NumPy ufunc's ``out=`` is passed by position when every input is:
   ``np.add(a, b, out=c)`` -> ``np.add(a, b, c)`` (Numba takes it so only).
7. ``np.r_[...]`` and ``np.c_[...]`` of values and ranges are ``np.concatenate`` calls:
   ``np.r_[a, 0:3]`` -> ``np.concatenate((np.atleast_1d(a), np.arange(0, 3)))``,
   ``np.c_[a, b]`` -> ``np.concatenate((rt.c_column(a), rt.c_column(b)), axis=-1)``
   (``lo:hi:nj`` is ``np.linspace(lo, hi, n)``); a string directive stays as written.
8. A list or tuple display given to NumPy where it takes array data is an array:
   ``np.max([a * 2, b])`` -> ``np.max(np.array([a * 2, b]))``. Those places are a ufunc's
   inputs and the arguments :data:`srctrans.rules.shapes.ARRAY_DATA` names (never a
   shape, an axis or reps). NumPy makes
   that array itself; written out, every transformation (and Numba) reads one array.

Every statement keeps its leading comments; a statement that becomes several
gives them to the first.
"""

from __future__ import annotations

import libcst as cst

from ..rules.shapes import ARRAY_DATA

# Array methods whose NumPy function (same name) means the same and takes the
# receiver as first argument and the remaining arguments in the same order.
METHOD_FUNCTIONS: frozenset[str] = frozenset(
    """sum mean std var max min prod all any argmax argmin cumsum cumprod dot
    ptp trace nonzero squeeze swapaxes""".split()
)
# Not clip, round or diagonal: np.clip and np.round call an object's own method with NumPy's
# keywords (out=, decimals=) and np.diagonal never calls it, so a class of the user's with
# such a method would get NumPy's meaning instead of its own.


def _is_simple(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString))


class Desugar(cst.CSTTransformer):
    """The desugaring transformer; ``np_name`` is the name numpy has in the generated file."""

    def __init__(self, np_name: str = "np", module_names: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.np_name = np_name
        self.module_names = module_names | {np_name}

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        at = self._at_update(updated)
        if at is not None:
            return at
        out = self._positional_out(updated)
        if out is not None:
            return out
        arrays = self._display_arrays(updated)
        if arrays is not None:
            return arrays
        func = updated.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in METHOD_FUNCTIONS
            and not _is_module_like(func.value, self.module_names)
        ):
            receiver = func.value
            new_func = cst.Attribute(cst.Name(self.np_name), cst.Name(func.attr.value))
            args = [cst.Arg(receiver)]
            if updated.args:
                args[0] = args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated.with_changes(func=new_func, args=[*args, *updated.args])
        return updated

    def _numpy_function(self, func: cst.BaseExpression) -> str | None:
        """``"sum"`` for ``np.sum``, ``"linalg.norm"`` for ``np.linalg.norm``; None for anything else."""
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == self.np_name:
            return func.attr.value
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Attribute)
            and isinstance(func.value.value, cst.Name)
            and func.value.value.value == self.np_name
            and func.value.attr.value == "linalg"
        ):
            return f"linalg.{func.attr.value}"
        return None

    def _display_arrays(self, updated: cst.Call) -> cst.Call | None:
        """``np.max([a, b])`` -> ``np.max(np.array([a, b]))`` where NumPy takes array data (rule 8)."""
        import numpy as np

        name = self._numpy_function(updated.func)
        if name is None:
            return None
        positional = [i for i, a in enumerate(updated.args) if a.keyword is None and not a.star]
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc):
            data = positional[: ufunc.nin]
        elif ARRAY_DATA.get(f"numpy.{name}") == "first":
            data = positional[:1]
        elif ARRAY_DATA.get(f"numpy.{name}") == "all":
            data = positional
        else:
            return None
        args = list(updated.args)
        changed = False
        for i in data:
            value = args[i].value
            if isinstance(value, (cst.List, cst.Tuple)) and value.elements and not any(
                isinstance(e, cst.StarredElement) for e in value.elements
            ):
                if isinstance(value, cst.Tuple):  # (np.array of a list display: the form every transformation reads)
                    value = cst.List(list(value.elements))
                array = cst.Call(cst.Attribute(cst.Name(self.np_name), cst.Name("array")), [cst.Arg(value)])
                args[i] = args[i].with_changes(value=array)
                changed = True
        return updated.with_changes(args=args) if changed else None

    def _positional_out(self, updated: cst.Call) -> cst.Call | None:
        """``np.add(a, b, out=c)`` -> ``np.add(a, b, c)`` for a NumPy ufunc given all its inputs
        (the same call; Numba takes ``out`` by position only)."""
        import numpy as np

        func = updated.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self.module_names):
            return None
        ufunc = getattr(np, func.attr.value, None)
        keywords = [a for a in updated.args if a.keyword is not None]
        positional = [a for a in updated.args if a.keyword is None and not a.star]
        if not isinstance(ufunc, np.ufunc) or len(keywords) != 1 or keywords[0].keyword.value != "out":
            return None
        if len(positional) != ufunc.nin or ufunc.nout != 1 or len(positional) + 1 != len(updated.args):
            return None
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args = [a.with_changes(comma=comma) for a in positional] + [cst.Arg(keywords[0].value)]
        return updated.with_changes(args=args)

    def _at_update(self, updated: cst.Call) -> cst.BaseExpression | None:
        """``x.at[i].set(v)`` -> ``rt.at_set(x, i, v)`` (likewise ``add``, ``multiply``)."""
        func = updated.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _AT_METHODS and isinstance(func.value, cst.Subscript)):
            return None
        holder = func.value.value
        if not (isinstance(holder, cst.Attribute) and holder.attr.value == "at") or len(updated.args) != 1:
            return None
        index = _index_value(func.value.slice)
        helper = cst.Attribute(cst.Name("rt"), cst.Name(f"at_{func.attr.value}"))
        args = [cst.Arg(holder.value), cst.Arg(index), cst.Arg(updated.args[0].value)]
        return cst.Call(helper, args, lpar=updated.lpar, rpar=updated.rpar)

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        """``np.r_[a, b]`` -> ``np.concatenate((np.atleast_1d(a), np.atleast_1d(b)))``,
        ``np.c_[a, b]`` -> ``np.concatenate((rt.c_column(a), rt.c_column(b)), axis=-1)``; a
        slice item ``lo:hi:step`` is ``np.arange(lo, hi, step)`` (``lo:hi:nj``:
        ``np.linspace(lo, hi, n)``). A string directive (``np.r_['0,2', ...]``) stays."""
        value = updated.value
        if not (
            isinstance(value, cst.Attribute)
            and value.attr.value in ("r_", "c_")
            and isinstance(value.value, cst.Name)
            and value.value.value == self.np_name
        ):
            return updated
        items: list[cst.BaseSlice] = [el.slice for el in updated.slice]
        if len(items) == 1 and isinstance(items[0], cst.Index) and isinstance(items[0].value, cst.Tuple):
            items = [cst.Index(el.value) for el in items[0].value.elements]  # np.r_[(a, b)]: a tuple key too
        pieces: list[cst.BaseExpression] = []
        for item in items:
            column = cst.Attribute(cst.Name("rt"), cst.Name("c_column"))
            if isinstance(item, cst.Slice):
                piece = self._index_range(item)
                if piece is None:
                    return updated
                pieces.append(cst.Call(column, [cst.Arg(piece)]) if value.attr.value == "c_" else piece)
            elif isinstance(item, cst.Index) and item.star is None and not isinstance(
                item.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.StarredElement)
            ):
                wrap = column if value.attr.value == "c_" else cst.Attribute(cst.Name(self.np_name), cst.Name("atleast_1d"))
                pieces.append(cst.Call(wrap, [cst.Arg(item.value)]))
            else:
                return updated
        if not pieces:
            return updated
        text = ", ".join(cst.Module([]).code_for_node(p) for p in pieces) + ("," if len(pieces) == 1 else "")
        axis = ", axis=-1" if value.attr.value == "c_" else ""
        call = cst.parse_expression(f"{self.np_name}.concatenate(({text}){axis})")
        return call.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def _index_range(self, item: cst.Slice) -> cst.BaseExpression | None:
        """``lo:hi:step`` in ``np.r_[...]``: ``np.arange(lo, hi, step)``; ``lo:hi:5j``:
        ``np.linspace(lo, hi, 5)``; None when the step is not a number written out."""
        if item.upper is None:
            return None
        lower = item.lower if item.lower is not None else cst.Integer("0")
        step = item.step
        args = [cst.Arg(lower), cst.Arg(item.upper)]
        if isinstance(step, cst.Imaginary):
            count = abs(complex(step.value))
            if count != int(count):
                return None
            args.append(cst.Arg(cst.Integer(str(int(count)))))
            return _np_call(self.np_name, "linspace", args)
        if step is not None:
            literal = step.expression if isinstance(step, cst.UnaryOperation) and isinstance(step.operator, cst.Minus) else step
            if not isinstance(literal, (cst.Integer, cst.Float)):
                return None  # (a complex step in a name would mean linspace)
            args.append(cst.Arg(step))
        return _np_call(self.np_name, "arange", args)

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression:
        if len(updated.comparisons) < 2:
            return updated
        middles = [c.comparator for c in updated.comparisons[:-1]]
        if not all(_is_simple(m) for m in middles):
            return updated
        parts = []
        left = updated.left
        for target in updated.comparisons:
            parts.append(cst.Comparison(left=left, comparisons=[target]))
            left = target.comparator
        expr: cst.BaseExpression = parts[0]
        for part in parts[1:]:
            expr = cst.BooleanOperation(left=expr, operator=cst.And(), right=part)
        return expr.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel:
        out: list[cst.SimpleStatementLine] = []
        for small in updated.body:
            if isinstance(small, cst.Assign) and len(small.targets) > 1:
                first = small.targets[0].target
                out.append(cst.SimpleStatementLine([small.with_changes(targets=[small.targets[0]])]))
                for target in small.targets[1:]:
                    out.append(cst.SimpleStatementLine([cst.Assign([target], first)]))
            else:
                out.append(cst.SimpleStatementLine([small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]))
        if len(out) == 1 and len(updated.body) == 1 and out[0].body[0] is updated.body[0]:
            return updated
        out[0] = out[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel(out)


def _np_call(np_name: str, name: str, args: list[cst.Arg]) -> cst.Call:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return cst.Call(
        cst.Attribute(cst.Name(np_name), cst.Name(name)),
        [a.with_changes(comma=comma) for a in args[:-1]] + args[-1:],
    )


_AT_METHODS = frozenset({"set", "add", "multiply"})


def _index_value(elements) -> cst.BaseExpression:
    """The index of ``x[...]`` as a value: ``x[1:3, j]`` -> ``(slice(1, 3, None), j)``."""
    parts: list[cst.BaseExpression] = []
    for el in elements:
        s = el.slice
        if isinstance(s, cst.Index):
            parts.append(s.value)
        else:
            bounds = [getattr(s, k) if getattr(s, k) is not None else cst.Name("None") for k in ("lower", "upper", "step")]
            parts.append(cst.Call(cst.Name("slice"), [cst.Arg(b) for b in bounds]))
    if len(parts) == 1:
        return parts[0]
    return cst.Tuple([cst.Element(p) for p in parts])


def _is_module_like(node: cst.BaseExpression, module_names: frozenset[str]) -> bool:
    """``np.linalg.x(...)``-style receivers are modules, never arrays: leave their calls alone."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value in module_names


def desugar(node: cst.FunctionDef, np_name: str = "np", module_names: frozenset[str] = frozenset()) -> cst.FunctionDef:
    """Apply the desugaring rewrites; ``module_names`` are the free names bound to modules."""
    return node.visit(Desugar(np_name, module_names))
