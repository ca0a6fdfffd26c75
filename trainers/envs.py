"""The one place where training environments are constructed.

Trainers only use the public Gymnasium vector and PettingZoo parallel APIs, so any environment
reachable through ``gymnasium.make_vec`` can be trained:

* a plain Gymnasium id (``--gym-id CartPole-v1`` or ``--env gym:CartPole-v1``):
  ``num_envs`` synchronous copies with same-step autoreset;
* the Unity Editor (no ``--env``, ``--scene`` nor ``--gym-id``), as ``mlagents-learn``: see
  "The Unity Editor" below;
* a Unity game with one behavior (``--env path/to/build`` or ``--scene 3DBall``):
  ``gymnasium.make_vec("unity_gym:Unity-v0", num_envs=None, num_processes=N, ...)`` through the
  id's vector entry point, whose slots are every agent of every game process (``--num-envs`` is
  the number of game processes, as in ``mlagents-learn``). If the id has no vector entry point,
  ``N`` single-agent games are vectorized synchronously instead (one training area each);
* a Unity game with several behaviors (``--scene Tennis``, ``--scene SoccerTwos``, or a build
  such as ML-Agents' SoccerTwos): ``N`` PettingZoo parallel envs
  (``unity_gym.pettingzoo.parallel_env``), one per game process, for
  :class:`~trainers.game_fronts.PettingZooFront`.
  A built-in scene then holds ``--num-areas`` training areas per game process, by default its
  stock areas (:func:`unity_gym.registration.scene_area_count`: Tennis's 18 courts, SoccerTwos's
  8 fields), as Unity's scene and the vector env have them (the PettingZoo env alone would hold
  one). The envs restart each agent as Unity does (``agent_autoreset=True``), so the areas of one
  game never wait for each other.

Choosing between the two (:func:`unity_front`), once, before any game starts where the settings
tell, from what the settings say:

* a built-in scene (``--scene``): its declared behaviors
  (:func:`unity_gym.registration.scene_behaviors`, read without starting the scene): several
  behavior ids (teams count: ``Tennis?team=0`` and ``Tennis?team=1``) take the PettingZoo envs,
  one takes the vector env (an unknown scene too: the vector env's error lists the scenes);
* a Unity build (``--env PATH``) with ``self_play`` configured for a behavior, or whose config
  names several behaviors under ``behaviors:``: the PettingZoo envs (self-play needs teams, and
  each team is a behavior id of its own, as in ML-Agents; a config written for several behaviors
  is the same rule as for the Unity Editor below, and a build that turns out to have one behavior
  trains through PettingZoo as well);
* any other Unity build: only the game can tell. The vector env starts it, and the behaviors
  the game reports at connection decide: one is served by the vector env; with several, the
  vector env closes the games it started and refuses them (``UnityMultipleBehaviorsException``,
  which lists them), and the PettingZoo envs start the game again, logging that they do. This
  is the only case where a game is started twice; the settings avoid it for builds with teams.

The Unity Editor. With no environment selected, the run waits for the Unity Editor as
``mlagents-learn`` does (its ``learn.py`` passes ``file_name=None`` and no port, so the Editor
connects on 5004): ``GameSettings(editor=True)`` makes the game
``UnityEnvironment(file_name=None, base_port=...)``, listening on ``env_settings.base_port``
(default 5004) until Play is pressed or ``timeout_wait`` seconds passed
(:func:`editor_listening_line` is the one line logged meanwhile; :func:`editor_timeout_message`
the error after the wait). The Editor is one connection, opened once (``num_envs`` must be 1),
so the front is chosen before it opens, from the config: a config that names several behaviors
under ``behaviors:`` or gives one ``self_play`` opens it with one PettingZoo env (several
behaviors), any other with the vector env (one behavior). A scene with several behaviors played
for a config that names one is refused with :class:`EnvironmentSetupError`, which says to name
them all, or to build the scene and train the build (``--env PATH``). If the Editor's connection
is lost (Play stopped), the game's restart (:mod:`unity_gym.game.supervisor`) waits on the same
port for Play again, within the restart limits below, and says so when the wait begins.

``num_envs`` has one meaning in the trainers, as in ``mlagents-learn``: how many environment
instances run, i.e. Unity game processes (each with all its agents), or copies of a Gymnasium
environment (each with its one agent). What a vector env calls ``num_envs`` (its slots: every
agent of every game) is ``num_slots`` here (:class:`~trainers.contract.BehaviorSlots`,
:class:`~trainers.game_fronts.VectorFront`).

Through the vector env and through the PettingZoo envs, a Unity game that crashes or stops
answering is restarted with the same settings within the run's ``env_settings`` limits
``max_lifetime_restarts``, ``restarts_rate_limit_n`` and ``restarts_rate_limit_period_s`` (as in
``mlagents-learn``); its agents' episodes end truncated.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import gymnasium
from gymnasium.vector import AutoresetMode, VectorEnv
from pettingzoo import ParallelEnv

from trainers.game_fronts import close_all
from trainers.ray_cluster import RayCluster, connect_ray
from trainers.settings import ConfigError, RunOptions
from unity_gym.behavior_names import plain_behavior_name
from unity_gym.exceptions import UnityMultipleBehaviorsException, UnityTimeOutException
from unity_gym.registration import scene_area_count, scene_behaviors

__all__ = [
    "EDITOR_DESCRIPTION",
    "EMBEDDED_DEFAULT_SCENE",
    "SINGLE_GAME_BACKEND",
    "EnvironmentSetupError",
    "ParallelTrainingEnvironment",
    "TrainingEnvironment",
    "editor_listening_line",
    "editor_timeout_message",
    "make_training_env",
    "unity_front",
]

logger = logging.getLogger(__name__)

UNITY_ENV_ID = "unity_gym:Unity-v0"


class EnvironmentSetupError(ConfigError):
    """The environment could not be created (unknown id, missing build, bad option)."""


SINGLE_GAME_BACKEND = "inprocess"
"""The default backend of a run with one game process (several games: ``subprocess``): one
game's worker runs as a thread, sparing a process hop per step. Only SAC's update overlaps the
game's step then (PPO's waits for it), and a worker process did not make that faster (3DBall
SAC, ``benchmarks/README.md``)."""

EMBEDDED_DEFAULT_SCENE = "3DBall"
"""The built-in scene suggested to train without the Unity Editor (``Unity-v0``'s default game)."""

EDITOR_DESCRIPTION = "the Unity Editor"
""":attr:`TrainingEnvironment.description` of a run in the Unity Editor (in the start lines)."""

_WITHOUT_EDITOR = (
    f"to train without the Editor, pass --scene {EMBEDDED_DEFAULT_SCENE} for the built-in game or "
    "--env PATH for a Unity build"
)


def editor_listening_line(port: int) -> str:
    """The one line logged while the run waits for the Unity Editor on ``port``."""
    return (
        f"Listening on port {port} for the Unity Editor: press Play in the Unity Editor to start "
        f"training ({_WITHOUT_EDITOR})."
    )


def editor_timeout_message(port: int, timeout_wait: float) -> str:
    """The error when nothing connected to ``port`` within ``timeout_wait`` seconds."""
    return (
        f"nothing connected on port {port} within {timeout_wait:g} s (--timeout-wait): press "
        f"Play in the Unity Editor once unity-train says it is listening, or raise "
        f"--timeout-wait ({_WITHOUT_EDITOR})."
    )


@dataclass
class TrainingEnvironment:
    """A vector environment ready for training.

    Attributes:
        env: the vector environment (one slot per agent).
        behavior_candidates: names to look the behavior up by in the configuration, in order
            of preference (the environment's own name first).
        description: a human-readable description for logs.
        ray_cluster: the Ray cluster the games run on (``backend: ray``), else None.
    """

    env: VectorEnv
    behavior_candidates: list[str]
    description: str
    ray_cluster: RayCluster | None = None

    def game_locations(self) -> list[str]:
        """Where each game runs (empty when the environment does not say)."""
        locations = getattr(self.env.unwrapped, "game_locations", None)
        return [str(location) for location in locations] if locations is not None else []

    def close(self) -> None:
        """Close the vector environment (then leave the Ray cluster, if any)."""
        try:
            self.env.close()
        finally:
            if self.ray_cluster is not None:
                self.ray_cluster.close()


@dataclass
class ParallelTrainingEnvironment:
    """PettingZoo parallel envs, one per game process, of a game with several behaviors.

    Attributes:
        envs: the envs (env *i* was created with seed ``seed + i`` and ``worker_id`` *i*).
        description: a human-readable description for logs.
    """

    envs: list[ParallelEnv[str, Any, Any]]
    description: str
    ray_cluster: RayCluster | None = None

    def game_locations(self) -> list[str]:
        """Where each game runs (one entry per env)."""
        return [str(getattr(env, "game_location", "this machine")) for env in self.envs]

    def close(self) -> None:
        """Close every env (then leave the Ray cluster, if any)."""
        try:
            close_all(self.envs)
        finally:
            if self.ray_cluster is not None:
                self.ray_cluster.close()


def make_training_env(
    options: RunOptions,
    seed: int,
    log_folder: Path,
    env_params: dict[str, float | dict[str, Any]] | None = None,
) -> TrainingEnvironment | ParallelTrainingEnvironment:
    """Create the environment selected by ``options.env_settings``.

    With nothing selected, the game is the Unity Editor: this logs
    :func:`editor_listening_line` and blocks until Play is pressed (module documentation, "The
    Unity Editor"). A Unity game with several behaviors gives a
    :class:`ParallelTrainingEnvironment` (module documentation), everything else a
    :class:`TrainingEnvironment`.

    ``env_params`` are the environment parameters the games start with (the current lessons of
    a curriculum); None: ``options.env_params()``.

    Raises:
        EnvironmentSetupError: the environment could not be created (also: a scene with several
            behaviors in the Unity Editor).
        UnityTimeOutException: the Unity Editor did not connect within ``timeout_wait``
            (the message is :func:`editor_timeout_message`).
    """
    env_settings = options.env_settings
    if env_settings.gym_id is not None and env_settings.backend is not None:
        raise EnvironmentSetupError(
            f"env_settings.backend: {env_settings.backend!r} says where Unity games run; the "
            f"Gymnasium environment {env_settings.gym_id} runs in the trainer process. Remove "
            "--backend (or env_settings.backend)."
        )
    if env_settings.gym_id is not None:
        return _make_gymnasium_env(env_settings.gym_id, env_settings.num_envs, options)
    return _make_unity_env(options, seed, log_folder, env_params)


def _make_gymnasium_env(gym_id: str, copies: int, options: RunOptions) -> TrainingEnvironment:
    """``copies`` synchronous copies of Gymnasium ``gym_id`` (``num_envs``: one per copy)."""
    if options.environment_parameters:
        logger.warning(
            "environment_parameters are sent to Unity games only; they are ignored for the "
            "Gymnasium environment %s.",
            gym_id,
        )
    try:
        env = gymnasium.make_vec(
            gym_id,
            num_envs=copies,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        )
    except gymnasium.error.Error as exc:
        raise EnvironmentSetupError(
            f"cannot create Gymnasium environment {gym_id!r}: {exc}"
        ) from exc
    except ModuleNotFoundError as exc:
        raise EnvironmentSetupError(
            f"cannot create Gymnasium environment {gym_id!r}: {exc}; install the package "
            "that provides it."
        ) from exc
    name = gym_id.split(":")[-1]
    candidates = [gym_id, name, name.rsplit("-v", 1)[0]]
    return TrainingEnvironment(env, list(dict.fromkeys(candidates)), f"Gymnasium {gym_id}")


def _make_unity_env(
    options: RunOptions,
    seed: int,
    log_folder: Path,
    env_params: dict[str, float | dict[str, Any]] | None = None,
) -> TrainingEnvironment | ParallelTrainingEnvironment:
    env_settings = options.env_settings
    engine = options.engine_settings
    kwargs: dict[str, Any] = {
        "no_graphics": engine.no_graphics,
        # game i is launched with worker_id i: all but the first lose their graphics
        "no_graphics_monitor": engine.no_graphics_monitor,
        "time_scale": engine.time_scale,
        "width": engine.width,
        "height": engine.height,
        "quality_level": engine.quality_level,
        "target_frame_rate": engine.target_frame_rate,
        "capture_frame_rate": engine.capture_frame_rate,
        "env_params": options.env_params() if env_params is None else env_params,
        "seed": seed,
        "timeout_wait": env_settings.timeout_wait,
        "log_folder": str(log_folder),
    }
    if env_settings.num_areas is not None:
        kwargs["num_areas"] = env_settings.num_areas
    if env_settings.env_args and not env_settings.uses_editor:
        kwargs["additional_args"] = list(env_settings.env_args)
    if env_settings.env_path is not None:
        kwargs["file_name"] = env_settings.env_path
        what = f"Unity build {env_settings.env_path}"
    elif env_settings.scene is not None:
        kwargs["scene"] = env_settings.scene
        what = f"built-in scene {env_settings.scene}"
    else:
        return _make_editor_env(options, kwargs)
    processes = env_settings.num_envs
    restart_limits: dict[str, Any] = {
        "max_lifetime_restarts": env_settings.max_lifetime_restarts,
        "restarts_rate_limit_n": env_settings.restarts_rate_limit_n,
        "restarts_rate_limit_period_s": env_settings.restarts_rate_limit_period_s,
    }
    backend = env_settings.backend or (SINGLE_GAME_BACKEND if processes == 1 else "subprocess")
    cluster = connect_ray(env_settings, processes) if backend == "ray" else None
    if cluster is not None:
        logger.info("%s; each game runs as a Ray actor.", cluster.describe())
    try:
        return _make_unity_env_on(options, kwargs, restart_limits, backend, cluster, what)
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise


def _make_editor_env(
    options: RunOptions, kwargs: dict[str, Any]
) -> TrainingEnvironment | ParallelTrainingEnvironment:
    """The Unity Editor's game as a one-game vector env (module documentation).

    ``kwargs`` are the game keywords of :func:`_make_unity_env` (without a build or scene).
    """
    from unity_gym.environment import UnityEnvironment

    env_settings = options.env_settings
    if env_settings.num_envs != 1 or env_settings.backend == "ray":  # settings check these
        raise EnvironmentSetupError(
            "the Unity Editor is one game on this machine: use --num-envs 1."
        )
    if env_settings.env_args:
        logger.warning(
            "--env-args %s ignored: they are passed to a launched build, and the Unity Editor "
            "is not launched.",
            " ".join(env_settings.env_args),
        )
    port = env_settings.base_port or UnityEnvironment.DEFAULT_EDITOR_PORT
    game = dict(kwargs, editor=True, base_port=port)
    restart_limits: dict[str, Any] = {
        "max_lifetime_restarts": env_settings.max_lifetime_restarts,
        "restarts_rate_limit_n": env_settings.restarts_rate_limit_n,
        "restarts_rate_limit_period_s": env_settings.restarts_rate_limit_period_s,
    }
    logger.info("%s", editor_listening_line(port))
    if unity_front(options) == "pettingzoo":
        try:
            return _make_parallel_envs(game, restart_limits, 1, port, EDITOR_DESCRIPTION)
        except UnityTimeOutException as exc:
            raise _editor_timeout(exc, port, env_settings.timeout_wait) from None
    try:
        env = gymnasium.make_vec(
            UNITY_ENV_ID,
            num_envs=None,  # type: ignore[arg-type]  # slots = all agents of the Editor's scene
            num_processes=1,
            backend=env_settings.backend or SINGLE_GAME_BACKEND,
            autoreset_mode=AutoresetMode.SAME_STEP,
            **restart_limits,
            **game,
        )
    except UnityTimeOutException as exc:
        raise _editor_timeout(exc, port, env_settings.timeout_wait) from None
    except UnityMultipleBehaviorsException as exc:
        raise EnvironmentSetupError(
            f"the scene playing in the Unity Editor has several behaviors "
            f"({', '.join(exc.behavior_names) or exc}), and the config named one, so unity-train "
            "opened the Editor's single connection for one behavior. Name every behavior of the "
            "scene under `behaviors:` in the config (or give one `self_play`), and unity-train "
            "opens it for all of them; or build the scene (File > Build Settings) and train the "
            "build with --env PATH (--num-envs N runs several copies)."
        ) from None
    except gymnasium.error.Error as exc:
        raise EnvironmentSetupError(f"cannot train in {EDITOR_DESCRIPTION}: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise EnvironmentSetupError(f"invalid settings for {EDITOR_DESCRIPTION}: {exc}") from exc
    reported = _reported_behavior_name(env)
    candidates = [plain_behavior_name(reported), reported] if reported else []
    return TrainingEnvironment(env, list(dict.fromkeys(candidates)), EDITOR_DESCRIPTION)


def _editor_timeout(
    error: UnityTimeOutException, port: int, timeout_wait: float
) -> UnityTimeOutException:
    """The error for the Editor's wait that timed out (:func:`editor_timeout_message` when
    nothing connected; the bridge's own error when the game connected, then stopped answering)."""
    if "nothing connected to port" not in str(error):
        return error
    return UnityTimeOutException(editor_timeout_message(port, timeout_wait))


def _make_unity_env_on(
    options: RunOptions,
    kwargs: dict[str, Any],
    restart_limits: dict[str, Any],
    backend: str,
    cluster: RayCluster | None,
    what: str,
) -> TrainingEnvironment | ParallelTrainingEnvironment:
    """The Unity environment of :func:`_make_unity_env`, its games run by ``backend``."""
    env_settings = options.env_settings
    processes = env_settings.num_envs
    parallel = partial(
        _make_parallel_envs,
        kwargs,
        restart_limits,
        processes,
        env_settings.base_port,
        what,
        cluster,
    )
    front = unity_front(options)
    if front == "pettingzoo":
        if env_settings.scene is not None and kwargs.get("num_areas") is None:
            # a PettingZoo env of a scene holds one area unless told: give it the scene's
            # stock areas, as the vector env and a Unity build have them
            kwargs["num_areas"] = scene_area_count(env_settings.scene)
        return parallel()
    try:
        spec = _registered_spec(UNITY_ENV_ID)
        if spec.vector_entry_point is not None:
            # every agent of every game process is a slot
            if env_settings.base_port is not None:
                kwargs["base_port"] = env_settings.base_port
            if cluster is not None:
                kwargs["ray_actor_options"] = cluster.actor_options
            env = gymnasium.make_vec(
                UNITY_ENV_ID,
                num_envs=None,  # type: ignore[arg-type]  # slots = all agents of all processes
                num_processes=processes,
                backend=backend,
                autoreset_mode=AutoresetMode.SAME_STEP,
                **restart_limits,
                **kwargs,
            )
        else:
            # no multi-agent vector env available: one single-agent game per slot
            if env_settings.base_port is not None:
                if processes > 1:
                    logger.warning("base_port is ignored with several games; free ports are used.")
                else:
                    kwargs["base_port"] = env_settings.base_port
            env = gymnasium.make_vec(
                UNITY_ENV_ID,
                num_envs=processes,
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
                **kwargs,
            )
    except UnityMultipleBehaviorsException as exc:  # before ValueError: the error is both
        if front is not None:  # the settings chose the vector env (a built-in scene)
            raise EnvironmentSetupError(f"cannot train {what}: {exc}") from exc
        # a build whose behaviors only the game could tell: the vector env closed its games
        logger.info("%s has several behaviors; training them through PettingZoo.", what)
        kwargs.pop("ray_actor_options", None)
        return parallel()
    except gymnasium.error.Error as exc:
        raise EnvironmentSetupError(f"cannot create the Unity environment ({what}): {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise EnvironmentSetupError(f"invalid Unity environment settings ({what}): {exc}") from exc
    reported = _reported_behavior_name(env)
    candidates = [plain_behavior_name(reported), reported] if reported else []
    return TrainingEnvironment(env, list(dict.fromkeys(candidates)), what, cluster)


def _registered_spec(env_id: str) -> gymnasium.envs.registration.EnvSpec:
    """The spec of ``module:Id``, importing ``module`` first (as ``gymnasium.make`` does)."""
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise EnvironmentSetupError(f"cannot import {module!r} for {env_id}: {exc}") from exc
    return gymnasium.spec(name)


def _reported_behavior_name(env: VectorEnv) -> str | None:
    """The behavior name the vector env (or its first sub-environment) reports, if any."""
    name = getattr(env.unwrapped, "behavior_name", None)
    if name is None and hasattr(env, "get_attr"):
        try:
            name = env.get_attr("behavior_name")[0]
        except (AttributeError, IndexError):
            name = None
    return str(name) if name else None


def unity_front(options: RunOptions) -> Literal["vector", "pettingzoo"] | None:
    """Which front trains the Unity game of ``options`` as far as the settings tell (module
    documentation, "Choosing between the two"): ``"pettingzoo"`` for several behaviors,
    ``"vector"`` for one, ``None`` for a build that only the game itself can tell about."""
    env_settings = options.env_settings
    if env_settings.scene is not None:
        try:
            declared = scene_behaviors(env_settings.scene)
        except ValueError:  # an unknown scene: the vector env's error lists the built-in ones
            return "vector"
        return "pettingzoo" if len(declared) > 1 else "vector"
    configured = [*options.behaviors.values(), options.default_settings]
    if any(settings is not None and settings.self_play is not None for settings in configured):
        return "pettingzoo"
    if len(options.behaviors) > 1:
        return "pettingzoo"  # the config says what the game has (the Editor's rule too)
    return None


def _make_parallel_envs(
    kwargs: dict[str, Any],
    restart_limits: dict[str, Any],
    processes: int,
    base_port: int | None,
    what: str,
    cluster: RayCluster | None = None,
) -> ParallelTrainingEnvironment:
    """``processes`` PettingZoo parallel envs of the game (env *i*: seed + *i*, worker *i*).

    Every env gets ``kwargs`` (game settings) and ``restart_limits`` (the run's
    ``max_lifetime_restarts``, ``restarts_rate_limit_n`` and ``restarts_rate_limit_period_s``),
    and plays its agents as Unity does (``agent_autoreset=True``): an agent restarts as soon as
    its episode ends, so no training area waits for the others (as ``mlagents-learn`` trains).
    With a Ray ``cluster``, each env runs inside a Ray actor
    (:func:`unity_gym.pettingzoo.ray_parallel_env`); otherwise in this process.
    """
    from unity_gym.pettingzoo import parallel_env, ray_parallel_env

    envs: list[ParallelEnv[str, Any, Any]] = []
    try:
        for index in range(processes):
            game = dict(
                kwargs,
                **restart_limits,
                seed=kwargs["seed"] + index,
                worker_id=index,
                agent_autoreset=True,
            )
            if base_port is not None:
                game["base_port"] = base_port
            if cluster is None:
                envs.append(parallel_env(**game))
            else:
                envs.append(ray_parallel_env(actor_options=cluster.actor_options, **game))
    except (TypeError, ValueError) as exc:
        close_all(envs)
        raise EnvironmentSetupError(f"invalid Unity environment settings ({what}): {exc}") from exc
    except BaseException:
        close_all(envs)
        raise
    count = f"{processes} game process{'es' if processes > 1 else ''}"
    where = ", Ray actors" if cluster is not None else ""
    return ParallelTrainingEnvironment(envs, f"{what}, PettingZoo{where}, {count}", cluster)
