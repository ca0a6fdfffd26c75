"""FoodCollector (ray version): the behavior spec (rays 49 + vector 4, hybrid 3 + (2,), 5 agents
per area), what the rays and the vector report, eating good and bad food, the laser freezing a
rival for 4 s, the sign-only turn and the speed cap, ``agent_scale``, determinism and a heuristic
that clearly beats chance."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from scene_harness import Played, idle_policy, play, random_policy

from unity_gym.player.academy import AgentBatch
from unity_gym.player.render import Canvas
from unity_gym.player.scenes import Scene
from unity_gym.player.scenes.foodcollector import (
    AGENTS_PER_AREA,
    AREA_RANGE,
    FOOD_COUNT,
    FOOD_RADIUS,
    FREEZE_STEPS,
    TAGS,
    WALL_HALF,
    WALL_THICKNESS,
    FoodCollectorScene,
)

pytestmark = pytest.mark.timeout(180)

RAY_LENGTH = 20.0


def constant_policy(continuous: Sequence[float], shoot: Sequence[int] | int = 0):  # type: ignore[no-untyped-def]
    """The same actions for every agent (``shoot`` may give one value per slot)."""

    def act(
        scene: Scene, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        fire = np.broadcast_to(np.asarray(shoot, dtype=np.int32), (AGENTS_PER_AREA,))
        return (
            np.tile(np.asarray(continuous, np.float32), (slots.size, 1)),
            fire[slots % AGENTS_PER_AREA][:, None].astype(np.int32),
        )

    return act


def clear_area(played: Played) -> None:
    """Move every agent (thawed, stopped) and all food far from the area's centre line."""
    scene = played.scene
    scene.food[:] = np.array([40.0, 40.0])
    for agent in range(AGENTS_PER_AREA):
        scene.position[0, agent] = [-40.0 + 4.0 * agent, -40.0]
    scene.velocity[:] = 0.0
    scene.frozen[:] = False
    scene.freezes = 0


def decisions(played: Played, steps: int = 1) -> list[list[np.ndarray]]:
    """The observations of the decisions made in the next ``steps`` Academy steps."""
    seen: list[list[np.ndarray]] = []
    scene = played.scene
    original = scene.heuristic

    def record(batch: AgentBatch, slots: np.ndarray, observations: list[np.ndarray]) -> object:
        seen.append([o.copy() for o in observations])
        return idle_policy(scene, batch, slots, observations)

    scene.heuristic = record
    played.step(steps)
    scene.heuristic = original
    return seen


def forward_ray(rays: np.ndarray) -> np.ndarray:
    """The forward ray's 7 values of one agent's ray observation."""
    return rays[: len(TAGS) + 2]


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = FoodCollectorScene().behaviors()
    assert spec.full_name == "FoodCollector?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("RayPerceptionSensor", (49,)),
        ("VectorSensor_size4", (4,)),
    ]
    assert spec.action_spec.continuous_size == 3
    assert spec.action_spec.discrete_branches == (2,)
    assert spec.agents_per_area == 5 and FoodCollectorScene.default_area_count == 1
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert FoodCollectorScene({"max_step": "40"}).behaviors()[0].max_step == 40


def test_the_area_starts_with_25_good_and_25_bad_food_in_range() -> None:
    played = play(FoodCollectorScene, seed=5, num_agents=10)
    played.step()
    scene = played.scene
    assert scene.food.shape == (2, 2 * FOOD_COUNT, 2)
    assert int(scene.is_bad.sum()) == FOOD_COUNT
    assert np.all(np.abs(scene.food) <= AREA_RANGE)
    assert np.all(np.abs(scene.position) <= AREA_RANGE + 1.0)
    whole_degrees = np.degrees(scene.heading) % 1.0
    assert np.allclose(np.minimum(whole_degrees, 1.0 - whole_degrees), 0.0, atol=1e-6)


