"""The Academy: Unity's per-step agent life cycle (spec §9), vectorized over agents.

:class:`Academy` owns the agents (one :class:`AgentBatch` per behavior) and runs
``environment_step()`` in Unity's order: first reset, decision requesters, step counters, decision
reports, at most one exchange with the trainer (only if something was reported), actions, max-step
checks. :class:`SceneContext` is what scenes see of it.

Agents can leave mid-episode and come back, as Unity's ``agent.gameObject.SetActive(false)`` /
``SetActive(true)`` (:meth:`AgentBatch.disable`, :meth:`AgentBatch.enable`): a disabled agent
reports one terminal step (done, not interrupted), leaves its multi-agent group and takes no part
in the Academy step (no decisions, actions, step counting or resets) until it is enabled again,
with a new id and a new episode, while the rest of its group plays on.

Agent ids come from a process-wide counter starting at 0, assigned when an agent is created
(area by area, behavior by behavior); they survive episodes and change only on
:meth:`AgentBatch.respawn`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from unity_gym.behavior_names import BehaviorSelectionError, select_behavior
from unity_gym.protocol.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto

from .capabilities import Capabilities
from .errors import SceneError
from .profiling import StepProfiler
from .side_channels import (
    EngineSettings,
    EnvironmentParameters,
    SideChannelHub,
    StandardChannels,
    StatAggregation,
    StatsRecorder,
)
from .specs import BehaviorSpec
from .stacking import ObservationStack
from .wire import AgentReports, OutputBuilder, read_actions

if TYPE_CHECKING:
    from .connection import TrainerConnection

__all__ = ["Academy", "AgentBatch", "Decider", "SceneContext", "SceneHooks", "episode_stat_keys"]

logger = logging.getLogger("unity_gym.player")

_RESET = 1
_QUIT = 2

Slots = np.ndarray | Sequence[int] | slice


def episode_stat_keys(behavior: str) -> tuple[str, str]:
    """Stats keys sent at each episode end: cumulative reward and length, per behavior."""
    return (f"Player/Cumulative Reward/{behavior}", f"Player/Episode Length/{behavior}")


class AgentBatch:
    """The agents of one behavior as parallel arrays indexed by *slot*.

    Public arrays (read them, do not assign to them): ``ids`` (wire ids), ``step_count``
    (agent steps in the current episode), ``group_id``, ``episodes_begun`` (episodes each slot's
    agents began since start-up, the first one included), ``last_episode_rewards`` (the reward
    each slot's last finished episode collected: :attr:`cumulative_rewards` at its terminal
    report, group rewards not included); :attr:`active` tells which agents are
    enabled (see :meth:`disable`). The methods are Unity's Agent API,
    vectorized: each takes ``slots`` (an int array, a bool mask of length :attr:`size`, a
    sequence or a slice).
    """

    def __init__(self, academy: Academy, spec: BehaviorSpec, ids: np.ndarray) -> None:
        self._academy = academy
        self._scene = academy.scene
        self.spec = spec
        self.name = spec.full_name
        self.size = int(ids.shape[0])
        n = self.size
        actions = spec.action_spec
        self.ids = ids.astype(np.int32)
        self.step_count = np.zeros(n, dtype=np.int64)
        self.group_id = np.zeros(n, dtype=np.int32)
        self.episodes_begun = np.zeros(n, dtype=np.int64)
        self.last_episode_rewards = np.zeros(n, dtype=np.float32)
        self._reward = np.zeros(n, dtype=np.float32)
        self._cumulative_reward = np.zeros(n, dtype=np.float32)
        self._group_reward = np.zeros(n, dtype=np.float32)
        self._decision_requested = np.zeros(n, dtype=bool)
        self._action_requested = np.zeros(n, dtype=bool)
        self._done_reported = np.zeros(n, dtype=bool)
        self._active = np.ones(n, dtype=bool)
        self._continuous = np.zeros((n, actions.continuous_size), dtype=np.float32)
        self._discrete = np.zeros((n, actions.discrete_size), dtype=np.int32)
        self._last_mask = (
            np.zeros((n, actions.mask_size), dtype=bool) if spec.uses_action_mask else None
        )
        self._sensor_order = spec.wire_sensor_order()
        self._stacks = [
            ObservationStack(n, s.shape, s.stack_size) if s.stack_size > 1 else None
            for s in spec.sensors
        ]
        self._all_slots = np.arange(n)
        self._all_slots.flags.writeable = False  # handed to scenes as ``slots``
        #: Reports queued since the last exchange, in order.
        self.queued: list[AgentReports] = []

    def __repr__(self) -> str:
        return f"AgentBatch({self.name!r}, size={self.size})"

    # ---- Agent API for scenes ----------------------------------------------------------------

    def slots(self, which: Slots) -> np.ndarray:
        """Normalize ``which`` to an int array of slots (order kept)."""
        if type(which) is np.ndarray and which.dtype == np.intp and which.ndim == 1:
            return which  # the Academy's own slot arrays (the common case): nothing to convert
        if isinstance(which, slice):
            return self._all_slots[which]
        arr = np.asarray(which)
        if arr.dtype == bool:
            if arr.shape != (self.size,):
                raise SceneError(
                    f"{self.name}: a bool slot mask must have shape ({self.size},), got {arr.shape}"
                )
            return np.flatnonzero(arr)
        return arr.astype(np.intp, copy=False).reshape(-1)

    def add_reward(self, slots: Slots, values: float | np.ndarray) -> None:
        """``AddReward``: accumulate rewards until the next report."""
        idx = self.slots(slots)
        amounts = np.asarray(values, dtype=np.float32)
        np.add.at(self._reward, idx, amounts)
        np.add.at(self._cumulative_reward, idx, amounts)

    def set_reward(self, slots: Slots, values: float | np.ndarray) -> None:
        """``SetReward``: replace the reward accumulated since the last report."""
        idx = self.slots(slots)
        new = np.asarray(values, dtype=np.float32)
        if idx is self._all_slots:
            # Every agent, in order (what the Academy passes to a scene when all act): the same
            # float32 arithmetic on whole arrays, without gathers and scatters.
            self._cumulative_reward += new - self._reward
            self._reward[...] = new
            return
        self._cumulative_reward[idx] += new - self._reward[idx]
        self._reward[idx] = new

    def request_decision(self, slots: Slots) -> None:
        """``RequestDecision``: report at the next Academy step (and act on the answer)."""
        idx = self.slots(slots)
        self._decision_requested[idx] = True
        self._action_requested[idx] = True

    def request_action(self, slots: Slots) -> None:
        """``RequestAction``: repeat the last action at the next Academy step."""
        self._action_requested[self.slots(slots)] = True

    def end_episode(self, slots: Slots) -> None:
        """``EndEpisode``: terminal report (not interrupted), then a new episode.

        Disabled agents (see :meth:`disable`) are left alone.
        """
        self._end(self._enabled(self.slots(slots)), interrupted=False, restart=True)

    def interrupt_episode(self, slots: Slots) -> None:
        """``EpisodeInterrupted``: terminal report with ``max_step_reached``, then a new episode.

        Disabled agents (see :meth:`disable`) are left alone.
        """
        self._end(self._enabled(self.slots(slots)), interrupted=True, restart=True)

    def disable(self, slots: Slots) -> None:
        """Unity's ``agent.gameObject.SetActive(false)``: the agents leave mid-episode.

        Follows ``Agent.OnDisable`` (ML-Agents 2.x, com.unity.ml-agents Agent.cs): the agent first
        reports a terminal step (done, not interrupted, ``DoneReason.Disabled``; nothing if its
        last report was already terminal) with its reward, group id and group reward, then leaves
        its ``SimpleMultiAgentGroup`` (``OnAgentDisabled`` unregisters it: group id 0) and stops
        taking part in the Academy step: its Decision Requester does not run, its step count
        stands still, it neither reports nor acts, and Academy resets and group episode ends pass
        it by. No new episode begins and no episode statistics are recorded. The other agents,
        its group mates included, go on. Already disabled agents are ignored.
        """
        idx = np.unique(self.slots(slots))
        idx = idx[self._active[idx]]
        if not idx.size:
            return
        self._end(idx, interrupted=False, restart=False)
        self._active[idx] = False
        self.group_id[idx] = 0
        self._decision_requested[idx] = False
        self._action_requested[idx] = False

    def enable(self, slots: Slots) -> None:
        """Unity's ``agent.gameObject.SetActive(true)`` on disabled agents: they come back.

        Follows ``Agent.OnEnable`` -> ``LazyInitialize`` (ML-Agents 2.x): the agent is
        initialized anew, with a new id (spec 9.4: a disabled and re-enabled agent gets a new
        id), :meth:`Scene.initialize_agents` and, once the Academy has had its first reset, a new
        episode (:meth:`Scene.on_episode_begin`). It is in no group: register it again with
        :meth:`set_group` (as Unity scripts call ``RegisterAgent``). Enabled agents are ignored
        (``SetActive(true)`` on an active object does nothing).
        """
        idx = np.unique(self.slots(slots))
        idx = idx[~self._active[idx]]
        if idx.size:
            self.respawn(idx)

    @property
    def active(self) -> np.ndarray:
        """Which agents are enabled (read-only copy; see :meth:`disable`)."""
        return self._active.copy()

    def respawn(self, slots: Slots) -> None:
        """Destroy these agents and create new ones in their slots (new ids, fresh state).

        An agent whose last report was not terminal reports done first, like a disabled agent.
        """
        idx = np.unique(self.slots(slots))
        if not idx.size:
            return
        self._end(idx, interrupted=False, restart=False)
        self._active[idx] = True
        self.ids[idx] = self._academy._allocate_ids(idx.size)
        for array in (self.step_count, self.group_id):
            array[idx] = 0
        for farray in (self._reward, self._cumulative_reward, self._group_reward):
            farray[idx] = 0.0
        for flags in (self._decision_requested, self._action_requested, self._done_reported):
            flags[idx] = False
        self._continuous[idx] = 0.0
        self._discrete[idx] = 0
        if self._last_mask is not None:
            self._last_mask[idx] = False
        self._reset_stacks(idx)
        self._scene.initialize_agents(self, idx)
        if self._academy.total_step_count > 0:
            self._begin_episodes(idx)

    def set_group(self, slots: Slots, group_ids: int | np.ndarray) -> None:
        """Register agents with multi-agent groups (0 = no group)."""
        self.group_id[self.slots(slots)] = group_ids

    @property
    def rewards(self) -> np.ndarray:
        """Reward accumulated since each agent's last report (read-only copy)."""
        return self._reward.copy()

    @property
    def cumulative_rewards(self) -> np.ndarray:
        """Reward accumulated in each agent's current episode (read-only copy)."""
        return self._cumulative_reward.copy()

    # ---- Academy internals -------------------------------------------------------------------

    def _enabled(self, idx: np.ndarray) -> np.ndarray:
        return idx[self._active[idx]]

    def _begin_episodes(self, idx: np.ndarray) -> None:
        self.episodes_begun[idx] += 1
        self._scene.on_episode_begin(self, idx)

    def _add_group_reward(self, idx: np.ndarray, values: np.ndarray, replace: bool) -> None:
        if replace:
            self._group_reward[idx] = values
        else:
            self._group_reward[idx] += values

    def _apply_decision_requester(self, academy_step: int) -> None:
        decision = self.spec.decision
        if decision is None:
            return
        if academy_step % decision.period == decision.offset:
            self._decision_requested |= self._active
            self._action_requested |= self._active
        elif decision.take_actions_between_decisions:
            self._action_requested |= self._active

    def _observe(self, idx: np.ndarray) -> list[np.ndarray]:
        raw = self._scene.collect_observations(self, idx)
        sensors = self.spec.sensors
        if len(raw) != len(sensors):
            raise SceneError(
                f"{self.name}: collect_observations returned {len(raw)} arrays for "
                f"{len(sensors)} sensors"
            )
        result = []
        for i in self._sensor_order:
            sensor = sensors[i]
            data = np.asarray(raw[i], dtype=np.float32)
            if data.shape != (idx.size, *sensor.shape):
                raise SceneError(
                    f"{self.name}: sensor {sensor.name} returned shape {data.shape}, expected "
                    f"{(idx.size, *sensor.shape)}"
                )
            stack = self._stacks[i]
            result.append(data if stack is None else stack.push(idx, data))
        return result

    def _reset_stacks(self, idx: np.ndarray) -> None:
        for stack in self._stacks:
            if stack is not None:
                stack.reset(idx)

    def _queue(
        self,
        idx: np.ndarray,
        observations: list[np.ndarray],
        *,
        done: bool,
        interrupted: bool = False,
        masks: np.ndarray | None = None,
    ) -> None:
        if idx is self._all_slots:  # copies of whole arrays: faster than gathers
            ids, rewards = self.ids.copy(), self._reward.copy()
            group_ids, group_rewards = self.group_id.copy(), self._group_reward.copy()
        else:
            ids, rewards = self.ids[idx], self._reward[idx]
            group_ids, group_rewards = self.group_id[idx], self._group_reward[idx]
        self.queued.append(
            AgentReports(
                slots=idx,
                ids=ids,
                rewards=rewards,
                group_ids=group_ids,
                group_rewards=group_rewards,
                observations=observations,
                done=done,
                interrupted=np.full(idx.size, interrupted) if done else None,
                action_masks=masks,
            )
        )
        self._academy._need_exchange = True

    def _send_decisions(self) -> np.ndarray:
        idx = (self._decision_requested & self._active).nonzero()[0]
        if not idx.size:
            return idx
        if idx.size == self.size:
            idx = self._all_slots  # the same values; lets scenes and the resets below use slices
        observations = self._observe(idx)
        masks = None
        if self._last_mask is not None:
            mask = np.asarray(self._scene.write_action_mask(self, idx), dtype=bool)
            expected = (idx.size, self.spec.action_spec.mask_size)
            if mask.shape != expected:
                raise SceneError(
                    f"{self.name}: write_action_mask returned shape {mask.shape}, "
                    f"expected {expected}"
                )
            self._last_mask[idx] = mask
            masks = mask
        self._queue(idx, observations, done=False, masks=masks)
        self._decision_requested.fill(False)  # idx, and inactive agents, which never decide
        reset = slice(None) if idx is self._all_slots else idx
        self._done_reported[reset] = False
        self._reward[reset] = 0.0
        self._group_reward[reset] = 0.0
        self._continuous[reset] = 0.0
        self._discrete[reset] = 0
        return idx

    def _end(self, idx: np.ndarray, *, interrupted: bool, restart: bool) -> None:
        if idx.size > 1:
            idx = np.unique(idx)
        fresh = idx[~self._done_reported[idx]]
        if fresh.size:
            observations = self._observe(fresh)
            masks = self._last_mask[fresh] if self._last_mask is not None else None
            self._queue(fresh, observations, done=True, interrupted=interrupted, masks=masks)
            self._reset_stacks(fresh)
            if restart:
                self._academy._record_episodes(self, fresh, self._cumulative_reward[fresh])
            self.last_episode_rewards[fresh] = self._cumulative_reward[fresh]
            self._reward[fresh] = 0.0
            self._group_reward[fresh] = 0.0
            self._cumulative_reward[fresh] = 0.0
            self._action_requested[fresh] = False
            self._decision_requested[fresh] = False
            self._done_reported[fresh] = True
            self._continuous[fresh] = 0.0
            self._discrete[fresh] = 0
        if restart and idx.size:
            self.step_count[idx] = 0
            self._begin_episodes(idx)

    def _act(self) -> None:
        idx = (self._action_requested & self._active).nonzero()[0]
        if idx.size:
            self._action_requested.fill(False)  # idx, and inactive agents, which never act
            if idx.size == self.size:
                idx = self._all_slots  # the same values: slices instead of gathers below
                continuous, discrete = self._continuous.copy(), self._discrete.copy()
            else:
                continuous, discrete = self._continuous[idx], self._discrete[idx]
            self._scene.on_action_received(self, idx, continuous, discrete)
        max_step = self.spec.max_step
        if max_step > 0:
            over = ((self.step_count >= max_step) & self._active).nonzero()[0]
            if over.size:
                self._end(over, interrupted=True, restart=True)

    def _set_actions(self, idx: np.ndarray, continuous: np.ndarray, discrete: np.ndarray) -> None:
        rows = slice(None) if idx is self._all_slots else idx
        self._continuous[rows] = continuous
        self._discrete[rows] = discrete


