"""``RayParallelEnv``: a :class:`~unity_gym.pettingzoo.UnityParallelEnv` that runs in a Ray actor.

The game and its :class:`~unity_gym.pettingzoo.UnityParallelEnv` live in one Ray actor, which
may be placed on any node of the Ray cluster (``scheduling_strategy="SPREAD"`` and
``num_cpus=0`` unless ``actor_options`` say otherwise); the caller keeps a PettingZoo
``ParallelEnv`` with the same names, spaces, episodes, infos, seeding and fault rules (see
:mod:`unity_gym.pettingzoo.parallel_env`). ``possible_agents``, the spaces and ``metadata``
(``goal_signal_keys`` included) are read once when the game starts; each ``reset`` and ``step``
is one remote call, which also brings back ``agents``, the restart count and, with
``render_mode="rgb_array"``, the frame that :meth:`RayParallelEnv.render` returns. Arrays come
back as writable copies. :attr:`RayParallelEnv.game_location` says where the game runs
(``"Ray node <id8> (<ip>)"``). Side channels cannot be shared with another process: pass
engine settings and ``env_params`` as keywords instead, and read the game's statistics with
:meth:`RayParallelEnv.get_and_reset_stats` (one remote call; what a lost actor had collected is
lost with it).

Placement. The actor must be placed within the game's ``timeout_wait`` (default 60 s), else
:class:`~unity_gym.vector.backends.ray_pool.RayPlacementError` names the resources it asked for
and those the cluster has free (the env is closed).

Lost actors. A crashed or hung *game* is restarted inside the actor, as in-process. When the
*actor* is lost (its node died or was removed, or its process was killed), a new actor is
created wherever the cluster has room, with the same keywords and the current seed (the latest
``reset(seed=...)``), within the restart limits ``max_lifetime_restarts``,
``restarts_rate_limit_n`` and ``restarts_rate_limit_period_s`` (the same keywords and defaults
as the game's; actor losses are counted apart from the game's own restarts inside an actor, as
the vector env's Ray backend counts them). A warning on logger ``unity_gym.pettingzoo`` names the
lost node and the new one. The interrupted call then behaves as for a game failure: ``step``
returns every live agent ``truncated=True`` with reward 0, its latest observation and info (its
``group_reward`` 0) plus ``info["restart_reason"]`` naming the lost node; ``agents`` becomes
empty and the next ``reset()`` starts from the new actor's game without restarting it again. An
interrupted ``reset`` returns the new game's first observations, their infos with
``"restart_reason"``. Once the limits refuse a new actor, the env is closed and
:class:`~unity_gym.vector.faults.RestartLimitError` is raised. :attr:`RayParallelEnv.restart_count`
counts both kinds of restarts.

Errors raised inside the actor (bad actions, a game that fails at start, restart limits) are
raised again as their own exception types, chained to Ray's error (which holds the remote
traceback).

If Ray is not initialized yet, ``ray.init()`` starts a local instance.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.game.settings import GameSettings, game_seed
from unity_gym.pettingzoo.parallel_env import ParallelOutcomes, UnityParallelEnv
from unity_gym.side_channels.stats_side_channel import EnvironmentStats
from unity_gym.vector.backends.ray_pool import (
    NOT_PLACED,
    admit_lost_actor,
    game_actor_options,
    placement_error,
    this_node,
)
from unity_gym.vector.faults import RestartLimitError, RestartPolicy, RestartTracker

__all__ = ["RayParallelEnv", "ray_parallel_env"]

logger = logging.getLogger("unity_gym.pettingzoo")


_CLOSE_TIMEOUT_S = 10.0
"""How long :meth:`RayParallelEnv.close` waits for a placed actor to close its game before
killing the actor (the game dies with it)."""


_RESTART_LIMITS = ("max_lifetime_restarts", "restarts_rate_limit_n", "restarts_rate_limit_period_s")


@dataclass
class _Description:
    """What the caller caches of a started game: names, spaces and fixed attributes."""

    possible_agents: list[str]
    observation_spaces: dict[str, gymnasium.spaces.Space[Any]]
    action_spaces: dict[str, gymnasium.spaces.Space[Any]]
    metadata: dict[str, Any]
    render_mode: str | None
    max_cycles: int | None
    restart_count: int


@dataclass
class _Reply:
    """The answer to one ``reset`` or ``step``: its result and the env's state after it."""

    result: tuple[Any, ...]
    agents: list[str]
    restart_count: int
    frame: np.ndarray | None


