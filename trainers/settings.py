"""Training configuration: ML-Agents' YAML format parsed into typed, validated dataclasses.

The accepted layout is the one ``mlagents-learn`` reads::

    behaviors:            {<BehaviorName>: <trainer settings>}
    default_settings:     <trainer settings applied under every behavior (listed or not)>
    env_settings:         {env_path, env_args, base_port, num_envs, num_areas, seed, ...}
    engine_settings:      {width, height, quality_level, time_scale, ..., no_graphics}
    environment_parameters: {<name>: <float> | {sampler_type, sampler_parameters}
                             | {curriculum: [{name, value, completion_criteria}, ...]}}
    checkpoint_settings:  {run_id, initialize_from, resume, force, inference, results_dir}
    torch_settings:       {device}
    debug:                <bool>

Some keys are extensions of this project: ``env_settings.gym_id`` (a plain Gymnasium id),
``env_settings.scene`` (a built-in scene of ``unity_gym``'s player) and ``env_settings.backend``
with its Ray options (where games run, :class:`EnvironmentSettings`).

Every error is a :class:`ConfigError` whose message starts with the dotted path of the offending
key (``behaviors.3DBall.hyperparameters.batchsize: unknown key; did you mean batch_size?``).
Valid ML-Agents features that these trainers do not implement yet raise
:class:`UnsupportedFeatureError` (a ``ConfigError``) saying so.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import logging
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

__all__ = [
    "CheckpointSettings",
    "CompletionCriteria",
    "ConfigError",
    "CuriositySettings",
    "Curriculum",
    "EngineSettings",
    "EnvironmentParameter",
    "EnvironmentSettings",
    "ExtrinsicRewardSettings",
    "Lesson",
    "NetworkSettings",
    "PPOHyperparameters",
    "RNDSettings",
    "RewardSignalSettings",
    "RunOptions",
    "SACHyperparameters",
    "SamplerSettings",
    "ScheduleType",
    "TorchSettings",
    "TrainerSettings",
    "UnsupportedFeatureError",
    "lesson_env_param",
    "lesson_seeds",
    "load_config_file",
    "parameter_lessons",
    "parse_run_options",
]

logger = logging.getLogger(__name__)

ScheduleType = Literal["linear", "constant"]
TrainerType = Literal["ppo", "sac"]
EncoderType = Literal["simple", "nature_cnn", "resnet", "match3", "fully_connected"]
BackendType = Literal["subprocess", "inprocess", "ray"]

_UNSUPPORTED_TRAINERS = {"poca": "the POCA (multi-agent cooperative) trainer"}
_UNSUPPORTED_REWARD_SIGNALS = {"gail": "the GAIL reward signal"}
# Reward signals besides ``extrinsic`` (PPO only) and their settings.
_INTRINSIC_SIGNALS: dict[str, type[RewardSignalSettings]] = {}
_SAMPLER_PARAMETERS = {
    "uniform": ("min_value", "max_value"),
    "gaussian": ("mean", "st_dev"),
    "multirangeuniform": ("intervals",),
    "constant": ("value",),
}


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range; the message says which and why."""


class UnsupportedFeatureError(ConfigError):
    """A valid ML-Agents configuration feature that these trainers do not implement yet."""


def _unsupported(path: str, feature: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"{path}: {feature} is a valid ML-Agents feature but is not supported by unity-train yet; "
        "remove this setting (or use mlagents-learn for it)."
    )


# ---------------------------------------------------------------------------------------------
# Settings dataclasses
# ---------------------------------------------------------------------------------------------


@dataclass
class PPOHyperparameters:
    """PPO hyperparameters (``trainer_type: ppo``); defaults are ML-Agents'.

    ``shared_critic``: the critic is a value head on the policy's own network (ML-Agents'
    ``SharedActorCritic``) instead of a network of its own.
    """

    batch_size: int = 1024
    buffer_size: int = 10240
    learning_rate: float = 3.0e-4
    beta: float = 5.0e-3
    epsilon: float = 0.2
    lambd: float = 0.95
    num_epoch: int = 3
    shared_critic: bool = False
    learning_rate_schedule: ScheduleType = "linear"
    beta_schedule: ScheduleType | None = None
    epsilon_schedule: ScheduleType | None = None

    def _validate(self, path: str) -> None:
        _check_positive(path, "batch_size", self.batch_size)
        _check_positive(path, "buffer_size", self.buffer_size)
        if self.buffer_size < self.batch_size:
            raise ConfigError(
                f"{path}.buffer_size: {self.buffer_size} is smaller than batch_size "
                f"{self.batch_size}; use a buffer_size that is at least (ideally a multiple of) "
                "batch_size."
            )
        _check_positive(path, "learning_rate", self.learning_rate)
        _check_range(path, "beta", self.beta, 0.0, math.inf)
        _check_positive(path, "epsilon", self.epsilon)
        _check_range(path, "lambd", self.lambd, 0.0, 1.0)
        _check_positive(path, "num_epoch", self.num_epoch)
        # ML-Agents: beta and epsilon follow the learning-rate schedule unless given.
        if self.beta_schedule is None:
            self.beta_schedule = self.learning_rate_schedule
        if self.epsilon_schedule is None:
            self.epsilon_schedule = self.learning_rate_schedule


