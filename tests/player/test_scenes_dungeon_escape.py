"""DungeonEscape: the behavior spec (two stacked ray sensors and the key flag, discrete 7, three
agents per platform), one multi-agent group per platform, an agent removed mid-episode (slaying
the dragon, the portal) reporting one terminal step while its group plays on and coming back with
a new id at the platform reset, the key, the door's group reward, the dragon's escape, the
interrupt after ``max_environment_steps``, ``absorbing_state``, the ray layout, determinism and a
heuristic that clearly beats chance."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scene_harness import idle_policy, play, random_policy, terminal_reports

from unity_gym.player.scenes.dungeon_escape import (
    BACK_RAYS,
    DOOR_CENTRE,
    DRAGON_START,
    FRONT_RAYS,
    MAX_ENVIRONMENT_STEPS,
    PORTAL_CENTRE,
    TAGS,
    DungeonEscapeScene,
)

pytestmark = pytest.mark.timeout(180)

#: Where idle agents wait, away from dragon, portal, door and each other.
FAR = [[-10.0, -6.0], [-10.0, -2.0], [-10.0, 2.0]]
DRAGON, KEY, LOCK = TAGS.index("dragon"), TAGS.index("key"), TAGS.index("lock")


def _started(seed: int = 1, policy: Any = idle_policy, **kwargs: Any) -> Any:
    """Platform 0 of a one-platform game after its first step, agents parked at ``FAR``, the
    dragon standing still at its start."""
    played = play(DungeonEscapeScene, seed=seed, policy=policy, num_agents=3, **kwargs)
    played.step()
    scene = played.scene
    scene.agent_position[0] = FAR
    scene.agent_velocity[0] = 0.0
    scene.dragon_speed[0] = 0.0
    scene.dragon_position[0] = DRAGON_START
    return played


def _decisions(played: Any, steps: int) -> list[list[int]]:
    """Run ``steps`` Academy steps recording the ids of each decision request."""
    seen: list[list[int]] = []
    original = played.scene.heuristic

    def record(batch: Any, slots: np.ndarray, observations: Any) -> Any:
        seen.append(batch.ids[slots].tolist())
        return original(batch, slots, observations)

    played.scene.heuristic = record
    played.step(steps)
    played.scene.heuristic = original
    return seen


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = DungeonEscapeScene().behaviors()
    assert spec.full_name == "DungeonEscape?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("StackingSensor_size3_BackRayPerceptionSensor", (243,)),
        ("StackingSensor_size3_RayPerceptionSensor", (405,)),
        ("VectorSensor_size1", (1,)),
    ]
    assert TAGS == ("wall", "agent", "dragon", "key", "lock", "portal", "keyDragon")
    assert (FRONT_RAYS.ray_count, FRONT_RAYS.ray_length, FRONT_RAYS.cast_radius) == (15, 40, 0.5)
    assert (BACK_RAYS.ray_count, BACK_RAYS.heading_offset_degrees) == (9, 180.0)
    assert spec.action_spec.discrete_branches == (7,)
    assert spec.action_spec.continuous_size == 0
    assert spec.agents_per_area == 3 and spec.max_step == 0
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions
    assert DungeonEscapeScene.default_area_count == 8
    assert DungeonEscapeScene().options["max_environment_steps"] == MAX_ENVIRONMENT_STEPS == 25000
    with pytest.raises(Exception, match="max_environment_steps"):
        DungeonEscapeScene({"max_environment_steps": "-1"}).behaviors()


def test_one_group_per_platform() -> None:
    played = play(DungeonEscapeScene, num_agents=6)
    played.step()
    (batch,) = played.academy.batches
    groups = batch.group_id.reshape(2, 3)
    assert (groups > 0).all() and (groups == groups[:, :1]).all()
    assert groups[0, 0] != groups[1, 0]
    assert batch.active.all()


def test_slaying_the_dragon_removes_the_agent_and_the_group_plays_on() -> None:
    played = _started()
    scene, academy = played.scene, played.academy
    (batch,) = academy.batches
    group = int(scene.groups[0])
    scene.agent_position[0, 0] = scene.dragon_position[0] + [1.2, 0.0]
    played.step()  # Academy step 1: no decision; the slayer leaves in its physics
    (ended,) = terminal_reports(academy)
    assert ended.agent_id == 0
    assert not ended.interrupted and ended.group_id == group, "reported done, still in the group"
    assert batch.active.tolist() == [False, True, True]
    assert batch.group_id.tolist() == [0, group, group], "it left the group"
    assert not scene.dragon_alive[0] and scene.key_on_floor[0]
    played.step(3)  # Academy steps 2-4
    frozen = int(batch.step_count[0])
    assert _decisions(played, 5) == [[1, 2]], "the others go on deciding, the slayer is gone"
    assert batch.step_count[0] == frozen and terminal_reports(academy) == []

    # Agent 1 picks up the key (its key flag turns on) and takes it to the door.
    scene.agent_position[0, 1] = scene.key_position[0]
    played.step()
    assert scene.has_key[0].tolist() == [False, True, False] and not scene.key_on_floor[0]
    observations: list[Any] = []
    original = scene.heuristic
    scene.heuristic = lambda b, s, o: (observations.append(o[2].copy()), original(b, s, o))[1]
    played.step(5)
    scene.heuristic = original
    np.testing.assert_array_equal(observations[0][:, 0], [1.0, 0.0])
    scene.agent_position[0, 1] = DOOR_CENTRE - [0.0, 1.4]
    played.step()
    ended_all = terminal_reports(academy)
    assert sorted(t.agent_id for t in ended_all) == [1, 2], "the removed agent is not ended twice"
    assert all(t.group_reward == pytest.approx(1.0) and t.group_id == group for t in ended_all)
    assert scene.escapes == 1 and scene.dragons_slain == 1
    # The platform reset brings the slayer back: a new id, a new episode, in the group again.
    assert batch.active.all() and batch.ids.tolist() == [3, 1, 2]
    assert batch.group_id.tolist() == [group] * 3 and batch.step_count[0] == 0
    assert scene.dragon_alive[0] and not scene.key_on_floor[0] and not scene.has_key[0].any()


def test_the_portal_removes_an_agent_and_ends_the_group_with_the_last_one() -> None:
    played = _started()
    scene, academy = played.scene, played.academy
    (batch,) = academy.batches
    for agent, expected_active in ((0, [False, True, True]), (1, [False, False, True])):
        scene.agent_position[0, agent] = PORTAL_CENTRE - [1.3, 0.0]
        played.step()
        assert [t.agent_id for t in terminal_reports(academy)] == [agent]
        assert batch.active.tolist() == expected_active
    scene.agent_position[0, 2] = PORTAL_CENTRE - [1.3, 0.0]
    played.step()
    ended = terminal_reports(academy)
    assert [t.agent_id for t in ended] == [2] and not ended[0].interrupted
    assert ended[0].group_reward == 0.0
    assert scene.portal_losses == 3 and batch.active.all(), "the last one ends it; reset"
    assert batch.ids.tolist() == [3, 4, 2]


def test_the_portal_with_the_key_ends_the_group_at_once() -> None:
    played = _started()
    scene, academy = played.scene, played.academy
    scene.has_key[0, 1] = True
    scene.agent_position[0, 1] = PORTAL_CENTRE - [1.3, 0.0]
    played.step()
    assert sorted(t.agent_id for t in terminal_reports(academy)) == [0, 1, 2]
    assert scene.escapes == 0


def test_the_dragon_escaping_ends_the_group_without_reward() -> None:
    played = _started()
    scene = played.scene
    scene.dragon_position[0] = PORTAL_CENTRE - [2.5, 0.0]
    scene.dragon_speed[0] = 7.0
    for _ in range(10):
        played.step()
        ended = terminal_reports(played.academy)
        if ended:
            break
    assert sorted(t.agent_id for t in ended) == [0, 1, 2]
    assert all(t.group_reward == 0.0 and not t.interrupted for t in ended)
    assert scene.dragons_escaped == 1


def test_max_environment_steps_interrupts_the_group() -> None:
    played = play(
        DungeonEscapeScene,
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
    assert (played.scene.timer == 0).all()


def test_absorbing_state_moves_the_agent_away_instead_of_disabling_it() -> None:
    played = _started(parameters={"absorbing_state": 1.0})
    scene, academy = played.scene, played.academy
    (batch,) = academy.batches
    scene.agent_position[0, 0] = PORTAL_CENTRE - [1.3, 0.0]
    played.step(4)
    assert terminal_reports(academy) == [] and batch.active.all()
    assert scene.absorbed[0].tolist() == [True, False, False]
    assert scene.agent_position[0, 0, 0] >= 200.0
    seen: list[Any] = []
    original = scene.heuristic
    scene.heuristic = lambda b, s, o: (seen.append(o[1][0].copy()), original(b, s, o))[1]
    played.step(5)
    scene.heuristic = original
    latest = seen[0][-FRONT_RAYS.observation_size :].reshape(15, 9)
    assert (latest[:, 7] == 1.0).all(), "far away, the absorbed agent's rays hit nothing"


def test_rays_see_the_dragon_ahead_and_the_door_behind() -> None:
    played = _started()
    scene = played.scene
    scene.agent_position[0, 0] = [-8.0, 0.0]
    scene.heading[0, 0] = np.pi / 2  # facing +y: the dragon at (-8, 8) is straight ahead
    scene.agent_position[0, 1] = [0.0, 4.0]
    scene.heading[0, 1] = -np.pi / 2  # facing -y: the door at (0, 12) is straight behind
    seen: list[Any] = []
    original = scene.heuristic
    scene.heuristic = lambda b, s, o: (seen.append([x.copy() for x in o]), original(b, s, o))[1]
    played.step(5)  # Academy steps 1-5: the decision of step 5
    scene.heuristic = original
    back, front, key = seen[0]
    ahead = front[0, -FRONT_RAYS.observation_size :].reshape(15, 9)[0]
    assert ahead[DRAGON] == 1.0 and ahead[8] == pytest.approx((8.0 - 1.0 - 0.5) / 40.0, abs=1e-5)
    behind = back[1, -BACK_RAYS.observation_size :].reshape(9, 9)[0]
    assert behind[LOCK] == 1.0
    assert behind[8] == pytest.approx((12.0 - 1.0 - 4.0 - 0.5) / 40.0, abs=1e-5)
    np.testing.assert_array_equal(key, 0.0)


def test_same_seed_same_game() -> None:
    runs = []
    for _ in range(2):
        played = play(DungeonEscapeScene, seed=7, policy=random_policy(3), num_agents=6)
        played.step(300)
        runs.append(played.digests)
    assert runs[0] == runs[1] and len(runs[0]) > 100
    other = play(DungeonEscapeScene, seed=8, policy=random_policy(3), num_agents=6)
    other.step(300)
    assert other.digests != runs[0]


def test_the_heuristic_escapes_far_more_often_than_chance() -> None:
    outcomes = {}
    for name, policy in (("heuristic", None), ("random", random_policy(5))):
        played = play(DungeonEscapeScene, seed=2, policy=policy, num_agents=12)
        played.step(1500)
        outcomes[name] = played.scene.escapes
    assert outcomes["heuristic"] >= 20
    assert outcomes["heuristic"] >= 5 * max(outcomes["random"], 1)
