"""One Unity message decodes to the same arrays here and in the official mlagents-envs 1.1.0."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bridge_standin import Agent, Behavior, build_output
from PIL import Image

from unity_gym.decoding import behavior_spec_from_proto, steps_from_proto
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto

pytestmark = [pytest.mark.peer, pytest.mark.timeout(180)]

PEER_SCRIPT = """
import sys
import numpy as np
from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
from mlagents_envs.rpc_utils import behavior_spec_from_proto, steps_from_proto

message = UnityMessageProto.FromString(open(sys.argv[1], "rb").read())
output = message.unity_output
arrays = {}
for params in output.rl_initialization_output.brain_parameters:
    infos = output.rl_output.agentInfos[params.brain_name].value
    spec = behavior_spec_from_proto(params, infos[0])
    decision, terminal = steps_from_proto(infos, spec)
    name = params.brain_name
    arrays[name + "/shapes"] = np.array([len(o.shape) for o in spec.observation_specs])
    for kind, steps in (("d", decision), ("t", terminal)):
        for i, obs in enumerate(steps.obs):
            arrays[f"{name}/{kind}/obs{i}"] = obs
        arrays[f"{name}/{kind}/reward"] = steps.reward
        arrays[f"{name}/{kind}/agent_id"] = steps.agent_id
        arrays[f"{name}/{kind}/group_id"] = np.asarray(steps.group_id)
        arrays[f"{name}/{kind}/group_reward"] = steps.group_reward
    arrays[f"{name}/t/interrupted"] = terminal.interrupted
    for i, mask in enumerate(decision.action_mask or []):
        arrays[f"{name}/d/mask{i}"] = mask
np.savez(sys.argv[2], **arrays)
"""


def _png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(6, 7, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _message() -> bytes:
    rng = np.random.default_rng(1)
    vector = [
        Agent(
            id=i,
            obs=[rng.normal(size=5), rng.normal(size=(3, 4))],
            reward=float(rng.normal()),
            done=i in (2, 5),
            max_step_reached=i == 5,
            action_mask=[bool(b) for b in rng.integers(0, 2, size=5)] if i != 3 else [],
            group_id=i % 2,
            group_reward=float(i),
        )
        for i in range(7)
    ]
    visual = [
        Agent(
            id=10 + i,
            obs=[[0.0], [0.0]],
            png_obs={
                0: (_png(i), (3, 6, 7), ()),
                1: (_png(i) + _png(i + 9), (2, 6, 7), (0, 0, 0, 1, 1, -1)),
            },
            done=i == 1,
        )
        for i in range(3)
    ]
    return build_output(
        {"Vec?team=0": vector, "Cam?team=1": visual},
        {"Vec?team=0": Behavior(1, (2, 3)), "Cam?team=1": Behavior(2)},
    )


def test_decoding_matches_the_official_package(tmp_path: Path, peer_python: Path) -> None:
    python = peer_python
    data = _message()
    (tmp_path / "message.bin").write_bytes(data)
    subprocess.run(
        [str(python), "-c", PEER_SCRIPT, str(tmp_path / "message.bin"), str(tmp_path / "peer")],
        check=True,
        timeout=120,
    )
    expected = np.load(tmp_path / "peer.npz")
    output = UnityMessageProto.FromString(data).unity_output
    compared = 0
    for params in output.rl_initialization_output.brain_parameters:
        name = params.brain_name
        infos = output.rl_output.agentInfos[name].value
        spec = behavior_spec_from_proto(params, infos[0])
        decision, terminal = steps_from_proto(infos, spec, name)
        ours: dict[str, np.ndarray] = {}
        for kind, steps in (("d", decision), ("t", terminal)):
            for i, obs in enumerate(steps.obs):
                ours[f"{name}/{kind}/obs{i}"] = obs
            ours[f"{name}/{kind}/reward"] = steps.reward
            ours[f"{name}/{kind}/agent_id"] = steps.agent_id
            ours[f"{name}/{kind}/group_id"] = steps.group_id
            ours[f"{name}/{kind}/group_reward"] = steps.group_reward
        ours[f"{name}/t/interrupted"] = terminal.interrupted
        for i, mask in enumerate(decision.action_mask or []):
            ours[f"{name}/d/mask{i}"] = mask
        for key, value in ours.items():
            reference = expected[key]
            assert value.shape == reference.shape, key
            if value.dtype.kind == "f":
                assert value.dtype == np.float32, key
                np.testing.assert_allclose(value, reference, rtol=1e-6, atol=1e-7, err_msg=key)
            else:
                np.testing.assert_array_equal(value, reference, err_msg=key)
            compared += 1
    assert compared == len([k for k in expected.files if not k.endswith("/shapes")])
