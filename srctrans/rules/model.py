"""What a rule is: :class:`Rule` and :class:`Param`, and the small constructors the tables are
written with (``elementwise``, ``vjp``, ``nondiff``, ``constant_only``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Param:
    name: str
    default: str | None = None  # source text of the default, None when required


@dataclass(frozen=True)
class Rule:
    """How to differentiate one operation."""

    kind: str  # elementwise | vjp | nondiff
    params: tuple[Param, ...]
    templates: dict[str, str] = field(default_factory=dict)  # param -> partial (elementwise) or vjp
    needs_ans: bool = False
    # forward mode: LINEAR, MULTILINEAR or param -> tangent term ({t}: the param's tangent);
    # left out of repr so that reverse mode's rule fingerprint does not depend on it
    jvp: str | dict[str, str] | None = field(default=None, repr=False, compare=False)
    # reverse mode, in a loop: param -> a statement adding the contribution into {sink}, an
    # array made for that loop's adjoints alone, in place (no temporaries); see _open_sinks
    accumulate: dict[str, str] = field(default_factory=dict)

    def template(self, param: str) -> str | None:
        return self.templates.get(param)


def parse_signature(text: str) -> tuple[Param, ...]:
    params = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, default = part.partition("=")
        params.append(Param(name.strip(), default.strip() or None))
    return tuple(params)


_NAMES = ("x", "y", "z")


def elementwise(*partials: str | None) -> Rule:
    params = tuple(Param(n) for n in _NAMES[: len(partials)])
    templates = {p.name: t for p, t in zip(params, partials) if t is not None}
    return Rule("elementwise", params, templates, any("{ans}" in t for t in templates.values()))


LINEAR = "linear"


MULTILINEAR = "multilinear"


def vjp(signature: str, jvp: str | dict[str, str] | None = None, accumulate: dict[str, str] | None = None, **templates: str) -> Rule:
    needs_ans = any("{ans}" in t for t in templates.values())
    return Rule("vjp", parse_signature(signature), dict(templates), needs_ans, jvp, dict(accumulate or {}))


def nondiff(signature: str = "x") -> Rule:
    return Rule("nondiff", parse_signature(signature))


def constant_only(signature: str) -> Rule:
    return Rule("vjp", parse_signature(signature), jvp={})
