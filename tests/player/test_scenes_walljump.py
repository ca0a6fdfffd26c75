"""WallJump: the wire contract seen by the official peer (two behaviors with stacked ray and
vector sensors), the behavior chosen by the wall drawn at episode begin from the wall-height
parameters, rewards (step penalty, goal, falls), jumping, the 2000-step limit, Unity's movement
facts (run speed against drag and friction, the jump's 11 steps, the frictionless block, the
grounded ray) and a heuristic that clearly beats chance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import play, player_alive, random_policy, terminal_reports

from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes.walljump import (
    AGENT_JUMP_HEIGHT,
    BIG,
    GOAL_CENTRE,
    GOAL_HALF,
    MAX_STEP,
    SMALL,
    WALL_HIGH,
    WALL_LOW,
    WallJumpScene,
    flat_ground_speed,
    wall_top,
)
from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage

pytestmark = pytest.mark.timeout(120)


def _constant(*actions: int) -> Any:
    """A policy that gives every deciding agent the same four branch values."""

    def act(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        discrete = np.tile(np.array(actions, np.int32), (slots.size, 1))
        return np.zeros((slots.size, 0), np.float32), discrete

    return act


def test_behaviors_match_the_unity_scene() -> None:
    specs = WallJumpScene().behaviors()
    assert [s.full_name for s in specs] == ["SmallWallJump?team=0", "BigWallJump?team=0"]
    for spec in specs:
        wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
        assert [(s.wire_name, s.wire_shape) for s in wire] == [
            ("StackingSensor_size6_OffsetRayPerceptionSensor", (210,)),
            ("StackingSensor_size6_RayPerceptionSensor", (210,)),
            ("StackingSensor_size6_VectorSensor_size4", (24,)),
        ]
        assert spec.action_spec.discrete_branches == (3, 3, 3, 2)
        assert spec.action_spec.continuous_size == 0
        assert spec.agents_per_area == 1
        assert spec.decision is None, "the scene requests decisions for the active agent only"
    assert WallJumpScene.default_area_count == 24


def test_each_area_decides_under_the_behavior_of_its_wall() -> None:
    seen: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        seen.append((batch.spec.name, slots.copy(), scene.configuration[slots], scene.wall[slots]))

    parameters = {"no_wall_height": 2.0, "small_wall_height": 3.0, "big_wall_height": 7.0}
    played = play(WallJumpScene, seed=4, policy=record, parameters=parameters)
    played.step(400)  # the heuristic plays: many episodes end and redraw their wall
    for name, _slots, configuration, wall in seen:
        if name == BIG:
            assert (configuration >= 2).all()
            np.testing.assert_allclose(wall, wall_top(np.array(7.0)))  # 3.05 above the floor
        else:
            assert (configuration <= 1).all()
            expected = np.where(configuration == 0, wall_top(np.array(2.0)), wall_top(3.0))
            np.testing.assert_allclose(wall, expected)  # 0.55 and 1.05
    # Every area decides once every 5 steps, under one of the two behaviors.
    counts = np.bincount(np.concatenate([slots for _n, slots, *_ in seen]), minlength=24)
    assert counts.min() == counts.max() == 80
    assert {name for name, *_ in seen} == {SMALL, BIG}


@pytest.mark.parametrize(("walls", "behavior"), [("small", SMALL), ("big", BIG)])
def test_walls_option_keeps_one_behavior(walls: str, behavior: str) -> None:
    deciding: set[str] = set()

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        deciding.add(batch.spec.name)

    played = play(WallJumpScene, seed=9, options={"walls": walls}, policy=record)
    played.step(300)
    assert deciding == {behavior}
    assert played.scene.goals > 0, "episodes ended and restarted under the same behavior"
    with pytest.raises(PlayerError, match="walls='tall' must be one of any, small, big"):
        WallJumpScene({"walls": "tall"})


def test_wall_parameters_are_read_at_episode_begin_only() -> None:
    played = play(WallJumpScene, seed=5, policy=_constant(0, 0, 0, 0))
    played.step()
    scene = played.scene
    before = scene.wall.copy()
    np.testing.assert_array_equal(np.isin(before, [0.0, wall_top(4.0), wall_top(8.0)]), True)
    channels = played.academy.channels
    for key in ("no_wall_height", "small_wall_height", "big_wall_height"):
        message = OutgoingMessage()
        message.write_string(key)
        message.write_int32(0)
        message.write_float32(10.0)
        channels.parameters.on_message_received(IncomingMessage(message.buffer))
    played.step(5)
    np.testing.assert_array_equal(scene.wall, before)  # no episode began: walls unchanged
    # Agents 0-2 leave the platform: their next episodes read the new heights.
    scene.position[:3] = [[-10.7, -12.0], [10.7, -12.0], [0.0, -14.7]]
    played.step()
    np.testing.assert_allclose(scene.wall[:3], wall_top(10.0))
    np.testing.assert_array_equal(scene.wall[3:], before[3:])


def _active_batch(played: Any, area: int) -> Any:
    """The batch whose agent decides in ``area`` now."""
    return played.academy.batch(BIG if played.scene.active[area] else SMALL)


def _terminal_of(played: Any, area: int, steps: int) -> Any:
    """Step until area ``area``'s active agent reports a terminal step; that report."""
    batch = _active_batch(played, area)
    agent_id = int(batch.ids[area])
    for _ in range(steps):
        played.step()
        found = [t for t in terminal_reports(played.academy) if t.agent_id == agent_id]
        if found:
            return found[0]
    raise AssertionError(f"area {area} did not end in {steps} steps")


