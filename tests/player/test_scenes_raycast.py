"""The 2-D ray perception helper: Unity's ray order and per-ray layout, distances to segments,
circles and boxes, origins inside objects, sphere casts and per-observer tags."""

from __future__ import annotations

import numpy as np
import pytest

from unity_gym.player.raycast import RayPerceptionSpec, RayTargets, ray_angle_offsets

pytestmark = pytest.mark.timeout(30)


def test_rays_follow_unity_order() -> None:
    degrees = np.degrees(ray_angle_offsets(3, 90.0))
    # Forward, then right (clockwise) before left, moving outwards.
    np.testing.assert_allclose(degrees, [0, -30, 30, -60, 60, -90, 90])
    np.testing.assert_allclose(ray_angle_offsets(0, 45.0), [0.0])
    spec = RayPerceptionSpec(rays_per_direction=5, max_ray_degrees=60, ray_length=20, num_tags=6)
    assert spec.ray_count == 11 and spec.observation_size == 88
    with pytest.raises(ValueError, match="ray_length"):
        RayPerceptionSpec(rays_per_direction=1, max_ray_degrees=10, ray_length=0, num_tags=1)


def test_distances_tags_and_layout() -> None:
    # One observer at the origin looking along +x; rays at 0, -90 (down) and +90 (up) degrees.
    spec = RayPerceptionSpec(rays_per_direction=1, max_ray_degrees=90, ray_length=10, num_tags=3)
    targets = RayTargets(1)
    targets.add_segments(np.array([[4.0, -5.0, 4.0, 5.0]]), 2)  # a wall at x = 4
    targets.add_circles(np.array([[0.0, -3.0]]), 1.0, 0)  # a ball below, surface at y = -2
    obs = spec.perceive(targets, np.zeros((1, 2)), np.zeros(1)).reshape(3, 5)
    np.testing.assert_allclose(obs[0], [0, 0, 1, 0, 0.4], atol=1e-6)  # wall ahead at 4
    np.testing.assert_allclose(obs[1], [1, 0, 0, 0, 0.2], atol=1e-6)  # ball below at 2
    np.testing.assert_allclose(obs[2], [0, 0, 0, 1, 1.0], atol=1e-6)  # nothing above


def test_boxes_origins_inside_and_sphere_casts() -> None:
    spec = RayPerceptionSpec(rays_per_direction=0, max_ray_degrees=0, ray_length=10, num_tags=2)
    targets = RayTargets(2)
    # A box from x = 2 to 4; the second observer stands inside a larger box.
    targets.add_boxes(np.array([[3.0, 0.0]]), np.array([[1.0, 1.0]]), 0)
    targets.add_boxes(np.array([[[0.0, 0.0]], [[20.0, 0.0]]]), np.array([[2.5, 2.5]]), 1)
    origins = np.array([[0.0, 5.0], [20.0, 0.0]])
    hits = targets.cast(origins, spec.directions(np.array([-np.pi / 2, 0.0])), 10.0)
    # Observer 0 looks down from (0, 5): the big box's top face at y = 2.5.
    assert hits.tag.tolist() == [[1], [-1]] and hits.hit.tolist() == [[True], [False]]
    np.testing.assert_allclose(hits.fraction[0], [0.25])
    # A sphere cast of radius 0.5 touches the small box half a unit earlier.
    cast = targets.cast(np.array([[0.0, 0.0], [0.0, 0.0]]), spec.directions(np.zeros(2)), 10.0)
    wide = targets.cast(np.array([[0.0, 0.0], [0.0, 0.0]]), spec.directions(np.zeros(2)), 10.0, 0.5)
    assert cast.tag[0, 0] == 0, "the origin lies inside the big box, which is ignored"
    np.testing.assert_allclose(cast.fraction[0], [0.2])
    np.testing.assert_allclose(wide.fraction[0], [0.15])


def test_per_observer_tags_and_inactive_objects() -> None:
    spec = RayPerceptionSpec(rays_per_direction=0, max_ray_degrees=0, ray_length=10, num_tags=2)
    targets = RayTargets(2)
    centers = np.array([[[3.0, 0.0], [6.0, 0.0]], [[3.0, 0.0], [6.0, 0.0]]])
    # The same two discs mean different tags to each observer; observer 1 ignores the first.
    tags = np.array([[0, 1], [1, 0]])
    active = np.array([[True, True], [False, True]])
    targets.add_circles(centers, 0.5, tags, active)
    hits = targets.cast(np.zeros((2, 2)), spec.directions(np.zeros(2)), 10.0)
    assert hits.tag[:, 0].tolist() == [0, 0]
    np.testing.assert_allclose(hits.fraction[:, 0], [0.25, 0.55])


def test_ties_go_to_the_object_added_first_and_keep_its_distance() -> None:
    # Ahead along +x: a wall at x = 5 (tag 1), a ball whose surface is at x = 5 (tag 2) and a
    # box whose face is at x = 5 (tag 0): all exactly 5 away. Segments are searched first, then
    # circles, then boxes; of equal distances the first found stays.
    spec = RayPerceptionSpec(rays_per_direction=0, max_ray_degrees=0, ray_length=10, num_tags=3)
    targets = RayTargets(1)
    targets.add_boxes(np.array([[6.0, 0.0]]), np.array([[1.0, 1.0]]), 0)
    targets.add_circles(np.array([[6.0, 0.0], [6.0, 0.0]]), 1.0, np.array([2, 0]))
    targets.add_segments(np.array([[5.0, -1.0, 5.0, 1.0]]), 1)
    hits = targets.cast(np.zeros((1, 2)), np.array([[[1.0, 0.0]]]), 10.0)
    assert hits.tag.tolist() == [[1]] and hits.fraction.tolist() == [[0.5]]
    without_wall = RayTargets(1)
    without_wall.add_boxes(np.array([[6.0, 0.0]]), np.array([[1.0, 1.0]]), 0)
    without_wall.add_circles(np.array([[6.0, 0.0], [6.0, 0.0]]), 1.0, np.array([2, 0]))
    hits = without_wall.cast(np.zeros((1, 2)), np.array([[[1.0, 0.0]]]), 10.0)
    assert hits.tag.tolist() == [[2]] and hits.fraction.tolist() == [[0.5]]
    obs = spec.perceive(without_wall, np.zeros((1, 2)), np.zeros(1))
    np.testing.assert_allclose(obs, [[0, 0, 1, 0, 0.5]])
