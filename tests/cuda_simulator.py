"""Running a file of CUDA test cases under Numba's simulator, in a subprocess.

Numba reads ``NUMBA_ENABLE_CUDASIM`` when ``numba.cuda`` is first imported, so it cannot be
switched on in the test process without changing it for every other test module. The run
logs the path of every generated CUDA file it ran (``SRCTRANS_CUDA_KERNEL_LOG``), for the
tests that compile them to PTX.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def env(**extra: str) -> dict:
    """This process's environment less srctrans's and the simulator's settings, this checkout first."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("SRCTRANS_", "NUMBA_ENABLE_CUDASIM"))}
    out["PYTHONPATH"] = os.pathsep.join([str(REPO), out.get("PYTHONPATH", "")])
    out.update(extra)
    return out


def run_cases(cases: str, folder: Path) -> tuple[subprocess.CompletedProcess, list[Path]]:
    """pytest on ``cases`` (a path relative to the repository) under the simulator; the run and
    the generated CUDA files it ran."""
    log = folder / "cuda_files.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={folder / 'tmp'}", cases],
        cwd=REPO,
        env=env(NUMBA_ENABLE_CUDASIM="1", SRCTRANS_CUDA_KERNEL_LOG=str(log)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    files = sorted({Path(p) for p in log.read_text().split()}) if log.exists() else []
    return proc, files


def assert_passed(proc: subprocess.CompletedProcess) -> None:
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], tail
