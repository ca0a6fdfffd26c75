"""``UnityParallelEnv``: every agent of a Unity game as a PettingZoo ``ParallelEnv``.

Agent names. An agent is ``<behavior>_<n>``, where ``<behavior>`` is the behavior name without
its ``?team=<t>`` suffix and ``<n>`` counts that behavior's agents from 0 in increasing Unity
agent id order at the start of the episode. When several behaviors share a name and differ by
team, the team is added: ``Tennis?team=1``'s first agent is ``Tennis_team1_0`` (``Tennis?team=0``'s
is ``Tennis_team0_0``); a single-team game gives ``3DBall_0``, ``3DBall_1``, ... Names are
fixed: ``possible_agents`` is the set of agents of the first episode (read when the game starts)
and never changes; a later episode with more agents of a behavior is an error. A built-in scene
declares its behaviors and agents in advance (:func:`unity_gym.game.catalogue.scene_behaviors`):
there ``possible_agents`` and the spaces cover every behavior the scene may bring, also one whose
agents decide only in later episodes (the WallJump scene moves each area's agent between
``SmallWallJump`` and ``BigWallJump`` as Unity's ``SetModel`` does), and an episode's ``agents``
are those that ask for decisions at its start.

Episodes. A PettingZoo episode is the set of agents that request a decision at its start (after
a reset). An agent whose Unity episode ends (terminal step: ``terminated``, or ``truncated``
when Unity interrupted it) leaves ``agents``; Unity restarts it by itself, and until the next
:meth:`UnityParallelEnv.reset` its new episode is played with zero actions and not reported.
The PettingZoo episode ends when every agent has finished, or after ``max_cycles`` calls of
``step`` (then every remaining agent is ``truncated``).

Agent autoreset. With ``agent_autoreset=True`` the agents play on as in Unity's own loop, where
every training area restarts its agents by itself and no area waits for another (what
``mlagents-learn`` trains on). The step in which an agent's Unity episode ends reports it
``terminated`` (or ``truncated``) with that episode's reward and ``info["group_reward"]``; when
the restarted agent (Unity keeps an agent's id across its episodes) asked for its first decision
by the end of that step, it keeps its name and stays in ``agents``: the observation returned is
the new episode's first one, ``info["agent_id"]``, ``info["group_id"]`` and
``info["action_mask"]`` are the new episode's, and ``info["final_observation"]`` and
``info["final_info"]`` hold the ended episode's last observation and info (Gymnasium's same-step
autoreset, per agent). An agent that asks for its first decision in a later step joins
``agents`` then, under its former name when that is free, else the lowest free name of its
behavior: it appears in that step's results with reward 0, not done. So WallJump's agent that
moves to the other behavior joins under that behavior's name, and an agent that left the game
(DungeonEscape's sacrificed one; Unity gives it a new id when it comes back) rejoins when Unity
brings it back. If every agent of the game ended and no agent asks for a decision, the step plays on
until one does. The reward a restarted agent collected before its first decision is dropped (no
action of the user caused it), as in the vector env. The PettingZoo episode then ends only at
``max_cycles`` or when no agent is left, and ``reset()`` restarts the game as usual. A name that
finished and plays on breaks PettingZoo's rule that a finished agent is never revived
(``pettingzoo.test.parallel_api_test`` says so): the option is for trainers that treat agents as
Unity does (``unity-train`` uses it), and :func:`unity_gym.pettingzoo.env` (AEC) refuses it.

Steps. :meth:`UnityParallelEnv.step` takes an action for every agent in ``agents`` and advances
the game until each of them has reported (requested a decision or ended its episode). Rewards
(and group rewards) of all reports in between are summed. An agent that requests decisions more
often than the others gets zero actions for its extra decisions (the parallel API has no way to
ask for them).

Reset and seeding. ``reset(seed=s)`` restarts the game process with seed ``s % 2**31`` (the game
takes its seed at start-up only; :func:`unity_gym.game.settings.game_seed`, the rule of every
front: any non-negative int, a negative or non-int seed raises ``SeedError``), unless it was
just started with that seed and not stepped since; equal seeds give equal episodes.
``reset()`` without a seed reuses the game: when the last episode ended with all agents
finishing in the same game step and their next decisions arrived in that step, those decisions
start the new episode without resetting the game; otherwise the game is reset. ``options`` are
accepted and ignored.

Infos. Every agent's info holds ``"agent_id"`` (Unity id), ``"behavior_name"``,
``"group_id"`` (0 = no group) and ``"group_reward"`` (float, the group's reward since the
previous step, not included in the agent's reward); agents with discrete actions also get
``"action_mask"`` in the format of ``action_space(agent).sample(mask=...)`` (see
:meth:`unity_gym.spaces.ActionAdapter.sample_mask`; 1 = allowed).

Faults. The rules are :mod:`unity_gym.game.supervisor`'s, the same in every front. A game that
crashes or stops answering (no message within ``timeout_wait``) while it starts, or during
``step`` or ``reset``, is closed, relaunched with the same settings (same seed) and reset, at most
``max_lifetime_restarts`` times in all and ``restarts_rate_limit_n`` times within any
``restarts_rate_limit_period_s`` seconds (``mlagents-learn``'s limits, see
:mod:`unity_gym.game.faults`; -1 lifts a limit); a warning goes to logger
``unity_gym.pettingzoo``. The interrupted ``step`` returns every agent that was live as
``truncated`` with the reward it collected in that step before the failure, its latest
observation and ``info["restart_reason"]`` (an agent whose Unity episode had already ended in that
step keeps its own ``terminated``/``truncated`` outcome); ``agents`` becomes empty, and the next
``reset()`` starts from the relaunched game without restarting it again. A failure during
``reset`` returns the relaunched game's first observations, their infos with
``"restart_reason"``. Once the limits refuse a restart, the game is closed and
:class:`~unity_gym.vector.faults.RestartLimitError` is raised. The relaunched game must have the
behaviors and specs of the first one (else ``UnityEnvironmentException``), so ``possible_agents``
and spaces never change. :attr:`UnityParallelEnv.restart_count` counts the restarts.

Statistics. What the game reports on its stats side channel (Unity's
``Academy.Instance.StatsRecorder.Add``) is collected, across restarts, until
:meth:`UnityParallelEnv.get_and_reset_stats` hands it out. A ``StatsSideChannel`` passed in
``side_channels`` is the one used (only one channel may serve an id), so that method empties it.

Behaviors. ``metadata["agent_behaviors"]`` maps every agent of ``possible_agents`` to its behavior
(the full name, as ``info["behavior_name"]``), also one that has not played yet.

Goal signals. ``metadata["goal_signal_keys"]`` maps each behavior name to the Dict keys of its
observation entries made of ``GOAL_SIGNAL`` sensors (what the task is, e.g. GridWorld's goal
colour; see :attr:`unity_gym.spaces.ObservationAdapter.goal_signal_keys`); trainers may condition
their networks on them. ``metadata["variable_length_keys"]`` maps each behavior name to the keys
of its variable-length sensors (Unity's ``BufferSensor``; see
:attr:`unity_gym.spaces.ObservationAdapter.variable_length_keys`), for entity attention.

Rendering. ``render_mode="rgb_array"`` needs a behavior with a camera (checked at construction);
``render()`` returns the first camera image of the first live agent that has one, as uint8
``(H, W, 3)``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from unity_gym.base_env import DecisionSteps, TerminalSteps
from unity_gym.behavior_names import split_behavior_name
from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.game.faults import RestartPolicy
from unity_gym.game.settings import GameSettings, game_seed
from unity_gym.game.supervisor import GameFailedError, GameSupervisor
from unity_gym.gym_env import MAX_WAIT_STEPS, GameOwner, render_frame
from unity_gym.side_channels.stats_side_channel import EnvironmentStats
from unity_gym.spaces import ActionAdapter, ObservationAdapter, VisualLayout, is_visual

if TYPE_CHECKING:
    from unity_gym.base_env import BehaviorSpec
    from unity_gym.side_channels.side_channel import SideChannel

__all__ = ["ParallelOutcomes", "UnityParallelEnv", "agent_name_prefixes"]

logger = logging.getLogger("unity_gym.pettingzoo")

ParallelOutcomes: TypeAlias = tuple[
    dict[str, Any],
    dict[str, float],
    dict[str, bool],
    dict[str, bool],
    dict[str, dict[str, Any]],
]
"""What ``ParallelEnv.step`` returns: observations, rewards, terminations, truncations, infos."""


def agent_name_prefixes(behavior_names: Sequence[str]) -> dict[str, str]:
    """The agent name prefix of each behavior, e.g. ``"Tennis?team=1"`` → ``"Tennis_team1"``.

    The team is included only when another behavior has the same name without its team.
    """
    parsed = {name: split_behavior_name(name) for name in behavior_names}
    prefixes = {}
    for name, (base, team) in parsed.items():
        shared = sum(1 for other, _ in parsed.values() if other == base) > 1
        prefixes[name] = f"{base}_team{team}" if shared else base
    if len(set(prefixes.values())) != len(prefixes):
        raise UnityEnvironmentException(
            f"Behaviors {sorted(behavior_names)} cannot be given distinct agent names."
        )
    return prefixes


@dataclass
class _Accumulated:
    """What one agent reported during one parallel step."""

    reward: float = 0.0
    group_reward: float = 0.0
    reported: bool = False
    done: bool = False
    interrupted: bool = False
    agent_id: int = -1
    group_id: int = 0
    obs: list[np.ndarray] | None = None
    mask: np.ndarray | None = None


class UnityParallelEnv(GameOwner, ParallelEnv[str, Any, Any]):
    """All agents of a Unity game (a build or a built-in scene) as a PettingZoo ParallelEnv.

    The game starts at construction (its first reset gives the agents and spaces) and stops in
    :meth:`close`. Module docs describe names, episodes, steps, seeding and infos.
    :meth:`set_env_params` changes environment parameters of the running game and
    :meth:`get_and_reset_stats` hands out the statistics it reported (Unity's ``StatsRecorder``).

    Args:
        file_name: a Unity build; default: the built-in ``3DBall`` scene.
        scene: a built-in scene of the headless player instead of ``file_name``.
        max_cycles: truncate every agent after this many ``step`` calls (None: no limit).
        agent_autoreset: agents restarted by Unity play on in the same PettingZoo episode
            (module docs, "Agent autoreset"); False (default): they wait for :meth:`reset`.
        flatten_obs: concatenate non-camera sensors into one Box (:mod:`unity_gym.spaces`).
        visual_obs: ``"uint8_hwc"`` (default) or ``"float_chw"`` camera layout.
        render_mode: None or ``"rgb_array"`` (needs a camera observation).
        seed: game seed until ``reset(seed=...)`` chooses another (default 0); any non-negative
            int, reduced as :func:`~unity_gym.game.settings.game_seed` does.
        num_agents: built-in scenes: total agents; default one training area.
        side_channels: extra side channels served to the game (kept across restarts); a
            ``StatsSideChannel`` among them is the one :meth:`get_and_reset_stats` reads.
        max_lifetime_restarts: restarts of a crashed or hung game allowed over the env's life
            (-1: no limit; module docs, "Faults").
        restarts_rate_limit_n: restarts allowed within any ``restarts_rate_limit_period_s``
            seconds (-1: no limit).
        restarts_rate_limit_period_s: length in seconds of the rate-limit window.
        **game_options: the other :class:`~unity_gym.game.settings.GameSettings` fields
            (``no_graphics``, ``time_scale``, ``env_params``, ``timeout_wait``,
            ``scene_options``, ``worker_id``, ``base_port``, ``num_areas``, ``log_folder``, ...).

    Raises:
        ValueError: on invalid settings, restart limits or ``render_mode`` (nothing is started).
        UnityEnvironmentException: if the game cannot be launched, reports no agent, or fails
            while it starts more often than the restart limits allow (a launched game that
            fails while it starts is restarted: :mod:`unity_gym.game.supervisor`).
    """

    metadata: dict[str, Any] = {  # noqa: RUF012  (PettingZoo declares a plain attribute)
        "render_modes": ["rgb_array"],
        "name": "unity_gym_v0",
        "is_parallelizable": True,
        "render_fps": 30,
    }

    def __init__(
        self,
        file_name: str | os.PathLike[str] | None = None,
        *,
        scene: str | None = None,
        max_cycles: int | None = None,
        agent_autoreset: bool = False,
        flatten_obs: bool = False,
        visual_obs: VisualLayout = "uint8_hwc",
        render_mode: str | None = None,
        seed: int | None = None,
        num_agents: int | None = None,
        side_channels: Sequence[SideChannel] = (),
        max_lifetime_restarts: int = 10,
        restarts_rate_limit_n: int = 1,
        restarts_rate_limit_period_s: float = 60.0,
        **game_options: Any,
    ) -> None:
        if render_mode is not None and render_mode != "rgb_array":
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; use None or 'rgb_array'."
            )
        if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive int or None, got {max_cycles!r}.")
        restart_policy = RestartPolicy(
            max_lifetime_restarts, restarts_rate_limit_n, restarts_rate_limit_period_s
        )
        settings = GameSettings(
            file_name=file_name,
            scene=scene,
            seed=0 if seed is None else game_seed(seed),
            num_agents=num_agents,
            **game_options,
        ).single_area()
        self.max_cycles = max_cycles
        self.agent_autoreset = agent_autoreset
        self.render_mode = render_mode
        self._flatten_obs = flatten_obs
        self._visual_obs: VisualLayout = visual_obs
        self._game = GameSupervisor(
            settings,
            label="game",
            title="The game of this UnityParallelEnv",
            owner="this UnityParallelEnv",
            restart_policy=restart_policy,
            side_channels=side_channels,
            consequence="Its live agents report truncated=True and info['restart_reason'].",
            report=lambda message: logger.warning("%s", message),
        )
        self._closed = False  # close() was called: reset() and step() refuse to run
        self._pristine = False  # launched with the current seed and never stepped since
        self._at_start = False  # at an episode start, not stepped since
        self._restart_ready = False  # the next episode's decisions are all known
        self._live: dict[str, tuple[str, int]] = {}  # name -> (behavior, Unity agent id)
        self._last_reports: dict[str, _Accumulated] = {}  # each agent's latest report
        self._cycles = 0
        self._unseated_warned: set[tuple[str, int]] = set()
        # (behavior, Unity agent id) -> the name that agent last had (agent autoreset)
        self._former_names: dict[tuple[str, int], str] = {}
        self.agents: list[str] = []

        try:
            self._game.start()
            self._pristine = self._at_start = True
            self._describe_game()
            if render_mode == "rgb_array" and not self._cameras:
                raise ValueError(
                    "render_mode='rgb_array' needs a camera observation, but no behavior of "
                    f"the game has one ({sorted(self._observation_adapters)}). Use "
                    "render_mode=None."
                )
        except GameFailedError as fault:  # after its start: raised, as a failure at start
            self.close()
            raise fault.error from None
        except BaseException:
            self.close()
            raise

    # -- PettingZoo API -----------------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        """The observation space of ``agent`` (the same object on every call)."""
        return self._observation_adapters[self._behavior_of(agent)].space

    def action_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        """The action space of ``agent`` (the same object on every call)."""
        return self._action_adapters[self._behavior_of(agent)].space

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Start a PettingZoo episode (module docs); ``options`` are ignored.

        A game that fails meanwhile is restarted (module docs, "Faults").

        Raises:
            SeedError: (a ValueError) ``seed`` is negative or not an integer (nothing changes).
            RestartLimitError: the game failed and the restart limits refuse another restart.
            UnityEnvironmentException: no agent requested a decision within
                :data:`~unity_gym.gym_env.MAX_WAIT_STEPS` game steps, or a relaunched game
                differs from the first one.
        """
        self._require_open()
        new_seed = None if seed is None else game_seed(seed)  # SeedError before anything changes
        self._cycles = 0
        try:
            if new_seed is not None and not (self._pristine and new_seed == self.settings.seed):
                self._launch(new_seed)
            elif not self._at_start and not self._restart_ready:
                self._exchange(reset=True)
            self._restart_ready = False
            observations, infos = self._start_episode()
        except GameFailedError as fault:
            observations, infos = self._restarted_reset(fault)
        self._at_start = True
        return observations, infos

    def step(self, actions: Mapping[str, Any]) -> ParallelOutcomes:
        """Act for every live agent and advance until each has reported (module docs).

        If the game fails meanwhile it is restarted and every live agent is truncated (module
        docs, "Faults").

        Raises:
            ValueError: for an unknown agent name or a live agent without an action.
            UnityActionException: for an action outside the agent's action space.
            UnityEnvironmentException: if an agent does not report within
                :data:`~unity_gym.gym_env.MAX_WAIT_STEPS` game steps, or a relaunched game
                differs from the first one.
            RestartLimitError: the game failed and the restart limits refuse another restart
                (the game is closed).
        """
        self._require_open()
        if not self.agents:
            raise gymnasium.error.ResetNeeded(
                "Call reset() before step(): every agent has finished or none has started."
            )
        unknown = set(actions) - set(self.possible_agents)
        missing = set(self.agents) - set(actions)
        if unknown or missing:
            raise ValueError(
                f"step() needs one action per agent in env.agents; unknown agents "
                f"{sorted(unknown)}, agents without an action {sorted(missing)}."
            )
        unity = self.unity_env
        for name in self.agents:
            behavior, agent_id = self._live[name]
            action = self._action_adapters[behavior].to_unity(actions[name])
            unity.set_action_for_agent(behavior, agent_id, action)
        self._pristine = self._at_start = False
        reports = {name: _Accumulated() for name in self.agents}
        newcomers: dict[str, dict[int, _Accumulated]] | None = {} if self.agent_autoreset else None
        try:
            self._advance(reports, newcomers)
        except GameFailedError as fault:
            return self._restarted_step(reports, fault)
        self._cycles += 1
        out_of_cycles = self.max_cycles is not None and self._cycles >= self.max_cycles
        result = self._outcomes(reports, end_all=out_of_cycles)
        _, _, terminations, truncations, _ = result
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        for name in list(self._live):
            if name not in self.agents:
                del self._live[name]
        if newcomers and not out_of_cycles:
            self._seat_newcomers(newcomers, result)
        self._restart_ready = not self.agents and not out_of_cycles and self._all_restarted(reports)
        return result

    def render(self) -> np.ndarray | None:
        """The first live agent's first camera image as uint8 ``(H, W, 3)`` (module docs)."""
        if self.render_mode is None:
            return None
        for name in self.agents or list(self._last_reports):
            camera = self._cameras.get(self._behavior_of(name))
            report = self._last_reports.get(name)
            if camera is not None and report is not None and report.obs is not None:
                return render_frame(report.obs[camera])
        return None

    def close(self) -> None:
        """Stop the game and its process; safe to call more than once.

        A ``step`` or ``reset`` that another thread is running then fails at once with
        :class:`UnityEnvironmentException` instead of restarting the game.
        """
        self._closed = True
        self.agents = []
        self._live = {}
        self._game.close()

    def _require_open(self) -> None:
        """Raise ``gymnasium.error.ClosedEnvironmentError`` after :meth:`close`."""
        if self._closed:
            raise gymnasium.error.ClosedEnvironmentError(
                "This UnityParallelEnv is closed (close() stopped its game); create a new env "
                "instead of calling reset() or step() on it."
            )

    def set_env_params(self, params: Mapping[str, Any]) -> None:
        """Change environment parameters of the running game (curriculum lessons).

        Each value is a float or a sampler dict, as for ``env_params=`` of
        :class:`unity_gym.game.settings.GameSettings`. They reach the game through its
        ``EnvironmentParametersChannel`` with the next ``step`` or ``reset`` (Unity games
        usually read them when an episode begins); a game restarted or relaunched later
        (a failure, ``reset(seed=...)``) starts with them. Parameters not named keep their
        current value.

        Raises:
            ValueError: on an invalid name or value (the env is unchanged).
        """
        self._game.set_env_params(params)

    def get_and_reset_stats(self) -> EnvironmentStats:
        """The statistics the game sent since the previous call, then start a new collection.

        Games send them with Unity's ``Academy.Instance.StatsRecorder.Add(key, value,
        aggregation)``; they arrive with each ``step`` and ``reset``. What a game sent before it
        crashed or was relaunched is kept. When ``side_channels`` held a ``StatsSideChannel``,
        this empties that channel (it is the same object).

        Returns:
            ``{key: [(value, method), ...]}`` with values in arrival order.

        Raises:
            UnityEnvironmentException: a channel of another class passed in ``side_channels``
                serves the stats channel id, so the stats are not collected here.
        """
        if self._game.stats_channel is None:
            raise UnityEnvironmentException(
                "The stats side channel id is served by a channel of another class passed in "
                "side_channels, so this env does not collect the game's stats; read them from "
                "that channel, or pass a StatsSideChannel (or none)."
            )
        return self._game.take_stats()

    @property
    def restart_count(self) -> int:
        """Restarts of the game after a crash or hang so far (``reset(seed=...)`` not counted)."""
        return self._game.restarts

    @property
    def restart_policy(self) -> RestartPolicy:
        """The limits on restarting a crashed or hung game (from the constructor's arguments)."""
        return self._game.restart_policy

    def state(self) -> np.ndarray:
        """Not available: a Unity game exposes no global state.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(
            "Unity games expose no global state; build one from the agents' observations."
        )

    # -- internals ----------------------------------------------------------------------------

    def _launch(self, seed: int) -> None:
        """Relaunch the game with ``seed`` (:meth:`GameSupervisor.launch`); no agent is live."""
        self.agents = []
        self._live = {}
        self._restart_ready = False
        self._game.launch(seed)
        self._pristine = self._at_start = True

    def _exchange(self, *, reset: bool = False) -> None:
        """One reset or step of the bridge (:meth:`GameSupervisor.exchange`)."""
        self._game.exchange(reset=reset)

    def _recover(self, fault: GameFailedError) -> str:
        """Restart the failed game (:meth:`GameSupervisor.restart`); no agent is live after.

        Returns:
            The restart reason for the agents' infos.
        """
        self.agents = []
        self._live = {}
        self._restart_ready = False
        reason = self._game.restart(fault)
        self._pristine = self._at_start = True
        return reason

    def _restarted_step(
        self, reports: dict[str, _Accumulated], fault: GameFailedError
    ) -> ParallelOutcomes:
        """Restart the failed game and end every agent of the interrupted step (module docs)."""
        outcomes: dict[str, _Accumulated] = {}
        for name, report in reports.items():
            if not report.reported:  # nothing new since its last report: that one stands
                last = self._last_reports[name]
                report = replace(last, reward=0.0, group_reward=0.0, done=False, interrupted=False)
            outcomes[name] = report
        reason = self._recover(fault)
        result = self._outcomes(outcomes, end_all=True)
        for info in result[4].values():
            info["restart_reason"] = reason
        return result

    def _outcomes(self, reports: dict[str, _Accumulated], *, end_all: bool) -> ParallelOutcomes:
        """``step``'s result for ``reports``: an ended Unity episode is terminated (or truncated
        when interrupted); with ``end_all`` every other agent is truncated too."""
        observations: dict[str, Any] = {}
        rewards: dict[str, float] = {}
        terminations: dict[str, bool] = {}
        truncations: dict[str, bool] = {}
        infos: dict[str, dict[str, Any]] = {}
        for name, report in reports.items():
            observations[name] = self._observe(name, report)
            rewards[name] = report.reward
            terminations[name] = report.done and not report.interrupted
            truncations[name] = (report.done and report.interrupted) or (
                end_all and not report.done
            )
            infos[name] = self._info(name, report)
        return observations, rewards, terminations, truncations, infos

    def _restarted_reset(
        self, fault: GameFailedError
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Restart the failed game and start an episode in it (module docs)."""
        while True:
            reason = self._recover(fault)
            try:
                observations, infos = self._start_episode()
            except GameFailedError as again:
                fault = again
                continue
            for info in infos.values():
                info["restart_reason"] = reason
            return observations, infos

    def _describe_game(self) -> None:
        """Read behaviors, spaces and ``possible_agents`` from the game's first decisions (and
        from a built-in scene's declaration)."""
        declared = self._game.declared_behaviors
        specs: dict[str, BehaviorSpec] = {**self._game.declared_specs, **self._game.first_specs}
        self._prefixes = agent_name_prefixes(sorted(specs))
        self._observation_adapters = {
            name: ObservationAdapter(
                spec.observation_specs,
                flatten_obs=self._flatten_obs,
                visual_obs=self._visual_obs,
            )
            for name, spec in specs.items()
        }
        self._action_adapters = {
            name: ActionAdapter(spec.action_spec) for name, spec in specs.items()
        }
        self.metadata = {
            **type(self).metadata,
            "goal_signal_keys": {
                name: adapter.goal_signal_keys
                for name, adapter in self._observation_adapters.items()
            },
            "variable_length_keys": {
                name: adapter.variable_length_keys
                for name, adapter in self._observation_adapters.items()
            },
        }
        self._cameras = {
            name: index
            for name, spec in specs.items()
            for index in [
                next((i for i, o in enumerate(spec.observation_specs) if is_visual(o)), None)
            ]
            if index is not None
        }
        starts = self._await_decisions()
        self._agent_behaviors: dict[str, str] = {}
        for behavior in sorted(specs):
            seen = len(starts[behavior]) if behavior in starts else 0
            for n in range(max(seen, declared.get(behavior, (None, 0))[1])):
                self._agent_behaviors[f"{self._prefixes[behavior]}_{n}"] = behavior
        self.possible_agents = list(self._agent_behaviors)
        self.metadata["agent_behaviors"] = dict(self._agent_behaviors)
        self._start_decisions = starts

    def _await_decisions(self) -> dict[str, DecisionSteps]:
        """Advance the game (zero actions) until some agent requests a decision."""
        unity = self.unity_env
        for _ in range(MAX_WAIT_STEPS):
            steps = {name: unity.get_steps(name)[0] for name in sorted(unity.behavior_specs)}
            if any(len(s) for s in steps.values()):
                return {name: s for name, s in steps.items() if len(s)}
            self._exchange()
            self._pristine = False
        raise UnityEnvironmentException(
            f"No agent requested a decision within {MAX_WAIT_STEPS} game steps after a reset."
        )

    def _start_episode(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        starts = self._await_decisions()
        self._live = {}
        self._last_reports = {}
        observations: dict[str, Any] = {}
        infos: dict[str, dict[str, Any]] = {}
        for behavior, steps in starts.items():
            if behavior not in self._prefixes:
                raise UnityEnvironmentException(
                    f"The game started an episode with agents of behavior {behavior!r}, which "
                    f"had none when the env started (its behaviors then: "
                    f"{sorted(self._prefixes)}). PettingZoo agents are fixed by the first "
                    "episode, so a game whose agents move between behaviors (Unity's SetModel) "
                    "cannot be driven as a PettingZoo env; configure it so that every behavior "
                    "has its agents from the start (the built-in WallJump: scene option "
                    "walls=small or walls=big)."
                )
            order = np.argsort(steps.agent_id, kind="stable")
            for n, row in enumerate(order.tolist()):
                name = f"{self._prefixes[behavior]}_{n}"
                if name not in self._agent_behaviors:
                    known = sum(1 for b in self._agent_behaviors.values() if b == behavior)
                    raise UnityEnvironmentException(
                        f"The game started an episode with {len(steps)} agents of behavior "
                        f"{behavior!r}, more than the {known} of its first episode; PettingZoo "
                        "agents are fixed (possible_agents)."
                    )
                report = _decision(steps, row, self._action_adapters[behavior])
                self._live[name] = (behavior, report.agent_id)
                self._former_names[(behavior, report.agent_id)] = name
                self._last_reports[name] = report
                observations[name] = self._observation_adapters[behavior].from_unity(steps.obs, row)
                infos[name] = self._info(name, report)
        self.agents = [a for a in self.possible_agents if a in self._live]
        return observations, infos

    def _advance(
        self,
        reports: dict[str, _Accumulated],
        newcomers: dict[str, dict[int, _Accumulated]] | None = None,
    ) -> None:
        """Step the game until every agent in ``reports`` has reported at least once.

        With ``newcomers`` (agent autoreset), also collect the decisions of agents that are not
        live (Unity's restarted agents) in the step's last exchange: behavior -> Unity agent id
        -> its first decision. When every agent of ``reports`` ended its episode and none of
        them asks for a decision, play on (nobody waits for an action) until some agent does,
        or :data:`~unity_gym.gym_env.MAX_WAIT_STEPS` exchanges pass (then without newcomers).
        """
        unity = self.unity_env
        by_id = {self._live[name]: name for name in reports}
        behaviors = sorted({behavior for behavior, _ in by_id})
        if newcomers is not None:
            behaviors = sorted(set(unity.behavior_specs) & set(self._prefixes))
        waiting = set(reports)
        for _ in range(MAX_WAIT_STEPS):
            self._exchange()
            if newcomers is not None:
                newcomers.clear()  # an earlier exchange's newcomer was answered with zeros
            for behavior in behaviors:
                decisions, terminals = unity.get_steps(behavior)
                self._collect(behavior, decisions, terminals, by_id, reports, waiting)
                if newcomers is not None:
                    self._note_newcomers(behavior, decisions, by_id, reports, newcomers)
            if not waiting and (
                newcomers is None or newcomers or not all(r.done for r in reports.values())
            ):
                return
        if not waiting:
            return  # agent autoreset: no restarted agent asked for a decision yet
        raise UnityEnvironmentException(
            f"Agents {sorted(waiting)} neither requested a decision nor ended their episode "
            f"within {MAX_WAIT_STEPS} game steps."
        )

    def _collect(
        self,
        behavior: str,
        decisions: DecisionSteps,
        terminals: TerminalSteps,
        by_id: dict[tuple[str, int], str],
        reports: dict[str, _Accumulated],
        waiting: set[str],
    ) -> None:
        adapter = self._action_adapters[behavior]
        for row, agent_id in enumerate(terminals.agent_id.tolist()):
            name = by_id.get((behavior, agent_id))
            if name is None or reports[name].done:
                continue
            report = reports[name]
            report.reward += float(terminals.reward[row])
            report.group_reward += float(terminals.group_reward[row])
            report.done, report.reported = True, True
            report.interrupted = bool(terminals.interrupted[row])
            report.agent_id, report.group_id = agent_id, int(terminals.group_id[row])
            report.obs = [np.array(o[row]) for o in terminals.obs]
            report.mask = None
            waiting.discard(name)
        for row, agent_id in enumerate(decisions.agent_id.tolist()):
            name = by_id.get((behavior, agent_id))
            if name is None or reports[name].done:
                continue
            step = _decision(decisions, row, adapter)
            report = reports[name]
            report.reward += step.reward
            report.group_reward += step.group_reward
            report.reported = True
            report.agent_id, report.group_id = agent_id, step.group_id
            report.obs, report.mask = step.obs, step.mask
            waiting.discard(name)

    def _note_newcomers(
        self,
        behavior: str,
        decisions: DecisionSteps,
        by_id: dict[tuple[str, int], str],
        reports: dict[str, _Accumulated],
        newcomers: dict[str, dict[int, _Accumulated]],
    ) -> None:
        """Record the decisions of ``behavior``'s agents that are not live or whose episode
        ended in this step (their ``reports`` entry is done: Unity restarted them)."""
        adapter = self._action_adapters[behavior]
        for row, agent_id in enumerate(decisions.agent_id.tolist()):
            name = by_id.get((behavior, agent_id))
            if name is None or reports[name].done:
                newcomers.setdefault(behavior, {})[agent_id] = _decision(decisions, row, adapter)

    def _seat_newcomers(
        self, newcomers: dict[str, dict[int, _Accumulated]], result: ParallelOutcomes
    ) -> None:
        """Give Unity's restarted agents the free names of their behavior and add them to
        ``agents`` and to the step's ``result`` (module docs, "Agent autoreset").

        Unity keeps an agent's id across its episodes, so an agent gets back the name it last
        had when that name is free; an agent new to the game (Unity gives a re-enabled agent a
        new id) gets the lowest free name of its behavior. Agents beyond the behavior's names
        act with zero actions and are not reported (a warning, once each).
        """
        observations, rewards, terminations, truncations, infos = result
        taken = set(self.agents)
        for behavior, arrivals in sorted(newcomers.items()):
            free = [
                name
                for name in self.possible_agents
                if self._agent_behaviors[name] == behavior and name not in taken
            ]
            # agents whose former name is free first, so that no newcomer takes it from them
            order = sorted(
                arrivals.items(),
                key=lambda item: (self._former_names.get((behavior, item[0])) not in free, item[0]),
            )
            for agent_id, report in order:
                former = self._former_names.get((behavior, agent_id))
                if former in free:
                    free.remove(former)
                    name = former
                elif free:
                    name = free.pop(0)
                else:
                    self._warn_unseated(behavior, agent_id)
                    continue
                taken.add(name)
                self._live[name] = (behavior, agent_id)
                self._former_names[(behavior, agent_id)] = name
                info = self._info(name, report)
                if name in observations:  # ended in this step: same-step autoreset
                    info["group_reward"] = infos[name]["group_reward"]
                    info["final_observation"] = observations[name]
                    info["final_info"] = infos[name]
                else:
                    info["group_reward"] = 0.0
                    rewards[name] = 0.0
                    terminations[name] = truncations[name] = False
                observations[name] = self._observe(name, report)
                infos[name] = info
        self.agents = [name for name in self.possible_agents if name in taken]

    def _warn_unseated(self, behavior: str, agent_id: int) -> None:
        if (behavior, agent_id) not in self._unseated_warned:
            self._unseated_warned.add((behavior, agent_id))
            logger.warning(
                "Agent %d of %s started an episode while every agent name of its behavior is "
                "taken; it acts with zero actions and is not part of the env.",
                agent_id,
                behavior,
            )

    def _all_restarted(self, reports: dict[str, _Accumulated]) -> bool:
        """Whether the last game step ended every agent and brought the next decisions of all."""
        if len(reports) != len(self.possible_agents):
            return False
        unity = self.unity_env
        counts: dict[str, int] = {}
        for behavior in self._agent_behaviors.values():
            counts[behavior] = counts.get(behavior, 0) + 1
        for behavior, count in counts.items():
            decisions, terminals = unity.get_steps(behavior)
            if len(terminals) != count or len(decisions) != count:
                return False
        return True

    def _observe(self, name: str, report: _Accumulated) -> Any:
        """The observation of ``report`` in the agent's space; it becomes its latest report."""
        assert report.obs is not None
        self._last_reports[name] = report
        adapter = self._observation_adapters[self._agent_behaviors[name]]
        return adapter.from_unity([o[np.newaxis] for o in report.obs], 0)

    def _behavior_of(self, agent: str) -> str:
        try:
            return self._agent_behaviors[agent]
        except KeyError:
            raise KeyError(
                f"Unknown agent {agent!r}; the agents are {self.possible_agents}."
            ) from None

    def _info(self, name: str, report: _Accumulated) -> dict[str, Any]:
        behavior = self._agent_behaviors[name]
        info: dict[str, Any] = {
            "agent_id": report.agent_id,
            "behavior_name": behavior,
            "group_id": report.group_id,
            "group_reward": report.group_reward,
        }
        adapter = self._action_adapters[behavior]
        if adapter.mask_size:
            mask = report.mask if report.mask is not None else np.ones(adapter.mask_size, bool)
            info["action_mask"] = adapter.sample_mask(mask)
        return info


def _decision(steps: DecisionSteps, row: int, adapter: ActionAdapter) -> _Accumulated:
    """One agent's decision step, copied out of the bridge's batch."""
    return _Accumulated(
        reward=float(steps.reward[row]),
        group_reward=float(steps.group_reward[row]),
        reported=True,
        agent_id=int(steps.agent_id[row]),
        group_id=int(steps.group_id[row]),
        obs=[np.array(o[row]) for o in steps.obs],
        mask=adapter.mask_from_unity(steps.action_mask, row) if adapter.mask_size else None,
    )
