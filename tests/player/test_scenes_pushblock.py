"""PushBlock: the wire contract seen by the official peer (two stacked ray sensors), the ray
geometry, the goal and step rewards, the block parameters, determinism and a heuristic that
clearly beats chance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import idle_policy, play, player_alive, random_policy, terminal_reports

from unity_gym.player.scenes.pushblock import ARENA_HALF, SPAWN_HALF, PushBlockScene

pytestmark = pytest.mark.timeout(120)

#: Random steps of the default peer test (500 in the ``slow`` variant).
DEFAULT_RANDOM_STEPS = 150


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = PushBlockScene().behaviors()
    assert spec.full_name == "PushBlock?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("StackingSensor_size3_OffsetRayPerceptionSensor", (105,)),
        ("StackingSensor_size3_RayPerceptionSensor", (105,)),
    ]
    assert spec.action_spec.discrete_branches == (7,)
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert PushBlockScene.default_area_count == 32


def _rays(observation: np.ndarray) -> np.ndarray:
    """``(k, 105)`` -> ``(k, 3 frames, 7 rays, 5 values)``."""
    return observation.reshape(-1, 3, 7, 5)


def test_ray_layout_and_stacking() -> None:
    seen: list[list[np.ndarray]] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        seen.append([o.copy() for o in obs])

    played = play(PushBlockScene, seed=2, policy=record)
    played.step(40)
    raised, ground = (_rays(o) for o in seen[0])
    assert (raised[:, :2] == 0).all() and (ground[:, :2] == 0).all(), "nothing stacked yet"
    for observation in seen:
        for frames in (_rays(o)[:, 2] for o in observation):
            # Per ray: one tag or the no-hit flag; fraction 1 exactly when nothing was hit.
            np.testing.assert_array_equal(frames[..., :4].sum(axis=-1), 1.0)
            np.testing.assert_array_equal(frames[..., 3] == 1.0, frames[..., 4] == 1.0)
        assert (_rays(observation[0])[..., :2] == 0).all(), "raised rays see only walls"
    assert max(_rays(o[1])[:, 2, :, 0].max() for o in seen) == 1.0, "ground rays see the block"
    # Older frames shift down by one report (no episode ended in 40 steps).
    np.testing.assert_array_equal(_rays(seen[1][1])[:, 1], _rays(seen[0][1])[:, 2])


def test_ray_distances_match_the_arena() -> None:
    played = play(PushBlockScene, seed=0, parameters={"block_scale": 4.0})
    played.step()
    scene = played.scene
    batch = played.academy.batch("PushBlock")
    slots = np.array([0, 1])
    scene.agent_position[slots] = [[0.0, 0.0], [0.0, 0.0]]
    scene.heading[slots] = np.pi / 2  # looking at the goal (+y)
    scene.block_position[slots] = [[0.0, 4.0], [-9.0, -9.0]]
    ground, raised = (o.reshape(2, 7, 5) for o in scene.collect_observations(batch, slots))
    assert scene.block_half[0] == 2.0, "block_scale 4 -> a 4 x 4 block"
    # Forward ray, sphere cast of radius 0.5, 20 long: the block face at y = 2, the goal strip at
    # y = 8, the far wall at y = 12.
    np.testing.assert_allclose(ground[0, 0], [1, 0, 0, 0, 1.5 / 20], atol=1e-6)
    np.testing.assert_allclose(ground[1, 0], [0, 1, 0, 0, 7.5 / 20], atol=1e-6)
    np.testing.assert_allclose(raised[0, 0], [0, 0, 1, 0, 11.5 / 20], atol=1e-6)
    # Rays 5 and 6 point right (+x) and left (-x): side walls 12 away.
    np.testing.assert_allclose(ground[1, 5], [0, 0, 1, 0, 11.5 / 20], atol=1e-6)


def test_block_in_goal_pays_five_and_ends_the_episode() -> None:
    def push(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros((slots.size, 0), np.float32), np.ones((slots.size, 1), np.int32)

    played = play(PushBlockScene, seed=1, policy=push)
    played.step()
    scene = played.scene
    scene.agent_position[0] = [0.0, 4.0]
    scene.block_position[0] = [0.0, 5.6]
    scene.heading[0] = np.pi / 2
    agent_id = int(played.academy.batch("PushBlock").ids[0])
    ended = []
    for _ in range(40):
        played.step()
        ended += [t for t in terminal_reports(played.academy) if t.agent_id == agent_id]
        if ended:
            break
    assert len(ended) == 1 and not ended[0].interrupted
    # +5 plus -1/5000 for each action since the last decision (at most a decision period).
    assert 5.0 - 5 * 0.0002 - 1e-6 <= ended[0].reward <= 5.0 - 0.0002 + 1e-6
    assert scene.goals >= 1
    assert scene.block_position[0, 1] <= SPAWN_HALF, "a new episode placed a new block"


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(PushBlockScene, seed=seed, policy=random_policy(4))
        played.step(100)
        return played.digests

    first = digests(8)
    assert digests(8) == first
    assert digests(9) != first


def test_heuristic_delivers_blocks_far_more_often_than_chance() -> None:
    scripted = play(PushBlockScene, seed=3)
    scripted.step(1500)
    chance = play(PushBlockScene, seed=3, policy=random_policy(5))
    chance.step(1500)
    assert scripted.scene.goals >= 40
    assert scripted.scene.goals > 10 * max(chance.scene.goals, 1)


def _forward(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((slots.size, 0), np.float32), np.ones((slots.size, 1), np.int32)


def _clear(scene: Any, agent_x: float) -> None:
    """Every area: agent at ``(agent_x, -4)`` facing ``+x`` at rest, block out of the way."""
    scene.agent_position[:] = [agent_x, -4.0]
    scene.heading[:] = 0.0
    scene.agent_velocity[:] = 0.0
    scene.block_position[:] = [0.0, -9.0]
    scene.block_velocity[:] = 0.0


def test_motion_follows_unity_velocity_change_drag_and_friction() -> None:
    played = play(PushBlockScene, seed=5, policy=_forward)
    played.step()
    scene = played.scene
    _clear(scene, -11.0)
    # agentRunSpeed 3 per step, drag 4 (0.92 kept), friction (0.6 + 0) / 2 with g = 9.81 * 2.5.
    loss = 0.3 * 9.81 * 2.5 * 0.02
    speed = travelled = 0.0
    for _ in range(30):
        played.step()
        speed = (speed + 3.0) * 0.92 - loss
        travelled += speed * 0.02
        np.testing.assert_allclose(scene.agent_velocity[:, 0], speed, rtol=1e-9)
        np.testing.assert_allclose(scene.agent_velocity[:, 1], 0.0, atol=1e-9)
        np.testing.assert_allclose(scene.agent_position[:, 0], -11.0 + travelled, rtol=1e-9)
    assert 29.0 < speed < 31.0, "about 30 units/s after 30 steps (top speed about 32.7)"
    # Ground friction follows ``dynamic_friction``: (0.6 + 0.6) / 2 on a sticky ground.
    sticky = play(PushBlockScene, seed=5, policy=_forward, parameters={"dynamic_friction": 0.6})
    sticky.step()
    _clear(sticky.scene, -11.0)
    sticky.step()
    np.testing.assert_allclose(
        sticky.scene.agent_velocity[:, 0], 3.0 * 0.92 - 0.6 * 9.81 * 2.5 * 0.02
    )


def test_block_slides_on_with_its_own_drag_and_friction() -> None:
    played = play(PushBlockScene, seed=5, policy=idle_policy)
    played.step()
    scene = played.scene
    _clear(scene, -11.0)
    scene.block_position[:] = [0.0, 0.0]
    scene.block_velocity[:] = [10.0, 0.0]
    played.step()
    # block_drag 0.5 keeps 0.99; friction 0.3 * 24.525 * 0.02 comes off.
    np.testing.assert_allclose(scene.block_velocity[:, 0], 10.0 * 0.99 - 0.3 * 9.81 * 2.5 * 0.02)
    played.step(200)
    np.testing.assert_array_equal(scene.block_velocity, 0.0)
    assert 4.0 < scene.block_position[0, 0] < 5.5, "it stops by itself, well before the wall"


def test_top_speed_agent_stops_at_walls_and_blocks_without_passing_through() -> None:
    played = play(PushBlockScene, seed=6, policy=_forward)
    played.step()
    scene = played.scene
    _clear(scene, -11.0)
    limit = ARENA_HALF - 0.5
    fastest = 0.0
    for _ in range(60):
        played.step()
        fastest = max(fastest, float(scene.agent_velocity[0, 0]))
        assert (scene.agent_position[:, 0] <= limit).all(), "never beyond the wall"
    assert fastest > 25.0, "it hit the wall close to top speed (0.5+ units per step)"
    np.testing.assert_allclose(scene.agent_position[:, 0], limit)
    np.testing.assert_array_equal(scene.agent_velocity[:, 0], 0.0)
    # A block against the far wall cannot give way: the agent stops at its face.
    _clear(scene, -11.0)
    scene.block_position[:] = [ARENA_HALF - 1.0, -4.0]
    for _ in range(60):
        played.step()
        assert (scene.agent_position[:, 0] <= ARENA_HALF - 2.5 + 1e-9).all(), "not into the block"
        np.testing.assert_allclose(scene.block_position[:, 0], ARENA_HALF - 1.0)
    np.testing.assert_allclose(scene.agent_position[:, 0], ARENA_HALF - 2.5)


def test_pushing_shares_the_agent_speed_with_the_block() -> None:
    played = play(PushBlockScene, seed=6, policy=_forward)
    played.step()
    scene = played.scene
    _clear(scene, -11.0)
    scene.agent_velocity[:] = [20.0, 0.0]
    scene.block_position[:] = [-9.4, -4.0]  # its face 0.1 ahead of the agent's disc
    played.step()
    # Equal masses (10 and 10): after the contact both move at the mean of their speeds.
    agent, block = scene.agent_velocity[0, 0], scene.block_velocity[0, 0]
    assert agent == pytest.approx(block, abs=1e-9)
    assert 10.0 < block < 13.0
    assert scene.block_position[0, 0] - scene.agent_position[0, 0] >= 1.5 - 1e-9


PEER_PUSHBLOCK = """
import hashlib

