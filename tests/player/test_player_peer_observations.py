"""Visual observations (PNG, concatenated PNGs with channel mapping, floats), stacking and area
replication, decoded by the official ``mlagents_envs`` 1.1.0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.peer, pytest.mark.timeout(180)]

Peer = Callable[..., Any]

VISUAL = """
env = open_env("Stress", extra=EXTRA)
env.reset()
name = "Stress?team=0"
spec = env.behavior_specs[name]
first = steps(env, name)
env.step()
second = steps(env, name)
emit({"names": [o.name for o in spec.observation_specs],
      "shapes": [list(o.shape) for o in spec.observation_specs],
      "props": [[int(p) for p in o.dimension_property] for o in spec.observation_specs],
      "first": first, "second": second, "code": close_env(env)})
"""


def _image(slot: int, step: int, shape: tuple[int, int, int]) -> np.ndarray:
    c, h, w = np.indices(shape)
    return ((7 * slot + 31 * c + 3 * h + w + step) % 256).astype(np.float32) / 255.0


def _visual(peer: Peer, *options: str) -> Any:
    extra: list[str] = []
    for option in options:
        extra += ["--option", option]
    return peer(VISUAL.replace("EXTRA", repr(extra)))


@pytest.mark.parametrize("mode", ["png", "float"])
def test_rgb_visual_observation(peer: Peer, mode: str) -> None:
    result = _visual(peer, f"visual={mode}", "visual_shape=3x8x10")
    assert result["names"] == ["StressCamera", "VectorSensor_size8"], "sorted by sensor name"
    assert result["shapes"] == [[3, 8, 10], [8]]
    assert result["props"][0] == [1, 2, 2]
    images = np.array(result["second"]["obs"][0])
    for slot in range(4):
        np.testing.assert_allclose(images[slot], _image(slot, 2, (3, 8, 10)), atol=1e-6)


def test_five_channels_travel_as_concatenated_pngs(peer: Peer) -> None:
    result = _visual(peer, "visual=png", "visual_shape=5x4x6")
    assert result["shapes"][0] == [5, 4, 6]
    images = np.array(result["first"]["obs"][0])
    for slot in range(4):
        np.testing.assert_allclose(images[slot], _image(slot, 1, (5, 4, 6)), atol=1e-6)


def test_stacked_grayscale_pngs_use_a_channel_mapping(peer: Peer) -> None:
    result = _visual(peer, "visual=png", "visual_shape=1x4x4", "stack=2")
    assert result["names"] == [
        "StackingSensor_size2_StressCamera",
        "StackingSensor_size2_VectorSensor_size8",
    ]
    assert result["shapes"] == [[2, 4, 4], [16]]
    first = np.array(result["first"]["obs"][0])
    second = np.array(result["second"]["obs"][0])
    for slot in range(4):
        # Oldest first: zeros before the first report, then the previous observation.
        np.testing.assert_allclose(first[slot, 0], 0.0)
        np.testing.assert_allclose(first[slot, 1], _image(slot, 1, (1, 4, 4))[0], atol=1e-6)
        np.testing.assert_allclose(second[slot, 0], _image(slot, 1, (1, 4, 4))[0], atol=1e-6)
        np.testing.assert_allclose(second[slot, 1], _image(slot, 2, (1, 4, 4))[0], atol=1e-6)
    vectors = np.array(result["second"]["obs"][1])
    assert vectors[:, 0].tolist() == [1.0] * 4 and vectors[:, 8].tolist() == [2.0] * 4


def test_num_areas_replicates_training_areas(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("3DBall", num_areas=2)
        env.reset()
        s = steps(env, "3DBall?team=0")
        emit({"ids": s["ids"], "code": close_env(env)})
        """
    )
    assert result["ids"] == list(range(24))
    assert result["code"] == 0
