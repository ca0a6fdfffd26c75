"""Pictures of the scenes for people (``Scene.draw``, ``Scene.picture``): every registered scene
draws a non-blank picture of the size asked that follows its state, and drawing changes nothing a
scene computes; the ``Canvas`` maps the world onto the pixels."""

from __future__ import annotations

import numpy as np
import pytest
from scene_harness import play

from unity_gym.player.errors import PlayerError
from unity_gym.player.render import Canvas, fit_picture
from unity_gym.player.scenes import get_scene_class, scene_names

pytestmark = pytest.mark.timeout(120)

#: Every scene registered in the player (new scenes are picked up automatically).
SCENES = tuple(scene_names())


def _distinct_colours(picture: np.ndarray) -> int:
    return len(np.unique(picture.reshape(-1, 3), axis=0))


@pytest.mark.parametrize("scene", SCENES)
def test_every_scene_draws_pictures_that_follow_its_state(scene: str) -> None:
    scene_class = get_scene_class(scene)
    played = play(scene_class, seed=4)
    played.step(3)
    first = played.scene.picture()
    width, height = scene_class.draw_size
    assert first.shape == (height, width, 3) and first.dtype == np.uint8
    assert _distinct_colours(first) >= 3, "the picture is (nearly) blank"
    # The same state draws the same picture; later states draw other pictures.
    np.testing.assert_array_equal(played.scene.picture(), first)
    changed = False
    for _ in range(40):
        played.step(5)
        if not np.array_equal(played.scene.picture(), first):
            changed = True
            break
    assert changed, f"{scene}'s picture did not change in 200 Academy steps"
    assert played.scene.picture(0, (200, 120)).shape == (120, 200, 3)
    last = played.academy.area_count - 1
    assert played.scene.picture(last).shape == (height, width, 3)
    with pytest.raises(PlayerError, match="there is no area"):
        played.scene.picture(last + 1)
    with pytest.raises(PlayerError, match="too small"):
        played.scene.picture(0, (8, 8))


@pytest.mark.parametrize("scene", SCENES)
def test_drawing_changes_nothing_a_scene_computes(scene: str) -> None:
    plain = play(get_scene_class(scene), seed=9)
    drawn = play(get_scene_class(scene), seed=9)
    for _ in range(60):
        plain.step()
        drawn.step()
        drawn.scene.picture(0)
        if drawn.academy.area_count > 1:
            drawn.scene.picture(1, (64, 48))
    assert drawn.digests == plain.digests and len(plain.digests) > 0
    for ours, theirs in zip(plain.academy.batches, drawn.academy.batches, strict=True):
        np.testing.assert_array_equal(ours.cumulative_rewards, theirs.cumulative_rewards)
        np.testing.assert_array_equal(ours.step_count, theirs.step_count)
    assert plain.academy.rng.random() == drawn.academy.rng.random()


def test_canvas_maps_the_world_into_the_picture() -> None:
    canvas = Canvas(100, 50, (-10.0, -5.0, 10.0, 5.0), background=(0.0, 0.0, 0.0), margin=0)
    assert canvas.scale == pytest.approx(5.0)
    np.testing.assert_allclose(canvas.to_pixels([[-10.0, 5.0], [10.0, -5.0]]), [[0, 0], [100, 50]])
    canvas.rectangle((5.0, 2.5), (1.0, 1.0), (1.0, 0.0, 0.0))
    canvas.circle((-5.0, -2.5), 1.0, (0.0, 1.0, 0.0))
    picture = canvas.picture()
    assert tuple(picture[12, 75]) == (255, 0, 0)  # (5, 2.5) is column 75, row 12.5
    assert tuple(picture[37, 25]) == (0, 255, 0)
    assert tuple(picture[25, 50]) == (0, 0, 0)
    small = np.zeros((2, 4, 3), np.uint8)
    small[0, 0] = 255
    fitted = fit_picture(small, 8, 8)
    assert fitted.shape == (8, 8, 3)
    assert tuple(fitted[2, 0]) == (255, 255, 255) and tuple(fitted[0, 0]) == (0, 0, 0)
