"""Reverse mode's backward sweep: the :class:`BackwardSweep` part of
:class:`srctrans.ad.reverse.Reverse`.

``v_bar`` is written by its first contribution when ``v`` is assigned once and used only in its
own block; otherwise it starts as zeros at the start of the backward sweep of the block that
defines ``v``, and each reassignment of ``v`` restarts it, since the older value is a different
variable.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.activity import Block, common_block, names_in, targets_of
from .ops import Op
from .preaccumulate import preaccumulate
from .refusals import NotDifferentiable
from .statements import RenameNames, appended, assigned_in, aug_to_assign, groups, reads_in
from .text import code, fill_template, times


class BackwardSweep:
    """The backward sweep: the statements in reverse order, each adding its operands' adjoints
    (``x_bar``) from its rule; loops replay their trip count backwards, branches the branch
    taken. Part of :class:`srctrans.ad.reverse.Reverse`."""

    def bar(self, name: str) -> str:
        if name not in self.bar_names:
            self.bar_names[name] = self.gen.fresh(f"{name}_bar", numbered=False)
        return self.bar_names[name]

    def simple(self, name: str, block: Block) -> bool:
        """``name_bar`` may be written by its first contribution (no zeros needed).

        True when ``name`` is assigned once, in ``block``, and read only there, after the
        assignment (so no read in a later loop iteration sees an older value).
        """
        if name in self.mutated or name in self.lists:
            return False  # written in place (or a list): its adjoint must be an object of its own
        defs = self.act.defs.get(name, [])
        uses = self.act.uses.get(name, [])
        if name in self.params:
            return not defs and all(u is block for u in uses) and block is self.top
        if not (len(defs) == 1 and defs[0] is block and all(u is block for u in uses)):
            return False
        if not block.in_loop:
            return True
        first_def = next((i for i, st in enumerate(block.stmts) if name in assigned_in(st)), None)
        reads = [i for i, st in enumerate(block.stmts) if name in reads_in(st)]
        return first_def is not None and all(i > first_def for i in reads)

    def _branch_local(self, name: str, home: Block) -> bool:
        """Is ``name`` assigned only inside branches below ``home``, outside loops?

        Such a value exists only on some paths (an adjoint file's forward and backward
        branches test the same condition), so ``zeros_like`` cannot be called on it at
        ``home``; without loops, its first contribution can start its adjoint instead.
        """
        defs = self.act.defs.get(name, [])
        blocks = [*defs, *self.act.uses.get(name, [])]
        return (
            name not in self.params
            and name not in self.lists
            and name not in self.mutated
            and bool(defs)
            and all(b is not home for b in defs)
            and not home.in_loop
            and not any(b.in_loop for b in blocks)
        )

    def home(self, name: str) -> Block:
        """The innermost block holding every assignment and every read of ``name``."""
        if name in self.params:
            return self.top
        return common_block([*self.act.defs.get(name, []), *self.act.uses.get(name, [])], self.top)

    def contribute(self, name: str, expr: str, depth: int, block: Block) -> None:
        if name not in self.act.active:
            return
        sink = self.sinks.get(name)
        if sink is not None:  # a loop's contributions add into an array of their own, in place
            self.emit(f"{sink} += {expr}", depth)
            self.sunk.add(name)
            return
        bar = self.bar(name)
        if name in self.tuple_valued and name in self.started:
            raise NotDifferentiable(
                f"the tuple {name} is used more than once after it is unpacked", self.line, "unpack it once"
            )
        if name in self.displayed and name in self.started:  # adjoints of tuples do not add up with +
            raise NotDifferentiable(
                f"the tuple or list {name} is used more than once", self.line, "write it out at each use"
            )
        if name in self.pending:  # restarted just before: this contribution is its start
            del self.pending[name]
            self.emit(f"{bar} = {expr}", depth)
        elif name in self.started and name in self.lists:  # entry by entry (+ would join the lists)
            start = self.list_starts.get(name)
            if start is not None:  # (an empty list of the entries' type: Numba must know it)
                index, text = start
                self.lines[index] = text.replace(" = []", f" = rt.empty_list_like({name})")
            self.emit(f"{bar} = rt.add_list_adjoints({bar}, {expr})", depth)
        elif name in self.started:
            self.emit(f"{bar} = {bar} + {expr}", depth)
        else:
            self.emit(f"{bar} = {expr}", depth)
            self.started.add(name)

    def zero_inits(self, block: Block, depth: int) -> None:
        names = sorted(
            n for n in self.act.active & self.useful if self.home(n) is block and not self.simple(n, block)
        )  # an adjoint nothing flows into needs no start
        for n in names:
            if n in self.params and n not in self.wrt and not self.act.defs.get(n):
                continue  # (an argument the function reassigns, as a loop's state, holds differentiated values)
            if self._branch_local(n, block):
                continue  # its first contribution starts it, on the paths where it exists
            if self.seed_param and self.bar(n) == self.seed_param:
                continue  # the cotangent passed in is this adjoint's start
            if n in self.lists:
                self.list_starts[n] = (len(self.lines), "    " * depth + f"{self.bar(n)} = []")
            self.emit(f"{self.bar(n)} = []" if n in self.lists else f"{self.bar(n)} = rt.zeros_like({n})", depth)
            self.started.add(n)

    def backward(self, stmts: list, block: Block, depth: int) -> None:
        self.zero_inits(block, depth)
        for group in reversed(groups(stmts)):
            start = len(self.lines)
            if not preaccumulate(self, group, block, depth):  # a recurrence in a loop: see preaccumulate
                for stmt in reversed(group):
                    self._backward_stmt(stmt, block, depth)
            if len(self.lines) > start:
                for line in reversed(getattr(group[0], "leading_lines", ())):
                    if line.comment is not None:
                        self.lines.insert(start, "    " * depth + line.comment.value)

    def _backward_stmt(self, stmt, block: Block, depth: int) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in reversed(stmt.body):
                self._backward_small(small, block, depth)
        elif isinstance(stmt, cst.If):
            test = stmt.test.value if isinstance(stmt.test, cst.Name) else None
            start = len(self.lines)
            body_block = self.act.block_of[id(stmt.body.body)]
            self.backward(stmt.body.body, body_block, depth + 1)
            has_body = len(self.lines) > start
            body_lines = self.lines[start:]
            del self.lines[start:]
            else_lines: list[str] = []
            if stmt.orelse is not None:
                self.backward(stmt.orelse.body.body, self.act.block_of[id(stmt.orelse.body.body)], depth + 1)
                else_lines = self.lines[start:]
                del self.lines[start:]
            if not has_body and not else_lines:
                return
            cond = self._read(id(stmt), test, depth) if test else code(stmt.test)
            if has_body:
                self.emit(f"if {cond}:", depth)
                self.lines.extend(body_lines)
                if else_lines:
                    self.emit("else:", depth)
                    self.lines.extend(else_lines)
            else:
                self.emit(f"if not {cond}:", depth)
                self.lines.extend(else_lines)
        elif isinstance(stmt, (cst.For, cst.While)):
            counter, saved = self.counters[id(stmt)]
            opened = self._open_sinks(stmt)
            start = len(self.lines)
            self.backward(stmt.body.body, self.act.block_of[id(stmt.body.body)], depth + 1)
            body_lines = self.lines[start:]
            del self.lines[start:]
            used = [(name, self.sinks.pop(name)) for name in opened if name in self.sunk]
            for name in opened:
                self.sinks.pop(name, None)
            if not body_lines:
                return
            for name, rows in used:
                self.emit(f"{rows} = rt.zeros_like({name})", depth)
            trips = f"{saved}.pop()" if saved != counter else counter
            trip = self.trip.get(id(stmt))
            if trip is not None:  # the trips again, last first: they index the tapes
                self.emit(f"for {trip} in range({trips} - 1, -1, -1):", depth)
            else:
                self.emit(f"for _ in range({trips}):", depth)
            self.lines.extend(body_lines)
            for name, rows in used:
                self.contribute(name, rows, depth, block)

    def _open_sinks(self, loop) -> list[str]:
        """The names whose adjoints ``loop`` adds into an array of their own, in place.

        Added up functionally, each read's adjoint is a new array: a read ``x[i]`` costs a
        whole array of zeros plus its rows (``x_bar = x_bar + rt.getitem_grad(g, x, i)``), so
        a loop over the rows of x would cost O(rows) per trip, and ``W @ h`` costs two
        matrices (``W_bar = W_bar + rt.dot_grad_x(g, W, h)``). For a value no iteration
        changes (a parameter, or a name assigned once before the loop and never written in
        place), the loop's contributions instead add into ``x_loop_bar`` in place
        (``rt.getitem_grad_add(x_loop_bar, g, i)``, ``W_loop_bar = rt.dot_grad_x_add(W_loop_bar,
        g, W, h)``, ``x_loop_bar += ...``), an array made for this loop alone, so nothing else
        sees it change; after the loop it is added to ``x_bar`` once. Only in files no other
        transformation reads (``in_place``).
        """
        if not self.in_place:
            return []
        opened = []
        top = self.top_statement_of(loop)
        reads = names_in(loop.body) - assigned_in(loop)  # (an assignment in the loop reads the adjoint)
        for name in sorted(reads & self.act.active & self.useful):
            if name in self.sinks or name in self.lists or name in self.tuple_valued or name in self.displayed:
                continue
            if not (self.stable(name) or self.frozen(name, top)) or name in self.aliased or name in self.views:
                continue
            self.sinks[name] = self.gen.fresh(f"{name}_loop_bar", numbered=False)
            opened.append(name)
        return opened

    def restart_adjoint(self, g: str, target: str, restart: tuple[str, bool], older: str | None, depth: int) -> str:
        """Hold adjoint ``g`` of ``target`` under a new name and restart the adjoint of the older
        value (``restart``: its name, and whether ``older``, its value's text, is at hand) from
        zeros, now or at its first contribution; the held name is returned."""
        name, known = restart
        held = self.gen.fresh(f"{target}_bar", numbered=False)
        self.emit(f"{held} = {g}", depth)
        zeros = f"{g} = rt.zeros_like({older if known else held})"
        if name in self.mutated:
            self.emit(zeros, depth)
        else:
            self.pending[name] = zeros
        return held

    def _read(self, sid: int, name: str, depth: int) -> str:
        """The saved value of ``name`` at statement ``sid``, popping it from its tape the first time."""
        key = self.reader.get((sid, name))
        if key is None:
            return name.lstrip("@")
        save = self.records[key]
        if save.kind == "snap":
            return save.store
        if save.kind == "recompute":  # t9_1 = means[k_1]
            if save.local is None:
                sid_of, value = self.recipes[key]
                names = {n: self._read(sid_of, n, depth) for n in sorted(names_in(value))}  # (in one order)
                save.local = self.gen.fresh(key[1], numbered=False)
                self.emit(f"{save.local} = {code(value.visit(RenameNames(names)))}", depth)
            return save.local
        if save.local is None:
            save.local = self.gen.fresh(key[1], numbered=False)
            if save.kind == "indexed":
                self.emit(f"{save.local} = {save.store}[{self.trip[save.loop]}]", depth)
            else:
                self.emit(f"{save.local} = {save.store}.pop()", depth)
        return save.local

    def _backward_small(self, small, block: Block, depth: int) -> None:
        if isinstance(small, cst.SimpleStatementLine):  # pragma: no cover - defensive
            return
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            small_id = id(small)
            small = aug_to_assign(small)
        else:
            small_id = id(small)
        if isinstance(small, cst.Return):
            self._seed(small, block, depth)
            return
        op = self.ops.get(small_id)
        if op is not None and op.key == "setitem":
            self._backward_setitem(small, op, small_id, block, depth)
            return
        if op is not None and op.key == "unpack":
            values = {name: self._read(small_id, name, depth) for (s, name) in list(self.reader) if s == small_id}
            parts = []
            for n in targets_of(small.targets[0].target):
                if n in self.useful and n in self.started:
                    parts.append(self.bar(n))
                else:
                    parts.append(f"rt.zeros_like({values.get('@' + n, n)})")
            if op.args["x"].value in self.act.active:
                self.contribute(op.args["x"].value, "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")", depth, block)
            return
        if op is not None and op.key == "append":  # what was pushed takes the adjoint popped
            tape = appended(small, self.lists)[0]
            value = op.args["x"]
            if isinstance(value, cst.Name) and value.value in self.act.active:
                self.contribute(value.value, f"{self.bar(tape)}.pop()", depth, block)
            else:
                self.emit(f"{self.bar(tape)}.pop()", depth)
            return
        if op is not None and op.key == "pop" and isinstance(small, cst.Assign):
            target = small.targets[0].target.value
            if op.args["x"].value in self.act.active and target not in self.started:
                # (the value this statement popped, saved: in a loop, the target's last value is
                # another trip's, whose shape may differ)
                popped = self._read(small_id, "@" + target, depth)
                self.emit(f"{self.bar(op.args['x'].value)}.append(rt.zeros_like({popped}))", depth)
                return
        restart = self.restarts.get(small_id)
        readers = [name for (s, name) in self.reader if s == small_id]
        flows = (
            op is not None
            and isinstance(small, cst.Assign)
            and any(self._carries(e) for e in op.args.values())
        )
        target = small.targets[0].target.value if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name) else None
        if not flows or target not in self.started:
            # nothing flows back through this value; its saved values are still popped, and
            # an older value of the target still gets a fresh adjoint
            values = {name: self._read(small_id, name, depth) for name in readers}
            if restart is not None and restart[0] in self.started:
                name, known = restart
                shape_of = values[name] if known else self.bar(name)
                self.emit(f"{self.bar(name)} = rt.zeros_like({shape_of})", depth)
            return
        g = self.bar(target)
        values = {name: self._read(small_id, name, depth) for name in readers}
        if restart is not None:
            # the older value of ``target`` is another variable: its adjoint starts afresh, from
            # zeros, or from its first contribution when that comes in this very statement
            g = self.restart_adjoint(g, target, restart, values[restart[0]] if restart[1] else None, depth)
        self._apply(op, g, target, values, depth, block)
        if restart is not None and restart[0] in self.pending:
            self.emit(self.pending.pop(restart[0]), depth)

    def _backward_setitem(self, small: cst.Assign, op: Op, sid: int, block: Block, depth: int) -> None:
        target = small.targets[0].target
        base = target.value.value
        values = {name: self._read(sid, name, depth) for (s, name) in list(self.reader) if s == sid}
        if base not in self.started:
            return
        g = self.bar(base)
        rename = RenameNames(values)
        value = op.args["x"]
        if isinstance(value, cst.Name) and value.value in self.act.active:
            index = code(op.args["index"].visit(rename))
            v = values.get(value.value, value.value)
            if self.growable:  # a file another grad differentiates: a copy taken, then a plain write
                self.contribute(value.value, f"rt.unbroadcast({self.np_name}.copy({g}[{index}]), {v})", depth, block)
                self.emit(f"{g}[{index}] = 0.0", depth)
            else:
                self.contribute(value.value, f"rt.setitem_grad({g}, {index}, {v})", depth, block)
        else:  # the overwritten elements no longer reach the output
            self.emit(f"{code(target.with_changes(value=cst.Name(g)).visit(rename))} = 0.0", depth)

    def _older_value_exists(self, name: str, block: Block, preceding: list) -> bool:
        """Could ``name`` hold a value from before this assignment (one whose adjoint must restart)?"""
        if name in self.params or block.in_loop:
            return True
        if any(name in names_in(st) or name in assigned_in(st) for st in preceding):
            return True
        if block is self.top:
            return False
        # assigned only here and in branches that exclude this one: no older value on any path
        mine = self._branches(block)
        for other in self.act.defs.get(name, []):
            if other is block:
                continue
            theirs = self._branches(other)
            if not any(if_id in theirs and theirs[if_id] != branch for if_id, branch in mine.items()):
                return True
        return False

    def _branches(self, block: Block) -> dict[int, int]:
        """For each ``if`` enclosing ``block``: which of its branches holds it (``if`` id -> block id)."""
        out: dict[int, int] = {}
        b: Block | None = block
        while b is not None:
            if b.ident in self.branch_if:
                out.setdefault(self.branch_if[b.ident], b.ident)
            b = b.parent
        return out

    def _register_branches(self, stmts: list) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.If):
                self.branch_if[self.act.block_of[id(stmt.body.body)].ident] = id(stmt)
                self._register_branches(stmt.body.body)
                if stmt.orelse is not None:
                    self.branch_if[self.act.block_of[id(stmt.orelse.body.body)].ident] = id(stmt)
                    self._register_branches(stmt.orelse.body.body)
            elif isinstance(stmt, (cst.For, cst.While)):
                self._register_branches(stmt.body.body)

    def _apply(self, op: Op, g: str, target: str, values: dict[str, str], depth: int, block: Block) -> None:
        def text_of(param: str) -> str:
            expr = op.args.get(param)
            if isinstance(expr, cst.Name):
                return values.get(expr.value, expr.value)
            if expr is not None and values:  # e.g. an index (i, j): read the saved i and j
                return code(expr.visit(RenameNames(values)))
            return op.texts.get(param, "None")

        if op.rule is None:  # copy
            self.contribute(op.args["x"].value, g, depth, block)
            return
        if op.key == "pop":  # the popped value's adjoint goes back on the tape's adjoint
            self.emit(f"{self.bar(op.args['x'].value)}.append({g})", depth)
            return
        if op.key == "display":  # [a, b]: one adjoint per element
            self._spread(list(op.args.values()), g, "part", depth, block)
            return
        if op.rule.kind == "custom":  # the user's bwd gives every argument's contribution
            res = values.get("@" + op.extra["res"], op.extra["res"])
            bars = self.gen.fresh(f"{op.extra['bwd']}_bars", numbered=False)
            self.emit(f"{bars} = {op.extra['bwd']}({res}, {g})", depth)
            for i, p in enumerate(op.rule.params):
                expr = op.args.get(p.name)
                if self._carries(expr):
                    self._flow(expr, f"{bars}[{i}]", depth, block)
            return
        if op.rule.kind == "vmapped":  # the vmap of the function's vjp: the batched arguments' contributions
            names = [p.name for p in op.rule.params]
            argnums = [k for k, n in enumerate(names) if self._carries(op.args.get(n))]
            primals = ", ".join(text_of(n) for n in names) + ("," if len(names) == 1 else "")
            receiver = op.extra["receiver"]
            parts = [self.gen.fresh(f"{receiver}_{names[k]}_bar", numbered=False) for k in argnums]
            nums = ", ".join(map(str, argnums)) + ("," if len(argnums) == 1 else "")
            self.emit(", ".join(parts) + ("," if len(parts) == 1 else "") + f" = {receiver}.vjp(({primals}), {g}, argnums=({nums}))", depth)
            for k, part in zip(argnums, parts):
                self._flow(op.args[names[k]], part, depth, block)
            return
        if op.rule.kind == "callee":  # the callee's adjoint gives every argument's contribution
            arguments = ", ".join(text_of(p.name) for p in op.rule.params)
            out = self.gen.fresh(f"{op.key}_out", numbered=False)
            bars = self.gen.fresh(f"{op.key}_bars", numbered=False)
            self.emit(f"{out}, {bars} = {op.key}({arguments}, {g})", depth)
            # unpacked, not indexed: an adjoint file stays differentiable (tuples are unpacked)
            callee = op.key[: op.key.index("_vjp")] if "_vjp" in op.key else op.key
            returned = [p for p in op.rule.params if p.name in op.extra["active"]]  # the adjoints it computes
            parts = [self.gen.fresh(f"{callee}_{p.name}_bar", numbered=False) for p in returned]
            self.emit(", ".join(parts) + ("," if len(parts) == 1 else "") + f" = {bars}", depth)
            for part, p in zip(parts, returned):
                expr = op.args.get(p.name)
                if self._carries(expr):
                    self._flow(expr, part, depth, block)
            return
        fill = {p.name.lstrip("*"): text_of(p.name.lstrip("*")) for p in op.rule.params}
        fill["ans"] = values.get("@" + target, target)
        fill["g"] = g
        binary = op.rule.kind == "elementwise" and len(op.args) > 1
        # a constant operand broadcasts nothing: the other operand's adjoint has its shape
        if binary and any(not isinstance(e, cst.Name) for e in op.args.values()):
            binary = False
        for param, template in op.rule.templates.items():
            expr = op.args.get(param)
            if not self._carries(expr):
                continue
            partial = fill_template(template, fill)
            if self.np_name != "np":
                partial = partial.replace("np.", self.np_name + ".")
            if op.rule.kind == "elementwise":
                contribution = times(g, partial)
                if binary and param not in op.shapes:
                    contribution = f"rt.unbroadcast({contribution}, {fill[param]})"
                elif binary and op.shapes[param] is not None:  # the shape of another value at hand
                    contribution = f"rt.unbroadcast({contribution}, {values.get(op.shapes[param], op.shapes[param])})"
            else:
                contribution = partial
            sink = self.sinks.get(expr.value) if isinstance(expr, cst.Name) else None
            if sink is not None and param in op.rule.accumulate:  # added into the loop's own array, in place
                self.emit(fill_template(op.rule.accumulate[param], {**fill, "sink": sink}), depth)
                self.sunk.add(expr.value)
                continue
            self._flow(expr, contribution, depth, block)

    def _carries(self, expr: cst.BaseExpression | None) -> bool:
        """Does an argument carry a differentiated value: a name, or a tuple or list of names?"""
        if isinstance(expr, cst.Name):
            return expr.value in self.act.active
        if isinstance(expr, (cst.Tuple, cst.List)):
            return any(isinstance(el.value, cst.Name) and el.value.value in self.act.active for el in expr.elements)
        return False

    def _flow(self, expr: cst.BaseExpression, contribution: str, depth: int, block: Block) -> None:
        """Add ``contribution`` to the adjoint of an argument: a name's, or each element's of
        a tuple or list written in the call (``np.stack((x, y))``)."""
        if isinstance(expr, cst.Name):
            self.contribute(expr.value, contribution, depth, block)
        else:
            self._spread([el.value for el in expr.elements], contribution, "part", depth, block)

    def _spread(self, elements: list, source: str, suffix: str, depth: int, block: Block) -> None:
        """A tuple of adjoints, one per element: unpacked (not indexed, so that an adjoint file
        stays differentiable), each into a name of its own, then added to its element's adjoint."""
        targets, later = [], []
        for el in elements:
            name = el.value if isinstance(el, cst.Name) else None
            if name is None or name not in self.act.active:
                targets.append(self.gen.fresh("unused_bar", numbered=False))
            else:
                temp = self.gen.fresh(f"{name}_{suffix}", numbered=False)
                targets.append(temp)
                later.append((name, temp))
        self.emit(", ".join(targets) + ("," if len(targets) == 1 else "") + f" = {source}", depth)
        for name, temp in later:
            self.contribute(name, temp, depth, block)

    def _seed(self, ret: cst.Return, block: Block, depth: int) -> None:
        value = ret.value
        if self.has_aux:
            if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
                raise NotDifferentiable("with has_aux=True the function must return a pair (output, aux)", self.line)
            value = value.elements[0].value
        self.out_name = code(value) if value is not None else "None"
        if isinstance(value, cst.Name) and value.value in self.act.active:
            if self.seed == "grad":
                self.contribute(value.value, f"rt.grad_seed({value.value})", depth, block)
            elif self.seed_param != self.bar(value.value):
                self.contribute(value.value, self.seed_param, depth, block)
        elif isinstance(value, (cst.Tuple, cst.List)):
            if self.seed == "grad":  # not a scalar: grad_seed says so
                self.emit(f"rt.grad_seed(({code(value)}))", depth)  # one argument, the tuple
                return
            self._spread([el.value for el in value.elements], self.seed_param, "seed", depth, block)
