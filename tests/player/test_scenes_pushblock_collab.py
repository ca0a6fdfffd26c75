"""PushBlockCollab: the behavior spec (one PNG grid sensor, discrete 7, three agents per area), one
multi-agent group per area, group rewards by block size and the step penalty, the group episode
ending together (all blocks in) or interrupted (max environment steps), heavier blocks needing
more pushers, the grid sensor's layout, determinism, a heuristic that clearly beats chance, and the
groups as the PettingZoo front reads them from a real player over gRPC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scene_harness import idle_policy, play, random_policy, terminal_reports

from unity_gym.pettingzoo import parallel_env
from unity_gym.player.scenes.pushblock import ARENA_HALF, GOAL_LINE
from unity_gym.player.scenes.pushblock_collab import (
    BLOCK_HALF,
    GRID_TAGS,
    MAX_ENVIRONMENT_STEPS,
    PushBlockCollabScene,
)
from unity_gym.player.specs import Compression

pytestmark = pytest.mark.timeout(120)

PENALTY = 0.5 / MAX_ENVIRONMENT_STEPS
#: Block index of each size in an area's block arrays.
SMALL, LARGE, VERY_LARGE = 0, 2, 4
#: Where idle agents wait, out of every block's way.
FAR = [[-10.0, -10.5], [10.0, -10.5], [0.0, -11.0]]


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = PushBlockCollabScene().behaviors()
    assert spec.full_name == "PushBlockCollab?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [("GridSensor", (6, 20, 20))]
    assert wire[0].compression is Compression.PNG
    assert GRID_TAGS == ("wall", "agent", "goal", "blockSmall", "blockLarge", "blockVeryLarge")
    assert spec.action_spec.discrete_branches == (7,)
    assert spec.action_spec.continuous_size == 0
    assert spec.agents_per_area == 3 and spec.max_step == 0
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions
    assert PushBlockCollabScene.default_area_count == 4
    assert PushBlockCollabScene().options["max_environment_steps"] == MAX_ENVIRONMENT_STEPS == 5000
    with pytest.raises(Exception, match="max_environment_steps"):
        PushBlockCollabScene({"max_environment_steps": "-1"}).behaviors()
    with pytest.raises(Exception, match="multiple of 3"):
        PushBlockCollabScene(num_agents=4)


def test_one_group_per_area() -> None:
    played = play(PushBlockCollabScene)
    played.step()
    (batch,) = played.academy.batches
    groups = batch.group_id.reshape(4, 3)
    assert (groups > 0).all()
    assert (groups == groups[:, :1]).all(), "the three agents of an area share a group"
    assert len(set(groups[:, 0].tolist())) == 4, "every area has its own group"
    np.testing.assert_array_equal(groups[:, 0], played.scene.groups)


def _only_block(scene: Any, area: int, block: int) -> None:
    """Leave ``block`` alone in play in ``area``, with the agents out of the way."""
    scene.active[area] = False
    scene.active[area, block] = True
    scene.agent_position[area] = FAR
    scene.agent_velocity[area] = 0.0


@pytest.mark.parametrize(("block", "value"), [(SMALL, 1.0), (LARGE, 2.0), (VERY_LARGE, 3.0)])
def test_last_block_in_pays_its_size_and_ends_the_group_together(block: int, value: float) -> None:
    played = play(PushBlockCollabScene, seed=4, policy=idle_policy, num_agents=6)
    played.step()  # Academy step 0: the decision goes out, then one step penalty
    scene = played.scene
    _only_block(scene, 0, block)
    scene.block_position[0, block] = [0.0, GOAL_LINE - BLOCK_HALF[block] - 0.02]
    scene.block_velocity[0, block] = [0.0, 3.0]
    played.step()
    ended = terminal_reports(played.academy)
    assert sorted(t.agent_id for t in ended) == [0, 1, 2], "the whole group, and only it, ends"
    assert {t.group_id for t in ended} == {int(scene.groups[0])}
    assert not any(t.interrupted for t in ended)
    assert all(t.reward == 0.0 for t in ended), "no individual rewards"
    for report in ended:
        assert report.group_reward == pytest.approx(value - 2 * PENALTY, abs=1e-5)
    assert scene.scored.tolist() == [
        int(block == SMALL),
        int(block == LARGE),
        int(block == VERY_LARGE),
    ]
    assert scene.active[0].all() and scene.timer[0] == 0, "the area was reset"
    assert scene.block_position[0, :, 1].max() + BLOCK_HALF.max() < GOAL_LINE


def test_a_block_in_with_others_left_pays_the_next_decision_without_ending() -> None:
    decided: list[np.ndarray] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        decided.extend(r.group_rewards.copy() for r in batch.queued if not r.done)
        return idle_policy(scene, batch, slots, obs)

    played = play(PushBlockCollabScene, seed=4, policy=record, num_agents=3)
    played.step()  # Academy step 0: first decision (group reward 0)
    scene = played.scene
    scene.agent_position[0] = FAR
    scene.block_position[0, LARGE] = [0.0, GOAL_LINE - BLOCK_HALF[LARGE] - 0.02]
    scene.block_velocity[0, LARGE] = [0.0, 3.0]
    played.step()
    assert terminal_reports(played.academy) == []
    assert not scene.active[0, LARGE] and scene.active[0].sum() == 5
    played.step(4)  # Academy step 5: the next decision carries what the group earned
    assert len(decided) == 2
    np.testing.assert_array_equal(decided[0], 0.0)
    np.testing.assert_allclose(decided[1], [2.0 - 5 * PENALTY] * 3, atol=1e-5)
    assert scene.scored.tolist() == [0, 1, 0]


def test_max_environment_steps_interrupts_the_group() -> None:
    played = play(
        PushBlockCollabScene,
        seed=3,
        policy=idle_policy,
        num_agents=6,
        options={"max_environment_steps": 40},
    )
    played.step(39)
    assert terminal_reports(played.academy) == []
    played.step()
    ended = terminal_reports(played.academy)
    assert sorted(t.agent_id for t in ended) == list(range(6))
    assert all(t.interrupted for t in ended)
    # The penalty scales with the limit: -0.5/40 per step since the last decision (step 35).
    for report in ended:
        assert report.group_reward == pytest.approx(-4 * 0.5 / 40, abs=1e-5)
    assert (played.scene.timer == 0).all() and played.scene.active.all()


@pytest.mark.parametrize(
    ("block", "pushers", "moves"),
    [
        (VERY_LARGE, 1, False),
        (VERY_LARGE, 2, False),
        (VERY_LARGE, 3, True),
        (LARGE, 1, False),
        (LARGE, 2, True),
        (SMALL, 1, True),
    ],
)
def test_a_block_moves_only_with_enough_pushers(block: int, pushers: int, moves: bool) -> None:
    def push(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        forward = (slots % 3 < pushers).astype(np.int32)  # action 1 = forward
        return np.zeros((slots.size, 0), np.float32), forward[:, None]

    played = play(PushBlockCollabScene, seed=1, policy=push, num_agents=3)
    played.step()
    scene = played.scene
    _only_block(scene, 0, block)
    half = BLOCK_HALF[block]
    start = np.array([0.0, -5.0])
    scene.block_position[0, block] = start
    scene.block_velocity[0, block] = 0.0
    lanes = np.array([-0.6, 0.0, 0.6]) * min(half, 1.0)
    for agent in range(pushers):
        scene.agent_position[0, agent] = [lanes[agent], start[1] - half - 0.6]
    scene.heading[0] = np.pi / 2  # facing the goal (+y)
    played.step(25)  # fast agents: the block must not reach the goal yet
    moved = scene.block_position[0, block] - start
    if moves:
        assert moved[1] > 2.0 and abs(moved[0]) < 0.5
    else:
        np.testing.assert_allclose(moved, 0.0, atol=1e-9)
        pushing = scene.agent_position[0, :pushers, 1]
        assert (pushing < start[1] - half - 0.49).all(), "the pushers stay outside the block"


def test_a_lone_agent_at_top_speed_stops_at_blocks_it_cannot_move() -> None:
    def forward(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        return np.zeros((slots.size, 0), np.float32), np.ones((slots.size, 1), np.int32)

    played = play(PushBlockCollabScene, seed=1, policy=forward, num_agents=3)
    played.step()
    scene = played.scene
    scene.active[0] = False
    scene.active[0, [SMALL, VERY_LARGE]] = True
    # A very large block in the middle and a small one against the right wall.
    scene.block_position[0, VERY_LARGE] = [0.0, -6.0]
    scene.block_position[0, SMALL] = [ARENA_HALF - 0.5, 2.0]
    scene.block_velocity[0] = 0.0
    scene.agent_position[0] = [[-11.0, -6.0], [-11.0, 2.0], [0.0, -11.0]]
    scene.agent_velocity[0] = 0.0
    scene.heading[0] = [0.0, 0.0, np.pi]  # two run towards +x, one stays at the bottom
    fastest = 0.0
    for _ in range(60):
        played.step()
        fastest = max(fastest, float(scene.agent_velocity[0, :2, 0].max()))
        assert scene.agent_position[0, 0, 0] <= -1.5 - 0.5 + 1e-9, "not into the very large block"
        assert scene.agent_position[0, 1, 0] <= ARENA_HALF - 1.5 + 1e-9, "not into the small block"
    assert fastest > 25.0, "they hit the blocks near top speed (about 32 units/s)"
    np.testing.assert_allclose(scene.block_position[0, VERY_LARGE], [0.0, -6.0])
    np.testing.assert_allclose(scene.block_position[0, SMALL], [ARENA_HALF - 0.5, 2.0])
    np.testing.assert_allclose(scene.agent_position[0, :2, 0], [-2.0, ARENA_HALF - 1.5])


def _one_view(scene: Any, heading: float) -> np.ndarray:
    """Agent 0 of area 0 at the centre facing ``heading``: a small block 3 ahead, agent 1 3 to
    the left, agent 2 and the other blocks out of sight."""
    forward = np.array([np.cos(heading), np.sin(heading)])
    left = np.array([-forward[1], forward[0]])
    scene.active[0] = False
    scene.active[0, SMALL] = True
    scene.block_position[0, SMALL] = 3.0 * forward
    scene.agent_position[0] = [[0.0, 0.0], 3.0 * left, [0.0, -11.0]]
    scene.heading[0] = heading
    batch = scene.ctx.batch("PushBlockCollab")
    (grid,) = scene.collect_observations(batch, np.array([0]))
    assert grid.shape == (1, 6, 20, 20) and grid.dtype == np.float32
    return grid[0]


def test_grid_sensor_is_one_hot_around_the_agent_and_turns_with_it() -> None:
    played = play(PushBlockCollabScene, policy=idle_policy, num_agents=3)
    played.step()
    wall, agent, goal, small, large, very_large = range(6)
    # Facing the goal: rows run from 9.5 ahead to 9.5 behind, columns from left to right.
    grid = _one_view(played.scene, np.pi / 2)
    assert set(np.unique(grid).tolist()) <= {0.0, 1.0} and grid.sum(axis=0).max() == 1.0
    assert set(zip(*np.nonzero(grid[small]), strict=True)) == {(6, 9), (6, 10), (7, 9), (7, 10)}
    assert set(zip(*np.nonzero(grid[agent]), strict=True)) == {(9, 6), (9, 7), (10, 6), (10, 7)}
    assert grid[agent, 8:12, 8:12].sum() == 0, "an agent does not see itself"
    assert grid[goal, :2].all() and grid[goal, 2:].sum() == 0  # goal from y = 8 on
    assert grid[wall].sum() == grid[large].sum() == grid[very_large].sum() == 0
    # Facing +x (the goal now on the left): the same picture; the wall band (from 11.5) is
    # still out of a 9.5 reach, until the agent walks 4 towards it.
    turned = _one_view(played.scene, 0.0)
    np.testing.assert_array_equal(turned[small], grid[small])
    np.testing.assert_array_equal(turned[agent], grid[agent])
    assert turned[goal, :, :2].all() and turned[goal, :, 2:].sum() == 0
    assert turned[wall].sum() == 0 and ARENA_HALF == 12.0
    played.scene.agent_position[0, 0] = [4.0, 0.0]
    batch = played.scene.ctx.batch("PushBlockCollab")
    (near_wall,) = played.scene.collect_observations(batch, np.array([0]))
    # Cell centres 11.5 and 12.5 ahead lie in the wall; 13.5 is behind it, 10.5 in front.
    assert near_wall[0, wall, 1:3].all() and near_wall[0, wall].sum() == 2 * 20


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(PushBlockCollabScene, seed=seed, policy=random_policy(2), num_agents=6)
        played.step(60)
        return played.digests

    first = digests(14)
    assert digests(14) == first
    assert digests(15) != first


def test_heuristic_team_scores_far_more_than_random_play() -> None:
    values = np.array([1, 2, 3])
    heuristic = play(PushBlockCollabScene, seed=2)
    heuristic.step(2000)
    chance = play(PushBlockCollabScene, seed=2, policy=random_policy(5))
    chance.step(2000)
    scored, random_scored = heuristic.scene.scored, chance.scene.scored
    assert scored.sum() >= 12 and scored[2] >= 2, "it delivers very large blocks too"
    assert scored @ values >= 5 * max(int(random_scored @ values), 1)


def test_pettingzoo_front_reads_groups_and_group_rewards_from_a_real_player() -> None:
    game = parallel_env(
        scene="PushBlockCollab",
        seed=3,
        num_agents=6,
        scene_options={"max_environment_steps": 23},
    )
    try:
        observations, infos = game.reset()
        assert game.agents == [f"PushBlockCollab_{i}" for i in range(6)]
        groups = [infos[a]["group_id"] for a in game.agents]
        assert groups[0] == groups[1] == groups[2] > 0
        assert groups[3] == groups[4] == groups[5] > 0 and groups[0] != groups[3]
        # The 6-channel grid crossed the wire as two PNGs and is still one-hot per cell.
        space = game.observation_space("PushBlockCollab_0")
        assert getattr(space, "shape", None) == (20, 20, 6)
        for grid in observations.values():
            assert set(np.unique(grid).tolist()) <= {0, 255}
            assert (np.count_nonzero(grid, axis=-1) <= 1).all() and grid[..., 3:].any()
        idle = {a: 0 for a in game.agents}
        _, rewards, terminations, truncations, infos = game.step(idle)
        assert all(r == 0.0 for r in rewards.values())
        per_step = 0.5 / 23
        for name in game.possible_agents:
            assert infos[name]["group_reward"] == pytest.approx(-5 * per_step, abs=1e-5)
        # The whole group is interrupted at once after 23 Academy steps.
        for _ in range(10):
            if not game.agents:
                break
            _, _, terminations, truncations, infos = game.step({a: 0 for a in game.agents})
        assert not game.agents
        assert all(truncations.values()) and not any(terminations.values())
        assert len(truncations) == 6
    finally:
        game.close()


PEER_COLLAB = """
name = "PushBlockCollab?team=0"
env = open_env("PushBlockCollab", seed=7,
               extra=["--num-agents", "6", "--option", "max_environment_steps=23"])
