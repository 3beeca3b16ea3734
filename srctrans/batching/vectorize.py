"""The vectorized rewrite: every statement of a function in A-normal form carries the batch axis.

Input: the entry function, normalized (desugared, structured, A-normal form; see
:mod:`srctrans.passes.anf`), and for each parameter whether it is batched and its rank
(the number of axes of one example). Batched parameters arrive with the batch axis
first; the result returns every output with the batch axis first, unbatched outputs
broadcast. Steps:

1. :func:`srctrans.analysis.axes.analyze` says which names are batched and the rank of
   each value.
2. An ``if`` on a batched test becomes a masked select: both branches are computed
   (their assignments renamed) and each name they assign is ``np.where(test, then, else)``.
   Only branches free of side effects are converted (assignments and nested ``if``\\ s).
3. Each statement is rewritten from :data:`srctrans.rules.batching.BATCHING`; a
   statement no rule can express raises :class:`NoBatchRule` (``vmap(method="auto")``
   then loops over the examples instead).

This module knows no operation by name: it builds a :class:`~srctrans.rules.batching.Site`
for each right-hand side and asks its rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import libcst as cst

from ..analysis.axes import Axes, analyze
from ..analysis.names import NameGen, scan
from ..analysis.views import view_base, view_roots, written_in_place
from ..cache import ORIGIN_RE
from ..passes.fuse import assigned_once as _assigned_once
from ..passes.fuse import children as _children
from ..passes.fuse import inline_temporaries as _inline_temporaries
from ..rules import KeysById
from ..rules.batching import BATCHING, NO_VALUE, BatchRule, Info, Operand, Site, Unbatchable, pad
from ..rules.derivatives import OPERATORS
from .tuples import split_displays

_CODE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    return _CODE.code_for_node(node)


class NoBatchRule(Exception):
    """The rewrite cannot express a statement; ``line`` is the user's line when known."""

    def __init__(self, what: str, line: int | None) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


_SYMBOLS = {
    "Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/", "Power": "**", "FloorDivide": "//",
    "Modulo": "%", "MatrixMultiply": "@", "Minus": "-", "Plus": "+",
}
_COMPARISONS = {
    "GreaterThan": ("numpy.greater", ">"), "GreaterThanEqual": ("numpy.greater_equal", ">="),
    "LessThan": ("numpy.less", "<"), "LessThanEqual": ("numpy.less_equal", "<="),
    "Equal": ("numpy.equal", "=="), "NotEqual": ("numpy.not_equal", "!="),
}

_BY_ID = KeysById(BATCHING)


def rule_key(obj: Any) -> str | None:
    """The batching table's key for a function object (aliases such as ``np.amax`` resolve alike)."""
    return _BY_ID.table().get(id(obj))


def _line_of(node: cst.CSTNode) -> int | None:
    line = None
    for ll in getattr(node, "leading_lines", ()):
        m = ORIGIN_RE.match(ll.comment.value) if ll.comment is not None else None
        if m:
            line = int(m["line"])
    return line


