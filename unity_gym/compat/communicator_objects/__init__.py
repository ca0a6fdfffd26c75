"""``mlagents_envs.communicator_objects``: the protocol messages, from :mod:`unity_gym.protocol`.

Each ``<name>_pb2`` module here re-exports the public names (message classes, enums and their
values, ``DESCRIPTOR``) of ``unity_gym.protocol.communicator_objects.<name>_pb2``, the classes
generated from the same ``.proto`` definitions (communication API 1.5.0) the official package
ships: ``mlagents_envs.communicator_objects.observation_pb2.ObservationProto`` is unity_gym's
class, so protos built with either name are the same objects. The official gRPC stub module
``unity_to_external_pb2_grpc`` is not served (unity_gym's bridge makes its own gRPC server).
"""

from __future__ import annotations

from unity_gym.compat.communicator_objects._public_names import public_names

__all__ = ["MESSAGE_MODULES", "public_names"]

MESSAGE_MODULES = (
    "agent_action_pb2",
    "agent_info_action_pair_pb2",
    "agent_info_pb2",
    "brain_parameters_pb2",
    "capabilities_pb2",
    "command_pb2",
    "custom_reset_parameters_pb2",
    "demonstration_meta_pb2",
    "engine_configuration_pb2",
    "header_pb2",
    "observation_pb2",
    "space_type_pb2",
    "training_analytics_pb2",
    "unity_input_pb2",
    "unity_message_pb2",
    "unity_output_pb2",
    "unity_rl_initialization_input_pb2",
    "unity_rl_initialization_output_pb2",
    "unity_rl_input_pb2",
    "unity_rl_output_pb2",
    "unity_to_external_pb2",
)
"""The generated modules mirrored here (every official one but the gRPC stubs)."""
