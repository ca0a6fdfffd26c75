"""Static description of what a scene's agents look like on the wire (spec §2.3, §4, §9.4).

A :class:`BehaviorSpec` is the player-side counterpart of Unity's *Behavior Parameters* plus the
agent's *Decision Requester*: the fully-qualified behavior name, the sensors (observations), the
action spec, how often decisions are requested and the episode length limit.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = [
    "ActionSpec",
    "BehaviorSpec",
    "Compression",
    "DecisionSettings",
    "DimensionProperty",
    "ObservationType",
    "SensorSpec",
    "sensor_sort_key",
]


class Compression(enum.Enum):
    """How a sensor's data travels: float values or PNG images (spec §4.1)."""

    NONE = 0
    PNG = 1


class ObservationType(enum.IntEnum):
    """``ObservationTypeProto`` values."""

    DEFAULT = 0
    GOAL_SIGNAL = 1


class DimensionProperty(enum.IntFlag):
    """Per-dimension flags of ``ObservationProto.dimension_properties``."""

    UNSPECIFIED = 0
    NONE = 1
    TRANSLATIONAL_EQUIVARIANCE = 2
    VARIABLE_SIZE = 4


def _default_dimension_properties(rank: int) -> tuple[int, ...]:
    if rank == 3:
        return (
            int(DimensionProperty.NONE),
            int(DimensionProperty.TRANSLATIONAL_EQUIVARIANCE),
            int(DimensionProperty.TRANSLATIONAL_EQUIVARIANCE),
        )
    return (int(DimensionProperty.NONE),) * rank


@dataclass(frozen=True)
class SensorSpec:
    """One sensor of an agent: one ``ObservationProto`` per report.

    Args:
        name: sensor name as Unity would report it (e.g. ``VectorSensor_size8``, ``CameraSensor``).
            With ``stack_size > 1`` the wire name becomes ``StackingSensor_size<k>_<name>``.
        shape: shape of one (unstacked) observation: ``(n,)``, ``(rows, cols)`` or ``(C, H, W)``.
        compression: ``PNG`` is only valid for rank-3 (visual) sensors, values in ``[0, 1]``.
        observation_type: ``DEFAULT`` or ``GOAL_SIGNAL``.
        dimension_properties: flags per dimension; default ``[1]`` per dimension for rank 1 and 2,
            ``[1, 2, 2]`` for visual sensors. Use ``(4, 1)`` for a variable-length (buffer) sensor.
        stack_size: number of consecutive reports stacked (Unity's ``StackingSensor``), oldest
            first; vectors are concatenated, visual observations stacked along channels.
        channel_mapping: PNG channel mapping of the *unstacked* sensor (spec §4.1); ``None`` uses
            Unity's default (``[0, 0, 0]`` for one channel, identity padded with ``-1``).

    Raises:
        ValueError: on an empty or non-positive shape, PNG on a non-visual sensor, a stack size
            below 1 or dimension properties of the wrong length.
    """

    name: str
    shape: tuple[int, ...]
    compression: Compression = Compression.NONE
    observation_type: ObservationType = ObservationType.DEFAULT
    dimension_properties: tuple[int, ...] | None = None
    stack_size: int = 1
    channel_mapping: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        shape = tuple(int(d) for d in self.shape)
        object.__setattr__(self, "shape", shape)
        if not shape or any(d <= 0 for d in shape) or len(shape) > 3:
            raise ValueError(
                f"sensor {self.name!r}: shape {shape} must have 1 to 3 positive dimensions"
            )
        if self.compression is Compression.PNG and len(shape) != 3:
            raise ValueError(
                f"sensor {self.name!r}: PNG compression needs a (C, H, W) shape, got {shape}"
            )
        if self.stack_size < 1:
            raise ValueError(f"sensor {self.name!r}: stack_size must be >= 1")
        props = self.dimension_properties
        if props is None:
            props = _default_dimension_properties(len(shape))
        if len(props) != len(shape):
            raise ValueError(
                f"sensor {self.name!r}: {len(props)} dimension properties for shape {shape}"
            )
        object.__setattr__(self, "dimension_properties", tuple(int(p) for p in props))

    @property
    def wire_name(self) -> str:
        """The sensor name on the wire (prefixed when stacked)."""
        if self.stack_size > 1:
            return f"StackingSensor_size{self.stack_size}_{self.name}"
        return self.name

    @property
    def wire_shape(self) -> tuple[int, ...]:
        """Shape after stacking: first dimension (vectors) or channels (visual) times the stack."""
        first = self.shape[0] * self.stack_size
        return (first, *self.shape[1:])

    @property
    def is_visual(self) -> bool:
        """True for rank-3 ``(C, H, W)`` sensors."""
        return len(self.shape) == 3

    @property
    def is_variable_length(self) -> bool:
        """True if some dimension carries the ``VARIABLE_SIZE`` flag."""
        props = self.dimension_properties or ()
        return any(p & DimensionProperty.VARIABLE_SIZE for p in props)