class _Ops:
    """Sites of right-hand sides: which rule, which operands; shared by the analysis and the rewrite."""

    def __init__(
        self, resolve: Callable, local_marker: Any, np_name: str, n_name: str, axis_name: Any = None, callee: Callable | None = None
    ) -> None:
        self.resolve = resolve
        self.local = local_marker
        self.np = np_name
        self.n = n_name
        self.axis_name = axis_name
        self.uses_n = False
        # callee(fn, infos) -> (name, Info): the batched version of a user function, for its arguments' infos
        self.callee = callee

    # --- operands -----------------------------------------------------------------

    def operand(self, expr: cst.BaseExpression, env: Mapping[str, Info], batched: frozenset) -> Operand:
        text = code(expr)
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                value = {"True": True, "False": False, "None": None}[expr.value]
                return Operand(text, Info(False, None if value is None else 0), value)
            if expr.value in env:
                info = env[expr.value]
                if info.elements is not None:
                    raise Unbatchable(f"the tuple {text} (returned by your function) used other than by unpacking it")
                return Operand(text, Info(expr.value in batched, info.rank, info.length))
            obj = self.resolve(expr)
            if obj is self.local:
                return Operand(text, Info(expr.value in batched, None))
            return self._constant(text, obj)
        if isinstance(expr, (cst.Integer, cst.Float)) or (
            isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float))
        ):
            import ast

            return Operand(text, Info(False, 0), ast.literal_eval(text))
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            import ast

            return Operand(text, Info(False, None), ast.literal_eval(text))
        if isinstance(expr, (cst.Tuple, cst.List)):
            parts = [self.operand(el.value, env, batched) for el in expr.elements]
            if any(p.batched for p in parts):
                raise Unbatchable("a tuple or list holding batched values")
            value: Any = NO_VALUE
            if all(p.constant for p in parts):
                value = tuple(p.value for p in parts) if isinstance(expr, cst.Tuple) else [p.value for p in parts]
            ranks = [p.rank for p in parts]
            rank = None if any(r is None for r in ranks) else 1 + max(ranks, default=0)
            return Operand(text, Info(False, rank, len(parts)), value)
        if isinstance(expr, cst.Attribute):
            obj = self.resolve(expr)
            if obj is not self.local and obj is not None:
                return self._constant(text, obj)
        raise Unbatchable(f"an operand {text!r}")

    def _constant(self, text: str, obj: Any) -> Operand:
        import numpy as np

        if isinstance(obj, np.ndarray):
            return Operand(text, Info(False, obj.ndim))
        if isinstance(obj, (bool, int, float, complex, np.number)):
            return Operand(text, Info(False, 0), obj)
        if isinstance(obj, tuple):
            return Operand(text, Info(False, None, len(obj)), obj)
        return Operand(text, Info(False, None))

    # --- sites ----------------------------------------------------------------------

    def site(self, value: cst.BaseExpression, env, batched) -> tuple[BatchRule | None, Site | None, str]:
        """The rule and site of a right-hand side; ``(None, None, label)`` for what has no rule."""
        mk = lambda func, op, args, kwargs=None, unary=False: Site(  # noqa: E731
            func, op, args, kwargs or {}, n=self.n, np=self.np, unary=unary, axis_name=self.axis_name
        )
        if isinstance(value, cst.BinaryOperation):
            name = type(value.operator).__name__
            key = OPERATORS.get(name)
            args = [self.operand(value.left, env, batched), self.operand(value.right, env, batched)]
            return BATCHING.get(key or ""), mk(None, _SYMBOLS.get(name), args), key or name
        if isinstance(value, cst.UnaryOperation):
            name = type(value.operator).__name__
            args = [self.operand(value.expression, env, batched)]
            if name == "Not":
                return BATCHING["numpy.logical_not"], mk(None, "not ", args, unary=True), "not"
            key = OPERATORS.get(name)
            return BATCHING.get(key or ""), mk(None, _SYMBOLS.get(name), args, unary=True), key or name
        if isinstance(value, cst.Comparison):
            (comp,) = value.comparisons
            key, symbol = _COMPARISONS.get(type(comp.operator).__name__, (None, None))
            args = [self.operand(value.left, env, batched), self.operand(comp.comparator, env, batched)]
            return BATCHING.get(key or ""), mk(None, symbol, args), key or type(comp.operator).__name__
        if isinstance(value, cst.Attribute):
            base = self.operand(value.value, env, batched) if self._is_local(value.value, env) else None
            if base is None:
                return None, None, code(value)
            key = f"ndarray.{value.attr.value}"
            return BATCHING.get(key), mk(None, None, [base]), key
        if isinstance(value, cst.Subscript):
            x = self.operand(value.value, env, batched)
            parts = [self._index_part(el.slice, env, batched) for el in value.slice]
            return BATCHING["getitem"], mk(None, None, [x, *parts]), "indexing"
        if isinstance(value, cst.Call):
            return self._call(value, env, batched, mk)
        return None, None, code(value)

    def _is_local(self, expr: cst.BaseExpression, env) -> bool:
        return isinstance(expr, cst.Name) and (expr.value in env or self.resolve(expr) is self.local)

    def _index_part(self, part: cst.BaseSlice, env, batched) -> Operand:
        if isinstance(part, cst.Slice):
            bounds = [self.operand(b, env, batched) for b in (part.lower, part.upper, part.step) if b is not None]
            if any(b.batched for b in bounds):
                raise Unbatchable("a slice with batched bounds (its length would differ between examples)")
            return Operand(code(part), Info(False, None), slice(None))
        return self.operand(part.value, env, batched)

    def _call(self, call: cst.Call, env, batched, mk):
        func = call.func
        args = [self.operand(a.value, env, batched) for a in call.args if a.keyword is None]
        kwargs = {a.keyword.value: self.operand(a.value, env, batched) for a in call.args if a.keyword is not None}
        if any(a.star for a in call.args):
            return None, None, code(call)
        if isinstance(func, cst.Attribute) and self._is_local(func.value, env):
            base = self.operand(func.value, env, batched)
            key = f"ndarray.{func.attr.value}"
            site = mk(func.attr.value, None, [base, *args], kwargs)
            site.method = True
            return BATCHING.get(key), site, key

        obj = self.resolve(func)
        label = code(func)
        key = rule_key(obj) if obj is not None and obj is not self.local else None
        if key is None:
            site = mk(label, None, args, kwargs)
            from ..analysis.resolve import is_user_function

            user = is_user_function(obj)
            pure = user or _plain_numpy(obj) or _pure_helper(obj)
            if not site.any_batched() and pure:
                if user and hasattr(self.callee, "unbatched_result") and not kwargs:
                    out = self.callee.unbatched_result(obj, [a.info for a in args])
                    return _unbatched_result(out), site, label
                return _unbatched_call, site, label
            if user and self.callee is not None and not kwargs:  # your function, batched itself
                name, out = self.callee(obj, [a.info for a in args])
                return _batched_call(name, out), site, label
            return None, site, label
        return BATCHING[key], mk(label, None, args, kwargs), key

    # --- what the analysis and the rewrite ask ----------------------------------------

    def info(self, value: cst.BaseExpression, env, batched) -> Info:
        if isinstance(value, cst.ListComp):
            if _reads_any(value, batched):
                raise Unbatchable("a list comprehension over batched values")
            return Info(False, None)
        try:
            return self.operand(value, env, batched).info
        except Unbatchable:
            if isinstance(value, (cst.Name, cst.Integer, cst.Float, cst.Tuple, cst.List)):
                raise
        rule, site, label = self.site(value, env, batched)
        if rule is None:
            if not isinstance(value, cst.Call) and not _reads_any(value, batched):
                return Info(False, None)  # an operation on unbatched values (x is None, t.dtype): as written
            raise Unbatchable(f"no batching rule for {label}")
        return rule.infer(site)

    def emit(self, value: cst.BaseExpression, env, batched) -> tuple[str, Info]:
        info = self.info(value, env, batched)
        if isinstance(value, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.ListComp, cst.Tuple, cst.List)):
            return code(value), info
        if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float)):
            return code(value), info
        rule, site, _ = self.site(value, env, batched)
        if site is None or rule is None or (not site.any_batched() and rule.kind != "collective"):
            return code(value), info
        text = rule.emit(site)
        self.uses_n = self.uses_n or site.uses_n
        return text, info


