"""The generated parallel file: a function split at its collectives into per-example stages.

``pmap`` starts from the function in A-normal form (the pipeline's ``anf`` file: desugared,
one operation per statement, pytree arguments as leaves). Each top-level statement
``v = psum(e, 'i')`` (or ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``)
ends a *stage*: the statements between two collectives become a per-example function
``f_stage0``, ``f_stage1``, ... that takes the values it reads and returns, as a tuple,
the values it defines that a later stage, collective or the ``return`` reads. A driver
``f_pmap(run, ...)`` shows the program::

    def loss_pmap(run, x, w):
        # stage 1 of 2: map over the examples
        h, t = run.map(loss_stage0, (x, w), batched=(True, False))
        # combine: psum over 'i'
        s = run.reduce("sum", t)
        # stage 2 of 2: map over the examples
        out, = run.map(loss_stage1, (h, s), batched=(True, False))
        return out

``batched`` says, per argument, whether it is sharded over the devices (the mapped
arguments and everything a stage returns) or the same on every device (unmapped
arguments and the results of collectives). The file keeps the ``anf`` file's imports,
values and callees. A collective anywhere but at the top level of the function (inside a
loop, a branch, or a function it calls) is refused, located in the user's source.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from ..cache import HASH_PREFIX, META_PREFIX, ORIGIN_RE, module_name_for, read_header, write_generated
from ..errors import SrcTransError, UnsupportedSyntaxError
from ..pipeline import generate
from ..variant import Generated, StaticArgs, Transform
from . import collectives

# collective function -> how the driver combines its operand ("axis_index" needs no operand)
COLLECTIVES = {
    collectives.psum: "psum",
    collectives.pmean: "pmean",
    collectives.pmax: "pmax",
    collectives.pmin: "pmin",
    collectives.all_gather: "all_gather",
    collectives.axis_index: "axis_index",
}
_REDUCE = {"psum": "sum", "pmean": "sum", "pmax": "max", "pmin": "min", "all_gather": "gather"}


@dataclass(frozen=True)
class StageInfo:
    name: str
    batched: tuple[bool, ...]
    outputs: int


def parallel_file(fn: Any, batched: tuple[bool, ...], axis_name: str | None, static: StaticArgs | None = None) -> Generated:
    """Write (or reuse) the parallel file of ``fn`` whose flat parameters are sharded where ``batched`` says."""
    anf_gen = generate(fn, Transform("anf"), static)
    options = (("axis_name", axis_name), ("batched", tuple(bool(b) for b in batched)))
    label = "pmap(" + ", ".join(f"{k}={v!r}" for k, v in options) + ")"
    header = read_header(anf_gen.path.read_text())
    anf_hash = header[1] if header else hashlib.sha1(anf_gen.path.read_bytes()).hexdigest()
    dep_hash = hashlib.sha1(f"{anf_hash}|{label}".encode()).hexdigest()[:16]
    tag = "pmap"
    if axis_name is not None:
        tag += "_" + re.sub(r"\W", "_", str(axis_name))
    tag += "_" + "_".join("b" if b else "u" for b in batched)
    # <module>.<function>.anf[.static-..][.tree-..].py -> <module>.<function>.<tag>[...].py
    stem = anf_gen.path.name[:-3]
    cut = max(stem.rfind(".anf."), stem.rfind(".anf") if stem.endswith(".anf") else -1)
    path = anf_gen.path.with_name(stem[:cut] + "." + tag + stem[cut + 4:] + ".py")
    try:
        text = path.read_text()
        old = read_header(text)
    except (OSError, UnicodeDecodeError):
        old = None
    if old is not None and old[1] == dep_hash:
        meta = old[0]
    else:
        text, meta = _build(anf_gen, tuple(bool(b) for b in batched), axis_name, label, dep_hash)
        write_generated(path, text)
    return Generated(path, module_name_for(path), meta, anf_gen.bound, anf_gen.captured, text)


# --- building ----------------------------------------------------------------------------


class _Located:
    """Turns a statement's origin comment into a located SrcTransError."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def error(self, origin: tuple[str, int, str] | None, word: str, message: str, hint: str) -> SrcTransError:
        if origin is None:
            return UnsupportedSyntaxError(message, hint=hint)
        display, line, text = origin
        filename = self.sources.get(display, display)
        col = end = None
        import linecache

        source_line = linecache.getline(filename, line).rstrip("\n") or text
        m = re.search(r"\b" + re.escape(word) + r"\s*\(", source_line)
        if m:
            col, end = m.start(), m.start() + len(word)
        return UnsupportedSyntaxError(message, filename=filename, line=line, col=col, end_col=end, source_line=source_line, hint=hint)


