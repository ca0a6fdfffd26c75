"""Data model of the environment API, with the names and semantics of ``mlagents_envs.base_env``.

A *behavior* groups agents that share observations and actions; its data arrive batched:
:class:`DecisionSteps` for agents waiting for an action, :class:`TerminalSteps` for agents whose
episode ended. Users answer with one :class:`ActionTuple` per behavior. Migrating code only has to
change ``mlagents_envs.base_env`` into ``unity_gym.base_env``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from enum import Enum, IntFlag
from typing import Any, NamedTuple

import numpy as np

from unity_gym.exceptions import UnityActionException

__all__ = [
    "ActionSpec",
    "ActionTuple",
    "AgentId",
    "BaseEnv",
    "BehaviorMapping",
    "BehaviorName",
    "BehaviorSpec",
    "DecisionStep",
    "DecisionSteps",
    "DimensionProperty",
    "GroupId",
    "ObservationSpec",
    "ObservationType",
    "TerminalStep",
    "TerminalSteps",
]

AgentId = int
GroupId = int
BehaviorName = str


# --------------------------------------------------------------------------------------------
# Observation and behavior specifications
# --------------------------------------------------------------------------------------------


class DimensionProperty(IntFlag):
    """What a trainer may assume about one dimension of an observation (spec §2.3)."""

    UNSPECIFIED = 0
    """Nothing is known about the dimension."""
    NONE = 1
    """A plain feature dimension: suited to fully connected layers."""
    TRANSLATIONAL_EQUIVARIANCE = 2
    """A spatial dimension: suited to convolutions."""
    VARIABLE_SIZE = 4
    """An unordered set of entities whose count varies."""


class ObservationType(Enum):
    """The role of an observation in the agent's decision."""

    DEFAULT = 0
    """Ordinary observation."""
    GOAL_SIGNAL = 1
    """Describes the goal of the current task."""


class ObservationSpec(NamedTuple):
    """Shape and meta-data of one observation of a behavior.

    Attributes:
        shape: dimensions of one agent's observation (visual ones are ``(C, H, W)``).
        dimension_property: one :class:`DimensionProperty` per dimension.
        observation_type: the :class:`ObservationType`.
        name: the sensor name given by the game.
    """

    shape: tuple[int, ...]
    dimension_property: tuple[DimensionProperty, ...]
    observation_type: ObservationType
    name: str


# --------------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------------


