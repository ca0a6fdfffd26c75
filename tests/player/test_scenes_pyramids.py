"""Pyramids: the wire contract seen by the official peer (three ray sensors and a vector of 4),
the ray and vector layouts, the switch that spawns one pyramid per episode, toppling, the gold
reward, the step penalty, the max step and a heuristic that solves most episodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import (
    Terminal,
    idle_policy,
    play,
    player_alive,
    random_policy,
    terminal_reports,
)

from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes.pyramids import (
    CELL_CENTRES,
    NO_PYRAMID,
    SPAWN_RANGE,
    STANDING,
    TOPPLED,
    WALLS,
    PyramidsScene,
)

pytestmark = pytest.mark.timeout(120)

NAME = "Pyramids"
#: Per ray: 6 tags (block, wall, goal, switchOff, switchOn, stone), no-hit flag, hit fraction.
RAY_VALUES = 8


def _forward(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((slots.size, 0), np.float32), np.ones((slots.size, 1), np.int32)


def _turn_left(
    scene: Any, batch: Any, slots: np.ndarray, obs: Any
) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((slots.size, 0), np.float32), np.full((slots.size, 1), 4, np.int32)


def _rays(observation: np.ndarray) -> np.ndarray:
    """``(k, 56)`` -> ``(k, 7 rays, 8 values)``."""
    return observation.reshape(-1, 7, RAY_VALUES)


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = PyramidsScene().behaviors()
    assert spec.full_name == "Pyramids?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("RayPerceptionSensor", (56,)),
        ("RayPerceptionSensor1", (56,)),
        ("RayPerceptionSensor2", (56,)),
        ("VectorSensor_size4", (4,)),
    ]
    assert spec.action_spec.discrete_branches == (5,)
    assert spec.action_spec.continuous_size == 0
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert PyramidsScene.default_area_count == 16


def test_ray_and_vector_layouts_during_play() -> None:
    seen: list[list[np.ndarray]] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        seen.append([o.copy() for o in obs])

    played = play(PyramidsScene, seed=2, policy=record)
    played.step(300)
    assert len(seen) == 60
    tags_seen = np.zeros(6)
    for observation in seen:
        for rays in map(_rays, observation[:3]):
            # Per ray: one tag or the no-hit flag; fraction 1 exactly when nothing was hit.
            np.testing.assert_array_equal(rays[..., :7].sum(axis=-1), 1.0)
            np.testing.assert_array_equal(rays[..., 6] == 1.0, rays[..., 7] == 1.0)
            tags_seen += rays[..., :6].sum(axis=(0, 1))
        vector = observation[3]
        assert set(np.unique(vector[:, 0])) <= {0.0, 1.0}
        assert (vector[:, 2] == 0).all(), "no vertical velocity in the plane"
        # Drag 2 keeps 0.96 per step: (v + 2) * 0.96 = v bounds the speed by 48.
        assert (np.hypot(vector[:, 1], vector[:, 3]) < 48.0).all()
    assert tags_seen[1] > 0 and tags_seen[5] > 0, "walls and stone pyramids are seen"
    assert tags_seen[3] > 0, "switches (off) are seen"


def test_ray_distances_tags_and_local_velocity() -> None:
    played = play(PyramidsScene, seed=0)
    played.step()
    scene = played.scene
    batch = played.academy.batch(NAME)
    slots = np.arange(4)
    scene.stone_positions[:] = [40.0, 40.0]
    scene.switch_position[:] = [-40.0, 40.0]
    scene.pyramid_state[:] = NO_PYRAMID
    scene.switch_on[:] = False
    # Agent 1 faces the outer wall at x = 49.5.
    scene.agent_position[slots] = [[0.0, 0.0], [20.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    scene.heading[slots] = [np.pi / 2, 0.0, np.pi, -np.pi / 2]
    scene.agent_velocity[slots] = [[0.0, 3.0], [0.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    scene.stone_positions[0, 0] = [0.0, 6.0]  # face at y = 4.5
    scene.switch_position[2] = [-10.0, 0.0]  # face at x = -8 (half 2)
    scene.pyramid_state[3] = STANDING
    scene.pyramid_position[3] = [0.0, -5.0]  # face at y = -3.5

    def forward_rays() -> np.ndarray:
        observations = scene.collect_observations(batch, slots)
        firsts = np.stack([_rays(o)[:, 0] for o in observations[:3]])
        # The three sensors differ in their side rays only; the forward rays agree.
        np.testing.assert_array_equal(firsts[0], firsts[1])
        np.testing.assert_array_equal(firsts[0], firsts[2])
        return firsts[0]

    # Sphere casts of radius 0.5, 35 long: hit distances are 0.5 short of the faces.
    rays = forward_rays()
    np.testing.assert_allclose(rays[0], [0, 0, 0, 0, 0, 1, 0, 4.0 / 35], atol=1e-6)
    np.testing.assert_allclose(rays[1], [0, 1, 0, 0, 0, 0, 0, 29.0 / 35], atol=1e-6)
    np.testing.assert_allclose(rays[2], [0, 0, 0, 1, 0, 0, 0, 7.5 / 35], atol=1e-6)
    np.testing.assert_allclose(rays[3], [1, 0, 0, 0, 0, 0, 0, 3.0 / 35], atol=1e-6)
    scene.switch_on[2] = True
    scene.pyramid_state[3] = TOPPLED
    scene.gold_position[3] = [0.0, -5.0]  # face at y = -4.5
    rays = forward_rays()
    np.testing.assert_allclose(rays[2], [0, 0, 0, 0, 1, 0, 0, 7.5 / 35], atol=1e-6)
    np.testing.assert_allclose(rays[3], [0, 0, 1, 0, 0, 0, 0, 4.0 / 35], atol=1e-6)
    # Vector: switch state, then the velocity in the agent's frame (right, up, forward).
    vector = scene.collect_observations(batch, slots)[3]
    np.testing.assert_allclose(vector[0], [0, 0, 0, 3], atol=1e-6)
    np.testing.assert_allclose(vector[1], [0, -2, 0, 0], atol=1e-6)
    np.testing.assert_allclose(vector[2], [1, 0, 0, 0], atol=1e-6)


def _clear_the_areas(scene: Any) -> None:
    """Stones and switches of every area out of the way (in the top-left and top-right rooms)."""
    scene.stone_positions[:] = [-40.0, 40.0]
    scene.switch_position[:] = [40.0, 40.0]
    scene.switch_on[:] = False
    scene.pyramid_state[:] = NO_PYRAMID
    scene.pyramid_cell[:] = 6  # spawned pyramids land around (30, -30)... far from the tests


def test_motion_follows_unity_drag_friction_and_a_world_frame_velocity() -> None:
    played = play(PyramidsScene, seed=7, policy=_forward)
    played.step()
    scene = played.scene
    _clear_the_areas(scene)
    scene.pyramid_cell[:] = 8
    scene.agent_position[:] = [-45.0, -30.0]
    scene.heading[:] = 0.0
    scene.agent_velocity[:] = 0.0
    speed = travelled = 0.0
    for _ in range(25):
        played.step()
        # +2 per step, 0.96 kept (drag 2), then 0.6 * 9.81 * 0.02 of friction; then the move.
        speed = (speed + 2.0) * 0.96 - 0.6 * 9.81 * 0.02
        travelled += speed * 0.02
        np.testing.assert_allclose(scene.agent_velocity[:, 0], speed, rtol=1e-9)
        np.testing.assert_allclose(scene.agent_velocity[:, 1], 0.0, atol=1e-9)
        np.testing.assert_allclose(scene.agent_position[:, 0], -45.0 + travelled, rtol=1e-9)
    assert 28.0 < speed < 30.0, "about 29 units/s after 25 steps (top speed about 45)"

    # Turning does not rotate the velocity (a Rigidbody's velocity is in the world frame), and
    # friction stops a slow agent without reversing it.
    played = play(PyramidsScene, seed=7, policy=_turn_left)
    played.step()
    scene = played.scene
    _clear_the_areas(scene)
    scene.agent_position[:] = [-30.0, -30.0]
    scene.heading[:] = 0.0
    scene.agent_velocity[:] = [0.0, 1.0]
    played.step(10)
    np.testing.assert_allclose(scene.heading, np.radians(40.0))
    np.testing.assert_array_equal(scene.agent_velocity, 0.0)
    scene.agent_velocity[:] = [10.0, 0.0]
    played.step(3)
    assert (scene.agent_velocity[:, 0] > 0.0).all()
    np.testing.assert_allclose(scene.agent_velocity[:, 1], 0.0, atol=1e-9)


#: Top-speed runs at walls and obstacles: (start, unit direction, face the agent's centre must
#: not pass along that direction). Faces are the wall line or box side minus the radius 0.5.
_WALL_RUNS = [
    ((44.0, -30.0), (1.0, 0.0), 49.0),  # outer wall x = 49.5
    ((-30.0, -44.0), (0.0, -1.0), 49.0),  # outer wall y = -49.5
    ((12.0, 11.0), (0.0, 1.0), 16.06),  # cross arm y = 16.56 (from below)
    ((20.0, 22.0), (0.0, -1.0), -17.06),  # the same arm from above
    ((10.0, 13.0), (1.0, 0.0), 16.05),  # cross arm x = 16.55
    ((-20.0, -22.0), (1.0, 0.0), -17.05),  # cross arm x = -16.55 (from the left)
    ((42.0, 11.0), (0.0, 1.0), 16.0),  # stub y = 16.5, x from 35 to 49.5
    ((-42.0, -22.0), (0.0, 1.0), -17.0),  # stub y = -16.5 (from below)
    ((11.0, 42.0), (1.0, 0.0), 16.0),  # stub x = 16.5, y from 35 to 49.5
    ((-11.0, -42.0), (-1.0, 0.0), 16.0),  # stub x = -16.5
]


def test_agents_at_top_speed_stay_on_their_side_of_walls_and_obstacles() -> None:
    played = play(PyramidsScene, seed=11, policy=_forward)
    played.step()
    scene = played.scene
    _clear_the_areas(scene)
    runs = list(_WALL_RUNS)
    # Boxes: a stone pyramid (half 1.5), the switch (half 2) and a standing pyramid (half 1.5).
    stone, switch, pyramid = len(runs), len(runs) + 1, len(runs) + 2
    scene.stone_positions[stone, 0] = [-30.0, 0.0]
    runs.append(((-36.0, 0.0), (1.0, 0.0), -32.0))
    scene.switch_position[switch] = [0.0, -30.0]
    runs.append(((0.0, -37.0), (0.0, 1.0), -32.5))
    scene.switch_on[pyramid] = True
    scene.pyramid_state[pyramid] = STANDING
    scene.pyramid_position[pyramid] = [30.0, 0.0]
    runs.append(((30.0, -7.0), (0.0, 1.0), -2.0))
    areas = np.arange(len(runs))
    direction = np.array([run[1] for run in runs])
    face = np.array([run[2] for run in runs])
    scene.agent_position[areas] = [run[0] for run in runs]
    scene.heading[areas] = np.arctan2(direction[:, 1], direction[:, 0])
    scene.agent_velocity[areas] = 45.0 * direction
    # No wall of the runs above is missing from the scene's walls: each run starts clear.
    assert ((scene.agent_position[areas] * direction).sum(axis=1) < face - 2.0).all()
    assert len(WALLS) == 4 + 8 + 8
    reached = np.zeros(len(runs), dtype=bool)
    for _ in range(20):
        standing = scene.pyramid_state[pyramid] == STANDING
        played.step()
        ahead = (scene.agent_position[areas] * direction).sum(axis=1)
        checked = areas != pyramid if not standing else areas >= 0
        assert (ahead[checked] <= face[checked] + 1e-9).all(), ahead - face
        reached |= ahead >= face - 1e-6
        if not standing:
            break
    assert reached.all(), "every agent ran into its wall or obstacle"
    assert scene.switch_on[switch] and scene.pyramid_state[pyramid] == TOPPLED


def test_switch_spawns_one_pyramid_per_episode() -> None:
    played = play(PyramidsScene, seed=4, policy=_forward)
    played.step()
    scene = played.scene
    batch = played.academy.batch(NAME)
    area = np.array([0])

    def run_at_the_switch() -> None:
        scene.agent_position[0] = scene.switch_position[0] - [3.5, 0.0]
        scene.agent_velocity[0] = 0.0
        scene.heading[0] = 0.0
        played.step(30)
        gap = np.abs(scene.agent_position[0] - scene.switch_position[0]).max()
        assert gap <= 2.0 + 0.5 + 1e-6, "the agent ran into the switch"

    assert not scene.switch_on[0] and scene.pyramid_state[0] == NO_PYRAMID
    assert scene.collect_observations(batch, area)[3][0, 0] == 0.0
    run_at_the_switch()
    assert scene.switch_on[0] and scene.pyramid_state[0] == STANDING
    assert scene.spawned_this_episode[0] == 1
    centre = CELL_CENTRES[scene.pyramid_cell[0]]
    assert (np.abs(scene.pyramid_position[0] - centre) <= SPAWN_RANGE).all()
    spawned_at = scene.pyramid_position[0].copy()
    observations = scene.collect_observations(batch, area)
    assert observations[3][0, 0] == 1.0, "the vector observation reports the pressed switch"
    # Pressing again in the same episode changes nothing.
    for _ in range(2):
        run_at_the_switch()
        assert scene.spawned_this_episode[0] == 1
        np.testing.assert_array_equal(scene.pyramid_position[0], spawned_at)
    # A new episode resets the switch and removes the pyramid.
    batch.end_episode(area)
    assert not scene.switch_on[0] and scene.pyramid_state[0] == NO_PYRAMID
    assert scene.spawned_this_episode[0] == 0
    assert scene.collect_observations(batch, area)[3][0, 0] == 0.0


def test_topple_the_pyramid_then_touch_gold_for_exactly_two() -> None:
    played = play(PyramidsScene, seed=1, policy=_forward)
    played.step()
    scene = played.scene
    scene.agent_position[0] = [0.0, 0.0]
    scene.agent_velocity[0] = 0.0
    scene.heading[0] = 0.0
    scene.stone_positions[0] = [40.0, -40.0]
    scene.switch_position[0] = [-40.0, 40.0]
    scene.switch_on[0] = True
    scene.pyramid_state[0] = STANDING
    scene.pyramid_position[0] = [4.0, 0.0]
    agent_id = int(played.academy.batch(NAME).ids[0])
    ended = []
    for _ in range(100):
        played.step()
        ended += [t for t in terminal_reports(played.academy) if t.agent_id == agent_id]
        if ended:
            break
        if scene.pyramid_state[0] == TOPPLED:
            # The gold brick fell 1.5 beyond the centre, away from the agent.
            np.testing.assert_allclose(scene.gold_position[0], [5.5, 0.0], atol=1e-6)
    assert len(ended) == 1 and not ended[0].interrupted
    # SetReward(2): the step penalties since the last decision are replaced, not added.
    assert ended[0].reward == 2.0
    assert scene.golds == 1
    assert scene.pyramid_state[0] == NO_PYRAMID and not scene.switch_on[0], "a new episode"


def test_idle_agents_pay_the_step_penalty_until_the_max_step() -> None:
    played = play(PyramidsScene, seed=5, policy=idle_policy, num_agents=1)
    ended = []
    for step in range(1, 5002):
        played.step()
        ended += [(step, t) for t in terminal_reports(played.academy)]
    assert len(ended) == 1
    step, terminal = ended[0]
    assert step == 5000 and terminal.interrupted
    # -1/5000 per executed action since the last decision (five of them).
    assert terminal.reward == pytest.approx(-5 / 5000, abs=1e-6)


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(PyramidsScene, seed=seed, policy=random_policy(4))
        played.step(100)
        return played.digests

    first = digests(8)
    assert digests(8) == first
    assert digests(9) != first


def _episode_ends(policy: Any, steps: int, max_step: int) -> list[Terminal]:
    """Terminal reports of ``steps`` Academy steps of the 16 areas."""
    played = play(PyramidsScene, seed=3, policy=policy, options={"max_step": max_step})
    ends: list[Terminal] = []
    for _ in range(steps):
        played.step()
        ends += terminal_reports(played.academy)
    return ends


def test_heuristic_solves_most_episodes_and_random_play_none() -> None:
    # Episodes cut at 1000 steps (a fifth of Unity's limit) make the comparison quick.
    scripted = _episode_ends(None, 2000, max_step=1000)
    chance = _episode_ends(random_policy(5), 2000, max_step=1000)
    golds = sum(t.reward == 2.0 and not t.interrupted for t in scripted)
    assert len(scripted) >= 40 and golds >= 0.7 * len(scripted), (golds, len(scripted))
    assert len(chance) == 32 and all(t.interrupted for t in chance), "random play never scores"


def test_max_step_option_sets_the_limit_and_the_penalty() -> None:
    played = play(PyramidsScene, seed=6, policy=idle_policy, num_agents=1, options={"max_step": 50})
    (spec,) = played.scene.behaviors()
    assert spec.max_step == 50
    ended = []
    for step in range(1, 52):
        played.step()
        ended += [(step, t) for t in terminal_reports(played.academy)]
    assert [(step, t.interrupted) for step, t in ended] == [(50, True)]
    assert ended[0][1].reward == pytest.approx(-5 / 50, abs=1e-6)
    with pytest.raises(PlayerError, match="max_step=0 must be at least 1"):
        PyramidsScene({"max_step": "0"})


PEER_PYRAMIDS = """
import hashlib

