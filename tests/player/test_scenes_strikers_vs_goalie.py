"""StrikersVsGoalie: Unity's asymmetric specs (two behaviors, team sizes 2 and 1, ray sensors with
the prefab's detectable tags), group rewards on a goal, the existential rewards, the agents'
MaxStep 3000, determinism and heuristics that clearly beat chance on both sides."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scene_harness import Policy, idle_policy, play, random_policy, terminal_reports

from unity_gym.player.scenes.soccer_twos import MAX_ENVIRONMENT_STEPS
from unity_gym.player.scenes.strikers_vs_goalie import StrikersVsGoalieScene

pytestmark = pytest.mark.timeout(180)


def _per_team(strikers: Policy | None, goalie: Policy | None) -> Policy:
    def act(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        chosen = strikers if batch.spec.team_id == 0 else goalie
        return chosen(scene, batch, slots, obs) if chosen is not None else None

    return act


def test_behaviors_match_the_unity_prefab() -> None:
    striker, goalie = StrikersVsGoalieScene().behaviors()
    assert (striker.full_name, goalie.full_name) == ("Striker?team=0", "Goalie?team=1")
    wire = [
        (s.wire_name, s.wire_shape)
        for s in (striker.sensors[i] for i in striker.wire_sensor_order())
    ]
    # 11 and 3 rays x (5 tags + 2), 41 rays x (4 tags + 2); each stacked 3 times
    assert wire == [
        ("StackingSensor_size3_BlueRayPerceptionSensor", (231,)),
        ("StackingSensor_size3_BlueRayPerceptionSensorReverse", (63,)),
    ]
    assert [(s.wire_name, s.wire_shape) for s in goalie.sensors] == [
        ("StackingSensor_size3_PurpleGoalieRayPerceptionSensor", (738,))
    ]
    for spec, size in ((striker, 2), (goalie, 1)):
        assert spec.action_spec.discrete_branches == (3, 3, 3)
        assert spec.agents_per_area == size and spec.max_step == 3000
        assert spec.decision is not None and spec.decision.period == 5
        assert spec.decision.take_actions_between_decisions
    assert StrikersVsGoalieScene.default_area_count == 8


def test_one_group_per_team_per_field_and_ids_field_by_field() -> None:
    played = play(StrikersVsGoalieScene, policy=idle_policy)
    strikers, goalies = played.academy.batches
    fields = np.arange(8)
    np.testing.assert_array_equal(strikers.group_id, np.repeat(2 * fields + 1, 2))
    np.testing.assert_array_equal(goalies.group_id, 2 * fields + 2)
    np.testing.assert_array_equal(strikers.ids, np.stack([3 * fields, 3 * fields + 1], 1).ravel())
    np.testing.assert_array_equal(goalies.ids, 3 * fields + 2)


def test_a_goal_pays_the_groups_and_ends_every_episode() -> None:
    played = play(StrikersVsGoalieScene, options={"kickoff": "shot_blue"}, policy=idle_policy)
    ended: list[Any] = []
    step = 0
    while not ended and step < 100:
        played.step()
        step += 1
        ended = terminal_reports(played.academy)
    assert len(ended) == 24 and not any(t.interrupted for t in ended)
    for report in ended:
        if report.behavior == "Striker?team=0":
            assert report.group_reward == pytest.approx(
                1.0 - step / MAX_ENVIRONMENT_STEPS, abs=1e-6
            )
        else:
            assert report.group_reward == -1.0
    assert 5 <= step <= 20
    assert played.scene.goals.tolist() == [8, 0]


def test_existential_rewards_and_the_agents_max_step() -> None:
    """Every action: strikers -1/5000, the goalie +1/5000; MaxStep 3000 interrupts each agent's
    own episode while the field plays on (no environment limit here)."""
    played = play(
        StrikersVsGoalieScene,
        seed=3,
        policy=idle_policy,
        num_agents=3,
        options={"max_environment_steps": "0"},
    )
    strikers, goalie = played.academy.batches
    played.step(100)
    per_action = 1.0 / MAX_ENVIRONMENT_STEPS
    np.testing.assert_allclose(strikers.cumulative_rewards, -100 * per_action, rtol=1e-3)
    np.testing.assert_allclose(goalie.cumulative_rewards, 100 * per_action, rtol=1e-3)
    played.step(2899)
    assert terminal_reports(played.academy) == []
    played.step()
    ended = terminal_reports(played.academy)
    assert len(ended) == 3 and all(t.interrupted and t.group_reward == 0.0 for t in ended)


def test_rays_see_only_the_prefabs_detectable_tags() -> None:
    played = play(StrikersVsGoalieScene, policy=idle_policy, num_agents=3)
    played.step()
    scene = played.scene
    strikers, goalie = played.academy.batches
    # Striker 0 on the centre line facing +x (the goal it attacks); the others and the ball in
    # the corners, out of the way.
    scene.position[0] = [[0.0, 0.0], [-12.0, 7.0], [12.0, 7.0]]
    scene.heading[0] = [0.0, 0.0, 0.0]
    scene.ball_position[0] = [-12.0, -6.8]
    forward, backward = (
        o.reshape(-1, 7) for o in scene.collect_observations(strikers, np.array([0]))
    )
    # tags ball, purpleGoal, wall, blueAgent, purpleAgent; the no-hit flag; the distance
    np.testing.assert_allclose(forward[0], [0, 1, 0, 0, 0, 0, 15.0 / 20], atol=1e-5)
    np.testing.assert_allclose(backward[0], [0, 0, 0, 0, 0, 0, 15.0 / 20], atol=1e-5)  # own goal
    # The goalie in the centre facing -x (the blue goal, untagged for it); its ray straight
    # behind (the last pair, at +-180 degrees) meets its own goal.
    scene.position[0] = [[-12.0, 7.0], [-12.0, -7.0], [0.0, 0.0]]
    scene.heading[0] = [0.0, 0.0, np.pi]
    (rays,) = scene.collect_observations(goalie, np.array([0]))
    rays = rays.reshape(41, 6)
    np.testing.assert_allclose(rays[0], [0, 0, 0, 0, 0, 15.0 / 20], atol=1e-5)
    np.testing.assert_allclose(rays[-1], [0, 1, 0, 0, 0, 15.0 / 20], atol=1e-5)


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(StrikersVsGoalieScene, seed=seed, policy=random_policy(2))
        played.step(100)
        return played.digests

    first = digests(14)
    assert digests(14) == first
    assert digests(15) != first


def test_heuristics_clearly_beat_random_play_on_both_sides() -> None:
    def goals(strikers: Policy | None, goalie: Policy | None) -> int:
        played = play(StrikersVsGoalieScene, seed=2, policy=_per_team(strikers, goalie))
        played.step(1500)
        return int(played.scene.goals[0])

    random_vs_random = goals(random_policy(8), random_policy(9))
    heuristic_vs_random = goals(None, random_policy(9))
    heuristic_vs_heuristic = goals(None, None)
    assert heuristic_vs_random >= 10 and heuristic_vs_random > 5 * max(random_vs_random, 1)
    assert heuristic_vs_heuristic < 0.8 * heuristic_vs_random, "the heuristic goalie saves shots"
