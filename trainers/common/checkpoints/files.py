"""Checkpoint files and ``run_logs/training_status.json``.

Per behavior, checkpoints are written to ``<run>/<behavior>/<behavior>-<step>.pt`` (with the
matching ``.onnx``) and mirrored to ``<run>/<behavior>/checkpoint.pt``. Every file is written
atomically: to a temporary file in the same directory, flushed, then moved over the target with
``os.replace``, so a crash never leaves a half-written checkpoint. Checkpoints are loaded with
``torch.load(..., weights_only=True)`` only.

``--resume`` loads the newest readable checkpoint (:func:`load_newest_checkpoint`):
``checkpoint.pt``, or a ``<behavior>-<step>.pt`` of a higher step (a save cut short before the
mirror was written), or, when these cannot be read (a file damaged after it was written), the
newest ``<behavior>-<step>.pt`` that can.

The checkpoint history in the status file is kept in step with the files on disk: each save lists
the ``<behavior>-<step>.pt`` files older than the new one (a file that a killed run wrote but did
not record is listed too; an entry whose file is gone is dropped), keeps the newest
``keep_checkpoints`` and deletes every other ``<behavior>-<step>.pt``/``.onnx``, including files of
higher steps left by a run that was resumed from an older checkpoint. Temporary files of writes
cut short by a kill are deleted too.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import torch

from unity_gym.temp_files import create_temp_beside

__all__ = [
    "CheckpointManager",
    "LoadedCheckpoint",
    "TrainingStatus",
    "atomic_copy",
    "atomic_target",
    "atomic_write",
    "load_checkpoint",
    "load_newest_checkpoint",
    "save_checkpoint",
    "step_checkpoint_files",
]

logger = logging.getLogger("trainers")

LATEST_NAME = "checkpoint.pt"
STATUS_FORMAT_VERSION = "0.3.0"


@contextlib.contextmanager
def atomic_write(path: Path) -> Iterator[BinaryIO]:
    """Open a temporary file next to ``path``; on success it replaces ``path`` atomically.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = create_temp_beside(path)  # 0666 & ~umask, not mkstemp's 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