def run(seed, steps):
    env = open_env("Pyramids", seed=seed)
    out = {"pid": env._process.pid, "digests": [], "rewards": set(), "layout_errors": 0,
           "switch_values": set()}
    try:
        env.reset()
        name = "Pyramids?team=0"
        spec = env.behavior_specs[name]
        d, _ = env.get_steps(name)
        out["spec"] = {
            "names": list(env.behavior_specs),
            "obs": [[o.name, list(o.shape), [int(p) for p in o.dimension_property],
                     o.observation_type.value] for o in spec.observation_specs],
            "branches": list(spec.action_spec.discrete_branches),
            "continuous": spec.action_spec.continuous_size,
            "ids": d.agent_id.tolist(),
        }
        rng = np.random.default_rng(7)
        for _ in range(steps):
            d, t = env.get_steps(name)
            out["digests"].append(hashlib.md5(
                b"".join(np.ascontiguousarray(o).tobytes() for o in d.obs)).hexdigest())
            out["rewards"].update(round(r, 6) for r in d.reward.tolist())
            for o in d.obs[:3]:
                rays = o.reshape(len(d), 7, 8)
                out["layout_errors"] += int((rays[..., :7].sum(-1) != 1).sum())
            out["switch_values"].update(d.obs[3][:, 0].tolist())
            env.set_actions(name, ActionTuple(discrete=rng.integers(0, 5, (len(d), 1))))
            env.step()
    finally:
        out["code"] = close_env(env)
    out["rewards"] = sorted(out["rewards"])
    out["switch_values"] = sorted(out["switch_values"])
    return out