def _origin(node) -> tuple[str, int, str] | None:
    """The user's file, line and text from the first origin comment before a statement."""
    for ll in getattr(node, "leading_lines", ()):
        m = ORIGIN_RE.match(ll.comment.value) if ll.comment is not None else None
        if m:
            return m["file"], int(m["line"]), ll.comment.value[m.end():]
    return None


def _origin_of_comment(line) -> tuple[str, int, str] | None:
    m = ORIGIN_RE.match(line.comment.value)
    return (m["file"], int(m["line"]), line.comment.value[m.end():]) if m else None


def _resolver(module_ns: dict):
    """The collective a call's function expression names, or None."""
    import libcst as cst

    def resolve(expr) -> str | None:
        parts = []
        while isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return None
        value = module_ns.get(expr.value)
        if value is None:
            import builtins

            value = getattr(builtins, expr.value, None)
        for attr in reversed(parts):
            value = getattr(value, attr, None)
        try:
            return COLLECTIVES.get(value)
        except TypeError:  # unhashable
            return None

    return resolve


def _names(code: str) -> tuple[set[str], set[str]]:
    """(names read, names written) by a statement's code."""
    tree = ast.parse(textwrap.dedent(code))
    reads, writes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            reads.add(node.target.id)
    return reads, writes


def _build(anf_gen: Generated, batched: tuple[bool, ...], axis_name: str | None, label: str, dep_hash: str):
    """The parallel file's text and meta, from the ``anf`` file of the function."""
    import libcst as cst

    from ..analysis.callees import outputs_of
    from ..batching.generate import return_display
    from ..cache import load_module
    from ..passes.control import JumpError, structure

    text = anf_gen.text
    meta0 = anf_gen.meta
    entry_name = meta0["entry"]
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    body_text = "\n".join(lines[i:]).lstrip("\n")
    module = cst.parse_module(body_text)
    namespace = load_module(anf_gen.path, anf_gen.module_name + "_pmap_scan", anf_gen.bound).__dict__
    resolve = _resolver(namespace)
    original = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == entry_name)
    located = _Located(meta0.get("sources", {}))
    try:
        entry = structure(original)  # early returns, break, continue: one return, at the end
    except JumpError as err:
        raise located.error(_origin(err.node), "return", err.message, err.hint) from None
    entry = return_display(entry)  # a returned dict or list: return a, b (the leaves)
    module = module.with_changes(body=[entry if s is original else s for s in module.body])
    params = [p.name.value for p in entry.params.params]
    if len(params) != len(batched):
        raise TypeError(f"pmap: {entry_name} takes {len(params)} arguments after flattening, in_axes gives {len(batched)}")
    code = cst.Module(body=[]).code_for_node

    class Calls(cst.CSTVisitor):
        """Collective calls inside a node, with the statement each sits in."""

        def __init__(self) -> None:
            self.found: list[tuple[str, Any]] = []
            self.stmt = None

        def visit_SimpleStatementLine(self, node) -> None:
            self.stmt = node

        def visit_If(self, node) -> None:
            self.stmt = node

        def visit_For(self, node) -> None:
            self.stmt = node

        def visit_While(self, node) -> None:
            self.stmt = node

        def visit_Call(self, node) -> None:
            kind = resolve(node.func)
            if kind is not None:
                self.found.append((kind, self.stmt))

    # collectives in callees: refused
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt is not entry:
            v = Calls()
            stmt.visit(v)
            if v.found:
                kind, at = v.found[0]
                raise located.error(
                    _origin(at), kind, f"{kind} inside {stmt.name.value}, a function that the pmapped {entry_name} calls",
                    f"call {kind} at the top level of {entry_name} (pmap splits the function there into stages)",
                )

    # the top-level statements: segments between collectives
    segments: list[list] = [[]]
    combines: list[dict] = []
    last_origin = None  # the origin comment of the user's line the statements come from
    for stmt in entry.body.body:
        comment = next((ll for ll in stmt.leading_lines if ll.comment is not None and ORIGIN_RE.match(ll.comment.value)), None)
        if comment is not None:
            last_origin = comment
        elif not segments[-1] and last_origin is not None:  # a stage starts in the middle of a line's statements
            stmt = stmt.with_changes(leading_lines=[*stmt.leading_lines, last_origin])
        v = Calls()
        stmt.visit(v)
        if not v.found:
            segments[-1].append(stmt)
            continue
        kind, at = v.found[0]
        one = _collective_statement(stmt, resolve)
        if one is None:
            where = "a loop" if isinstance(stmt, (cst.For, cst.While)) else "a branch" if isinstance(stmt, cst.If) else "an expression"
            raise located.error(
                _origin(at), kind, f"{kind} inside {where} of {entry_name}: pmap splits the function only at a collective at its top level",
                f"move {kind} out of {where}, to the top level of {entry_name} (e.g. v = {kind}(x, {axis_name!r}))",
            )
        target, operand, name_arg = one
        origin = _origin(stmt) or (None if last_origin is None else _origin_of_comment(last_origin))
        if name_arg is _MISSING:
            raise located.error(origin, kind, f"{kind} without an axis name", f"write {kind}(..., {axis_name!r})")
        if not isinstance(name_arg, str) or name_arg != axis_name:
            named = "no axis_name" if axis_name is None else f"axis_name={axis_name!r}"
            raise located.error(
                origin, kind, f"{kind} over the unknown axis name {name_arg!r}: this pmap has {named}",
                f"pass pmap(..., axis_name={name_arg!r})" if isinstance(name_arg, str) else "give the axis name as a string constant",
            )
        combines.append({"kind": kind, "target": target, "operand": operand, "origin": origin})
        segments.append([])

    count = outputs_of(entry)
    tail = segments[-1][-1] if segments[-1] else None
    last_return = tail.body[0] if isinstance(tail, cst.SimpleStatementLine) and isinstance(tail.body[0], cst.Return) else None

    # names each segment reads and writes; which are variables of the function
    rw = [[_names(code(s)) for s in seg] for seg in segments]
    variables = set(params)
    for seg in rw:
        for _, w in seg:
            variables |= w
    for c in combines:
        variables.add(c["target"])
    seg_reads = [set().union(*(r for r, _ in seg)) & variables if seg else set() for seg in rw]
    seg_writes = [set().union(*(w for _, w in seg)) if seg else set() for seg in rw]

    used_later: list[set[str]] = []
    after: set[str] = set()
    for j in range(len(segments) - 1, -1, -1):
        used_later.append(set(after))
        after |= seg_reads[j]
        if j > 0:
            c = combines[j - 1]
            if c["operand"] is not None:
                after.add(c["operand"])
    used_later.reverse()

    gen_names = set(namespace) | variables | {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}

    def fresh(base: str) -> str:
        name = base
        k = 1
        while name in gen_names:
            k += 1
            name = f"{base}{k}"
        gen_names.add(name)
        return name

    outs_of = [
        [n for n in _ordered(seg_writes[j], params, segments[: j + 1], code) if n in used_later[j]]
        for j in range(len(segments))
    ]
    # a stage between two collectives that defines nothing used later does not run
    kept = [j for j in range(len(segments)) if j == len(segments) - 1 or outs_of[j]]
    stage_names = {j: fresh(f"{entry_name}_stage{k}") for k, j in enumerate(kept)}
    driver_name = fresh(f"{entry_name}_pmap")
    run_name = fresh("run")
    first_batched = next((p for p, b in zip(params, batched) if b), None)
    if first_batched is None:
        raise ValueError("pmap needs at least one mapped argument (every in_axes is None)")

    kind_of: dict[str, bool] = dict(zip(params, batched))  # name -> sharded (True) or replicated (False)
    defined = set(params)
    stage_defs: list = []
    stage_infos: list[StageInfo] = []
    driver: list[str] = []
    total = len(kept)
    out_names: list[str] = []
    for j, seg in enumerate(segments):
        last = j == len(segments) - 1
        if j not in kept:
            c = combines[j]
            driver += _combine(c, kind_of, run_name, first_batched)
            kind_of[c["target"]] = c["kind"] == "axis_index"
            defined.add(c["target"])
            continue
        number = kept.index(j)
        ins = [n for n in _ordered(seg_reads[j], params, segments[: j + 1], code) if n in defined]
        if not any(kind_of[n] for n in ins):  # a stage needs a sharded argument to know its examples
            ins.append(first_batched)
        flags = tuple(kind_of[n] for n in ins)
        body = list(seg)
        if last:
            if last_return is None:
                raise UnsupportedSyntaxError(f"pmap: {entry_name} must end with a return statement at its top level")
            body, leaves, structure = _flat_return(body, last_return, count, code)
            out_names = [e.value if isinstance(e, cst.Name) else fresh(f"out{k}") for k, e in enumerate(leaves)]
            outs = out_names
        else:
            outs = outs_of[j]
            body.append(cst.parse_statement(f"return {', '.join(outs)}" + ("," if len(outs) == 1 else "") + "\n"))
        fn = entry.with_changes(
            name=cst.Name(stage_names[j]),
            params=cst.Parameters(params=[cst.Param(cst.Name(n)) for n in ins]),
            body=entry.body.with_changes(body=body),
            leading_lines=[],
        )
        stage_defs.append(fn)
        stage_infos.append(StageInfo(stage_names[j], flags, len(outs)))
        what = "map over the examples" if number == 0 else "map over the examples again"
        driver.append(f"    # stage {number + 1} of {total}: {what}")
        target = ", ".join(outs) + ("," if len(outs) == 1 else "")
        args = ", ".join(ins) + ("," if len(ins) == 1 else "")
        flags_text = ", ".join(map(str, flags)) + ("," if len(flags) == 1 else "")
        driver.append(f"    {target} = {run_name}.map({stage_names[j]}, ({args}), batched=({flags_text}))")
        for n in outs:
            kind_of[n] = True
            defined.add(n)
        if not last:
            c = combines[j]
            driver += _combine(c, kind_of, run_name, first_batched)
            kind_of[c["target"]] = c["kind"] == "axis_index"
            defined.add(c["target"])
    driver.append(f"    return {', '.join(out_names)}" + ("," if len(out_names) == 1 else ""))
    driver_params = ", ".join([run_name, *params])
    where = ", ".join(f"{c['kind']} at {c['origin'][0]}:{c['origin'][1]}" if c["origin"] else c["kind"] for c in combines)
    doc = [
        f"def {driver_name}({driver_params}):",
        f'    """{entry_name} over the devices of `{run_name}`: {total} stage{"s" if total > 1 else ""} of per-example code'
        + (", the collectives between them." if combines else " (no collectives).") + '"""',
        *driver,
    ]
    driver_def = cst.parse_statement("\n".join(doc) + "\n")

    new_body = []
    for stmt in module.body:
        if stmt is entry:
            new_body += [*stage_defs, driver_def]
        elif not _collective_import(stmt):
            new_body.append(stmt)
    parts, plain = [], []
    for stmt in new_body:
        if isinstance(stmt, cst.FunctionDef):
            if plain:
                parts.append("".join(code(s) for s in plain).strip("\n") + "\n")
                plain = []
            parts.append(code(stmt.with_changes(leading_lines=[])).strip("\n") + "\n")
        else:
            plain.append(stmt)
    if plain:
        parts.append("".join(code(s) for s in plain).strip("\n") + "\n")
    body = "\n\n".join(parts)
    body_hash = hashlib.sha256(body.encode()).hexdigest()[:16]
    meta = {
        "entry": driver_name,
        "functions": [s.name.value for s in new_body if isinstance(s, cst.FunctionDef)],
        "params": meta0["params"],
        "bound": meta0.get("bound", {}),
        "fast": meta0.get("fast", True),
        "sources": meta0.get("sources", {}),
        "pmap": {
            "axis_name": axis_name,
            "batched": list(batched),
            "outputs": structure,
            "stages": [{"name": s.name, "batched": list(s.batched), "outputs": s.outputs} for s in stage_infos],
        },
    }
    first_line = lines[0]
    source = first_line.split(" from ", 1)[1].rsplit(" -- ", 1)[0] if " from " in first_line else entry_name
    head = [
        f"# Generated by srctrans {_version()} from {source} -- {label}",
        "# Do not edit: srctrans rewrites this file when the function or anything it uses changes.",
        "# show again: call the pmapped function, then srctrans.source(it)",
        f"# pmap: {total} stage{'s' if total > 1 else ''} of per-example code"
        + (f", split at {where}" if combines else "")
        + f"; {driver_name} runs them on the devices of a runner",
    ]
    for ln in lines[:i]:
        if ln.startswith("# bound at load time") or ln.startswith("#   "):
            head.append(ln)
    head.append(META_PREFIX + json.dumps(meta, sort_keys=True))
    head.append(f"{HASH_PREFIX}{dep_hash}  body hash: {body_hash}")
    return "\n".join(head) + "\n\n" + body, meta


