"""The message schema matches spec §2 field for field (names, numbers, types, labels, reserved)."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from unity_gym.protocol.communicator_objects import (
    agent_action_pb2,
    agent_info_pb2,
    brain_parameters_pb2,
    capabilities_pb2,
    command_pb2,
    observation_pb2,
    space_type_pb2,
    unity_message_pb2,
    unity_rl_initialization_input_pb2,
    unity_rl_initialization_output_pb2,
    unity_rl_input_pb2,
    unity_rl_output_pb2,
    unity_to_external_pb2,
)

T = FieldDescriptor
# (message descriptor, {number: (name, type, repeated)}, reserved numbers)
SCHEMA: list[tuple[Descriptor, dict[int, tuple[str, int, bool]], set[int]]] = [
    (
        agent_info_pb2.AgentInfoProto.DESCRIPTOR,
        {
            7: ("reward", T.TYPE_FLOAT, False),
            8: ("done", T.TYPE_BOOL, False),
            9: ("max_step_reached", T.TYPE_BOOL, False),
            10: ("id", T.TYPE_INT32, False),
            11: ("action_mask", T.TYPE_BOOL, True),
            13: ("observations", T.TYPE_MESSAGE, True),
            14: ("group_id", T.TYPE_INT32, False),
            15: ("group_reward", T.TYPE_FLOAT, False),
        },
        {1, 2, 3, 4, 5, 6, 12},
    ),
    (
        observation_pb2.ObservationProto.DESCRIPTOR,
        {
            1: ("shape", T.TYPE_INT32, True),
            2: ("compression_type", T.TYPE_ENUM, False),
            3: ("compressed_data", T.TYPE_BYTES, False),
            4: ("float_data", T.TYPE_MESSAGE, False),
            5: ("compressed_channel_mapping", T.TYPE_INT32, True),
            6: ("dimension_properties", T.TYPE_INT32, True),
            7: ("observation_type", T.TYPE_ENUM, False),
            8: ("name", T.TYPE_STRING, False),
        },
        set(),
    ),
    (
        agent_action_pb2.AgentActionProto.DESCRIPTOR,
        {
            1: ("vector_actions_deprecated", T.TYPE_FLOAT, True),
            4: ("value", T.TYPE_FLOAT, False),
            6: ("continuous_actions", T.TYPE_FLOAT, True),
            7: ("discrete_actions", T.TYPE_INT32, True),
        },
        {2, 3, 5},
    ),
    (
        brain_parameters_pb2.BrainParametersProto.DESCRIPTOR,
        {
            3: ("vector_action_size_deprecated", T.TYPE_INT32, True),
            5: ("vector_action_descriptions_deprecated", T.TYPE_STRING, True),
            6: ("vector_action_space_type_deprecated", T.TYPE_ENUM, False),
            7: ("brain_name", T.TYPE_STRING, False),
            8: ("is_training", T.TYPE_BOOL, False),
            9: ("action_spec", T.TYPE_MESSAGE, False),
        },
        {1, 2, 4},
    ),
    (
        brain_parameters_pb2.ActionSpecProto.DESCRIPTOR,
        {
            1: ("num_continuous_actions", T.TYPE_INT32, False),
            2: ("num_discrete_actions", T.TYPE_INT32, False),
            3: ("discrete_branch_sizes", T.TYPE_INT32, True),
            4: ("action_descriptions", T.TYPE_STRING, True),
        },
        set(),
    ),
    (
        unity_rl_initialization_output_pb2.UnityRLInitializationOutputProto.DESCRIPTOR,
        {
            1: ("name", T.TYPE_STRING, False),
            2: ("communication_version", T.TYPE_STRING, False),
            3: ("log_path", T.TYPE_STRING, False),
            5: ("brain_parameters", T.TYPE_MESSAGE, True),
            7: ("package_version", T.TYPE_STRING, False),
            8: ("capabilities", T.TYPE_MESSAGE, False),
        },
        {6},
    ),
    (
        unity_rl_initialization_input_pb2.UnityRLInitializationInputProto.DESCRIPTOR,
        {
            1: ("seed", T.TYPE_INT32, False),
            2: ("communication_version", T.TYPE_STRING, False),
            3: ("package_version", T.TYPE_STRING, False),
            4: ("capabilities", T.TYPE_MESSAGE, False),
            5: ("num_areas", T.TYPE_INT32, False),
        },
        set(),
    ),
    (
        unity_rl_output_pb2.UnityRLOutputProto.DESCRIPTOR,
        {2: ("agentInfos", T.TYPE_MESSAGE, True), 3: ("side_channel", T.TYPE_BYTES, False)},
        {1},
    ),
    (
        unity_rl_input_pb2.UnityRLInputProto.DESCRIPTOR,
        {
            1: ("agent_actions", T.TYPE_MESSAGE, True),
            4: ("command", T.TYPE_ENUM, False),
            5: ("side_channel", T.TYPE_BYTES, False),
        },
        {2, 3},
    ),
    (
        unity_message_pb2.UnityMessageProto.DESCRIPTOR,
        {
            1: ("header", T.TYPE_MESSAGE, False),
            2: ("unity_output", T.TYPE_MESSAGE, False),
            3: ("unity_input", T.TYPE_MESSAGE, False),
        },
        set(),
    ),
    (
        capabilities_pb2.UnityRLCapabilitiesProto.DESCRIPTOR,
        {
            i + 1: (name, T.TYPE_BOOL, False)
            for i, name in enumerate(
                [
                    "baseRLCapabilities",
                    "concatenatedPngObservations",
                    "compressedChannelMapping",
                    "hybridActions",
                    "trainingAnalytics",
                    "variableLengthObservation",
                    "multiAgentGroups",
                ]
            )
        },
        set(),
    ),
]


@pytest.mark.parametrize("descriptor,fields,reserved", SCHEMA, ids=lambda x: getattr(x, "name", ""))
def test_message_fields(
    descriptor: Descriptor, fields: dict[int, tuple[str, int, bool]], reserved: set[int]
) -> None:
    assert descriptor.file.package == "communicator_objects"
    actual = {f.number: (f.name, f.type, f.is_repeated) for f in descriptor.fields}
    assert actual == fields
    # reserved ranges live on the DescriptorProto, not on the runtime descriptor
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    declared_reserved = {n for r in proto.reserved_range for n in range(r.start, r.end)}
    assert declared_reserved == reserved


def test_enums() -> None:
    assert dict(command_pb2.CommandProto.items()) == {"STEP": 0, "RESET": 1, "QUIT": 2}
    assert dict(space_type_pb2.SpaceTypeProto.items()) == {"discrete": 0, "continuous": 1}
    assert dict(observation_pb2.CompressionTypeProto.items()) == {"NONE": 0, "PNG": 1}
    assert dict(observation_pb2.ObservationTypeProto.items()) == {"DEFAULT": 0, "GOAL_SIGNAL": 1}


def test_service_path() -> None:
    service = unity_to_external_pb2.DESCRIPTOR.services_by_name["UnityToExternalProto"]
    method = service.methods_by_name["Exchange"]
    assert service.full_name == "communicator_objects.UnityToExternalProto"
    assert method.input_type.full_name == "communicator_objects.UnityMessageProto"
    assert method.output_type.full_name == "communicator_objects.UnityMessageProto"
