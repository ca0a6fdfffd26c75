"""``UnityVectorEnv``: every agent of every game process as one asynchronous Gymnasium VectorEnv.

``gymnasium.make_vec("Unity-v0", num_envs=48)`` (or ``UnityVectorEnv(48, scene="3DBall")``)
runs 4 game processes of the 12-agent 3DBall and exposes their 48 agents as 48 slots. How
``num_envs``, ``num_processes`` and training areas relate is described in
:mod:`unity_gym.vector.planning`; slots ``[i * k, (i + 1) * k)`` belong to game ``i`` (``k``
agents per process), in the order the agents reported at reset.

Stepping is asynchronous: one worker per game process (``backend="subprocess"`` by default,
``"inprocess"`` threads, or ``"ray"`` actors) steps its game as soon as it has the actions of its
slots. Two APIs:

* Gymnasium's ``step`` / ``step_async`` + ``step_wait``: all slots at once;
* EnvPool's ``send(actions, env_ids)`` / ``recv()``: ``recv`` returns the first ``batch_size``
  slots whose games answered (whole games, in completion order) with ``info["env_id"]``, so a
  ``batch_size`` below ``num_envs`` hides stragglers; ``send`` the next actions for those
  ``env_id``.

Every request carries a sequence number echoed by its reply: a ``TimeoutError`` from
``step_wait``/``recv`` leaves the request running and its result is returned by the next wait
(never attributed to a later step); ``reset`` abandons pending steps and drops their late replies.

``metadata["goal_signal_keys"]`` names the Dict entries made of ``GOAL_SIGNAL`` sensors (the
task an agent is given, e.g. GridWorld's goal colour), for goal-conditioned networks;
``metadata["variable_length_keys"]`` the entries that are variable-length sensors (Unity's
``BufferSensor``; see :attr:`unity_gym.spaces.ObservationAdapter.variable_length_keys`).

Autoreset (``metadata["autoreset_mode"]``) is ``AutoresetMode.NEXT_STEP`` (default) or
``AutoresetMode.SAME_STEP``; the precise mapping onto Unity's agent restarts is documented in
:mod:`unity_gym.vector.autoreset`. Infos follow Gymnasium's convention (a batched array per key
plus a ``_key`` mask):

* ``agent_id``, ``group_id``, ``group_reward`` (summed like the reward), ``action_mask`` (discrete
  behaviors; flat, True = allowed, see :mod:`unity_gym.spaces`);
* ``vacant`` (bool): the slot's agent left the game in the middle of its group's episode (e.g.
  DungeonEscape's sacrificed agent) and no agent has taken the slot yet; such a slot reports
  reward 0 and its last observation, and its actions are ignored (see
  :mod:`unity_gym.vector.autoreset`);
* same-step mode: ``final_obs`` (object array) and ``final_info`` for slots whose episode ended;
* ``restart_reason`` (str) for the slots of a game that crashed or hung and was restarted; those
  slots report ``truncated=True``.

A game that crashes or stops answering within ``timeout_wait`` (also while it starts) is
relaunched with the same settings by the rules of :mod:`unity_gym.game.supervisor` (at most
``max_lifetime_restarts`` times, and ``restarts_rate_limit_n`` times per
``restarts_rate_limit_period_s``, like ``mlagents-learn``); a warning is logged and
:class:`~unity_gym.game.faults.RestartLimitError` is raised beyond the limits.

Observations are decoded in the workers and written, with rewards, flags and info columns, into
shared memory (:mod:`unity_gym.vector.buffers`); actions travel the same way, so pipes only carry
small control messages. (Ray actors, which may run on other machines, ship their rows through
Ray's object store instead; an actor lost with its node is replaced on another node and its
slots report a restart, see :mod:`unity_gym.vector.backends.ray_pool`.) The subprocess backend
starts workers with ``spawn`` (``start_method=``), without running the main script again in them
whenever their settings refer to nothing defined there, so a script may create the env at module
level, without ``if __name__ == "__main__":``; see :mod:`unity_gym.vector.backends.main_script`.

Statistics the games report on their stats side channel (Unity's
``Academy.Instance.StatsRecorder.Add``) are gathered from every worker reply, late ones included,
and handed out by :meth:`UnityVectorEnv.get_and_reset_stats` (for TensorBoard, as
``mlagents-learn`` writes them).

Worker timer trees are merged into this process's :mod:`unity_gym.timers` tree (under
``vector_workers``, marked parallel) every ``timer_interval_s`` seconds.
"""

from __future__ import annotations

