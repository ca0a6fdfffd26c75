"""One game process under supervision: launch, exchange, restart within the limits.

Every front runs its games through :class:`GameSupervisor`: the vector env's game workers
(threads, subprocesses or Ray actors), the PettingZoo parallel env (and so the AEC env and the
PettingZoo Ray actor). The rules below are therefore the same everywhere.

* **Launch.** :meth:`GameSupervisor.launch` starts the game with the current settings (a new
  seed when asked) and resets it once through the bridge. The same side channels are served to
  every launch: the caller's, one ``EnvironmentParametersChannel`` and one ``StatsSideChannel``
  (the caller's own when it passes one). Environment parameters set with
  :meth:`GameSupervisor.set_env_params` reach the running game with its next exchange and every
  later launch with its start.
* **Failure.** Any bridge error of a launch or an exchange except a rejected action
  (``UnityActionException``, the caller's fault) means the game failed: the game is closed and
  :class:`GameFailedError` wraps the bridge's exception.
* **Restart.** :meth:`GameSupervisor.restart` relaunches a failed game with the same settings (the
  same seed), at most ``max_lifetime_restarts`` times in all and ``restarts_rate_limit_n`` times
  within any ``restarts_rate_limit_period_s`` seconds (``mlagents-learn``'s limits,
  :class:`~unity_gym.game.faults.RestartPolicy`); a relaunch that fails again is retried and
  counts as one more restart. Each restart is reported once (``report``, a warning by default)
  with its reason, count and seed; a restart of the Unity Editor's game also logs, before the wait
  begins, that Play must be pressed again. When the limits refuse a restart the supervisor closes
  and raises :class:`~unity_gym.game.faults.RestartLimitError`.
* **Start-up.** :meth:`GameSupervisor.start` is the first launch. A launched game that fails while
  it starts (it exited, dropped the connection, broke the protocol or stopped answering before its
  first reset was done) is restarted by the same rule, as ``mlagents-learn`` restarts a worker
  whose environment failed; an error that a relaunch cannot mend is raised at once: a build that
  cannot be launched (no executable, permission, port in use), invalid settings, and the Editor
  not connecting (Play was not pressed).
* **Same game.** Every launch after the first must report behaviors with the specs the first
  launch reported (a behavior that a built-in scene declares may come and go, see
  :func:`~unity_gym.game.catalogue.scene_behaviors`); otherwise the supervisor closes and raises
  ``UnityEnvironmentException``, since spaces never change under a front.
* **Statistics** the game sends (Unity's ``StatsRecorder``) are kept across restarts until
  :meth:`GameSupervisor.take_stats` hands them out.
* **Close.** After :meth:`GameSupervisor.close` nothing is launched or restarted again; a restart
  waiting in another thread fails with ``UnityEnvironmentException``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from unity_gym.exceptions import (
    UnityActionException,
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityException,
    UnityGameExitedException,
    UnityTimeOutException,
)
from unity_gym.game.catalogue import scene_behaviors
from unity_gym.game.env_params import apply_env_param
from unity_gym.game.faults import (
    RestartLimitError,
    RestartPolicy,
    RestartTracker,
    describe_game_failure,
    editor_wait_message,
)
from unity_gym.side_channels.environment_parameters_channel import EnvironmentParametersChannel
from unity_gym.side_channels.stats_side_channel import EnvironmentStats, StatsSideChannel

if TYPE_CHECKING:
    from unity_gym.base_env import BehaviorSpec
    from unity_gym.environment import UnityEnvironment
    from unity_gym.game.settings import GameSettings
    from unity_gym.side_channels.side_channel import SideChannel

__all__ = ["GameFailedError", "GameSupervisor", "failed_while_running"]

logger = logging.getLogger(__name__)

_RUNNING_GAME_FAILURES = (
    UnityTimeOutException,
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityGameExitedException,
)
"""Bridge errors that only a game which was running can cause (see :func:`failed_while_running`)."""


def failed_while_running(error: BaseException) -> bool:
    """Whether ``error`` says that a launched game ran and then failed (the module's start-up rule).

    True for a game that exited, dropped its connection, broke the protocol or stopped answering;
    False for errors a relaunch cannot mend (no executable, permission, port in use, settings).
    """
    return isinstance(error, _RUNNING_GAME_FAILURES)


class GameFailedError(Exception):
    """The game crashed, quit or stopped answering; :attr:`error` is the bridge's exception."""

    def __init__(self, error: UnityException) -> None:
        super().__init__(str(error))
        self.error = error


class GameSupervisor:
    """Runs one game process by the rules of the module documentation.

    Args:
        settings: the game's settings (the seed of the first launch included).
        label: the game in restart reasons (``"game process 3"``, ``"game"``).
        title: the game at the start of a message (default: ``label`` capitalized).
        owner: who drives the game, in messages (``"this vector env"``).
        restart_policy: the limits on restarts.
        side_channels: extra channels served to every launch (an ``EnvironmentParametersChannel``
            or ``StatsSideChannel`` among them is the one used).
        consequence: what a restart means for the caller's agents, appended to the restart
            warning (``"Its slots report truncated=True."``).
        report: where restart warnings go (default: logged on this module's logger).
        collect_stats: serve a ``StatsSideChannel`` that keeps what the game reports until
            :meth:`take_stats` (False: the game's statistics are dropped unless the caller
            serves a channel for them).
    """

    def __init__(
        self,
        settings: GameSettings,
        *,
        label: str = "game",
        title: str | None = None,
        owner: str = "this env",
        restart_policy: RestartPolicy | None = None,
        side_channels: Sequence[SideChannel] = (),
        consequence: str = "",
        report: Callable[[str], None] | None = None,
        collect_stats: bool = True,
    ) -> None:
        self._settings = settings
        self.label = label
        self.title = title or label[:1].upper() + label[1:]
        self.owner = owner
        self.restart_policy = restart_policy or RestartPolicy()
        self._tracker = RestartTracker(self.restart_policy)
        self._consequence = consequence
        self._report = report or (lambda message: logger.warning("%s", message))
        channels = list(side_channels)
        params = next((c for c in channels if isinstance(c, EnvironmentParametersChannel)), None)
        if params is None:
            params = EnvironmentParametersChannel()
            channels.append(params)
        self._params_channel = params
        self.stats_channel: StatsSideChannel | None = None
        """The channel that collects the game's statistics (None: ``collect_stats`` is False,
        or the caller serves the stats channel id with a class of its own)."""
        if all(c.channel_id != StatsSideChannel.CHANNEL_ID for c in channels):
            if collect_stats:
                self.stats_channel = StatsSideChannel()
                channels.append(self.stats_channel)
        else:
            self.stats_channel = next(
                (c for c in channels if isinstance(c, StatsSideChannel)), None
            )
        self._side_channels = tuple(channels)
        self._env: UnityEnvironment | None = None
        self._first_specs: dict[str, BehaviorSpec] | None = None
        self._declared: dict[str, tuple[BehaviorSpec, int]] | None = None
        self._closed = False

    # -- state --------------------------------------------------------------------------------

    @property
    def settings(self) -> GameSettings:
        """The settings of the running game (the seed follows :meth:`launch`)."""
        return self._settings

    @property
    def env(self) -> UnityEnvironment:
        """The bridge driving the running game.

        Raises:
            UnityEnvironmentException: no game is running (closed, or not launched yet).
        """
        if self._env is None:
            raise UnityEnvironmentException(f"{self.title} is not running.")
        return self._env

    @property
    def running(self) -> bool:
        """Whether a game is running (launched and not closed since)."""
        return self._env is not None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def restarts(self) -> int:
        """Restarts after failures so far (launches with a new seed are not counted)."""
        return self._tracker.restarts

    @property
    def first_specs(self) -> dict[str, BehaviorSpec]:
        """The behaviors and specs the first launch reported (empty before it)."""
        return dict(self._first_specs or {})

    @property
    def declared_behaviors(self) -> dict[str, tuple[BehaviorSpec, int]]:
        """What a built-in scene declares before it runs: each behavior's spec and agent count
        (:func:`~unity_gym.game.catalogue.scene_behaviors`; empty for a build)."""
        if self._declared is None:
            settings = self._settings
            declared: dict[str, tuple[BehaviorSpec, int]] = {}
            if settings.scene is not None:
                try:
                    declared = scene_behaviors(
                        settings.scene,
                        settings.scene_options,
                        settings.num_agents,
                        settings.num_areas,
                    )
                except ValueError:  # a scene only the player's own path holds: as for a build
                    declared = {}
            self._declared = declared
        return dict(self._declared)

    @property
    def declared_specs(self) -> dict[str, BehaviorSpec]:
        """The specs of :attr:`declared_behaviors`."""
        return {name: spec for name, (spec, _) in self.declared_behaviors.items()}

    # -- launching ----------------------------------------------------------------------------

    def start(self) -> str | None:
        """The first launch; a launched game that fails while it starts is restarted.

        Returns:
            The restart reason when the game had to be restarted, else None.

        Raises:
            RestartLimitError: it failed more often than the limits allow (closed).
            UnityException: an error a relaunch cannot mend (the module's start-up rule).
        """
        try:
            self.launch()
        except GameFailedError as fault:
            if self._settings.editor or not failed_while_running(fault.error):
                raise fault.error from None
            return self.restart(fault)
        return None

    def launch(self, seed: int | None = None) -> None:
        """Close the running game (if any) and launch it again, with ``seed`` if given.

        Raises:
            GameFailedError: the game failed to start or to reset (it is closed).
            UnityActionException: raised by the bridge at the first reset (the supervisor is
                closed).
            UnityEnvironmentException: the game differs from the first launch's (closed), or the
                supervisor is closed.
        """
        if self._closed:
            raise UnityEnvironmentException(
                f"{self.owner[:1].upper()}{self.owner[1:]} was closed; create a new one."
            )
        self.stop_game()
        if seed is not None:
            self._settings = self._settings.replace(seed=seed)
        try:
            self._env = self._settings.launch(self._side_channels)
            self._env.reset()
        except UnityActionException:
            self.close()
            raise
        except UnityException as error:
            self.stop_game()
            raise GameFailedError(error) from error
        except BaseException:
            self.close()
            raise
        self._check_same_game()

    def exchange(self, *, reset: bool = False) -> None:
        """One reset (``reset=True``) or step of the bridge.

        Raises:
            GameFailedError: the game failed (module documentation); it is closed.
            UnityActionException: the actions set were rejected (the game keeps running).
        """
        env = self._env
        if env is None:
            raise GameFailedError(UnityEnvironmentException(f"{self.label} is not running"))
        try:
            if reset:
                env.reset()
            else:
                env.step()
        except UnityActionException:
            raise
        except UnityException as error:
            self.stop_game()
            raise GameFailedError(error) from error

    def restart(self, fault: GameFailedError) -> str:
        """Relaunch the failed game with the same settings, within the restart limits.

        Args:
            fault: the failure that stopped the game.

        Returns:
            The restart reason, ``"<label> <what happened>; restarted"``.

        Raises:
            RestartLimitError: the limits refuse a restart (the supervisor is closed).
            UnityEnvironmentException: the supervisor was closed meanwhile, or the relaunched
                game differs from the first one (closed).
        """
        first_reason: str | None = None
        while True:
            if self._closed:
                raise UnityEnvironmentException(
                    f"{self.owner[:1].upper()}{self.owner[1:]} was closed while it waited for "
                    "its game; the game is not restarted."
                ) from fault.error
            reason = describe_game_failure(fault.error, self._settings.timeout_wait)
            first_reason = first_reason or reason
            try:
                self._tracker.admit(self.title, reason, fault.error)
            except RestartLimitError:
                self.close()
                raise
            consequence = f" {self._consequence}" if self._consequence else ""
            self._report(
                f"{self.title} {reason}; restarting it with the same settings "
                f"(restart {self._tracker.restarts}, seed {self._settings.seed}).{consequence} "
                f"Details: {fault.error}"
            )
            self.stop_game()
            if self._settings.editor:
                # Said now, not with the caller's report: the relaunch waits for Play.
                logger.warning("%s", editor_wait_message(self._settings, reason))
            try:
                self.launch()
            except GameFailedError as again:
                fault = again
                continue
            return f"{self.label} {first_reason}; restarted"

    def _check_same_game(self) -> None:
        specs = dict(self.env.behavior_specs)
        known = self._first_specs
        if known is None:
            self._first_specs = specs
            return
        declared = self.declared_specs
        expected = {**declared, **known}
        if all(expected.get(name) == spec for name, spec in specs.items()) and all(
            name in specs or name in declared for name in known
        ):
            return
        changed = sorted(
            name for name in set(specs) | set(known) if specs.get(name) != known.get(name)
        )
        self.close()
        raise UnityEnvironmentException(
            f"{self.title}, relaunched with seed {self._settings.seed}, does not match the "
            f"game {self.owner} started with: behaviors {changed} are new, missing or have "
            f"other specs (now {sorted(specs)}, first {sorted(known)}). Spaces never change "
            "under a front; make the game start with the same behaviors whatever the seed, or "
            "create a new env for a different game."
        )

    # -- parameters and statistics ------------------------------------------------------------

    def set_env_params(self, params: Mapping[str, Any]) -> None:
        """Adopt environment parameters (a float or a sampler dict each, as ``env_params=``).

        The changed ones reach the running game with its next exchange; every later launch
        starts with all of them.

        Raises:
            ValueError: an invalid name or value (nothing changes).
        """
        current = dict(self._settings.env_params or {})
        changed = {
            key: value
            for key, value in params.items()
            if key not in current or current[key] != value
        }
        if not changed:
            return
        self._settings = self._settings.replace(env_params={**current, **changed})
        if self._env is not None:
            for key, value in changed.items():
                apply_env_param(self._params_channel, key, value, self._settings.seed)

    def take_stats(self) -> EnvironmentStats:
        """The statistics received since the previous call (none without a stats channel)."""
        if self.stats_channel is None:
            return {}
        return self.stats_channel.get_and_reset_stats()

    # -- closing ------------------------------------------------------------------------------

    def stop_game(self) -> None:
        """Close the running game's process (the supervisor may launch again)."""
        env, self._env = self._env, None
        if env is not None:
            env.close()

    def close(self) -> None:
        """Close the game and refuse any later launch or restart; safe to call twice."""
        self._closed = True
        self.stop_game()