class _GameActor:
    """What runs inside the Ray actor: one :class:`UnityParallelEnv` behind a few methods.

    The constructor does nothing, so that the actor's placement and the game's start are told
    apart (:meth:`where` answers as soon as the actor runs; :meth:`start` starts the game).
    """

    def __init__(self) -> None:
        self._env: UnityParallelEnv | None = None

    def where(self) -> str:
        """The node this actor runs on: ``"Ray node <id8> (<ip>)"``."""
        return this_node()

    def start(self, kwargs: dict[str, Any]) -> _Description:
        """Start the game (``UnityParallelEnv(**kwargs)``) and describe it."""
        env = self._env = UnityParallelEnv(**kwargs)
        agents = env.possible_agents
        return _Description(
            possible_agents=list(agents),
            observation_spaces={agent: env.observation_space(agent) for agent in agents},
            action_spaces={agent: env.action_space(agent) for agent in agents},
            metadata=dict(env.metadata),
            render_mode=env.render_mode,
            max_cycles=env.max_cycles,
            restart_count=env.restart_count,
        )

    def reset(
        self, seed: int | None, options: dict[str, Any] | None, max_cycles: int | None
    ) -> _Reply:
        env = self._game()
        env.max_cycles = max_cycles
        result = env.reset(seed=seed, options=options)
        return _Reply(result, list(env.agents), env.restart_count, env.render())

    def step(self, actions: dict[str, Any], max_cycles: int | None) -> _Reply:
        env = self._game()
        env.max_cycles = max_cycles
        result = env.step(actions)
        return _Reply(result, list(env.agents), env.restart_count, env.render())

    def set_env_params(self, params: dict[str, Any]) -> None:
        """Forward :meth:`UnityParallelEnv.set_env_params`."""
        self._game().set_env_params(params)

    def get_and_reset_stats(self) -> EnvironmentStats:
        """Forward :meth:`UnityParallelEnv.get_and_reset_stats`."""
        return self._game().get_and_reset_stats()

    def game_pid(self) -> int | None:
        """The game process's id (None when the env is closed or the game is the Editor)."""
        if self._env is None:
            return None
        with contextlib.suppress(UnityEnvironmentException):
            process = self._env.unity_env.process
            return None if process is None else process.pid
        return None

    def close(self) -> None:
        if self._env is not None:
            self._env.close()

    def _game(self) -> UnityParallelEnv:
        if self._env is None:
            raise UnityEnvironmentException("The game of this Ray actor was never started.")
        return self._env


