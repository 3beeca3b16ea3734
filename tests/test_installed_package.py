"""A package of the user's installed with pip (in site-packages) is transformed like any other code.

Functions are called as they are only when they belong to a library with rules (NumPy,
SciPy, math, srctrans, Numba; :data:`srctrans.analysis.resolve.RULE_LIBRARIES`) or to the
standard library. The test builds a wheel, installs it with ``pip install --target`` into the
site-packages of a fresh virtual environment and runs that environment's Python.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

from srctrans.analysis.resolve import RULE_LIBRARIES, is_user_function

from .conftest import REPO

PACKAGE = """
import numpy as np

def helper(x):
    return np.sin(x) * 2.0

def f(x):
    return np.sum(helper(x))
"""

RUN = """
import json
import numpy as np
import srctrans, mypkg

assert "site-packages" in mypkg.__file__, mypkg.__file__
x = np.array([0.5, 1.0, 2.0])
print(json.dumps({
    "python": float(mypkg.f(x)),
    "jit": float(srctrans.jit(mypkg.f)(x)),
    "grad": srctrans.grad(mypkg.f)(x).tolist(),
    "jit_grad": srctrans.jit(srctrans.grad(mypkg.f))(x).tolist(),
    "vmap": srctrans.vmap(mypkg.f)(np.stack([x, x])).tolist(),
}))
"""


def _wheel(folder: Path) -> Path:
    """``mypkg-0.1-py3-none-any.whl``, written by hand (no build backend needed)."""
    files = {
        "mypkg/__init__.py": textwrap.dedent(PACKAGE),
        "mypkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: mypkg\nVersion: 0.1\n",
        "mypkg-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: srctrans-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files["mypkg-0.1.dist-info/RECORD"] = "\n".join([*record, "mypkg-0.1.dist-info/RECORD,,"]) + "\n"
    wheel = folder / "mypkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return wheel


@pytest.mark.slow
def test_a_pip_installed_package_of_the_users_is_transformed(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("pip is not installed")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    assert site.is_relative_to(venv)
    # the packages this environment has (NumPy, Numba ...) stay importable there
    (site / "test_deps.pth").write_text(os.path.dirname(os.path.dirname(np.__file__)) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), str(_wheel(tmp_path))],
        check=True,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SRCTRANS_", "PYTHON"))}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run([str(python), "-c", RUN], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout.splitlines()[-1])
    x = np.array([0.5, 1.0, 2.0])
    assert got["jit"] == pytest.approx(got["python"])
    np.testing.assert_allclose(got["grad"], 2.0 * np.cos(x))
    np.testing.assert_allclose(got["jit_grad"], 2.0 * np.cos(x))
    np.testing.assert_allclose(got["vmap"], [got["python"]] * 2)


def test_libraries_with_rules_are_not_transformed():
    import math
    import statistics

    import srctrans
    from srctrans.rules.batching import BATCHING
    from srctrans.rules.derivatives import DERIVATIVES

    for table in (DERIVATIVES, BATCHING):  # every library a table has rules for is on the list
        assert {key.split(".")[0] for key in table} - {"getitem", "ndarray"} <= RULE_LIBRARIES
    assert not is_user_function(np.testing.assert_allclose)  # (a Python function of NumPy's)
    assert not is_user_function(srctrans.random.normal)
    assert not is_user_function(statistics.mean)  # the standard library
    assert not is_user_function(math.sqrt)