class ActionTuple:
    """Actions of a batch of agents: continuous float32 ``(n, c)`` and discrete int32 ``(n, b)``.

    A part that is not given is filled with an empty ``(n, 0)`` array as soon as the other part
    is known, so both properties are always arrays with the same number of rows once set.

    Args:
        continuous: values castable to float32, shape ``(n_agents, continuous_size)``.
        discrete: whole numbers, shape ``(n_agents, number_of_branches)``.

    Raises:
        UnityActionException: if the values cannot be cast to the required dtype.
    """

    __slots__ = ("_continuous", "_discrete")

    def __init__(self, continuous: Any = None, discrete: Any = None) -> None:
        self._continuous: np.ndarray | None = None
        self._discrete: np.ndarray | None = None
        if continuous is not None:
            self.add_continuous(continuous)
        if discrete is not None:
            self.add_discrete(discrete)

    @property
    def discrete_dtype(self) -> type[np.int32]:
        """The dtype of discrete actions on the wire."""
        return np.int32

    @property
    def continuous(self) -> np.ndarray:
        """The float32 continuous actions, ``(n_agents, continuous_size)``."""
        return self._continuous  # type: ignore[return-value]

    @property
    def discrete(self) -> np.ndarray:
        """The int32 discrete actions, ``(n_agents, number_of_branches)``."""
        return self._discrete  # type: ignore[return-value]

    def add_continuous(self, continuous: Any) -> None:
        """Set the continuous part (cast to float32).

        Raises:
            UnityActionException: if ``continuous`` is not numeric.
        """
        array = np.asarray(continuous)
        if array.dtype.kind not in "fiub":
            raise UnityActionException(
                f"Continuous actions must be numbers castable to float32, got an array of "
                f"dtype {array.dtype}. Pass a float array of shape (n_agents, continuous_size)."
            )
        self._continuous = array.astype(np.float32, copy=False)
        if self._discrete is None:
            self._discrete = np.zeros((_rows(self._continuous), 0), dtype=np.int32)

    def add_discrete(self, discrete: Any) -> None:
        """Set the discrete part (cast to int32).

        ``mlagents_envs`` casts with ``astype(np.int32)``, which wraps values outside int32
        (``2**32 + 2`` becomes branch 2); here such values are refused instead.

        Raises:
            UnityActionException: if ``discrete`` holds something other than whole numbers, or
                numbers outside the int32 range of the wire's ``discrete_actions`` field.
        """
        array = np.asarray(discrete)
        if array.dtype.kind == "f":
            if not np.all(np.isfinite(array)) or not np.array_equal(array, np.floor(array)):
                raise UnityActionException(
                    "Discrete actions must be whole numbers, got fractional or non-finite "
                    f"values {array[~(np.isfinite(array) & (array == np.floor(array)))][:5]}. "
                    "Pass integer branch indices."
                )
        elif array.dtype.kind not in "iub":
            raise UnityActionException(
                f"Discrete actions must be integers castable to int32, got an array of dtype "
                f"{array.dtype}. Pass an int array of shape (n_agents, number_of_branches)."
            )
        if array.size:
            low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
            outside = (array < low) | (array > high)
            if outside.any():
                raise UnityActionException(
                    f"Discrete actions {array[outside][:5].tolist()} do not fit the int32 field "
                    f"of the wire ([{low}, {high}]); casting would wrap them to other (possibly "
                    "valid) branch indices. Pass branch indices in [0, branch size)."
                )
        self._discrete = array.astype(np.int32, copy=False)
        if self._continuous is None:
            self._continuous = np.zeros((_rows(self._discrete), 0), dtype=np.float32)

    def __repr__(self) -> str:
        return f"ActionTuple(continuous={self._continuous!r}, discrete={self._discrete!r})"


def _rows(array: np.ndarray) -> int:
    """Number of agents described by ``array`` (0 for a scalar)."""
    return int(array.shape[0]) if array.ndim > 0 else 0


