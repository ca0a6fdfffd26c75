"""Behavior specs as Gymnasium spaces, and conversion of observations, actions and masks.

This module is the one place that decides how a Unity behavior looks to Gymnasium-style code;
the single-agent env, the PettingZoo fronts and the vector env all use it.

Observations (:class:`ObservationAdapter`):

* a rank-1 or rank-2 sensor (vector, buffer, grid of features) is a float32 ``Box(-inf, inf)`` of
  the sensor's shape;
* a rank-3 sensor is a camera. Unity sends it ``(C, H, W)`` as floats in ``[0, 1]``; by default
  (``visual_obs="uint8_hwc"``) it becomes a ``uint8`` ``(H, W, C)`` ``Box(0, 255)`` (the layout
  image libraries and SB3's ``CnnPolicy`` expect); ``visual_obs="float_chw"`` keeps ``(C, H, W)``
  float32 ``Box(0, 1)``;
* one sensor gives that Box directly; several sensors give a flat ``Dict`` keyed by sensor name
  (a repeated name gets ``_2``, ``_3``... suffixes in sensor order), which SB3's
  ``MultiInputPolicy`` accepts;
* ``flatten_obs=True`` concatenates every non-camera sensor (flattened, in sensor order) into one
  float32 Box. Without cameras that Box is the whole observation; with cameras the observation is
  a ``Dict`` holding that Box under :data:`FLAT_VECTOR_KEY` next to the camera entries.

Actions (:class:`ActionAdapter`):

* continuous only: ``Box(-1, 1, (continuous_size,), float32)``; values are passed on unchanged
  (the game clips them to ``[-1, 1]``);
* discrete, one branch: ``Discrete(n)``; several branches: ``MultiDiscrete(branches)``;
* hybrid: ``Dict({"continuous": Box(-1, 1), "discrete": MultiDiscrete})``. Stable-Baselines3 has no
  policy for a ``Dict`` action space; :func:`check_sb3_action_space` raises a clear error for it.

Action masks (:meth:`ActionAdapter.mask_from_unity`) follow Gymnasium/SB3 (``sb3-contrib``'s
``MaskablePPO``): **one flat bool array, the branches concatenated, True = the action is
allowed**. That is the inverse of Unity's wire flag, where True means *disabled*.

Every conversion returns freshly allocated arrays: no result ever aliases a bridge buffer or an
earlier result (Gymnasium's ``check_env`` verifies this).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from gymnasium import spaces

from unity_gym.base_env import (
    ActionSpec,
    ActionTuple,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)
from unity_gym.exceptions import UnityActionException, UnityObservationException

__all__ = [
    "CONTINUOUS_KEY",
    "DISCRETE_KEY",
    "FLAT_VECTOR_KEY",
    "ActionAdapter",
    "ObservationAdapter",
    "VisualLayout",
    "check_sb3_action_space",
    "is_visual",
]

VisualLayout = Literal["uint8_hwc", "float_chw"]
"""How camera observations are presented: ``uint8`` ``(H, W, C)`` or float32 ``(C, H, W)``."""

FLAT_VECTOR_KEY = "vector"
"""Dict key of the concatenated non-camera sensors when ``flatten_obs=True`` meets cameras."""
CONTINUOUS_KEY = "continuous"
"""Key of the continuous part of a hybrid action."""
DISCRETE_KEY = "discrete"
"""Key of the discrete part of a hybrid action."""

_VISUAL_LAYOUTS: tuple[str, ...] = ("uint8_hwc", "float_chw")


def is_visual(spec: ObservationSpec) -> bool:
    """Whether ``spec`` is a camera (a rank-3 ``(C, H, W)`` observation)."""
    return len(spec.shape) == 3


# --------------------------------------------------------------------------------------------
# Observations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """One entry of the presented observation: its key and the sensor indices it is built from."""

    key: str
    sensors: tuple[int, ...]
    visual: bool


class ObservationAdapter:
    """Presents a behavior's observations as one Gymnasium space (see the module docs).

    Args:
        observation_specs: the behavior's ``BehaviorSpec.observation_specs``, in sensor order.
        flatten_obs: concatenate the non-camera sensors into one Box.
        visual_obs: camera layout, ``"uint8_hwc"`` (default) or ``"float_chw"``.

    Raises:
        ValueError: on an unknown ``visual_obs`` or a behavior without observations.

    Attributes:
        space: the single-agent observation space (a ``Box`` or a ``Dict``).
        observation_specs: the specs given.
    """

    def __init__(
        self,
        observation_specs: Sequence[ObservationSpec],
        *,
        flatten_obs: bool = False,
        visual_obs: VisualLayout = "uint8_hwc",
    ) -> None:
        if visual_obs not in _VISUAL_LAYOUTS:
            raise ValueError(
                f"visual_obs={visual_obs!r} is not a known layout; use 'uint8_hwc' (uint8 "
                "height x width x channels, 0..255) or 'float_chw' (float32 channels x height x "
                "width, 0..1)."
            )
        if not observation_specs:
            raise ValueError(
                "The behavior declares no observation sensor, so it has no observation space. "
                "Add a sensor to the agent in the game."
            )
        self.observation_specs: tuple[ObservationSpec, ...] = tuple(observation_specs)
        self._visual_layout: VisualLayout = visual_obs
        self._entries = self._plan(flatten_obs)
        entry_spaces: dict[str, spaces.Space[Any]] = {
            entry.key: self._entry_space(entry) for entry in self._entries
        }
        self._single = len(self._entries) == 1
        self.space: spaces.Space[Any]
        if self._single:
            self.space = entry_spaces[self._entries[0].key]
        else:
            self.space = spaces.Dict(entry_spaces)
            order = list(self.space.spaces)
            self._entries = sorted(self._entries, key=lambda e: order.index(e.key))

    @property
    def keys(self) -> tuple[str, ...]:
        """Dict keys of the observation in space order (empty when the space is a plain Box)."""
        return () if self._single else tuple(entry.key for entry in self._entries)

    @property
    def entry_sensors(self) -> tuple[tuple[int, ...], ...]:
        """The sensors (indices into :attr:`observation_specs`) of each entry, in space order:
        what a trainer's network input ``obs_i`` is made of (one sensor each, unless
        ``flatten_obs`` joined the non-camera ones)."""
        return tuple(entry.sensors for entry in self._entries)

    @property
    def goal_signal_keys(self) -> tuple[str, ...]:
        """Dict keys of the entries made only of ``GOAL_SIGNAL`` sensors (what the task is).

        Trainers may condition their networks on these (ML-Agents' ``goal_conditioning_type``);
        empty when the space is a plain Box.
        """
        if self._single:
            return ()
        return tuple(
            entry.key
            for entry in self._entries
            if all(
                self.observation_specs[i].observation_type == ObservationType.GOAL_SIGNAL
                for i in entry.sensors
            )
        )

    @property
    def variable_length_keys(self) -> tuple[str, ...]:
        """Keys of the entries that are one variable-length sensor (Unity's ``BufferSensor``:
        a ``VARIABLE_SIZE`` first dimension, ``(max_entities, entity_size)``, absent entities
        sent as rows of zeros).

        Trainers may embed such an entry entity by entity and attend over the present ones
        (ML-Agents' entity embeddings and residual self-attention). When the space is a plain
        Box the tuple holds that Box's one key (the sensor's name) if its sensor is one;
        ``flatten_obs=True`` makes such sensors part of the flat vector, and then none is.
        """
        return tuple(
            entry.key
            for entry in self._entries
            if entry.key != FLAT_VECTOR_KEY
            and not entry.visual
            and len(entry.sensors) == 1
            and _is_variable_length(self.observation_specs[entry.sensors[0]])
        )

    def from_unity(self, obs: Sequence[np.ndarray], row: int) -> Any:
        """One agent's observation, built from the bridge's batched arrays.

        Args:
            obs: ``DecisionSteps.obs`` or ``TerminalSteps.obs`` (one ``(n, *shape)`` array per
                sensor).
            row: the agent's row in those arrays.

        Returns:
            An array or a dict of arrays matching :attr:`space`, never sharing memory with
            ``obs``.
        """
        self._check_sensor_count(obs)
        values = {e.key: self._convert(e, [obs[i][row] for i in e.sensors]) for e in self._entries}
        return values[self._entries[0].key] if self._single else values

    def batch_from_unity(self, obs: Sequence[np.ndarray], rows: Sequence[int] | None = None) -> Any:
        """Several agents' observations stacked along a new first axis.

        Args:
            obs: the bridge's batched arrays.
            rows: rows to take, in this order (default: all rows).

        Returns:
            An array or dict of arrays matching ``gymnasium.vector.utils.batch_space(space, n)``.
        """
        self._check_sensor_count(obs)
        index = slice(None) if rows is None else np.asarray(rows, dtype=np.intp)
        values = {
            e.key: self._convert(e, [obs[i][index] for i in e.sensors], batched=True)
            for e in self._entries
        }
        return values[self._entries[0].key] if self._single else values

    # -- construction -------------------------------------------------------------------------

    def _plan(self, flatten_obs: bool) -> list[_Entry]:
        vector = [i for i, spec in enumerate(self.observation_specs) if not is_visual(spec)]
        entries: list[_Entry] = []
        taken: set[str] = set()
        if flatten_obs and vector:
            entries.append(_Entry(FLAT_VECTOR_KEY, tuple(vector), visual=False))
            taken.add(FLAT_VECTOR_KEY)
        for i, spec in enumerate(self.observation_specs):
            if flatten_obs and i in vector:
                continue
            key = _unique_key(spec.name or f"obs_{i}", taken)
            taken.add(key)
            entries.append(_Entry(key, (i,), visual=is_visual(spec)))
        return entries

    def _entry_space(self, entry: _Entry) -> spaces.Box:
        if entry.visual:
            channels, height, width = self.observation_specs[entry.sensors[0]].shape
            if self._visual_layout == "uint8_hwc":
                return spaces.Box(0, 255, (height, width, channels), dtype=np.uint8)
            return spaces.Box(0.0, 1.0, (channels, height, width), dtype=np.float32)
        if len(entry.sensors) == 1 and entry.key != FLAT_VECTOR_KEY:
            shape = tuple(self.observation_specs[entry.sensors[0]].shape)
        else:
            size = sum(int(np.prod(self.observation_specs[i].shape)) for i in entry.sensors)
            shape = (size,)
        return spaces.Box(-np.inf, np.inf, shape, dtype=np.float32)

    # -- conversion ---------------------------------------------------------------------------

    def _convert(self, entry: _Entry, parts: list[np.ndarray], batched: bool = False) -> np.ndarray:
        if entry.visual:
            image = parts[0]
            if self._visual_layout == "float_chw":
                return np.clip(image, 0.0, 1.0).astype(np.float32, copy=False)
            axes = (0, 2, 3, 1) if batched else (1, 2, 0)
            scaled = np.rint(np.clip(np.transpose(image, axes), 0.0, 1.0) * 255.0)
            return scaled.astype(np.uint8)
        if entry.key == FLAT_VECTOR_KEY:
            if batched:
                flat = [np.reshape(p, (p.shape[0], -1)) for p in parts]
                return np.concatenate(flat, axis=1, dtype=np.float32)
            return np.concatenate([np.ravel(p) for p in parts], dtype=np.float32)
        return np.array(parts[0], dtype=np.float32, copy=True)

    def _check_sensor_count(self, obs: Sequence[np.ndarray]) -> None:
        if len(obs) != len(self.observation_specs):
            raise UnityObservationException(
                f"Got {len(obs)} observation arrays but the behavior declares "
                f"{len(self.observation_specs)} sensors "
                f"({[spec.name for spec in self.observation_specs]}); the game changed its "
                "sensors after the spec was read."
            )


def _is_variable_length(spec: ObservationSpec) -> bool:
    """Whether ``spec`` is a rank-2 sensor whose first dimension is ``VARIABLE_SIZE``."""
    return len(spec.shape) == 2 and bool(
        int(spec.dimension_property[0]) & int(DimensionProperty.VARIABLE_SIZE)
    )


def _unique_key(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    suffix = 2
    while f"{name}_{suffix}" in taken:
        suffix += 1
    return f"{name}_{suffix}"


# --------------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------------


class ActionAdapter:
    """Presents a behavior's action spec as one Gymnasium space and converts actions back.

    Args:
        action_spec: the behavior's ``BehaviorSpec.action_spec``.

    Attributes:
        space: ``Box``, ``Discrete``, ``MultiDiscrete`` or the hybrid ``Dict`` (module docs).
        action_spec: the spec given.
        mask_size: length of the flat action mask (the sum of the branch sizes).
    """

    def __init__(self, action_spec: ActionSpec) -> None:
        self.action_spec = action_spec
        branches = tuple(int(b) for b in action_spec.discrete_branches)
        self._branches = branches
        self.mask_size = int(sum(branches))
        continuous = spaces.Box(-1.0, 1.0, (action_spec.continuous_size,), dtype=np.float32)
        self.space: spaces.Space[Any]
        if branches and action_spec.continuous_size:
            self.space = spaces.Dict(
                {CONTINUOUS_KEY: continuous, DISCRETE_KEY: spaces.MultiDiscrete(list(branches))}
            )
        elif len(branches) == 1:
            self.space = spaces.Discrete(branches[0])
        elif branches:
            self.space = spaces.MultiDiscrete(list(branches))
        else:
            self.space = continuous

    @property
    def is_hybrid(self) -> bool:
        """Whether the behavior has both continuous actions and discrete branches."""
        return bool(self._branches) and self.action_spec.continuous_size > 0

    def to_unity(self, action: Any) -> ActionTuple:
        """A one-row :class:`ActionTuple` from one agent's action in :attr:`space` format.

        Raises:
            UnityActionException: naming the expected format when ``action`` does not fit.
        """
        continuous, discrete = self._split(action, batch=None)
        return ActionTuple(continuous=continuous, discrete=discrete)

    def batch_to_unity(self, actions: Any, n_agents: int) -> ActionTuple:
        """An ``n_agents``-row :class:`ActionTuple` from actions stacked along a first axis.

        ``actions`` follows ``gymnasium.vector.utils.batch_space(space, n_agents)``.

        Raises:
            UnityActionException: naming the expected format when ``actions`` do not fit.
        """
        continuous, discrete = self._split(actions, batch=n_agents)
        return ActionTuple(continuous=continuous, discrete=discrete)

    def zero_action(self) -> Any:
        """The all-zero action in :attr:`space` format (a fresh object)."""
        zeros_c = np.zeros(self.action_spec.continuous_size, dtype=np.float32)
        zeros_d = np.zeros(len(self._branches), dtype=np.int64)
        if self.is_hybrid:
            return {CONTINUOUS_KEY: zeros_c, DISCRETE_KEY: zeros_d}
        if len(self._branches) == 1:
            return 0
        return zeros_d if self._branches else zeros_c

    def mask_from_unity(self, action_mask: Sequence[np.ndarray] | None, row: int) -> np.ndarray:
        """One agent's flat action mask, True = allowed (module docs).

        Args:
            action_mask: ``DecisionSteps.action_mask`` (one ``(n, branch_size)`` array per
                branch, True = disabled) or None when the game sent no mask.
            row: the agent's row.

        Returns:
            A fresh bool array of length :attr:`mask_size` (all True without a mask).
        """
        if action_mask is None or not self._branches:
            return np.ones(self.mask_size, dtype=bool)
        return ~np.concatenate([np.asarray(branch[row], dtype=bool) for branch in action_mask])

    def batch_mask_from_unity(
        self, action_mask: Sequence[np.ndarray] | None, n_agents: int
    ) -> np.ndarray:
        """Flat masks of all rows, ``(n_agents, mask_size)`` bool, True = allowed."""
        if action_mask is None or not self._branches:
            return np.ones((n_agents, self.mask_size), dtype=bool)
        return ~np.concatenate([np.asarray(b, dtype=bool) for b in action_mask], axis=1)

    def sample_mask(self, flat_mask: np.ndarray) -> Any:
        """A flat mask (True = allowed) in the format of ``space.sample(mask=...)``.

        ``Discrete``: an int8 array of the branch size; ``MultiDiscrete``: a tuple with one int8
        array per branch; hybrid ``Dict``: ``{"continuous": None, "discrete": <that tuple>}``;
        ``Box``: None. 1 marks an allowed action. PettingZoo's tests sample actions this way.
        """
        if not self._branches:
            return None
        bounds = np.cumsum((0, *self._branches))
        per_branch = tuple(
            np.asarray(flat_mask[start:stop], dtype=np.int8)
            for start, stop in itertools.pairwise(bounds)
        )
        if self.is_hybrid:
            return {CONTINUOUS_KEY: None, DISCRETE_KEY: per_branch}
        return per_branch[0] if len(self._branches) == 1 else per_branch

    # -- conversion ---------------------------------------------------------------------------

    def _split(self, action: Any, batch: int | None) -> tuple[np.ndarray, np.ndarray]:
        rows = 1 if batch is None else batch
        lead: tuple[int, ...] = () if batch is None else (batch,)
        if self.is_hybrid:
            if not isinstance(action, Mapping) or set(action) != {CONTINUOUS_KEY, DISCRETE_KEY}:
                raise UnityActionException(
                    f"This behavior has hybrid actions; pass a dict with exactly the keys "
                    f"{CONTINUOUS_KEY!r} ({self.action_spec.continuous_size} floats) and "
                    f"{DISCRETE_KEY!r} ({len(self._branches)} branch indices), got {action!r}."
                )
            continuous = self._continuous(action[CONTINUOUS_KEY], lead)
            discrete = self._discrete(action[DISCRETE_KEY], lead, (len(self._branches),))
        elif self._branches:
            shape = () if len(self._branches) == 1 else (len(self._branches),)
            discrete = self._discrete(action, lead, shape)
            continuous = np.zeros((rows, 0), dtype=np.float32)
        else:
            continuous = self._continuous(action, lead)
            discrete = np.zeros((rows, 0), dtype=np.int32)
        return continuous.reshape(rows, -1), discrete.reshape(rows, -1)

    def _continuous(self, value: Any, lead: tuple[int, ...]) -> np.ndarray:
        expected = (*lead, self.action_spec.continuous_size)
        try:
            array = np.array(value, dtype=np.float32)
        except (TypeError, ValueError):
            raise UnityActionException(
                f"Continuous actions must be numbers of shape {expected}, got {value!r}."
            ) from None
        if array.shape != expected:
            raise UnityActionException(
                f"Continuous actions must have shape {expected}, got shape {array.shape}. "
                f"The action space is {self.space}."
            )
        return array

    def _discrete(self, value: Any, lead: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
        expected = (*lead, *shape)
        array = np.asarray(value)
        if array.dtype.kind == "f" and array.size and np.all(array == np.floor(array)):
            array = array.astype(np.int64)
        if array.dtype.kind not in "iub":
            raise UnityActionException(
                f"Discrete actions must be integers of shape {expected}, got {value!r}. "
                f"The action space is {self.space}."
            )
        if array.shape != expected and array.size == int(np.prod(expected, dtype=np.int64)):
            array = array.reshape(expected)  # e.g. a (1,) array for a Discrete space
        if array.shape != expected:
            raise UnityActionException(
                f"Discrete actions must have shape {expected}, got shape {array.shape}. "
                f"The action space is {self.space}."
            )
        sizes = np.asarray(self._branches, dtype=np.int64)
        flat = array.reshape(-1, len(self._branches)).astype(np.int64)
        bad = (flat < 0) | (flat >= sizes)
        if bad.any():
            row, branch = (int(i) for i in np.argwhere(bad)[0])
            where = f"batch row {row}, branch {branch}" if lead else f"branch {branch}"
            raise UnityActionException(
                f"Discrete action {int(flat[row, branch])} of {where} is out of range; "
                f"it must be in [0, {int(sizes[branch])}). The action space is {self.space}."
            )
        return array.astype(np.int32)


def check_sb3_action_space(space: spaces.Space[Any]) -> None:
    """Raise if Stable-Baselines3 has no policy for ``space``; return quietly otherwise.

    SB3 policies handle ``Box``, ``Discrete``, ``MultiDiscrete`` and ``MultiBinary`` actions;
    the hybrid ``Dict`` action space of a behavior with continuous and discrete actions is not
    one of them.

    Raises:
        TypeError: for a ``Dict`` (hybrid) or other unsupported action space, saying what to do.
    """
    supported = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
    if isinstance(space, supported):
        return
    if isinstance(space, spaces.Dict) and set(space.spaces) == {CONTINUOUS_KEY, DISCRETE_KEY}:
        raise TypeError(
            "This behavior has hybrid actions (continuous and discrete), presented as "
            f"{space}. Stable-Baselines3 has no policy for Dict action spaces: use a trainer "
            "that supports hybrid actions (e.g. unity_gym's trainers), or change the agent in "
            "the game to use only continuous or only discrete actions."
        )
    raise TypeError(
        f"Stable-Baselines3 cannot act in the action space {space}; it supports Box, Discrete, "
        "MultiDiscrete and MultiBinary."
    )
