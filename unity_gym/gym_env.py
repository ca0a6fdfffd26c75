"""``UnityGymEnv``: one agent of a Unity game as a Gymnasium environment.

Reach it with ``gymnasium.make("Unity-v0", ...)`` (or ``Unity-<scene>-v0``, see
:mod:`unity_gym.registration`) or construct it directly. It talks to the game only through the
bridge, :class:`unity_gym.environment.UnityEnvironment` (``env.unwrapped.unity_env``).

Spaces and conversions are those of :mod:`unity_gym.spaces`. ``info`` always holds
``"agent_id"`` (the Unity agent id, which may change between episodes), ``"group_id"`` (0 when
the agent is in no group) and ``"group_reward"`` (a float: the reward given to the agent's group
since the previous report, *not* added to the returned reward); for behaviors with discrete
actions it also holds ``"action_mask"`` (flat bool, True = allowed, branches concatenated; all
True at episode ends). :meth:`UnityGymEnv.action_masks` returns the same mask (``sb3-contrib``'s
``MaskablePPO`` reads it).

Decisions. :meth:`UnityGymEnv.step` sets the agent's action and advances the game until that
agent requests its next decision or its episode ends; other agents (see ``agent_index``) act with
zero actions meanwhile. An episode end is ``terminated`` when the game ended it and
``truncated`` when it was interrupted (e.g. the agent's max step). When the agent's terminal
step and the first decision of its next episode arrive in the same game step, ``step`` returns
the terminal step and keeps the decision: the next :meth:`UnityGymEnv.reset` returns it
*without* resetting the game. Otherwise ``reset`` after an episode end advances the game (with
zero actions for deciding agents) until a decision arrives, and ``reset`` in the middle of an
episode resets the whole game.

Seeding. The game takes its seed at start-up only (the handshake). ``reset(seed=s)`` therefore
restarts the game process with seed ``s`` unless the game was started with ``s`` and has not
been stepped since, which makes two ``reset(seed=s)`` calls produce the same episode, as
Gymnasium requires. ``reset()`` without a seed never restarts the game. The handshake's seed
is an int32 (``UnityRLInitializationInputProto.seed``) while Gymnasium seeds are any
non-negative int (Stable-Baselines3 draws them up to ``2**32``): the game gets
``seed % 2**31`` (:data:`GAME_SEED_MODULUS`), the env's ``np_random`` the seed itself. That
rule is :func:`unity_gym.game.settings.game_seed`, shared by every front; a negative or non-int
seed raises :class:`~unity_gym.game.settings.SeedError` (a ``ValueError``).

One agent. A game with more than one agent (all behaviors together) is refused with an error
naming the count, unless ``agent_index=k`` is given: the env then drives the agent at row ``k``
of the chosen behavior's decisions at the start of each episode, following it by agent id until
its episode ends, while every other agent acts with zero actions.

Rendering. ``render_mode="rgb_array"`` requires a camera observation (checked at
construction): :meth:`UnityGymEnv.render` returns the agent's latest first camera image as
uint8 ``(H, W, 3)`` (one channel is repeated three times; with more than three, as with stacked
cameras, the first three are shown). The headless player draws no other picture.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium
import numpy as np

from unity_gym.base_env import DecisionSteps
from unity_gym.behavior_names import select_behavior
from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.game.settings import GAME_SEED_MODULUS, GameSettings, game_seed
from unity_gym.game.supervisor import GameFailedError, GameSupervisor
from unity_gym.spaces import ActionAdapter, ObservationAdapter, VisualLayout, is_visual

if TYPE_CHECKING:
    from unity_gym.environment import UnityEnvironment
    from unity_gym.side_channels.side_channel import SideChannel

__all__ = [
    "GAME_SEED_MODULUS",
    "MAX_WAIT_STEPS",
    "GameOwner",
    "UnityGymEnv",
    "render_frame",
    "select_behavior",
]

MAX_WAIT_STEPS = 10_000
"""Game steps to wait for the driven agent's next decision before giving up with an error."""


def render_frame(image: np.ndarray) -> np.ndarray:
    """A uint8 ``(H, W, 3)`` frame from one ``(C, H, W)`` camera observation in ``[0, 1]``."""
    channels = image.shape[0]
    picked = image[:3] if channels >= 3 else np.repeat(image[:1], 3, axis=0)
    return np.rint(np.clip(np.transpose(picked, (1, 2, 0)), 0.0, 1.0) * 255.0).astype(np.uint8)


