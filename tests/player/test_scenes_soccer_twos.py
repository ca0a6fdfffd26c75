"""SoccerTwos: the wire contract seen by the official peer (team-named stacked ray sensors,
multi-agent groups), group rewards on a goal, the 5000-step interruption, team-relative ray tags,
the ``ball_touch`` parameter, determinism and a heuristic that clearly beats chance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import Policy, idle_policy, play, player_alive, random_policy, terminal_reports

from unity_gym.player.scenes.soccer_twos import (
    _BALL_BOUNDS,
    _PLAYER_BOUNDS,
    AGENT_RADIUS,
    BALL_RADIUS,
    HALF_LENGTH,
    HALF_WIDTH,
    MAX_ENVIRONMENT_STEPS,
    SHOT_START,
    SoccerTwosScene,
)

pytestmark = pytest.mark.timeout(120)

#: Random steps of the default peer test (500 in the ``slow`` variant).
DEFAULT_RANDOM_STEPS = 150


def _per_team(first: Policy | None, second: Policy | None) -> Policy:
    def act(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        chosen = first if batch.spec.team_id == 0 else second
        return chosen(scene, batch, slots, obs) if chosen is not None else None

    return act


def test_behaviors_match_the_unity_scene() -> None:
    specs = SoccerTwosScene().behaviors()
    assert [s.full_name for s in specs] == ["SoccerTwos?team=0", "SoccerTwos?team=1"]
    for spec, colour in zip(specs, ("Blue", "Purple"), strict=True):
        wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
        assert [(s.wire_name, s.wire_shape) for s in wire] == [
            (f"StackingSensor_size3_{colour}RayPerceptionSensor", (264,)),
            (f"StackingSensor_size3_{colour}RayPerceptionSensorReverse", (72,)),
        ]
        assert spec.action_spec.discrete_branches == (3, 3, 3)
        assert spec.agents_per_area == 2 and spec.max_step == 0
        assert spec.decision is not None and spec.decision.period == 5
    assert SoccerTwosScene.default_area_count == 8
    with pytest.raises(Exception, match="kickoff"):
        SoccerTwosScene({"kickoff": "penalty"}).behaviors()


def test_one_group_per_team_per_field() -> None:
    played = play(SoccerTwosScene)
    blue, purple = played.academy.batches
    fields = np.arange(8)
    np.testing.assert_array_equal(blue.group_id, np.repeat(2 * fields + 1, 2))
    np.testing.assert_array_equal(purple.group_id, np.repeat(2 * fields + 2, 2))
    np.testing.assert_array_equal(blue.ids, np.stack([4 * fields, 4 * fields + 1], 1).ravel())


@pytest.mark.parametrize(("kickoff", "scorer"), [("shot_blue", 0), ("shot_purple", 1)])
def test_a_goal_pays_the_groups_and_ends_every_episode(kickoff: str, scorer: int) -> None:
    played = play(SoccerTwosScene, options={"kickoff": kickoff}, policy=idle_policy)
    ended: list[Any] = []
    step = 0
    while not ended and step < 100:
        played.step()
        step += 1
        ended = terminal_reports(played.academy)
    assert len(ended) == 32 and not any(t.interrupted for t in ended)
    assert all(t.reward == 0.0 for t in ended), "no individual reward without ball_touch"
    winner = f"SoccerTwos?team={scorer}"
    for report in ended:
        field, player = divmod(report.agent_id, 4)
        team = player // 2
        assert report.group_id == 2 * field + 1 + team
        expected = 1.0 - step / MAX_ENVIRONMENT_STEPS if report.behavior == winner else -1.0
        assert report.group_reward == pytest.approx(expected, abs=1e-6)
    assert 5 <= step <= 20  # 5.1 to the goal floor at 30 units/s, less drag
    assert played.scene.goals.tolist() == ([8, 0] if scorer == 0 else [0, 8])
    shot = np.abs(played.scene.ball_position) == SHOT_START
    assert shot.all(), "the fields kicked off again"


def test_no_goal_in_time_interrupts_both_groups() -> None:
    assert SoccerTwosScene().options["max_environment_steps"] == MAX_ENVIRONMENT_STEPS == 5000
    played = play(
        SoccerTwosScene,
        seed=3,
        policy=idle_policy,
        num_agents=4,
        options={"max_environment_steps": 300},
    )
    played.step(299)
    assert terminal_reports(played.academy) == []
    played.step()
    ended = terminal_reports(played.academy)
    assert len(ended) == 4 and all(t.interrupted for t in ended)
    assert all(t.group_reward == 0.0 for t in ended)


def test_ray_tags_are_relative_to_the_team() -> None:
    played = play(SoccerTwosScene, policy=idle_policy)
    played.step()
    scene = played.scene
    # Field 0: blue player 0 alone on the centre line facing the purple goal; the other players
    # and the ball out of the way in the corners.
    scene.position[0] = [[0.0, 0.0], [-12.0, 7.0], [12.0, 7.0], [12.0, -7.0]]
    scene.heading[0] = [0.0, 0.0, 0.0, 0.0]
    scene.ball_position[0] = [-12.0, -6.8]
    # Field 1: the same for purple player 0, facing the blue goal.
    scene.position[1] = [[-12.0, 7.0], [12.0, 7.0], [0.0, 0.0], [12.0, -7.0]]
    scene.heading[1] = [np.pi, np.pi, np.pi, np.pi]
    scene.ball_position[1] = [-12.0, -6.8]
    blue, purple = played.academy.batches
    forward_b, backward_b = (
        o.reshape(1, -1, 8) for o in scene.collect_observations(blue, np.array([0]))
    )
    forward_p, backward_p = (
        o.reshape(1, -1, 8) for o in scene.collect_observations(purple, np.array([2]))
    )
    # Centre rays: tags ball, own goal, opposing goal, wall, teammate, opponent; then the no-hit
    # flag and the distance (the goal mouth 15.5 away, minus the 0.5 cast radius, over 20).
    opposing = [0, 0, 1, 0, 0, 0, 0, 15.0 / 20]
    own = [0, 1, 0, 0, 0, 0, 0, 15.0 / 20]
    for forward, backward in ((forward_b, backward_b), (forward_p, backward_p)):
        np.testing.assert_allclose(forward[0, 0], opposing, atol=1e-5)
        np.testing.assert_allclose(backward[0, 0], own, atol=1e-5)
    assert forward_b.shape == (1, 11, 8) and backward_b.shape == (1, 3, 8)


def test_ball_touch_parameter_rewards_touches() -> None:
    touching = play(SoccerTwosScene, seed=5, parameters={"ball_touch": 1.0})
    touching.step(500)
    plain = play(SoccerTwosScene, seed=5)
    plain.step(500)
    rewards = np.concatenate([b.cumulative_rewards for b in touching.academy.batches])
    assert rewards.max() >= 0.2 and np.allclose(rewards / 0.2, np.round(rewards / 0.2), atol=1e-4)
    assert all((b.cumulative_rewards == 0).all() for b in plain.academy.batches)


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(SoccerTwosScene, seed=seed, policy=random_policy(2))
        played.step(100)
        return played.digests

    first = digests(14)
    assert digests(14) == first
    assert digests(15) != first


def test_heuristic_team_scores_far_more_than_a_random_team() -> None:
    played = play(SoccerTwosScene, seed=2, policy=_per_team(None, random_policy(8)))
    played.step(2500)
    blue, purple = played.scene.goals.tolist()
    assert blue >= 10 and blue > 5 * max(purple, 1)


PEER_SOCCER = """
import hashlib
names = ["SoccerTwos?team=0", "SoccerTwos?team=1"]