class RayParallelEnv(ParallelEnv[str, Any, Any]):
    """A :class:`UnityParallelEnv` running in a Ray actor, as a PettingZoo ParallelEnv.

    The actor and its game start at construction and stop in :meth:`close`. Module docs describe
    placement, lost actors and what is cached. :meth:`set_env_params` and
    :meth:`get_and_reset_stats` are forwarded to the actor's :class:`UnityParallelEnv`.

    Args:
        actor_options: options of ``ActorClass.options(...)``, applied over the defaults
            ``{"num_cpus": 0, "scheduling_strategy": "SPREAD"}`` (give ``num_cpus`` or
            ``resources`` to reserve room for the game on its node).
        **kwargs: the keywords of :class:`UnityParallelEnv` (``scene``, ``file_name``, ``seed``,
            ``max_cycles``, the restart limits, ``timeout_wait``, ...), except
            ``side_channels``. A ``file_name`` must exist on every node that may host the game.

    Raises:
        ImportError: Ray is not installed (``pip install "unity-gym[ray]"``).
        ValueError: on ``side_channels`` or invalid restart limits (nothing is started), or on
            settings that :class:`UnityParallelEnv` refuses.
        RayPlacementError: no node took the actor within ``timeout_wait``.
        UnityEnvironmentException: the game failed to start (as for :class:`UnityParallelEnv`).
    """

    metadata: dict[str, Any] = dict(UnityParallelEnv.metadata)  # noqa: RUF012  (see UnityParallelEnv)

    def __init__(self, actor_options: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            import ray
        except ImportError as error:
            raise ImportError(
                'RayParallelEnv needs Ray: install it with `pip install "unity-gym[ray]"` (or '
                "`pip install ray`), or use unity_gym.pettingzoo.parallel_env to run the game "
                "in this process."
            ) from error
        if kwargs.get("side_channels"):
            raise ValueError(
                "RayParallelEnv cannot serve side_channels: the game runs in a Ray actor, maybe on "
                "another machine, so the channel objects would be copies. Pass engine settings "
                "(time_scale, ...) and env_params as keywords, or use parallel_env() in this "
                "process."
            )
        self._restart_policy = RestartPolicy(
            **{name: kwargs[name] for name in _RESTART_LIMITS if name in kwargs}
        )
        self._tracker = RestartTracker(self._restart_policy)
        self._timeout_wait = float(kwargs.get("timeout_wait", _default_timeout_wait()))
        self._ray: Any = ray
        if not ray.is_initialized():
            ray.init()
        options = game_actor_options(actor_options)
        self._options = options
        self._actor_class = ray.remote(_GameActor).options(**options)
        self._kwargs = dict(kwargs)
        seed = kwargs.get("seed")
        self._seed: int | None = None if seed is None else int(seed)
        self._actor: Any = None
        self._earlier_restarts = 0  # game restarts inside lost actors
        self._actor_restarts = 0  # game restarts inside the current actor
        self._last_observations: dict[str, Any] = {}
        self._last_infos: dict[str, dict[str, Any]] = {}
        self._frame: np.ndarray | None = None
        self.agents: list[str] = []
        self.game_location = NOT_PLACED
        """Where the game runs: ``"Ray node <id8> (<ip>)"``."""

        try:
            description = self._spawn()
        except BaseException:
            self.close()
            raise
        self.possible_agents = description.possible_agents
        self._observation_spaces = description.observation_spaces
        self._action_spaces = description.action_spaces
        self.metadata = description.metadata
        self.render_mode = description.render_mode
        self.max_cycles = description.max_cycles
        self._actor_restarts = description.restart_count
        logger.info("The game of this RayParallelEnv runs on %s.", self.game_location)

    # -- PettingZoo API -----------------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        """The observation space of ``agent`` (the same object on every call)."""
        return self._observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        """The action space of ``agent`` (the same object on every call)."""
        return self._action_spaces[self._known(agent)]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Start a PettingZoo episode, as :meth:`UnityParallelEnv.reset` does.

        A lost actor is replaced and the episode starts in its game (module docs).

        Raises:
            SeedError: (a ValueError) ``seed`` is negative or not an integer (nothing changes).
            RestartLimitError: the game or its actor was lost and the limits refuse a restart.
            RayPlacementError: no node took the new actor within ``timeout_wait``.
            UnityEnvironmentException: as :meth:`UnityParallelEnv.reset`, or the env is closed.
        """
        if seed is not None:
            self._seed = game_seed(seed)  # what the actor's game gets; a relaunch reuses it
        reason: str | None = None
        while True:
            actor = self._live_actor()
            try:
                reply = self._get(actor.reset.remote(seed, options, self.max_cycles))
                break
            except self._ray.exceptions.RayActorError as error:
                replaced = self._replace_actor(error)
                reason = reason or replaced
        observations, infos = self._take(reply)
        self._last_observations = dict(observations)
        self._last_infos = dict(infos)
        if reason is not None:
            for info in infos.values():
                info["restart_reason"] = reason
        return observations, infos

    def step(self, actions: Mapping[str, Any]) -> ParallelOutcomes:
        """Act for every live agent, as :meth:`UnityParallelEnv.step` does.

        A lost actor is replaced and every live agent is truncated (module docs).

        Raises:
            gymnasium.error.ResetNeeded: no agent is live.
            ValueError: for an unknown agent name or a live agent without an action.
            UnityActionException: for an action outside the agent's action space.
            RestartLimitError: the game or its actor was lost and the limits refuse a restart.
            RayPlacementError: no node took the new actor within ``timeout_wait``.
            UnityEnvironmentException: as :meth:`UnityParallelEnv.step`, or the env is closed.
        """
        if not self.agents:
            raise gymnasium.error.ResetNeeded(
                "Call reset() before step(): every agent has finished or none has started."
            )
        actor = self._live_actor()
        try:
            reply = self._get(actor.step.remote(dict(actions), self.max_cycles))
        except self._ray.exceptions.RayActorError as error:
            return self._lost_in_step(error)
        observations, rewards, terminations, truncations, infos = self._take(reply)
        self._last_observations.update(observations)
        self._last_infos.update(infos)
        return observations, rewards, terminations, truncations, infos

    def render(self) -> np.ndarray | None:
        """The frame of the latest ``reset``/``step``, as :meth:`UnityParallelEnv.render`."""
        if self.render_mode is None or self._frame is None:
            return None
        return self._frame.copy()

    def close(self) -> None:
        """Close the game and end the actor; safe to call more than once."""
        self.agents = []
        actor, self._actor = self._actor, None
        if actor is None:
            return
        if self.game_location != NOT_PLACED:  # an actor never placed would never answer
            with contextlib.suppress(Exception):
                self._ray.get(actor.close.remote(), timeout=_CLOSE_TIMEOUT_S)
        with contextlib.suppress(Exception):
            self._ray.kill(actor)

    def state(self) -> np.ndarray:
        """Not available: a Unity game exposes no global state.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(
            "Unity games expose no global state; build one from the agents' observations."
        )

    def set_env_params(self, params: Mapping[str, Any]) -> None:
        """Change environment parameters of the running game, as
        :meth:`UnityParallelEnv.set_env_params` does; a game restarted in a new actor (a lost
        node) starts with them too.

        Raises:
            ValueError: on an invalid name or value (the env is unchanged).
        """
        merged = {**(self._kwargs.get("env_params") or {}), **dict(params)}
        GameSettings(env_params=merged)  # validates every value
        actor = self._live_actor()
        self._kwargs["env_params"] = merged
        # A lost actor is replaced at the next reset or step; its game starts with ``merged``.
        with contextlib.suppress(self._ray.exceptions.RayActorError):
            self._get(actor.set_env_params.remote(dict(params)))

    def get_and_reset_stats(self) -> EnvironmentStats:
        """The game's statistics since the previous call, as
        :meth:`UnityParallelEnv.get_and_reset_stats` returns them (one remote call).

        What a lost actor had collected and not handed out is lost with it; a lost actor gives
        ``{}`` here (it is replaced at the next ``reset`` or ``step``).

        Raises:
            UnityEnvironmentException: the env is closed.
        """
        actor = self._live_actor()
        with contextlib.suppress(self._ray.exceptions.RayActorError):
            stats: EnvironmentStats = self._get(actor.get_and_reset_stats.remote())
            return stats
        return {}

    @property
    def restart_count(self) -> int:
        """Restarts so far: the game's own (crash or hang) and those after a lost actor."""
        return self._earlier_restarts + self._actor_restarts + self._tracker.restarts

    @property
    def restart_policy(self) -> RestartPolicy:
        """The restart limits (from the constructor's keywords)."""
        return self._restart_policy

    # -- internals ----------------------------------------------------------------------------

    def _known(self, agent: str) -> str:
        if agent not in self._observation_spaces:
            raise KeyError(f"Unknown agent {agent!r}; the agents are {self.possible_agents}.")
        return agent

    def _live_actor(self) -> Any:
        if self._actor is None:
            raise UnityEnvironmentException("This RayParallelEnv is closed; create a new one.")
        return self._actor

    def _game_kwargs(self) -> dict[str, Any]:
        """The game's keywords with the current seed."""
        kwargs = dict(self._kwargs)
        if self._seed is not None:
            kwargs["seed"] = self._seed
        return kwargs

    def _get(self, ref: Any) -> Any:
        """``ray.get(ref)``; an exception raised in the actor is raised again as itself.

        Raises:
            ray.exceptions.RayActorError: the actor was lost.
        """
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None)
            if isinstance(cause, RestartLimitError):
                self.close()
            if isinstance(cause, Exception):
                raise cause from error
            raise

    def _spawn(self) -> _Description:
        """Create the actor, wait for its placement (``timeout_wait``) and start its game.

        Raises:
            RayPlacementError: no node took the actor in time (the env is closed).
            ray.exceptions.RayActorError: the actor was lost meanwhile.
            Exception: what starting the game raised (the env is closed).
        """
        ray = self._ray
        actor: Any = self._actor_class.remote()
        self._actor = actor
        self.game_location = NOT_PLACED
        probe = actor.where.remote()
        started = actor.start.remote(self._game_kwargs())
        ready, _ = ray.wait([probe], timeout=self._timeout_wait)
        if not ready:
            self.close()
            raise placement_error(
                "the actor of this RayParallelEnv's game",
                self._timeout_wait,
                self._options,
                "the actor's resources (actor_options), or raise timeout_wait if nodes are "
                "still joining",
            )
        self.game_location = str(ray.get(probe))
        try:
            description: _Description = self._get(started)
        except self._ray.exceptions.RayActorError:
            raise
        except BaseException:
            self.close()
            raise
        return description

    def _replace_actor(self, error: BaseException) -> str:
        """Replace the lost actor within the restart limits (module docs).

        Returns:
            The restart reason for the agents' infos.

        Raises:
            RestartLimitError: the limits refuse a new actor (the env is closed).
            RayPlacementError: no node took the new actor within ``timeout_wait``.
            UnityEnvironmentException: the new actor's game differs from the first one.
        """
        while True:
            try:
                what = admit_lost_actor(
                    self._tracker,
                    "The game of this RayParallelEnv",
                    "game",
                    self.game_location,
                    error,
                )
            except RestartLimitError:
                self.close()
                raise
            with contextlib.suppress(Exception):
                self._ray.kill(self._actor)
            self._earlier_restarts += self._actor_restarts
            self._actor_restarts = 0
            try:
                description = self._spawn()
            except self._ray.exceptions.RayActorError as again:
                error = again
                continue
            self._check_same_game(description)
            self._actor_restarts = description.restart_count
            logger.warning(
                "This RayParallelEnv's %s; a new actor runs it on %s now (restart %d, "
                "seed %s). Its live agents report truncated=True and info['restart_reason'].",
                what,
                self.game_location,
                self.restart_count,
                self._seed if self._seed is not None else 0,
            )
            return f"{what}; restarted on {self.game_location}"

    def _check_same_game(self, description: _Description) -> None:
        """Refuse a new actor whose game has other agents or spaces than the first one's."""
        if (
            description.possible_agents == self.possible_agents
            and description.observation_spaces == self._observation_spaces
            and description.action_spaces == self._action_spaces
        ):
            return
        self.close()
        raise UnityEnvironmentException(
            f"The game restarted on {self.game_location} does not match the game this "
            f"RayParallelEnv started with (agents now {description.possible_agents}, first "
            f"{self.possible_agents}, or other spaces). possible_agents and spaces never change; "
            "make every node run the same build."
        )

    def _lost_in_step(self, error: BaseException) -> ParallelOutcomes:
        """Replace the lost actor and end every live agent of the interrupted step."""
        reason = self._replace_actor(error)
        live, self.agents = self.agents, []
        infos: dict[str, dict[str, Any]] = {}
        for agent in live:
            infos[agent] = {**self._last_infos[agent], "group_reward": 0.0}
            infos[agent]["restart_reason"] = reason
        return (
            {agent: self._last_observations[agent] for agent in live},
            dict.fromkeys(live, 0.0),
            dict.fromkeys(live, False),
            dict.fromkeys(live, True),
            infos,
        )

    def _take(self, reply: _Reply) -> Any:
        """Adopt the state a reply reports and return its result with writable arrays."""
        self.agents = list(reply.agents)
        self._actor_restarts = reply.restart_count
        self._frame = None if reply.frame is None else np.array(reply.frame)
        return _owned(reply.result)


def _owned(value: Any) -> Any:
    """``value`` with every read-only array (Ray hands out views of its store) copied."""
    if isinstance(value, np.ndarray):
        return value if value.flags.writeable else value.copy()
    if isinstance(value, dict):
        return {key: _owned(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_owned(item) for item in value)
    if isinstance(value, list):
        return [_owned(item) for item in value]
    return value


def _default_timeout_wait() -> float:
    """:class:`~unity_gym.game.settings.GameSettings`' default ``timeout_wait``."""
    return float(GameSettings.timeout_wait)  # a dataclass field's default is a class attribute


def ray_parallel_env(actor_options: dict[str, Any] | None = None, **kwargs: Any) -> RayParallelEnv:
    """A :class:`RayParallelEnv`: ``UnityParallelEnv(**kwargs)`` in a Ray actor.

    ``actor_options`` update the actor's defaults ``{"num_cpus": 0, "scheduling_strategy":
    "SPREAD"}``.
    """
    return RayParallelEnv(actor_options, **kwargs)
