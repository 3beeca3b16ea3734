"""Calls of srctrans transformations inside a transformed function, as calls of generated files.

A function may call ``srctrans.jvp`` itself (``grad(lambda x: jvp(f, (x,), (v,))[1])``, a
grad of a jvp, as JAX users write it). Before any transformation reads the function, this
pass rewrites such a call into a call of a generated file, which every transformation then
reads as an ordinary user function (a callee), as a call of a ``srctrans.grad`` object reads
the grad's adjoint file (:mod:`srctrans.nesting`):

``srctrans.jvp(f, (a, b), (ta, tb))``  ->  ``f_jvp(a, b, ta, tb)``: ``f``'s tangent file,
    returning ``(out, tangent_out)`` (:func:`srctrans.nesting.tangent_function`);
``srctrans.grad(f, argnums=...)(x)``   ->  ``f_grad(x)``: the grad's adjoint file;
``srctrans.jit(f)(x)``                  ->  ``f(x)``: compiling is the outer transformation's business;
``batched(x)``, ``batched = srctrans.vmap(f, ...)`` (or ``srctrans.vmap(f, ...)(x)`` written inline):
    under ``jit``, a loop over the examples emitted in the file (:func:`loop_node`); under
    ``grad``/``vjp``, a loop that reverse mode differentiates as a callee and Numba compiles
    (:func:`differentiable_loop`). Under ``jit``, what a loop cannot do (nested vmaps, pytree
    axes, ``out_axes=None``, ``axis_name``) is refused at the call, naming the option.

``f`` must be known before the function runs (a global or closure value: a user function,
a ``srctrans.grad``, a ``srctrans.jit``), primals and tangents written as tuples or lists,
one entry per argument. Calls that do not fit are left as written; where the outer
transformation is a derivative (which cannot read them) they are refused, located at the
user's line, saying what to write instead.
"""

from __future__ import annotations

import ast
import inspect
import types
from collections import ChainMap
from collections.abc import Callable
from typing import Any

import libcst as cst

from .analysis.callees import is_vmapped, loop_axes, loop_refusal, outputs_of
from .analysis.names import scan
from .analysis.resolve import is_user_function, lookup
from .errors import UnsupportedSyntaxError
from .faces import api_transformation, face, is_instance, registered
from .parse import ParsedFunction

# transformations whose output is derived from the function's text: an unreadable call is an error there
_DERIVATIVES = ("grad", "vjp", "jvp")


class Nested:
    """What one build has made for calls of transformations: generated functions, once each.

    ``made`` maps a key of what was asked (``("jvp", f, 2)``) to ``(name, function)``; the same
    call in two functions of one file reaches the same generated function under one name.
    """

    def __init__(self, transform_name: str, compiled: bool = False) -> None:
        self.transform_name = transform_name
        # a grad compiled by jit (its transform says ``compiled=True``): calls of vmapped functions
        # become loops Numba compiles; uncompiled, the vmap file of their vjp runs (vectorized)
        self.compiled = compiled
        # the file is compiled as written (jit, or the vmap file jit(vmap(f)) compiles): calls of
        # vmapped functions become loops emitted in the file, what cannot be known is refused
        self.compiles = transform_name == "jit" or (transform_name == "vmap" and compiled)
        self.made: dict[tuple, tuple[str, Callable]] = {}
        self.keep: list[Any] = []  # objects made here (grads) that the functions above belong to
        # id of a grad's adjoint function called here -> the grad: given pytree parts, the call gets
        # the adjoint file of their structure (srctrans.nesting.adjoint_function's structured variant)
        self.grads: dict[int, Any] = {}
        # id of a stand-in for a grad's adjoint function that could not be made -> why: a call of it
        # must be given the file of its arguments' structures, or the build raises this
        self.standins: dict[int, Exception] = {}
        self.loops: dict[str, tuple[Any, str, Callable]] = {}  # name of a vmapped function -> (it, name and function it batches)

    def rewrite(self, pf: ParsedFunction, taken: set[str], lifted: dict[str, Callable] | None = None) -> tuple[ParsedFunction, dict[str, Callable]]:
        """``pf`` with its calls of transformations rewritten, and the names it now reads from the file.

        ``taken``: the names already used in the generated file, which a new name must avoid
        unless it names the same function. ``lifted``: the functions :mod:`srctrans.lifting` made
        of the lambdas and defs inside, by the names the body now calls them.
        """
        if not reads_srctrans(pf.captured):
            return pf, {}
        rewriter = _Rewriter(self, pf, taken, lifted or {})
        node = pf.node
        if isinstance(node, cst.Lambda):  # as a def, so that a part of a jvp's pair can be unpacked before the return
            node = rewriter.as_def(node)
        rewriter.find_aliases(node)
        node = node.visit(rewriter)
        if not rewriter.changed:
            return pf, {}
        positions = ChainMap(rewriter.positions, pf.positions)
        return ParsedFunction(pf.captured, pf.module, node, positions), rewriter.introduced


