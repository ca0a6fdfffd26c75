"""One game process: :class:`GameSettings`, the keywords shared by every front, and its launch.

A built-in scene is started exactly like a Unity build: the headless player's launcher
(:func:`unity_gym.game.catalogue.builtin_executable`, written once into a per-user cache and
rewritten when stale) is handed to ``UnityEnvironment(file_name=...)``, with the scene's player
arguments (``--num-agents``, ``--option``) in ``additional_args``. The Unity Editor
(``GameSettings(editor=True)``) is not launched: ``UnityEnvironment(file_name=None)`` listens on
``base_port`` (default 5004) until Play is pressed.

Heavy modules (the bridge, gRPC) are imported only when a game is launched.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from unity_gym.game.catalogue import builtin_executable, canonical_scene, scene_agents_per_area
from unity_gym.game.env_params import apply_env_param, check_env_param

if TYPE_CHECKING:
    from unity_gym.environment import UnityEnvironment
    from unity_gym.side_channels.side_channel import SideChannel

__all__ = [
    "DEFAULT_SCENE",
    "GAME_SEED_MODULUS",
    "GameSettings",
    "SeedError",
    "check_seed",
    "game_seed",
]

DEFAULT_SCENE = "3DBall"
"""Built-in scene used when neither ``file_name`` nor ``scene`` is given."""

GAME_SEED_MODULUS = 2**31
"""Fronts start a game with ``seed % GAME_SEED_MODULUS``: the handshake's seed is an int32."""


class SeedError(ValueError, gymnasium.error.Error):
    """A front was given a seed that is not a non-negative integer.

    A :class:`ValueError`, and also Gymnasium's :class:`gymnasium.error.Error` (what Gymnasium's
    own seeding raises for such seeds), so either ``except`` clause catches it.
    """


