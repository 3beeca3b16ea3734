"""``python -m srctrans``: the same as the ``srctrans`` command."""

import sys

from .cli import main

sys.exit(main())
