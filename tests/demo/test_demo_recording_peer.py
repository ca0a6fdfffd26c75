"""Files written by ``unity-gym-player --record-demo`` decode in the reference peer (official
``mlagents`` demo loader when it imports, else the official protos and ``rpc_utils``) exactly as
our reader decodes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_demo_peer import PEER_DUMP

from unity_gym.demo import read_demonstration

pytestmark = [pytest.mark.peer, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]


def _record(scene: str, steps: int, folder: Path) -> Path:
    """``steps`` agent steps of ``scene``'s heuristic play, recorded by a real player."""
    path = folder / f"{scene}.demo"
    player = subprocess.run(
        [sys.executable, "-m", "unity_gym.player", "--scene", scene,
         "--record-demo", str(path), "--record-steps", str(steps)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert player.returncode == 0, player.stdout + player.stderr
    return path


@pytest.mark.parametrize(("scene", "steps"), [("3DBall", 300), ("Basic", 150), ("PushBlock", 200)])
def test_recorded_demo_matches_official_decoding(
    peer_python: Path, tmp_path: Path, scene: str, steps: int
) -> None:
    path = _record(scene, steps, tmp_path)
    out = tmp_path / "official.npz"
    proc = subprocess.run(
        [str(peer_python), "-c", PEER_DUMP, str(path), str(out)],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    official = np.load(out)
    demo = read_demonstration(path)

    assert len(demo) == demo.meta.number_steps == steps == official["rewards"].shape[0]
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


OFFICIAL_BUFFER = """
import json, sys, warnings
warnings.simplefilter("ignore")
try:
    from mlagents.trainers.demo_loader import demo_to_buffer
except Exception as exc:  # the trainer stack (torch, h5py, attrs) is not in every peer venv
    print(json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
    sys.exit(0)
spec, buffer = demo_to_buffer(sys.argv[1], 1)
print(json.dumps({
    "shapes": [list(o.shape) for o in spec.observation_specs],
    "continuous": spec.action_spec.continuous_size,
    "branches": list(spec.action_spec.discrete_branches),
    "experiences": buffer.num_experiences,
}))
"""


@pytest.mark.parametrize(("scene", "steps"), [("3DBall", 300), ("PushBlock", 200)])
def test_official_demo_to_buffer_reads_a_recorded_demo(
    peer_python: Path, tmp_path: Path, scene: str, steps: int
) -> None:
    """What GAIL and behavioral cloning in ``mlagents-learn`` load: ``demo_to_buffer``."""
    path = _record(scene, steps, tmp_path)
    proc = subprocess.run(
        [str(peer_python), "-c", OFFICIAL_BUFFER, str(path)],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    official = json.loads(proc.stdout.strip().splitlines()[-1])
    if "unavailable" in official:
        pytest.skip(
            "the peer venv has no mlagents trainer stack (python benchmarks/peer_venv.py "
            f"--learn installs it): {official['unavailable']}"
        )
    spec = read_demonstration(path).behavior_spec
    assert official["shapes"] == [list(o.shape) for o in spec.observation_specs]
    assert official["continuous"] == spec.action_spec.continuous_size
    assert tuple(official["branches"]) == spec.action_spec.discrete_branches
    assert official["experiences"] == steps - 1  # each record is paired with the next one