def run(seed, steps, extra=(), random_actions=False, params=()):
    channel = EnvironmentParametersChannel()
    env = open_env("SoccerTwos", seed=seed, extra=extra, side_channels=[channel])
    out = {"pid": env._process.pid, "digests": [], "terminals": [], "rewards": set(),
           "decision_group_rewards": set()}
    try:
        for key, value in params:
            channel.set_float_parameter(key, value)
        env.reset()
        out["spec"] = {
            "names": sorted(env.behavior_specs),
            "obs": [[[o.name, list(o.shape), [int(p) for p in o.dimension_property],
                      o.observation_type.value]
                     for o in env.behavior_specs[n].observation_specs] for n in names],
            "branches": [list(env.behavior_specs[n].action_spec.discrete_branches)
                         for n in names],
            "first": [[env.get_steps(n)[0].agent_id.tolist(),
                       [int(g) for g in env.get_steps(n)[0].group_id]] for n in names],
        }
        rng = np.random.default_rng(5)
        for step in range(steps):
            batches = [env.get_steps(n) for n in names]
            for team, (d, t) in enumerate(batches):
                for i, r, g, gr, cut in zip(t.agent_id.tolist(), t.reward.tolist(), t.group_id,
                                            t.group_reward.tolist(), t.interrupted.tolist()):
                    out["terminals"].append([step, team, i, r, int(g), gr, cut])
                out["rewards"].update(round(r, 4) for r in d.reward.tolist())
                out["decision_group_rewards"].update(d.group_reward.tolist())
            out["digests"].append(hashlib.md5(b"".join(
                np.ascontiguousarray(o).tobytes() for d, _ in batches for o in d.obs)).hexdigest())
            for n, (d, _) in zip(names, batches):
                if len(d):
                    high = 3 if random_actions else 1
                    env.set_actions(n, ActionTuple(discrete=rng.integers(0, high, (len(d), 3))))
            env.step()
    finally:
        out["code"] = close_env(env)
    out["rewards"] = sorted(out["rewards"])
    out["decision_group_rewards"] = sorted(out["decision_group_rewards"])
    return out