@dataclass
class _Report:
    """One report of the driven agent, copied out of the bridge's batches."""

    agent_id: int
    obs: list[np.ndarray]
    reward: float
    group_id: int
    group_reward: float
    mask: np.ndarray | None  # flat, True = allowed; None at episode ends


def _decision_report(steps: DecisionSteps, row: int, actions: ActionAdapter) -> _Report:
    return _Report(
        agent_id=int(steps.agent_id[row]),
        obs=[np.array(o[row]) for o in steps.obs],
        reward=float(steps.reward[row]),
        group_id=int(steps.group_id[row]),
        group_reward=float(steps.group_reward[row]),
        mask=actions.mask_from_unity(steps.action_mask, row) if actions.mask_size else None,
    )


class GameOwner:
    """What every front that owns one game exposes: the bridge and the game's settings."""

    _game: GameSupervisor

    @property
    def unity_env(self) -> UnityEnvironment:
        """The bridge driving the game.

        Raises:
            UnityEnvironmentException: if the env is closed.
        """
        if not self._game.running:
            raise UnityEnvironmentException(
                f"This {type(self).__name__} is closed; create a new one."
            )
        return self._game.env

    @property
    def settings(self) -> GameSettings:
        """The settings of the running game (the seed follows ``reset(seed=...)``)."""
        return self._game.settings


