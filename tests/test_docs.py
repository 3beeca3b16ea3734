"""docs/functions.rst is the table docs/tools/function_table.py makes from the rule tables."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_function_table_is_up_to_date():
    result = subprocess.run([sys.executable, str(ROOT / "docs" / "tools" / "function_table.py"), "--check"], cwd=ROOT)
    assert result.returncode == 0, "docs/functions.rst is out of date: run python docs/tools/function_table.py"