shot = ["--option", "kickoff=shot_blue"]
goal = run(41, 12, extra=shot)
again = run(41, 12, extra=shot)
long_run = run(43, RANDOM_STEPS, random_actions=True, params=[("ball_touch", 1.0)])
runs = [goal, again, long_run]
emit({"goal": goal, "again": again["digests"],
      "long": {k: long_run[k] for k in ("terminals", "rewards", "decision_group_rewards")},
      "codes": [r["code"] for r in runs], "pids": [r["pid"] for r in runs]})
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_plays_soccer_twos(peer: Callable[..., Any]) -> None:
    """A shorter random run: the peer's pure-Python protobuf makes every step cost tens of ms."""
    _check_peer_run(peer(PEER_SOCCER.replace("RANDOM_STEPS", str(DEFAULT_RANDOM_STEPS))))


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_official_peer_plays_soccer_twos_for_500_random_steps(peer: Callable[..., Any]) -> None:
    _check_peer_run(peer(PEER_SOCCER.replace("RANDOM_STEPS", "500"), timeout=270))


def _check_peer_run(result: Any) -> None:
    goal = result["goal"]
    spec = goal["spec"]
    assert spec["names"] == ["SoccerTwos?team=0", "SoccerTwos?team=1"]
    assert spec["obs"] == [
        [
            [f"StackingSensor_size3_{colour}RayPerceptionSensor", [264], [1], 0],
            [f"StackingSensor_size3_{colour}RayPerceptionSensorReverse", [72], [1], 0],
        ]
        for colour in ("Blue", "Purple")
    ]
    assert spec["branches"] == [[3, 3, 3], [3, 3, 3]]
    fields = np.arange(8)
    blue_ids = np.stack([4 * fields, 4 * fields + 1], 1).ravel().tolist()
    purple_ids = np.stack([4 * fields + 2, 4 * fields + 3], 1).ravel().tolist()
    assert spec["first"] == [
        [blue_ids, np.repeat(2 * fields + 1, 2).tolist()],
        [purple_ids, np.repeat(2 * fields + 2, 2).tolist()],
    ]
    # The shot scores on every field at once: all 32 agents end with their group's reward (and
    # again after each kickoff, a shot every time).
    everything = goal["terminals"]
    first = min(t[0] for t in everything)
    terminals = [t for t in everything if t[0] == first]
    assert len(terminals) == 32 and len(everything) % 32 == 0
    blue_rewards = {round(t[5], 6) for t in terminals if t[1] == 0}
    assert len(blue_rewards) == 1 and 0.98 < blue_rewards.pop() < 1.0, "1 - t/5000"
    assert {t[5] for t in terminals if t[1] == 1} == {-1.0}
    assert all(t[4] == 2 * (t[2] // 4) + 1 + t[1] and t[3] == 0 and not t[6] for t in terminals)
    assert result["again"] == goal["digests"], "same seed, same actions, same run"
    # 500 random steps with ball_touch = 1: touches pay 0.2 each, group rewards only at the end.
    long_run = result["long"]
    assert all(abs(r / 0.2 - round(r / 0.2)) < 1e-3 for r in long_run["rewards"])
    assert max(long_run["rewards"]) >= 0.2
    assert long_run["decision_group_rewards"] == [0.0]
    assert all(t[5] == -1.0 or 0.0 <= t[5] <= 1.0 for t in long_run["terminals"])
    assert result["codes"] == [0, 0, 0]
    assert not any(player_alive(pid) for pid in result["pids"]), "no player left behind"


def test_agent_and_ball_at_top_speed_stay_inside_the_walls() -> None:
    """Unity's per-step push (+2 units/s, drag 3, friction 0.6 x 9.81) reaches about 29 units/s;
    a kicked ball runs at over 40; sub-steps keep both inside the field, bouncing the ball."""
    from unity_gym.player.scenes.soccer_twos import BALL_RADIUS, KICK_SPEED, TOP_SPEED

    assert pytest.approx((2.0 * 0.94 - 0.6 * 9.81 * 0.02) / 0.06) == TOP_SPEED
    assert pytest.approx(2000.0 * 0.02 / 3.0) == KICK_SPEED

    def forward(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        return np.zeros((slots.size, 0), np.float32), np.tile([1, 0, 0], (slots.size, 1))

    played = play(SoccerTwosScene, seed=1, policy=forward, num_agents=4)
    played.step()
    scene = played.scene
    # Blue 0 runs at the side wall (+y) from the centre; the rest out of the way; the ball flies
    # at the corner wall beside the purple goal.
    scene.position[0] = [[0.0, 0.0], [-12.0, -6.0], [5.0, -6.0], [12.0, -6.0]]
    scene.heading[0] = [np.pi / 2, np.pi, 0.0, 0.0]
    scene.velocity[0] = 0.0
    scene.ball_position[0] = [10.0, 6.0]
    scene.ball_velocity[0] = [60.0, 0.0]
    speeds, ball_x = [], []
    for _ in range(200):
        scene.heading[0, 0] = np.pi / 2 if scene.position[0, 0, 1] < 6.0 else -np.pi / 2
        played.step()
        speeds.append(np.linalg.norm(scene.velocity[0, 0]))
        ball_x.append(scene.ball_position[0, 0])
        assert all(_inside(point, 0.5) for point in scene.position[0])
        assert _inside(scene.ball_position[0], BALL_RADIUS)
    assert scene.goals.tolist() == [0, 0], "the corner wall turned the ball away from the goal"
    assert max(speeds) > 15.0, "the agent got up to speed between the side walls"
    assert max(ball_x) > 12.0 and min(ball_x) < 0.0, "the ball reached the corner, bounced back"


def _inside(point: np.ndarray, radius: float) -> bool:
    """A disc at ``point`` lies on Unity's pitch: x within the goal lines (+-15.5), y within the
    side walls (+-7.508), and inside the corner walls, whose faces satisfy
    ``0.866 |x| + 0.5 |y| = 15.498`` (60 degrees, from the posts at (15.5, 4.15) to the side
    walls at x = 13.56)."""
    x, y = abs(float(point[0])), abs(float(point[1]))
    eps = 1e-6
    corner = np.cos(np.radians(30.0)) * x + 0.5 * y
    return (
        x <= 15.5 - radius + eps and y <= 7.508 - radius + eps and corner <= 15.498 - radius + 0.01
    )


@pytest.mark.parametrize(("side", "scorer"), [(1.0, 0), (-1.0, 1)])
@pytest.mark.parametrize("offset", [3.9, -3.9])
def test_goal_mouths_are_unitys_8_3_wide(side: float, scorer: int, offset: float) -> None:
    """A ball rolled at the goal line 3.9 off the centre (outside our old 6-wide mouth) scores
    for the attacking team (blue attacks +x) as soon as it touches the goal floor."""
    from unity_gym.player.scenes.soccer_twos import BALL_RADIUS

    played = play(SoccerTwosScene, seed=3, policy=idle_policy, num_agents=4)
    played.step()
    scene = played.scene
    scene.position[0] = [[-5.0, 6.0], [-5.0, -6.0], [5.0, 6.0], [5.0, -6.0]]
    scene.ball_position[0] = [side * 12.0, offset]
    scene.ball_velocity[0] = [side * 20.0, 0.0]
    for _ in range(20):
        played.step()
        if scene.goals.any():
            break
        assert abs(scene.ball_position[0, 0]) < 15.5 - 0.37 + 1e-9
    expected = [0, 0]
    expected[scorer] = 1
    assert scene.goals.tolist() == expected
    assert pytest.approx(0.6242, abs=1e-4) == BALL_RADIUS


def test_a_touch_of_a_post_scores_and_the_kickoff_is_unitys() -> None:
    """The posts are goal-tagged colliders in Unity: a ball touching one scores even outside the
    mouth. Kickoff: strikers at x = -+8.19 +- 5, y = +-1.2; the ball within 2.5 of the centre."""
    played = play(SoccerTwosScene, seed=4, policy=idle_policy, num_agents=16)
    played.step()
    scene = played.scene
    for _ in range(30):  # kickoffs of many fields at once
        scene._kick_off(np.arange(4))
        blue, purple = scene.position[:, :2], scene.position[:, 2:]
        assert np.all((blue[..., 0] >= -13.19) & (blue[..., 0] <= -3.19))
        assert np.all((purple[..., 0] >= 3.19) & (purple[..., 0] <= 13.19))
        assert np.allclose(np.abs(scene.position[..., 1]), 1.2)
        assert np.all(np.abs(scene.ball_position) <= 2.5)
    scene.ball_position[0] = [15.5, 4.15 + 0.62]  # touching the purple goal's +y post
    scene.ball_position[1] = [15.0, 5.2]  # near, not touching
    scene.ball_position[2] = [-15.2, 0.0]  # on the blue goal's floor
    scene.ball_position[3] = [0.0, 0.0]
    assert scene._ball_in_goal().tolist() == [True, False, True, False]


@pytest.mark.parametrize(
    ("walls", "radius"), [(_PLAYER_BOUNDS, AGENT_RADIUS), (_BALL_BOUNDS, BALL_RADIUS)]
)
def test_discs_in_the_clear_box_touch_no_wall_and_the_box_is_most_of_the_pitch(
    walls: Any, radius: float
) -> None:
    """The walls' test skips discs inside ``clear_box``: none of them may touch a wall."""
    box = walls.clear_box(radius)
    assert box[0] > 0.8 * HALF_LENGTH and box[1] > 0.8 * HALF_WIDTH
    rng = np.random.default_rng(0)
    inside = rng.uniform(-1.0, 1.0, (20000, 2)) * box
    corners = np.array([[sx, sy] for sx in (-1, 1) for sy in (-1, 1)]) * box * (1 - 1e-12)
    points = np.concatenate([inside, corners])
    assert (walls._gaps(points)[1] > radius * radius).all()
    # 5% larger, a corner disc touches a wall: the box is as large as the walls allow
    assert (walls._gaps(corners * 1.05)[1] < radius * radius).any()
