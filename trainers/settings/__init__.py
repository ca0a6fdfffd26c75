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
with its Ray options (where games run, :class:`EnvironmentSettings`). With none of
``env_path``, ``scene`` and ``gym_id`` the game is the Unity Editor, as in ML-Agents.

Every error is a :class:`ConfigError` whose message starts with the dotted path of the offending
key (``behaviors.3DBall.hyperparameters.batchsize: unknown key; did you mean batch_size?``).
Valid ML-Agents features that these trainers do not implement yet raise
:class:`UnsupportedFeatureError` (a ``ConfigError``) saying so.

The settings live in one module per concern: :mod:`.errors`, :mod:`.structuring`,
:mod:`.network`, :mod:`.reward_signals`, :mod:`.trainer`, :mod:`.environment`,
:mod:`.parameters` and :mod:`.run_options`.
"""

from __future__ import annotations

from trainers.settings.environment import (
    BackendType,
    CheckpointSettings,
    EngineSettings,
    EnvironmentSettings,
    Precision,
    TorchSettings,
)
from trainers.settings.errors import ConfigError, UnsupportedFeatureError
from trainers.settings.network import EncoderType, MemorySettings, NetworkSettings
from trainers.settings.parameters import (
    CompletionCriteria,
    Curriculum,
    EnvironmentParameter,
    Lesson,
    LessonValue,
    SamplerSettings,
    lesson_env_param,
    lesson_seeds,
    parameter_lessons,
)
from trainers.settings.reward_signals import (
    BehavioralCloningSettings,
    CuriositySettings,
    ExtrinsicRewardSettings,
    GAILSettings,
    RewardSignalSettings,
    RNDSettings,
)
from trainers.settings.run_options import (
    COMPANION_SUFFIX,
    MLAGENTS_KEYS,
    RunOptions,
    companion_path,
    load_config_file,
    parse_run_options,
)
from trainers.settings.trainer import (
    Hyperparameters,
    PPOHyperparameters,
    SACHyperparameters,
    ScheduleType,
    SelfPlaySettings,
    TrainerSettings,
    TrainerType,
)

__all__ = [
    "COMPANION_SUFFIX",
    "MLAGENTS_KEYS",
    "BackendType",
    "BehavioralCloningSettings",
    "CheckpointSettings",
    "CompletionCriteria",
    "ConfigError",
    "CuriositySettings",
    "Curriculum",
    "EncoderType",
    "EngineSettings",
    "EnvironmentParameter",
    "EnvironmentSettings",
    "ExtrinsicRewardSettings",
    "GAILSettings",
    "Hyperparameters",
    "Lesson",
    "LessonValue",
    "MemorySettings",
    "NetworkSettings",
    "PPOHyperparameters",
    "Precision",
    "RNDSettings",
    "RewardSignalSettings",
    "RunOptions",
    "SACHyperparameters",
    "SamplerSettings",
    "ScheduleType",
    "SelfPlaySettings",
    "TorchSettings",
    "TrainerSettings",
    "TrainerType",
    "UnsupportedFeatureError",
    "companion_path",
    "lesson_env_param",
    "lesson_seeds",
    "load_config_file",
    "parameter_lessons",
    "parse_run_options",
]
