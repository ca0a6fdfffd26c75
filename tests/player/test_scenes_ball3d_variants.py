"""3DBallHard and Visual3DBall: the Unity scenes' observation sets, the stacked positions and
rotations, the rendered camera pictures, determinism per seed and heuristics that clearly beat
chance (the wire contract as the official ``mlagents_envs`` sees it is checked by
``tests/peer/test_peer_differential.py``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from scene_harness import play, random_policy, terminal_reports

from unity_gym.player.render import Camera, render_box_and_sphere, rotation_zx, save_png
from unity_gym.player.scenes.ball3d_hard import Ball3DHardScene
from unity_gym.player.scenes.visual3dball import Visual3DBallScene
from unity_gym.player.specs import Compression

pytestmark = pytest.mark.timeout(180)

POSITION = "StackingSensor_size9_ObservableAttribute:Ball3DHardAgent.PositionDelta"
ROTATION = "StackingSensor_size9_ObservableAttribute:Ball3DHardAgent.Rotation"


def _episode_ends(scene: type[Any], steps: int, **kwargs: Any) -> int:
    played = play(scene, **kwargs)
    ends = 0
    for _ in range(steps):
        played.step()
        ends += len(terminal_reports(played.academy))
    return ends


def test_3dballhard_matches_the_unity_scene() -> None:
    (spec,) = Ball3DHardScene().behaviors()
    assert spec.full_name == "3DBallHard?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [(POSITION, (27,)), (ROTATION, (18,))]
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_size == 0
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert Ball3DHardScene.default_area_count == 12


def test_3dballhard_stacks_nine_decisions_of_position_and_rotation() -> None:
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        state = np.stack([scene.planar[slots, 0], scene.height[slots], scene.planar[slots, 1]], 1)
        rotation = np.sin(np.radians(scene.tilt[slots]) / 2.0)
        seen.append((obs[0].copy(), obs[1].copy(), state, rotation))
        return None  # the heuristic plays

    played = play(Ball3DHardScene, seed=5, policy=record)
    played.step(5 * 12)
    first_positions, first_rotations, state, rotation = seen[0]
    # First decision of the episode: eight zero entries, then the newest observation.
    assert not first_positions[:, :24].any() and not first_rotations[:, :16].any()
    np.testing.assert_allclose(first_positions[:, 24:], state, atol=1e-6)
    np.testing.assert_allclose(first_rotations[:, 16:], rotation, atol=1e-6)
    assert (first_positions[:, 25] > 3.0).all(), "the ball starts 4 above the platform"
    # Each decision shifts the stack by one entry.
    for (old_pos, old_rot, *_), (new_pos, new_rot, state, rotation) in itertools.pairwise(seen):
        np.testing.assert_array_equal(new_pos[:, :24], old_pos[:, 3:])
        np.testing.assert_array_equal(new_rot[:, :16], old_rot[:, 2:])
        np.testing.assert_allclose(new_pos[:, 24:], state, atol=1e-6)
        np.testing.assert_allclose(new_rot[:, 16:], rotation, atol=1e-6)


def test_3dballhard_heuristic_keeps_the_ball_up_and_random_drops_it() -> None:
    assert _episode_ends(Ball3DHardScene, 1500, seed=3) == 0
    assert _episode_ends(Ball3DHardScene, 1500, seed=3, policy=random_policy(1)) > 60


@pytest.mark.parametrize("scene", [Ball3DHardScene, Visual3DBallScene])
def test_same_seed_same_run_other_seed_other_run(scene: type[Any]) -> None:
    def digests(seed: int) -> list[int]:
        played = play(scene, seed=seed, policy=random_policy(3), num_agents=2)
        played.step(60)
        return played.digests

    first = digests(12)
    assert len(first) > 10
    assert digests(12) == first
    assert digests(13) != first


def test_visual3dball_matches_the_unity_scene() -> None:
    (spec,) = Visual3DBallScene().behaviors()
    assert spec.full_name == "Visual3DBall?team=0"
    (sensor,) = spec.sensors
    assert (sensor.wire_name, sensor.wire_shape) == (
        "StackingSensor_size4_CameraSensor",
        (12, 84, 84),
    )
    assert sensor.compression is Compression.PNG and sensor.is_visual
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_size == 0
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert Visual3DBallScene.default_area_count == 8


def test_visual3dball_observes_stacked_camera_pictures_in_byte_steps() -> None:
    seen: list[np.ndarray] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        seen.append(obs[0].copy())
        return None

    played = play(Visual3DBallScene, seed=2, policy=record, num_agents=2)
    played.step(5 * 6)
    first = seen[0]
    assert first.shape == (2, 12, 84, 84) and first.dtype == np.float32
    assert not first[:, :9].any(), "older stack entries are zero at the episode begin"
    assert first[:, 9:].any()
    for stacked in seen:
        assert stacked.min() >= 0.0 and stacked.max() <= 1.0
        np.testing.assert_allclose(stacked * 255.0, np.rint(stacked * 255.0), atol=1e-3)
    # The newest picture moves down the stack at the next decision, and pictures change.
    np.testing.assert_array_equal(seen[1][:, 6:9], seen[0][:, 9:12])
    assert not np.array_equal(seen[-1][:, 9:], seen[0][:, 9:])


def test_the_camera_sees_the_ball_move_and_the_platform_tilt(tmp_path: Any) -> None:
    camera = Camera((0.0, 7.0, -8.0), 30.0, 60.0, 84, 84)
    flat = rotation_zx(np.zeros(3), np.zeros(3))
    balls = np.array([[-2.0, 1.0, 0.0], [2.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    pictures = render_box_and_sphere(camera, flat, (2.5, 0.25, 2.5), balls, np.full(3, 0.5))
    assert pictures.shape == (3, 84, 84, 3) and pictures.dtype == np.uint8
    white = (pictures.min(axis=-1) > 80) & (pictures[..., 0] > pictures[..., 2] - 30)
    columns = [np.nonzero(white[i])[1].mean() for i in range(3)]
    assert columns[0] < columns[2] - 10 < columns[1] - 20, "the ball is drawn where it is"
    blue = pictures[..., 2].astype(int) - pictures[..., 0] > 60
    assert blue[2].sum() > 500, "the platform fills part of the picture"
    assert (pictures[2][0] == 0).all(), "the top row is background (black)"
    tilted = render_box_and_sphere(
        camera, rotation_zx(np.array([20.0]), np.array([0.0])), (2.5, 0.25, 2.5), balls[2:],
        np.array([0.5]),
    )  # fmt: skip
    assert not np.array_equal(tilted[0], pictures[2])
    # A positive tilt about z raises the platform's +x side: its right half reaches higher.
    rows = np.nonzero(tilted[0][..., 2].astype(int) - tilted[0][..., 0] > 60)
    left, right = rows[0][rows[1] < 42], rows[0][rows[1] >= 42]
    assert right.min() < left.min()
    written = save_png(tmp_path / "ball.png", pictures[0])
    assert written.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="uint8"):
        save_png(tmp_path / "bad.png", pictures[0].astype(np.float32))


def test_visual3dball_heuristic_keeps_the_ball_up_and_random_drops_it() -> None:
    assert _episode_ends(Visual3DBallScene, 500, seed=3, num_agents=4) == 0
    assert _episode_ends(Visual3DBallScene, 500, seed=3, num_agents=4, policy=random_policy(2)) > 6
