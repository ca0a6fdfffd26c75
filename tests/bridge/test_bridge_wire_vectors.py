"""Spec §2.4 test vectors: the bytes Python puts on the wire, captured from a real gRPC session."""

from __future__ import annotations

import numpy as np
import pytest
from bridge_standin import (
    CALL1_VECTOR,
    Agent,
    Behavior,
    ScriptedUnity,
    build_output,
    free_port,
)

from unity_gym.base_env import ActionTuple, DimensionProperty, ObservationType
from unity_gym.communicator import encode_message
from unity_gym.decoding import (
    behavior_spec_from_proto,
    encode_reset_input,
    encode_step_input,
    steps_from_proto,
)
from unity_gym.environment import UnityEnvironment
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
from unity_gym.side_channels.training_analytics_side_channel import TrainingAnalyticsSideChannel

pytestmark = pytest.mark.timeout(60)

PYTHON_REPLY_1 = (
    "0a0308c8011a2212201205312e352e301a05312e312e30220e08011001180120012801300138012801"
)
PYTHON_RESET = "0a0308c8011a040a022001"
PYTHON_STEP = (
    "0a0308c8011a320a300a2e0a0d334442616c6c3f7465616d3d30121d0a1b0a0c0000003f000000bf00000040"
    "32080000003f000000bf3a0102"
)
PYTHON_CLOSE = "0a03089003"
UNITY_OUTPUT = (
    "0a0308c80112410a3f123d0a08423f7465616d3d3012310a2f3dcdcccc3d50036a260a0102220a0a080000803f"
    "000080bf3201014212566563746f7253656e736f725f73697a6532"
)


def test_python_messages_on_the_wire_match_the_spec_vectors() -> None:
    ball = "3DBall?team=0"
    first_output = build_output(
        {ball: [Agent(id=0, obs=[[0.0] * 8])]}, brains={ball: Behavior(2, (3,))}
    )
    second_output = build_output({ball: [Agent(id=0, obs=[[0.0] * 8])]})
    port = free_port()
    with ScriptedUnity(port, [first_output, second_output], first_call=CALL1_VECTOR) as unity:
        # the user passes the analytics channel, so nothing is queued and the RESET is bare
        env = UnityEnvironment(
            base_port=port, timeout_wait=20, side_channels=[TrainingAnalyticsSideChannel()]
        )
        env.reset()
        env.set_actions(
            ball, ActionTuple(continuous=np.array([[0.5, -0.5]]), discrete=np.array([[2]]))
        )
        env.step()
        env.close()
        unity.join()
    assert unity.error is None
    assert [a.hex() for a in unity.answers] == [
        PYTHON_REPLY_1,
        PYTHON_RESET,
        PYTHON_STEP,
        PYTHON_CLOSE,
    ]


def test_encoders_reproduce_the_vectors_without_a_session() -> None:
    reset = UnityInputProto(rl_input=encode_reset_input(b""))
    assert encode_message(reset).hex() == PYTHON_RESET
    actions = {"3DBall?team=0": ActionTuple(np.array([[0.5, -0.5]]), np.array([[2]]))}
    step = UnityInputProto(rl_input=encode_step_input(actions, b""))
    assert encode_message(step).hex() == PYTHON_STEP
    assert encode_message(None, status=400).hex() == PYTHON_CLOSE
    # identical to building the envelope with protobuf itself
    envelope = UnityMessageProto()
    envelope.header.status = 200
    envelope.unity_input.CopyFrom(step)
    assert envelope.SerializeToString() == encode_message(step)


def test_unity_output_vector_decodes() -> None:
    message = UnityMessageProto.FromString(bytes.fromhex(UNITY_OUTPUT))
    infos = message.unity_output.rl_output.agentInfos["B?team=0"].value
    params = BrainParametersProto(brain_name="B?team=0")
    params.action_spec.num_continuous_actions = 1
    spec = behavior_spec_from_proto(params, infos[0])
    (obs_spec,) = spec.observation_specs
    assert obs_spec.shape == (2,)
    assert obs_spec.name == "VectorSensor_size2"
    assert obs_spec.dimension_property == (DimensionProperty.NONE,)
    assert obs_spec.observation_type is ObservationType.DEFAULT
    decision, terminal = steps_from_proto(infos, spec, "B?team=0")
    assert len(terminal) == 0
    assert decision.agent_id.tolist() == [3]
    assert decision.reward.dtype == np.float32
    assert decision.reward[0] == np.float32(0.1)
    np.testing.assert_array_equal(decision.obs[0], np.array([[1.0, -1.0]], dtype=np.float32))
    assert decision[3].obs[0].tolist() == [1.0, -1.0]


def test_unity_output_vector_through_the_environment() -> None:
    vector = bytes.fromhex(UNITY_OUTPUT)
    announced = UnityMessageProto.FromString(vector)
    params = announced.unity_output.rl_initialization_output.brain_parameters.add()
    params.brain_name = "B?team=0"
    params.action_spec.num_continuous_actions = 1
    port = free_port()
    with ScriptedUnity(port, [announced.SerializeToString(), vector]) as unity:
        env = UnityEnvironment(base_port=port, timeout_wait=20)
        assert len(env.behavior_specs) == 0  # spec §3.2: empty until the first reset
        env.reset()
        env.step()
        decision, _ = env.get_steps("B?team=0")
        assert decision.agent_id.tolist() == [3]
        np.testing.assert_array_equal(decision.obs[0], [[1.0, -1.0]])
        env.close()
        unity.join()
    assert unity.error is None