def test_step_penalty_goal_and_falls() -> None:
    played = play(WallJumpScene, seed=6, policy=_constant(0, 0, 0, 0))
    played.step(5)
    scene = played.scene
    # The goal (on the ground) sets +1; leaving the platform sets -1; the block falling too.
    scene.position[0] = GOAL_CENTRE
    assert _terminal_of(played, 0, 3).reward == pytest.approx(1.0)
    scene.position[1] = [10.8, -12.0]
    ended = _terminal_of(played, 1, 3)
    assert ended.reward == pytest.approx(-1.0) and not ended.interrupted
    scene.block[2] = [9.9, -6.0]
    scene.position[2] = [7.9, -6.0]
    scene.velocity[2] = [6.0, 0.0]
    assert _terminal_of(played, 2, 20).reward == pytest.approx(-1.0)
    assert scene.goals == 1 and scene.falls == 2
    assert (scene.position[:3, 1] == -12.0).all(), "new episodes began"


def test_step_penalty_is_reported_at_decisions() -> None:
    rewards: list[float] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        for reports in batch.queued:  # what goes to the trainer at this decision
            if not reports.done:
                rewards.extend(reports.rewards.tolist())
        return _constant(0, 0, 0, 0)(scene, batch, slots, obs)

    played = play(WallJumpScene, seed=6, policy=record)
    played.step(21)
    # First decision: nothing yet; later ones: five actions at -0.0005.
    assert rewards[:24] == [0.0] * 24
    np.testing.assert_allclose(rewards[24:], -0.0025, atol=1e-7)


