"""The reference peer venv is built only where nothing else lives (``benchmarks.peer_venv``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv


def test_a_folder_that_is_not_a_peer_venv_is_never_cleared(tmp_path: Path) -> None:
    # Pointed at the project's own .venv by mistake, a build used to delete it.
    folder = tmp_path / ".venv"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("mine", encoding="utf-8")
    with pytest.raises(PeerUnavailableError, match="is not a reference peer venv") as refused:
        ensure_peer_venv(folder)
    assert "UNITY_GYM_PEER_VENV" in str(refused.value)
    assert (folder / "bin" / "python").read_text(encoding="utf-8") == "mine"