_MISSING = object()


def _collective_statement(stmt, resolve):
    """``(target, operand name or None, axis name)`` of ``v = psum(e, 'i')``; None for any other form."""
    import libcst as cst

    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    call = assign.value
    if not isinstance(call, cst.Call):
        return None
    kind = resolve(call.func)
    if kind is None:
        return None
    positional = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if kind == "axis_index":
        operand_node = None
        name_node = positional[0].value if positional else keywords.get("axis_name")
    else:
        operand_node = positional[0].value if positional else keywords.get("x")
        name_node = positional[1].value if len(positional) > 1 else keywords.get("axis_name")
        if operand_node is None or not isinstance(operand_node, (cst.Name, cst.Integer, cst.Float)):
            return None
    name: Any = _MISSING
    if name_node is not None:
        try:
            name = ast.literal_eval(cst.Module(body=[]).code_for_node(name_node))
        except (ValueError, SyntaxError):
            name = None
    operand = None if operand_node is None else cst.Module(body=[]).code_for_node(operand_node)
    return assign.targets[0].target.value, operand, name


def _combine(c: dict, kind_of: dict, run: str, first_batched: str) -> list[str]:
    """The driver's lines for one collective."""
    kind, target, operand = c["kind"], c["target"], c["operand"]
    origin = f" ({c['origin'][0]}:{c['origin'][1]})" if c["origin"] else ""
    if kind == "axis_index":
        return [
            f"    # axis_index{origin}: each example's index in the whole batch",
            f"    {target} = {run}.example_indices({first_batched})",
        ]
    lines = [f"    # combine: {kind} over all the examples{origin}"]
    sharded = kind_of.get(operand, False)  # (a number written in is the same on every example)
    if not sharded:  # the same on every example
        n = f"{first_batched}.n"
        value = {"psum": f"{operand} * {n}", "pmean": f"{operand} * 1.0", "pmax": operand, "pmin": operand,
                 "all_gather": f"{run}.repeat({operand}, {n})"}[kind]
        lines.append(f"    {target} = {value}  # {operand} is the same on every example")
        return lines
    reduce = _REDUCE[kind]
    value = f'{run}.reduce("{reduce}", {operand})'
    if kind == "pmean":
        value += f" / {operand}.n"
    lines.append(f"    {target} = {value}")
    return lines


