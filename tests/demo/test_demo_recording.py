"""``unity-gym-player --record-demo``: real player processes write ``.demo`` files of their
heuristic play, which our reader (and, in the peer test, the official decoding) reads back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unity_gym.demo import Demonstration, read_demonstration
from unity_gym.player.scenes import get_scene_class

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]


def _player(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unity_gym.player", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _record(scene: str, path: Path, steps: int, *extra: str) -> Demonstration:
    result = _player(
        "--scene", scene, "--record-demo", str(path), "--record-steps", str(steps),
        "-batchmode", "-nographics", *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Quitting: recorded --record-steps {steps} agent steps" in result.stdout
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    return read_demonstration(path)


def _episode_runs(demo: Demonstration) -> list[np.ndarray]:
    """Record indices split where an episode ends or the agent changes."""
    ids, dones = demo.agent_ids(), demo.dones()
    cuts = [i for i in range(1, len(demo)) if dones[i - 1] or ids[i] != ids[i - 1]]
    return np.split(np.arange(len(demo)), cuts)


def _check_summary(demo: Demonstration, steps: int, name: str) -> None:
    """Counts of the meta-data agree with the records; episodes are contiguous."""
    assert demo.meta.api_version == 1
    assert demo.meta.name == name
    assert demo.meta.number_steps == len(demo) == steps
    runs = _episode_runs(demo)
    assert demo.meta.number_episodes == len(runs)
    ended = [bool(demo.dones()[run[-1]]) for run in runs]
    assert ended == sorted(ended, reverse=True)  # finished episodes first, unfinished at the end
    unfinished = [
        int(demo.agent_ids()[run[0]]) for run, done in zip(runs, ended, strict=True) if not done
    ]
    assert len(unfinished) == len(set(unfinished))  # at most one unfinished episode per agent
    assert demo.meta.mean_reward == pytest.approx(float(demo.rewards().sum()) / len(runs), rel=1e-5)


def test_3dball_records_continuous_heuristic_actions(tmp_path: Path) -> None:
    demo = _record("3DBall", tmp_path / "ball.demo", 250)
    _check_summary(demo, 250, "ball")
    assert demo.behavior_name == "3DBall?team=0"
    spec = demo.behavior_spec
    assert [tuple(o.shape) for o in spec.observation_specs] == [(8,)]
    assert spec.action_spec.continuous_size == 2
    assert spec.action_spec.discrete_branches == ()
    actions = demo.continuous_actions()
    assert actions.shape == (250, 2)
    assert np.all(np.abs(actions) <= 1.0) and np.abs(actions).max() > 0.05
    assert len(set(demo.agent_ids().tolist())) == 12  # every agent of every area is recorded
    # Each decision record holds the action the heuristic chose for that very observation.
    decisions = ~demo.dones()
    obs = demo.observations(0)[decisions]
    scene = get_scene_class("3DBall")({})
    expected, _ = scene.heuristic(None, np.arange(obs.shape[0]), [obs])  # type: ignore[arg-type]
    np.testing.assert_allclose(actions[decisions], expected, atol=1e-6)


@pytest.mark.parametrize(
    ("scene", "shapes", "branches"),
    [("Basic", [(20,)], (3,)), ("PushBlock", [(105,), (105,)], (7,))],
)
def test_discrete_scenes_record_their_spec_and_episodes(
    tmp_path: Path, scene: str, shapes: list[tuple[int, ...]], branches: tuple[int, ...]
) -> None:
    demo = _record(scene, tmp_path / f"Expert{scene}.demo", 400)
    _check_summary(demo, 400, f"Expert{scene}"[:16])
    assert demo.behavior_name == f"{scene}?team=0"
    spec = demo.behavior_spec
    assert [tuple(o.shape) for o in spec.observation_specs] == shapes
    assert spec.action_spec.continuous_size == 0
    assert spec.action_spec.discrete_branches == branches
    actions = demo.discrete_actions()
    assert actions.shape == (400, 1)
    assert actions.min() >= 0 and actions.max() < branches[0]
    if scene == "Basic":  # the heuristic always moves right; episodes are short
        assert np.all(actions[~demo.dones()] == 2)
        assert demo.dones().sum() >= 10
        assert demo.rewards()[demo.dones()].max() > 0.5
    else:  # the PushBlock heuristic steers: several actions
        assert len(np.unique(actions)) > 1


def test_multi_behavior_scene_records_the_chosen_behavior(tmp_path: Path) -> None:
    path = tmp_path / "soccer.demo"
    demo = _record("SoccerTwos", path, 64, "--record-behavior", "SoccerTwos?team=1")
    _check_summary(demo, 64, "soccer")
    assert demo.behavior_name == "SoccerTwos?team=1"


def test_max_steps_before_the_count_writes_what_was_recorded(tmp_path: Path) -> None:
    path = tmp_path / "short.demo"
    result = _player(
        "--scene", "3DBall", "--record-demo", str(path), "--record-steps", "100000",
        "--max-steps", "11",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    demo = read_demonstration(path)
    # 12 agents decide every 5th Academy step: steps 0, 5 and 10.
    assert len(demo) == demo.meta.number_steps == 36
    assert demo.meta.number_episodes == 12


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scene", "Nope", "--record-steps", "5"], "unknown scene 'Nope'"),
        (["--scene", "3DBall", "--record-steps", "0"], "--record-steps must be at least 1, got 0"),
        (["--scene", "3DBall", "--record-steps", "-4"], "--record-steps must be at least 1"),
        (["--scene", "3DBall"], "--record-demo needs --record-steps N"),
        (["--scene", "SoccerTwos", "--record-steps", "5"],
         "choose it with --record-behavior NAME"),
        (["--scene", "SoccerTwos", "--record-steps", "5", "--record-behavior", "Nope"],
         "use one of: SoccerTwos?team=0, SoccerTwos?team=1"),
        (["--scene", "3DBall", "--record-steps", "5", "--mlagents-port", "5999"],
         "drop --mlagents-port"),
    ],
)  # fmt: skip
def test_bad_recording_options_exit_2_without_a_file(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = _player(*args, "--record-demo", str(tmp_path / "out.demo"))
    assert result.returncode == 2
    assert message in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing/out.demo", "does not exist; create it first"),
        ("out.txt", "must name a .demo file"),
        ("folder.demo", "is a folder"),
    ],
)
def test_unusable_paths_exit_2_without_a_file(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "folder.demo").mkdir()
    result = _player(
        "--scene", "Basic", "--record-steps", "5", "--record-demo", str(tmp_path / target)
    )
    assert result.returncode == 2
    assert message in result.stdout + result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["folder.demo"]
    assert list((tmp_path / "folder.demo").iterdir()) == []


def test_record_steps_without_record_demo_is_an_error() -> None:
    result = _player("--scene", "Basic", "--record-steps", "5")
    assert result.returncode == 2
    assert "need --record-demo PATH" in result.stdout + result.stderr