@dataclass(frozen=True)
class ActionSpec:
    """Continuous size plus discrete branch sizes (Unity's ``ActionSpec``)."""

    continuous_size: int = 0
    discrete_branches: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "discrete_branches", tuple(int(b) for b in self.discrete_branches))
        if self.continuous_size < 0 or any(b <= 0 for b in self.discrete_branches):
            raise ValueError(
                f"invalid action spec: continuous {self.continuous_size}, "
                f"branches {self.discrete_branches} (sizes must be positive)"
            )

    @property
    def discrete_size(self) -> int:
        """Number of discrete branches."""
        return len(self.discrete_branches)

    @property
    def mask_size(self) -> int:
        """Length of an action mask: the sum of the branch sizes."""
        return int(sum(self.discrete_branches))

    @property
    def is_hybrid(self) -> bool:
        """True when the spec mixes continuous and discrete actions."""
        return self.continuous_size > 0 and self.discrete_size > 0


@dataclass(frozen=True)
class DecisionSettings:
    """A Decision Requester shared by all agents of a behavior (spec §9.4).

    A decision is requested when ``academy_step % period == offset``; an action every step if
    ``take_actions_between_decisions``, else only on decision steps.
    """

    period: int = 5
    offset: int = 0
    take_actions_between_decisions: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.period <= 20 or not 0 <= self.offset < self.period:
            raise ValueError(
                f"decision period must be in 1..20 and offset in 0..period-1, "
                f"got period {self.period}, offset {self.offset}"
            )


@dataclass(frozen=True)
class BehaviorSpec:
    """One behavior of a scene and the agents that use it.

    Args:
        name: behavior name without team (``3DBall``).
        sensors: the agent's sensors, in any order (the wire order is sorted by name).
        action_spec: the actions each agent receives.
        agents_per_area: how many agents of this behavior one training area holds.
        team_id: the ``?team=`` suffix.
        decision: the Decision Requester, or ``None`` when the scene requests decisions itself.
        max_step: episode length limit in agent steps (0 = none); reaching it interrupts.
        uses_action_mask: call :meth:`Scene.write_action_mask` on every decision.
    """

    name: str
    sensors: tuple[SensorSpec, ...]
    action_spec: ActionSpec
    agents_per_area: int = 1
    team_id: int = 0
    decision: DecisionSettings | None = field(default_factory=DecisionSettings)
    max_step: int = 0
    uses_action_mask: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensors", tuple(self.sensors))
        if not self.name or "?" in self.name:
            raise ValueError(f"behavior name {self.name!r} must be non-empty and without '?'")
        if self.agents_per_area < 0 or self.max_step < 0:
            raise ValueError(f"behavior {self.name!r}: agents_per_area and max_step must be >= 0")
        if self.uses_action_mask and not self.action_spec.discrete_branches:
            raise ValueError(f"behavior {self.name!r}: action masks need discrete branches")
        names = [s.wire_name for s in self.sensors]
        if len(set(names)) != len(names):
            raise ValueError(f"behavior {self.name!r}: duplicate sensor names {names}")

    @property
    def full_name(self) -> str:
        """The fully-qualified behavior name used as map key (``3DBall?team=0``)."""
        return f"{self.name}?team={self.team_id}"

    def wire_sensor_order(self) -> list[int]:
        """Indices into :attr:`sensors` in wire order (sorted like Unity sorts sensor names)."""
        return sorted(
            range(len(self.sensors)), key=lambda i: sensor_sort_key(self.sensors[i].wire_name)
        )


def sensor_sort_key(name: str) -> tuple[str, str]:
    """Approximation of .NET ``InvariantCulture`` ordering: case-insensitive, lower case first."""
    return (name.casefold(), name.swapcase())
