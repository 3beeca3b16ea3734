"""Sphinx configuration for the srctrans documentation.

Build:  cd docs && sphinx-build -W --keep-going -b html . _build/html

Besides the usual settings, this file does two things at build time:

* writes the ``srctrans`` command's ``--help`` texts and the fence's table of
  refused constructs into ``_build/generated/`` (git-ignored), so the pages that
  include them always match the code;
* checks that the generated files committed under ``examples/`` are still what
  ``srctrans show`` prints for ``examples/walkthrough.py`` (a warning, hence an
  error under ``-W``, tells how to regenerate them).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # autodoc works from a checkout, without installing

import srctrans  # noqa: E402

# -- project ---------------------------------------------------------------------

project = "srctrans"
author = "the srctrans authors"
copyright = "the srctrans authors"
version = srctrans.__version__
release = srctrans.__version__

# -- general ---------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
exclude_patterns = ["_build", "examples", "Thumbs.db", ".DS_Store"]
default_role = "literal"
highlight_language = "python3"
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True

# -- html ------------------------------------------------------------------------

html_theme = "alabaster"
html_title = f"srctrans {release}"
html_theme_options = {
    "description": "JAX-style transformations for NumPy code, by rewriting its source",
    "fixed_sidebar": True,
}

# -- files written at build time ---------------------------------------------------

GENERATED = HERE / "_build" / "generated"
EXAMPLES = HERE / "examples"

# the walkthrough's committed generated files: file name -> transform
WALKTHROUGH = {
    "walkthrough.calc.jit.py.txt": "jit",
    "walkthrough.calc.anf.py.txt": "anf",
}


def _cli_help(argv: list[str]) -> str:
    from srctrans.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(argv)
        except SystemExit:
            pass
    return out.getvalue()


def _write_cli_help() -> None:
    os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal width
    for name, argv in {
        "srctrans": ["--help"],
        "show": ["show", "--help"],
        "emit": ["emit", "--help"],
        "clean": ["clean", "--help"],
    }.items():
        (GENERATED / f"cli-{name}.txt").write_text(_cli_help(argv))


def _rst_text(text: str) -> str:
    """``text`` as reST inline text, with markup characters escaped."""
    for ch in "\\*`|_":
        text = text.replace(ch, "\\" + ch)
    return text


def _write_fence_table() -> None:
    from srctrans.fence import REJECTED

    rows = [".. list-table::", "   :header-rows: 1", "   :widths: 45 55", "", "   * - refused", "     - what to do instead"]
    seen = set()
    for what, hint in REJECTED.values():
        if what in seen:
            continue
        seen.add(what)
        rows += [f"   * - {_rst_text(what)}", f"     - {_rst_text(hint)}"]
    (GENERATED / "fence-table.rst").write_text("\n".join(rows) + "\n")


def _comparable(text: str) -> list[str]:
    """A generated file's lines without the two that hold absolute paths or hashes of them."""
    return [
        line
        for line in text.splitlines()
        if not line.startswith(("# srctrans-meta: ", "# dependency hash: "))
    ]


def _check_walkthrough(logger) -> None:
    from srctrans.cli import main

    for name, transform in WALKTHROUGH.items():
        committed = (EXAMPLES / name).read_text()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["show", str(EXAMPLES / "walkthrough.py") + ":calc", "--transform", transform])
        if _comparable(out.getvalue()) != _comparable(committed):
            logger.warning(
                f"docs/examples/{name} is not what srctrans prints now; regenerate it from the "
                f"repository root with: srctrans show docs/examples/walkthrough.py:calc "
                f"--transform {transform} > docs/examples/{name}"
            )


def _builder_inited(app) -> None:
    from sphinx.util import logging

    GENERATED.mkdir(parents=True, exist_ok=True)
    _write_cli_help()
    _write_fence_table()
    _check_walkthrough(logging.getLogger("srctrans.docs"))


def setup(app):
    app.connect("builder-inited", _builder_inited)
