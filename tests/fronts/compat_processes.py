"""Run a Python snippet in a fresh interpreter, so the ``mlagents_envs`` aliases it installs never
reach the test process's :data:`sys.modules`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["REPO_ROOT", "run_python", "run_python_json"]

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_python(
    code: str, *, python_path: list[Path] | None = None, timeout: float = 150.0
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``python -c`` from the repository root; ``python_path`` goes first."""
    folders = [*(python_path or []), REPO_ROOT]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(f) for f in folders)}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO_ROOT,
        check=False,
    )


def run_python_json(
    code: str, *, python_path: list[Path] | None = None, timeout: float = 150.0
) -> Any:
    """Run ``code``, which must succeed and print one JSON document last; return it decoded."""
    proc = run_python(code, python_path=python_path, timeout=timeout)
    assert proc.returncode == 0, f"snippet failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"snippet printed nothing; stderr:\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1])
