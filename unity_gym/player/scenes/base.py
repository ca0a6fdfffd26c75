"""The Scene contract: what a game level provides to the Academy.

A scene is the player-side counterpart of a Unity scene with its Agent scripts. It declares its
behaviors (:class:`~unity_gym.player.specs.BehaviorSpec`) and implements the Agent callbacks,
*vectorized*: every callback receives an :class:`~unity_gym.player.academy.AgentBatch` (the
agents of one behavior) and ``slots``, a sorted ``int`` array of agent indices in that batch.
Scene state is best kept in numpy arrays indexed by slot; ``slot // agents_per_area`` is the
agent's training area.

Agents act on themselves through the batch, as Unity scripts call Agent methods:
``batch.add_reward(slots, r)``, ``batch.set_reward``, ``batch.end_episode(slots)``,
``batch.interrupt_episode``, ``batch.request_decision``, ``batch.request_action``,
``batch.respawn(slots)`` (destroy and re-create: the agent gets a new id) and
``batch.set_group(slots, group_ids)``. Scene-wide services live on the
:class:`~unity_gym.player.academy.SceneContext` given to :meth:`Scene.setup` (``self.ctx``):
the seeded ``rng``, ``parameters`` (environment parameters), ``stats``, ``engine`` settings,
multi-agent groups (``create_groups``, ``add_group_reward``, ``end_group_episode``, ...).

Call order (spec §9.2), once per Academy step (one FixedUpdate):

1. the first step only: :meth:`Scene.on_environment_reset`, then :meth:`Scene.on_episode_begin`
   for every agent (a RESET from the trainer does the same, in the middle of a step);
2. :meth:`Scene.before_academy_step` (scripts' FixedUpdate, e.g. scripted ``request_decision``);
3. decision requesters; step counters advance;
4. :meth:`Scene.collect_observations` (and :meth:`Scene.write_action_mask`) for agents that
   requested a decision;
5. one exchange with the trainer (or :meth:`Scene.heuristic` without one);
6. :meth:`Scene.on_action_received` for agents with a pending action; then max-step checks;
7. :meth:`Scene.after_academy_step` (the physics step and collision callbacks).

Ending an episode collects a final observation (:meth:`Scene.collect_observations`) and
immediately begins the next one (:meth:`Scene.on_episode_begin`). Scenes must draw randomness
from ``self.ctx.rng`` only, so that a seed and an action sequence reproduce a run exactly.

Pictures for people (``--record-video``): :meth:`Scene.draw` draws one training area as it is
between two Academy steps, with :mod:`unity_gym.player.render` (a ``Canvas`` for a top-down or
side view, or the ray caster). It only reads the scene's state: a run computes
the same whether or not it is drawn, and nothing is drawn unless a video is recorded. The base
class draws a chart of the area's agents (episode reward so far and steps), so every scene can be
recorded; a scene overrides :meth:`Scene.draw` to show its world. Callers use
:meth:`Scene.picture`, which checks the area, the size and the result.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import PlayerError, SceneError
from ..render import Canvas, Colour
from ..specs import BehaviorSpec

if TYPE_CHECKING:
    from ..academy import AgentBatch, SceneContext

__all__ = ["MaxStepOption", "Scene", "SceneOption"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "text"}
_GAIN: Colour = (0.35, 0.8, 0.4)
_LOSS: Colour = (0.9, 0.35, 0.3)
_STEPS: Colour = (0.45, 0.6, 0.95)
_AXIS: Colour = (0.6, 0.6, 0.6)
_LABEL: Colour = (0.85, 0.85, 0.85)


@dataclass(frozen=True)
class SceneOption:
    """A scene-specific option, set with ``--option name=value``."""

    name: str
    kind: type
    default: object
    help: str

    def parse(self, text: str) -> object:
        """Convert ``text`` to :attr:`kind`.

        Raises:
            PlayerError: if ``text`` is not a valid value.
        """
        try:
            if self.kind is bool:
                lowered = text.strip().lower()
                if lowered in _TRUE:
                    return True
                if lowered in _FALSE:
                    return False
                raise ValueError(text)
            return self.kind(text)
        except ValueError:
            expected = _KIND_NAMES.get(self.kind, self.kind.__name__)
            raise PlayerError(
                f"option {self.name}={text!r}: expected {expected} ({self.help})"
            ) from None


class Scene(ABC):
    """Base class of scenes; see the module documentation for the contract and call order.

    Args:
        options: scene options by name (strings are parsed, other values used as given);
            unknown names are an error.
        num_agents: total agents of the stock scene (all behaviors); must be a multiple of the
            agents per area. ``None`` keeps :attr:`default_area_count` areas.

    Raises:
        PlayerError: on unknown or invalid options or an impossible agent count.
    """

    #: Name used with ``--scene``.
    name: ClassVar[str]
    #: One line shown by ``--list-scenes``.
    summary: ClassVar[str] = ""
    #: Training areas of the stock scene (multiplied by the handshake's ``num_areas``).
    default_area_count: ClassVar[int] = 1
    #: Scene options accepted with ``--option name=value``.
    option_specs: ClassVar[tuple[SceneOption, ...]] = ()
    #: Seconds of simulated time per Academy step (Unity's fixed timestep).
    fixed_delta_time: ClassVar[float] = 0.02
    #: Default ``(width, height)`` of :meth:`draw`'s pictures, in pixels.
    draw_size: ClassVar[tuple[int, int]] = (320, 240)
    #: Academy steps between two video frames by default (2: real time at 25 frames per second
    #: with the 0.02 s step; scenes whose agents move one cell per step show every step).
    frame_steps: ClassVar[int] = 2

    def __init__(
        self, options: Mapping[str, object] | None = None, *, num_agents: int | None = None
    ) -> None:
        self.options = self.resolve_options(options or {})
        self.ctx: SceneContext
        per_area = sum(b.agents_per_area for b in self.behaviors())
        if num_agents is None:
            self.base_area_count = self.default_area_count
        elif num_agents <= 0 or per_area == 0 or num_agents % per_area:
            raise PlayerError(
                f"scene {self.name}: --num-agents {num_agents} must be a positive multiple of "
                f"{per_area} (agents per training area)"
            )
        else:
            self.base_area_count = num_agents // per_area

    @classmethod
    def resolve_options(cls, given: Mapping[str, object]) -> dict[str, Any]:
        """Defaults overridden by ``given``.

        Raises:
            PlayerError: on an unknown name or a value that does not parse.
        """
        specs = {spec.name: spec for spec in cls.option_specs}
        resolved: dict[str, Any] = {spec.name: spec.default for spec in cls.option_specs}
        for key, value in given.items():
            spec = specs.get(key)
            if spec is None:
                valid = ", ".join(sorted(specs)) or "none"
                raise PlayerError(
                    f"scene {cls.name} has no option {key!r} (valid options: {valid})"
                )
            resolved[key] = spec.parse(value) if isinstance(value, str) else value
        return resolved

    @classmethod
    def parse_option_pairs(cls, pairs: Iterable[str]) -> dict[str, str]:
        """Split ``name=value`` strings.

        Raises:
            PlayerError: if a pair has no ``=``.
        """
        parsed: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise PlayerError(f"--option {pair!r}: expected name=value, e.g. step_time=0.002")
            parsed[key.strip()] = value.strip()
        return parsed

    @classmethod
    def describe_options(cls) -> str:
        """Human-readable list of the options and their defaults."""
        if not cls.option_specs:
            return "  (no options)"
        return "\n".join(f"  {o.name}={o.default!r}: {o.help}" for o in cls.option_specs)

    # ---- declaration -------------------------------------------------------------------------

    @abstractmethod
    def behaviors(self) -> Sequence[BehaviorSpec]:
        """The behaviors of the scene, in agent initialization order within an area.

        Must depend only on :attr:`options` (it is called before the handshake).
        """

    # ---- lifecycle ---------------------------------------------------------------------------

    def setup(self, context: SceneContext) -> None:
        """Called once, after the agents exist; allocate per-area/per-agent state here.

        ``context.area_count`` is the final number of areas (``base_area_count * num_areas``).
        """
        self.ctx = context

    def initialize_agents(self, batch: AgentBatch, slots: np.ndarray) -> None:  # noqa: B027
        """Agent ``Initialize()``: at start-up and for respawned agents."""

    def on_environment_reset(self) -> None:  # noqa: B027
        """Academy reset (first step and every RESET), before the agents' episode begins."""

    @abstractmethod
    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Agent ``OnEpisodeBegin()``: put these agents in a fresh episode state."""

    @abstractmethod
    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """One array per sensor, in ``BehaviorSpec.sensors`` order, shaped ``(len(slots),
        *sensor.shape)`` (unstacked; the Academy stacks)."""

    def write_action_mask(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """Bool array ``(len(slots), sum(branches))``, true = action disabled (only called when
        the behavior sets ``uses_action_mask``). Default: nothing masked."""
        return np.zeros((len(slots), batch.spec.action_spec.mask_size), dtype=bool)

    @abstractmethod
    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Agent ``OnActionReceived()``: execute actions (``(k, c)`` floats, ``(k, b)`` ints)."""

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Actions without a trainer; ``observations`` are in wire order. Default: zeros."""
        spec = batch.spec.action_spec
        return (
            np.zeros((len(slots), spec.continuous_size), dtype=np.float32),
            np.zeros((len(slots), spec.discrete_size), dtype=np.int32),
        )

    def before_academy_step(self, academy_step: int) -> None:  # noqa: B027
        """Scripts' ``FixedUpdate`` running before the Academy step (``academy_step`` = steps
        since the last reset)."""

    def after_academy_step(self) -> None:  # noqa: B027
        """Physics and scripts running after the Academy step (e.g. moving a ball)."""

    # ---- pictures for people -----------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """A picture of training area ``area`` as it is now (the hook scenes override).

        Contract: return ``(height, width, 3)`` uint8 RGB (row 0 at the top) for ``size`` =
        ``(width, height)``; read the scene's state only: never change it, draw from
        ``self.ctx.rng`` or call the batches' Agent API, so that a run computes the same whether
        or not it is drawn. It is called between Academy steps (after the first), with
        ``0 <= area < self.ctx.area_count``. Draw with :mod:`unity_gym.player.render`: a
        :class:`~unity_gym.player.render.Canvas` (a top-down or side view) or the ray caster.

        Default: a chart of the area's agents, one column each (behaviors in declaration
        order): a bar of the reward of the episode so far (green up, red down; the scale is the
        largest absolute value, at least 1) above a bar of its steps in the episode (against
        the behavior's ``max_step``, else 1000).
        """
        width, height = size
        columns = []
        for spec in self.behaviors():
            count = spec.agents_per_area
            if count == 0:
                continue
            batch = self.ctx.batch(spec.full_name)
            slots = np.arange(area * count, (area + 1) * count)
            limit = spec.max_step or 1000
            rewards = batch.cumulative_rewards[slots]
            steps = np.minimum(batch.step_count[slots] / limit, 1.0)
            columns += list(zip(rewards.tolist(), steps.tolist(), strict=True))
        canvas = Canvas(width, height, (0.0, -1.6, max(len(columns), 1), 1.15))
        scale = max(1.0, *(abs(reward) for reward, _ in columns)) if columns else 1.0
        canvas.segments([0.0, 0.0, max(len(columns), 1), 0.0], _AXIS, width=1)
        for index, (reward, steps) in enumerate(columns):
            left = index + 0.15
            value = reward / scale
            colour = _GAIN if value >= 0 else _LOSS
            canvas.polygon(
                [(left, 0.0), (left + 0.7, 0.0), (left + 0.7, value), (left, value)], colour
            )
            canvas.rectangle((index + 0.5, -1.3), (0.35, 0.1), None, outline=_AXIS)
            if steps > 0:
                canvas.polygon(
                    [
                        (left, -1.4),
                        (left + 0.7 * steps, -1.4),
                        (left + 0.7 * steps, -1.2),
                        (left, -1.2),
                    ],
                    _STEPS,
                )
        canvas.text((max(len(columns), 1) / 2.0, -0.8), f"{self.name}: reward, steps", _LABEL)
        return canvas.picture()

    def picture(self, area: int = 0, size: tuple[int, int] | None = None) -> np.ndarray:
        """:meth:`draw` with its arguments and result checked: what callers use.

        Args:
            area: the training area to draw.
            size: ``(width, height)`` in pixels; ``None``: :attr:`draw_size`.

        Returns:
            ``(height, width, 3)`` uint8 RGB.

        Raises:
            PlayerError: on an area that does not exist or a size below 16 x 16 pixels.
            SceneError: if :meth:`draw` returns another shape or type.
        """
        count = self.ctx.area_count
        if not 0 <= area < count:
            raise PlayerError(
                f"scene {self.name} has areas 0 to {count - 1}; there is no area {area}"
            )
        width, height = size if size is not None else self.draw_size
        if width < 16 or height < 16:
            raise PlayerError(f"picture size {width}x{height} is too small (16x16 at least)")
        found = np.asarray(self.draw(area, (int(width), int(height))))
        if found.shape != (height, width, 3) or found.dtype != np.uint8:
            raise SceneError(
                f"scene {self.name}: draw returned {found.dtype}{found.shape}, expected "
                f"uint8({height}, {width}, 3)"
            )
        return found


class MaxStepOption:
    """Mixin for scenes whose agents' ``MaxStep`` is the scene option ``max_step`` (a player
    addition: tests shorten episodes with it; Unity's scripts also scale their step penalty,
    ``-1 / MaxStep``, by it).

    Give the class :meth:`option` in its ``option_specs`` and read :attr:`max_step`.
    """

    name: ClassVar[str]
    options: dict[str, Any]

    @staticmethod
    def option(default: int) -> SceneOption:
        """The ``max_step`` option with Unity's value ``default``."""
        return SceneOption(
            "max_step", int, default, "the agent's MaxStep; the step penalty is -1/max_step"
        )

    @property
    def max_step(self) -> int:
        """The episode limit in agent steps.

        Raises:
            PlayerError: if the option is below 1.
        """
        value = int(self.options["max_step"])
        if value < 1:
            raise PlayerError(f"scene {self.name}: option max_step={value} must be at least 1")
        return value
