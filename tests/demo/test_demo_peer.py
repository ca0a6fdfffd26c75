"""Our reader gives the same specs, observations, rewards and actions as mlagents 1.1.0.

The peer side walks the file like ``mlagents.trainers.demo_loader.load_demonstration`` (which is
used directly when it imports) and decodes every record with the official
``mlagents_envs.rpc_utils`` functions.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from unity_gym.demo import read_demonstration

pytestmark = [pytest.mark.peer, pytest.mark.timeout(180)]

PEER_PYTHON = Path(__file__).resolve().parents[2] / ".peer-venv" / "bin" / "python"
DEMOS = [
    "ExpertBasic.demo",
    "ExpertGridWorld.demo",
    "ExpertPushBlock.demo",
    "test.demo",
    "testhybridvis.demo",
]

PEER_DUMP = r"""
import sys
import numpy as np
from google.protobuf.internal.decoder import _DecodeVarint32
from mlagents_envs.communicator_objects.agent_info_action_pair_pb2 import AgentInfoActionPairProto
from mlagents_envs.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from mlagents_envs.communicator_objects.demonstration_meta_pb2 import DemonstrationMetaProto
from mlagents_envs.rpc_utils import behavior_spec_from_proto, steps_from_proto

def walk(path):
    data = open(path, "rb").read()
    size, pos = _DecodeVarint32(data, 0)
    meta = DemonstrationMetaProto()
    meta.ParseFromString(data[pos:pos + size])
    size, pos = _DecodeVarint32(data, 33)
    brain = BrainParametersProto()
    brain.ParseFromString(data[pos:pos + size])
    pos += size
    pairs = []
    while len(pairs) < meta.number_steps:
        size, pos = _DecodeVarint32(data, pos)
        pair = AgentInfoActionPairProto()
        pair.ParseFromString(data[pos:pos + size])
        pairs.append(pair)
        pos += size
    return behavior_spec_from_proto(brain, pairs[0].agent_info), pairs

try:
    from mlagents.trainers.demo_loader import load_demonstration
    def load(path):
        spec, pairs, _ = load_demonstration(path)
        return spec, pairs
except Exception:  # the trainer package may not import in the peer venv (e.g. no torch)
    load = walk

path, out = sys.argv[1], sys.argv[2]
spec, pairs = load(path)
arrays = {
    "continuous_size": np.array(spec.action_spec.continuous_size),
    "branches": np.array(spec.action_spec.discrete_branches, dtype=np.int64),
    "shapes": np.array([str(tuple(o.shape)) for o in spec.observation_specs]),
}
observations = [[] for _ in spec.observation_specs]
rewards, dones, interrupted, ids, continuous, discrete = [], [], [], [], [], []
for pair in pairs:
    decision, terminal = steps_from_proto([pair.agent_info], spec)
    batch = terminal if len(terminal) == 1 else decision
    for i, obs in enumerate(batch.obs):
        observations[i].append(obs[0])
    rewards.append(batch.reward[0])
    dones.append(len(terminal) == 1)
    interrupted.append(bool(terminal.interrupted[0]) if len(terminal) == 1 else False)
    ids.append(batch.agent_id[0])
    action = pair.action_info
    n_cont = spec.action_spec.continuous_size
    if len(action.continuous_actions) == 0 and len(action.discrete_actions) == 0:
        flat = list(action.vector_actions_deprecated) or [0.0] * (
            n_cont + len(spec.action_spec.discrete_branches))
        continuous.append(flat[:n_cont])
        discrete.append([int(v) for v in flat[n_cont:]])
    else:
        continuous.append(list(action.continuous_actions))
        discrete.append(list(action.discrete_actions))
for i, stack in enumerate(observations):
    arrays[f"obs{i}"] = np.stack(stack).astype(np.float32)
arrays.update(
    rewards=np.array(rewards, np.float32), dones=np.array(dones), ids=np.array(ids, np.int32),
    interrupted=np.array(interrupted),
    continuous=np.array(continuous, np.float32).reshape(len(pairs), -1),
    discrete=np.array(discrete, np.int32).reshape(len(pairs), -1),
)
np.savez(out, **arrays)
"""


@pytest.mark.parametrize("name", DEMOS)
def test_matches_official_decoding(demos_dir: Path, tmp_path: Path, name: str) -> None:
    if not PEER_PYTHON.exists():
        pytest.skip(
            f"reference peer venv missing ({PEER_PYTHON}); build it with "
            "`python benchmarks/peer_venv.py`"
        )
    out = tmp_path / "official.npz"
    proc = subprocess.run(
        [str(PEER_PYTHON), "-c", PEER_DUMP, str(demos_dir / name), str(out)],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    official = np.load(out)
    demo = read_demonstration(demos_dir / name)

    spec = demo.behavior_spec
    assert int(official["continuous_size"]) == spec.action_spec.continuous_size
    assert tuple(official["branches"].tolist()) == spec.action_spec.discrete_branches
    assert official["shapes"].tolist() == [str(tuple(o.shape)) for o in spec.observation_specs]
    for index in range(len(spec.observation_specs)):
        np.testing.assert_array_equal(demo.observations(index), official[f"obs{index}"])
    np.testing.assert_array_equal(demo.rewards(), official["rewards"])
    np.testing.assert_array_equal(demo.dones(), official["dones"])
    np.testing.assert_array_equal(demo.interrupted(), official["interrupted"])
    np.testing.assert_array_equal(demo.agent_ids(), official["ids"])
    np.testing.assert_array_equal(demo.continuous_actions(), official["continuous"])
    np.testing.assert_array_equal(demo.discrete_actions(), official["discrete"])