class ActionSpec(NamedTuple):
    """Action space of a behavior: ``continuous_size`` floats plus one choice per discrete branch.

    Attributes:
        continuous_size: number of continuous actions.
        discrete_branches: number of options of each discrete branch.
    """

    continuous_size: int
    discrete_branches: tuple[int, ...]

    def __str__(self) -> str:
        return f"Continuous: {self.continuous_size}, Discrete: {self.discrete_branches}"

    def is_discrete(self) -> bool:
        """True if the behavior has discrete branches and no continuous actions."""
        return self.discrete_size > 0 and self.continuous_size == 0

    def is_continuous(self) -> bool:
        """True if the behavior has continuous actions and no discrete branches."""
        return self.continuous_size > 0 and self.discrete_size == 0

    @property
    def discrete_size(self) -> int:
        """The number of discrete branches."""
        return len(self.discrete_branches)

    def empty_action(self, n_agents: int) -> ActionTuple:
        """All-zero actions for ``n_agents`` agents."""
        return ActionTuple(
            continuous=np.zeros((n_agents, self.continuous_size), dtype=np.float32),
            discrete=np.zeros((n_agents, self.discrete_size), dtype=np.int32),
        )

    def random_action(self, n_agents: int, rng: np.random.Generator | None = None) -> ActionTuple:
        """Uniformly random actions: continuous in ``[-1, 1]``, each branch in ``[0, size)``.

        Args:
            n_agents: number of rows.
            rng: generator to draw from; ``numpy.random``'s global state when omitted.
        """
        if rng is None:
            continuous = np.random.uniform(-1.0, 1.0, size=(n_agents, self.continuous_size))
            columns = [np.random.randint(0, size, size=n_agents) for size in self.discrete_branches]
        else:
            continuous = rng.uniform(-1.0, 1.0, size=(n_agents, self.continuous_size))
            columns = [rng.integers(0, size, size=n_agents) for size in self.discrete_branches]
        discrete = np.stack(columns, axis=1) if columns else np.zeros((n_agents, 0), dtype=np.int32)
        return ActionTuple(continuous=continuous, discrete=discrete)

    def validate_action(
        self, actions: ActionTuple, n_agents: int, behavior_name: str
    ) -> ActionTuple:
        """Check ``actions`` against this spec for ``n_agents`` agents and return them.

        Raises:
            UnityActionException: naming what was expected and what was received, for a wrong
                type, a wrong shape, NaN/infinite continuous values or out-of-range branch values.
        """
        if not isinstance(actions, ActionTuple):
            raise UnityActionException(
                f"Actions for behavior {behavior_name!r} must be an ActionTuple, got "
                f"{type(actions).__name__}. Wrap arrays as ActionTuple(continuous=..., "
                "discrete=...)."
            )
        continuous, discrete = actions.continuous, actions.discrete
        if continuous is None and discrete is None:
            raise UnityActionException(
                f"The ActionTuple for behavior {behavior_name!r} is empty; expected continuous "
                f"{(n_agents, self.continuous_size)} and discrete {(n_agents, self.discrete_size)}."
            )
        expected = (n_agents, self.continuous_size)
        if continuous.shape != expected:
            raise UnityActionException(
                f"Behavior {behavior_name!r} expects continuous actions of shape {expected} "
                f"(agents, continuous size), got shape {continuous.shape}."
            )
        expected = (n_agents, self.discrete_size)
        if discrete.shape != expected:
            raise UnityActionException(
                f"Behavior {behavior_name!r} expects discrete actions of shape {expected} "
                f"(agents, branches), got shape {discrete.shape}."
            )
        if continuous.size and not np.isfinite(continuous).all():
            rows = np.flatnonzero(~np.isfinite(continuous).all(axis=1))
            raise UnityActionException(
                f"Behavior {behavior_name!r} got NaN or infinite continuous actions in rows "
                f"{rows.tolist()}; every continuous action must be a finite number."
            )
        if discrete.size:
            sizes = np.asarray(self.discrete_branches, dtype=np.int64)
            bad = (discrete < 0) | (discrete >= sizes)
            if bad.any():
                row, branch = (int(i) for i in np.argwhere(bad)[0])
                raise UnityActionException(
                    f"Behavior {behavior_name!r}: discrete action {int(discrete[row, branch])} "
                    f"of row {row}, branch {branch} is out of range; expected a value in "
                    f"[0, {int(sizes[branch])})."
                )
        return actions

    def _validate_action(
        self, actions: ActionTuple, n_agents: int, behavior_name: str
    ) -> ActionTuple:
        """Alias of :meth:`validate_action` under the name ``mlagents_envs`` callers use."""
        return self.validate_action(actions, n_agents, behavior_name)

    @staticmethod
    def create_continuous(continuous_size: int) -> ActionSpec:
        """A purely continuous spec."""
        return ActionSpec(continuous_size, ())

    @staticmethod
    def create_discrete(discrete_branches: Sequence[int]) -> ActionSpec:
        """A purely discrete spec."""
        return ActionSpec(0, tuple(discrete_branches))

    @staticmethod
    def create_hybrid(continuous_size: int, discrete_branches: Sequence[int]) -> ActionSpec:
        """A spec with both continuous actions and discrete branches."""
        return ActionSpec(continuous_size, tuple(discrete_branches))