class _Rewriter(cst.CSTTransformer):
    def __init__(self, nested: Nested, pf: ParsedFunction, taken: set[str], lifted: dict[str, Callable]) -> None:
        super().__init__()
        self.nested = nested
        self.pf = pf
        self.lifted = lifted
        names = scan(pf.node)
        self.local = names.local | frozenset(names.params)
        self.used = set(names.all) | set(taken)
        self.positions: dict[cst.CSTNode, Any] = {}
        self.introduced: dict[str, Callable] = {}
        self.changed = False
        self.pairs: set[str] = set()  # names of tangent functions (they return (out, tangent_out))
        self.statements: list[list[cst.Assign]] = []  # per enclosing line: statements to put before it
        self.guarded = 0  # inside a lambda, comprehension or conditional expression: nothing is moved out
        self.aliases: dict[str, cst.Call] = {}  # local names of transformations (find_aliases)
        self.alias_lines: set[int] = set()  # ids of their assignments, which go

    def find_aliases(self, node: cst.CSTNode) -> None:
        """Names the function assigns a transformation to once and only calls afterwards
        (``per_example = srctrans.vmap(srctrans.grad(loss), in_axes=(None, 0))``, then
        ``per_example(w, X)``), as JAX code does: each call reads as the transformation written in
        the call, and the assignment goes (:meth:`leave_Call`, :meth:`leave_SimpleStatementLine`).
        Only in files that compile as written (jit): a derivative reads a vmap named in the body
        itself (:func:`srctrans.ad.calls.vmap_made_here`)."""
        if not self.nested.compiles:
            return
        assigned: dict[str, list[cst.Assign]] = {}
        called: dict[str, int] = {}
        loads: dict[str, int] = {}

        class Find(cst.CSTVisitor):
            def visit_Assign(inner, a: cst.Assign) -> None:  # noqa: N805
                for t in a.targets:
                    for n in _target_names(t.target):
                        assigned.setdefault(n, []).append(a)

            def visit_AugAssign(inner, a: cst.AugAssign) -> None:  # noqa: N805
                for n in _target_names(a.target):
                    assigned.setdefault(n, []).append(a)

            def visit_Call(inner, c: cst.Call) -> None:  # noqa: N805
                if isinstance(c.func, cst.Name):
                    called[c.func.value] = called.get(c.func.value, 0) + 1

            def visit_Name(inner, n: cst.Name) -> None:  # noqa: N805
                loads[n.value] = loads.get(n.value, 0) + 1

        node.visit(Find())
        for name, assigns in assigned.items():
            if len(assigns) != 1 or not isinstance(assigns[0], cst.Assign) or len(assigns[0].targets) != 1:
                continue
            value = assigns[0].value
            if not (isinstance(value, cst.Call) and isinstance(assigns[0].targets[0].target, cst.Name)):
                continue
            if not (self._is_vmap(value.func) or self.api_function(value.func) in _ALIASED):
                continue
            if loads.get(name, 0) != called.get(name, 0) + 1:  # (+1: the assignment's target) read only to be called
                continue
            self.aliases[name] = value
            self.alias_lines.add(id(assigns[0]))

    def as_def(self, node: cst.Lambda) -> cst.FunctionDef:
        where = self.pf.positions[node]
        line = cst.SimpleStatementLine([cst.Return(node.body.with_changes(lpar=[], rpar=[]))])
        self.positions[line] = where
        return cst.FunctionDef(cst.Name(self.pf.captured.name), node.params, cst.IndentedBlock([line]))

    # --- ``jvp(f, (x,), (v,))[1]``: the pair unpacked on a line of its own ---------------------
    # (reverse mode differentiates unpacking a returned tuple, not indexing it)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statements.append([])

    def leave_SimpleStatementLine(self, original, updated):
        before = self.statements.pop()
        if len(original.body) == 1 and id(original.body[0]) in self.alias_lines:
            self.changed = True
            return cst.RemovalSentinel.REMOVE  # each call of the name reads as the transformation itself
        if not before:
            return updated
        # one line (``f_out, f_dot = f_jvp(x, v); return f_dot``): one origin comment above it
        return updated.with_changes(body=[*before, *updated.body])

    def _guard(self, node) -> None:
        self.guarded += 1

    def _unguard(self, original, updated):
        self.guarded -= 1
        return updated

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _guard
    visit_IfExp = visit_BooleanOperation = _guard
    leave_Lambda = leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _unguard
    leave_IfExp = leave_BooleanOperation = _unguard

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        call = updated.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in self.pairs):
            return updated
        if not self.statements or self.guarded or len(updated.slice) != 1:
            return updated
        index = updated.slice[0].slice
        k = _literal_index(index.value) if isinstance(index, cst.Index) else None
        if k not in (0, 1, -1, -2):
            return updated
        stem = call.func.value.removesuffix("_jvp")  # f_jvp(x, v)[1] -> f_out, f_dot = f_jvp(x, v)
        out, dot = self.local_name(f"{stem}_out"), self.local_name(f"{stem}_dot")
        target = cst.Tuple([cst.Element(cst.Name(out)), cst.Element(cst.Name(dot))], lpar=[], rpar=[])
        self.statements[-1].append(cst.Assign([cst.AssignTarget(target)], call))
        return cst.Name(out if k in (0, -2) else dot)

    def local_name(self, stem: str) -> str:
        name, k = stem, 1
        while name in self.used or name in self.pf.captured.fn.__globals__:
            k += 1
            name = f"{stem}_{k}"
        self.used.add(name)
        return name

    # --- positions: a rewritten node keeps the place of the node it replaces ---------------

    def on_leave(self, original, updated):
        result = super().on_leave(original, updated)
        if result is not original and isinstance(result, cst.CSTNode):
            where = self.pf.positions.get(original) or self.positions.get(original)
            if where is not None:
                self.positions[result] = where
        return result

    # --- what a name means before the function runs ---------------------------------------

    def value(self, expr: cst.BaseExpression) -> tuple[bool, Any]:
        """``(True, value)`` for a global or closure name (or an attribute of one), else ``(False, None)``."""
        if isinstance(expr, cst.Name):
            if expr.value in self.lifted:
                return True, self.lifted[expr.value]
            if expr.value in self.local:
                return False, None
            cap = self.pf.captured
            found = lookup(cap.fn, expr.value, cap.closure)
            return (True, found[1]) if found is not None else (False, None)
        if isinstance(expr, cst.Attribute):
            known, base = self.value(expr.value)
            if known and isinstance(base, types.ModuleType) and hasattr(base, expr.attr.value):
                return True, getattr(base, expr.attr.value)
        return False, None

    def api_function(self, expr: cst.BaseExpression) -> str | None:
        """``"jvp"`` when ``expr`` names ``srctrans.jvp`` (``srctrans.jvp``, ``st.jvp``, ``jvp``) ..."""
        known, value = self.value(expr)
        return api_transformation(value) if known else None

    # --- the rewrite ------------------------------------------------------------------------

    def _vmapped(self, call: cst.Call, original: cst.Call) -> None:
        """A call of a vmapped global or closure value under jit: its name will name a loop (:func:`loop_node`);
        what a loop cannot do is refused at the call, naming the option."""
        name = call.func.value
        known, obj = self.value(call.func)
        if not known or not is_vmapped(obj):
            return
        if obj._inner is not None and not any(a.keyword is not None or a.star for a in call.args):
            loop = differentiable_loop(name, obj)  # a nest: loops of loops, written as a callee
            if loop is not None:
                self.introduced[name] = loop
                self.changed = True
                return
        self._loop(name, obj, call, original, name)

    def _vmapped_derivative(self, call: cst.Call) -> None:
        """A call of a vmapped global or closure value under grad: a loop over the examples that reverse
        mode differentiates and Numba compiles (:func:`differentiable_loop`); where none can be
        written, the call stays (reverse mode calls the vmapped function's ``vjp``, uncompiled only)."""
        name = call.func.value
        known, obj = self.value(call.func)
        if not known or not is_vmapped(obj) or any(a.keyword is not None or a.star for a in call.args):
            return
        made = differentiable_loop(name, obj)
        if made is None:
            return
        self.introduced[name] = made
        self.changed = True

    def _loop(self, name: str, obj: Any, call: cst.Call, original: cst.Call, label: str) -> None:
        """Make ``name`` name the loop over the examples of the vmapped ``obj`` (emitted in the file)."""
        why = loop_refusal(obj)
        if why is None and any(a.keyword is not None or a.star for a in call.args):
            why = ("its arguments passed by keyword or with *", "pass them by position")
        base = getattr(obj._base, "__srctrans_function__", obj._base)  # a jit's function, a grad's adjoint file
        if why is None and not is_user_function(base):
            why = (f"a vmap of {_stem(base, repr(base))}, which is not a function srctrans can read",
                   "vmap a Python function of your own")
        if why is not None:
            raise self.pf.error(
                UnsupportedSyntaxError, original,
                f"a call of the vmapped {label} inside a compiled function: {why[0]} is not supported there",
                why[1],
            )
        found = self.nested.loops.get(name)
        if found is not None:
            if found[0] is obj:
                self.introduced[name] = obj
                self.introduced[found[1]] = found[2]
            return
        stem = _stem(base, f"{name}_example")
        callee = stem if self.pf.captured.fn.__globals__.get(stem) is base else self.fresh(stem, base)
        self.nested.loops[name] = (obj, callee, base)
        self.introduced[name] = obj
        self.introduced[callee] = base
        self.changed = True

    def _inline_vmap(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``srctrans.vmap(f, in_axes=...)(x)`` under jit (a loop of the file) or grad (a loop reverse
        mode differentiates): as a call of a function vmapped before the function runs."""
        found = self._made_vmap(original, updated)
        if found is None:
            return updated
        name, made, label = found
        if self.nested.compiles and made._inner is not None:  # a nest: loops of loops
            loop = differentiable_loop(name, made)
            if loop is None or any(a.keyword is not None or a.star for a in updated.args):
                self._loop(name, made, updated, original, label)  # refused there, saying why
            self.introduced[name] = loop
            self.changed = True
        elif self.nested.compiles:
            self._loop(name, made, updated, original, label)
        else:
            loop = differentiable_loop(name, made)
            if loop is None or any(a.keyword is not None or a.star for a in updated.args):
                return updated  # reverse mode differentiates it through the vmap's vjp (uncompiled)
            self.introduced[name] = loop
            self.changed = True
        func = cst.Name(name)
        if original in self.pf.positions:
            self.positions[func] = self.pf.positions[original]
        return updated.with_changes(func=func)

    def _made_vmap(self, original: cst.Call, updated: cst.Call) -> tuple[str, Any, str] | None:
        """The name, vmapped function and label of ``srctrans.vmap(f, ...)`` written in a call;
        what cannot be known before the function runs is refused under jit, left under grad."""
        return self._vmap_of(original, updated.func)

    def _vmap_of(self, original: cst.CSTNode, inner: cst.Call) -> tuple[str, Any, str] | None:
        """:meth:`_made_vmap` of the call ``srctrans.vmap(f, ...)`` itself; ``f`` may be such a
        call too (a nest, ``srctrans.vmap(srctrans.vmap(f, (0, None)), (None, 0))``)."""
        vmap = face("vmap")
        what = "srctrans.vmap(...)(...) inside a compiled function"
        strict = self.nested.compiles

        def refuse(node, message: str, hint: str) -> None:
            if strict:
                raise self.pf.error(UnsupportedSyntaxError, node, f"{what}: {message}" if message else what, hint)

        if not inner.args or inner.args[0].keyword is not None or any(a.star for a in inner.args):
            return refuse(original, "it takes the function first", "write srctrans.vmap(f, in_axes=...)(x)")
        given = inner.args[0].value
        if isinstance(given, cst.Call) and self._is_vmap(given.func):  # a nest: the inner vmap first
            found = self._vmap_of(given, given)
            known, fn = (False, None) if found is None else (True, found[1])
        elif isinstance(given, cst.Call) and self.api_function(given.func) in ("grad", "jit"):
            fn = self._transformation_of(given, original, what)  # srctrans.vmap(srctrans.grad(f, ...), ...)
            known = fn is not None
        else:
            known, fn = self.value(given)
        if not known or not callable(fn):
            return refuse(original, "the function it is given must be known before the function runs",
                          "give it a function defined outside (a global or closure value)")
        options: dict[str, Any] = {}
        names = ("in_axes", "out_axes", "axis_size", "axis_name", "method")
        for k, arg in enumerate(inner.args[1:]):
            key = arg.keyword.value if arg.keyword is not None else names[k] if k < len(names) else None
            try:
                options[str(key)] = ast.literal_eval(self.pf.module.code_for_node(arg.value))
            except (ValueError, SyntaxError):
                return refuse(arg, f"{key} must be a literal", "write its value (an int, None, a tuple of them)")
        key = ("vmap", id(fn), repr(sorted(options.items())))
        if key in self.nested.made:
            name, made = self.nested.made[key]
        else:
            try:
                made = vmap(fn, **options)
            except (TypeError, ValueError) as err:
                return refuse(original, str(err), "see srctrans.vmap's arguments")
            self.nested.keep.append(made)
            name = self.fresh(f"{_stem(fn)}_batched", made)
            self.nested.made[key] = (name, made)
        return name, made, f"srctrans.vmap({self.pf.module.code_for_node(inner.args[0].value)}, ...)"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``updated`` says what is called (its arguments rewritten already); ``original``, where."""
        if isinstance(updated.func, cst.Name) and updated.func.value in self.aliases:
            self.changed = True
            updated = updated.with_changes(func=self.aliases[updated.func.value])
        if self.nested.compiles and isinstance(updated.func, cst.Name):
            self._vmapped(updated, original)
        derivative = self.nested.transform_name in ("grad", "vjp")
        looped = self.nested.compiles or (derivative and self.nested.compiled)
        # uncompiled, reverse mode calls a vmapped function's vjp, and forward mode its jvp, which a
        # nest of vmaps lacks: a loop of loops, differentiated as any function of yours
        nests = self.nested.transform_name in _DERIVATIVES
        if (derivative or nests) and isinstance(updated.func, cst.Name) and (looped or (nests and self._nest(updated.func))):
            self._vmapped_derivative(updated)
        if isinstance(updated.func, cst.Call) and self._is_vmap(updated.func.func) and (
            looped or (nests and self._nest(updated.func))
        ):
            return self._inline_vmap(original, updated)
        name = self.api_function(updated.func)
        if name == "jvp":
            return self._jvp(original, updated)
        if isinstance(updated.func, cst.Call):
            inner = self.api_function(updated.func.func)
            if inner in ("grad", "jit", "value_and_grad"):
                return self._call_of(inner, original, updated)
            if inner in ("jacfwd", "jacrev", "hessian"):
                return self._jacobian(inner, original, updated)
        return updated

    def _jacobian(self, kind: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``srctrans.jacfwd(f, argnums=k)(x, ...)`` (``jacrev``, ``hessian``) written inline: a call
        of a function that builds the Jacobian column by column from ``f``'s tangent file, in one
        loop Numba compiles with the function (:func:`jacobian_function`)."""
        from .nesting import tangent_function

        inner = updated.func
        what = f"srctrans.{kind}(...)(...) inside a transformed function"
        if not inner.args or inner.args[0].keyword is not None:
            return self.refuse(original, f"{what} takes the function first", f"write srctrans.{kind}(f)(x)") or updated
        if any(a.keyword is not None or a.star for a in updated.args):
            return self.refuse(original, f"{what}: pass the arguments by position",
                               f"write srctrans.{kind}(f)(x, y)") or updated
        if self.nested.transform_name in _DERIVATIVES:
            return self.refuse(
                original, f"{self.nested.transform_name} through {what} is not supported yet",
                f"call srctrans.{kind} outside the function; inside it, srctrans.grad(f)(x) and "
                "srctrans.jvp(f, (x,), (v,)) are differentiated",
            ) or updated
        fn = self.function_of(inner.args[0].value, original, what)
        if fn is None:
            return updated
        options = self.options(inner, original, f"srctrans.{kind}")
        if options is None:
            return updated
        argnums, has_aux = options.pop("argnums", 0), options.pop("has_aux", False)
        nargs = len(updated.args)
        if options or has_aux or not isinstance(argnums, int) or not -nargs <= argnums < nargs:
            reason = (f"{sorted(options)[0]}= is not an option of srctrans.{kind}" if options
                      else "has_aux is not supported there yet" if has_aux
                      else f"argnums={argnums!r}: one argument, by its position among the {nargs} given")
            return self.refuse(original, f"{what}: {reason}",
                               f"call srctrans.{kind}(f, argnums=k) outside the function for this") or updated
        argnums %= nargs
        try:
            from .capture import unwrap

            pyfn, _, bound, _ = unwrap(fn)
            visible = list(inspect.signature(pyfn).parameters)[len(bound):]
            if len(visible) != nargs:
                raise TypeError(f"{_stem(fn)} takes {len(visible)} arguments, got {nargs}")
            differentiated = face("grad")(fn, argnums=argnums) if kind == "hessian" else fn
            tangent = tangent_function(differentiated, nargs, (visible[argnums],))
        except (TypeError, ValueError) as err:
            return self.refuse(original, f"{what}: {err}", f"call srctrans.{kind} outside the function instead") or updated
        stem = f"{_stem(fn)}_{kind}" + (f"_wrt_{visible[argnums]}" if argnums else "")
        label = f"srctrans.{kind}({self.pf.module.code_for_node(inner.args[0].value)}" + (f", argnums={argnums})" if argnums else ")")
        return self.call(
            (kind, id(fn), nargs, argnums), stem,
            lambda: jacobian_function(stem, tangent, visible, argnums, label, kind), list(updated.args), original,
        )

    def _held(self, expr: cst.BaseExpression) -> int:
        """How many names a lifted inner function reads (``expr``, a jvp's function, is one or a
        transformation of one): srctrans.lifting passed them after the primals; 0 for anything else."""
        while isinstance(expr, cst.Call) and expr.args:
            expr = expr.args[0].value
        if not (isinstance(expr, cst.Name) and expr.value in self.lifted):
            return 0
        return len(self.lifted[expr.value].__srctrans_lifted__.free)

    def _nest(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a vmap of a vmapped function: a known one, or written as
        ``srctrans.vmap(srctrans.vmap(f, ...), ...)``."""
        if isinstance(expr, cst.Call):
            if not expr.args:
                return False
            given = expr.args[0].value
            if isinstance(given, cst.Call):
                return self._is_vmap(given.func)
            known, value = self.value(given)  # srctrans.vmap(batched, ...) of a vmapped global
            return known and is_vmapped(value)
        known, value = self.value(expr)
        return known and is_vmapped(value) and value._inner is not None

    def _is_vmap(self, expr: cst.BaseExpression) -> bool:
        known, value = self.value(expr)
        return known and value is face("vmap")

    def refuse(self, node: cst.CSTNode, message: str, hint: str) -> cst.Call | None:
        """Raise a located error where the outer transformation is a derivative; elsewhere leave the call
        (under jit, Numba then names the line it cannot compile; with jit disabled, the call runs)."""
        if self.nested.transform_name in _DERIVATIVES:
            raise self.pf.error(UnsupportedSyntaxError, node, message, hint)
        return None

    def _transformation_of(self, expr: cst.Call, node: cst.CSTNode, what: str) -> Any:
        """``srctrans.grad(f, ...)`` or ``srctrans.jit(f)`` written inside the function, made now;
        under jit, what cannot be known before the function runs is refused at ``node``."""
        try:
            made = self.function_of(expr, node, what)
        except UnsupportedSyntaxError:
            raise
        except (TypeError, ValueError) as err:
            raise self.pf.error(UnsupportedSyntaxError, node, f"{what}: {err}", "see the transformation's arguments") from None
        if made is None and self.nested.compiles:
            raise self.pf.error(UnsupportedSyntaxError, node, f"{what}: the function it is given must be known before the function runs",
                                "give it a function defined outside (a global or closure value)")
        return made

    def function_of(self, expr: cst.BaseExpression, node: cst.Call, what: str) -> Any:
        """The function a transformation is given: known before the function runs."""
        if isinstance(expr, cst.Call) and self.api_function(expr.func) in ("grad", "jit"):
            kind = self.api_function(expr.func)
            fn = self.function_of(expr.args[0].value if expr.args and expr.args[0].keyword is None else expr, node, what)
            if fn is None:
                return None
            options = self.options(expr, node, f"srctrans.{kind}")
            if options is None:
                return None
            made = face(kind)(fn, **options)
            self.nested.keep.append(made)
            return made
        known, value = self.value(expr)
        if known and callable(value):
            return value
        return self.refuse(
            node, f"{what}: the function it is given must be known before the function runs",
            "give it a function defined outside (a global or closure value), not one computed inside",
        )

    def options(self, call: cst.Call, node: cst.Call, label: str) -> dict | None:
        """The keyword arguments of ``call`` after the function, as literals."""
        out = {}
        for k, arg in enumerate(call.args):
            if k == 0 and arg.keyword is None:
                continue
            if arg.keyword is None or arg.star:
                return self.refuse(node, f"pass the options of {label} by keyword here", "e.g. argnums=1")
            try:
                out[arg.keyword.value] = ast.literal_eval(self.pf.module.code_for_node(arg.value))
            except (ValueError, SyntaxError):
                return self.refuse(
                    arg, f"{label}: {arg.keyword.value} must be a literal inside a transformed function",
                    "write its value (a number, True/False, a tuple of numbers)",
                )
        return out

    def fresh(self, stem: str, fn: Callable) -> str:
        for name, known in self.nested.made.values():
            if known is fn and name not in self.local:
                return name
        name, k = stem, 1
        while name in self.used or name in self.pf.captured.fn.__globals__ or any(n == name for n, _ in self.nested.made.values()):
            k += 1
            name = f"{stem}_{k}"
        self.used.add(name)
        return name

    def call(self, key: tuple, stem: str, make: Callable[[], Callable], args: list[cst.Arg], node: cst.Call) -> cst.Call:
        found = self.nested.made.get(key)
        if found is None:
            fn = make()
            found = self.nested.made[key] = (self.fresh(stem, fn), fn)
        name, fn = found
        self.introduced[name] = fn
        self.changed = True
        func = cst.Name(name)
        if node in self.pf.positions:
            self.positions[func] = self.pf.positions[node]
        return cst.Call(func, args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args])

    def _jvp(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        from .nesting import tangent_function

        what = "srctrans.jvp inside a transformed function"
        positional = [a for a in updated.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a for a in updated.args if a.keyword is not None}
        if any(a.star for a in updated.args) or set(keywords) - {"has_aux"} or len(positional) != 3:
            return self.refuse(original, f"{what} takes (fun, primals, tangents)",
                               "write srctrans.jvp(f, (x, ...), (v, ...))") or updated
        if "has_aux" in keywords and not (
            isinstance(keywords["has_aux"].value, cst.Name) and keywords["has_aux"].value.value == "False"
        ):
            return self.refuse(original, f"{what} with has_aux is not supported yet",
                               "return the auxiliary value from another call of the function") or updated
        fun, primals, tangents = (a.value for a in positional)
        if not all(isinstance(t, (cst.Tuple, cst.List)) for t in (primals, tangents)) or any(
            isinstance(el, cst.StarredElement) for t in (primals, tangents) for el in t.elements
        ):
            return self.refuse(
                original, f"{what} needs its primals and tangents written out as tuples",
                "write srctrans.jvp(f, (x, y), (v, w)), one entry per argument of f",
            ) or updated
        # a lambda or def inside, lifted (srctrans.lifting): the names it reads follow the primals, held constant
        held = self._held(fun)
        if len(primals.elements) != len(tangents.elements) + held:
            return self.refuse(original, f"{what}: {len(primals.elements) - held} primals but {len(tangents.elements)} tangents",
                               "give one tangent per primal") or updated
        fn = self.function_of(fun, original, what)
        if fn is None:
            return updated
        nargs = len(primals.elements)
        try:
            wrt = None
            if held:
                from .capture import unwrap

                pyfn, _, bound, _ = unwrap(fn)
                wrt = tuple(inspect.signature(pyfn).parameters)[len(bound):][: nargs - held]
            tangent = tangent_function(fn, nargs, wrt)
        except (TypeError, ValueError) as err:
            return self.refuse(original, f"{what}: {err}", "call srctrans.jvp outside the function instead") or updated
        stem = f"{_stem(fn)}{'_grad' if is_instance(fn, 'Grad') else ''}_jvp"  # f_grad_jvp: H @ v
        args = [cst.Arg(el.value) for el in (*primals.elements, *tangents.elements)]
        made = self.call(("jvp", id(fn), nargs, held), stem, lambda: tangent, args, original)
        self.pairs.add(made.func.value)
        return made

    def _call_of(self, kind: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``srctrans.grad(f, ...)(x)`` and ``srctrans.jit(f)(x)`` written inline."""
        inner = updated.func
        what = f"srctrans.{kind}(...)(...) inside a transformed function"
        if not inner.args or inner.args[0].keyword is not None:
            return self.refuse(original, f"{what} takes the function first", f"write srctrans.{kind}(f)(x)") or updated
        if kind == "jit":  # compiling is the outer transformation's business: call the function itself
            if len(inner.args) > 1:
                return self.refuse(original, f"{what} with options", "write srctrans.jit(f)(x), or call f") or updated
            self.changed = True
            return self.leave_Call(original, updated.with_changes(func=inner.args[0].value))
        fn = self.function_of(inner.args[0].value, original, what)
        if fn is None:
            return updated
        options = self.options(inner, original, f"srctrans.{kind}")
        if options is None:
            return updated
        from .errors import SrcTransError
        from .nesting import function_copy, value_and_adjoint_function

        try:
            made = face(kind)(fn, **options)
            try:
                target = value_and_adjoint_function(made) if kind == "value_and_grad" else made.__srctrans_function__
            except SrcTransError as err:
                if kind != "grad":
                    raise
                # the adjoint file of no particular structure cannot be made (a loop over a list of
                # layers): given pytree parts, the call gets their structure's file; else this error
                target = function_copy(getattr(fn, "__srctrans_function__", fn))
                self.nested.standins[id(target)] = err
        except (TypeError, ValueError, AttributeError) as err:
            return self.refuse(original, f"{what}: {err}", f"call srctrans.{kind} outside the function instead") or updated
        self.nested.keep.append(made)
        if kind == "grad":
            self.nested.grads[id(target)] = made
        key = (kind, id(fn), repr(sorted(options.items())))
        if kind == "value_and_grad" and self.nested.transform_name in _DERIVATIVES:
            # differentiated: the value as a call of f itself (its own rules: custom_vjp, ...) beside
            # the gradient, (f(x), f_grad(x)); the adjoint file's forward pass would lose those rules
            grad_key = ("grad", id(fn), repr(sorted(options.items())))
            plain = getattr(fn, "__srctrans_function__", fn)
            value = self.call(("plain", id(plain)), _stem(fn), lambda: plain, list(updated.args), original)
            gradient = self.call(grad_key, f"{_stem(fn)}_grad", lambda: face("grad")(fn, **options).__srctrans_function__,
                                 list(updated.args), original)
            return cst.Tuple([cst.Element(value), cst.Element(gradient)])
        return self.call(key, f"{_stem(fn)}_{kind}", lambda: target, list(updated.args), original)


# transformations a function may name before calling them (find_aliases); vmap too
_ALIASED = ("grad", "value_and_grad", "jit", "jacfwd", "jacrev", "hessian")


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []


def reads_srctrans(cap) -> bool:
    """Whether the function reads a global or closure value from srctrans (the module, a
    transformation, a function one made): only then can it call one; the others are not visited."""
    from .analysis.resolve import global_names

    closure = cap.closure
    for name in global_names(cap.fn.__code__) | set(closure):
        value = closure[name] if name in closure else cap.fn.__globals__.get(name)
        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(type(value), "__module__", "")
        if module.split(".")[0] == "srctrans" or api_transformation(value) is not None or value is registered("vmap"):
            return True
    return False


def reads_srctrans_anywhere(fn: Any, seen: set[int] | None = None) -> bool:
    """:func:`reads_srctrans` for ``fn`` or any function of the user's it reads (a global or
    closure value), at any depth: whether a transformation may be called somewhere below it."""
    from .analysis.resolve import global_names
    from .capture import capture

    fn = getattr(fn, "__srctrans_function__", fn)
    seen = set() if seen is None else seen
    if id(fn) in seen or not is_user_function(fn):
        return False
    seen.add(id(fn))
    try:
        cap = capture(fn)
    except Exception:  # (its own transformation reports a function without source)
        return False
    if reads_srctrans(cap):
        return True
    for name in global_names(fn.__code__) | set(cap.closure):
        value = cap.closure[name] if name in cap.closure else fn.__globals__.get(name)
        if value is not fn and reads_srctrans_anywhere(value, seen):
            return True
    return False


def _stem(fn: Any, fallback: str = "fn") -> str:
    """A name to build generated names from: the function's, or ``fallback`` for a lambda."""
    name = getattr(fn, "__name__", "")
    return name if isinstance(name, str) and name.isidentifier() else fallback


def _literal_index(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.value)
    return None


# --- jit of a call of a vmapped function: a loop over the examples in the same file -----------


def loop_node(name: str, obj: Any, callee: str, np_name: str, outputs: int | None) -> cst.FunctionDef:
    """``def name(*params)``: the vmapped ``callee`` as a loop over the examples (batching's
    :func:`srctrans.batching.loop.loop_function`), batch axes moved to the front and back where
    ``in_axes``/``out_axes`` say."""
    from .batching.loop import loop_function

    in_axes, out_axes = loop_axes(obj)
    params = list(obj._params)
    flags = [a is not None for a in in_axes]
    if len(out_axes) > 1:
        outputs = len(out_axes)
    axes = ", ".join("None" if a is None else str(a) for a in in_axes)
    why = f"{name} = srctrans.vmap({callee}, in_axes=({axes}{',' if len(in_axes) == 1 else ''})), called in a compiled function"
    node = loop_function(callee, params, flags, outputs, name, obj.axis_size, False, why)
    body = list(node.body.body)
    moves = [
        cst.parse_statement(f"{p} = {np_name}.ascontiguousarray({np_name}.moveaxis({p}, {a}, 0))  # the batch axis first\n")
        for p, a in zip(params, in_axes) if a not in (None, 0)
    ]
    if moves:  # after the comment saying why this is a loop
        moves[0] = moves[0].with_changes(leading_lines=body[0].leading_lines)
        body = [*moves, body[0].with_changes(leading_lines=[]), *body[1:]]
    ret = body[-1].body[0]
    values = [e.value for e in ret.value.elements] if isinstance(ret.value, cst.Tuple) else [ret.value]
    moved_out = out_axes * len(values) if len(out_axes) == 1 else out_axes
    if any(a != 0 for a in moved_out):
        values = [
            v if a == 0 else cst.parse_expression(f"{np_name}.moveaxis({cst.Module([]).code_for_node(v)}, 0, {a})")
            for v, a in zip(values, moved_out)
        ]
        value = values[0] if not isinstance(ret.value, cst.Tuple) else ret.value.with_changes(
            elements=[cst.Element(v) for v in values]
        )
        body[-1] = body[-1].with_changes(body=[ret.with_changes(value=value)])
    return node.with_changes(body=node.body.with_changes(body=body))


# --- grad of a call of a vmapped function: a loop reverse mode differentiates, and Numba compiles ---


_DIFFERENTIABLE_LOOPS: dict[tuple, tuple[Any, Callable]] = {}  # (id of the vmapped function, name) -> (it, its loop)


def differentiable_loop(name: str, obj: Any) -> Callable | None:
    """The vmapped ``obj`` as a plain function ``name`` looping over the examples, written so that
    reverse mode differentiates it as any callee (each example's output written into a row of
    zeros; shared arguments' cotangents summed over the examples by the adjoint) and Numba
    compiles it. None for what a loop cannot call (:func:`loop_refusal`). A function of several
    outputs is called once per output per example (reverse mode does not differentiate a tuple
    unpacked in a loop yet, but does in a callee).

    Its text lives in :mod:`linecache` under a name of its own; the generated file of the
    function calling ``obj`` holds it as it holds any callee. The first example is computed
    once more to size the results (zeros for an empty batch), and results are float arrays.
    """

    import numpy as np

    from . import runtime
    from .capture import capture
    from .parse import parse_function

    key = (id(obj), name)
    if key in _DIFFERENTIABLE_LOOPS and _DIFFERENTIABLE_LOOPS[key][0] is obj:
        return _DIFFERENTIABLE_LOOPS[key][1]
    axes = loop_axes(obj, nest=True)
    base = getattr(obj._base, "__srctrans_function__", obj._base)
    if obj._inner is not None:  # a nest: this loop calls the inner vmap's loop
        base = differentiable_loop(f"{name}_inner", obj._inner)
    if axes is None or base is None or not is_user_function(base):
        return None
    in_axes, out_axes = axes
    outputs = outputs_of(parse_function(capture(base)).node)
    count = 1 if outputs is None else outputs
    out_axes = out_axes * count if len(out_axes) == 1 else out_axes
    if len(out_axes) != count:
        return None
    params = list(obj._params)
    callee = _stem(base, "example")
    if callee in params or callee == name:
        callee = f"{callee}_example"
    first = next((p for p, a in zip(params, in_axes) if a is not None), None)
    size = f"{first}.shape[0]" if first is not None else repr(obj.axis_size)
    axes_text = ", ".join("None" if a is None else str(a) for a in in_axes) + ("," if len(in_axes) == 1 else "")
    example = ", ".join(f"rt.batch_example({p})" if a is not None else p for p, a in zip(params, in_axes))
    each = ", ".join(f"{p}[i]" if a is not None else p for p, a in zip(params, in_axes))
    signature = ", ".join(params)
    # several outputs: one function per output, each unpacking the callee's tuple (reverse mode
    # differentiates that in a callee, not in a loop); each example is computed once per output
    parts = [callee] if outputs is None else [f"{name}_output{k}" for k in range(count)]
    outs = ["out"] if outputs is None else [f"out{k}" for k in range(count)]
    lines = []
    for k, part in enumerate(parts if outputs is not None else []):
        results = ", ".join(f"r{j}" for j in range(count)) + ("," if count == 1 else "")
        lines += [f"def {part}({signature}):", f"    {results} = {callee}({signature})", f"    return r{k}", "", ""]
    lines += [
        f"def {name}({signature}):",
        f"    # vmap by a loop over the examples: {name} = srctrans.vmap({callee}, in_axes=({axes_text})), differentiated",
        *(f"    {p} = np.moveaxis({p}, {a}, 0)  # the batch axis first" for p, a in zip(params, in_axes) if a not in (None, 0)),
        f"    n = {size}  # the batch size",
        *(f"    {o}_first = {part}({example})  # sizes the result (zeros for an empty batch)" for o, part in zip(outs, parts)),
        *(f"    {o} = np.zeros((n,) + np.shape({o}_first))" for o in outs),
        "    for i in range(n):",
        *(f"        {o}[i] = {part}({each})" for o, part in zip(outs, parts)),
        "    return " + ", ".join(o if a == 0 else f"np.moveaxis({o}, 0, {a})" for o, a in zip(outs, out_axes))
        + ("," if outputs == 1 else ""),
    ]
    text = "\n".join(lines) + "\n"
    space: dict[str, Any] = {"__name__": "srctrans_vmap_loops", "np": np, "rt": runtime, callee: base}
    made = function_from_text(text, name, f"the loop of the vmapped {name}", base, space)
    _DIFFERENTIABLE_LOOPS[key] = (obj, made)
    return made


_JACOBIANS: dict[tuple, Callable] = {}


def jacobian_function(name: str, tangent: Callable, params: list[str], argnums: int, label: str, kind: str) -> Callable:
    """A plain function ``name(*params)`` returning the Jacobian of a function with respect to
    ``params[argnums]``, of shape ``out.shape + x.shape`` as JAX's: one call of ``tangent`` (the
    function's tangent file, ``(*primals, x_dot) -> (out, out_dot)``) per entry of ``x``, each
    column written into one array, in a loop Numba compiles with the function calling it (a
    3x3 Jacobian inside a compiled Newton loop costs three calls of the tangent file, no Python).
    ``jacrev`` and ``hessian`` (``jacfwd`` of the gradient) are built the same way: the numbers of
    the same Jacobian, to rounding. Its text lives in :mod:`linecache`, like the vmap loops'."""
    import numpy as np

    callee = _stem(tangent, "tangent")
    params = [p if p != callee else f"{p}_" for p in params]
    x = params[argnums]
    signature = ", ".join(params)
    with_basis = ", ".join(params + ["e.reshape(shape)"])
    how = "forward mode" if kind == "jacfwd" else f"forward mode (the Jacobian {kind} gives, to rounding)"
    text = "\n".join([
        f"def {name}({signature}):",
        f"    # {label}: by {how}, one tangent of {x} per column",
        f"    shape = np.shape({x})",
        "    n = np.size(" + x + ")",
        f"    e = np.zeros(n, np.asarray({x}).dtype)  # the basis vectors, one at a time",
        "    e[0] = 1.0",
        f"    out, column = {callee}({with_basis})",
        "    first = np.asarray(column).ravel()",
        "    jac = np.empty((first.size, n), first.dtype)",
        "    jac[:, 0] = first",
        "    for k in range(1, n):",
        "        e[k - 1] = 0.0",
        "        e[k] = 1.0",
        f"        out, column = {callee}({with_basis})",
        "        jac[:, k] = np.asarray(column).ravel()",
        "    return jac.reshape(np.shape(out) + shape)",
    ]) + "\n"
    key = (id(tangent), text)
    if key not in _JACOBIANS:
        space: dict[str, Any] = {"__name__": "srctrans_jacobians", "np": np, callee: tangent}
        _JACOBIANS[key] = function_from_text(text, name, label, tangent, space)
    return _JACOBIANS[key]


def function_from_text(text: str, name: str, label: str, made_from: Any, space: dict[str, Any]) -> Callable:
    """The function ``name`` defined by ``text`` (our own code) run in ``space``; the text is kept
    in :mod:`linecache` under ``<srctrans: label, tag>`` (the tag a hash of the text and of what it
    was made from: the same name in every process), so capture reads it as any user function."""
    import hashlib
    import linecache

    where = f"{getattr(made_from, '__module__', '')}.{getattr(made_from, '__qualname__', '')}"
    tag = hashlib.sha1(f"{text}|{where}".encode()).hexdigest()[:8]
    filename = f"<srctrans: {label}, {tag}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    exec(compile(text, filename, "exec"), space)  # noqa: S102 -- our own text, kept in linecache for capture
    return space[name]
