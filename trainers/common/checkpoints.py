"""Checkpoint files and ``run_logs/training_status.json``.

Per behavior, checkpoints are written to ``<run>/<behavior>/<behavior>-<step>.pt`` (with the
matching ``.onnx``) and mirrored to ``<run>/<behavior>/checkpoint.pt`` (what ``--resume`` loads).
Every file is written atomically: to a temporary file in the same directory, flushed, then moved
over the target with ``os.replace``, so a crash never leaves a half-written checkpoint.
Checkpoints are loaded with ``torch.load(..., weights_only=True)`` only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import torch

__all__ = [
    "CheckpointManager",
    "TrainingStatus",
    "atomic_copy",
    "atomic_target",
    "atomic_write",
    "load_checkpoint",
    "save_checkpoint",
]

LATEST_NAME = "checkpoint.pt"
STATUS_FORMAT_VERSION = "0.3.0"


@contextlib.contextmanager
def atomic_write(path: Path) -> Iterator[BinaryIO]:
    """Open a temporary file next to ``path``; on success it replaces ``path`` atomically.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
        raise ValueError(f"{path} is not a readable checkpoint: {exc}") from exc
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a unity-train checkpoint (top level is not a dict).")
    return state


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
        """Restore the history of a previous run (missing file: start empty)."""
        if not self.path.is_file():
            return
        with self._lock:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            metadata = self._data["metadata"]
            self._data = loaded
            self._data["metadata"] = {**loaded.get("metadata", {}), **metadata}

    def behavior(self, name: str) -> dict[str, Any]:
        """A copy of the record of one behavior (``{}`` if none)."""
        with self._lock:
            return json.loads(json.dumps(self._data.get(name, {})))

    def update_behavior(self, name: str, **fields: Any) -> None:
        """Set top-level fields of a behavior's record and save."""
        with self._lock:
            self._data.setdefault(name, {"checkpoints": []}).update(fields)
            _write_json(self.path, self._data)

    def save(self) -> None:
        """Write the file now."""
        with self._lock:
            _write_json(self.path, self._data)


class CheckpointManager:
    """Writes, mirrors and prunes one behavior's checkpoints.

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
        record = self.status.behavior(self.status_key)
        history = [c for c in record.get("checkpoints", []) if c.get("file_path") != str(path)]
        history.append(entry)
        while len(history) > self.keep_checkpoints:
            self._delete(history.pop(0))
        fields: dict[str, Any] = {"checkpoints": history, "step": step}
        if final:
            fields["final_checkpoint"] = entry
        self.status.update_behavior(self.status_key, **fields)
        self._prune_untracked(history)
        return path

    def _delete(self, entry: dict[str, Any]) -> None:
        for name in [entry.get("file_path"), *entry.get("auxillary_file_paths", [])]:
            if name:
                with contextlib.suppress(FileNotFoundError):
                    Path(name).unlink()

    def _prune_untracked(self, history: list[dict[str, Any]]) -> None:
        """Delete ``<prefix>-<step>.pt/.onnx`` files the history no longer lists."""
        kept = {Path(c["file_path"]).name for c in history}
        kept |= {Path(p).name for c in history for p in c.get("auxillary_file_paths", [])}
        for pattern in (f"{self.file_prefix}-*.pt", f"{self.file_prefix}-*.onnx"):
            for candidate in self.directory.glob(pattern):
                suffix = candidate.stem[len(self.file_prefix) + 1 :]
                if suffix.isdigit() and candidate.name not in kept:
                    candidate.unlink(missing_ok=True)