out = {"pid": env._process.pid, "decisions": [], "terminals": []}
try:
    env.reset()
    spec = env.behavior_specs[name]
    out["names"] = sorted(env.behavior_specs)
    out["obs"] = [[o.name, list(o.shape), [int(p) for p in o.dimension_property]]
                  for o in spec.observation_specs]
    out["branches"] = list(spec.action_spec.discrete_branches)
    for step in range(6):
        d, t = env.get_steps(name)
        out["decisions"].append([d.agent_id.tolist(), [int(g) for g in d.group_id],
                                 d.group_reward.tolist(),
                                 [sorted(set(np.unique(o).tolist())) for o in d.obs]])
        out["terminals"].append([t.agent_id.tolist(), [int(g) for g in t.group_id],
                                 t.group_reward.tolist(), t.interrupted.tolist()])
        if len(d):
            env.set_actions(name, ActionTuple(discrete=np.zeros((len(d), 1), np.int32)))
        env.step()
finally:
    out["code"] = close_env(env)
emit(out)
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_reads_the_spec_groups_and_group_rewards(peer: Any) -> None:
    result = peer(PEER_COLLAB)
    assert result["names"] == ["PushBlockCollab?team=0"]
    assert result["obs"] == [["GridSensor", [6, 20, 20], [1, 2, 2]]]
    assert result["branches"] == [7]
    first_ids, first_groups, first_rewards, first_values = result["decisions"][0]
    assert first_ids == list(range(6)) and first_rewards == [0.0] * 6
    assert first_groups[:3] == [first_groups[0]] * 3 and first_groups[3:] == [first_groups[3]] * 3
    assert first_groups[0] > 0 and first_groups[3] > 0 and first_groups[0] != first_groups[3]
    assert all(values == [0.0, 1.0] for values in first_values), "one-hot after PNG decoding"
    for ids, groups, rewards, _ in result["decisions"][1:]:
        if ids:
            assert groups == first_groups
            assert rewards == pytest.approx([-5 * 0.5 / 23] * 6, abs=1e-5)
    ended = [t for t in result["terminals"] if t[0]]
    assert len(ended) == 1, "both areas are interrupted once, in the same step"
    ids, groups, rewards, interrupted = ended[0]
    assert sorted(ids) == list(range(6)) and all(interrupted)
    assert groups == [first_groups[i] for i in ids]
    # Interrupted after Academy step 22: two penalties since the decision of step 20.
    assert rewards == pytest.approx([-2 * 0.5 / 23] * 6, abs=1e-5)
    assert result["code"] == 0