class SceneContext:
    """What a scene can use besides its batches: randomness, parameters, stats, groups."""

    def __init__(self, academy: Academy) -> None:
        self._academy = academy

    @property
    def rng(self) -> np.random.Generator:
        """The scene's random generator, seeded from the handshake seed (or ``--seed``)."""
        return self._academy.rng

    @property
    def seed(self) -> int:
        """The seed of :attr:`rng` (handshake seed, or ``--seed`` without a trainer)."""
        return self._academy.seed

    @property
    def num_areas(self) -> int:
        """``num_areas`` from the handshake (1 without a trainer)."""
        return self._academy.num_areas

    @property
    def area_count(self) -> int:
        """Training areas in this run: the scene's base areas times ``num_areas``."""
        return self._academy.area_count

    @property
    def parameters(self) -> EnvironmentParameters:
        """Environment parameters from Python (``get_with_default``, ``read_many``)."""
        return self._academy.channels.parameters

    @property
    def stats(self) -> StatsRecorder:
        """Statistics to send to Python."""
        return self._academy.channels.stats

    @property
    def engine(self) -> EngineSettings:
        """Engine settings (time scale, frame rates, resolution)."""
        return self._academy.channels.engine.settings

    @property
    def is_training(self) -> bool:
        """True when a trainer is connected."""
        return self._academy.connection is not None

    @property
    def academy_step(self) -> int:
        """Academy steps since the last reset."""
        return self._academy.step_count

    @property
    def total_steps(self) -> int:
        """Academy steps since start-up."""
        return self._academy.total_step_count

    def batch(self, behavior: str) -> AgentBatch:
        """The batch of ``behavior`` (full name ``3DBall?team=0`` or plain ``3DBall`` if unique).

        Raises:
            SceneError: if no (or more than one) behavior matches.
        """
        return self._academy.batch(behavior)

    def create_groups(self, count: int) -> np.ndarray:
        """Ids of ``count`` new multi-agent groups (a process-wide counter starting at 1)."""
        return self._academy._allocate_groups(count)

    def add_group_reward(self, group_ids: np.ndarray | int, values: np.ndarray | float) -> None:
        """``AddGroupReward`` for each group: every member's group reward grows."""
        self._academy._group_reward(group_ids, values, replace=False)

    def set_group_reward(self, group_ids: np.ndarray | int, values: np.ndarray | float) -> None:
        """``SetGroupReward`` for each group."""
        self._academy._group_reward(group_ids, values, replace=True)

    def end_group_episode(self, group_ids: np.ndarray | int) -> None:
        """``EndGroupEpisode``: every member ends its episode."""
        for batch, idx in self._academy._group_members(group_ids):
            batch.end_episode(idx)

    def interrupt_group_episode(self, group_ids: np.ndarray | int) -> None:
        """``GroupEpisodeInterrupted``: every member's episode is interrupted."""
        for batch, idx in self._academy._group_members(group_ids):
            batch.interrupt_episode(idx)