long_run = run(21, 100)
again = run(21, 20)
emit({"long": long_run, "again": again["digests"],
      "codes": [long_run["code"], again["code"]],
      "pids": [long_run["pid"], again["pid"]]})
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_plays_pyramids(peer: Callable[..., Any]) -> None:
    result = peer(PEER_PYRAMIDS)
    long_run = result["long"]
    spec = long_run["spec"]
    assert spec["names"] == ["Pyramids?team=0"]
    assert spec["obs"] == [
        ["RayPerceptionSensor", [56], [1], 0],
        ["RayPerceptionSensor1", [56], [1], 0],
        ["RayPerceptionSensor2", [56], [1], 0],
        ["VectorSensor_size4", [4], [1], 0],
    ]
    assert spec["branches"] == [5] and spec["continuous"] == 0
    assert spec["ids"] == list(range(16))
    assert long_run["layout_errors"] == 0
    assert set(long_run["switch_values"]) <= {0.0, 1.0}
    # -1/5000 per executed action: five between decisions (none before the first decision).
    assert set(long_run["rewards"]) <= {round(-0.0002 * k, 6) for k in range(6)}
    assert -0.001 in long_run["rewards"]
    assert result["again"] == long_run["digests"][:20], "same seed, same actions, same run"
    assert result["codes"] == [0, 0]
    assert not any(player_alive(pid) for pid in result["pids"]), "no player left behind"
