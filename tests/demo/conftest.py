"""Location of the real Unity ``.demo`` recordings."""

from __future__ import annotations

from pathlib import Path

import pytest

DEMOS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "demos"


@pytest.fixture(scope="session")
def demos_dir() -> Path:
    """The folder of real Unity recordings (skips the test when it is absent)."""
    if not DEMOS_DIR.is_dir():
        pytest.skip(f"conformance demos folder {DEMOS_DIR} is absent (see spec §8)")
    return DEMOS_DIR