class UnityGymEnv(GameOwner, gymnasium.Env[Any, Any]):
    """One agent of a Unity game (a build or a built-in scene) as a Gymnasium env.

    The game is started at construction (its first reset gives the spaces) and stopped by
    :meth:`close`. Module docs describe decisions, seeding, ``agent_index`` and rendering.

    Args:
        file_name: a Unity build; default: the built-in ``3DBall`` scene (one training area).
        scene: a built-in scene of the headless player instead of ``file_name``.
        behavior_name: behavior to drive (needed when the game has several).
        agent_index: drive this agent of a multi-agent game; the others act with zero actions.
        flatten_obs: concatenate non-camera sensors into one Box (:mod:`unity_gym.spaces`).
        visual_obs: ``"uint8_hwc"`` (default) or ``"float_chw"`` camera layout.
        render_mode: None or ``"rgb_array"`` (needs a camera observation).
        seed: game seed until ``reset(seed=...)`` chooses another (default 0); a non-negative
            int of any size, reduced like reset's (:func:`unity_gym.game.settings.game_seed`).
        num_agents: built-in scenes: total agents; default one training area.
        side_channels: extra side channels served to the game (kept across restarts).
        **game_options: the other :class:`~unity_gym.game.settings.GameSettings` fields
            (``no_graphics``, ``time_scale``, ``width``, ``height``, ``quality_level``,
            ``target_frame_rate``, ``capture_frame_rate``, ``env_params``, ``timeout_wait``,
            ``additional_args``, ``worker_id``, ``base_port``, ``num_areas``, ``log_folder``,
            ``scene_options``).

    Raises:
        ValueError: on invalid settings or ``render_mode`` (nothing is started then).
        UnityEnvironmentException: if the game has several agents and no ``agent_index``, the
            behavior is not found, or the game fails to start (the game is closed again).
    """

    # Gymnasium declares ``metadata`` as a plain attribute, so it cannot be a ClassVar here.
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}  # noqa: RUF012

    def __init__(
        self,
        file_name: str | os.PathLike[str] | None = None,
        *,
        scene: str | None = None,
        behavior_name: str | None = None,
        agent_index: int | None = None,
        flatten_obs: bool = False,
        visual_obs: VisualLayout = "uint8_hwc",
        render_mode: str | None = None,
        seed: int | None = None,
        num_agents: int | None = None,
        side_channels: Sequence[SideChannel] = (),
        **game_options: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; use None or 'rgb_array' (the "
                "game runs headless, there is no window to draw into)."
            )
        if agent_index is not None and (not isinstance(agent_index, int) or agent_index < 0):
            raise ValueError(f"agent_index must be a non-negative int, got {agent_index!r}.")
        unknown = set(game_options) - {f.name for f in _settings_fields()}
        if unknown:
            raise TypeError(
                f"UnityGymEnv got unknown keyword(s) {sorted(unknown)}; valid game settings are "
                f"{sorted(f.name for f in _settings_fields())}."
            )
        settings = GameSettings(
            file_name=file_name,
            scene=scene,
            seed=0 if seed is None else game_seed(seed),
            num_agents=num_agents,
            **game_options,
        )
        self._game = GameSupervisor(
            settings.single_area(),
            owner="this UnityGymEnv",
            side_channels=side_channels,
            collect_stats=False,
        )
        self.render_mode = render_mode
        self._requested_behavior = behavior_name
        self._agent_index = agent_index
        self._closed = False  # close() was called: reset() and step() refuse to run
        self._pristine = False  # launched with the current seed and never stepped since
        self._start: _Report | None = None  # first decision of the next/current episode
        self._current: _Report | None = None  # latest report of the driven agent
        self._episode_running = False
        self._last_mask: np.ndarray | None = None

        self._launch(None)
        try:
            unity = self.unity_env
            self.behavior_name = select_behavior(unity.behavior_specs, behavior_name)
            spec = unity.behavior_specs[self.behavior_name]
            self._check_agent_count(unity)
            self._observations = ObservationAdapter(
                spec.observation_specs, flatten_obs=flatten_obs, visual_obs=visual_obs
            )
            self._actions = ActionAdapter(spec.action_spec)
            self._camera = next(
                (i for i, o in enumerate(spec.observation_specs) if is_visual(o)), None
            )
            if render_mode == "rgb_array" and self._camera is None:
                raise ValueError(
                    f"render_mode='rgb_array' needs a camera observation, but behavior "
                    f"{self.behavior_name!r} has none "
                    f"({[o.name for o in spec.observation_specs]}). Use render_mode=None."
                )
            self._start = self._await_start()
        except BaseException:
            self.close()
            raise
        self.observation_space = self._observations.space
        self.action_space = self._actions.space
        # Per instance: only a behavior with a camera can render.
        modes = ["rgb_array"] if self._camera is not None else []
        self.metadata = {**type(self).metadata, "render_modes": modes}

    # -- public API ---------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode and return its first observation and info (module docs).

        Args:
            seed: restart the game with this seed, reduced to ``seed % 2**31`` for the wire's
                int32 field (unless the game just started with it).
            options: unused; must be None or empty.

        Raises:
            ValueError: if ``options`` holds anything.
            SeedError: (a ValueError) if ``seed`` is negative or not an integer.
        """
        self._require_open()
        if options:
            raise ValueError(
                f"UnityGymEnv.reset takes no options, got {sorted(options)}; set environment "
                "parameters with env_params= at construction."
            )
        new_seed = None if seed is None else game_seed(seed)  # the one rule of every front
        super().reset(seed=None if seed is None else int(seed))
        if new_seed is not None and not (self._pristine and new_seed == self.settings.seed):
            self._launch(new_seed)
            self._start = self._await_start()
        elif self._start is None:
            if self._episode_running:
                self.unity_env.reset()
            self._start = self._await_start()
        report = self._start
        self._current = report
        self._episode_running = True
        return self._observation(report), self._info(report)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Act, then advance the game until the agent decides again or its episode ends.

        Raises:
            gymnasium.error.ResetNeeded: before the first reset or after an episode end.
            UnityActionException: for an action outside :attr:`action_space`.
            UnityEnvironmentException: if the agent does not report within
                :data:`MAX_WAIT_STEPS` game steps.
        """
        self._require_open()
        if not self._episode_running or self._current is None:
            raise gymnasium.error.ResetNeeded(
                "Call reset() before step(): the episode has ended or not started."
            )
        unity = self.unity_env
        agent_id = self._current.agent_id
        unity.set_action_for_agent(self.behavior_name, agent_id, self._actions.to_unity(action))
        self._pristine = False
        self._start = None
        for _ in range(MAX_WAIT_STEPS):
            unity.step()
            decisions, terminals = unity.get_steps(self.behavior_name)
            if agent_id in terminals:
                row = terminals.agent_id_to_index[agent_id]
                report = _Report(
                    agent_id=agent_id,
                    obs=[np.array(o[row]) for o in terminals.obs],
                    reward=float(terminals.reward[row]),
                    group_id=int(terminals.group_id[row]),
                    group_reward=float(terminals.group_reward[row]),
                    mask=None,
                )
                interrupted = bool(terminals.interrupted[row])
                self._current = report
                self._episode_running = False
                self._start = self._choose_start(decisions, agent_id)
                return (
                    self._observation(report),
                    report.reward,
                    not interrupted,
                    interrupted,
                    self._info(report),
                )
            if agent_id in decisions:
                row = decisions.agent_id_to_index[agent_id]
                report = _decision_report(decisions, row, self._actions)
                self._current = report
                return self._observation(report), report.reward, False, False, self._info(report)
        raise UnityEnvironmentException(
            f"Agent {agent_id} of behavior {self.behavior_name!r} neither requested a decision "
            f"nor ended its episode in {MAX_WAIT_STEPS} game steps; the agent may have been "
            "destroyed or stopped requesting decisions."
        )

    def action_masks(self) -> np.ndarray:
        """The latest flat action mask (True = allowed); all True for continuous behaviors."""
        if self._last_mask is None:
            return np.ones(self._actions.mask_size, dtype=bool)
        return self._last_mask.copy()

    def render(self) -> np.ndarray | None:
        """The agent's latest camera image as uint8 ``(H, W, 3)``; None without render_mode."""
        if self.render_mode is None or self._camera is None:
            return None
        report = self._current or self._start
        if report is None:
            return None
        return render_frame(report.obs[self._camera])

    def close(self) -> None:
        """Stop the game and its process; safe to call more than once."""
        self._closed = True
        self._episode_running = False
        self._start = self._current = None
        self._game.close()

    # -- internals ----------------------------------------------------------------------------

    def _require_open(self) -> None:
        """Raise ``gymnasium.error.ClosedEnvironmentError`` after :meth:`close`."""
        if self._closed:
            raise gymnasium.error.ClosedEnvironmentError(
                "This UnityGymEnv is closed (close() stopped its game); create a new env "
                "instead of calling reset() or step() on it."
            )

    def _launch(self, seed: int | None) -> None:
        """(Re)start the game (with ``seed`` if given) and reset it.

        This env does not restart a failed game (:mod:`unity_gym.game.supervisor`): the bridge's
        error is raised and the env is closed.
        """
        self._episode_running = False
        self._start = self._current = None
        try:
            self._game.launch(seed)
        except GameFailedError as fault:
            self.close()
            raise fault.error from None
        except BaseException:
            self.close()
            raise
        self._pristine = True

    def _check_agent_count(self, unity: UnityEnvironment) -> None:
        counts = {name: len(unity.get_steps(name)[0]) for name in unity.behavior_specs}
        total = sum(counts.values())
        if total > 1 and self._agent_index is None:
            detail = ", ".join(f"{name}: {count}" for name, count in sorted(counts.items()))
            raise UnityEnvironmentException(
                f"The game has {total} agents ({detail}) but UnityGymEnv drives a single agent. "
                'Use gymnasium.make_vec("Unity-v0", ...) to drive every agent as a vector env, '
                "unity_gym.pettingzoo.parallel_env(...) / env(...) for multi-agent APIs, or pass "
                "agent_index=0 to drive one agent while the others act with zero actions."
            )

    def _choose_start(self, decisions: DecisionSteps, previous: int | None) -> _Report | None:
        """The agent to drive in a new episode among ``decisions``, or None if not there yet."""
        if previous is not None and previous in decisions:
            row = decisions.agent_id_to_index[previous]
        else:
            row = self._agent_index or 0
            if row >= len(decisions):
                return None
        return _decision_report(decisions, row, self._actions)

    def _await_start(self) -> _Report:
        """Advance the game (zero actions) until a decision to start an episode with arrives."""
        unity = self.unity_env
        previous = self._current.agent_id if self._current is not None else None
        for _ in range(MAX_WAIT_STEPS):
            start = self._choose_start(unity.get_steps(self.behavior_name)[0], previous)
            if start is not None:
                return start
            unity.step()
            self._pristine = False
        wanted = 1 if self._agent_index is None else self._agent_index + 1
        raise UnityEnvironmentException(
            f"No step of the game had {wanted} agent(s) of behavior {self.behavior_name!r} "
            f"requesting a decision within {MAX_WAIT_STEPS} game steps; check agent_index and "
            "that the agents request decisions."
        )

    def _observation(self, report: _Report) -> Any:
        return self._observations.from_unity([o[np.newaxis] for o in report.obs], 0)

    def _info(self, report: _Report) -> dict[str, Any]:
        info: dict[str, Any] = {
            "agent_id": report.agent_id,
            "group_id": report.group_id,
            "group_reward": report.group_reward,
        }
        if self._actions.mask_size:
            mask = report.mask
            if mask is None:
                mask = np.ones(self._actions.mask_size, dtype=bool)
            self._last_mask = mask
            info["action_mask"] = mask.copy()
        return info


def _settings_fields() -> tuple[Any, ...]:
    """Fields of :class:`GameSettings` that ``UnityGymEnv`` passes through as keywords."""
    named = {"file_name", "scene", "seed", "num_agents"}
    return tuple(f for f in dataclasses.fields(GameSettings) if f.name not in named)