class Decider(Protocol):
    """What acts for one behavior instead of the scene's heuristic when no trainer is connected
    (e.g. an ONNX model, :mod:`unity_gym.player.onnx_policy`)."""

    def decide(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        observations: Sequence[np.ndarray],
        action_masks: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Actions ``(continuous (k, c), discrete (k, b))`` for the agents in ``slots``, given
        their observations (wire order, stacked) and Unity's masks (true = disabled) or None."""
        ...

    def episodes_ended(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """The agents in ``slots`` reported the end of an episode (e.g. forget memories)."""
        ...


class SceneHooks(Protocol):
    """What the Academy calls on a scene: the callbacks of :class:`unity_gym.player.Scene`.

    Declared here, structurally, so that the Academy does not import the scenes package (whose
    base class refers to :class:`AgentBatch` and :class:`SceneContext`): every ``Scene``
    satisfies it.
    """

    base_area_count: int

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """The behaviors the scene declares."""
        ...

    def setup(self, context: SceneContext) -> None:
        """Called once with the Academy's context, before the agents are initialized."""
        ...

    def initialize_agents(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Agent ``Initialize()``."""
        ...

    def on_environment_reset(self) -> None:
        """Academy ``OnEnvironmentReset``."""
        ...

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Agent ``OnEpisodeBegin()``."""
        ...

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Agent ``CollectObservations()``."""
        ...

    def write_action_mask(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """Agent ``WriteDiscreteActionMask()``."""
        ...

    def on_action_received(
        self, batch: AgentBatch, slots: np.ndarray, continuous: np.ndarray, discrete: np.ndarray
    ) -> None:
        """Agent ``OnActionReceived()``."""
        ...

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Agent ``Heuristic()``."""
        ...

    def before_academy_step(self, academy_step: int) -> None:
        """Scripts' ``FixedUpdate`` before the Academy step."""
        ...

    def after_academy_step(self) -> None:
        """The physics step after the Academy step."""
        ...


class Academy:
    """Runs a scene's agents step by step, talking to a trainer or playing heuristically.

    Args:
        scene: the scene (constructed, not yet set up).
        channels: the standard side channels (already registered in ``hub``).
        hub: dispatcher of side-channel data.
        connection: the trainer connection after a successful handshake, or ``None``.
        trainer: the trainer's capabilities (``None`` without a trainer).
        seed: seeds :attr:`rng`.
        num_areas: area replication factor from the handshake.
        profiler: where timings go.
        deciders: without a trainer, what acts for some behaviors (full names) instead of the
            scene's heuristic.

    Raises:
        PlayerError: if the scene needs a capability the trainer lacks.
        SceneError: if ``deciders`` names a behavior the scene does not have.
    """

    def __init__(
        self,
        scene: SceneHooks,
        *,
        channels: StandardChannels,
        hub: SideChannelHub,
        connection: TrainerConnection | None = None,
        trainer: Capabilities | None = None,
        seed: int = 0,
        num_areas: int = 1,
        profiler: StepProfiler | None = None,
        deciders: Mapping[str, Decider] | None = None,
    ) -> None:
        self.scene = scene
        self.channels = channels
        self.hub = hub
        self.connection = connection
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.num_areas = max(1, num_areas)
        self.area_count = scene.base_area_count * self.num_areas
        self.profiler = profiler if profiler is not None else StepProfiler()
        self.step_count = 0
        self.total_step_count = 0
        self.episode_count = 0
        self.quit_reason: str | None = None
        self._had_first_reset = False
        self._need_exchange = False
        self._next_agent_id = 0
        self._next_group_id = 1
        self._warned: set[str] = set()
        specs = list(scene.behaviors())
        self._builder = OutputBuilder(specs, trainer) if connection is not None else None
        ids = self._initial_ids(specs)
        self.batches = [AgentBatch(self, spec, ids[i]) for i, spec in enumerate(specs)]
        self._by_name = {b.name: b for b in self.batches}
        self.deciders = dict(deciders or {})
        unknown = sorted(set(self.deciders) - set(self._by_name))
        if unknown:
            raise SceneError(
                f"deciders for {', '.join(unknown)}, which the scene does not have "
                f"(behaviors: {', '.join(self._by_name)})"
            )
        self.context = SceneContext(self)
        scene.setup(self.context)
        for batch in self.batches:
            scene.initialize_agents(batch, np.arange(batch.size))

    def _initial_ids(self, specs: list[BehaviorSpec]) -> list[np.ndarray]:
        per_area = [spec.agents_per_area for spec in specs]
        stride = sum(per_area)
        offsets = np.cumsum([0, *per_area[:-1]])
        result = []
        for spec_index, count in enumerate(per_area):
            area = np.repeat(np.arange(self.area_count), count)
            within = np.tile(np.arange(count), self.area_count)
            result.append(area * stride + offsets[spec_index] + within)
        self._next_agent_id = stride * self.area_count
        return result

    # ---- queries -----------------------------------------------------------------------------

    @property
    def agent_count(self) -> int:
        """Agents across all behaviors."""
        return sum(b.size for b in self.batches)

    def batch(self, behavior: str) -> AgentBatch:
        """The batch of ``behavior`` (full name, or plain name when unique: the rule of
        :func:`unity_gym.behavior_names.select_behavior`).

        Raises:
            SceneError: if no behavior (or several) match.
        """
        try:
            return self._by_name[select_behavior(self._by_name, behavior, option="behavior ")]
        except BehaviorSelectionError as error:
            raise SceneError(str(error)) from None

    # ---- the step ----------------------------------------------------------------------------

    def environment_step(self) -> bool:
        """One Academy step (spec §9.2).

        Returns:
            False when the game must quit (see :attr:`quit_reason`).
        """
        detailed = self.profiler.detailed
        mark = time.perf_counter() if detailed else 0.0
        if not self._had_first_reset:
            self._full_reset()
        self.scene.before_academy_step(self.step_count)
        for batch in self.batches:
            batch._apply_decision_requester(self.step_count)
        self.step_count += 1
        self.total_step_count += 1
        for batch in self.batches:
            batch.step_count += batch._active
        if detailed:
            mark = self._phase("requests", mark)
        for batch in self.batches:
            batch._send_decisions()
        if detailed:
            mark = self._phase("observe", mark)
        keep_running = self._decide()
        if detailed:
            mark = self._phase("decide", mark)
        if not keep_running:
            return False
        for batch in self.batches:
            batch._act()
        if detailed:
            mark = self._phase("act", mark)
        self.scene.after_academy_step()
        if detailed:
            self._phase("after_step", mark)
        return True

    def _phase(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.profiler.record_phase(name, now - since)
        return now

    def _full_reset(self) -> None:
        self.step_count = 0
        self.episode_count += 1
        self._had_first_reset = True
        self.scene.on_environment_reset()
        for batch in self.batches:
            # Academy.AgentForceReset reaches enabled agents only.
            enabled = np.flatnonzero(batch._active)
            batch.step_count[enabled] = 0
            batch._begin_episodes(enabled)

    def _decide(self) -> bool:
        connection = self.connection
        if connection is None:
            self._decide_heuristically()
            self.hub.discard_outgoing()
            return True
        if not self._need_exchange:
            return True
        self._need_exchange = False
        assert self._builder is not None
        start = time.perf_counter()
        queued = {batch.name: batch.queued for batch in self.batches}
        output = self._builder.build(queued, self.hub.collect_outgoing())
        decisions = {
            batch.name: [r.slots for r in batch.queued if not r.done] for batch in self.batches
        }
        for batch in self.batches:
            batch.queued = []
        built = time.perf_counter()
        reply = connection.exchange(output)
        if reply is None:
            self.quit_reason = connection.stop_reason
            return False
        applied_start = time.perf_counter()
        keep_running = True
        if reply.HasField("rl_input"):
            keep_running = self._apply_input(reply.rl_input, decisions)
        own = (built - start) + connection.last_own_seconds + (time.perf_counter() - applied_start)
        self.profiler.record_exchange(own, connection.last_wait_seconds)
        return keep_running

    def _apply_input(
        self, rl_input: UnityRLInputProto, decisions: dict[str, list[np.ndarray]]
    ) -> bool:
        self.hub.process_incoming(rl_input.side_channel)
        command = rl_input.command
        if command == _RESET:
            self._full_reset()
            return True
        if command == _QUIT:
            self.quit_reason = "the trainer sent QUIT"
            return False
        for name, actions in rl_input.agent_actions.items():
            batch = self._by_name.get(name)
            if batch is None:
                self._warn_once(f"unknown:{name}", f"actions for unknown behavior {name!r} ignored")
                continue
            chunks = decisions.get(name) or []
            if not chunks or not len(actions.value):
                continue
            idx = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
            continuous, discrete, problem = read_actions(
                actions.value, idx.size, batch.spec.action_spec
            )
            if problem:
                self._warn_once(
                    f"actions:{name}",
                    f"behavior {name}: {problem}; missing values are zeros (a Unity player "
                    "would fail)",
                )
            batch._set_actions(idx, continuous, discrete)
        return True

    def _decide_heuristically(self) -> None:
        for batch in self.batches:
            decider = self.deciders.get(batch.name)
            for reports in batch.queued:
                idx = reports.slots
                if reports.done:
                    if decider is not None:
                        decider.episodes_ended(batch, idx)
                    continue
                if decider is None:
                    continuous, discrete = self.scene.heuristic(batch, idx, reports.observations)
                else:
                    continuous, discrete = decider.decide(
                        batch, idx, reports.observations, reports.action_masks
                    )
                spec = batch.spec.action_spec
                continuous = np.asarray(continuous, dtype=np.float32).reshape(
                    idx.size, spec.continuous_size
                )
                discrete = np.asarray(discrete, dtype=np.int32).reshape(
                    idx.size, spec.discrete_size
                )
                batch._set_actions(idx, continuous, discrete)
            batch.queued = []
        self._need_exchange = False

    # ---- services ----------------------------------------------------------------------------

    def _allocate_ids(self, count: int) -> np.ndarray:
        ids = np.arange(self._next_agent_id, self._next_agent_id + count, dtype=np.int32)
        self._next_agent_id += count
        return ids

    def _allocate_groups(self, count: int) -> np.ndarray:
        ids = np.arange(self._next_group_id, self._next_group_id + count, dtype=np.int32)
        self._next_group_id += count
        return ids

    def _group_members(self, group_ids: np.ndarray | int) -> list[tuple[AgentBatch, np.ndarray]]:
        wanted = np.asarray(group_ids, dtype=np.int32).reshape(-1)
        members = []
        for batch in self.batches:
            idx = np.flatnonzero(np.isin(batch.group_id, wanted) & (batch.group_id > 0))
            if idx.size:
                members.append((batch, idx))
        return members

    def _group_reward(
        self, group_ids: np.ndarray | int, values: np.ndarray | float, *, replace: bool
    ) -> None:
        wanted = np.asarray(group_ids, dtype=np.int32).reshape(-1)
        per_group = np.broadcast_to(np.asarray(values, dtype=np.float32), wanted.shape)
        order = np.argsort(wanted, kind="stable")
        sorted_ids, sorted_values = wanted[order], per_group[order]
        for batch in self.batches:
            position = np.searchsorted(sorted_ids, batch.group_id)
            position = np.minimum(position, max(sorted_ids.size - 1, 0))
            hit = (batch.group_id > 0) & (sorted_ids.size > 0)
            if sorted_ids.size:
                hit &= sorted_ids[position] == batch.group_id
            idx = np.flatnonzero(hit)
            if idx.size:
                batch._add_group_reward(idx, sorted_values[position[idx]], replace)

    def _record_episodes(self, batch: AgentBatch, idx: np.ndarray, rewards: np.ndarray) -> None:
        reward_key, length_key = episode_stat_keys(batch.name)
        stats = self.channels.stats
        for reward, length in zip(rewards.tolist(), batch.step_count[idx].tolist(), strict=True):
            stats.add(reward_key, reward, StatAggregation.AVERAGE)
            stats.add(length_key, length, StatAggregation.AVERAGE)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message)