import itertools
import logging
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from unity_gym.base_env import ActionTuple, BehaviorSpec
from unity_gym.exceptions import (
    UnityActionException,
    UnityEnvironmentException,
    UnityTimeOutException,
)
from unity_gym.game.settings import GameSettings, check_seed, game_seed
from unity_gym.side_channels.stats_side_channel import EnvironmentStats, StatsAggregationMethod
from unity_gym.spaces import ActionAdapter, ObservationAdapter, VisualLayout
from unity_gym.timers import hierarchical_timer, merge_timer_tree
from unity_gym.vector.backends.base import WorkerBackend, WorkerLostError
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
from unity_gym.vector.faults import RestartLimitError, RestartPolicy
from unity_gym.vector.game_worker import WorkerConfig
from unity_gym.vector.messages import GameDescription, RequestKind, WorkerReply, WorkerRequest
from unity_gym.vector.planning import check_slot_count, plan_processes

__all__ = ["BACKENDS", "UnityVectorEnv", "VectorWaitTimeoutError"]

logger = logging.getLogger(__name__)

BACKENDS = ("subprocess", "inprocess", "ray")
"""Names accepted by ``backend=``."""

_GAME_SETTING_NAMES = tuple(f.name for f in fields(GameSettings))


class VectorWaitTimeoutError(UnityTimeOutException, TimeoutError):
    """``step_wait``/``recv``/``reset`` waited longer than its ``timeout``; nothing was lost."""


def _make_backend(
    backend: str | WorkerBackend, start_method: str, ray_actor_options: dict[str, Any] | None
) -> WorkerBackend:
    if isinstance(backend, WorkerBackend):
        return backend
    if backend == "subprocess":
        from unity_gym.vector.backends.subprocess_pool import SubprocessBackend

        return SubprocessBackend(start_method)
    if backend == "inprocess":
        from unity_gym.vector.backends.inprocess import InProcessBackend

        return InProcessBackend()
    if backend == "ray":
        from unity_gym.vector.backends.ray_pool import RayBackend

        return RayBackend(actor_options=ray_actor_options)
    raise ValueError(f"backend={backend!r} is not one of {list(BACKENDS)}.")


def _emergency_close(backend: WorkerBackend, buffers: list[StepBuffers]) -> None:
    """Finalizer: stop workers and free shared memory of a vector env that was never closed."""
    try:
        backend.close(2.0)
    finally:
        for block in buffers:
            block.close()