def check_seed(seed: object) -> int:
    """``seed`` as a Python int, if it is a seed Gymnasium accepts.

    Gymnasium (``gymnasium.utils.seeding.np_random``) takes any non-negative Python int, of any
    size. NumPy integers are accepted too (converted); ``bool`` is refused.

    Raises:
        SeedError: for a negative number, a ``bool`` or anything not an integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise SeedError(
            f"seed must be a non-negative integer (or None), got {seed!r} of type "
            f"{type(seed).__name__}; pass e.g. seed=42."
        )
    value = int(seed)
    if value < 0:
        raise SeedError(
            f"seed must be a non-negative integer (or None), got {value}; Gymnasium seeds are "
            "never negative (any size is fine: the game gets seed % 2**31)."
        )
    return value


def game_seed(seed: object, offset: int = 0) -> int:
    """The seed a front starts its game with: ``(seed + offset) % GAME_SEED_MODULUS``.

    The one rule for every front (``gymnasium.make``, the vector env, PettingZoo): Gymnasium
    seeds are any non-negative int (Stable-Baselines3 draws them up to ``2**32``) while the
    handshake's ``UnityRLInitializationInputProto.seed`` is an int32, so the game gets the seed
    reduced modulo ``2**31``, which keeps it non-negative and keeps every seed below ``2**31``
    unchanged.

    Args:
        seed: the user's seed (validated by :func:`check_seed`).
        offset: added before the reduction (the vector env's game ``i`` uses ``seed + i``).

    Raises:
        SeedError: if ``seed`` is negative or not an integer.
    """
    return (check_seed(seed) + offset) % GAME_SEED_MODULUS


_ENGINE_FIELDS = (
    "width",
    "height",
    "quality_level",
    "time_scale",
    "target_frame_rate",
    "capture_frame_rate",
)


@dataclass(frozen=True)
class GameSettings:
    """The keywords that describe one game process, shared by every front.

    At most one of ``file_name``, ``scene`` and ``editor=True`` may be given; with none of them,
    the built-in :data:`DEFAULT_SCENE` is used (so ``gymnasium.make("Unity-v0")`` plays 3DBall).

    The Unity Editor is an explicit choice, ``editor=True``, as ``mlagents-learn`` without
    ``--env`` (mlagents' ``learn.py`` passes ``file_name=None`` and no port, so
    ``UnityEnvironment`` waits on port 5004): :meth:`launch` then starts nothing and
    ``UnityEnvironment(file_name=None, base_port=base_port)`` waits up to ``timeout_wait``
    seconds for Play to be pressed (``base_port`` None: 5004). The Editor is one game on one
    port: ``worker_id`` must stay 0, and it takes no command-line arguments (``additional_args``)
    nor scene settings (``scene_options``, ``num_agents``).

    Attributes:
        file_name: path of a Unity build (as for ``UnityEnvironment``).
        scene: name of a built-in scene of the headless player.
        editor: True: the game is the Unity Editor, which connects when Play is pressed.
        no_graphics: pass ``-nographics -batchmode`` (the player is always headless; a real
            Unity build then renders no camera images).
        no_graphics_monitor: as ``no_graphics``, but only for games whose ``worker_id`` is not
            0: the first game keeps its graphics (``mlagents_envs``' ``no_graphics_monitor``,
            ``mlagents-learn --no-graphics-monitor``).
        width: screen width (EngineConfigurationChannel; must come with ``height``).
        height: screen height.
        quality_level: quality settings index.
        time_scale: simulation speed multiplier.
        target_frame_rate: frames per second the game aims for (-1: unlimited).
        capture_frame_rate: fixed simulation frame rate.
        env_params: environment parameters (EnvironmentParametersChannel): each value is a float,
            or a sampler dict in ML-Agents' YAML shape, either flat
            ``{"sampler_type": "uniform", "min_value": 1, "max_value": 2, "seed": 3}`` or with a
            nested ``"sampler_parameters"`` dict. Sampler types: ``uniform`` (min_value,
            max_value), ``gaussian`` (mean, st_dev), ``multirangeuniform`` (intervals);
            ``seed`` defaults to the game seed.
        seed: seed sent in the handshake.
        timeout_wait: seconds to wait for each message of the game.
        additional_args: extra player command-line arguments.
        worker_id: port offset (``UnityEnvironment.worker_id``).
        base_port: first port; None picks a free port.
        num_areas: training areas the game replicates (handshake ``num_areas``).
        log_folder: folder for the player's log.
        scene_options: built-in scenes only: scene options (``--option key=value``).
        num_agents: built-in scenes only: total agents of the stock scene (``--num-agents``);
            None keeps the scene's stock count.

    Raises:
        ValueError: on conflicting or invalid settings (checked at construction).
    """

    file_name: str | os.PathLike[str] | None = None
    scene: str | None = None
    no_graphics: bool = False
    no_graphics_monitor: bool = False
    width: int | None = None
    height: int | None = None
    quality_level: int | None = None
    time_scale: float | None = None
    target_frame_rate: int | None = None
    capture_frame_rate: int | None = None
    env_params: Mapping[str, Any] | None = None
    seed: int = 0
    timeout_wait: float = 60.0
    additional_args: Sequence[str] = ()
    worker_id: int = 0
    base_port: int | None = None
    num_areas: int = 1
    log_folder: str | os.PathLike[str] | None = None
    scene_options: Mapping[str, object] | None = field(default=None)
    num_agents: int | None = None
    editor: bool = False

    def __post_init__(self) -> None:
        if self.file_name is not None and self.scene is not None:
            raise ValueError(
                f"Give either file_name (a Unity build) or scene (a built-in scene), not both: "
                f"got file_name={self.file_name!r} and scene={self.scene!r}."
            )
        if self.file_name is not None and (self.scene_options or self.num_agents is not None):
            raise ValueError(
                "scene_options and num_agents only apply to built-in scenes; for a Unity build "
                "pass its command-line arguments in additional_args and use num_areas."
            )
        if isinstance(self.additional_args, str):
            raise ValueError(
                f"additional_args must be a list of arguments, got the string "
                f"{self.additional_args!r}; split it, e.g. additional_args=['--flag', 'value']."
            )
        object.__setattr__(self, "additional_args", tuple(str(a) for a in self.additional_args))
        if self.editor:
            self._check_editor()
        if self.scene is None and self.file_name is None and not self.editor:
            object.__setattr__(self, "scene", DEFAULT_SCENE)
        if self.scene is not None:
            object.__setattr__(self, "scene", canonical_scene(self.scene))
        if self.num_agents is not None and self.num_agents <= 0:
            raise ValueError(f"num_agents must be a positive integer, got {self.num_agents}.")
        if self.num_areas < 1:
            raise ValueError(f"num_areas must be at least 1, got {self.num_areas}.")
        if (self.width is None) != (self.height is None):
            raise ValueError(
                f"width and height go together; got width={self.width}, height={self.height}."
            )
        for key, value in (self.env_params or {}).items():
            check_env_param(key, value)

    def _check_editor(self) -> None:
        """Reject settings that cannot apply to the Unity Editor (``editor=True``)."""
        if self.editor is not True:
            raise ValueError(f"editor must be True or False, got {self.editor!r}.")
        if self.file_name is not None or self.scene is not None:
            raise ValueError(
                "editor=True connects to the Unity Editor; it cannot be combined with "
                f"file_name={self.file_name!r} or scene={self.scene!r}. Give one of them."
            )
        if self.scene_options or self.num_agents is not None:
            raise ValueError(
                "scene_options and num_agents only apply to built-in scenes, not to the Unity "
                "Editor (editor=True); set the scene up in the Editor, or use num_areas."
            )
        if self.additional_args:
            raise ValueError(
                "additional_args are command-line arguments of a launched build; the Unity "
                "Editor (editor=True) is not launched, so it cannot take "
                f"{list(self.additional_args)!r}. Remove them."
            )
        if self.worker_id != 0:
            raise ValueError(
                f"worker_id must be 0 with the Unity Editor (editor=True), got {self.worker_id}: "
                "the Editor is a single game on one port; choose the port with base_port."
            )

    @property
    def is_builtin(self) -> bool:
        """Whether the game is a built-in scene of the headless player."""
        return self.scene is not None

    def replace(self, **changes: Any) -> GameSettings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def single_area(self) -> GameSettings:
        """For a built-in scene without ``num_agents``: a copy limited to one training area.

        Other settings are returned unchanged.
        """
        if self.scene is None or self.num_agents is not None:
            return self
        return self.replace(num_agents=scene_agents_per_area(self.scene, self.scene_options))

    def player_args(self) -> list[str]:
        """The player arguments this front adds: scene arguments, then ``additional_args``."""
        args: list[str] = []
        if self.num_agents is not None:
            args += ["--num-agents", str(self.num_agents)]
        for key, value in (self.scene_options or {}).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            args += ["--option", f"{key}={text}"]
        return args + list(self.additional_args)

    def executable(self) -> str | os.PathLike[str] | None:
        """The build to launch: ``file_name`` or the cached launcher of the built-in scene;
        None for the Unity Editor (nothing is launched)."""
        if self.editor:
            return None
        if self.scene is not None:
            return builtin_executable(self.scene)
        assert self.file_name is not None
        return self.file_name

    def launch(self, side_channels: Sequence[SideChannel] = ()) -> UnityEnvironment:
        """Start the game through ``UnityEnvironment`` (the same path as a Unity build).

        Engine settings and environment parameters are queued on their side channels and reach
        the game with the first ``reset()``. Statistics the game reports are dropped unless a
        ``StatsSideChannel`` is given.

        Args:
            side_channels: additional channels to serve (an engine configuration, environment
                parameters or stats channel given here replaces the one this method would
                create).

        Returns:
            The bridge, connected (handshake done) but not yet reset. With ``editor=True`` this
            blocks until Play is pressed in the Unity Editor.

        Raises:
            UnityTimeOutException: nothing connected within ``timeout_wait`` (e.g. Play was not
                pressed in the Editor).
            UnityWorkerInUseException: the port is taken.
        """
        from unity_gym.environment import UnityEnvironment
        from unity_gym.side_channels.engine_configuration_channel import (
            EngineConfigurationChannel,
        )
        from unity_gym.side_channels.environment_parameters_channel import (
            EnvironmentParametersChannel,
        )
        from unity_gym.side_channels.stats_side_channel import StatsSideChannel

        channels = list(side_channels)
        if all(c.channel_id != StatsSideChannel.CHANNEL_ID for c in channels):
            channels.append(_stats_sink())
        engine = next((c for c in channels if isinstance(c, EngineConfigurationChannel)), None)
        if engine is None:
            engine = EngineConfigurationChannel()
            channels.append(engine)
        parameters = next(
            (c for c in channels if isinstance(c, EnvironmentParametersChannel)), None
        )
        if parameters is None:
            parameters = EnvironmentParametersChannel()
            channels.append(parameters)
        engine.set_configuration_parameters(**{f: getattr(self, f) for f in _ENGINE_FIELDS})
        for key, value in (self.env_params or {}).items():
            apply_env_param(parameters, key, value, self.seed)
        executable = self.executable()
        return UnityEnvironment(
            file_name=None if executable is None else str(executable),
            worker_id=self.worker_id,
            base_port=self.base_port,
            seed=self.seed,
            no_graphics=self.no_graphics,
            no_graphics_monitor=self.no_graphics_monitor,
            timeout_wait=self.timeout_wait,
            additional_args=self.player_args(),
            side_channels=channels,
            log_folder=None if self.log_folder is None else Path(self.log_folder),
            num_areas=self.num_areas,
        )


def _stats_sink() -> SideChannel:
    """A channel on the stats channel id that drops what it receives (no unbounded buffer)."""
    from unity_gym.side_channels.messages import IncomingMessage
    from unity_gym.side_channels.side_channel import SideChannel
    from unity_gym.side_channels.stats_side_channel import StatsSideChannel

    class StatsSink(SideChannel):
        def on_message_received(self, msg: IncomingMessage) -> None:
            """Drop the statistic."""

    return StatsSink(StatsSideChannel.CHANNEL_ID)