class BehaviorSpec(NamedTuple):
    """Observation specs (in the agents' observation order) and the action spec of a behavior."""

    observation_specs: list[ObservationSpec]
    action_spec: ActionSpec


class BehaviorMapping(Mapping[BehaviorName, BehaviorSpec]):
    """Read-only view of the behavior specs known so far, keyed by behavior name."""

    def __init__(self, specs: dict[BehaviorName, BehaviorSpec]) -> None:
        self._specs = specs

    def __len__(self) -> int:
        return len(self._specs)

    def __getitem__(self, behavior: BehaviorName) -> BehaviorSpec:
        try:
            return self._specs[behavior]
        except KeyError:
            raise KeyError(
                f"Unknown behavior {behavior!r}; known behaviors: {sorted(self._specs)}"
            ) from None

    def __iter__(self) -> Iterator[BehaviorName]:
        return iter(self._specs)


# --------------------------------------------------------------------------------------------
# Batched agent data
# --------------------------------------------------------------------------------------------


class DecisionStep(NamedTuple):
    """One agent waiting for an action: its observations and what it got since its last report."""

    obs: list[np.ndarray]
    reward: float
    agent_id: AgentId
    action_mask: list[np.ndarray] | None
    group_id: int
    group_reward: float


class TerminalStep(NamedTuple):
    """One agent whose episode ended; ``interrupted`` means it was cut short (e.g. max steps)."""

    obs: list[np.ndarray]
    reward: float
    interrupted: bool
    agent_id: AgentId
    group_id: GroupId
    group_reward: float


class _AgentBatch(Mapping[AgentId, Any]):
    """Common part of decision and terminal batches: a mapping from agent id to its row."""

    obs: list[np.ndarray]
    agent_id: np.ndarray
    _index: dict[AgentId, int] | None

    @property
    def agent_id_to_index(self) -> dict[AgentId, int]:
        """Maps each agent id to its row in the batched arrays."""
        if self._index is None:
            self._index = {agent: row for row, agent in enumerate(self.agent_id.tolist())}
        return self._index

    def __len__(self) -> int:
        return len(self.agent_id)

    def __iter__(self) -> Iterator[AgentId]:
        return iter(self.agent_id.tolist())

    def _row_of(self, agent_id: AgentId) -> int:
        try:
            return self.agent_id_to_index[agent_id]
        except KeyError:
            raise KeyError(
                f"agent_id {agent_id} is not present in this {type(self).__name__}; present ids: "
                f"{self.agent_id.tolist()}"
            ) from None


class DecisionSteps(_AgentBatch):
    """Agents of one behavior that requested a decision, batched along the first axis.

    Attributes:
        obs: one array per observation, ``(n_agents, *shape)`` float32.
        reward: float32 ``(n_agents,)``, reward since each agent's previous report.
        agent_id: int32 ``(n_agents,)``.
        action_mask: for discrete behaviors, one bool array ``(n_agents, branch_size)`` per
            branch where True marks a *disabled* action; None otherwise.
        group_id: int32 ``(n_agents,)``, 0 when the agent is in no group.
        group_reward: float32 ``(n_agents,)``.
    """

    def __init__(
        self,
        obs: list[np.ndarray],
        reward: np.ndarray,
        agent_id: np.ndarray,
        action_mask: list[np.ndarray] | None,
        group_id: np.ndarray,
        group_reward: np.ndarray,
    ) -> None:
        self.obs = obs
        self.reward = reward
        self.agent_id = np.asarray(agent_id)
        self.action_mask = action_mask
        self.group_id = group_id
        self.group_reward = group_reward
        self._index = None

    def __getitem__(self, agent_id: AgentId) -> DecisionStep:
        row = self._row_of(agent_id)
        mask = None if self.action_mask is None else [branch[row] for branch in self.action_mask]
        return DecisionStep(
            obs=[batch[row] for batch in self.obs],
            reward=self.reward[row],
            agent_id=agent_id,
            action_mask=mask,
            group_id=self.group_id[row],
            group_reward=self.group_reward[row],
        )

    @staticmethod
    def empty(spec: BehaviorSpec) -> DecisionSteps:
        """A batch with no agent, shaped after ``spec``."""
        return DecisionSteps(
            obs=[np.zeros((0, *o.shape), dtype=np.float32) for o in spec.observation_specs],
            reward=np.zeros(0, dtype=np.float32),
            agent_id=np.zeros(0, dtype=np.int32),
            action_mask=None,
            group_id=np.zeros(0, dtype=np.int32),
            group_reward=np.zeros(0, dtype=np.float32),
        )