def _run_up(wall_height: float, *, from_block: bool) -> tuple[float, float]:
    """Run and jump at a wall of ``wall_height``; the largest y and elevation reached."""

    def run_and_jump(
        scene: Any, batch: Any, slots: np.ndarray, obs: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        near = scene.position[slots, 1] > WALL_LOW - 1.4
        discrete = np.zeros((slots.size, 4), np.int32)
        discrete[:, 0] = 1
        discrete[:, 3] = near
        return np.zeros((slots.size, 0), np.float32), discrete

    keys = ("no_wall_height", "small_wall_height", "big_wall_height")
    played = play(
        WallJumpScene,
        seed=7,
        policy=run_and_jump,
        parameters=dict.fromkeys(keys, wall_height),
    )
    played.step()
    scene = played.scene
    scene.heading[0] = np.pi / 2
    scene.velocity[0] = 0.0
    if from_block:
        scene.block[0] = [0.0, WALL_LOW - 1.5]
        scene.position[0] = [0.0, WALL_LOW - 2.5]
        scene.elevation[0] = 2.0
    else:
        scene.block[0] = [-7.0, -8.0]
        scene.position[0] = [0.0, WALL_LOW - 4.0]
    best_y = best_height = -np.inf
    for _ in range(120):
        played.step()
        best_y = max(best_y, float(scene.position[0, 1]))
        best_height = max(best_height, float(scene.elevation[0]))
        if scene.position[0, 1] > WALL_HIGH + 0.5:
            break
    return best_y, best_height


def test_jumps_clear_small_walls_and_big_walls_only_from_the_block() -> None:
    past = WALL_HIGH + 0.5
    assert _run_up(4.0, from_block=False)[0] > past, "a small wall (1.5 high) is jumped"
    y, height = _run_up(8.0, from_block=False)
    assert y < WALL_LOW and height > 1.5, "the big wall (3.5 high) stops a jump from the floor"
    assert _run_up(8.0, from_block=True)[0] > past, "from the block the big wall is cleared"


def _on_open_floor(*actions: int) -> Any:
    """Every area without walls, its agent at rest facing +y at (0, -14), the block aside."""
    played = play(
        WallJumpScene,
        seed=2,
        options={"walls": "small"},
        policy=_constant(*actions),
        parameters={"no_wall_height": 0.0, "small_wall_height": 0.0},
    )
    played.step()
    scene = played.scene
    scene.heading[:] = np.pi / 2
    scene.position[:] = [0.0, -14.0]
    scene.velocity[:] = 0.0
    scene.elevation[:] = 0.0
    scene.vertical_speed[:] = 0.0
    scene.jumping_time[:] = 0.0
    scene.block[:] = [-8.0, -5.0]
    scene.block_velocity[:] = 0.0
    return played


def test_forward_pushes_on_flat_ground_reach_the_closed_form_speed() -> None:
    """Unity: a push of agentRunSpeed 3 per step (VelocityChange), drag 2 keeping 0.96 per
    0.02 s step, kinetic friction 0.6 (default material) x 9.81 x gravityMultiplier 2.75 per
    second: v_n = c (1 - 0.96^n) / 0.04 with c = 3 * 0.96 - 0.6 * 26.9775 * 0.02."""
    played = _on_open_floor(1, 0, 0, 0)
    scene = played.scene
    c = 3.0 * 0.96 - 0.6 * 9.81 * 2.75 * 0.02
    for n in range(1, 31):
        played.step()
        if n in (1, 5, 30):
            expected = c * (1.0 - 0.96**n) / 0.04
            np.testing.assert_allclose(scene.velocity[:, 1], expected, rtol=1e-9)
            np.testing.assert_allclose(scene.velocity[:, 0], 0.0, atol=1e-9)
            assert flat_ground_speed(n) == pytest.approx(expected)
    assert flat_ground_speed(1000) == pytest.approx(c / 0.04)  # about 64 units/s


def test_a_standing_jump_rises_for_eleven_steps() -> None:
    """Jump: jumpingTime 0.2 counted down by 0.02 in float32 (11 steps above 0) while
    MoveTowards sets the velocity towards 0.02 * 777 * (2.75 above the start - height), at most
    10 per step; gravity 26.98 and drag 0.96 act in the physics step after it."""
    played = _on_open_floor(0, 0, 0, 1)
    scene = played.scene
    heights = []
    for _ in range(13):
        played.step()
        heights.append(float(scene.elevation[0]))
    first_speed = (10.0 - 9.81 * 2.75 * 0.02) * 0.96
    assert heights[0] == pytest.approx(first_speed * 0.02)
    assert int(np.argmax(heights)) == 10, "rising while jumpingTime > 0: 11 steps"
    assert 2.55 < max(heights) < AGENT_JUMP_HEIGHT
    np.testing.assert_allclose(scene.elevation, scene.elevation[0])


def test_the_block_slides_without_friction() -> None:
    """The block (drag 1) hovers 0.05 above the floor (frozen height): only drag slows it."""
    played = _on_open_floor(0, 0, 0, 0)
    scene = played.scene
    scene.block[:] = [-6.0, -5.0]
    scene.block_velocity[:] = [3.0, 0.0]
    played.step(10)
    np.testing.assert_allclose(scene.block_velocity[:, 0], 3.0 * 0.98**10, rtol=1e-9)
    assert (scene.block[:, 0] > -6.0 + 0.5).all()


def test_grounded_flag_reaches_0_55_below_the_agent() -> None:
    """DoGroundCheck(true): a 1-unit ray from 0.05 below the centre of the 1-unit box."""
    played = _on_open_floor(0, 0, 0, 0)
    scene = played.scene
    batch = _active_batch(played, 0)
    slots = np.arange(2)
    scene.elevation[:2] = [0.54, 0.56]
    grounded = scene.collect_observations(batch, slots)[2][:, 3]
    np.testing.assert_array_equal(grounded, [1.0, 0.0])


def test_the_goal_counts_when_the_agent_overlaps_it() -> None:
    """OnTriggerStay: the agent's body overlapping the goal square (not its centre inside)."""
    played = play(WallJumpScene, seed=6, policy=_constant(0, 0, 0, 0))
    played.step(5)
    scene = played.scene
    scene.position[0] = GOAL_CENTRE + np.array([GOAL_HALF + 0.45, 0.0])
    scene.position[1] = GOAL_CENTRE + np.array([GOAL_HALF + 0.55, 0.0])
    assert _terminal_of(played, 0, 1).reward == pytest.approx(1.0)
    assert scene.goals == 1, "a body 0.05 beside the goal does not score"


def test_episode_is_interrupted_at_max_step() -> None:
    played = play(WallJumpScene, seed=8, policy=_constant(0, 0, 0, 0))
    played.step(3)
    played.scene.episode_steps[4] = MAX_STEP - 2
    batch = _active_batch(played, 4)
    agent_id = int(batch.ids[4])
    played.step()
    assert not [t for t in terminal_reports(played.academy) if t.agent_id == agent_id]
    played.step()
    (ended,) = [t for t in terminal_reports(played.academy) if t.agent_id == agent_id]
    assert ended.interrupted
    assert played.scene.episode_steps[4] == 0


def _mean_return(policy: Any, steps: int) -> tuple[int, float]:
    played = play(WallJumpScene, seed=3, policy=policy)
    returns: list[float] = []
    for _ in range(steps):
        played.step()
        returns += [t.reward for t in terminal_reports(played.academy) if not t.interrupted]
    return played.scene.goals, float(np.mean(returns)) if returns else -1.0


def test_heuristic_reaches_the_goal_far_more_often_than_chance() -> None:
    goals, final = _mean_return(None, 1000)
    chance_goals, chance_final = _mean_return(random_policy(5), 1000)
    assert goals >= 60 and final > 0.9
    assert chance_goals <= 2 and chance_final < 0.0


PEER_WALLJUMP = """
def run(heights, steps):
    params = EnvironmentParametersChannel()
    for key, value in heights.items():
        params.set_float_parameter(key, value)
    env = open_env("WallJump", seed=3, side_channels=[params])
    out = {"pid": env._process.pid, "walls": {}, "ids": {}, "per_step": [], "rewards": set()}
    try:
        env.reset()
        names = sorted(env.behavior_specs)
        out["spec"] = {
            name: [[o.name, list(o.shape)] for o in env.behavior_specs[name].observation_specs]
            + [list(env.behavior_specs[name].action_spec.discrete_branches)]
            for name in names
        }
        for step in range(steps):
            count = 0
            for name in names:
                d, t = env.get_steps(name)
                count += len(d)
                out["ids"].setdefault(name, set()).update(d.agent_id.tolist())
                out["rewards"].update(round(r, 6) for r in d.reward.tolist())
                seen = 0
                for o in d.obs[:2]:
                    seen += int(o.reshape(len(d), 6, 7, 5)[..., 0].sum())
                out["walls"][name] = out["walls"].get(name, 0) + seen
                turn = np.tile([0, 1, 0, 0], (len(d), 1))
                env.set_actions(name, ActionTuple(discrete=turn))
            out["per_step"].append(count)
            env.step()
    finally:
        out["code"] = close_env(env)
    out["ids"] = {k: sorted(v) for k, v in out["ids"].items()}
    out["rewards"] = sorted(out["rewards"])
    return out

only_big = run({"no_wall_height": 0.0, "small_wall_height": 0.0, "big_wall_height": 8.0}, 25)
only_small = run({"no_wall_height": 8.0, "small_wall_height": 8.0, "big_wall_height": 0.0}, 25)
emit({"big": only_big, "small": only_small})
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_sees_walls_only_under_the_behavior_of_high_parameters(
    peer: Callable[..., Any],
) -> None:
    """Agents turn in place (no episode ends); walls show in the rays of the behavior whose
    height parameter is high."""
    result = peer(PEER_WALLJUMP)
    small, big = "SmallWallJump?team=0", "BigWallJump?team=0"
    for run in (result["big"], result["small"]):
        assert sorted(run["spec"]) == [big, small]
        for name in (small, big):
            assert run["spec"][name] == [
                ["StackingSensor_size6_OffsetRayPerceptionSensor", [210]],
                ["StackingSensor_size6_RayPerceptionSensor", [210]],
                ["StackingSensor_size6_VectorSensor_size4", [24]],
                [3, 3, 3, 2],
            ]
        # Each area decides under exactly one behavior at every decision step.
        assert set(run["per_step"]) == {24}
        assert not set(run["ids"][small]) & set(run["ids"][big])
        assert set(run["rewards"]) <= {0.0, -0.0025}
        assert run["code"] == 0 and not player_alive(run["pid"])
    assert result["big"]["walls"][big] > 0 and result["big"]["walls"][small] == 0
    assert result["small"]["walls"][small] > 0 and result["small"]["walls"][big] == 0
