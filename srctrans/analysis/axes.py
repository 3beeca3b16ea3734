"""Axes: which values of a function in A-normal form carry a batch axis, and each value's rank.

Read-only. Given the parameters that are batched (and every parameter's rank, the number
of axes of one example), :func:`analyze` walks the function and returns an :class:`Axes`:

- ``batched``: the names that carry the batch axis. A name is batched, everywhere in the
  function, as soon as one assignment gives it a batched value (or writes a batched value
  into it); the batching transformation then broadcasts its unbatched assignments. This
  is a fixed point over the whole function, loops included.
- ``before``: for every small statement (by ``id``), what is known of each name just
  before it: batched or not, and its rank where the same on every path (ranks are
  followed statement by statement, so ``y = x * 2; y = np.sum(y)`` is fine).
- ``conditions``: the ``if`` and ``while`` statements (by ``id``) whose test is batched.

What a right-hand side gives is asked of ``value_info`` (the transformation answers from
its rule table): this module knows no operation. The same analysis serves sharding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from ..rules.batching import Info, Unbatchable

Env = dict[str, Info]
ValueInfo = Callable[[cst.BaseExpression, Mapping[str, Info], frozenset], Info]


@dataclass(frozen=True)
class Axes:
    batched: frozenset[str]
    before: Mapping[int, Mapping[str, Info]]
    conditions: frozenset[int]


def _join(a: Env, b: Env) -> Env:
    out = dict(a)
    for name, info in b.items():
        prior = out.get(name)
        if prior is None or prior == info:
            out[name] = info
        else:
            out[name] = Info(prior.batched or info.batched, prior.rank if prior.rank == info.rank else None,
                             prior.length if prior.length == info.length else None,
                             prior.elements if prior.elements == info.elements else None)
    return out


class _Walk:
    def __init__(self, value_info: ValueInfo, batched: set[str]) -> None:
        self.value_info = value_info
        self.batched = batched
        self.changed = False
        self.before: dict[int, Env] = {}
        self.conditions: set[int] = set()

    def mark(self, name: str) -> None:
        if name not in self.batched:
            self.batched.add(name)
            self.changed = True

    def info(self, expr: cst.BaseExpression, env: Env) -> Info:
        return self.value_info(expr, env, frozenset(self.batched))

    def set(self, env: Env, name: str, info: Info) -> None:
        if info.batched:
            self.mark(name)
        env[name] = Info(name in self.batched, info.rank, info.length, info.elements)

    def unpack(self, env: Env, target: cst.BaseExpression, info: Info) -> None:
        """Give the names of ``target`` (``out, (a, b)``) the infos of a tuple's elements."""
        if isinstance(target, cst.Name):
            self.set(env, target.value, info)
            return
        parts = target.elements if isinstance(target, (cst.Tuple, cst.List)) else None
        if parts is None or info.elements is None or len(parts) != len(info.elements):
            raise Unbatchable("unpacking a tuple your function returned into other names than its elements")
        for el, sub in zip(parts, info.elements):
            self.unpack(env, el.value, sub)

    def tuple_of(self, expr: cst.BaseExpression, env: Env) -> Info | None:
        """The info of a name holding a tuple your function returned, else None."""
        if isinstance(expr, cst.Name) and expr.value in env and env[expr.value].elements is not None:
            return env[expr.value]
        return None

    def block(self, stmts: Sequence[cst.CSTNode], env: Env) -> Env:
        for stmt in stmts:
            try:
                env = self.statement(stmt, env)
            except Exception as err:  # value_info's refusal: say which statement
                if getattr(err, "statement", None) is None:
                    err.statement = stmt  # type: ignore[attr-defined]
                raise
        return env

    def statement(self, stmt: cst.CSTNode, env: Env) -> Env:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.before[id(small)] = dict(env)
                self.small(small, env)
            return env
        if isinstance(stmt, cst.If):
            self.before[id(stmt)] = dict(env)
            test = self.info(stmt.test, env)
            if test.batched:
                self.conditions.add(id(stmt))
            then = self.block(stmt.body.body, dict(env))
            orelse = stmt.orelse
            if orelse is None:
                other = env
            elif isinstance(orelse, cst.Else):
                other = self.block(orelse.body.body, dict(env))
            else:
                other = self.statement(orelse, dict(env))
            return _join(then, other)
        if isinstance(stmt, (cst.For, cst.While)):
            return self.loop(stmt, env)
        return env

    def loop(self, stmt: cst.For | cst.While, env: Env) -> Env:
        self.before[id(stmt)] = dict(env)
        start = dict(env)
        current = dict(env)
        for _ in range(6):
            inner = dict(current)
            if isinstance(stmt, cst.For):
                iterated = self.info(stmt.iter, inner)
                if iterated.batched:
                    self.conditions.add(id(stmt))
                for name in _names(stmt.target):
                    element = Info(iterated.batched, None if iterated.rank is None else max(iterated.rank - 1, 0))
                    if iterated.length is not None or _is_range(stmt.iter):
                        element = Info(False, 0)
                    self.set(inner, name, element)
            else:
                if self.info(stmt.test, inner).batched:
                    self.conditions.add(id(stmt))
            end = self.block(stmt.body.body, inner)
            joined = _join(start, end)
            if joined == current:
                break
            current = joined
        if stmt.orelse is not None:
            current = self.block(stmt.orelse.body.body, dict(current))
        return current

    def small(self, small: cst.BaseSmallStatement, env: Env) -> None:
        if isinstance(small, cst.Assign):
            value = self.tuple_of(small.value, env) or self.info(small.value, env)
            for target in small.targets:
                t = target.target
                if isinstance(t, cst.Name):
                    self.set(env, t.value, value)
                elif value.elements is not None:
                    self.unpack(env, t, value)
                elif isinstance(t, (cst.Tuple, cst.List)):
                    for name in _names(t):
                        self.set(env, name, Info(value.batched, 0 if value.length is not None else None))
                elif isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name):
                    index = self.info(t, env) if value.batched is False else value
                    if value.batched or index.batched:
                        self.mark(t.value.value)
                        prior = env.get(t.value.value, Info(True, None))
                        env[t.value.value] = Info(True, prior.rank, prior.length)
        elif isinstance(small, cst.AugAssign):
            value = self.info(small.value, env)
            t = small.target
            base = t.value if isinstance(t, cst.Subscript) else t
            if isinstance(base, cst.Name):
                prior = env.get(base.value, Info(False, None))
                if value.batched:
                    self.mark(base.value)
                rank = prior.rank
                if isinstance(t, cst.Name) and prior.rank is not None and value.rank is not None:
                    rank = max(prior.rank, value.rank)
                env[base.value] = Info(base.value in self.batched, rank, prior.length)


def _is_range(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "range"


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for el in target.elements:
            out += _names(el.value)
        return out
    return []


def analyze(body: Sequence[cst.CSTNode], params: Mapping[str, Info], value_info: ValueInfo) -> Axes:
    """The batched names and the rank of every value of ``body`` (see the module docstring)."""
    batched = {name for name, info in params.items() if info.batched}
    for _ in range(20):
        walk = _Walk(value_info, batched)
        walk.block(body, dict(params))
        if not walk.changed:
            break
    return Axes(frozenset(batched), walk.before, frozenset(walk.conditions))