def test_rays_report_food_bad_food_and_agents_ahead() -> None:
    played = play(FoodCollectorScene, seed=1, policy=idle_policy)
    played.step()
    scene = played.scene
    clear_area(played)
    scene.position[0, 0] = [0.0, 0.0]
    scene.heading[0, 0] = 0.0  # facing +x
    scene.food[0, 0] = [8.0, 0.0]  # good food 8 ahead
    ((rays, vector),) = decisions(played, 5)[-1:]
    ray = forward_ray(rays[0])
    expected_fraction = (8.0 - FOOD_RADIUS - 0.5) / RAY_LENGTH  # sphere cast of radius 0.5
    assert ray[TAGS.index("food")] == 1.0 and ray[len(TAGS)] == 0.0
    assert ray[-1] == pytest.approx(expected_fraction, abs=1e-5)
    scene.food[0, 0] = [40.0, 40.0]
    scene.food[0, FOOD_COUNT] = [6.0, 0.0]  # bad food instead
    ((rays, vector),) = decisions(played, 5)[-1:]
    assert forward_ray(rays[0])[TAGS.index("badFood")] == 1.0
    scene.food[0, FOOD_COUNT] = [40.0, 40.0]
    scene.position[0, 1] = [5.0, 0.0]  # another agent
    ((rays, vector),) = decisions(played, 5)[-1:]
    assert forward_ray(rays[0])[TAGS.index("agent")] == 1.0
    scene.frozen[0, 1] = True
    scene.frozen_at[0, 1] = scene.clock
    ((rays, vector),) = decisions(played, 5)[-1:]
    assert forward_ray(rays[0])[TAGS.index("frozenAgent")] == 1.0
    assert vector[1, 2] == 1.0 and vector[0, 2] == 0.0, "the frozen flag"


def test_the_vector_holds_the_velocity_in_the_agents_frame_and_the_laser_flag() -> None:
    played = play(FoodCollectorScene, seed=1, policy=constant_policy([1.0, 0.0, 0.0], shoot=1))
    played.step()
    clear_area(played)
    played.scene.heading[0, :] = np.pi / 2  # facing +y: forward is +y, right is +x
    played.scene.velocity[0, :] = [3.0, 0.0]
    played.step(4)
    scene = played.scene
    velocity = scene.velocity[0].copy()  # what the decision of the next step observes
    ((_rays, vector),) = decisions(played, 1)
    np.testing.assert_allclose(vector[:, 0], velocity[:, 0], atol=1e-4)  # right = +x
    np.testing.assert_allclose(vector[:, 1], velocity[:, 1], atol=1e-4)  # forward = +y
    assert np.all(vector[:, 3] == 1.0), "every agent fired on its last action"
    assert np.all(vector[:, 1] > 0.0)


def test_touching_food_rewards_and_the_food_respawns() -> None:
    played = play(FoodCollectorScene, seed=3, policy=idle_policy)
    played.step()
    scene = played.scene
    clear_area(played)
    (batch,) = played.academy.batches
    scene.food[0, 0] = scene.position[0, 0] + [1.0, 0.0]  # within 0.5 + 0.75
    scene.food[0, FOOD_COUNT] = scene.position[0, 1] + [0.0, 1.1]
    before = batch.cumulative_rewards.copy()
    played.step()
    gained = batch.cumulative_rewards - before
    assert gained[0] == pytest.approx(1.0) and gained[1] == pytest.approx(-1.0)
    assert np.all(gained[2:] == 0.0)
    assert (scene.eaten_good, scene.eaten_bad) == (1, 1)
    assert np.linalg.norm(scene.food[0, 0] - scene.position[0, 0]) > 1.25, "moved away"
    assert np.all(np.abs(scene.food[0, 0]) <= AREA_RANGE)


def test_the_laser_freezes_the_agent_ahead_for_four_seconds() -> None:
    shoot = [1, 0, 0, 0, 0]  # only agent 0 fires; everyone pushes forward
    played = play(FoodCollectorScene, seed=4, policy=constant_policy([0.0, 0.0, 0.0], shoot))
    played.step()
    scene = played.scene
    clear_area(played)
    scene.position[0, 0] = [0.0, 0.0]
    scene.heading[0, 0] = 0.0
    scene.position[0, 1] = [15.0, 1.5]  # within the laser's 2-unit radius, 25 reach
    played.step()
    assert scene.frozen[0, 1] and not scene.frozen[0, 0] and scene.freezes == 1
    # A frozen agent neither moves nor turns nor fires.
    scene.heading[0, 1] = 1.0
    frozen_policy = constant_policy([1.0, 1.0, 1.0], [0, 1, 0, 0, 0])
    played.scene.heuristic = lambda batch, slots, obs: frozen_policy(scene, batch, slots, obs)
    start = scene.position[0, 1].copy()
    played.step(FREEZE_STEPS - 5)
    assert scene.frozen[0, 1] and scene.heading[0, 1] == 1.0
    np.testing.assert_allclose(scene.position[0, 1], start)
    assert not scene.frozen[0, 0], "agent 1 could not fire while frozen"
    played.step(10)
    assert not scene.frozen[0, 1], "thawed after 4 s"
    assert scene.heading[0, 1] != 1.0


