"""VisualFoodCollector: the behavior spec (camera 3 x 84 x 84 PNG + frozen flag, hybrid 3 + (2,),
4 areas x 5 agents) against Unity's own recording of the scene, what the camera shows (the
background colour, food and bad food ahead, the looks of other agents) and a heuristic that
clearly beats chance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scene_harness import Played, idle_policy, play, random_policy

from unity_gym.demo import read_demonstration
from unity_gym.player.scenes.foodcollector import AGENTS_PER_AREA, FOOD_COUNT, LOOK_FROZEN
from unity_gym.player.scenes.visual_foodcollector import (
    BAD_FOOD,
    FOOD,
    LOOKS,
    SKY,
    VisualFoodCollectorScene,
)
from unity_gym.player.specs import Compression

pytestmark = pytest.mark.timeout(180)

DEMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "demos"


def _ready() -> Played:
    """One area, stepped once, every agent and all food parked in a far corner."""
    played = play(VisualFoodCollectorScene, seed=1, policy=idle_policy, num_agents=5)
    played.step()
    scene = played.scene
    scene.food[:] = np.array([-44.0, -44.0])
    for agent in range(AGENTS_PER_AREA):
        scene.position[0, agent] = [-44.0 + 2.0 * agent, 44.0]
    scene.position[0, 0] = [0.0, 0.0]
    scene.heading[0, 0] = 0.0  # facing +x
    return played


def _added(picture: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """The mean colour (in [0, 1]) of the pixels that differ from the ``empty`` picture."""
    changed = np.any(picture != empty, axis=2)
    assert changed.sum() >= 50, "something new is in view"
    assert changed[:, 30:54].sum() >= 0.9 * changed.sum(), "straight ahead"
    return picture[changed].mean(axis=0) / 255.0


def _hue(colour: np.ndarray) -> np.ndarray:
    return colour / colour.max()


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = VisualFoodCollectorScene().behaviors()
    assert spec.full_name == "VisualFoodCollector?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("CameraSensor", (3, 84, 84)),
        ("VectorSensor_size1", (1,)),
    ]
    assert wire[0].compression is Compression.PNG
    assert spec.action_spec.continuous_size == 3 and spec.action_spec.discrete_branches == (2,)
    assert spec.agents_per_area == 5 and VisualFoodCollectorScene.default_area_count == 4
    assert spec.decision is not None and spec.decision.period == 5 and spec.max_step == 5000


def test_the_spec_is_the_one_unity_recorded() -> None:
    path = DEMO / "testhybridvis.demo"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    demo = read_demonstration(path)
    (spec,) = VisualFoodCollectorScene().behaviors()
    assert demo.behavior_name == spec.full_name
    recorded = [(o.name, o.shape) for o in demo.behavior_spec.observation_specs]
    ours = [
        (spec.sensors[i].wire_name, spec.sensors[i].wire_shape) for i in spec.wire_sensor_order()
    ]
    assert recorded == ours
    assert demo.behavior_spec.action_spec.continuous_size == spec.action_spec.continuous_size
    assert demo.behavior_spec.action_spec.discrete_branches == spec.action_spec.discrete_branches
    # Unity's sky is the camera's background colour, as ours.
    first = np.asarray(demo.steps[0].observations[0])
    np.testing.assert_allclose(first[:, 0, 0], SKY, atol=1 / 255)


def test_the_camera_shows_the_sky_food_and_bad_food_ahead() -> None:
    played = _ready()
    scene = played.scene
    (empty,) = scene.render(np.array([0]))
    np.testing.assert_array_equal(empty[0, 0], np.rint(SKY * 255).astype(np.uint8))
    scene.food[0, 0] = [4.0, 0.0]
    (picture,) = scene.render(np.array([0]))
    assert np.allclose(_hue(_added(picture, empty)), _hue(FOOD), atol=0.08)
    scene.food[0, 0] = [-44.0, -44.0]
    scene.food[0, FOOD_COUNT] = [4.0, 0.0]
    (picture,) = scene.render(np.array([0]))
    assert np.allclose(_hue(_added(picture, empty)), _hue(BAD_FOOD), atol=0.08)
    camera, frozen = scene.collect_observations(None, np.array([0]))
    assert camera.shape == (1, 3, 84, 84) and camera.dtype == np.float32
    np.testing.assert_allclose(camera[0].transpose(1, 2, 0), picture / 255.0, atol=1e-6)
    assert frozen.tolist() == [[0.0]]


def test_other_agents_show_their_looks() -> None:
    played = _ready()
    scene = played.scene
    (empty,) = scene.render(np.array([0]))
    scene.position[0, 1] = [6.0, 0.0]
    (picture,) = scene.render(np.array([0]))
    assert np.allclose(_hue(_added(picture, empty)), _hue(LOOKS[0]), atol=0.08), "blue"
    scene.look[0, 1] = LOOK_FROZEN
    scene.frozen[0, 0] = True
    (picture,) = scene.render(np.array([0]))
    assert np.ptp(_added(picture, empty)) < 0.02, "grey, the walls' material"
    _, flag = scene.collect_observations(None, np.array([0]))
    assert flag.tolist() == [[1.0]]


def test_eating_food_gives_the_food_look_for_half_a_second() -> None:
    played = _ready()
    scene = played.scene
    scene.food[0, 0] = scene.position[0, 2] + [1.0, 0.0]
    played.step()
    assert scene.look[0, 2] == 2 and scene.satiated[0, 2]
    played.step(30)
    assert scene.look[0, 2] == 0 and not scene.satiated[0, 2]


def test_the_heuristic_collects_far_more_than_chance() -> None:
    outcomes = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(VisualFoodCollectorScene, seed=2, policy=policy, num_agents=5)
        played.step(500)
        outcomes[name] = played.scene.eaten_good - played.scene.eaten_bad
    assert outcomes["heuristic"] >= 25
    assert outcomes["heuristic"] >= 10 * max(outcomes["random"], 1)
