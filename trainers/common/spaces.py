"""Gymnasium spaces seen by a trainer: observation entries and the action layout.

A trainer never looks at a Gymnasium space directly. :class:`ObservationLayout` turns the
single-slot observation space into an ordered list of entries (one per sensor: the keys of a
``Dict`` space in its order, else the single space); entry ``i`` becomes the network input
``obs_i`` (the ONNX input name). Network inputs are float32: vectors ``(batch, size)``, images
``(batch, channels, height, width)`` with values in ``[0, 1]`` -- the format Unity feeds an ONNX
model -- and variable-length entities ``(batch, max_entities, entity_size)`` (absent entities are
rows of zeros). Raw environment arrays (e.g. uint8 HWC images) are kept as they are in buffers and
converted by :meth:`ObservationLayout.to_tensors`.

:class:`ActionLayout` describes the policy's action output (``continuous_size`` floats in
``[-1, 1]`` plus one index per discrete branch) and converts it to the environment's action space.
Action masks follow the Gymnasium convention: ``info["action_mask"]`` is one flat bool array per
slot (branches concatenated), ``True`` = the action is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import torch
from gymnasium import spaces

from trainers.settings import ConfigError

__all__ = ["ActionLayout", "ObservationEntry", "ObservationLayout", "UnsupportedSpaceError"]

EntryKind = Literal["vector", "image", "one_hot", "entities"]


class UnsupportedSpaceError(ConfigError):
    """The environment uses an observation or action space the trainers cannot handle."""


@dataclass(frozen=True)
class ObservationEntry:
    """One observation input (one sensor).

    Attributes:
        name: the ``Dict`` key, or ``"obs"`` for a non-dict space.
        kind: ``vector`` (float features), ``image`` (3-D), ``one_hot`` (integer categories) or
            ``entities`` (a variable-length sensor: ``(max_entities, entity_size)``, a row of
            zeros for each absent entity; networks embed and attend over the present ones).
        raw_shape: shape of one slot's raw observation as the environment returns it.
        network_shape: shape of one sample as the network takes it (``(size,)``, ``(C, H, W)``
            or ``(max_entities, entity_size)``).
        channels_last: images only: the raw array is HWC (converted to CHW for the network).
        scale: images only: divide raw values by this (255 for uint8 images, else 1).
        categories: one-hot only: the number of categories of each integer component.
        goal: vector only: the entry describes the task (a ``GOAL_SIGNAL`` sensor); networks
            with ``goal_conditioning_type: hyper`` are conditioned on it.
    """

    name: str
    kind: EntryKind
    raw_shape: tuple[int, ...]
    network_shape: tuple[int, ...]
    raw_dtype: np.dtype[Any]
    channels_last: bool = False
    scale: float = 1.0
    categories: tuple[int, ...] = ()
    offsets: tuple[int, ...] = ()
    goal: bool = False


@dataclass(frozen=True)
class ObservationLayout:
    """Ordered observation entries of one slot; converts environment batches for the network."""

    entries: tuple[ObservationEntry, ...]
    is_dict: bool

    @classmethod
    def from_space(
        cls,
        space: spaces.Space[Any],
        goal_keys: Sequence[str] = (),
        entity_keys: Sequence[str] = (),
    ) -> ObservationLayout:
        """Build the layout of a single-slot observation space.

        Args:
            space: the observation space of one slot.
            goal_keys: ``Dict`` keys of goal-signal entries (``metadata["goal_signal_keys"]`` of
                ``unity_gym``'s environments); only vector entries can be goals.
            entity_keys: keys of variable-length entries (``metadata["variable_length_keys"]``);
                each must be a 2-D float Box ``(max_entities, entity_size)``. For a space that
                is not a ``Dict``, any key makes its one entry variable-length.

        Raises:
            UnsupportedSpaceError: nested ``Dict``/``Tuple`` spaces or other unsupported spaces.
        """
        if isinstance(space, spaces.Dict):
            if not space.spaces:
                raise UnsupportedSpaceError("the observation space is an empty Dict.")
            entries = tuple(_entry_for(str(key), sub) for key, sub in space.spaces.items())
            entries = tuple(
                replace(entry, goal=True)
                if entry.name in goal_keys and entry.kind == "vector"
                else entry
                for entry in entries
            )
            entries = tuple(
                _as_entities(entry) if entry.name in entity_keys else entry for entry in entries
            )
            return cls(entries, is_dict=True)
        entry = _entry_for("obs", space)
        return cls((_as_entities(entry) if entity_keys else entry,), is_dict=False)

    @property
    def names(self) -> list[str]:
        """Entry names in input order."""
        return [entry.name for entry in self.entries]

    def split(self, batch: Any) -> list[np.ndarray]:
        """Split a batched environment observation into per-entry arrays (copies).

        Copies protect buffers from environments that reuse their output arrays.
        """
        if self.is_dict:
            return [np.array(batch[entry.name], copy=True) for entry in self.entries]
        return [np.array(batch, copy=True)]

    def stack_single(self, observations: list[Any]) -> list[np.ndarray]:
        """Stack per-slot (unbatched) observations into per-entry batch arrays."""
        if self.is_dict:
            return [
                np.stack([np.asarray(obs[entry.name]) for obs in observations])
                for entry in self.entries
            ]
        return [np.stack([np.asarray(obs) for obs in observations])]

    def to_tensors(
        self, raw: Sequence[np.ndarray | torch.Tensor], device: torch.device
    ) -> list[torch.Tensor]:
        """Convert raw per-entry batches (arrays or tensors) to network-format float32 tensors."""
        tensors = []
        for entry, array in zip(self.entries, raw, strict=True):
            tensor = torch.as_tensor(array, device=device)
            batch = tensor.shape[0]
            if entry.kind == "vector":
                tensor = tensor.reshape(batch, -1).to(torch.float32)
            elif entry.kind == "entities":
                tensor = tensor.reshape(batch, *entry.network_shape).to(torch.float32)
            elif entry.kind == "image":
                if entry.channels_last:
                    tensor = tensor.permute(0, 3, 1, 2)
                tensor = tensor.to(torch.float32)
                if entry.scale != 1.0:
                    tensor = tensor / entry.scale
            else:
                tensor = _one_hot(tensor.reshape(batch, -1), entry)
            tensors.append(tensor)
        return tensors

    def dummy_inputs(self, batch: int = 1) -> list[torch.Tensor]:
        """Zero network inputs (for ONNX export and shape checks)."""
        return [torch.zeros((batch, *entry.network_shape)) for entry in self.entries]


def _one_hot(indices: torch.Tensor, entry: ObservationEntry) -> torch.Tensor:
    total = sum(entry.categories)
    out = torch.zeros((indices.shape[0], total), dtype=torch.float32, device=indices.device)
    offsets = torch.as_tensor(entry.offsets, dtype=torch.long, device=indices.device)
    columns = indices.to(torch.long) + offsets
    out.scatter_(1, columns, 1.0)
    return out


def _as_entities(entry: ObservationEntry) -> ObservationEntry:
    """``entry`` (a 2-D float vector entry) as a variable-length entry.

    Raises:
        UnsupportedSpaceError: the entry is not a 2-D Box of floats.
    """
    if entry.kind != "vector" or len(entry.raw_shape) != 2 or min(entry.raw_shape) < 1:
        raise UnsupportedSpaceError(
            f"observation {entry.name!r} is named variable-length, but its space has shape "
            f"{entry.raw_shape} ({entry.kind}); a variable-length sensor is a 2-D Box "
            "(max_entities, entity_size)."
        )
    return replace(entry, kind="entities", network_shape=entry.raw_shape)


def _entry_for(name: str, space: spaces.Space[Any]) -> ObservationEntry:
    if isinstance(space, spaces.Box):
        shape = tuple(int(d) for d in space.shape)
        if len(shape) == 3:
            return _image_entry(name, space, shape)
        size = int(np.prod(shape)) if shape else 1
        return ObservationEntry(name, "vector", shape, (size,), space.dtype)
    if isinstance(space, spaces.Discrete):
        return ObservationEntry(
            name,
            "one_hot",
            (),
            (int(space.n),),
            space.dtype,
            categories=(int(space.n),),
            offsets=(-int(space.start),),
        )
    if isinstance(space, spaces.MultiDiscrete):
        nvec = [int(n) for n in np.asarray(space.nvec).reshape(-1)]
        starts = [int(s) for s in np.asarray(space.start).reshape(-1)]
        offsets, running = [], 0
        for n, start in zip(nvec, starts, strict=True):
            offsets.append(running - start)
            running += n
        return ObservationEntry(
            name,
            "one_hot",
            tuple(int(d) for d in space.shape),
            (running,),
            space.dtype,
            categories=tuple(nvec),
            offsets=tuple(offsets),
        )
    if isinstance(space, spaces.MultiBinary):
        shape = tuple(int(d) for d in space.shape)
        return ObservationEntry(name, "vector", shape, (int(np.prod(shape)),), space.dtype)
    raise UnsupportedSpaceError(
        f"observation {name!r}: {space} is not supported; use Box, Discrete, MultiDiscrete, "
        "MultiBinary or a flat Dict of those (one entry per sensor)."
    )


def _image_entry(name: str, space: spaces.Box, shape: tuple[int, ...]) -> ObservationEntry:
    is_uint8 = space.dtype == np.uint8
    if is_uint8 or (shape[-1] <= 4 < shape[0]):
        channels_last = True
        height, width, channels = shape
    elif shape[0] <= 4:
        channels_last = False
        channels, height, width = shape
    else:
        raise UnsupportedSpaceError(
            f"observation {name!r}: 3-D Box {shape} is neither HWC nor CHW with at most 4 "
            "channels; give images as uint8 HWC or float CHW."
        )
    return ObservationEntry(
        name,
        "image",
        shape,
        (channels, height, width),
        space.dtype,
        channels_last=channels_last,
        scale=255.0 if is_uint8 else 1.0,
    )


ActionKind = Literal["box", "discrete", "multi_discrete", "hybrid"]


@dataclass(frozen=True)
class ActionLayout:
    """The policy's action output and its conversion to the environment's action space.

    Attributes:
        kind: ``box``, ``discrete``, ``multi_discrete`` or ``hybrid`` (``Dict`` with a
            ``continuous`` Box and a ``discrete`` Discrete/MultiDiscrete entry).
        continuous_size: number of continuous actions (policy output in ``[-1, 1]``).
        discrete_branches: size of each discrete branch.
    """

    kind: ActionKind
    continuous_size: int
    discrete_branches: tuple[int, ...]
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    box_shape: tuple[int, ...] = ()
    box_dtype: np.dtype[Any] | None = None
    discrete_start: tuple[int, ...] = ()
    discrete_is_scalar: bool = False

    @classmethod
    def from_space(cls, space: spaces.Space[Any]) -> ActionLayout:
        """Build the layout of a single-slot action space.

        Raises:
            UnsupportedSpaceError: a space other than Box, Discrete, MultiDiscrete or the
                hybrid Dict.
        """
        if isinstance(space, spaces.Box):
            return cls._box(space, "box")
        if isinstance(space, spaces.Discrete):
            return cls("discrete", 0, (int(space.n),), discrete_start=(int(space.start),))
        if isinstance(space, spaces.MultiDiscrete):
            nvec, start = _multi_discrete(space)
            return cls("multi_discrete", 0, nvec, discrete_start=start)
        if isinstance(space, spaces.Dict) and set(space.spaces) == {"continuous", "discrete"}:
            box = space.spaces["continuous"]
            disc = space.spaces["discrete"]
            if not isinstance(box, spaces.Box):
                raise UnsupportedSpaceError("hybrid action space: 'continuous' must be a Box.")
            box_layout = cls._box(box, "hybrid")
            is_scalar = isinstance(disc, spaces.Discrete)
            if isinstance(disc, spaces.Discrete):
                nvec, start = (int(disc.n),), (int(disc.start),)
            elif isinstance(disc, spaces.MultiDiscrete):
                nvec, start = _multi_discrete(disc)
            else:
                raise UnsupportedSpaceError(
                    "hybrid action space: 'discrete' must be Discrete or MultiDiscrete."
                )
            return cls(
                "hybrid",
                box_layout.continuous_size,
                nvec,
                low=box_layout.low,
                high=box_layout.high,
                box_shape=box_layout.box_shape,
                box_dtype=box_layout.box_dtype,
                discrete_start=start,
                discrete_is_scalar=is_scalar,
            )
        raise UnsupportedSpaceError(
            f"action space {space} is not supported; use Box (continuous), Discrete, "
            "MultiDiscrete or Dict({'continuous': Box, 'discrete': MultiDiscrete})."
        )

    @classmethod
    def _box(cls, space: spaces.Box, kind: ActionKind) -> ActionLayout:
        if not np.issubdtype(space.dtype, np.floating):
            raise UnsupportedSpaceError(
                f"continuous action space {space} has integer dtype; use a float Box."
            )
        low = np.asarray(space.low, dtype=np.float64).reshape(-1)
        high = np.asarray(space.high, dtype=np.float64).reshape(-1)
        bounded = np.isfinite(low) & np.isfinite(high)
        # Unbounded dimensions keep the policy's [-1, 1] output as is.
        low = np.where(bounded, low, -1.0)
        high = np.where(bounded, high, 1.0)
        return cls(
            kind,
            int(low.size),
            (),
            low=low.astype(np.float32),
            high=high.astype(np.float32),
            box_shape=tuple(int(d) for d in space.shape),
            box_dtype=space.dtype,
        )

    @property
    def discrete_size(self) -> int:
        """Total number of discrete choices (the action-mask width)."""
        return int(sum(self.discrete_branches))

    @property
    def has_continuous(self) -> bool:
        """Whether the policy outputs continuous actions."""
        return self.continuous_size > 0

    @property
    def has_discrete(self) -> bool:
        """Whether the policy outputs discrete actions."""
        return len(self.discrete_branches) > 0

    def to_env(self, continuous: np.ndarray | None, discrete: np.ndarray | None) -> Any:
        """Convert a batch of policy actions to the vector environment's action format.

        Args:
            continuous: ``(n, continuous_size)`` floats in ``[-1, 1]`` (or ``None``).
            discrete: ``(n, branches)`` integer indices (or ``None``).
        """
        box_action = None
        if self.has_continuous:
            assert continuous is not None and self.low is not None and self.high is not None
            scaled = self.low + (np.clip(continuous, -1.0, 1.0) + 1.0) * 0.5 * (
                self.high - self.low
            )
            box_action = scaled.reshape((-1, *self.box_shape)).astype(self.box_dtype, copy=False)
        disc_action = None
        if self.has_discrete:
            assert discrete is not None
            disc_action = discrete.astype(np.int64, copy=False) + np.asarray(
                self.discrete_start, dtype=np.int64
            )
        if self.kind == "box":
            return box_action
        if self.kind == "discrete":
            assert disc_action is not None
            return disc_action[:, 0]
        if self.kind == "multi_discrete":
            return disc_action
        assert disc_action is not None
        if self.discrete_is_scalar:
            return {"continuous": box_action, "discrete": disc_action[:, 0]}
        return {"continuous": box_action, "discrete": disc_action}

    def full_mask(self, n: int) -> np.ndarray:
        """An all-allowed action mask for ``n`` slots."""
        return np.ones((n, self.discrete_size), dtype=bool)


def _multi_discrete(space: spaces.MultiDiscrete) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if len(space.shape) != 1:
        raise UnsupportedSpaceError(
            f"MultiDiscrete action space with shape {space.shape} is not supported; use a 1-D "
            "MultiDiscrete (one entry per branch)."
        )
    nvec = tuple(int(n) for n in space.nvec)
    start = tuple(int(s) for s in np.asarray(space.start).reshape(-1))
    return nvec, start