@dataclass
class SACHyperparameters:
    """SAC hyperparameters (``trainer_type: sac``); defaults are ML-Agents'."""

    batch_size: int = 128
    buffer_size: int = 50000
    learning_rate: float = 3.0e-4
    learning_rate_schedule: ScheduleType = "constant"
    buffer_init_steps: int = 0
    tau: float = 0.005
    steps_per_update: float = 1.0
    save_replay_buffer: bool = False
    init_entcoef: float = 1.0
    reward_signal_steps_per_update: float | None = None

    def _validate(self, path: str) -> None:
        _check_positive(path, "batch_size", self.batch_size)
        _check_positive(path, "buffer_size", self.buffer_size)
        if self.buffer_size < self.batch_size:
            raise ConfigError(
                f"{path}.buffer_size: {self.buffer_size} is smaller than batch_size "
                f"{self.batch_size}; the replay buffer must hold at least one batch."
            )
        _check_positive(path, "learning_rate", self.learning_rate)
        _check_range(path, "buffer_init_steps", self.buffer_init_steps, 0, math.inf)
        _check_range(path, "tau", self.tau, 1e-12, 1.0)
        _check_positive(path, "steps_per_update", self.steps_per_update)
        _check_positive(path, "init_entcoef", self.init_entcoef)
        if self.reward_signal_steps_per_update is None:
            self.reward_signal_steps_per_update = self.steps_per_update
        _check_positive(path, "reward_signal_steps_per_update", self.reward_signal_steps_per_update)


Hyperparameters = PPOHyperparameters | SACHyperparameters


@dataclass
class NetworkSettings:
    """Network shape: ``hidden_units`` x ``num_layers`` MLP, optional input normalization.

    ``memory`` (recurrent policies) is a valid ML-Agents key that is not supported yet.
    """

    normalize: bool = False
    hidden_units: int = 128
    num_layers: int = 2
    vis_encode_type: str = "simple"
    memory: dict[str, Any] | None = None
    goal_conditioning_type: Literal["hyper", "none"] = "hyper"
    deterministic: bool = False

    def _validate(self, path: str) -> None:
        _check_positive(path, "hidden_units", self.hidden_units)
        _check_positive(path, "num_layers", self.num_layers)
        if self.memory is not None:
            raise _unsupported(f"{path}.memory", "memory (recurrent LSTM policies)")
        if self.vis_encode_type not in get_args(EncoderType):
            raise ConfigError(
                f"{path}.vis_encode_type: {self.vis_encode_type!r} is not a visual encoder; "
                f"use one of {', '.join(get_args(EncoderType))}."
            )


@dataclass
class RewardSignalSettings:
    """What every reward signal has: its rewards are scaled by ``strength`` and discounted with
    ``gamma`` by a value head of their own; ``network_settings`` shapes the signal's networks."""

    gamma: float = 0.99
    strength: float = 1.0
    network_settings: NetworkSettings = field(default_factory=NetworkSettings)

    def _validate(self, path: str) -> None:
        _check_range(path, "gamma", self.gamma, 0.0, 1.0)


@dataclass
class ExtrinsicRewardSettings(RewardSignalSettings):
    """The environment's reward."""


@dataclass
class CuriositySettings(RewardSignalSettings):
    """The curiosity (intrinsic curiosity module) signal; ``encoding_size`` is deprecated (it
    sets ``network_settings.hidden_units`` when ``network_settings`` is not given)."""

    learning_rate: float = 3e-4
    encoding_size: int | None = None

    def _validate(self, path: str) -> None:
        super()._validate(path)
        _check_positive(path, "learning_rate", self.learning_rate)