class TerminalSteps(_AgentBatch):
    """Agents of one behavior whose episode ended, batched along the first axis.

    Attributes:
        obs: one array per observation, ``(n_agents, *shape)`` float32 (final observations).
        reward: float32 ``(n_agents,)``, reward since each agent's previous report.
        interrupted: bool ``(n_agents,)``, True when the episode was cut short rather than ended.
        agent_id: int32 ``(n_agents,)``.
        group_id: int32 ``(n_agents,)``.
        group_reward: float32 ``(n_agents,)``.
    """

    def __init__(
        self,
        obs: list[np.ndarray],
        reward: np.ndarray,
        interrupted: np.ndarray,
        agent_id: np.ndarray,
        group_id: np.ndarray,
        group_reward: np.ndarray,
    ) -> None:
        self.obs = obs
        self.reward = reward
        self.interrupted = interrupted
        self.agent_id = np.asarray(agent_id)
        self.group_id = group_id
        self.group_reward = group_reward
        self._index = None

    def __getitem__(self, agent_id: AgentId) -> TerminalStep:
        row = self._row_of(agent_id)
        return TerminalStep(
            obs=[batch[row] for batch in self.obs],
            reward=self.reward[row],
            interrupted=self.interrupted[row],
            agent_id=agent_id,
            group_id=self.group_id[row],
            group_reward=self.group_reward[row],
        )

    @staticmethod
    def empty(spec: BehaviorSpec) -> TerminalSteps:
        """A batch with no agent, shaped after ``spec``."""
        return TerminalSteps(
            obs=[np.zeros((0, *o.shape), dtype=np.float32) for o in spec.observation_specs],
            reward=np.zeros(0, dtype=np.float32),
            interrupted=np.zeros(0, dtype=bool),
            agent_id=np.zeros(0, dtype=np.int32),
            group_id=np.zeros(0, dtype=np.int32),
            group_reward=np.zeros(0, dtype=np.float32),
        )


# --------------------------------------------------------------------------------------------
# Environment interface
# --------------------------------------------------------------------------------------------


class BaseEnv(ABC):
    """A simulation stepped in lock-step with Python, one batch of data per behavior."""

    @abstractmethod
    def step(self) -> None:
        """Send the actions set since the last step and advance until some agent reports."""

    @abstractmethod
    def reset(self) -> None:
        """Restart the simulation and collect its first observations."""

    @abstractmethod
    def close(self) -> None:
        """Stop the simulation and release its resources."""

    @property
    @abstractmethod
    def behavior_specs(self) -> Mapping[BehaviorName, BehaviorSpec]:
        """Specs of the behaviors seen so far, by name."""

    @abstractmethod
    def set_actions(self, behavior_name: BehaviorName, action: ActionTuple) -> None:
        """Set the actions of every agent of ``behavior_name`` in its last DecisionSteps."""

    @abstractmethod
    def set_action_for_agent(
        self, behavior_name: BehaviorName, agent_id: AgentId, action: ActionTuple
    ) -> None:
        """Set the action (a one-row ActionTuple) of a single agent."""

    @abstractmethod
    def get_steps(self, behavior_name: BehaviorName) -> tuple[DecisionSteps, TerminalSteps]:
        """The decision and terminal batches of ``behavior_name`` from the last step."""
