"""Demonstrations for training: Unity ``.demo`` recordings in a trainer's observation format.

:func:`load_demonstrations` reads ``demo_path`` (a ``.demo`` file or a folder of them) with
:func:`unity_gym.demo.read_demonstration`, checks every file's behavior spec against the
trainer's and converts the recorded steps to the raw observation format of the trainer's
environment (what :meth:`ObservationLayout.to_tensors` takes), so that demonstrated and played
steps go through the same networks the same way.

ML-Agents facts followed (``demo_loader.py``):

* a relative ``demo_path`` starts at the working directory; a folder contributes its files
  ending in ``.demo`` (not its subfolders); a file must end in ``.demo``;
* the spec check compares the observation shapes in order and the action spec;
* every recorded step but a file's last one becomes a demonstrated step: its observations and
  recorded actions, and as done flag whether the *next* record ends an episode.

Differences: files are taken in name order and each file's last record is dropped (ML-Agents
chains the files into one sequence and drops only the very last record). Sensors are matched in
the order of the trainer's observation entries, which for several sensors is the order of their
names (Unity's own sensor order); a warning says when both sides name their sensors differently.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trainers.common.buffers.batches import SignalBatch
from trainers.common.spaces import ActionLayout, ObservationEntry, ObservationLayout
from trainers.settings import ConfigError
from unity_gym.base_env import BehaviorSpec
from unity_gym.demo import Demonstration, read_demonstration
from unity_gym.spaces import FLAT_VECTOR_KEY, ObservationAdapter, VisualLayout

__all__ = ["Demonstrations", "demo_files", "load_demonstrations"]

logger = logging.getLogger("trainers")

DEMO_SUFFIX = ".demo"


@dataclass(frozen=True)
class Demonstrations:
    """Demonstrated agent steps, ``n`` rows, as a trainer's environment would deliver them.

    Attributes:
        observations: one raw array per observation entry of the trainer, ``(n, *raw_shape)``.
        continuous: the recorded continuous actions ``(n, size)`` float32 (``None`` without).
        discrete: the recorded discrete choices ``(n, branches)`` int64 (``None`` without).
        dones: ``(n,)`` bool: the step's action ended the episode (ML-Agents' done flag).
        files: the files read, in the order their steps appear.
    """

    observations: list[np.ndarray]
    continuous: np.ndarray | None
    discrete: np.ndarray | None
    dones: np.ndarray
    files: tuple[Path, ...]

    def __len__(self) -> int:
        return len(self.dones)

    def batch(
        self, rows: np.ndarray, layout: ObservationLayout, device: torch.device
    ) -> SignalBatch:
        """The steps ``rows`` in network format, as a :class:`SignalBatch` (zero rewards, no
        next observations)."""
        observations = layout.to_tensors([entry[rows] for entry in self.observations], device)
        return SignalBatch(
            observations=observations,
            next_observations=None,
            continuous=(
                None
                if self.continuous is None
                else torch.as_tensor(self.continuous[rows], device=device)
            ),
            discrete=(
                None
                if self.discrete is None
                else torch.as_tensor(self.discrete[rows], device=device)
            ),
            rewards=torch.zeros(len(rows), device=device),
            dones=torch.as_tensor(self.dones[rows], device=device).to(torch.float32),
        )


def demo_files(demo_path: str | Path, key: str) -> list[Path]:
    """The ``.demo`` files of ``demo_path``: the file itself, or a folder's ``.demo`` files in
    name order. A relative path starts at the working directory (as in ``mlagents-learn``).

    Args:
        demo_path: the configured path.
        key: the configuration key, named in errors (``behaviors.B.behavioral_cloning.demo_path``).

    Raises:
        ConfigError: the path does not exist, is a file not ending in ``.demo``, or a folder
            without ``.demo`` files.
    """
    path = Path(demo_path).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    if path.is_file():
        if path.suffix != DEMO_SUFFIX:
            raise ConfigError(
                f"{key}: {path} is not a .demo file; point demo_path at a Unity demonstration "
                "recording (.demo) or a folder of them."
            )
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.name.endswith(DEMO_SUFFIX) and p.is_file())
        if not files:
            raise ConfigError(
                f"{key}: the folder {path} holds no .demo files; record demonstrations into it "
                "or point demo_path at a .demo file."
            )
        return files
    raise ConfigError(
        f"{key}: {path} does not exist (a relative demo_path starts at the working directory, "
        f"{Path.cwd()}, as in mlagents-learn); check the path."
    )


def load_demonstrations(
    demo_path: str | Path,
    layout: ObservationLayout,
    action_layout: ActionLayout,
    *,
    behavior_name: str,
    key: str,
) -> Demonstrations:
    """Read, check and convert the demonstrations of ``demo_path`` for a trainer.

    Args:
        demo_path: a ``.demo`` file or a folder of them (see :func:`demo_files`).
        layout: the trainer's observation entries.
        action_layout: the trainer's actions.
        behavior_name: the trainer's behavior, named in errors.
        key: the configuration key, named in errors.

    Raises:
        ConfigError: a path problem (:func:`demo_files`), an unreadable file, a file whose
            behavior spec does not fit the trainer's (the message names both specs and the
            file), or fewer than two recorded steps in all.
    """
    parts: list[Demonstrations] = []
    files = demo_files(demo_path, key)
    for path in files:
        try:
            stat = path.stat()
            demo = _read(path, stat.st_mtime_ns, stat.st_size)
        except (OSError, ValueError) as error:
            raise ConfigError(f"{key}: {path} cannot be read as a demonstration: {error}") from None
        parts.append(_convert(demo, path, layout, action_layout, behavior_name, key))
    total = sum(len(part) for part in parts)
    if total == 0:
        raise ConfigError(
            f"{key}: {', '.join(map(str, files))} hold fewer than two recorded steps; record "
            "longer demonstrations."
        )

    def joined(arrays: list[np.ndarray | None]) -> np.ndarray | None:
        present = [array for array in arrays if array is not None]
        return np.concatenate(present) if present else None

    return Demonstrations(
        observations=[
            np.concatenate([part.observations[i] for part in parts])
            for i in range(len(layout.entries))
        ],
        continuous=joined([part.continuous for part in parts]),
        discrete=joined([part.discrete for part in parts]),
        dones=np.concatenate([part.dones for part in parts]),
        files=tuple(files),
    )


@functools.lru_cache(maxsize=8)
def _read(path: Path, mtime_ns: int, size: int) -> Demonstration:
    """A parsed file, kept while it is unchanged (GAIL and behavioral cloning of one behavior
    usually read the same recordings)."""
    del mtime_ns, size  # cache key only
    return read_demonstration(path)


def _convert(
    demo: Demonstration,
    path: Path,
    layout: ObservationLayout,
    action_layout: ActionLayout,
    behavior_name: str,
    key: str,
) -> Demonstrations:
    """One file's steps in the trainer's format (checked against its layouts first)."""
    spec = demo.behavior_spec
    adapter = _adapter_like(spec, layout)
    demo_layout = (
        None
        if adapter is None
        else ObservationLayout.from_space(adapter.space, entity_keys=adapter.variable_length_keys)
    )
    actions = spec.action_spec
    fits = (
        demo_layout is not None
        and adapter is not None
        and len(demo_layout.entries) == len(layout.entries)
        and all(
            (mine.kind, mine.raw_shape) == (theirs.kind, theirs.raw_shape)
            for mine, theirs in zip(layout.entries, demo_layout.entries, strict=True)
        )
        and actions.continuous_size == action_layout.continuous_size
        and tuple(actions.discrete_branches) == tuple(action_layout.discrete_branches)
    )
    if not fits or adapter is None or demo_layout is None:
        raise ConfigError(
            f"{key}: the demonstration {path} (behavior {demo.behavior_name}) records "
            f"{_describe_demo(spec)}, but behavior {behavior_name} has "
            f"{_describe_trainer(layout, action_layout)}; use demonstrations recorded from this "
            "behavior's agent."
        )
    _warn_on_renamed_sensors(spec, layout, demo_layout, path)
    rows = len(demo) - 1  # a step's done flag comes from the next record (ML-Agents)
    if rows <= 0:
        return Demonstrations(
            observations=[
                np.zeros((0, *entry.raw_shape), entry.raw_dtype) for entry in layout.entries
            ],
            continuous=None,
            discrete=None,
            dones=np.zeros(0, dtype=bool),
            files=(path,),
        )
    sensors = [demo.observations(i)[:rows] for i in range(len(spec.observation_specs))]
    raw = demo_layout.split(adapter.batch_from_unity(sensors))
    observations = [
        np.asarray(array, dtype=entry.raw_dtype)
        for array, entry in zip(raw, layout.entries, strict=True)
    ]
    return Demonstrations(
        observations=observations,
        continuous=(
            demo.continuous_actions()[:rows].astype(np.float32)
            if action_layout.has_continuous
            else None
        ),
        discrete=(
            demo.discrete_actions()[:rows].astype(np.int64) if action_layout.has_discrete else None
        ),
        dones=demo.dones()[1:].copy(),
        files=(path,),
    )


def _adapter_like(spec: BehaviorSpec, layout: ObservationLayout) -> ObservationAdapter | None:
    """The observation adapter that presents ``spec``'s sensors as the trainer's environment
    presents its own (camera layout, flattened vectors); ``None`` when ``spec`` cannot be
    presented so (e.g. a legacy image shape)."""
    images = [entry for entry in layout.entries if entry.kind == "image"]
    visual: VisualLayout = "float_chw" if images and not images[0].channels_last else "uint8_hwc"
    flatten = layout.is_dict and FLAT_VECTOR_KEY in layout.names
    try:
        return ObservationAdapter(spec.observation_specs, flatten_obs=flatten, visual_obs=visual)
    except ValueError:
        return None


def _warn_on_renamed_sensors(
    spec: BehaviorSpec, layout: ObservationLayout, demo_layout: ObservationLayout, path: Path
) -> None:
    named = all(s.name for s in spec.observation_specs)
    if layout.is_dict and named and demo_layout.names != layout.names:
        logger.warning(
            "The sensors of demonstration %s (%s) are named differently from the behavior's "
            "(%s); they are matched in this order.",
            path,
            ", ".join(demo_layout.names),
            ", ".join(layout.names),
        )


def _describe_demo(spec: BehaviorSpec) -> str:
    shapes = ", ".join(
        f"{s.name} {tuple(s.shape)}" if s.name else str(tuple(s.shape))
        for s in spec.observation_specs
    )
    actions = spec.action_spec
    return (
        f"observations [{shapes}] and actions "
        f"{_describe_actions(actions.continuous_size, tuple(actions.discrete_branches))}"
    )


def _describe_trainer(layout: ObservationLayout, action_layout: ActionLayout) -> str:
    def shape(entry: ObservationEntry) -> tuple[int, ...]:
        # images as Unity sends them (channels first), like the demonstration's specs
        return entry.network_shape if entry.kind == "image" else entry.raw_shape

    shapes = ", ".join(
        f"{entry.name} {shape(entry)}" if layout.is_dict else str(shape(entry))
        for entry in layout.entries
    )
    actions = _describe_actions(action_layout.continuous_size, action_layout.discrete_branches)
    return f"observations [{shapes}] and actions {actions}"


def _describe_actions(continuous: int, branches: tuple[int, ...]) -> str:
    return f"(continuous {continuous}, discrete branches {branches})"
