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
    <run>/.unity-train.lock             held (``fcntl.flock``) by the run that uses the folder
    <run>/inference-<time>/             one --inference session: its own configuration.yaml,
                                          run_logs/ and <behavior>/ event files

An existing run is never overwritten silently: ``--resume`` continues it, ``--force`` deletes it
first, anything else is an error. ``--inference`` (:meth:`RunDirectory.prepare_inference`)
never changes the trained run: each session writes into a new ``inference-<time>`` folder.

One run per folder: :meth:`RunDirectory.prepare` takes an exclusive, non-blocking
``fcntl.flock`` on ``<run>/.unity-train.lock`` before it looks at (or deletes) anything, and
the run holds it until :meth:`RunDirectory.release` (or until its process ends: the operating
system drops the lock of a dead process, so there is never a stale lock to clean up). A second
``unity-train`` on the same run id, with any flags, fails at once with
:class:`RunInUseError`, naming the other run's process id and command line (which the holder
writes into the lock file), and leaves the folder as it was. mlagents-learn has no such guard
(two runs in one folder overwrite each other's files); this is unity-train's own rule.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from trainers.settings import CheckpointSettings, ConfigError

__all__ = [
    "INFERENCE_PREFIX",
    "LOCK_FILE_NAME",
    "RunDirectory",
    "RunDirectoryError",
    "RunInUseError",
    "RunLock",
    "behavior_dir_name",
]

LOCK_FILE_NAME = ".unity-train.lock"
"""The lock file's name inside the run folder (not counted as content of the run)."""
INFERENCE_PREFIX = "inference-"
"""``--inference`` sessions write into ``<run>/inference-<YYYYmmdd-HHMMSS>[-N]``."""


class RunDirectoryError(ConfigError):
    """The run directory cannot be used as requested (exists, missing, ...)."""


class RunInUseError(RunDirectoryError):
    """Another process holds the run folder's lock: it is training (or evaluating) that run."""


def _holder_description(lock_path: Path) -> str:
    """``pid N (command line)`` of the lock's holder, read from the lock file.

    The holder writes its record right after taking the lock; a reader that comes in between
    waits up to half a second for it.
    """
    deadline = time.monotonic() + 0.5
    while True:
        try:
            record = json.loads(lock_path.read_text(encoding="utf-8"))
            return f"pid {int(record['pid'])} ({' '.join(map(str, record['command']))})"
        except (OSError, ValueError, KeyError, TypeError):
            if time.monotonic() >= deadline:
                return "a process that did not record its pid"
            time.sleep(0.05)


def _in_use(run_root: Path, run_id: str, lock_path: Path) -> RunInUseError:
    """The error for a run folder whose lock another process holds, naming that process."""
    return RunInUseError(
        f"run '{run_id}' in {run_root} is in use by another unity-train: "
        f"{_holder_description(lock_path)}. Wait for it to finish or stop it, or choose "
        "another --run-id; nothing was changed."
    )


@dataclass
class RunLock:
    """An exclusive ``fcntl.flock`` on ``<run>/.unity-train.lock``, held for a run's life."""

    path: Path
    _fd: int | None = field(default=None, repr=False)

    @classmethod
    def acquire(cls, run_root: Path, run_id: str) -> RunLock:
        """Take the lock of ``run_root`` (creating the folder if needed) without waiting.

        Raises:
            RunInUseError: another live process holds it; the message names that process.
        """
        run_root.mkdir(parents=True, exist_ok=True)
        path = run_root / LOCK_FILE_NAME
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise _in_use(run_root, run_id, path) from None
            except BaseException:
                os.close(fd)
                raise
            # The holder before us may have deleted the folder (a failed start) after we opened
            # the file: a lock on an unlinked file guards nothing, so take the current file's.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
            run_root.mkdir(parents=True, exist_ok=True)
        record = json.dumps({"pid": os.getpid(), "command": [sys.executable, *sys.argv]})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode("utf-8"), 0)
        return cls(path, fd)

    @staticmethod
    def ensure_free(run_root: Path, run_id: str) -> None:
        """Refuse at once a run folder whose lock another process holds, changing nothing (no
        folder or file is created): a quick check before a costly start-up, which
        :meth:`acquire` still makes for certain.

        Raises:
            RunInUseError: as :meth:`acquire`.
        """
        path = run_root / LOCK_FILE_NAME
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # no lock file: nobody holds the run
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(run_root, run_id, path) from None
        finally:
            os.close(fd)  # and with it the shared lock this check took

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    def release(self) -> None:
        """Clear the holder record and drop the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing the descriptor drops the flock


def behavior_dir_name(behavior_name: str) -> str:
    """A file-system-safe version of a behavior name (used for folders and file names)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", behavior_name) or "behavior"


@dataclass(frozen=True)
class RunDirectory:
    """Paths of one run, and (from :meth:`prepare`) the lock that keeps it to one process."""

    root: Path
    lock: RunLock | None = field(default=None, compare=False, repr=False)

    def release(self) -> None:
        """Drop the run folder's lock (at the end of the run; idempotent)."""
        if self.lock is not None:
            self.lock.release()

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
        """Lock the run folder, check the resume/force rules and create the directory.

        The lock is taken first, so a run that finds the folder in use changes nothing (with
        ``--force`` it deletes nothing). The caller must :meth:`release` the returned run when
        it ends (the lock also goes with the process).

        Raises:
            RunInUseError: another process holds the run folder (its pid and command line are
                in the message).
            RunDirectoryError: the run exists without ``--resume``/``--force``, or ``--resume``
                names a run that does not exist, or ``--initialize-from`` names a missing run.
        """
        root = settings.run_dir
        created = not root.exists()
        lock = RunLock.acquire(root, settings.run_id)
        try:
            run = cls._checked(settings, root, lock)
        except BaseException:
            lock.release()
            if created:  # leave no trace of a run that never started
                shutil.rmtree(root, ignore_errors=True)
            else:
                lock.path.unlink(missing_ok=True)
            raise
        return run

    @classmethod
    def _checked(cls, settings: CheckpointSettings, root: Path, lock: RunLock) -> RunDirectory:
        """The resume/force/initialize-from rules of :meth:`prepare`, under ``lock``."""
        exists = any(entry.name != LOCK_FILE_NAME for entry in root.iterdir())
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
            for entry in root.iterdir():  # everything but the lock we hold
                if entry.name == LOCK_FILE_NAME:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        if settings.initialize_from is not None:
            source = Path(settings.results_dir) / settings.initialize_from
            if not source.is_dir():
                raise RunDirectoryError(
                    f"--initialize-from {settings.initialize_from}: no run at {source}; give the "
                    "run id of a finished run in the same --results-dir."
                )
        run = cls(root, lock)
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
            not child.name.startswith(INFERENCE_PREFIX) and child.name != LOCK_FILE_NAME
            for child in root.iterdir()
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
