"""The house's shape, measured from the source (issue 22): import circles, private names imported
across modules, and imports that climb from a lower layer to a higher one.

Every import counts, at module level or inside a function (both run), except those under
``if TYPE_CHECKING:``. The goal is no circle and no private import; what is left of the old
shape is listed below by name, exactly: a new violation fails, and so does a listed one that is
gone (delete it from the list, so the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("srctrans", "numba_backend")

# Layers, lowest first: a module may import from its own layer and the ones below.
LAYERS = [
    ("ground", ("srctrans.errors", "srctrans.config", "srctrans.version", "srctrans.backend", "srctrans.tree", "srctrans.rules", "srctrans.library", "srctrans.runtime",
                "srctrans.subclasses", "srctrans.ad.custom", "srctrans.ad.custom_jvp", "srctrans.parallel.collectives",
                "srctrans.parallel.devices", "srctrans.faces", "srctrans.boundary", "srctrans.sharding")),
    ("source", ("srctrans.capture", "srctrans.parse", "srctrans.fence", "srctrans.lifting", "srctrans.cache", "srctrans.emit", "srctrans.statics", "srctrans.variant",
                "srctrans.library_functions", "srctrans.analysis.names", "srctrans.analysis.resolve")),
    ("normal form", ("srctrans.analysis", "srctrans.passes", "srctrans.normal_form")),
    ("transformations", ("srctrans.ad", "srctrans.batching.generate", "srctrans.batching.vectorize", "srctrans.batching.tuples",
                         "srctrans.batching.loop", "srctrans.parallel.kernels", "srctrans.parallel.stages",
                         "srctrans.gpu_source")),
    ("pipeline", ("srctrans.pipeline", "srctrans.build", "srctrans.nested_calls", "srctrans.nesting", "srctrans.specialization",
                  "srctrans.gpu", "srctrans.parallel.runner", "srctrans.parallel.propagate", "numba_backend")),
    ("public API", ("srctrans",)),
]


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for k, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), k
    return rank


def modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "__srctrans__" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports() -> list[tuple[str, str, str | None]]:
    """``(importer, imported module, name)`` for every import between the packages' modules."""
    mods = modules()
    out = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                out += [(mod, a.name, None) for a in node.names if a.name in mods and a.name != mod]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for a in node.names:
                    if f"{source}.{a.name}" in mods:
                        out.append((mod, f"{source}.{a.name}", None))
                    elif source in mods and source != mod:
                        out.append((mod, source, a.name))
    return out


def circles() -> list[list[str]]:
    """The import graph's strongly connected components of more than one module."""
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for a, b, _ in imports():
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def private_imports() -> set[tuple[str, str, str]]:
    return {(a, b, n) for a, b, n in imports() if n and n.startswith("_") and not n.startswith("__")}


def upward_imports() -> set[tuple[str, str]]:
    return {(a, b) for a, b, _ in imports() if layer_of(b) > layer_of(a)}


# --- what is left of the old shape (delete entries as they are fixed) -----------------------------

KNOWN_PRIVATE: set[tuple[str, str, str]] = set()

# modules in an import circle
KNOWN_CIRCLE_MEMBERS: set[str] = set()

# (importer, imported): an import from a higher layer
KNOWN_UPWARD = {
    ("numba_backend.cuda_arrays", "srctrans"),
    ("numba_backend.cuda_arrays", "srctrans.random"),
    ("numba_backend.cuda_random", "srctrans.random"),
    ("numba_backend.dask_runner", "srctrans.distributed"),
    ("numba_backend.random_overloads", "srctrans.random"),
    ("srctrans.parallel.stages", "srctrans.pipeline"),
}


def test_no_new_private_import_across_modules():
    found = private_imports()
    assert found - KNOWN_PRIVATE == set(), "a module imports another's private name: make it public in a smaller shared module"
    assert KNOWN_PRIVATE - found == set(), "fixed: delete these from KNOWN_PRIVATE"


def test_no_module_joins_an_import_circle():
    found = circles()
    members = {m for c in found for m in c}
    assert members - KNOWN_CIRCLE_MEMBERS == set(), f"new modules in an import circle: {found}"
    assert KNOWN_CIRCLE_MEMBERS - members == set(), "out of every circle now: delete these from KNOWN_CIRCLE_MEMBERS"


def test_no_new_import_climbs_a_layer():
    found = upward_imports()
    assert found - KNOWN_UPWARD == set(), "a module imports from a layer above its own"
    assert KNOWN_UPWARD - found == set(), "fixed: delete these from KNOWN_UPWARD"


def test_every_module_has_a_layer():
    assert [m for m in modules() if layer_of(m) < 0] == []


def test_the_measure_sees_a_planted_circle_and_private_import(tmp_path, monkeypatch):
    """The graph code finds what it is meant to find, on a made-up package."""
    pkg = tmp_path / "srctrans"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .b import _g\n")
    (pkg / "b.py").write_text("from . import a\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import x\n")
    (pkg / "c.py").write_text("from .a import f\n")
    (tmp_path / "numba_backend").mkdir()
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert circles() == [["srctrans.a", "srctrans.b"]]
    assert private_imports() == {("srctrans.a", "srctrans.b", "_g")}
