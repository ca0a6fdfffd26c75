"""Actions and step results shared between the vector env and its workers without pickling.

All per-slot arrays of a vector env live in one block of :mod:`multiprocessing.shared_memory`,
described by a picklable :class:`BufferLayout`: observations (``obs:<key>``), final observations
(``final_obs:<key>``, same-step mode), ``reward``/``terminated``/``truncated``, the info columns
(``info:<name>``), the ``ended`` flags and final agent ids of same-step mode, and the actions
(``action:continuous``/``action:discrete``). The main process creates the block; each worker
attaches it by name, reads the actions of its slots and writes their results into its rows, so
observations decoded in a worker reach the trainer as plain memory reads and the messages on the
pipes stay tiny. The same class also works over private numpy arrays (a worker's staging area,
or the vector env's copy when workers cannot share memory).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np
from gymnasium import spaces

__all__ = [
    "ACTION_CONTINUOUS",
    "ACTION_DISCRETE",
    "ENDED",
    "FINAL_AGENT_ID",
    "FINAL_OBS_PREFIX",
    "INFO_PREFIX",
    "OBS_PREFIX",
    "ArraySpec",
    "BufferLayout",
    "StepBuffers",
    "observation_arrays",
]

OBS_PREFIX = "obs:"
"""Name prefix of the observation arrays (followed by the observation key)."""
FINAL_OBS_PREFIX = "final_obs:"
"""Name prefix of the final-observation arrays (same-step autoreset)."""
INFO_PREFIX = "info:"
"""Name prefix of the per-slot info columns (``info:agent_id``...)."""
ENDED = "ended"
"""Bool per slot: an episode ended during the step (same-step: its final observation is set)."""
FINAL_AGENT_ID = "final_agent_id"
"""Agent whose episode ended (same-step autoreset)."""
ACTION_CONTINUOUS = "action:continuous"
"""float32 continuous actions of each slot."""
ACTION_DISCRETE = "action:discrete"
"""int32 discrete actions of each slot."""
_ALIGNMENT = 64


@dataclass(frozen=True)
class ArraySpec:
    """One named array of the buffers: ``num_rows`` rows of ``shape`` values of ``dtype``."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def row_bytes(self) -> int:
        """Bytes of one row."""
        return int(np.dtype(self.dtype).itemsize * math.prod(self.shape))


