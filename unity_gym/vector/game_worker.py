"""One game process behind a vector env: launch, step until every slot has a result, restart.

:class:`GameWorker` is the transport-independent part of a worker. A backend (thread, subprocess
or Ray actor) feeds it :class:`~unity_gym.vector.messages.WorkerRequest` objects and carries its
:class:`~unity_gym.vector.messages.WorkerReply` objects back. The worker decodes observations
itself and writes them, with rewards and episode flags, into the rows of its slots in the vector
env's buffers. A game that crashes or stops answering (``timeout_wait``) is relaunched with the
same settings by its :class:`~unity_gym.game.supervisor.GameSupervisor` (the one set of rules of
every front); its slots then report truncation and ``info["restart_reason"]``. What the game
sends on its stats side channel (Unity's ``StatsRecorder``) travels back with each reply
(``WorkerReply.stats``).
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from unity_gym.base_env import ActionTuple, BehaviorSpec, DecisionSteps, TerminalSteps
from unity_gym.behavior_names import select_behavior
from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.game.faults import RestartPolicy
from unity_gym.game.settings import GameSettings
from unity_gym.game.supervisor import GameFailedError, GameSupervisor
from unity_gym.spaces import ActionAdapter, ObservationAdapter, VisualLayout
from unity_gym.timers import get_timer_tree, hierarchical_timer, reset_timers
from unity_gym.vector.autoreset import AgentSlots, Routing, SlotResults
from unity_gym.vector.buffers import (
    ACTION_CONTINUOUS,
    ACTION_DISCRETE,
    ENDED,
    FINAL_AGENT_ID,
    FINAL_OBS_PREFIX,
    INFO_PREFIX,
    OBS_PREFIX,
    BufferLayout,
    StepBuffers,
)
from unity_gym.vector.messages import (
    GameDescription,
    RequestKind,
    TakeOver,
    WorkerReply,
    WorkerRequest,
)

__all__ = ["GameWorker", "WorkerConfig", "select_behavior"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs to run its game (picklable).

    Attributes:
        index: the worker's (and its game's) index in the vector env.
        settings: the game's settings, with this process's seed and ``worker_id``.
        behavior_name: the behavior whose agents become slots (None: the game's only one).
        autoreset_mode: ``NEXT_STEP`` or ``SAME_STEP``.
        restart_policy: limits on restarting a failed game.
        flatten_obs: see :class:`unity_gym.spaces.ObservationAdapter`.
        visual_obs: see :class:`unity_gym.spaces.ObservationAdapter`.
        expected_agents: slots this game must provide (None: whatever the first reset shows).
        timer_interval_s: how often replies carry the worker's timer tree (0: every reply).
        max_exchanges_per_step: exchanges with the game one step or reset may take before the
            worker gives up on agents that never report.
    """

    index: int
    settings: GameSettings
    behavior_name: str | None = None
    autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP
    restart_policy: RestartPolicy = field(default_factory=RestartPolicy)
    flatten_obs: bool = False
    visual_obs: VisualLayout = "uint8_hwc"
    expected_agents: int | None = None
    timer_interval_s: float = 10.0
    max_exchanges_per_step: int = 10_000