def _plain_numpy(obj: Any) -> bool:
    """A NumPy function outside ``numpy.random``: unbatched calls of it are computed once for all examples."""
    module = getattr(obj, "__module__", None) or ""
    return (module == "numpy" or module.startswith("numpy.")) and "random" not in module and callable(obj)


def _pure_helper(obj: Any) -> bool:
    """A :mod:`srctrans.runtime` helper with a derivative rule (``rt.sum_grad`` in an adjoint file): a
    function of its arguments alone, so an unbatched call of it is computed once for all examples.
    (Helpers without a rule, such as ``setitem_grad``, which writes into its argument, are not.)"""
    if getattr(obj, "__module__", None) != "srctrans.runtime" or not callable(obj):
        return False
    from ..rules.derivatives import DERIVATIVES

    return f"srctrans.runtime.{getattr(obj, '__name__', '')}" in DERIVATIVES


_unbatched_call = BatchRule("unbatched", lambda site: Info(False, None), lambda site: site.write())


def _unbatched_result(out: Info) -> BatchRule:
    """A call of your function with unbatched arguments, as written (once for every example),
    whose result has the rank ``out`` says where it is known."""
    return BatchRule("unbatched", lambda site: out, lambda site: site.write())


def _batched_call(name: str, out: Info) -> BatchRule:
    """A call of your function with batched arguments: a call of its batched version ``name``,
    written into the same file, whose result is batched with the rank ``out`` says."""
    return BatchRule("callee", lambda site: out, lambda site: site.write(func=name))