def test_the_laser_is_stopped_by_food_and_misses_to_the_side() -> None:
    played = play(FoodCollectorScene, seed=4, policy=constant_policy([0.0, 0.0, 0.0], 1))
    played.step()
    scene = played.scene
    clear_area(played)
    scene.heading[0, :] = -np.pi / 2  # all face -y, away from each other
    scene.position[0, 0] = [0.0, 0.0]
    scene.heading[0, 0] = 0.0
    scene.position[0, 1] = [15.0, 4.0]  # 4 to the side: beyond radius 2 + 0.5
    scene.position[0, 2] = [-10.0, 0.0]  # behind
    played.step()
    assert not scene.frozen.any()
    scene.position[0, 1] = [15.0, 0.0]
    scene.food[0, 3] = [7.0, 0.0]  # food in between stops the laser
    played.step()
    assert not scene.frozen.any()


def test_turning_uses_only_the_sign_and_speed_is_capped() -> None:
    played = play(FoodCollectorScene, seed=6, policy=constant_policy([1.0, 0.0, 0.01]))
    played.step()
    scene = played.scene
    clear_area(played)
    scene.heading[0, :] = 0.0
    played.step()
    np.testing.assert_allclose(scene.heading[0], np.radians(6.0))  # counter-clockwise
    straight = constant_policy([1.0, 0.0, 0.0])
    scene.heuristic = lambda batch, slots, obs: straight(scene, batch, slots, obs)
    played.step(80)  # about 35 units: clear of the walls
    speed = np.linalg.norm(scene.velocity[0], axis=1)
    assert np.all((speed > 25.0) & (speed < 35.0)), speed


def test_agent_scale_makes_agents_bigger() -> None:
    played = play(FoodCollectorScene, seed=7, policy=idle_policy, parameters={"agent_scale": 3.0})
    played.step()
    scene = played.scene
    assert np.all(scene.scale == 3.0)
    clear_area(played)
    scene.food[0, 0] = scene.position[0, 0] + [2.0, 0.0]  # within 1.5 + 0.75, not 0.5 + 0.75
    played.step()
    assert scene.eaten_good == 1


def test_the_scene_is_deterministic_for_a_seed() -> None:
    runs = []
    for _ in range(2):
        played = play(FoodCollectorScene, seed=9, policy=random_policy(1))
        played.step(200)
        runs.append(played.digests)
    assert runs[0] == runs[1]
    other = play(FoodCollectorScene, seed=10, policy=random_policy(1))
    other.step(200)
    assert other.digests != runs[0]


def test_the_heuristic_collects_far_more_than_chance() -> None:
    outcomes = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(FoodCollectorScene, seed=2, policy=policy)
        played.step(1000)
        outcomes[name] = played.scene.eaten_good - played.scene.eaten_bad
    assert outcomes["heuristic"] >= 40
    assert outcomes["heuristic"] >= 10 * max(outcomes["random"], 1)


def test_the_picture_shows_food_agents_their_looks_and_the_laser() -> None:
    shoot = [1, 0, 0, 0, 0]
    played = play(FoodCollectorScene, seed=4, policy=constant_policy([0.0, 0.0, 0.0], shoot))
    played.step()
    scene = played.scene
    clear_area(played)
    scene.food[0, 0] = [-20.0, 20.0]  # a good one
    scene.food[0, FOOD_COUNT] = [20.0, 20.0]  # a bad one
    scene.position[0, 0] = [0.0, 0.0]
    scene.heading[0, 0] = 0.0
    scene.position[0, 1] = [15.0, 1.5]
    played.step()
    assert scene.frozen[0, 1] and scene.shot[0, 0]
    picture = scene.draw(0, (202, 202))
    reach = WALL_HALF + WALL_THICKNESS
    to_pixels = Canvas(202, 202, (-reach, -reach, reach, reach)).to_pixels

    def at(x: float, y: float) -> tuple[int, ...]:
        column, row = to_pixels([x, y])
        return tuple(int(v) for v in picture[round(row), round(column)])

    green, red, white = at(-20.0, 20.0), at(20.0, 20.0), at(8.0, 0.0)
    assert green[1] > 150 and green[0] < 120, green
    assert red[0] > 200 and red[1] < 120, red
    assert min(white) > 240, f"no laser drawn ahead of the firing agent: {white}"
    frozen, firing = at(15.0, 1.5), at(-0.3, 0.3)
    assert abs(frozen[0] - frozen[2]) < 20 and frozen[0] > 100, f"frozen agent not grey: {frozen}"
    assert firing[2] > 200 and firing[0] < 100, f"the agent should be blue: {firing}"