@contextlib.contextmanager
def atomic_target(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path`` for a writer that needs a file name.

    When the block succeeds the temporary file replaces ``path`` atomically; on any exception
    it is removed and ``path`` is left untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = create_temp_beside(path)  # 0666 & ~umask, not mkstemp's 0600
    os.close(fd)
    try:
        yield Path(tmp_name)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def atomic_copy(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` atomically."""
    with atomic_write(target) as handle, source.open("rb") as reader:
        shutil.copyfileobj(reader, handle)


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write a checkpoint dict (tensors, numbers, strings, lists, dicts) atomically."""
    with atomic_write(path) as handle:
        torch.save(state, handle)


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (``weights_only=True``).

    Raises:
        FileNotFoundError: there is no checkpoint at ``path``.
        ValueError: the file is not a readable checkpoint.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path} is not a readable checkpoint ({_load_failure(exc)})") from exc
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a unity-train checkpoint (top level is not a dict).")
    return state


def _load_failure(exc: Exception) -> str:
    """A one-line reason for a failed ``torch.load``."""
    if isinstance(exc, pickle.UnpicklingError):
        # torch's text suggests weights_only=False, which must never be done here
        return "its data is damaged or holds objects other than tensors and plain values"
    if isinstance(exc, EOFError):
        return "the file is empty or cut short"
    first_line = str(exc).strip().split("\n", 1)[0]
    if len(first_line) > 160:
        first_line = first_line[:157] + "..."
    return f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__


def step_checkpoint_files(directory: Path, file_prefix: str) -> list[tuple[int, Path]]:
    """The ``<file_prefix>-<step>.pt`` files in ``directory`` as ``(step, path)``, oldest first."""
    found: list[tuple[int, Path]] = []
    for candidate in directory.glob(f"{file_prefix}-*.pt"):
        suffix = candidate.stem[len(file_prefix) + 1 :]
        if suffix.isdigit() and candidate.is_file():
            found.append((int(suffix), candidate))
    return sorted(found)


@dataclass(frozen=True)
class LoadedCheckpoint:
    """A checkpoint read for ``--resume``.

    Attributes:
        path: the file it was read from.
        state: its contents (passed the ``check`` of :func:`load_newest_checkpoint`).
        damaged: why each newer file could not be used, one message per file (naming it).
    """

    path: Path
    state: dict[str, Any]
    damaged: tuple[str, ...] = ()


def load_newest_checkpoint(
    directory: Path, file_prefix: str, check: Callable[[dict[str, Any], Path], None]
) -> LoadedCheckpoint:
    """Read the newest readable checkpoint of one behavior (see the module docstring).

    ``checkpoint.pt`` is tried first; ``<file_prefix>-<step>.pt`` files are tried newest first,
    those of a step not above ``checkpoint.pt``'s only if it cannot be read. A file is unreadable
    when :func:`load_checkpoint` fails, ``check(state, path)`` raises :class:`ValueError` or the
    state has no integer ``step``; any other error of ``check`` propagates.

    Raises:
        FileNotFoundError: there is no checkpoint file at all.
        ValueError: no checkpoint file can be read (the message says why for each).
    """
    damaged: list[str] = []

    def read(path: Path) -> dict[str, Any] | None:
        try:
            state = load_checkpoint(path)
            check(state, path)
            if not isinstance(state.get("step"), int):
                raise ValueError(f"{path} is damaged (it has no step count)")
        except ValueError as exc:
            damaged.append(str(exc))
            return None
        return state

    latest = directory / LATEST_NAME
    latest_state = read(latest) if latest.is_file() else None
    floor = latest_state["step"] if latest_state is not None else -1
    for step, path in reversed(step_checkpoint_files(directory, file_prefix)):
        if step <= floor:
            break
        state = read(path)
        if state is not None:
            return LoadedCheckpoint(path, state, tuple(damaged))
    if latest_state is not None:
        return LoadedCheckpoint(latest, latest_state, tuple(damaged))
    if not damaged:
        raise FileNotFoundError(f"no checkpoint at {latest} and no {file_prefix}-<step>.pt")
    raise ValueError("no readable checkpoint: " + "; ".join(damaged))


def _write_json(path: Path, data: Any) -> None:
    with atomic_write(path) as handle:
        handle.write(json.dumps(data, indent=4).encode("utf-8"))


class TrainingStatus:
    """``run_logs/training_status.json``: per-behavior checkpoint history and step counts.

    Thread-safe; every change is written to disk atomically.
    """

    def __init__(self, path: Path, metadata: dict[str, str]) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {"metadata": {"stats_format_version": STATUS_FORMAT_VERSION}}
        self._data["metadata"].update(metadata)

    def load(self) -> None:
        """Restore the history of a previous run.

        A missing file starts empty; so does a file that cannot be read, with a warning (the
        checkpoint history is then rebuilt from the files on disk at the next save).
        """
        if not self.path.is_file():
            return
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(loaded, dict):
                raise ValueError("the top level is not an object")
        except (OSError, ValueError) as exc:  # JSON and decoding errors are ValueErrors
            logger.warning(
                "%s cannot be read (%s); starting with an empty checkpoint history, rebuilt "
                "from the checkpoint files at the next save.",
                self.path,
                exc,
            )
            return
        with self._lock:
            metadata = self._data["metadata"]
            self._data = loaded
            self._data["metadata"] = {**loaded.get("metadata", {}), **metadata}

    def behavior(self, name: str) -> dict[str, Any]:
        """A copy of the record of one behavior (``{}`` if none)."""
        with self._lock:
            return json.loads(json.dumps(self._data.get(name, {})))

    def update_behavior(self, name: str, *, remove: tuple[str, ...] = (), **fields: Any) -> None:
        """Set top-level fields of a behavior's record, delete those named in ``remove``, and
        save."""
        with self._lock:
            record = self._data.setdefault(name, {"checkpoints": []})
            record.update(fields)
            for key in remove:
                record.pop(key, None)
            _write_json(self.path, self._data)

    def parameter_state(self, name: str, key: str) -> Any:
        """``key`` of environment parameter ``name``'s record (ML-Agents keeps lesson numbers
        as top-level ``{"<parameter>": {"lesson_num": N}}``); None if absent."""
        with self._lock:
            record = self._data.get(name)
            return record.get(key) if isinstance(record, dict) else None

    def set_parameter_state(self, name: str, key: str, value: Any) -> None:
        """Set ``key`` of environment parameter ``name``'s record, and save."""
        with self._lock:
            record = self._data.get(name)
            if not isinstance(record, dict):
                record = self._data[name] = {}
            record[key] = value
            _write_json(self.path, self._data)

    def save(self) -> None:
        """Write the file now."""
        with self._lock:
            _write_json(self.path, self._data)


class CheckpointManager:
    """Writes, mirrors and prunes one behavior's checkpoints (see the module docstring).

    Args:
        directory: ``<run>/<behavior>``.
        file_prefix: file-name prefix (the behavior name, made filesystem-safe).
        keep_checkpoints: at most this many ``<prefix>-<step>.pt`` files are kept.
        status: the run's training status (checkpoint history is recorded there).
        status_key: the behavior's key in the status file.
    """

    def __init__(
        self,
        directory: Path,
        file_prefix: str,
        keep_checkpoints: int,
        status: TrainingStatus,
        status_key: str,
    ) -> None:
        self.directory = directory
        self.file_prefix = file_prefix
        self.keep_checkpoints = keep_checkpoints
        self.status = status
        self.status_key = status_key

    @property
    def latest_path(self) -> Path:
        """The file ``--resume`` loads."""
        return self.directory / LATEST_NAME

    def save(
        self,
        state: dict[str, Any],
        step: int,
        export_onnx: Callable[[Path], None] | None,
        mean_reward: float | None,
        *,
        final: bool = False,
    ) -> Path:
        """Write checkpoint ``<prefix>-<step>.pt`` (+ ``.onnx``), mirror it, prune old ones."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.file_prefix}-{step}.pt"
        save_checkpoint(state, path)
        save_checkpoint(state, self.latest_path)
        aux: list[str] = []
        if export_onnx is not None:
            onnx_path = path.with_suffix(".onnx")
            export_onnx(onnx_path)
            aux.append(str(onnx_path))
        entry = {
            "steps": step,
            "file_path": str(path),
            "reward": mean_reward,
            "creation_time": time.time(),
            "auxillary_file_paths": aux,  # ML-Agents' spelling, kept for tool compatibility
        }
        history = [c for c in self._history_on_disk() if c["steps"] < step]
        history = [*history, entry][-self.keep_checkpoints :]
        fields: dict[str, Any] = {"checkpoints": history, "step": step}
        if final:
            fields["final_checkpoint"] = entry
        self.status.update_behavior(self.status_key, **fields)
        self._delete_unlisted(history)
        self._delete_stale_temporaries()
        return path

    def resumed_at(self, step: int) -> None:
        """Make the status agree with a run resumed from a checkpoint of ``step``.

        The history lists the ``<prefix>-<step>.pt`` files on disk up to ``step``; the record's
        step becomes ``step``, and a final checkpoint of a higher step is forgotten (files of
        higher steps, e.g. damaged ones skipped by ``--resume``, are deleted at the next save).
        """
        history = [c for c in self._history_on_disk() if c["steps"] <= step]
        final = self.status.behavior(self.status_key).get("final_checkpoint")
        final_step = final.get("steps") if isinstance(final, dict) else None
        too_new = final is not None and not (isinstance(final_step, int) and final_step <= step)
        remove = ("final_checkpoint",) if too_new else ()
        self.status.update_behavior(self.status_key, remove=remove, checkpoints=history, step=step)

    def _history_on_disk(self) -> list[dict[str, Any]]:
        """An entry per ``<prefix>-<step>.pt`` file on disk, oldest first.

        The status's entry where it lists the file (matched by file name, as the run folder may
        have moved), otherwise one made from the file (a save cut short before it was recorded).
        """
        record = self.status.behavior(self.status_key)
        listed = {
            Path(c["file_path"]).name: c
            for c in record.get("checkpoints", [])
            if isinstance(c, dict) and isinstance(c.get("file_path"), str)
        }
        history: list[dict[str, Any]] = []
        for step, path in step_checkpoint_files(self.directory, self.file_prefix):
            entry = listed.get(path.name)
            if entry is None:
                onnx_path = path.with_suffix(".onnx")
                entry = {
                    "steps": step,
                    "file_path": str(path),
                    "reward": None,
                    "creation_time": path.stat().st_mtime,
                    "auxillary_file_paths": [str(onnx_path)] if onnx_path.is_file() else [],
                }
            else:
                listed_aux = entry.get("auxillary_file_paths")
                aux = [
                    str(self.directory / Path(name).name)
                    for name in (listed_aux if isinstance(listed_aux, list) else [])
                    if isinstance(name, str)
                ]
                entry = {
                    **entry,
                    "steps": step,
                    "file_path": str(path),
                    "auxillary_file_paths": aux,
                }
            history.append(entry)
        return history

    def _delete_stale_temporaries(self) -> None:
        """Delete temporary files of checkpoint writes that a killed run left behind (this
        manager's own writes are complete when it is called)."""
        for pattern in (f".{self.file_prefix}-*.tmp", f".{LATEST_NAME}.*.tmp"):
            for candidate in self.directory.glob(pattern):
                candidate.unlink(missing_ok=True)

    def _delete_unlisted(self, history: list[dict[str, Any]]) -> None:
        """Delete the ``<prefix>-<step>.pt/.onnx`` files ``history`` does not list."""
        kept = {Path(c["file_path"]).name for c in history}
        kept |= {Path(p).name for c in history for p in c.get("auxillary_file_paths", [])}
        for pattern in (f"{self.file_prefix}-*.pt", f"{self.file_prefix}-*.onnx"):
            for candidate in self.directory.glob(pattern):
                suffix = candidate.stem[len(self.file_prefix) + 1 :]
                if suffix.isdigit() and candidate.name not in kept:
                    candidate.unlink(missing_ok=True)