class UnityVectorEnv(VectorEnv):
    """Every agent of the chosen behavior in every game process, as one asynchronous VectorEnv.

    Besides the Gymnasium and EnvPool APIs: :meth:`set_env_params` changes environment
    parameters of the running games, :meth:`get_and_reset_stats` hands out the statistics the
    games reported (Unity's ``StatsRecorder``).

    Args:
        num_envs: slots (= ``num_processes`` x agents per process; see
            :mod:`unity_gym.vector.planning`). None: ``num_processes`` games (default 1).
        num_processes: game processes; None derives it from ``num_envs``.
        backend: ``"subprocess"`` (default), ``"inprocess"`` (threads) or ``"ray"``.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP`` (or their
            values ``"NextStep"``/``"SameStep"``).
        batch_size: slots returned by :meth:`recv` (a multiple of the agents per process;
            default ``num_envs``); the :attr:`batch_size` property changes it later, e.g. to
            :attr:`agents_per_process` (one game at a time) once that is known.
        behavior_name: the behavior whose agents are the slots (required when the game has
            several).
        flatten_obs: see :class:`unity_gym.spaces.ObservationAdapter`.
        visual_obs: see :class:`unity_gym.spaces.ObservationAdapter`.
        max_lifetime_restarts: restarts allowed per game (-1: no limit).
        restarts_rate_limit_n: restarts allowed per game within the period (-1: no limit).
        restarts_rate_limit_period_s: the rate-limit period in seconds.
        timer_interval_s: how often workers send their timer trees (0: with every reply).
        max_exchanges_per_step: exchanges one step may take before agents that never report
            are an error.
        start_method: ``multiprocessing`` start method of the subprocess backend.
        ray_actor_options: options of the Ray actors (Ray backend).
        shutdown_timeout: seconds :meth:`close` lets workers close their games.
        render_mode: must be None (slots have no renderer).
        max_episode_steps: must be None (the game ends episodes; see the scene's max step).
        **game_settings: the game keywords of :class:`unity_gym.game.settings.GameSettings`
            (``file_name``, ``scene``, ``seed``, ``env_params``, ``time_scale``, ``timeout_wait``,
            ``num_agents``, ``scene_options``, ...). Game ``i`` gets seed ``(seed + i) % 2**31``
            (any non-negative int seed; :func:`unity_gym.game.settings.game_seed`) and
            ``worker_id`` ``worker_id + i``.

    Raises:
        ValueError: on inconsistent counts or unknown keywords (the message says what works).
        UnityEnvironmentException: if a game cannot be started or its agents do not fit.
    """

    def __init__(
        self,
        num_envs: int | None = None,
        *,
        num_processes: int | None = None,
        backend: str | WorkerBackend = "subprocess",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        batch_size: int | None = None,
        behavior_name: str | None = None,
        flatten_obs: bool = False,
        visual_obs: VisualLayout = "uint8_hwc",
        max_lifetime_restarts: int = 10,
        restarts_rate_limit_n: int = 1,
        restarts_rate_limit_period_s: float = 60.0,
        timer_interval_s: float = 10.0,
        max_exchanges_per_step: int = 10_000,
        start_method: str = "spawn",
        ray_actor_options: dict[str, Any] | None = None,
        shutdown_timeout: float = 15.0,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        **game_settings: Any,
    ) -> None:
        self.closed = True  # until the workers exist
        if render_mode is not None:
            raise ValueError(
                f"render_mode={render_mode!r}: the vector env has no renderer. Render with the "
                "single-agent env (gymnasium.make('Unity-v0', render_mode='rgb_array'))."
            )
        if max_episode_steps is not None:
            raise ValueError(
                "max_episode_steps is not supported: Unity agents restart on their own, so a "
                "time limit must come from the game (the behavior's max step, or scene option "
                "max_step for built-in scenes)."
            )
        unknown = sorted(set(game_settings) - set(_GAME_SETTING_NAMES))
        if unknown:
            raise ValueError(
                f"Unknown keyword(s) {unknown} for UnityVectorEnv. Game keywords are "
                f"{list(_GAME_SETTING_NAMES)}; vector keywords are listed in its docstring."
            )
        mode = AutoresetMode(autoreset_mode)
        if mode is AutoresetMode.DISABLED:
            raise ValueError(
                "autoreset_mode=DISABLED is not supported: Unity restarts agents by itself. Use "
                "AutoresetMode.NEXT_STEP or AutoresetMode.SAME_STEP."
            )
        if game_settings.get("seed") is not None:
            game_settings["seed"] = game_seed(game_settings["seed"])
        settings = GameSettings(**game_settings)
        plan = plan_processes(settings, num_envs, num_processes, behavior_name)
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode, "render_modes": []}
        self.render_mode = None
        self._shutdown_timeout = float(shutdown_timeout)
        self._env_params: dict[str, Any] = {}
        self._stats: EnvironmentStats = {}
        self._seq = itertools.count(1)
        self._in_flight: list[int | None] = []
        self._ready: dict[int, WorkerReply] = {}
        self._restarts: list[int] = []
        self._game_pids: list[int | None] = []
        self._unusable: dict[int, BaseException] = {}  # worker -> why it cannot work any more
        self._policy = RestartPolicy(
            max_lifetime_restarts, restarts_rate_limit_n, restarts_rate_limit_period_s
        )
        self._buffers_holder: list[StepBuffers] = []
        self._backend = _make_backend(backend, start_method, ray_actor_options)
        self._finalizer = weakref.finalize(
            self, _emergency_close, self._backend, self._buffers_holder
        )

        def config(index: int, expected: int | None) -> WorkerConfig:
            return WorkerConfig(
                index=index,
                settings=plan.settings.replace(
                    seed=game_seed(plan.settings.seed, index),
                    worker_id=plan.settings.worker_id + index,
                ),
                behavior_name=behavior_name,
                autoreset_mode=mode,
                restart_policy=self._policy,
                flatten_obs=flatten_obs,
                visual_obs=visual_obs,
                expected_agents=expected,
                timer_interval_s=timer_interval_s,
                max_exchanges_per_step=max_exchanges_per_step,
            )

        try:
            description = self._start_games(plan.num_processes, plan.agents_per_process, config)
            agents = description.num_agents
            total, processes = check_slot_count(
                num_envs, num_processes, agents, description.behavior_name
            )
            if processes != len(self._in_flight):
                self._launch(range(len(self._in_flight), processes), agents, config, description)
            self._setup_spaces(description, total, processes, flatten_obs, visual_obs)
            self._batch_size = self._check_batch_size(batch_size)
            self._attach()
        except BaseException:
            self._finalizer()
            raise
        self.closed = False

    # ----------------------------------------------------------------------------------------
    # construction
    # ----------------------------------------------------------------------------------------

    def _start_games(
        self,
        num_processes: int | None,
        expected: int | None,
        config: Callable[[int, int | None], WorkerConfig],
    ) -> GameDescription:
        """Launch every game when their number is known, else only the first one."""
        count = num_processes if num_processes is not None else 1
        return self._launch(range(count), expected, config, None)

    def _launch(
        self,
        indices: range,
        expected: int | None,
        config: Callable[[int, int | None], WorkerConfig],
        reference: GameDescription | None,
    ) -> GameDescription:
        """Start workers ``indices`` and their games; return the reference description.

        Raises:
            UnityEnvironmentException: if a game differs from the reference (or the first).
        """
        self._backend.start([config(i, expected) for i in indices])
        self._in_flight.extend([None] * len(indices))
        self._restarts.extend([0] * len(indices))
        self._game_pids.extend([None] * len(indices))
        for index in indices:
            self._submit(index, WorkerRequest(kind=RequestKind.START, seq=0))
        self._wait_for(set(indices), timeout=None, what="the games to start")
        descriptions = [self._ready.pop(i).description for i in indices]
        first = reference or descriptions[0]
        assert first is not None
        for index, description in zip(indices, descriptions, strict=True):
            assert description is not None
            if (
                description.behavior_spec != first.behavior_spec
                or description.num_agents != first.num_agents
            ):
                raise UnityEnvironmentException(
                    f"Game process {index} differs from game process 0: "
                    f"{description.num_agents} agents with spec {description.behavior_spec} "
                    f"instead of {first.num_agents} with {first.behavior_spec}. All games of a "
                    "vector env must be identical."
                )
        return first

    def _setup_spaces(
        self,
        description: GameDescription,
        num_envs: int,
        num_processes: int,
        flatten_obs: bool,
        visual_obs: VisualLayout,
    ) -> None:
        self.num_envs = num_envs
        self.num_processes = num_processes
        self.agents_per_process = description.num_agents
        self.behavior_name = description.behavior_name
        self.behavior_spec: BehaviorSpec = description.behavior_spec
        self._observation_adapter = ObservationAdapter(
            description.behavior_spec.observation_specs,
            flatten_obs=flatten_obs,
            visual_obs=visual_obs,
        )
        self._action_adapter = ActionAdapter(description.behavior_spec.action_spec)
        self.single_observation_space = self._observation_adapter.space
        self.single_action_space = self._action_adapter.space
        # Which Dict entries tell the task (GOAL_SIGNAL sensors): for goal-conditioned networks.
        self.metadata["goal_signal_keys"] = self._observation_adapter.goal_signal_keys
        # Which entries are variable-length sensors: for entity attention in networks.
        self.metadata["variable_length_keys"] = self._observation_adapter.variable_length_keys
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        k = self.agents_per_process
        self._pending_given = np.zeros(num_envs, dtype=bool)
        self._rows = [slice(i * k, (i + 1) * k) for i in range(num_processes)]

    @property
    def batch_size(self) -> int:
        """Slots returned by :meth:`recv`; may be set between calls (whole games, see ``__init__``).

        Raises:
            ValueError: when set to a value that is not a multiple of :attr:`agents_per_process`
                between it and :attr:`num_envs`.
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int | None) -> None:
        self._batch_size = self._check_batch_size(value)

    def _check_batch_size(self, batch_size: int | None) -> int:
        if batch_size is None:
            return self.num_envs
        k = self.agents_per_process
        if not isinstance(batch_size, int) or not 0 < batch_size <= self.num_envs or batch_size % k:
            raise ValueError(
                f"batch_size={batch_size!r} must be a multiple of the {k} agents per game "
                f"process between {k} and num_envs={self.num_envs} (recv returns whole games)."
            )
        return batch_size

    def _attach(self) -> None:
        action_spec = self.behavior_spec.action_spec
        layout = BufferLayout.for_spaces(
            self.num_envs,
            self.single_observation_space,
            with_final_obs=self.autoreset_mode is AutoresetMode.SAME_STEP,
            continuous_size=action_spec.continuous_size,
            discrete_size=action_spec.discrete_size,
            mask_size=self._action_adapter.mask_size,
        )
        self._info_keys = [
            name for name in (spec.name for spec in layout.arrays) if name.startswith(INFO_PREFIX)
        ]
        if self._backend.shares_memory:
            buffers = StepBuffers.create_shared(layout)
        else:
            buffers = StepBuffers.allocate(layout)
        self._buffers_holder.append(buffers)
        self._buffers = buffers
        for index, rows in enumerate(self._rows):
            self._submit(
                index,
                WorkerRequest(
                    kind=RequestKind.ATTACH,
                    seq=0,
                    layout=layout,
                    shared_name=buffers.shared_name,
                    row_offset=rows.start,
                ),
            )
        self._wait_for(set(range(self.num_processes)), timeout=None, what="the games to attach")
        self._ready.clear()

    # ----------------------------------------------------------------------------------------
    # Gymnasium API
    # ----------------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every game and return the first observation of every slot.

        A game whose seed changes (``(seed + i) % 2**31`` for game ``i``: Gymnasium seeds are
        any non-negative int, the handshake's seed an int32; the rule of every front,
        :func:`unity_gym.game.settings.game_seed`) is relaunched with it, so equal seeds give
        equal episodes; without a seed each game gets Unity's RESET (games that did not move
        since they were launched are not reset again). Pending steps are abandoned.

        Raises:
            ValueError: if ``options`` is given (no reset option exists).
            SeedError: (a ValueError) if ``seed`` is negative or not an integer; nothing changes.
            UnityEnvironmentException: a game failed earlier and was not restarted (restart
                limits, a lost worker); the env cannot be used any more.
        """
        self._require_open()
        if options:
            raise ValueError(f"UnityVectorEnv.reset takes no options, got {options!r}.")
        seed = None if seed is None else check_seed(seed)
        super().reset(seed=seed)
        self._refuse_unusable(range(self.num_processes))
        with hierarchical_timer("UnityVectorEnv.reset"):
            self._ready.clear()
            self._pending_given.fill(False)
            for index in range(self.num_processes):
                new_seed = None if seed is None else game_seed(seed, index)
                self._submit(index, WorkerRequest(kind=RequestKind.RESET, seq=0, seed=new_seed))
            workers = list(range(self.num_processes))
            self._wait_for(set(workers), timeout=None, what="the games to reset")
            obs, _, _, _, infos = self._take(workers, with_env_id=False)
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Act in every slot and return the results of every slot (``step_async`` + wait)."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Send one action per slot (shaped like :attr:`action_space`) without waiting.

        Raises:
            AlreadyPendingCallError: if results of an earlier call were not collected.
            UnityActionException: if ``actions`` do not fit the action space or some are NaN
                or infinite (see :meth:`send`); no game got a request then, and the env is as
                before the call.
        """
        self._require_open()
        if any(seq is not None for seq in self._in_flight) or self._ready:
            raise AlreadyPendingCallError(
                "A step is still pending; call step_wait() (or recv() until nothing is pending) "
                "before step_async().",
                "step",
            )
        self.send(actions)

    def step_wait(
        self, timeout: float | None = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Wait for every slot's result of the pending step.

        Args:
            timeout: seconds to wait; on expiry :class:`VectorWaitTimeoutError` is raised and
                the step keeps running (call ``step_wait`` again to get it).

        Raises:
            NoAsyncCallError: if some slots have no pending step.
            Exception: a game worker's error (e.g.
                :class:`~unity_gym.vector.faults.RestartLimitError`). Before it is raised every
                other game finishes its step and those results are dropped, so no step is
                pending afterwards: ``step`` (or ``reset``) can be called again.
        """
        self._require_open()
        busy = {i for i, seq in enumerate(self._in_flight) if seq is not None}
        if len(busy) + len(self._ready) != self.num_processes:
            raise NoAsyncCallError(
                "step_wait() needs a pending step for every slot; call step_async() first.",
                "step",
            )
        workers = list(range(self.num_processes))
        with hierarchical_timer("UnityVectorEnv.step_wait"):
            try:
                self._wait_for(set(workers), timeout=timeout, what="the step")
            except VectorWaitTimeoutError:
                raise  # the step keeps running; the next step_wait returns it
            except Exception as error:
                self._settle_failed_step(error)
                raise
            return self._take(workers, with_env_id=False)

    # ----------------------------------------------------------------------------------------
    # EnvPool-style asynchronous API
    # ----------------------------------------------------------------------------------------

    def send(self, actions: Any, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Give actions to some slots; a game steps once all of its slots have one.

        Args:
            actions: actions of the listed slots, batched along the first axis like
                :attr:`action_space` (``len(env_ids)`` rows).
            env_ids: the slots (default: all), typically ``info["env_id"]`` of the last
                :meth:`recv`.

        Raises:
            ValueError: for unknown ids, or ids whose games are still running.
            UnityActionException: if ``actions`` do not fit the action space (wrong shape,
                discrete values outside a branch) or some continuous ones are NaN or infinite
                (the message names each such slot, its game process and the agent); nothing is
                sent to any game then, so the call can be repeated with valid actions.
            UnityEnvironmentException: a game of those slots failed earlier and was not
                restarted (restart limits, a lost worker); the env cannot step it any more.
        """
        self._require_open()
        ids = (
            np.arange(self.num_envs)
            if env_ids is None
            else np.asarray(env_ids, dtype=np.int64).reshape(-1)
        )
        # Plain Python on the id list: a few ids per call (one game's) is the common case, where
        # numpy's per-call overhead (unique sorts, reductions) would cost more than the step.
        id_list = ids.tolist()
        if id_list and (min(id_list) < 0 or max(id_list) >= self.num_envs):
            raise ValueError(f"env_ids must be in [0, {self.num_envs}), got {id_list}.")
        if len(set(id_list)) != len(id_list):
            raise ValueError(f"env_ids must not repeat, got {id_list}.")
        k = self.agents_per_process
        workers = sorted({i // k for i in id_list})
        self._refuse_unusable(workers)
        busy = [w for w in workers if self._in_flight[w] is not None or w in self._ready]
        if busy:
            stuck = [i for i in id_list if i // k in busy]
            raise ValueError(
                f"env_ids {stuck} belong to games that are still running or whose results "
                "were not received; send actions only for the env_ids returned by recv()."
            )
        converted = self._action_adapter.batch_to_unity(actions, len(ids))
        self._refuse_invalid_actions(converted, ids)
        continuous, discrete = self._buffers[ACTION_CONTINUOUS], self._buffers[ACTION_DISCRETE]
        continuous[ids] = converted.continuous
        discrete[ids] = converted.discrete
        self._pending_given[ids] = True
        shared = self._backend.shares_memory
        for worker in workers:
            rows = self._rows[worker]
            if self._pending_given[rows].all():
                self._pending_given[rows] = False
                self._submit(
                    worker,
                    WorkerRequest(
                        kind=RequestKind.STEP,
                        seq=0,
                        continuous=None if shared else continuous[rows].copy(),
                        discrete=None if shared else discrete[rows].copy(),
                    ),
                )

    def recv(
        self, timeout: float | None = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Results of the first ``batch_size`` slots whose games finished their step.

        Whole games are returned, in the order they finished; ``info["env_id"]`` lists the slots
        of each row. Fewer slots come back only when fewer are pending.

        Args:
            timeout: seconds to wait; on expiry :class:`VectorWaitTimeoutError` is raised and
                nothing is lost.

        Raises:
            NoAsyncCallError: if no slot has a pending step.
        """
        self._require_open()
        k = self.agents_per_process
        outstanding = k * (sum(seq is not None for seq in self._in_flight) + len(self._ready))
        if outstanding == 0:
            raise NoAsyncCallError("recv() has nothing to receive; call send() first.", "recv")
        wanted = min(self.batch_size, outstanding)
        with hierarchical_timer("UnityVectorEnv.recv"):
            self._wait_until(
                lambda: k * len(self._ready) >= wanted, timeout=timeout, what="a batch"
            )
            workers = list(self._ready)[: wanted // k]
            return self._take(workers, with_env_id=True)

    # ----------------------------------------------------------------------------------------
    # information
    # ----------------------------------------------------------------------------------------

    @property
    def game_pids(self) -> list[int | None]:
        """Process id of each game as of its latest reply (None when not known)."""
        return list(self._game_pids)

    @property
    def game_locations(self) -> list[str]:
        """Where each game runs: ``"this machine"``, or ``"Ray node <id> (<ip>)"`` with Ray."""
        return [self._backend.worker_location(i) for i in range(len(self._in_flight))]

    @property
    def restart_counts(self) -> list[int]:
        """How many times each game process was restarted after a failure."""
        return list(self._restarts)

    def set_env_params(self, params: Mapping[str, Any]) -> None:
        """Change environment parameters of the running games (curriculum lessons).

        Each value is a float or a sampler dict, as for ``env_params=`` of
        :class:`unity_gym.game.settings.GameSettings`. Every game gets them through its
        ``EnvironmentParametersChannel`` before its next step or reset (a step already in
        flight finishes first); Unity games usually read them when an episode begins. Games
        restarted or relaunched later (a failure, ``reset(seed=...)``) start with them too.
        Parameters not named keep their current value.

        Raises:
            ValueError: on an invalid name or value (the env is unchanged).
        """
        self._require_open()
        merged = {**self._env_params, **dict(params)}
        GameSettings(env_params=merged)  # validates every value
        self._env_params = merged

    @property
    def env_params_overrides(self) -> dict[str, Any]:
        """The environment parameters set with :meth:`set_env_params` so far."""
        return dict(self._env_params)

    def get_and_reset_stats(self) -> EnvironmentStats:
        """The statistics every game sent since the previous call, then start a new collection.

        Games send them with Unity's ``Academy.Instance.StatsRecorder.Add(key, value,
        aggregation)``; they arrive with the replies of steps and resets (also replies dropped
        as late after a ``reset``, and what a game sent before it crashed). Stats of the games'
        last replies remain readable after :meth:`close`.

        Returns:
            ``{key: [(value, method), ...]}`` merged over the games: one game's values in
            arrival order, games in the order their replies were received.
        """
        collected, self._stats = self._stats, {}
        return collected

    def close_extras(self, **kwargs: Any) -> None:
        """Close every game (workers get ``shutdown_timeout`` seconds) and free shared memory."""
        if not self._finalizer.alive:
            return
        try:
            for index in range(len(self._in_flight)):
                self._submit(index, WorkerRequest(kind=RequestKind.CLOSE, seq=0))
            deadline = time.monotonic() + self._shutdown_timeout
            while any(seq is not None for seq in self._in_flight):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                for reply in self._backend.wait(remaining):
                    self._accept(reply, raise_errors=False)
        finally:
            self._ready.clear()
            self._finalizer()

    def render(self) -> tuple[Any, ...] | None:
        """Not available: slots have no renderer (see ``render_mode``)."""
        raise NotImplementedError(
            "UnityVectorEnv cannot render; use the single-agent env with render_mode='rgb_array'."
        )

    def __repr__(self) -> str:
        name = self.spec.id if self.spec is not None else getattr(self, "behavior_name", "?")
        return (
            f"UnityVectorEnv({name}, num_envs={getattr(self, 'num_envs', '?')}, "
            f"num_processes={getattr(self, 'num_processes', '?')})"
        )

    # ----------------------------------------------------------------------------------------
    # worker messaging
    # ----------------------------------------------------------------------------------------

    def _refuse_invalid_actions(self, actions: ActionTuple, ids: np.ndarray) -> None:
        """Raise before anything is sent if some of the slots ``ids`` got non-finite actions.

        The games would refuse them too (the bridge's ``ActionSpec.validate_action`` refuses
        NaN/infinite continuous values), but only after the other games got their step;
        checking here keeps a refused step from reaching any game, and names the vector slots.
        Shapes and discrete branch ranges are checked before, by
        :meth:`~unity_gym.spaces.ActionAdapter.batch_to_unity` (its message names the batch
        row, which is the slot for :meth:`step` and the position in ``env_ids`` for
        :meth:`send`).

        Args:
            actions: the converted actions, one row per entry of ``ids``.
            ids: the slots the rows belong to.

        Raises:
            UnityActionException: naming every bad slot (up to 5), its game process, its row
                in that game and the Unity agent id it drives.
        """
        continuous = actions.continuous
        if not continuous.size or np.isfinite(continuous).all():
            return
        bad_rows = np.flatnonzero(~np.isfinite(continuous).all(axis=1)).tolist()
        if not bad_rows:
            return
        problems = {
            row: f"continuous action {continuous[row].tolist()} is not finite (NaN or inf)"
            for row in bad_rows
        }
        k = self.agents_per_process
        agent_ids = self._buffers[f"{INFO_PREFIX}agent_id"]
        lines = []
        for row in sorted(problems)[:5]:
            slot = int(ids[row])
            lines.append(
                f"slot {slot} (game process {slot // k}, its agent row {slot % k}, Unity "
                f"agent_id {int(agent_ids[slot])}): {problems[row]}"
            )
        more = len(problems) - len(lines)
        raise UnityActionException(
            f"Actions of {len(problems)} slot(s) refused, nothing was sent to any game: "
            + "; ".join(lines)
            + (f"; and {more} more" if more > 0 else "")
            + ". Fix those actions and call step()/send() again."
        )

    def _refuse_unusable(self, workers: Sequence[int] | range) -> None:
        """Raise if one of ``workers`` failed for good (its game was not restarted).

        Raises:
            UnityEnvironmentException: naming the game and its failure (chained).
        """
        for worker in workers:
            error = self._unusable.get(worker)
            if error is not None:
                first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
                raise UnityEnvironmentException(
                    f"Game process {worker} failed earlier and was not restarted "
                    f"({type(error).__name__}: {first_line}); this vector env cannot use it "
                    "any more. Close it and create a new one (raise max_lifetime_restarts / "
                    "restarts_rate_limit_n if games are expected to fail that often)."
                ) from error

    def _settle_failed_step(self, error: Exception) -> None:
        """After a worker's ``error`` in ``step_wait``: let the other games finish, drop the step.

        Every request still in flight is waited for (workers always answer: a game that hangs
        is given up after ``timeout_wait``), its reply filed, and every result of the step
        dropped, so no step is left pending. Further errors are attached to ``error`` as notes.
        """
        while any(seq is not None for seq in self._in_flight):
            for reply in self._backend.wait(None):
                other = self._accept(reply)
                if other is not None:
                    error.add_note(f"Game process {reply.worker} failed too: {other}")
        dropped = sorted(self._ready)
        self._ready.clear()
        self._pending_given.fill(False)
        if dropped:
            error.add_note(
                f"Game processes {dropped} finished this step; its results were dropped, so "
                "no step is pending: call step() again (or reset())."
            )

    def _require_open(self) -> None:
        if self.closed:
            raise UnityEnvironmentException("This UnityVectorEnv is closed; create a new one.")

    def _submit(self, worker: int, request: WorkerRequest) -> None:
        request.seq = next(self._seq)
        if self._env_params and request.kind in (RequestKind.STEP, RequestKind.RESET):
            request.env_params = self._env_params
        self._in_flight[worker] = request.seq
        self._ready.pop(worker, None)
        self._backend.submit(worker, request)

    def _wait_for(self, workers: set[int], timeout: float | None, what: str) -> None:
        self._wait_until(lambda: workers.issubset(self._ready), timeout, what)

    def _wait_until(self, done: Callable[[], bool], timeout: float | None, what: str) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                running = [i for i, seq in enumerate(self._in_flight) if seq is not None]
                raise VectorWaitTimeoutError(
                    f"Waited {timeout:g} s for {what}; game processes {running} are still "
                    "working. Nothing is lost: wait again to get their results."
                )
            errors = [self._accept(reply) for reply in self._backend.wait(remaining)]
            for error in errors:
                if error is not None:
                    raise error

    def _accept(self, reply: WorkerReply, *, raise_errors: bool = True) -> BaseException | None:
        """File a reply: log its events, merge its timers and stats, keep it if it is current."""
        reply.log_events(logger)
        if reply.stats:
            for key, received in reply.stats.items():
                self._stats.setdefault(key, []).extend(
                    (value, StatsAggregationMethod(method)) for value, method in received
                )
        if reply.timer_tree is not None:
            merge_timer_tree(reply.timer_tree, root_name="vector_workers", is_parallel=True)
        worker = reply.worker
        if reply.kind is not RequestKind.CLOSE:
            self._game_pids[worker] = reply.game_pid
        if reply.seq != self._in_flight[worker]:
            logger.debug("Dropped a late reply of game worker %d (request %d).", worker, reply.seq)
            return None
        self._in_flight[worker] = None
        if reply.restart_reason is not None:
            self._restarts[worker] += 1
        if reply.error is not None:
            if isinstance(reply.error, (RestartLimitError, WorkerLostError)):
                self._unusable.setdefault(worker, reply.error)
            return reply.error if raise_errors else None
        if reply.rows is not None:
            rows = self._rows[worker]
            for name, values in reply.rows.items():
                self._buffers[name][rows] = values
        self._ready[worker] = reply
        return None

    # ----------------------------------------------------------------------------------------
    # results
    # ----------------------------------------------------------------------------------------

    def _take(
        self, workers: list[int], *, with_env_id: bool
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Copy the results of ``workers`` (in that order) out of the buffers."""
        replies = [self._ready.pop(worker) for worker in workers]
        rows = [self._rows[w] for w in workers]
        index: slice | np.ndarray
        if all(after.start == before.stop for before, after in itertools.pairwise(rows)):
            index = slice(rows[0].start, rows[-1].stop)  # consecutive games: views, no gather
            ids = np.arange(index.start, index.stop)
        else:
            ids = np.concatenate([np.arange(row.start, row.stop) for row in rows])
            index = ids
        buffers = self._buffers
        obs = self._gather(OBS_PREFIX, index)
        rewards = np.array(buffers["reward"][index], dtype=np.float64)
        terminated = np.array(buffers["terminated"][index], dtype=bool)
        truncated = np.array(buffers["truncated"][index], dtype=bool)
        infos = self._infos(replies, ids, index)
        if with_env_id:
            infos["env_id"] = ids.astype(np.int64)
            infos["_env_id"] = np.ones(len(ids), dtype=bool)
        return obs, rewards, terminated, truncated, infos

    def _gather(self, prefix: str, index: slice | np.ndarray) -> Any:
        keys = self._observation_adapter.keys
        if not keys:
            return np.array(self._buffers[prefix][index])
        return {key: np.array(self._buffers[prefix + key][index]) for key in keys}

    def _infos(
        self, replies: list[WorkerReply], ids: np.ndarray, index: slice | np.ndarray
    ) -> dict[str, Any]:
        """Gymnasium's batched infos (arrays plus ``_key`` masks) of the slots ``ids``."""
        size = len(ids)
        every = np.ones(size, dtype=bool)
        infos: dict[str, Any] = {}
        for name in self._info_keys:
            key = name[len(INFO_PREFIX) :]
            infos[key] = np.array(self._buffers[name][index])
            infos[f"_{key}"] = every.copy()
        k = self.agents_per_process
        for position, reply in enumerate(replies):
            if reply.restart_reason is not None:
                part = slice(position * k, (position + 1) * k)
                reasons = np.full(k, reply.restart_reason, dtype=object)
                _put(infos, "restart_reason", reasons, part, size)
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            ended = np.flatnonzero(self._buffers[ENDED][index])
            if ended.size:
                self._add_final(infos, ids[ended], ended, size)
        return infos

    def _add_final(
        self, infos: dict[str, Any], rows: np.ndarray, positions: np.ndarray, size: int
    ) -> None:
        """Gymnasium's same-step ``final_obs``/``final_info`` entries of the ended slots."""
        finals = np.full(size, None, dtype=object)
        mask = np.zeros(size, dtype=bool)
        gathered = self._gather(FINAL_OBS_PREFIX, rows)
        for offset, position in enumerate(positions.tolist()):
            if isinstance(gathered, dict):
                finals[position] = {key: value[offset] for key, value in gathered.items()}
            else:
                finals[position] = gathered[offset]
            mask[position] = True
        infos["final_obs"], infos["_final_obs"] = finals, mask
        final_info: dict[str, Any] = {}
        _put(final_info, "agent_id", self._buffers[FINAL_AGENT_ID][rows], positions, size)
        infos["final_info"], infos["_final_info"] = final_info, mask.copy()


def _put(
    infos: dict[str, Any], key: str, values: np.ndarray, where: slice | np.ndarray, size: int
) -> None:
    """Write ``values`` at ``where`` of the batched info ``key`` and set its ``_key`` mask."""
    array = infos.get(key)
    if array is None:
        if values.dtype == object:
            array = np.full((size, *values.shape[1:]), None, dtype=object)
        else:
            array = np.zeros((size, *values.shape[1:]), dtype=values.dtype)
        infos[key] = array
    array[where] = values
    mask = infos.get(f"_{key}")
    if mask is None:
        mask = np.zeros(size, dtype=bool)
        infos[f"_{key}"] = mask
    mask[where] = True