@dataclass
class RNDSettings(RewardSignalSettings):
    """The random network distillation signal; ``encoding_size`` as for curiosity."""

    learning_rate: float = 1e-4
    encoding_size: int | None = None

    def _validate(self, path: str) -> None:
        super()._validate(path)
        _check_positive(path, "learning_rate", self.learning_rate)


_INTRINSIC_SIGNALS.update({"curiosity": CuriositySettings, "rnd": RNDSettings})


@dataclass
class TrainerSettings:
    """Everything that configures the trainer of one behavior."""

    trainer_type: TrainerType = "ppo"
    hyperparameters: Hyperparameters = field(default_factory=PPOHyperparameters)
    network_settings: NetworkSettings = field(default_factory=NetworkSettings)
    reward_signals: dict[str, RewardSignalSettings] = field(
        default_factory=lambda: {"extrinsic": ExtrinsicRewardSettings()}
    )
    init_path: str | None = None
    keep_checkpoints: int = 5
    even_checkpoints: bool = False
    checkpoint_interval: int = 500000
    max_steps: int = 500000
    time_horizon: int = 64
    summary_freq: int = 50000
    threaded: bool = False
    self_play: dict[str, Any] | None = None
    behavioral_cloning: dict[str, Any] | None = None

    @property
    def extrinsic(self) -> RewardSignalSettings:
        """The extrinsic reward-signal settings (always present after validation)."""
        return self.reward_signals["extrinsic"]

    def _validate(self, path: str) -> None:
        if self.self_play is not None:
            raise _unsupported(f"{path}.self_play", "self-play")
        if self.behavioral_cloning is not None:
            raise _unsupported(f"{path}.behavioral_cloning", "behavioral cloning")
        _check_positive(path, "keep_checkpoints", self.keep_checkpoints)
        _check_positive(path, "checkpoint_interval", self.checkpoint_interval)
        _check_range(path, "max_steps", self.max_steps, 0, math.inf)
        _check_positive(path, "time_horizon", self.time_horizon)
        _check_positive(path, "summary_freq", self.summary_freq)
        if self.even_checkpoints:
            self.checkpoint_interval = max(1, self.max_steps // self.keep_checkpoints)


@dataclass
class EnvironmentSettings:
    """Which environment to train on and how to launch it.

    Exactly one of ``env_path`` (a Unity build; ``gym:<id>`` selects a Gymnasium id), ``scene``
    (a built-in ``unity_gym`` scene) or ``gym_id`` (a Gymnasium id) selects the environment.
    ``base_port`` ``None`` (unlike ML-Agents' fixed 5005) lets every game pick a free port.

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
    num_areas: int = 1
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
    """Run identity and how to treat an existing run directory."""

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
        if self.load_model:  # deprecated ML-Agents spelling of --resume
            self.resume = True
            self.load_model = False
        if self.resume and self.force:
            raise ConfigError(
                f"{path}: resume and force are both set; --resume continues run "
                f"'{self.run_id}', --force overwrites it. Choose one."
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
    """Torch device (``cpu``, ``cuda``, ``cuda:1``, ...); ``None`` picks the CPU."""

    device: str | None = None


@dataclass
class SamplerSettings:
    """A randomized environment parameter: ``sampler_type`` and its parameters."""

    sampler_type: str
    parameters: dict[str, Any]
    seed: int = -1

    def to_env_param(self, default_seed: int) -> dict[str, Any]:
        """The flat dict the environment layer takes (``env_params=``)."""
        seed = self.seed if self.seed != -1 else default_seed
        return {"sampler_type": self.sampler_type, **self.parameters, "seed": seed}


LessonValue = float | SamplerSettings
"""What a lesson sets its parameter to: a number or a sampler."""


@dataclass
class CompletionCriteria:
    """When a lesson is complete (ML-Agents' ``completion_criteria``).

    ``measure`` ``progress`` compares the trainer step of ``behavior`` over its ``max_steps``
    with ``threshold`` (within [0, 1]); ``reward`` compares the mean cumulative reward of the
    behavior's recent episodes (smoothed with ``signal_smoothing``). No lesson ends before
    ``min_lesson_length`` episodes were completed during it. ``require_reset`` resets the
    environment when the lesson ends.
    """

    behavior: str
    measure: Literal["progress", "reward"] = "reward"
    min_lesson_length: int = 0
    signal_smoothing: bool = True
    threshold: float = 0.0
    require_reset: bool = False

    def _validate(self, path: str) -> None:
        _check_range(path, "min_lesson_length", self.min_lesson_length, 0, math.inf)
        if self.measure == "progress":
            _check_range(path, "threshold", self.threshold, 0.0, 1.0)


@dataclass
class Lesson:
    """One lesson of a curriculum: the parameter's ``value`` until ``completion_criteria``
    hold (``None`` only for the last lesson, which never ends)."""

    name: str
    value: LessonValue
    completion_criteria: CompletionCriteria | None = None


@dataclass
class Curriculum:
    """An environment parameter taught in lessons, in order (at least one)."""

    lessons: list[Lesson]


EnvironmentParameter = float | SamplerSettings | Curriculum
"""One ``environment_parameters`` entry (a number or a sampler is a one-lesson curriculum)."""


def parameter_lessons(value: EnvironmentParameter) -> list[Lesson]:
    """The lessons of ``value`` (a plain number or sampler is one lesson without criteria)."""
    if isinstance(value, Curriculum):
        return value.lessons
    return [Lesson(name="", value=value)]


def lesson_seeds(parameters: Mapping[str, EnvironmentParameter], run_seed: int) -> list[list[int]]:
    """The sampler seed of every lesson of every parameter (ML-Agents' rule).

    A sampler with seed -1 gets ``run_seed + offset``, ``offset`` counting such samplers in
    order over parameters and their lessons; explicit seeds stay. Numbers get -1.
    """
    seeds: list[list[int]] = []
    offset = 0
    for value in parameters.values():
        row: list[int] = []
        for lesson in parameter_lessons(value):
            sampler = lesson.value
            if not isinstance(sampler, SamplerSettings):
                row.append(-1)
            elif sampler.seed == -1:
                row.append(run_seed + offset)
                offset += 1
            else:
                row.append(sampler.seed)
        seeds.append(row)
    return seeds


def lesson_env_param(value: LessonValue, seed: int) -> float | dict[str, Any]:
    """A lesson's value in the form the environment layer takes (``env_params=``)."""
    if isinstance(value, SamplerSettings):
        return value.to_env_param(seed)
    return float(value)


def _lesson_value_dict(value: LessonValue) -> float | dict[str, Any]:
    if isinstance(value, SamplerSettings):
        return {
            "sampler_type": value.sampler_type,
            "sampler_parameters": {**value.parameters, "seed": value.seed},
        }
    return float(value)


def _parameter_dict(value: EnvironmentParameter) -> Any:
    if not isinstance(value, Curriculum):
        return _lesson_value_dict(value)
    lessons: list[dict[str, Any]] = []
    for lesson in value.lessons:
        entry: dict[str, Any] = {"name": lesson.name, "value": _lesson_value_dict(lesson.value)}
        if lesson.completion_criteria is not None:
            entry["completion_criteria"] = dataclasses.asdict(lesson.completion_criteria)
        lessons.append(entry)
    return {"curriculum": lessons}


@dataclass
class RunOptions:
    """A complete, validated training configuration (YAML merged with command-line flags)."""

    behaviors: dict[str, TrainerSettings] = field(default_factory=dict)
    default_settings: TrainerSettings | None = None
    env_settings: EnvironmentSettings = field(default_factory=EnvironmentSettings)
    engine_settings: EngineSettings = field(default_factory=EngineSettings)
    environment_parameters: dict[str, EnvironmentParameter] = field(default_factory=dict)
    checkpoint_settings: CheckpointSettings = field(default_factory=CheckpointSettings)
    torch_settings: TorchSettings = field(default_factory=TorchSettings)
    debug: bool = False
    # The raw ``default_settings`` mapping, merged under every behavior that is resolved later.
    default_settings_raw: dict[str, Any] | None = field(default=None, repr=False)

    def trainer_settings_for(self, behavior_name: str) -> TrainerSettings:
        """Settings of ``behavior_name``: its entry, else ``default_settings``, else defaults.

        Raises:
            ConfigError: the config lists behaviors, none is ``behavior_name`` and there is no
                ``default_settings`` block.
        """
        if behavior_name in self.behaviors:
            return self.behaviors[behavior_name]
        if self.default_settings is not None:
            settings = copy.deepcopy(self.default_settings)
        elif self.behaviors:
            raise ConfigError(
                f"behaviors: the environment's behavior {behavior_name!r} is not configured "
                f"(configured: {', '.join(sorted(self.behaviors))}); add behaviors."
                f"{behavior_name} or a default_settings block."
            )
        else:
            logger.warning(
                "Behavior %s is not in the configuration; using the default PPO settings.",
                behavior_name,
            )
            settings = TrainerSettings()
            settings._validate(f"behaviors.{behavior_name}")
        self.behaviors[behavior_name] = settings
        return settings

    def env_params(self, run_seed: int | None = None) -> dict[str, float | dict[str, Any]]:
        """``environment_parameters`` in the form the environment layer takes (``env_params=``).

        Curricula give their first lesson (:mod:`trainers.curriculum` follows later lessons).
        Samplers without a seed get ``run_seed`` (default ``env_settings.seed``) plus their
        offset among such samplers (:func:`lesson_seeds`).
        """
        seed = self.env_settings.seed if run_seed is None else run_seed
        seeds = lesson_seeds(self.environment_parameters, seed)
        return {
            name: lesson_env_param(parameter_lessons(value)[0].value, row[0])
            for (name, value), row in zip(self.environment_parameters.items(), seeds, strict=True)
        }

    def to_dict(self) -> dict[str, Any]:
        """A plain, YAML-serializable dict of the resolved configuration."""
        data = dataclasses.asdict(self)
        data.pop("default_settings_raw", None)
        if self.default_settings is None:
            data.pop("default_settings")
        data["environment_parameters"] = {
            name: _parameter_dict(value) for name, value in self.environment_parameters.items()
        }
        return data

    def to_yaml(self) -> str:
        """The resolved configuration as YAML (what ``configuration.yaml`` holds)."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

_SECTION_CLASSES: dict[str, type] = {
    "env_settings": EnvironmentSettings,
    "engine_settings": EngineSettings,
    "checkpoint_settings": CheckpointSettings,
    "torch_settings": TorchSettings,
}
_TOP_LEVEL_KEYS = (
    "behaviors",
    "default_settings",
    "env_settings",
    "engine_settings",
    "environment_parameters",
    "checkpoint_settings",
    "torch_settings",
    "debug",
)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML configuration file into a dict (an empty file gives ``{}``).

    Raises:
        ConfigError: the file is missing, unreadable, not YAML or not a mapping.
    """
    config_path = Path(path)
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"config file {config_path.resolve()} does not exist; check the path."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {config_path} could not be read: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {config_path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"config file {config_path}: the top level must be a mapping with a 'behaviors' "
            f"block, got {type(data).__name__}."
        )
    return dict(data)


def parse_run_options(data: Mapping[str, Any]) -> RunOptions:
    """Validate a configuration dict (YAML content with CLI overrides applied).

    Raises:
        ConfigError: on any unknown key, wrong type or out-of-range value.
        UnsupportedFeatureError: on a valid ML-Agents feature not implemented here.
    """
    for key, value in data.items():
        if key not in _TOP_LEVEL_KEYS:
            if isinstance(value, Mapping) and ("trainer_type" in value or "trainer" in value):
                raise ConfigError(
                    f"{key}: unknown top-level key; this looks like a behavior in the old "
                    f"(pre-1.0) format: move it under 'behaviors:' (behaviors.{key})."
                )
            raise ConfigError(_unknown_key_message("", key, _TOP_LEVEL_KEYS))

    options = RunOptions()
    for section, cls in _SECTION_CLASSES.items():
        if data.get(section) is not None:
            setattr(options, section, _structure(cls, data[section], section))
        else:
            _validate(getattr(options, section), section)
    if "debug" in data:
        options.debug = _convert(bool, data["debug"], "debug")

    default_raw = data.get("default_settings")
    if default_raw is not None:
        if not isinstance(default_raw, Mapping):
            raise ConfigError(
                "default_settings: expected a mapping of trainer settings, got "
                f"{type(default_raw).__name__}."
            )
        options.default_settings_raw = dict(default_raw)
        options.default_settings = _parse_trainer_settings(default_raw, "default_settings", None)

    behaviors = data.get("behaviors") or {}
    if not isinstance(behaviors, Mapping):
        raise ConfigError(
            f"behaviors: expected a mapping of behavior name to settings, got "
            f"{type(behaviors).__name__}."
        )
    for name, raw in behaviors.items():
        path = f"behaviors.{name}"
        options.behaviors[str(name)] = _parse_trainer_settings(
            raw or {}, path, options.default_settings_raw
        )

    options.environment_parameters = _parse_environment_parameters(
        data.get("environment_parameters")
    )
    return options


def _parse_trainer_settings(
    raw: Any, path: str, defaults: Mapping[str, Any] | None
) -> TrainerSettings:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping of trainer settings, got {raw!r}.")
    merged: dict[str, Any] = copy.deepcopy(dict(defaults)) if defaults else {}
    _deep_update(merged, raw)
    merged.pop("framework", None)  # deprecated ML-Agents key, accepted and ignored

    trainer_type = merged.get("trainer_type", "ppo")
    if trainer_type in _UNSUPPORTED_TRAINERS:
        raise _unsupported(f"{path}.trainer_type", _UNSUPPORTED_TRAINERS[trainer_type])
    if trainer_type not in get_args(TrainerType):
        raise ConfigError(
            f"{path}.trainer_type: {trainer_type!r} is not a trainer type; use 'ppo' or 'sac'."
        )
    hyper_cls = PPOHyperparameters if trainer_type == "ppo" else SACHyperparameters
    hyper_raw = merged.pop("hyperparameters", None)
    _reject_other_trainer_keys(hyper_raw, hyper_cls, trainer_type, f"{path}.hyperparameters")
    signals_raw = merged.pop("reward_signals", None)
    settings = _structure(TrainerSettings, merged, path)
    settings.hyperparameters = _structure(hyper_cls, hyper_raw, f"{path}.hyperparameters")
    settings.reward_signals = _parse_reward_signals(
        signals_raw, f"{path}.reward_signals", trainer_type
    )
    return settings


def _reject_other_trainer_keys(raw: Any, cls: type, trainer_type: str, path: str) -> None:
    """Explain keys that belong to the other trainer type (a clearer error than 'unknown')."""
    if not isinstance(raw, Mapping):
        return
    own = {f.name for f in dataclasses.fields(cls)}
    other_cls, other_type = (
        (SACHyperparameters, "sac") if trainer_type == "ppo" else (PPOHyperparameters, "ppo")
    )
    other = {f.name for f in dataclasses.fields(other_cls)}
    for key in raw:
        if key not in own and key in other:
            raise ConfigError(
                f"{path}.{key}: not a {trainer_type} hyperparameter (it is a {other_type} one); "
                f"remove it or set trainer_type: {other_type}."
            )


def _parse_reward_signals(
    raw: Any, path: str, trainer_type: str = "ppo"
) -> dict[str, RewardSignalSettings]:
    if raw is None:
        return {"extrinsic": ExtrinsicRewardSettings()}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping of reward-signal name to settings.")
    signals: dict[str, RewardSignalSettings] = {}
    for name, value in raw.items():
        where = f"{path}.{name}"
        if name in _UNSUPPORTED_REWARD_SIGNALS:
            raise _unsupported(where, _UNSUPPORTED_REWARD_SIGNALS[name])
        if name == "extrinsic":
            signals[name] = _structure(ExtrinsicRewardSettings, value, where)
            continue
        cls = _INTRINSIC_SIGNALS.get(str(name))
        if cls is None:
            valid = ["extrinsic", *_INTRINSIC_SIGNALS, *_UNSUPPORTED_REWARD_SIGNALS]
            raise ConfigError(_unknown_key_message(path, str(name), valid))
        if trainer_type != "ppo":
            raise UnsupportedFeatureError(
                f"{where}: the {name} reward signal is supported by the ppo trainer only, not by "
                f"{trainer_type} yet; remove it or set trainer_type: ppo."
            )
        signal = _structure(cls, value, where)
        encoding_size = getattr(signal, "encoding_size", None)
        if encoding_size is not None:
            logger.warning(
                "%s.encoding_size is deprecated (as in ML-Agents); use network_settings.", where
            )
            if not (isinstance(value, Mapping) and "network_settings" in value):
                _check_positive(where, "encoding_size", encoding_size)
                signal.network_settings.hidden_units = int(encoding_size)
        signals[name] = signal
    if "extrinsic" not in signals:
        raise ConfigError(
            f"{path}: no 'extrinsic' reward signal; add "
            "'extrinsic: {gamma: 0.99, strength: 1.0}' (use strength: 0 to learn from the "
            "other signals only)."
        )
    return signals


def _parse_environment_parameters(raw: Any) -> dict[str, EnvironmentParameter]:
    path = "environment_parameters"
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping of parameter name to value or sampler.")
    params: dict[str, EnvironmentParameter] = {}
    for name, value in raw.items():
        key_path = f"{path}.{name}"
        if isinstance(value, Mapping) and "curriculum" in value:
            params[str(name)] = _parse_curriculum(value, key_path)
        else:
            params[str(name)] = _parse_lesson_value(value, key_path, allow_curriculum=True)
    return params


def _parse_lesson_value(value: Any, path: str, *, allow_curriculum: bool) -> LessonValue:
    """A number or a sampler mapping (a ``constant`` sampler becomes its number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Mapping)):
        also = " or a {curriculum: [...]}" if allow_curriculum else ""
        raise ConfigError(
            f"{path}: expected a number or a sampler {{sampler_type, sampler_parameters}}"
            f"{also}, got {value!r}."
        )
    if isinstance(value, (int, float)):
        return float(_as_number(value, path, "a number"))
    return _parse_sampler(value, path, allow_curriculum=allow_curriculum)


def _parse_curriculum(value: Mapping[str, Any], path: str) -> Curriculum:
    for key in value:
        if key != "curriculum":
            raise ConfigError(_unknown_key_message(path, str(key), ("curriculum",)))
    raw_lessons = value["curriculum"]
    path = f"{path}.curriculum"
    if not isinstance(raw_lessons, list) or not raw_lessons:
        raise ConfigError(
            f"{path}: expected a non-empty list of lessons {{name, value, completion_criteria}}, "
            f"got {raw_lessons!r}."
        )
    lessons = [_parse_lesson(raw, f"{path}[{i}]") for i, raw in enumerate(raw_lessons)]
    for index, lesson in enumerate(lessons[:-1]):
        if lesson.completion_criteria is None:
            raise ConfigError(
                f"{path}[{index}]: lesson {lesson.name!r} has no completion_criteria; every "
                "lesson but the last needs one (say when it ends)."
            )
    last = lessons[-1]
    if last.completion_criteria is not None:
        logger.warning(
            "%s[%d]: the completion_criteria of the last lesson %r are ignored (the last "
            "lesson never ends).",
            path,
            len(lessons) - 1,
            last.name,
        )
    return Curriculum(lessons)


_LESSON_KEYS = ("name", "value", "completion_criteria")


def _parse_lesson(raw: Any, path: str) -> Lesson:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a lesson {{name, value, completion_criteria}}.")
    for key in raw:
        if key not in _LESSON_KEYS:
            raise ConfigError(_unknown_key_message(path, str(key), _LESSON_KEYS))
    for key in ("name", "value"):
        if raw.get(key) is None:
            raise ConfigError(f"{path}.{key}: missing; every lesson needs a name and a value.")
    name = _convert(str, raw["name"], f"{path}.name")
    value = _parse_lesson_value(raw["value"], f"{path}.value", allow_curriculum=False)
    criteria_raw = raw.get("completion_criteria")
    criteria = None
    if criteria_raw is not None:
        criteria_path = f"{path}.completion_criteria"
        if not isinstance(criteria_raw, Mapping) or criteria_raw.get("behavior") is None:
            raise ConfigError(
                f"{criteria_path}.behavior: missing; name the behavior whose progress or "
                "reward ends the lesson."
            )
        criteria = _structure(CompletionCriteria, criteria_raw, criteria_path)
    return Lesson(name=name, value=value, completion_criteria=criteria)


def _parse_sampler(
    value: Mapping[str, Any], path: str, *, allow_curriculum: bool = False
) -> LessonValue:
    valid = ("sampler_type", "sampler_parameters", *(("curriculum",) if allow_curriculum else ()))
    for key in value:
        if key not in ("sampler_type", "sampler_parameters"):
            raise ConfigError(_unknown_key_message(path, key, valid))
    sampler_type = value.get("sampler_type")
    if sampler_type not in _SAMPLER_PARAMETERS:
        raise ConfigError(
            f"{path}.sampler_type: {sampler_type!r} is not a sampler; use one of "
            f"{', '.join(_SAMPLER_PARAMETERS)}."
        )
    raw_params = value.get("sampler_parameters")
    if not isinstance(raw_params, Mapping):
        raise ConfigError(f"{path}.sampler_parameters: missing; give the sampler's parameters.")
    expected = _SAMPLER_PARAMETERS[sampler_type]
    params: dict[str, Any] = {}
    seed = -1
    for key, param in raw_params.items():
        key_path = f"{path}.sampler_parameters.{key}"
        if key == "seed":
            seed = _convert(int, param, key_path)
        elif key not in expected:
            raise ConfigError(
                _unknown_key_message(f"{path}.sampler_parameters", key, (*expected, "seed"))
            )
        elif key == "intervals":
            params[key] = _parse_intervals(param, key_path)
        else:
            params[key] = _convert(float, param, key_path)
    missing = [name for name in expected if name not in params]
    if missing and sampler_type != "uniform":
        raise ConfigError(f"{path}.sampler_parameters: missing {', '.join(missing)}.")
    if sampler_type == "uniform":
        if "min_value" not in params:
            raise ConfigError(f"{path}.sampler_parameters: missing min_value.")
        params.setdefault("max_value", 1.0)
        if params["min_value"] > params["max_value"]:
            raise ConfigError(
                f"{path}.sampler_parameters: min_value {params['min_value']} is greater than "
                f"max_value {params['max_value']}."
            )
    if sampler_type == "constant":
        return float(params["value"])
    return SamplerSettings(sampler_type, params, seed)


def _parse_intervals(value: Any, path: str) -> list[list[float]]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path}: expected a list of [min, max] pairs.")
    intervals: list[list[float]] = []
    for index, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(f"{path}[{index}]: expected a [min, max] pair, got {pair!r}.")
        low = _convert(float, pair[0], f"{path}[{index}]")
        high = _convert(float, pair[1], f"{path}[{index}]")
        if low > high:
            raise ConfigError(f"{path}[{index}]: min {low} is greater than max {high}.")
        intervals.append([low, high])
    return intervals


# ---------------------------------------------------------------------------------------------
# Generic structuring helpers
# ---------------------------------------------------------------------------------------------


def _structure(cls: type, data: Any, path: str) -> Any:
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys and wrong types."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of settings, got {data!r}.")
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if not f.name.endswith("_raw")]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            raise ConfigError(_unknown_key_message(path, str(key), names))
        kwargs[key] = _convert(hints[key], value, _join(path, key))
    instance = cls(**kwargs)
    _validate(instance, path)
    return instance


def _validate(instance: Any, path: str) -> None:
    validate = getattr(instance, "_validate", None)
    if validate is not None:
        validate(path)


def _convert(annotation: Any, value: Any, path: str) -> Any:
    """Convert a YAML value to ``annotation``; raise a ConfigError naming ``path`` otherwise."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if value is None:
            if len(options) < len(get_args(annotation)):
                return None
            raise ConfigError(f"{path}: a value is required.")
        if len(options) == 1:
            return _convert(options[0], value, path)
        raise ConfigError(f"{path}: cannot be set directly here.")
    if origin is Literal:
        choices = get_args(annotation)
        if value not in choices:
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"{path}: {value!r} is not valid; use one of {', '.join(map(str, choices))}{hint}."
            )
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {value!r}.")
        (item_type,) = get_args(annotation)
        return [_convert(item_type, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}.")
        return dict(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{path}: expected true or false, got {value!r}.")
    if annotation is int:
        number = _as_number(value, path, "an integer")
        if not float(number).is_integer():
            raise ConfigError(f"{path}: expected an integer, got {value!r}.")
        return int(number)
    if annotation is float:
        return float(_as_number(value, path, "a number"))
    if annotation is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{path}: expected a string, got {value!r}.")
    if dataclasses.is_dataclass(annotation):
        return _structure(annotation, value, path)  # type: ignore[arg-type]
    return value


def _as_number(value: Any, path: str, what: str) -> float | int:
    if isinstance(value, bool):
        raise ConfigError(f"{path}: expected {what}, got {value!r}.")
    if isinstance(value, (int, float)):
        number: float | int = value
    elif isinstance(value, str):
        try:
            number = float(value)  # PyYAML reads '3e-4' (no dot) as a string
        except ValueError:
            raise ConfigError(f"{path}: expected {what}, got {value!r}.") from None
    else:
        raise ConfigError(f"{path}: expected {what}, got {value!r}.")
    if isinstance(number, float) and not math.isfinite(number):
        raise ConfigError(f"{path}: expected a finite number, got {value!r}.")
    return number


def _check_positive(path: str, key: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{path}.{key}: must be greater than 0, got {value}.")


def _check_range(path: str, key: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        upper = "" if math.isinf(high) else f" and {high}"
        bound = f"at least {low}" if math.isinf(high) else f"between {low}{upper}"
        raise ConfigError(f"{path}.{key}: must be {bound}, got {value}.")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _unknown_key_message(path: str, key: str, valid: Any) -> str:
    valid_names = [str(name) for name in valid]
    close = difflib.get_close_matches(key, valid_names, n=1, cutoff=0.6)
    if not close:
        normalized = {name.replace("_", ""): name for name in valid_names}
        if key.replace("_", "").lower() in normalized:
            close = [normalized[key.replace("_", "").lower()]]
    hint = f"did you mean {close[0]}?" if close else f"valid keys: {', '.join(valid_names)}."
    return f"{_join(path, key)}: unknown key; {hint}"


def _deep_update(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
