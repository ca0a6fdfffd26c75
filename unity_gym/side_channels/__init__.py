"""Side channels: typed messages multiplexed beside the RL data of each exchange (spec §5).

Class and method names match ``mlagents_envs.side_channel`` so code migrates by changing imports.

What lives here: the message reader and writer (``messages``), the channel base classes and the
manager that frames them (``side_channel``, ``side_channel_manager``), and the standard channels
(engine configuration, environment parameters, float properties, raw bytes, stats, training
analytics). This package depends only on the wire messages and :mod:`unity_gym.version`.
"""

from __future__ import annotations

from unity_gym.side_channels.engine_configuration_channel import (
    EngineConfig,
    EngineConfigurationChannel,
)
from unity_gym.side_channels.environment_parameters_channel import EnvironmentParametersChannel
from unity_gym.side_channels.float_properties_channel import FloatPropertiesChannel
from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage
from unity_gym.side_channels.raw_bytes_channel import RawBytesChannel
from unity_gym.side_channels.side_channel import SideChannel
from unity_gym.side_channels.side_channel_manager import (
    SideChannelFramingError,
    SideChannelManager,
    decode_side_channel_records,
    encode_side_channel_records,
)
from unity_gym.side_channels.stats_side_channel import (
    EnvironmentStats,
    StatList,
    StatsAggregationMethod,
    StatsSideChannel,
)
from unity_gym.side_channels.training_analytics_side_channel import (
    DefaultTrainingAnalyticsSideChannel,
    TrainingAnalyticsSideChannel,
)

__all__ = [
    "DefaultTrainingAnalyticsSideChannel",
    "EngineConfig",
    "EngineConfigurationChannel",
    "EnvironmentParametersChannel",
    "EnvironmentStats",
    "FloatPropertiesChannel",
    "IncomingMessage",
    "OutgoingMessage",
    "RawBytesChannel",
    "SideChannel",
    "SideChannelFramingError",
    "SideChannelManager",
    "StatList",
    "StatsAggregationMethod",
    "StatsSideChannel",
    "TrainingAnalyticsSideChannel",
    "decode_side_channel_records",
    "encode_side_channel_records",
]
