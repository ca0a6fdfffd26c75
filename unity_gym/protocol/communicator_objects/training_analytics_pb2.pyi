from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class TrainingEnvironmentInitialized(_message.Message):
    __slots__ = ("mlagents_version", "mlagents_envs_version", "python_version", "torch_version", "torch_device_type", "num_envs", "num_environment_parameters", "run_options")
    MLAGENTS_VERSION_FIELD_NUMBER: _ClassVar[int]
    MLAGENTS_ENVS_VERSION_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    TORCH_VERSION_FIELD_NUMBER: _ClassVar[int]
    TORCH_DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_ENVS_FIELD_NUMBER: _ClassVar[int]
    NUM_ENVIRONMENT_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RUN_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    mlagents_version: str
    mlagents_envs_version: str
    python_version: str
    torch_version: str
    torch_device_type: str
    num_envs: int
    num_environment_parameters: int
    run_options: str
    def __init__(self, mlagents_version: _Optional[str] = ..., mlagents_envs_version: _Optional[str] = ..., python_version: _Optional[str] = ..., torch_version: _Optional[str] = ..., torch_device_type: _Optional[str] = ..., num_envs: _Optional[int] = ..., num_environment_parameters: _Optional[int] = ..., run_options: _Optional[str] = ...) -> None: ...

class TrainingBehaviorInitialized(_message.Message):
    __slots__ = ("behavior_name", "trainer_type", "extrinsic_reward_enabled", "gail_reward_enabled", "curiosity_reward_enabled", "rnd_reward_enabled", "behavioral_cloning_enabled", "recurrent_enabled", "visual_encoder", "num_network_layers", "num_network_hidden_units", "trainer_threaded", "self_play_enabled", "curriculum_enabled", "config")
    BEHAVIOR_NAME_FIELD_NUMBER: _ClassVar[int]
    TRAINER_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXTRINSIC_REWARD_ENABLED_FIELD_NUMBER: _ClassVar[int]
    GAIL_REWARD_ENABLED_FIELD_NUMBER: _ClassVar[int]
    CURIOSITY_REWARD_ENABLED_FIELD_NUMBER: _ClassVar[int]
    RND_REWARD_ENABLED_FIELD_NUMBER: _ClassVar[int]
    BEHAVIORAL_CLONING_ENABLED_FIELD_NUMBER: _ClassVar[int]
    RECURRENT_ENABLED_FIELD_NUMBER: _ClassVar[int]
    VISUAL_ENCODER_FIELD_NUMBER: _ClassVar[int]
    NUM_NETWORK_LAYERS_FIELD_NUMBER: _ClassVar[int]
    NUM_NETWORK_HIDDEN_UNITS_FIELD_NUMBER: _ClassVar[int]
    TRAINER_THREADED_FIELD_NUMBER: _ClassVar[int]
    SELF_PLAY_ENABLED_FIELD_NUMBER: _ClassVar[int]
    CURRICULUM_ENABLED_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    behavior_name: str
    trainer_type: str
    extrinsic_reward_enabled: bool
    gail_reward_enabled: bool
    curiosity_reward_enabled: bool
    rnd_reward_enabled: bool
    behavioral_cloning_enabled: bool
    recurrent_enabled: bool
    visual_encoder: str
    num_network_layers: int
    num_network_hidden_units: int
    trainer_threaded: bool
    self_play_enabled: bool
    curriculum_enabled: bool
    config: str
    def __init__(self, behavior_name: _Optional[str] = ..., trainer_type: _Optional[str] = ..., extrinsic_reward_enabled: _Optional[bool] = ..., gail_reward_enabled: _Optional[bool] = ..., curiosity_reward_enabled: _Optional[bool] = ..., rnd_reward_enabled: _Optional[bool] = ..., behavioral_cloning_enabled: _Optional[bool] = ..., recurrent_enabled: _Optional[bool] = ..., visual_encoder: _Optional[str] = ..., num_network_layers: _Optional[int] = ..., num_network_hidden_units: _Optional[int] = ..., trainer_threaded: _Optional[bool] = ..., self_play_enabled: _Optional[bool] = ..., curriculum_enabled: _Optional[bool] = ..., config: _Optional[str] = ...) -> None: ...
