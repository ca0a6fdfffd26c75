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
    <run>/inference-<time>/             one --inference session: its own configuration.yaml,
                                          run_logs/ and <behavior>/ event files

An existing run is never overwritten silently: ``--resume`` continues it, ``--force`` deletes it
first, anything else is an error. ``--inference`` (:meth:`RunDirectory.prepare_inference`)
never changes the trained run: each session writes into a new ``inference-<time>`` folder.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from trainers.settings import CheckpointSettings, ConfigError

__all__ = ["INFERENCE_PREFIX", "RunDirectory", "RunDirectoryError", "behavior_dir_name"]

INFERENCE_PREFIX = "inference-"
"""``--inference`` sessions write into ``<run>/inference-<YYYYmmdd-HHMMSS>[-N]``."""


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

    @classmethod
    def prepare_inference(
        cls, settings: CheckpointSettings, *, other_source: bool = False
    ) -> tuple[RunDirectory, RunDirectory | None]:
        """Create the folder of an ``--inference`` session, leaving the trained run as it is.

        ``mlagents-learn`` 1.1.0 runs ``--inference`` in the run folder itself (with
        ``--resume`` to load it; alone on an existing run it refuses and suggests ``--force``)
        and rewrites ``configuration.yaml``, ``timers.json`` and the TensorBoard events there.
        Here the session's outputs go to a new ``<run>/inference-<time>`` folder instead,
        ``--force`` deletes nothing, and an existing run is used with or without ``--resume``.

        Args:
            settings: the run's checkpoint settings (``inference`` set).
            other_source: the weights come from elsewhere (``--initialize-from`` or a
                behavior's ``init_path``), so the run itself need not exist yet.

        Returns:
            The session's folder, and the trained run (``None`` when it does not exist).

        Raises:
            RunDirectoryError: the run does not exist and nothing else gives weights
                (also with ``--resume``), or ``--initialize-from`` names a missing run.
        """
        root = settings.run_dir
        exists = root.is_dir() and any(
            not child.name.startswith(INFERENCE_PREFIX) for child in root.iterdir()
        )
        if not exists and (settings.resume or not other_source):
            raise RunDirectoryError(
                f"--inference: there is no trained run '{settings.run_id}' in {root} to act "
                "with; train it first (without --inference), give the --run-id of a trained "
                "run (and its --results-dir), or load weights with --initialize-from ID."
            )
        if settings.initialize_from is not None and not settings.resume:
            source = Path(settings.results_dir) / settings.initialize_from
            if not source.is_dir():
                raise RunDirectoryError(
                    f"--initialize-from {settings.initialize_from}: no run at {source}; give the "
                    "run id of a finished run in the same --results-dir."
                )
        stamp = time.strftime("%Y%m%d-%H%M%S")
        root.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 1000):
            name = INFERENCE_PREFIX + stamp + ("" if attempt == 1 else f"-{attempt}")
            try:
                (root / name).mkdir()
            except FileExistsError:
                continue
            session = cls(root / name)
            session.run_logs.mkdir()
            return session, (cls(root) if exists else None)
        raise RunDirectoryError(f"--inference: no free session folder name in {root}.")

    def discard_session(self, trained: RunDirectory | None) -> None:
        """Delete this ``--inference`` session folder after a failed start; also the run's
        folder when it was created for the session alone (``trained`` is ``None``) and is
        now empty."""
        shutil.rmtree(self.root, ignore_errors=True)
        if trained is None:
            with contextlib.suppress(OSError):  # not empty: other sessions are there
                self.root.parent.rmdir()
