"""Where and how the games run: ``env_settings``, ``engine_settings``,
``checkpoint_settings`` and ``torch_settings``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from trainers.settings.errors import ConfigError
from trainers.settings.structuring import _check_positive, _check_range

__all__ = [
    "BackendType",
    "CheckpointSettings",
    "EngineSettings",
    "EnvironmentSettings",
    "Precision",
    "TorchSettings",
]

logger = logging.getLogger("trainers.settings")

BackendType = Literal["subprocess", "inprocess", "ray"]
Precision = Literal["float32", "bf16-mixed"]
"""``torch_settings.precision``: see :mod:`trainers.common.networks.precision`."""


@dataclass
class EnvironmentSettings:
    """Which environment to train on and how to launch it.

    At most one of ``env_path`` (a Unity build; ``gym:<id>`` selects a Gymnasium id), ``scene``
    (a built-in ``unity_gym`` scene) or ``gym_id`` (a Gymnasium id) selects the environment.
    With none of them the game is the Unity Editor (:attr:`uses_editor`), as in
    ``mlagents-learn`` without ``--env``: training starts when Play is pressed. ``base_port``
    ``None`` (unlike ML-Agents' fixed 5005) lets every game pick a free port, and makes the Editor
    connect on 5004 (ML-Agents always uses 5004 for the Editor; here ``base_port`` may choose
    another port).

    ``num_envs`` is how many environment instances run, as ``mlagents-learn``'s ``--num-envs``:
    Unity game processes (every agent of each is trained), or copies of a Gymnasium environment.
    It never counts agents (a vector env's slots).

    ``num_areas`` is ``mlagents-learn``'s handshake value, the training areas a game replicates;
    ``None`` (the default, which ``configuration.yaml`` writes as ML-Agents' 1) keeps each game as
    it is: a build's scene, or a built-in scene's stock areas. For a built-in scene trained
    through PettingZoo (several behaviors) a number is the areas each game holds (``--num-areas
    18``: Tennis's 18 courts).

    The Editor is one game: ``num_envs`` above 1 is an error, as in ML-Agents 1.1.0, whose
    ``EnvironmentSettings`` refuses ``num_envs > 1`` when ``env_path`` is not set ("num_envs must
    be 1 if env_path is not set."). It connects to this machine, so ``backend: ray`` (games
    anywhere in a cluster) is refused too.

    ``backend`` (an extension of this project) says where each Unity game and its worker run:
    ``subprocess`` (a worker process per game), ``inprocess`` (a thread per game) or ``ray``
    (a Ray actor per game, anywhere in the cluster at ``ray_address``; each asks for
    ``ray_game_cpus`` CPUs plus ``ray_game_resources``). ``None`` picks ``inprocess`` for one
    game and ``subprocess`` for several.
    """

    env_path: str | None = None
    env_args: list[str] | None = None
    base_port: int | None = None
    num_envs: int = 1
    num_areas: int | None = None
    timeout_wait: int = 60
    seed: int = -1
    max_lifetime_restarts: int = 10
    restarts_rate_limit_n: int = 1
    restarts_rate_limit_period_s: int = 60
    gym_id: str | None = None
    scene: str | None = None
    backend: BackendType | None = None
    ray_address: str | None = None
    ray_game_cpus: float = 1.0
    ray_game_resources: dict[str, float] | None = None

    @property
    def uses_editor(self) -> bool:
        """Whether the game is the Unity Editor: no ``env_path``, ``scene`` nor ``gym_id``."""
        return self.env_path is None and self.scene is None and self.gym_id is None

    def _validate(self, path: str) -> None:
        _check_positive(path, "num_envs", self.num_envs)
        if not math.isfinite(self.ray_game_cpus) or self.ray_game_cpus < 0:
            raise ConfigError(
                f"{path}.ray_game_cpus: expected a number >= 0 (CPUs Ray reserves per game), "
                f"got {self.ray_game_cpus!r}."
            )
        for name, amount in (self.ray_game_resources or {}).items():
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
                raise ConfigError(
                    f"{path}.ray_game_resources.{name}: expected a number >= 0 (amount of the "
                    f"custom Ray resource per game), got {amount!r}."
                )
        uses_ray = (
            self.ray_address is not None
            or self.ray_game_resources is not None
            or self.ray_game_cpus != 1.0
        )
        if uses_ray and self.backend != "ray":
            raise ConfigError(
                f"{path}: ray_address, ray_game_cpus and ray_game_resources apply to "
                f"backend 'ray' only (backend is {self.backend!r}); add --backend ray."
            )
        if self.num_areas is not None:
            _check_positive(path, "num_areas", self.num_areas)
        _check_positive(path, "timeout_wait", self.timeout_wait)
        if self.base_port is not None:
            _check_range(path, "base_port", self.base_port, 1, 65535)
        if self.env_path is not None and self.env_path.startswith("gym:"):
            if self.gym_id is not None:
                raise ConfigError(f"{path}: give env_path 'gym:<id>' or gym_id, not both.")
            self.gym_id = self.env_path[len("gym:") :]
            self.env_path = None
            if not self.gym_id:
                raise ConfigError(f"{path}.env_path: 'gym:' must be followed by a Gymnasium id.")
        chosen = [
            name for name in ("env_path", "scene", "gym_id") if getattr(self, name) is not None
        ]
        if len(chosen) > 1:
            raise ConfigError(
                f"{path}: {' and '.join(chosen)} are both set; choose one environment "
                "(--env PATH, --scene NAME or --gym-id ID)."
            )
        if self.uses_editor:
            self._validate_editor(path)

    def _validate_editor(self, path: str) -> None:
        """The checks of a run that trains in the Unity Editor (class documentation)."""
        if self.num_envs > 1:
            raise ConfigError(
                f"{path}.num_envs: {self.num_envs} games cannot run in the Unity Editor, which "
                "is one game (no --env, --scene or --gym-id selects the Editor; as mlagents-learn "
                "says: num_envs must be 1 if env_path is not set). Use --num-envs 1 with the "
                "Editor, or train several games of a build (--env PATH --num-envs N) or of a "
                "built-in scene (--scene 3DBall --num-envs N)."
            )
        if self.backend == "ray":
            raise ConfigError(
                f"{path}.backend: 'ray' runs games anywhere in a Ray cluster, but the Unity "
                "Editor connects to this machine (no --env, --scene or --gym-id selects the "
                "Editor). Remove --backend ray, or train a build (--env PATH) or a built-in "
                "scene (--scene NAME) on Ray."
            )


@dataclass
class EngineSettings:
    """Unity engine configuration (ignored for plain Gymnasium environments)."""

    width: int = 84
    height: int = 84
    quality_level: int = 5
    time_scale: float = 20.0
    target_frame_rate: int = -1
    capture_frame_rate: int = 60
    no_graphics: bool = False
    no_graphics_monitor: bool = False

    def _validate(self, path: str) -> None:
        _check_positive(path, "width", self.width)
        _check_positive(path, "height", self.height)
        _check_positive(path, "time_scale", self.time_scale)


@dataclass
class CheckpointSettings:
    """Run identity and how to treat an existing run directory.

    As ``mlagents-learn`` 1.1.0: every combination of ``resume``, ``force`` and
    ``initialize_from`` is accepted. ``resume`` wins over ``force`` (an existing run is
    continued, not deleted) and over ``initialize_from`` (which is dropped with a warning;
    ``unity-train`` lets a ``--initialize-from`` given on the command line win over a file's
    ``resume``, as ``prioritize_resume_init`` does). ``load_model`` and ``train_model`` are
    deprecated keys that only log a warning (``--load`` also sets ``resume``).
    """

    run_id: str = "ppo"
    initialize_from: str | None = None
    load_model: bool = False
    resume: bool = False
    force: bool = False
    train_model: bool = False
    inference: bool = False
    results_dir: str = "results"

    @property
    def run_dir(self) -> Path:
        """``<results_dir>/<run_id>``."""
        return Path(self.results_dir) / self.run_id

    def _validate(self, path: str) -> None:
        if not self.run_id or any(sep in self.run_id for sep in ("/", "\\")):
            raise ConfigError(
                f"{path}.run_id: {self.run_id!r} is not a valid run id; use a plain name "
                "without path separators."
            )
        # mlagents-learn 1.1.0 (learn.py, settings.py): --load sets resume and load_model and
        # logs a deprecation (unity-train's command line does the same); load_model and
        # train_model from a file only log it. resume with force continues the run (force
        # only matters for a run that is not resumed).
        if self.load_model:
            logger.warning(
                "The --load option has been deprecated. Please use the --resume option instead."
            )
        if self.train_model:
            logger.warning(
                "The --train option has been deprecated. Train mode is now the default. Use "
                "--inference to run in inference mode."
            )
        if self.resume and self.force:
            logger.warning(
                "Both resume and force are set; resuming run %s (force applies to runs that "
                "are not resumed).",
                self.run_id,
            )
        if self.resume and self.initialize_from is not None:
            logger.warning(
                "Both resume and initialize_from=%s are set; resuming run %s and ignoring "
                "initialize_from.",
                self.initialize_from,
                self.run_id,
            )
            self.initialize_from = None


@dataclass
class TorchSettings:
    """Torch device (``cpu``, ``cuda``, ``cuda:1``, ...); ``None`` picks the CPU.

    ``precision`` (an extension of this project): ``float32``, or ``bf16-mixed`` for updates
    whose matrix products take bfloat16 inputs (:mod:`trainers.common.networks.precision`).
    """

    device: str | None = None
    precision: Precision = "float32"