def _reads_outside(body: list, skip: cst.CSTNode) -> set[str]:
    """The names read in ``body`` outside the statement ``skip``."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is skip or (isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name)):
                return False
            if isinstance(node, cst.Name):
                found.add(node.value)
            return True

    for st in body:
        st.visit(V())
    return found


def _read_only_where_taken(body: list, skip: cst.If, name: str, branch: str) -> bool:
    """Whether every read of ``name`` in ``body`` outside ``skip`` lies in the ``branch`` ("then" or
    "else") of an ``if`` on ``skip``'s test, a name assigned once: where that branch was not taken,
    the function never reads ``name`` (Python would raise), so its value there does not matter.

    (Reverse mode writes such pairs: ``if t3: t4 = 0.5 * r ...`` forward, ``if t3: ... t4 ...`` backward.)"""
    test = skip.test
    if not isinstance(test, cst.Name) or _assignments(body).get(test.value, 0) != 1:
        return False
    ok = True

    def visit(node: cst.CSTNode, inside: bool) -> None:
        nonlocal ok
        if node is skip or not ok:
            return
        if isinstance(node, cst.If):
            visit(node.test, inside)
            same = isinstance(node.test, cst.Name) and node.test.value == test.value
            visit(node.body, inside or (same and branch == "then"))
            if node.orelse is not None:
                visit(node.orelse, inside or (same and branch == "else"))
            return
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            return
        if isinstance(node, cst.Name) and node.value == name and not inside:
            ok = False
            return
        for child in node.children:
            visit(child, inside)

    for st in body:
        visit(st, False)
    return ok


def _assignments(body: list) -> dict[str, int]:
    """How many statements of ``body`` (at any depth) assign each name."""
    counts: dict[str, int] = {}

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] = counts.get(node.target.value, 0) + 1

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] = counts.get(node.target.value, 0) + 1

        def visit_For(self, node: cst.For) -> None:
            for n in _names_of_target(node.target):
                counts[n] = counts.get(n, 0) + 2  # a loop target changes every iteration

    for st in body:
        st.visit(V())
    return counts


def _names_of_target(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _names_of_target(el.value)]
    return []


def _reads_any(node: cst.CSTNode, names: frozenset) -> bool:
    class V(cst.CSTVisitor):
        found = False

        def visit_Name(self, n: cst.Name) -> None:
            if n.value in names:
                V.found = True

    node.visit(V())
    return V.found


# --- masked selects ------------------------------------------------------------------------


class _Rename(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.mapping.get(updated.value)
        return updated.with_changes(value=new) if new else updated


def _assigned_names(stmts) -> list[str]:
    out: list[str] = []
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name) and t.target.value not in out:
                            out.append(t.target.value)
    return out


class _Selects:
    """Turn ``if`` statements on batched tests into straight-line code and ``np.where``."""

    def __init__(self, axes: Axes, gen: NameGen, np_name: str, body: list) -> None:
        self.axes = axes
        self.gen = gen
        self.np = np_name
        self.body = body

    def block(self, stmts) -> list:
        out: list = []
        for st in stmts:
            if isinstance(st, cst.If) and id(st) in self.axes.conditions:
                out += self.select(st, set(self.axes.before.get(id(st), {})))
            elif isinstance(st, cst.If):
                orelse = st.orelse
                if isinstance(orelse, cst.Else):
                    orelse = orelse.with_changes(body=orelse.body.with_changes(body=self.block(orelse.body.body)))
                elif orelse is not None:
                    orelse = self.block([orelse])
                    orelse = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], cst.If) else cst.Else(cst.IndentedBlock(orelse))
                out.append(st.with_changes(body=st.body.with_changes(body=self.block(st.body.body)), orelse=orelse))
            elif isinstance(st, (cst.For, cst.While)):
                out.append(st.with_changes(body=st.body.with_changes(body=self.block(st.body.body))))
            else:
                out.append(st)
        return out

    def branch(self, stmts, suffix: str, defined: set[str]) -> tuple[list, dict[str, str]]:
        """A branch's statements with its assignments renamed (``y`` -> ``y_then``), and the renaming.

        ``defined``: the names that have a value before the branch.
        """
        mapping: dict[str, str] = {}
        out: list = []
        for st in stmts:
            if isinstance(st, cst.If):
                inner = self.select(st, defined | set(mapping))
                for s in inner:
                    out += self._rename_line(s, mapping, suffix)
                continue
            if not isinstance(st, cst.SimpleStatementLine):
                raise NoBatchRule("a loop inside a branch on a batched value", _line_of(st))
            for small in st.body:
                ok = isinstance(small, cst.Pass) or (
                    isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets)
                )
                if not ok:
                    raise NoBatchRule(
                        "a branch on a batched value that does more than assign names (it cannot be a masked select)",
                        _line_of(st),
                    )
            out += self._rename_line(st, mapping, suffix)
        return out, mapping

    def _rename_line(self, st: cst.SimpleStatementLine, mapping: dict[str, str], suffix: str) -> list:
        out = []
        for i, small in enumerate(st.body):
            if isinstance(small, cst.Pass):
                continue
            value = small.value.visit(_Rename(dict(mapping)))
            targets = []
            for t in small.targets:
                name = t.target.value
                if name not in mapping:
                    mapping[name] = self.gen.fresh(f"{name}_{suffix}", numbered=False)
                targets.append(t.with_changes(target=cst.Name(mapping[name])))
            lead = st.leading_lines if i == 0 else []
            out.append(cst.SimpleStatementLine([small.with_changes(targets=targets, value=value)], leading_lines=lead))
        return out

    def select(self, st: cst.If, defined: set[str]) -> list:
        then, m_then = self.branch(st.body.body, "then", defined)
        orelse = st.orelse
        if orelse is None:
            other, m_else = [], {}
        elif isinstance(orelse, cst.Else):
            other, m_else = self.branch(orelse.body.body, "else", defined)
        else:
            other, m_else = self.branch([orelse], "else", defined)
        test = code(st.test)
        out = [*then, *other]
        names = list(m_then) + [n for n in m_else if n not in m_then]
        read_elsewhere = _reads_outside(self.body, st)
        for name in names:
            if name not in m_then or name not in m_else:
                if name not in read_elsewhere:
                    continue  # a temporary of one branch
                if name not in defined:
                    branch = "then" if name in m_then else "else"
                    if not _read_only_where_taken(self.body, st, name, branch):
                        raise NoBatchRule(f"{name} is assigned in one branch only and has no value before", _line_of(st))
                    out.append(cst.parse_statement(f"{name} = {m_then.get(name) or m_else[name]}\n"))
                    continue
            a, b = m_then.get(name, name), m_else.get(name, name)
            line = cst.parse_statement(f"{name} = {self.np}.where({test}, {a}, {b})\n")
            out.append(line)
        if out:
            comment = cst.EmptyLine(comment=cst.Comment("# (a branch on a batched value: both sides computed, then selected)"))
            first = out[0]
            out[0] = first.with_changes(leading_lines=[*st.leading_lines, comment, *first.leading_lines])
        return out


# --- the rewrite ---------------------------------------------------------------------------


class _Rewrite:
    def __init__(
        self, ops: _Ops, axes: Axes, once: frozenset = frozenset(), written: frozenset = frozenset(), roots=None
    ) -> None:
        roots = roots or {}
        self.ops = ops
        self.axes = axes
        self.once = once  # names assigned by one line of the function only
        self.written = written  # names whose array a statement changes in place
        self.roots = roots  # names that are views of (or the same as) another array -> that array
        self.written_roots = {roots.get(w, w) for w in written}
        self.batched = axes.batched
        self.outputs_unbatched: set[int] = set()
        self.returned: list[Info] = []  # what is known of each returned value (a callee's result, for its caller)
        # the new ``name = ...`` lines whose right-hand side has a rule, by id (the dicts keep them alive, so
        # that no other node takes their id); ``fusible``: elementwise, assigning a temporary (``t3``)
        self.pure: dict[int, cst.CSTNode] = {}
        self.fusible: dict[int, cst.CSTNode] = {}

    last_line: int | None = None  # the user's line of the latest statement with an origin comment

    def block(self, stmts) -> list:
        out: list = []
        for st in stmts:
            self.last_line = _line_of(st) or self.last_line
            try:
                out += self.statement(st)
            except Unbatchable as err:
                raise NoBatchRule(str(err), _line_of(st) or self.last_line) from None
        return out

    def statement(self, st) -> list:
        if isinstance(st, cst.SimpleStatementLine):
            out = []
            for i, small in enumerate(st.body):
                env = self.axes.before[id(small)]
                text = self.small(small, env)
                line = cst.parse_statement(text + "\n").with_changes(leading_lines=st.leading_lines if i == 0 else [])
                if self._is_pure(small, env):
                    self.pure[id(line)] = line
                    if self._is_fusible(small, env):
                        self.fusible[id(line)] = line
                out.append(line)
            return out
        if isinstance(st, cst.If):
            env = self.axes.before[id(st)]
            if self.ops.info(st.test, env, self.batched).batched:
                raise Unbatchable("a branch on a batched value with side effects")
            orelse = st.orelse
            if isinstance(orelse, cst.Else):
                orelse = orelse.with_changes(body=orelse.body.with_changes(body=self.block(orelse.body.body)))
            elif orelse is not None:
                (orelse,) = self.statement(orelse)
            return [st.with_changes(body=st.body.with_changes(body=self.block(st.body.body)), orelse=orelse)]
        if isinstance(st, cst.For):
            if id(st) in self.axes.conditions:
                raise Unbatchable("a loop over a batched value")
            if st.orelse is not None:
                raise Unbatchable("for ... else")
            return [st.with_changes(body=st.body.with_changes(body=self.block(st.body.body)))]
        if isinstance(st, cst.While):
            if id(st) in self.axes.conditions:
                raise Unbatchable("a while loop whose condition depends on batched values (a different trip count per example)")
            if st.orelse is not None:
                raise Unbatchable("while ... else")
            return [st.with_changes(body=st.body.with_changes(body=self.block(st.body.body)))]
        raise Unbatchable(f"a {type(st).__name__} statement")

    def _is_pure(self, small, env) -> bool:
        """``name = value`` where value is an atom or an operation with a batching rule (no user call, no print)."""
        if not (isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name)):
            return False
        value = small.value
        if isinstance(value, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
            return True
        try:
            rule, _, _ = self.ops.site(value, env, self.batched)
        except Unbatchable:
            return False
        return rule is not None and rule is not _unbatched_call and rule.kind != "callee"  # (yours may write)

    def _is_fusible(self, small, env) -> bool:
        target = small.targets[0].target.value
        temporary = _TEMPORARY.match(target) or (_ADJOINT.match(target) and target in self.once)
        if not temporary or target in self.batched and not self.ops.info(small.value, env, self.batched).batched:
            return False
        try:
            rule, _, _ = self.ops.site(small.value, env, self.batched)
        except Unbatchable:
            return False
        return rule is not None and rule.kind == "elementwise"

    def _refuse_copied_view(self, name: str, value: cst.BaseExpression, info: Info) -> None:
        """``row = X[i]`` (or ``Y = X``) with ``X`` unbatched and ``row`` batched: ``row`` becomes a
        copy, so a write into either would no longer reach the other, as it does per example."""
        base = value.value if isinstance(value, cst.Name) else view_base(value)
        if base is None or info.rank == 0:
            return
        if not ({name, base} & self.written) and self.roots.get(base, base) not in self.written_roots:
            return  # (W = X.T; W[0] = v also changes row = X[0])
        raise Unbatchable(f"writing into {name}, which shares its array with {base} (batching makes {name} a copy)")

    def _broadcast(self, text: str) -> str:
        self.ops.uses_n = True
        return f"rt.batch_of({text}, {self.ops.n})"

    def small(self, small, env) -> str:
        b = self.batched
        if isinstance(small, cst.Assign):
            (target,) = [t.target for t in small.targets]
            held = small.value if isinstance(small.value, cst.Name) and env.get(small.value.value, Info(False, None)).elements else None
            if held is not None:  # a tuple your function returned, unpacked or copied
                return f"{code(target).strip()} = {held.value}"
            if isinstance(target, cst.Name):
                text, info = self.ops.emit(small.value, env, b)
                if target.value in b and not info.batched:
                    self._refuse_copied_view(target.value, small.value, info)
                    text = self._broadcast(text)
                return f"{target.value} = {text}"
            if isinstance(target, (cst.Tuple, cst.List)):
                info = self.ops.info(small.value, env, b)
                if info.elements is not None:  # out, bars = f(x): its batched version's tuple
                    text, _ = self.ops.emit(small.value, env, b)
                    return f"{code(target).strip()} = {text}"
                if info.batched:
                    raise Unbatchable("unpacking a batched value")
                return code(small).strip()
            if isinstance(target, cst.Subscript):
                return self._store(target, "=", small.value, env)
            raise Unbatchable("an assignment target")
        if isinstance(small, cst.AugAssign):
            op = code(small.operator).strip()
            if isinstance(small.target, cst.Subscript):
                return self._store(small.target, op, small.value, env)
            name = small.target.value
            value = self.ops.operand(small.value, env, b)
            if name not in b:
                return code(small).strip()
            rank = env.get(name, Info(True, None)).rank
            text = value.text
            if value.batched:
                if rank is None or value.rank is None:
                    raise Unbatchable("an update whose number of axes is not known")
                text = pad(text, rank - value.rank)
            return f"{name} {op} {text}"
        if isinstance(small, cst.Return):
            return self._return(small, env)
        if isinstance(small, cst.Expr):
            if _reads_any(small, b):
                raise Unbatchable("a statement with side effects on batched values (print ...)")
            return code(small).strip()
        if isinstance(small, cst.Assert):
            if _reads_any(small, b):
                raise Unbatchable("an assert on batched values")
            return code(small).strip()
        if isinstance(small, (cst.Pass, cst.Break, cst.Continue, cst.Raise)):
            return code(small).strip()
        raise Unbatchable(f"a {type(small).__name__} statement")

    def _store(self, target: cst.Subscript, op: str, value: cst.BaseExpression, env) -> str:
        b = self.batched
        name = target.value.value if isinstance(target.value, cst.Name) else None
        if name is None:
            raise Unbatchable("a write into something other than a name")
        parts = [self.ops._index_part(el.slice, env, b) for el in target.slice]
        v = self.ops.operand(value, env, b)
        plain = f"{code(target)} {op} {v.text}"
        if name not in b:
            return plain
        if any(p.batched for p in parts):
            raise Unbatchable("a write at a batched index (a scatter)")
        x = self.ops.operand(target.value, env, b)
        slot = BATCHING["getitem"].infer(Site(None, None, [x, *parts], {}))
        text = v.text
        if v.batched:
            if slot.rank is None or v.rank is None:
                raise Unbatchable("a write whose number of axes is not known")
            text = pad(text, slot.rank - v.rank)
        index = ", ".join([":", *(p.text for p in parts)])
        return f"{name}[{index}] {op} {text}"

    def _return(self, small: cst.Return, env) -> str:
        value = small.value
        if value is None:
            raise Unbatchable("a function that returns nothing")
        elements = [el.value for el in value.elements] if isinstance(value, cst.Tuple) else [value]
        texts = []
        for i, el in enumerate(elements):
            if isinstance(el, cst.Tuple):  # a nested result (a pytree the function made): each leaf batched
                texts.append(self._returned(el, env))
                self.returned.append(self._returned_info(el, env))
                continue
            o = self.ops.operand(el, env, self.batched)
            if o.info.length is not None and not isinstance(el, cst.Name):
                raise Unbatchable("a returned list inside a tuple")
            if o.batched:
                texts.append(o.text)
            else:
                self.outputs_unbatched.add(i)
                texts.append(self._broadcast(o.text))
            self.returned.append(Info(True, o.rank, o.info.length))
        if isinstance(value, cst.Tuple):
            return "return " + ", ".join(texts) + ("," if len(texts) == 1 else "")
        return f"return {texts[0]}"

    def _returned_info(self, value: cst.BaseExpression, env) -> Info:
        """What is known of a returned value once every leaf is batched (as :meth:`_returned` writes it)."""
        if isinstance(value, cst.Tuple):
            parts = tuple(self._returned_info(el.value, env) for el in value.elements)
            return Info(True, None, len(parts), parts)
        o = self.ops.operand(value, env, self.batched)
        return Info(True, o.rank, o.info.length)

    def _returned(self, value: cst.BaseExpression, env) -> str:
        """A returned value inside the returned tuple, with the batch axis first in each leaf."""
        if isinstance(value, cst.Tuple):
            parts = [self._returned(el.value, env) for el in value.elements]
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        o = self.ops.operand(value, env, self.batched)
        if o.info.length is not None:
            raise Unbatchable("a returned tuple whose elements are not known")
        return o.text if o.batched else self._broadcast(o.text)


def vectorize(
    node: cst.FunctionDef,
    params: Mapping[str, Info],
    resolve: Callable,
    local_marker: Any,
    np_name: str,
    name: str,
    axis_size: int | None,
    axis_name: Any = None,
    callee: Callable | None = None,
    returned: list[Info] | None = None,
) -> tuple[cst.FunctionDef, list[int]]:
    """The batched version of ``node`` (see the module docstring); also the outputs that were unbatched.

    ``callee(fn, infos)`` gives the batched version of a user function called with batched
    arguments (its name, and what is known of its result), or raises :class:`Unbatchable`.
    ``returned``, when given, receives the infos of the values the function returns.
    Raises :class:`NoBatchRule` with the user's line for a statement no rule expresses.
    """
    gen = NameGen(scan(node).all | {"rt", np_name})
    node = split_displays(node, gen)
    n_name = gen.fresh("n", numbered=False)
    ops = _Ops(resolve, local_marker, np_name, n_name, axis_name, callee)
    body = list(node.body.body)

    def analyse(stmts) -> Axes:
        try:
            return analyze(stmts, params, ops.info)
        except Unbatchable as err:
            raise NoBatchRule(str(err), _line_of(getattr(err, "statement", None) or cst.Pass())) from None

    axes = analyse(body)
    written_roots = {view_roots(body).get(w, w) for w in written_in_place(body)}
    for p, info in params.items():
        if p in axes.batched and not info.batched:  # every example would write into the one array passed
            raise NoBatchRule(f"a batched value is written into the unbatched argument {p}", None)
        if not info.batched and info.rank != 0 and p in written_roots:  # each example sees the writes before it
            raise NoBatchRule(f"the unbatched argument {p} is written in place (each example sees the writes of the ones before)", None)
    for _ in range(4):  # a select can make the tests of other branches batched
        if not any(isinstance(_find(body, i), cst.If) for i in axes.conditions):
            break
        body = _Selects(axes, gen, np_name, body).block(body)
        axes = analyse(body)
    written, roots = frozenset(written_in_place(body)), view_roots(body)
    rewrite = _Rewrite(ops, axes, _assigned_once(body), written, roots)
    new_body = _without_dead(rewrite.block(body), rewrite.pure, rewrite.fusible)
    new_body = _inline_temporaries(new_body, rewrite.fusible)
    prologue = []
    if ops.uses_n:
        first = next((p for p, info in params.items() if info.batched), None)
        size = f"{first}.shape[0]" if first is not None else repr(axis_size)
        prologue.append(cst.parse_statement(f"{n_name} = {size}  # the batch size\n"))
    new = node.with_changes(name=cst.Name(name), body=node.body.with_changes(body=[*prologue, *new_body]))
    if returned is not None:
        returned.extend(rewrite.returned)
    return new, sorted(rewrite.outputs_unbatched)


def _without_dead(body: list, pure: dict, fusible: dict) -> list:
    """Drop ``name = value`` lines (with a rule, so free of side effects) whose name nothing reads.

    A grad file batched for its gradients still computes the function's value; once
    ``rt.grad_seed(out)`` is ``1.0`` nothing reads it. Reads anywhere in the function count
    (loops read names assigned later), and a dropped line's comments go to the next line.
    """
    for _ in range(100):
        dead = _dead_lines(body, pure, _reads_outside(body, None))
        if not dead:
            break
        body = _drop(body, dead, (pure, fusible))
    return body


_TEMPORARY = re.compile(r"^t\d+$")
# an adjoint file's intermediate adjoints (``t6_bar``, ``den_bar``): inlined like temporaries
# when one line assigns them, so that Numba fuses a chain of them into one loop
_ADJOINT = re.compile(r"^\w+_bar(_\d+)?$")


def _dead_lines(stmts: list, pure: dict, reads: set[str]) -> set[int]:
    dead: set[int] = set()
    for st in stmts:
        if id(st) in pure and st.body[0].targets[0].target.value not in reads:
            dead.add(id(st))
        for child in _children(st):
            dead |= _dead_lines(child, pure, reads)
    return dead


def _drop(stmts: list, dead: set[int], keep: tuple = ()) -> list:
    out: list = []
    carry: list = []
    for st in stmts:
        if id(st) in dead:
            carry += list(st.leading_lines)
            continue
        if isinstance(st, (cst.If, cst.For, cst.While)):
            st = st.with_changes(body=st.body.with_changes(body=_drop(list(st.body.body), dead, keep) or [cst.SimpleStatementLine([cst.Pass()])]))
            if isinstance(st.orelse, cst.Else):
                st = st.with_changes(orelse=st.orelse.with_changes(body=st.orelse.body.with_changes(
                    body=_drop(list(st.orelse.body.body), dead, keep) or [cst.SimpleStatementLine([cst.Pass()])])))
            elif isinstance(st.orelse, cst.If):
                st = st.with_changes(orelse=_drop([st.orelse], dead, keep)[0])
        if carry:
            new = st.with_changes(leading_lines=[*carry, *st.leading_lines])
            for marks in keep:  # the new line keeps the old one's marks (pure, fusible)
                if id(st) in marks:
                    marks[id(new)] = new
            st, carry = new, []
        out.append(st)
    return out


def _find(stmts, target_id: int):
    for st in stmts:
        if id(st) == target_id:
            return st
        for child in _children(st):
            found = _find(child, target_id)
            if found is not None:
                return found
    return None
