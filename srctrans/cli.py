"""The ``srctrans`` command: see, write out and clean generated files.

    srctrans show examples/quickstart.py:calc              print the jit file
    srctrans show mypkg.model:Model.loss --transform anf   a module and a method
    srctrans emit examples/quickstart.py:calc -o build/    write it into a folder
    srctrans clean [PATH]                                  remove __srctrans__ folders
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path

from .cache import clean as clean_tree
from .cache import readable_name, user_cache_root
from .errors import SrcTransError
from .pipeline import generate
from .variant import Transform
from .version import __version__

TRANSFORMS = {
    "jit": "the file srctrans.jit compiles (desugared source)",
    "desugar": "the function after the desugar pass",
    "anf": "the function in A-normal form (one operation per line)",
    "grad": "the adjoint file of srctrans.grad (forward sweep, then backward sweep)",
    "vjp": "the adjoint file of srctrans.vjp (the cotangent is its last parameter)",
    "jvp": "the tangent file of srctrans.jvp (the tangents x_dot are its last parameters)",
}

EPILOG = """\
examples:
  srctrans show examples/quickstart.py:calc
      print the generated file that srctrans.jit compiles for calc()
  srctrans show examples/quickstart.py:calc --transform anf
      the same function in A-normal form, as the AD transformations see it
  srctrans show mypackage.model:Model.loss
      a function or method of an importable module
  srctrans emit examples/quickstart.py:calc -o generated/
      write the generated file into a folder of your choice
  srctrans clean
      delete every __srctrans__ folder below the current directory

Generated files normally live in __srctrans__/ beside your module
(SRCTRANS_CACHE_DIR moves them). Run with SRCTRANS_DISABLE_JIT=1 to execute the
generated Python instead of compiled code, so breakpoint() and pdb work in it.
"""


def _load_target(spec: str):
    """``path/to/file.py:func`` or ``package.module:Class.method`` -> the object."""
    if ":" not in spec:
        raise SystemExit(f"srctrans: expected FILE_OR_MODULE:FUNCTION, got {spec!r}")
    where, _, qualname = spec.rpartition(":")
    if where.endswith(".py") or os.sep in where or os.path.exists(where):
        path = Path(where).resolve()
        if not path.is_file():
            raise SystemExit(f"srctrans: no such file: {where}")
        name = path.stem
        sys.path.insert(0, str(path.parent))
        module = sys.modules.get(name)
        if module is None or os.path.abspath(getattr(module, "__file__", "") or "") != str(path):
            mspec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(mspec)
            sys.modules[name] = module
            mspec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    obj = module
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"srctrans: {where} has no {qualname!r}") from None
    return obj


def _generate(args):
    obj = _load_target(args.target)
    options: tuple = ()
    if args.wrt:
        if args.transform not in ("grad", "vjp", "jvp"):
            raise SystemExit(f"srctrans: --wrt goes with --transform grad, vjp or jvp, not {args.transform}")
        options = (("wrt", tuple(n.strip() for n in args.wrt.split(",") if n.strip())),)
    return generate(obj, Transform(args.transform, options))


def cmd_show(args) -> int:
    print(_generate(args).text, end="")
    return 0


def cmd_emit(args) -> int:
    gen = _generate(args)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    dest = out / readable_name(gen.path)  # without the dependency hash the cache's name ends in
    dest.write_text(gen.text)
    print(dest)
    return 0


def cmd_clean(args) -> int:
    removed = clean_tree(Path(args.path))
    if args.user and user_cache_root().exists():
        shutil.rmtree(user_cache_root(), ignore_errors=True)
        removed.append(user_cache_root())
    for folder in removed:
        print(f"removed {folder}")
    if not removed:
        print("nothing to clean")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srctrans",
        description="srctrans rewrites NumPy functions into readable Python files "
        "that Numba compiles: the files of jit, grad, vjp, jvp, vmap and pmap. This command "
        "shows a function's jit, grad, vjp or jvp file, writes it out, and cleans the generated files.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"srctrans {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    help_transform = "; ".join(f"{k}: {v}" for k, v in TRANSFORMS.items())
    for name, func, doc in (
        ("show", cmd_show, "print the generated file of a function"),
        ("emit", cmd_emit, "write the generated file of a function into a folder"),
    ):
        p = sub.add_parser(name, help=doc, description=doc)
        p.add_argument("target", metavar="FILE_OR_MODULE:FUNC", help="e.g. examples/quickstart.py:calc or pkg.mod:Class.method")
        p.add_argument("--transform", "-t", default="jit", choices=sorted(TRANSFORMS), help=help_transform)
        p.add_argument("--wrt", metavar="NAMES", help="grad, vjp, jvp: the parameters to differentiate, comma-separated (default: the first)")
        if name == "emit":
            p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write the file into")
        p.set_defaults(func=func)
    p = sub.add_parser("clean", help="remove __srctrans__ folders", description="remove every __srctrans__ folder below PATH")
    p.add_argument("path", nargs="?", default=".", help="where to look (default: the current directory)")
    p.add_argument("--user", action="store_true", help="also empty the per-user cache folder")
    p.set_defaults(func=cmd_clean)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except SrcTransError as err:
        print(f"srctrans: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
