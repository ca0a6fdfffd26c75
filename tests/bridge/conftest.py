"""Fixtures of the bridge tests: a launchable fake game and orphan checks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture
def fake_game(tmp_path: Path) -> Path:
    """An executable ``FakeGame.x86_64`` running ``bridge_fake_game.py`` with our interpreter."""
    build = tmp_path / "build"
    build.mkdir()
    launcher = build / "FakeGame.x86_64"
    launcher.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{REPO_ROOT}" exec "{sys.executable}" "{HERE / "bridge_fake_game.py"}" "$@"\n'
    )
    launcher.chmod(0o755)
    return build / "FakeGame"