@dataclass(frozen=True)
class BufferLayout:
    """The arrays of a vector env's step buffers and their number of rows (one per slot)."""

    num_rows: int
    arrays: tuple[ArraySpec, ...]

    def offsets(self) -> dict[str, int]:
        """Byte offset of each array in the block (64-byte aligned)."""
        offsets: dict[str, int] = {}
        position = 0
        for spec in self.arrays:
            offsets[spec.name] = position
            size = spec.row_bytes() * self.num_rows
            position += -(-size // _ALIGNMENT) * _ALIGNMENT
        return offsets

    def nbytes(self) -> int:
        """Size of the whole block in bytes (at least 1)."""
        total = 0
        for spec in self.arrays:
            total += -(-(spec.row_bytes() * self.num_rows) // _ALIGNMENT) * _ALIGNMENT
        return max(total, 1)

    @staticmethod
    def for_spaces(
        num_rows: int,
        single_observation_space: spaces.Space,
        *,
        with_final_obs: bool,
        continuous_size: int = 0,
        discrete_size: int = 0,
        mask_size: int = 0,
    ) -> BufferLayout:
        """The layout of a vector env whose slots observe ``single_observation_space``.

        Args:
            num_rows: number of slots.
            single_observation_space: a ``Box`` or a ``Dict`` of ``Box`` es.
            with_final_obs: also hold final observations and ended flags (same-step mode).
            continuous_size: continuous actions per slot.
            discrete_size: discrete branches per slot.
            mask_size: length of the flat action mask (0: no ``info:action_mask``).

        Raises:
            TypeError: for any other observation space.
        """
        observations = [
            ArraySpec(f"{OBS_PREFIX}{key}", shape, dtype)
            for key, shape, dtype in observation_arrays(single_observation_space)
        ]
        arrays = list(observations)
        if with_final_obs:
            arrays += [
                ArraySpec(FINAL_OBS_PREFIX + spec.name[len(OBS_PREFIX) :], spec.shape, spec.dtype)
                for spec in observations
            ]
            arrays += [ArraySpec(ENDED, (), "bool"), ArraySpec(FINAL_AGENT_ID, (), "int64")]
        arrays += [
            ArraySpec("reward", (), "float64"),
            ArraySpec("terminated", (), "bool"),
            ArraySpec("truncated", (), "bool"),
            ArraySpec(f"{INFO_PREFIX}agent_id", (), "int64"),
            ArraySpec(f"{INFO_PREFIX}group_id", (), "int64"),
            ArraySpec(f"{INFO_PREFIX}group_reward", (), "float64"),
            ArraySpec(f"{INFO_PREFIX}vacant", (), "bool"),
            ArraySpec(ACTION_CONTINUOUS, (continuous_size,), "float32"),
            ArraySpec(ACTION_DISCRETE, (discrete_size,), "int32"),
        ]
        if mask_size:
            arrays.append(ArraySpec(f"{INFO_PREFIX}action_mask", (mask_size,), "bool"))
        return BufferLayout(num_rows, tuple(arrays))


def observation_arrays(space: spaces.Space) -> Iterator[tuple[str, tuple[int, ...], str]]:
    """``(key, shape, dtype)`` of each array an observation of ``space`` is made of.

    A ``Box`` is one array with key ``""``; a ``Dict`` gives one array per (Box) entry.

    Raises:
        TypeError: for spaces other than ``Box`` and ``Dict`` of ``Box`` es.
    """
    if isinstance(space, spaces.Box):
        yield "", tuple(space.shape), np.dtype(space.dtype).str
        return
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            if not isinstance(sub, spaces.Box):
                raise TypeError(
                    f"Observation {key!r} has space {sub}; the vector env stores Box observations "
                    "only."
                )
            yield key, tuple(sub.shape), np.dtype(sub.dtype).str
        return
    raise TypeError(f"Unsupported observation space {space}; expected a Box or a Dict of Boxes.")


class StepBuffers(Mapping[str, np.ndarray]):
    """The arrays of a :class:`BufferLayout`, each shaped ``(num_rows, *shape)``.

    Create with :meth:`create_shared` (owner), :meth:`attach_shared` (a worker process) or
    :meth:`allocate` (private memory). Reading is ``buffers["reward"]``; :meth:`rows` gives views
    of a range of slots.
    """

    def __init__(
        self,
        layout: BufferLayout,
        arrays: dict[str, np.ndarray],
        memory: shared_memory.SharedMemory | None = None,
        *,
        owner: bool = False,
    ) -> None:
        self.layout = layout
        self._arrays = arrays
        self._memory = memory
        self._owner = owner

    @classmethod
    def allocate(cls, layout: BufferLayout) -> StepBuffers:
        """Zeroed buffers in private memory."""
        arrays = {
            spec.name: np.zeros((layout.num_rows, *spec.shape), dtype=np.dtype(spec.dtype))
            for spec in layout.arrays
        }
        return cls(layout, arrays)

    @classmethod
    def create_shared(cls, layout: BufferLayout) -> StepBuffers:
        """New zeroed buffers in a shared-memory block; the caller owns (unlinks) it."""
        memory = shared_memory.SharedMemory(create=True, size=layout.nbytes())
        buffers = cls(layout, cls._views(layout, memory), memory, owner=True)
        for array in buffers.values():
            array.fill(0)
        return buffers

    @classmethod
    def attach_shared(cls, layout: BufferLayout, name: str) -> StepBuffers:
        """Attach the shared block ``name`` created by another process with the same layout.

        Raises:
            FileNotFoundError: if no such block exists (its owner closed it).
        """
        memory = shared_memory.SharedMemory(name=name)
        return cls(layout, cls._views(layout, memory), memory)

    @staticmethod
    def _views(layout: BufferLayout, memory: shared_memory.SharedMemory) -> dict[str, np.ndarray]:
        offsets = layout.offsets()
        return {
            spec.name: np.ndarray(
                (layout.num_rows, *spec.shape),
                dtype=np.dtype(spec.dtype),
                buffer=memory.buf,
                offset=offsets[spec.name],
            )
            for spec in layout.arrays
        }

    @property
    def shared_name(self) -> str | None:
        """Name of the shared block (None for private memory)."""
        return None if self._memory is None else self._memory.name

    def rows(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """Views of rows ``[start, stop)`` of every array."""
        return {name: array[start:stop] for name, array in self._arrays.items()}

    def keys_under(self, prefix: str) -> list[str]:
        """Names present under ``prefix``, without it (``""`` for a Box observation)."""
        return [name[len(prefix) :] for name in self._arrays if name.startswith(prefix)]

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def close(self) -> None:
        """Drop the views and release the shared block (unlinking it if this side owns it)."""
        self._arrays = {}
        memory, self._memory = self._memory, None
        if memory is None:
            return
        if self._owner:
            with contextlib.suppress(FileNotFoundError):
                memory.unlink()
        # Views handed out may still use the mapping; it then goes away with the last of them.
        with contextlib.suppress(BufferError):
            memory.close()
