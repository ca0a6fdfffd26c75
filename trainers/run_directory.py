"""The results folder of a run (``<results-dir>/<run-id>``) and its rules.

Layout::

    <run>/configuration.yaml            the resolved configuration, as mlagents-learn reads it
    <run>/configuration.unity-train.yaml  what only unity-train knows (scene, gym_id, backend,
                                          precision, ...), merged back when unity-train reads
                                          configuration.yaml
    <run>/run_logs/timers.json          profiling tree with run metadata
    <run>/run_logs/training_status.json checkpoint history per behavior
    <run>/<behavior>/                   events, <behavior>-<step>.pt/.onnx, checkpoint.pt
    <run>/<behavior>.onnx               the final model

An existing run is never overwritten silently: ``--resume`` continues it, ``--force`` deletes it
first, anything else is an error.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from trainers.settings import CheckpointSettings, ConfigError

__all__ = ["RunDirectory", "RunDirectoryError", "behavior_dir_name"]


class RunDirectoryError(ConfigError):
    """The run directory cannot be used as requested (exists, missing, ...)."""


def behavior_dir_name(behavior_name: str) -> str:
    """A file-system-safe version of a behavior name (used for folders and file names)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", behavior_name) or "behavior"


@dataclass(frozen=True)
class RunDirectory:
    """Paths of one run."""

    root: Path

    @property
    def run_logs(self) -> Path:
        """``<run>/run_logs``."""
        return self.root / "run_logs"

    @property
    def timers_path(self) -> Path:
        """``<run>/run_logs/timers.json``."""
        return self.run_logs / "timers.json"

    @property
    def status_path(self) -> Path:
        """``<run>/run_logs/training_status.json``."""
        return self.run_logs / "training_status.json"

    @property
    def configuration_path(self) -> Path:
        """``<run>/configuration.yaml``."""
        return self.root / "configuration.yaml"

    def behavior_dir(self, behavior_name: str) -> Path:
        """``<run>/<behavior>``."""
        return self.root / behavior_dir_name(behavior_name)

    def discard_if_new(self, settings: CheckpointSettings) -> None:
        """Delete the run folder after a failed start, unless it belongs to a resumed run."""
        if not settings.resume:
            shutil.rmtree(self.root, ignore_errors=True)

    @classmethod
    def prepare(cls, settings: CheckpointSettings) -> RunDirectory:
        """Check the resume/force rules and create the directory.

        Raises:
            RunDirectoryError: the run exists without ``--resume``/``--force``, or ``--resume``
                names a run that does not exist, or ``--initialize-from`` names a missing run.
        """
        root = settings.run_dir
        exists = root.is_dir() and any(root.iterdir())
        if settings.resume:
            if not exists:
                raise RunDirectoryError(
                    f"cannot resume run '{settings.run_id}': {root} does not exist or is empty; "
                    "start it without --resume."
                )
        elif exists:
            if not settings.force:
                raise RunDirectoryError(
                    f"run '{settings.run_id}' already exists in {root}; use --resume to continue "
                    "it, --force to overwrite it, or choose another --run-id."
                )
            shutil.rmtree(root)
        if settings.initialize_from is not None:
            source = Path(settings.results_dir) / settings.initialize_from
            if not source.is_dir():
                raise RunDirectoryError(
                    f"--initialize-from {settings.initialize_from}: no run at {source}; give the "
                    "run id of a finished run in the same --results-dir."
                )
        run = cls(root)
        run.run_logs.mkdir(parents=True, exist_ok=True)
        return run
