"""The whole configuration file: :class:`RunOptions`, :func:`load_config_file` and
:func:`parse_run_options`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainers.settings.environment import (
    CheckpointSettings,
    EngineSettings,
    EnvironmentSettings,
    TorchSettings,
)
from trainers.settings.errors import ConfigError, _unsupported
from trainers.settings.parameters import (
    EnvironmentParameter,
    _parameter_dict,
    _parse_environment_parameters,
    lesson_env_param,
    lesson_seeds,
    parameter_lessons,
)
from trainers.settings.reward_signals import (
    _INTRINSIC_SIGNALS,
    ExtrinsicRewardSettings,
    RewardSignalSettings,
)
from trainers.settings.structuring import (
    _check_positive,
    _convert,
    _deep_update,
    _structure,
    _unknown_key_message,
    _validate,
)
from trainers.settings.trainer import (
    PPOHyperparameters,
    SACHyperparameters,
    TrainerSettings,
)

__all__ = [
    "COMPANION_SUFFIX",
    "MLAGENTS_KEYS",
    "RunOptions",
    "companion_path",
    "load_config_file",
    "parse_run_options",
]

logger = logging.getLogger("trainers.settings")

_UNSUPPORTED_TRAINERS: dict[str, str] = {}


_UNSUPPORTED_REWARD_SIGNALS: dict[str, str] = {}


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
            # mlagents-learn (``RunOptions.behaviors`` is a defaultdict of ``TrainerSettings``)
            # trains an unlisted behavior with the default PPO settings when the config has no
            # ``behaviors``; built as a parsed ``{}`` entry, so that every nested default
            # (beta/epsilon schedules, ...) is filled in as for a written one.
            settings = _parse_trainer_settings({}, f"behaviors.{behavior_name}", None)
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
        """The whole resolved configuration as YAML, extensions of this project included."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def split_for_mlagents(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The resolved configuration as ``(official, companion)`` dicts.

        ``official`` is what ``mlagents-learn`` 1.1.0 reads: its loader
        (``RunOptions.from_dict``, and ``from_argparse`` for a file given on its command line)
        rejects unknown top-level keys and unknown keys in ``env_settings``,
        ``engine_settings`` and ``checkpoint_settings``, and structures ``base_port`` as an
        ``int`` and refuses ``num_envs > 1`` without ``env_path`` (its ``EnvironmentSettings``
        validator). So ``official`` holds ``default_settings`` as written (the behaviors are
        resolved already) and only the keys of :data:`MLAGENTS_KEYS`, with
        ``base_port`` ``None`` written as ML-Agents' default 5005, ``num_areas`` ``None`` as
        ML-Agents' default 1 and ``num_envs`` written as 1 when no ``env_path`` is set.

        ``companion`` holds, per section, what ``official`` cannot: this project's keys
        (``env_settings.scene``, ``gym_id``, ``backend``, ``ray_*``,
        ``torch_settings.precision``, POCA's ``shared_critic``, which ML-Agents' ``POCASettings``
        lacks, ...) and the real values of the keys rewritten above.
        Merging ``companion`` over ``official`` gives :meth:`to_dict` back.
        """
        official = self.to_dict()
        if self.default_settings_raw is not None:
            # As written: mlagents-learn merges default_settings under every behavior before
            # structuring it, so a resolved block (every PPO hyperparameter) would clash with
            # the already resolved behaviors of another trainer_type.
            official["default_settings"] = copy.deepcopy(self.default_settings_raw)
        companion: dict[str, Any] = {}
        for section, keys in MLAGENTS_KEYS.items():
            values = official[section]
            for key in [key for key in values if key not in keys]:
                companion.setdefault(section, {})[key] = values.pop(key)
        for name, behavior in official["behaviors"].items():
            hyper = behavior.get("hyperparameters") or {}
            if behavior.get("trainer_type") == "poca" and "shared_critic" in hyper:
                # ML-Agents' POCASettings has no shared_critic (this project's POCA ignores it)
                companion.setdefault("behaviors", {})[name] = {
                    "hyperparameters": {"shared_critic": hyper.pop("shared_critic")}
                }
        env = official["env_settings"]
        if env["base_port"] is None:
            companion.setdefault("env_settings", {})["base_port"] = None
            env["base_port"] = _MLAGENTS_BASE_PORT
        if env["num_areas"] is None:
            companion.setdefault("env_settings", {})["num_areas"] = None
            env["num_areas"] = 1
        if env["env_path"] is None and env["num_envs"] > 1:
            companion.setdefault("env_settings", {})["num_envs"] = env["num_envs"]
            env["num_envs"] = 1
        return official, companion

    def configuration_files(self) -> tuple[str, str]:
        """The texts of ``configuration.yaml`` and of its companion (:meth:`split_for_mlagents`).

        ``configuration.yaml`` loads in ``mlagents-learn`` 1.1.0; ``unity-train`` reads both
        back through :func:`load_config_file` (the companion lies beside the file, named by
        :func:`companion_path`).
        """
        official, companion = self.split_for_mlagents()
        header = (
            "# unity-train settings that mlagents-learn's configuration.yaml cannot hold.\n"
            "# unity-train merges them over the configuration file beside this one whenever it\n"
            "# reads that file (e.g. unity-train results/<run-id>/configuration.yaml --resume).\n"
        )
        return (
            yaml.safe_dump(official, sort_keys=False),
            header + yaml.safe_dump(companion, sort_keys=False),
        )


_MLAGENTS_BASE_PORT = 5005
"""``mlagents-learn``'s default ``--base-port`` (``UnityEnvironment.BASE_ENVIRONMENT_PORT``)."""