def run(seed, steps):
    env = open_env("PushBlock", seed=seed)
    out = {"pid": env._process.pid, "digests": [], "rewards": set(), "terminals": 0,
           "layout_errors": 0, "raised_sees_block": 0}
    try:
        env.reset()
        name = "PushBlock?team=0"
        spec = env.behavior_specs[name]
        if steps > 100:
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
            out["terminals"] += len(t)
            out["digests"].append(hashlib.md5(
                b"".join(np.ascontiguousarray(o).tobytes() for o in d.obs)).hexdigest())
            out["rewards"].update(round(r, 6) for r in d.reward.tolist())
            for o in d.obs:
                newest = o.reshape(len(d), 3, 7, 5)[:, 2]
                out["layout_errors"] += int((newest[..., :4].sum(-1) != 1).sum())
            out["raised_sees_block"] += int(d.obs[0].reshape(len(d), 3, 7, 5)[..., 0].sum())
            env.set_actions(name, ActionTuple(discrete=rng.integers(0, 7, (len(d), 1))))
            env.step()
    finally:
        out["code"] = close_env(env)
    out["rewards"] = sorted(out["rewards"])
    return out

long_run = run(21, RANDOM_STEPS)
again = run(21, 30)
emit({"long": long_run, "again": again["digests"],
      "codes": [long_run["code"], again["code"]],
      "pids": [long_run["pid"], again["pid"]]})
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_plays_pushblock(peer: Callable[..., Any]) -> None:
    """A shorter random run: the peer's pure-Python protobuf makes every step cost tens of ms."""
    _check_peer_run(peer(PEER_PUSHBLOCK.replace("RANDOM_STEPS", str(DEFAULT_RANDOM_STEPS))))


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_official_peer_plays_pushblock_for_500_random_steps(peer: Callable[..., Any]) -> None:
    _check_peer_run(peer(PEER_PUSHBLOCK.replace("RANDOM_STEPS", "500"), timeout=270))


def _check_peer_run(result: Any) -> None:
    long_run = result["long"]
    spec = long_run["spec"]
    assert spec["names"] == ["PushBlock?team=0"]
    assert spec["obs"] == [
        ["StackingSensor_size3_OffsetRayPerceptionSensor", [105], [1], 0],
        ["StackingSensor_size3_RayPerceptionSensor", [105], [1], 0],
    ]
    assert spec["branches"] == [7] and spec["continuous"] == 0
    assert spec["ids"] == list(range(32))
    assert long_run["layout_errors"] == 0 and long_run["raised_sees_block"] == 0
    # -1/5000 per executed action: five between decisions, fewer after an episode ended.
    assert set(long_run["rewards"]) <= {round(-0.0002 * k, 6) for k in range(6)}
    assert -0.001 in long_run["rewards"]
    assert result["again"] == long_run["digests"][:30], "same seed, same actions, same run"
    assert result["codes"] == [0, 0]
    assert not any(player_alive(pid) for pid in result["pids"]), "no player left behind"
