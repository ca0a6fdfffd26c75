"""Fixtures of the trainer tests: an in-process ``unity-train`` runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trainer_toy_envs  # noqa: F401  (registers the toy environments)
import yaml
from trainer_test_support import RunTrain

from trainers.cli import main


@pytest.fixture
def run_train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunTrain:
    """Run ``unity-train`` in-process: ``run_train(config, *flags, run_id=..., expect=0)``.

    Results go to ``tmp_path / "results"``; returns the run directory.
    """
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"

    def run(config: dict[str, Any], *flags: str, run_id: str = "run", expect: int = 0) -> Path:
        config_path = tmp_path / f"{run_id}-config.yaml"
        config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        args = [str(config_path), "--run-id", run_id, "--results-dir", str(results), *flags]
        code = main(args)
        assert code == expect, f"unity-train {' '.join(args)} exited with {code}"
        return results / run_id

    return run