class GameWorker:
    """Runs one game for a vector env; see the module documentation.

    Args:
        config: the worker's settings.
    """

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self._events: list[tuple[int, str]] = []
        self._game = GameSupervisor(
            config.settings,
            label=f"game process {config.index}",
            owner="this vector env",
            restart_policy=config.restart_policy,
            consequence="Its slots report truncated=True.",
            report=lambda message: self._events.append((logging.WARNING, message)),
        )
        self._pristine = False
        self._behavior: str | None = None
        self._spec: BehaviorSpec | None = None
        self._obs_adapter: ObservationAdapter | None = None
        self._action_adapter_cache: ActionAdapter | None = None
        self._slots: AgentSlots | None = None
        self._buffers: StepBuffers | None = None
        self._rows: dict[str, np.ndarray] = {}
        self._ship_rows = False
        self._decisions: DecisionSteps | None = None
        self._user_continuous = np.zeros((0, 0), dtype=np.float32)
        self._user_discrete = np.zeros((0, 0), dtype=np.int32)
        self._restart_reason: str | None = None
        self._last_timer_report = time.monotonic()
        self._last_results: SlotResults | None = None

    # -- request dispatch --------------------------------------------------------------------

    def handle(self, request: WorkerRequest) -> WorkerReply:
        """Execute ``request`` and describe the outcome; never raises (errors go in the reply)."""
        reply = WorkerReply(worker=self.config.index, seq=request.seq, kind=request.kind)
        self._events = []
        self._restart_reason = None
        try:
            self._take_env_params(request.env_params)
            if request.kind is RequestKind.START:
                reply.description = self._start()
            elif request.kind is RequestKind.ATTACH:
                self._attach(request)
                self._fill_reply(reply)
            elif request.kind is RequestKind.RESET:
                with hierarchical_timer("worker_reset"):
                    self._reset(request.seed)
                self._fill_reply(reply)
            elif request.kind is RequestKind.STEP:
                with hierarchical_timer("worker_step"):
                    self._step(request)
                self._fill_reply(reply)
            elif request.kind is RequestKind.CLOSE:
                self.close()
        except BaseException as error:  # reported to the vector env, which raises it
            if not isinstance(error, Exception):
                raise
            error.add_note(
                f"(in game worker {self.config.index}; worker traceback:\n"
                f"{traceback.format_exc().rstrip()})"
            )
            reply.error = error
        reply.events = self._events
        reply.restart_reason = self._restart_reason
        reply.stats = self._take_stats()
        reply.game_pid = self._game_pid()
        now = time.monotonic()
        if (
            request.kind is RequestKind.CLOSE
            or now - self._last_timer_report >= self.config.timer_interval_s
        ):
            reply.timer_tree = get_timer_tree()
            reset_timers()
            self._last_timer_report = now
        return reply

    def take_over(self, request: WorkerRequest, lost: TakeOver) -> WorkerReply:
        """Answer ``request``, which a lost worker of the same slots never finished.

        This worker is new: it launches its own game and continues the lost worker's slots as
        a game restart in the middle of ``request`` would (see :meth:`_recover`): a STEP
        truncates every running episode with ``restart_reason`` = ``lost.reason`` (next-step
        mode keeps the last observation the vector env saw; same-step mode makes it the final
        one and returns the new game's first observation); a RESET or ATTACH returns the new
        game's first observations. Never raises (errors go in the reply).
        """
        if request.kind in (RequestKind.START, RequestKind.CLOSE):
            return self.handle(request)
        reply = WorkerReply(worker=self.config.index, seq=request.seq, kind=request.kind)
        self._events = [(logging.WARNING, f"{lost.reason}; its slots report truncated=True.")]
        try:
            self._take_env_params(request.env_params)
            with hierarchical_timer("worker_take_over"):
                self._launch_and_allocate()
                if lost.attach is not None:
                    self._attach(lost.attach)
                if request.kind is RequestKind.STEP and lost.previous_rows is not None:
                    self._continue_lost_step(lost.previous_rows)
                else:
                    self._collect_first_observations()
            self._fill_reply(reply)
        except Exception as error:  # reported to the vector env, which raises it
            error.add_note(
                f"(in game worker {self.config.index}, taking over a lost worker; worker "
                f"traceback:\n{traceback.format_exc().rstrip()})"
            )
            reply.error = error
        reply.events = self._events
        reply.restart_reason = lost.reason
        reply.stats = self._take_stats()
        reply.game_pid = self._game_pid()
        return reply

    def _take_env_params(self, overrides: dict[str, Any] | None) -> None:
        """Adopt ``overrides`` (:meth:`GameSupervisor.set_env_params`)."""
        if overrides:
            self._game.set_env_params(overrides)

    def _continue_lost_step(self, previous: dict[str, np.ndarray]) -> None:
        """Finish a lost worker's step as a restart of its game (the new game just launched)."""
        slots = self._slots
        assert slots is not None
        for name, array in self._rows.items():
            if name.startswith(OBS_PREFIX) and name in previous:
                array[...] = previous[name]
        ended = np.asarray(previous["terminated"], dtype=bool) | np.asarray(
            previous["truncated"], dtype=bool
        )
        slots.adopt_phases(ended)
        slots.begin_step()
        running = slots.begin_restart()
        if self.config.autoreset_mode is AutoresetMode.SAME_STEP:
            self._copy_observations(running, to_final=True)
        try:
            self._absorb()
            self._run_until_complete()
        except GameFailedError as fault:
            self._recover(fault, during_step=True)
        self._last_results = slots.finish()

    # -- life cycle ---------------------------------------------------------------------------

    def _start(self) -> GameDescription:
        description = self._launch_and_allocate()
        self._collect_first_observations()
        return description

    def _launch_and_allocate(self) -> GameDescription:
        """Launch the game, check its agent count and allocate the slots' private rows.

        A game that fails while it starts is restarted (:meth:`GameSupervisor.start`).
        """
        restarted = self._game.start()
        self._restart_reason = self._restart_reason or restarted
        self._adopt_game()
        assert self._spec is not None and self._behavior is not None
        expected = self.config.expected_agents
        count = len(self._decisions) if self._decisions is not None else 0
        if expected is not None and count != expected:
            raise UnityEnvironmentException(
                f"Game process {self.config.index} has {count} agents of {self._behavior!r} "
                f"deciding after its reset, but every game of this vector env must provide "
                f"{expected}. Games launched with the same settings must have the same agents."
            )
        if count == 0:
            raise UnityEnvironmentException(
                f"No agent of {self._behavior!r} requested a decision after the reset of game "
                f"process {self.config.index}, so the vector env has no slot to offer."
            )
        self._slots = AgentSlots(count, self.config.autoreset_mode)
        action_spec = self._spec.action_spec
        layout = BufferLayout.for_spaces(
            count,
            self._observation_adapter().space,
            with_final_obs=self.config.autoreset_mode is AutoresetMode.SAME_STEP,
            continuous_size=action_spec.continuous_size,
            discrete_size=action_spec.discrete_size,
            mask_size=self._action_adapter().mask_size,
        )
        self._rows = StepBuffers.allocate(layout).rows(0, count)
        mask = self._rows.get(f"{INFO_PREFIX}action_mask")
        if mask is not None:
            mask.fill(True)
        return GameDescription(
            behavior_name=self._behavior,
            behavior_spec=self._spec,
            num_agents=count,
            behavior_names=tuple(sorted(self._game.env.behavior_specs)),
            pid=self._game_pid(),
        )

    def _attach(self, request: WorkerRequest) -> None:
        assert request.layout is not None and self._slots is not None
        if request.shared_name is None:
            self._ship_rows = True
            return
        staged = self._rows
        self._buffers = StepBuffers.attach_shared(request.layout, request.shared_name)
        start = request.row_offset
        self._rows = self._buffers.rows(start, start + self._slots.num_slots)
        for name, array in staged.items():
            self._rows[name][...] = array

    def _adopt_game(self) -> None:
        """Read the behavior, its spec and first decisions of the game just (re)launched.

        Raises:
            UnityEnvironmentException: its behaviors do not fit the configuration.
        """
        env = self._game.env
        behavior = select_behavior(list(env.behavior_specs), self.config.behavior_name)
        self._behavior, self._spec = behavior, env.behavior_specs[behavior]
        self._decisions = env.get_steps(behavior)[0]

    def _reset(self, seed: int | None) -> None:
        slots = self._slots
        assert slots is not None
        if self._pristine and seed in (None, self._game.settings.seed):
            return  # the game has not moved since its launch: its first observations stand
        if seed is not None:
            self._decisions = None
            try:
                self._game.launch(seed)
                self._adopt_game()
            except GameFailedError as fault:  # restarted with the new seed, as any failure
                self._recover(fault, during_step=False)
                self._last_results = slots.finish()
                self._pristine = True
                return
            self._collect_first_observations()
            return
        self._pristine = False
        try:
            slots.begin_reset()
            self._exchange(reset=True)
            self._absorb()
            self._run_until_complete()
        except GameFailedError as fault:
            self._recover(fault, during_step=False)
        self._last_results = slots.finish()

    def _collect_first_observations(self) -> None:
        """Assign slots and collect first observations after :meth:`_launch`."""
        slots = self._slots
        assert slots is not None
        try:
            slots.begin_reset()
            self._absorb()
            self._run_until_complete()
        except GameFailedError as fault:
            self._recover(fault, during_step=False)
        self._last_results = slots.finish()
        self._pristine = True

    def _step(self, request: WorkerRequest) -> None:
        slots = self._slots
        assert slots is not None
        shared = request.continuous is None or request.discrete is None
        self._user_continuous = (
            self._rows[ACTION_CONTINUOUS] if request.continuous is None else request.continuous
        )
        self._user_discrete = (
            self._rows[ACTION_DISCRETE] if request.discrete is None else request.discrete
        )
        if shared and self._buffers is None:
            raise UnityEnvironmentException(
                "A step request without actions reached a worker that has no shared buffers."
            )
        self._pristine = False
        slots.begin_step()
        try:
            self._send_actions()
            self._exchange()
            self._absorb()
            self._run_until_complete()
        except GameFailedError as fault:
            self._recover(fault, during_step=True)
        self._last_results = slots.finish()

    def close(self) -> None:
        """Close the game and detach from the buffers (safe to call twice)."""
        self._decisions = None
        self._game.close()
        self._rows = {}
        if self._buffers is not None:
            self._buffers.close()
            self._buffers = None

    # -- exchanges ----------------------------------------------------------------------------

    def _exchange(self, *, reset: bool = False) -> None:
        """One reset or step of the bridge (:meth:`GameSupervisor.exchange`)."""
        self._game.exchange(reset=reset)

    def _run_until_complete(self) -> None:
        slots = self._slots
        assert slots is not None
        exchanges = 0
        while not slots.complete:
            if exchanges >= self.config.max_exchanges_per_step:
                raise UnityEnvironmentException(
                    f"Game process {self.config.index}: slots {slots.incomplete_slots()} (agents "
                    f"{slots.agent_id[slots.incomplete_slots()].tolist()} of {self._behavior!r}) "
                    f"got no report in {exchanges} exchanges. Their agents stopped requesting "
                    "decisions; raise max_exchanges_per_step if they decide that rarely."
                )
            self._send_actions()
            self._exchange()
            self._absorb()
            exchanges += 1

    def _send_actions(self) -> None:
        env, slots, decisions = self._game.env, self._slots, self._decisions
        assert slots is not None and self._spec is not None
        if decisions is None or len(decisions) == 0:
            return
        agent_slots, use_user = slots.action_sources(decisions.agent_id)
        spec = self._spec.action_spec
        count = len(agent_slots)
        continuous = np.zeros((count, spec.continuous_size), dtype=np.float32)
        discrete = np.zeros((count, spec.discrete_size), dtype=np.int32)
        if use_user.any():
            chosen = agent_slots[use_user]
            if spec.continuous_size:
                continuous[use_user] = self._user_continuous[chosen]
            if spec.discrete_size:
                discrete[use_user] = self._user_discrete[chosen]
        assert self._behavior is not None
        env.set_actions(self._behavior, ActionTuple(continuous=continuous, discrete=discrete))

    def _absorb(self) -> None:
        """Account the bridge's latest reply and write the routed observations."""
        slots = self._slots
        assert slots is not None and self._behavior is not None
        decisions, terminals = self._game.env.get_steps(self._behavior)
        self._decisions = decisions
        routing = slots.record(
            decisions.agent_id,
            decisions.reward,
            decisions.group_id,
            decisions.group_reward,
            terminals.agent_id,
            terminals.reward,
            terminals.interrupted,
            terminals.group_id,
            terminals.group_reward,
        )
        self._write(routing, decisions, terminals)
        final_as_obs = slots.release_departed()
        if final_as_obs.size:
            self._copy_observations(final_as_obs, to_final=False)

    def _copy_observations(self, slots: np.ndarray, *, to_final: bool) -> None:
        """Copy the observation rows of ``slots`` into their final-observation rows
        (``to_final``) or back (same-step mode keeps both)."""
        for name in list(self._rows):
            if name.startswith(OBS_PREFIX):
                final = self._rows[FINAL_OBS_PREFIX + name[len(OBS_PREFIX) :]]
                if to_final:
                    final[slots] = self._rows[name][slots]
                else:
                    self._rows[name][slots] = final[slots]

    def _write(self, routing: Routing, decisions: DecisionSteps, terminals: TerminalSteps) -> None:
        adapter = self._observation_adapter()
        for (slots, rows), source, prefix in (
            (routing.terminal_obs, terminals, OBS_PREFIX),
            (routing.final_obs, terminals, FINAL_OBS_PREFIX),
            (routing.decision_obs, decisions, OBS_PREFIX),
        ):
            if not slots:
                continue
            values = adapter.batch_from_unity(source.obs, rows)
            if not isinstance(values, dict):
                values = {"": values}
            for key, value in values.items():
                self._rows[prefix + key][slots] = value
        mask = self._rows.get(f"{INFO_PREFIX}action_mask")
        if routing.decision_obs[0] and mask is not None:
            slots, rows = routing.decision_obs
            masks = self._action_adapter().batch_mask_from_unity(
                decisions.action_mask, len(decisions)
            )
            mask[slots] = masks[rows]

    # -- faults -------------------------------------------------------------------------------

    def _recover(self, fault: GameFailedError, *, during_step: bool) -> None:
        """Restart the failed game (:meth:`GameSupervisor.restart`) and collect its first
        observations into the slots (module documentation)."""
        slots = self._slots
        assert slots is not None
        while True:
            self._decisions = None
            reason = self._game.restart(fault)
            self._restart_reason = self._restart_reason or reason
            if during_step:
                running = slots.begin_restart()
                if self.config.autoreset_mode is AutoresetMode.SAME_STEP:
                    self._copy_observations(running, to_final=True)
            else:
                slots.begin_reset()
            try:
                self._adopt_game()
                self._absorb()
                self._run_until_complete()
                return
            except GameFailedError as again:
                fault = again

    # -- replies ------------------------------------------------------------------------------

    def _fill_reply(self, reply: WorkerReply) -> None:
        """Write the last results into the slots' rows (shipping them if memory is private)."""
        results = self._last_results
        assert results is not None
        rows = self._rows
        rows["reward"][...] = results.reward
        rows["terminated"][...] = results.terminated
        rows["truncated"][...] = results.truncated
        rows[f"{INFO_PREFIX}agent_id"][...] = results.agent_id
        rows[f"{INFO_PREFIX}group_id"][...] = results.group_id
        rows[f"{INFO_PREFIX}group_reward"][...] = results.group_reward
        rows[f"{INFO_PREFIX}vacant"][...] = results.vacant
        if ENDED in rows:
            rows[ENDED][...] = results.ended
            rows[FINAL_AGENT_ID][...] = results.final_agent_id
        if self._ship_rows:
            reply.rows = {
                name: array.copy()
                for name, array in rows.items()
                if name not in (ACTION_CONTINUOUS, ACTION_DISCRETE)
            }

    def _take_stats(self) -> dict[str, list[tuple[float, int]]] | None:
        """The stats received since the previous reply, as plain types (None: none)."""
        stats = {
            key: [(float(value), method.value) for value, method in values]
            for key, values in self._game.take_stats().items()
        }
        return stats or None

    def _game_pid(self) -> int | None:
        """The running game's process id (None: none runs, or the Unity Editor)."""
        process = self._game.env.process if self._game.running else None
        return None if process is None else process.pid

    # -- helpers ------------------------------------------------------------------------------

    def _observation_adapter(self) -> ObservationAdapter:
        if self._obs_adapter is None:
            assert self._spec is not None
            self._obs_adapter = ObservationAdapter(
                self._spec.observation_specs,
                flatten_obs=self.config.flatten_obs,
                visual_obs=self.config.visual_obs,
            )
        return self._obs_adapter

    def _action_adapter(self) -> ActionAdapter:
        if self._action_adapter_cache is None:
            assert self._spec is not None
            self._action_adapter_cache = ActionAdapter(self._spec.action_spec)
        return self._action_adapter_cache

    @property
    def restarts(self) -> int:
        """Restarts of the game so far."""
        return self._game.restarts