MLAGENTS_KEYS: dict[str, tuple[str, ...]] = {
    "env_settings": (
        "env_path",
        "env_args",
        "base_port",
        "num_envs",
        "num_areas",
        "timeout_wait",
        "seed",
        "max_lifetime_restarts",
        "restarts_rate_limit_n",
        "restarts_rate_limit_period_s",
    ),
    "engine_settings": (
        "width",
        "height",
        "quality_level",
        "time_scale",
        "target_frame_rate",
        "capture_frame_rate",
        "no_graphics",
        "no_graphics_monitor",
    ),
    "checkpoint_settings": (
        "run_id",
        "initialize_from",
        "load_model",
        "resume",
        "force",
        "train_model",
        "inference",
        "results_dir",
    ),
    "torch_settings": ("device",),
}
"""The keys of each section that ``mlagents-learn`` 1.1.0 knows (its ``settings.py`` attrs
classes ``EnvironmentSettings``, ``EngineSettings``, ``CheckpointSettings``, ``TorchSettings``)."""

COMPANION_SUFFIX = ".unity-train.yaml"
"""The companion of ``<name>.yaml`` is ``<name>.unity-train.yaml`` in the same folder."""


def companion_path(config_path: str | Path) -> Path:
    """The companion file of ``config_path`` (``configuration.yaml`` ->
    ``configuration.unity-train.yaml``), which may not exist."""
    path = Path(config_path)
    return path.with_name(path.stem + COMPANION_SUFFIX)


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


MAX_CONFIG_BYTES = 4 * 2**20
"""Largest configuration file read (4 MiB; real ones are a few KiB)."""


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML configuration file into a dict (an empty file gives ``{}``).

    When the file's companion (:func:`companion_path`, written by ``unity-train`` beside every
    ``configuration.yaml``) exists, its sections are merged over the file's: this gives back
    what ``configuration.yaml`` cannot hold for ``mlagents-learn`` (see
    :meth:`RunOptions.split_for_mlagents`).

    Raises:
        ConfigError: the file (or its companion) is missing, unreadable, not YAML or not a
            mapping.
    """
    data = _read_yaml_mapping(Path(path))
    companion = companion_path(path)
    if companion.is_file() and companion.resolve() != Path(path).resolve():
        extra = _read_yaml_mapping(companion)
        for section, values in extra.items():
            if not isinstance(values, Mapping):
                raise ConfigError(
                    f"{companion}: {section}: expected a mapping of settings, got {values!r}; "
                    "delete the file or fix it."
                )
            if data.get(section) is None:
                data[section] = {}
            if not isinstance(data[section], Mapping):
                raise ConfigError(f"{path}: {section}: expected a mapping, got {data[section]!r}.")
            merged = copy.deepcopy(dict(data[section]))
            _deep_update(merged, values)
            data[section] = merged
    return data


def _read_yaml_mapping(config_path: Path) -> dict[str, Any]:
    """The mapping in the YAML file at ``config_path`` (``{}`` for an empty file).

    Read with ``yaml.safe_load`` (no Python objects are built) and only up to
    :data:`MAX_CONFIG_BYTES`: configs come from other people too.
    """
    try:
        size = config_path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {config_path} is {size} bytes, over the {MAX_CONFIG_BYTES}-byte "
                "limit of a trainer configuration (MAX_CONFIG_BYTES); is it the right file?"
            )
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
    from trainers.plugins import BUILTIN_TRAINER_TYPES, hyperparameters_class

    if not isinstance(trainer_type, str):
        raise ConfigError(f"{path}.trainer_type: expected a name, got {trainer_type!r}.")
    # built-in types first, then the unity_train.trainer_type plugins (trainers.plugins)
    hyper_cls = hyperparameters_class(trainer_type, f"{path}.trainer_type")
    hyper_raw = merged.pop("hyperparameters", None)
    if trainer_type in BUILTIN_TRAINER_TYPES:
        _reject_other_trainer_keys(hyper_raw, hyper_cls, trainer_type, f"{path}.hyperparameters")
    signals_raw = merged.pop("reward_signals", None)
    settings = _structure(TrainerSettings, merged, path)
    settings.hyperparameters = _structure(hyper_cls, hyper_raw, f"{path}.hyperparameters")
    settings.reward_signals = _parse_reward_signals(signals_raw, f"{path}.reward_signals")
    return settings


def _reject_other_trainer_keys(raw: Any, cls: type, trainer_type: str, path: str) -> None:
    """Explain keys that belong to the other trainer type (a clearer error than 'unknown')."""
    if not isinstance(raw, Mapping):
        return
    own = {f.name for f in dataclasses.fields(cls)}
    other_cls, other_type = (
        (SACHyperparameters, "sac") if trainer_type != "sac" else (PPOHyperparameters, "ppo")
    )
    other = {f.name for f in dataclasses.fields(other_cls)}
    for key in raw:
        if key not in own and key in other:
            raise ConfigError(
                f"{path}.{key}: not a {trainer_type} hyperparameter (it is a {other_type} one); "
                f"remove it or set trainer_type: {other_type}."
            )


def _parse_reward_signals(raw: Any, path: str) -> dict[str, RewardSignalSettings]:
    """The signals as configured; without an ``extrinsic`` entry the environment's rewards are
    not learned from (ML-Agents 1.1.0 accepts such configs, e.g. GAIL alone: its
    ``RewardSignalSettings.structure`` takes whichever signals are listed and its trainers
    create providers for those only). The trainers then keep an extrinsic head of strength 0
    (:attr:`TrainerSettings.extrinsic`)."""
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
    return signals