def _ordered(names: set[str], params: list[str], segments, code) -> list[str]:
    """``names`` in a stable order: parameters first, then by first appearance."""
    order = [p for p in params if p in names]
    seen = set(order)
    for seg in segments:
        for s in seg:
            for m in re.finditer(r"[A-Za-z_]\w*", code(s)):
                n = m.group(0)
                if n in names and n not in seen:
                    order.append(n)
                    seen.add(n)
    order += sorted(names - seen)
    return order


def _flat_return(body: list, ret, count: int | None, code) -> tuple[list, list, Any]:
    """The last stage's statements returning a flat tuple of leaves, the leaves, and how they nest.

    ``return a, t4`` where ``t4 = b, c`` becomes ``return a, b, c`` (the tuple display goes
    when nothing else reads it); the structure is ``[0, [1, 2]]`` (a list for a tuple, a leaf's
    index for a leaf), or a single index for a function that returns one value.
    """
    import libcst as cst

    tuples: dict[str, tuple[int, list]] = {}
    for k, st in enumerate(body[:-1]):
        if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign):
            a = st.body[0]
            if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and isinstance(a.value, cst.Tuple):
                tuples[a.targets[0].target.value] = (k, [e.value for e in a.value.elements])
    leaves: list = []
    used: set[str] = set()

    def leaf(expr) -> int:
        text = code(expr) if not isinstance(expr, cst.Name) else expr.value
        for i, e in enumerate(leaves):
            if (e.value if isinstance(e, cst.Name) else code(e)) == text:
                return i
        leaves.append(expr)
        return len(leaves) - 1

    def walk(expr):
        if isinstance(expr, cst.Name) and expr.value in tuples:
            used.add(expr.value)
            return [walk(e) for e in tuples[expr.value][1]]
        if isinstance(expr, cst.Tuple):
            return [walk(e.value) for e in expr.elements]
        return leaf(expr)

    value = ret.value
    if value is None:
        raise UnsupportedSyntaxError("pmap: the function must return a value")
    structure = walk(value) if count is None else [walk(e.value) for e in value.elements]
    drop = set()
    others = [_names(code(st))[0] for k, st in enumerate(body[:-1])]
    for name in used:
        k = tuples[name][0]
        if not any(name in reads for i, reads in enumerate(others) if i != k):
            drop.add(k)
    new_ret = body[-1].with_changes(body=[ret.with_changes(value=cst.Tuple(
        [cst.Element(e) for e in leaves], lpar=[], rpar=[]))])
    kept = [st for k, st in enumerate(body[:-1]) if k not in drop]
    return [*kept, new_ret], leaves, structure


def _collective_import(stmt) -> bool:
    import libcst as cst

    if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(stmt.body[0], cst.ImportFrom):
        return False
    mod = cst.Module(body=[]).code_for_node(stmt.body[0].module) if stmt.body[0].module else ""
    return mod in ("srctrans.parallel.collectives",)


def _version() -> str:
    from ..version import __version__

    return __version__
