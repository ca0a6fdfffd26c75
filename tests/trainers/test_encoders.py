"""The visual encoders of ``network_settings.vis_encode_type`` (ML-Agents' five).

Each encoder works on exactly its minimum image size and refuses one pixel less with an error
naming the sensor, the encoder and the way out; a policy with each encoder exports to ONNX and
the exported model answers like the torch policy. Training runs drive the toy pixel games
in-process through ``unity-train``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
from gymnasium import spaces
from torch import nn
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.checkpoints.onnx_export import export_policy
from trainers.common.networks.encoders import MIN_IMAGE_SIDE, ResNetBlock, visual_encoder
from trainers.common.networks.models import PolicyNetwork, build_normalizer
from trainers.common.spaces import ActionLayout, ObservationEntry, ObservationLayout
from trainers.settings import ConfigError, NetworkSettings, parse_run_options

pytestmark = pytest.mark.timeout(120)

KINDS = ["simple", "nature_cnn", "resnet", "match3", "fully_connected"]


def _image(height: int, width: int, channels: int = 3) -> ObservationEntry:
    layout = ObservationLayout.from_space(
        spaces.Dict({"camera": spaces.Box(0.0, 1.0, (channels, height, width), np.float32)})
    )
    (entry,) = layout.entries
    assert entry.kind == "image" and entry.network_shape == (channels, height, width)
    return entry


def test_minimum_sizes_are_mlagents_values() -> None:
    assert MIN_IMAGE_SIDE == {
        "fully_connected": 1,
        "match3": 5,
        "simple": 20,
        "nature_cnn": 36,
        "resnet": 15,
    }


@pytest.mark.parametrize("kind", KINDS)
def test_each_encoder_works_on_exactly_its_minimum_size(kind: str) -> None:
    side = MIN_IMAGE_SIDE[kind]
    for height, width in [(side, side), (side, side + 7), (side + 5, side)]:
        encoder = visual_encoder(_image(height, width), kind, 24)
        features = encoder(torch.rand(5, 3, height, width))
        assert features.shape == (5, 24)
        assert torch.isfinite(features).all()


@pytest.mark.parametrize("kind", [k for k in KINDS if MIN_IMAGE_SIDE[k] > 1])
@pytest.mark.parametrize("small", ["height", "width"])
def test_one_pixel_below_the_minimum_is_a_clear_error(kind: str, small: str) -> None:
    side = MIN_IMAGE_SIDE[kind]
    height, width = (side - 1, side + 3) if small == "height" else (side + 3, side - 1)
    with pytest.raises(ConfigError) as info:
        visual_encoder(_image(height, width), kind, 16)
    message = str(info.value)
    assert "'camera'" in message  # the sensor
    assert f"{height}x{width}" in message  # its size
    assert f"vis_encode_type '{kind}'" in message and f"{side}x{side}" in message
    assert "make the sensor" in message and "fully_connected" in message  # the ways out


def test_layer_structure_follows_mlagents() -> None:
    def convs(module: nn.Module) -> list[tuple[int, int, int, int]]:
        return [
            (m.out_channels, m.kernel_size[0], m.stride[0], int(m.padding[0]))
            for m in module.modules()
            if isinstance(m, nn.Conv2d)
        ]

    image = _image(40, 40)
    assert convs(visual_encoder(image, "simple", 8)) == [(16, 8, 4, 0), (32, 4, 2, 0)]
    assert convs(visual_encoder(image, "nature_cnn", 8)) == [
        (32, 8, 4, 0),
        (64, 4, 2, 0),
        (64, 3, 1, 0),
    ]
    assert convs(visual_encoder(image, "match3", 8)) == [(35, 3, 1, 0), (144, 3, 1, 0)]
    assert convs(visual_encoder(image, "fully_connected", 8)) == []
    resnet = visual_encoder(image, "resnet", 8)
    stacks = [(c, 3, 1, 1) for c in (16, 32, 32) for _ in range(5)]  # conv + 2 blocks of 2
    assert convs(resnet) == stacks
    assert sum(isinstance(m, ResNetBlock) for m in resnet.modules()) == 6
    assert sum(isinstance(m, nn.MaxPool2d) for m in resnet.modules()) == 3
    assert isinstance(list(resnet.children())[-1], nn.ReLU)
    dense = [
        m for m in visual_encoder(image, "fully_connected", 8).modules() if isinstance(m, nn.Linear)
    ]
    assert [(d.in_features, d.out_features) for d in dense] == [(3 * 40 * 40, 8)]
    assert isinstance(list(visual_encoder(image, "match3", 8).children())[-1], nn.LeakyReLU)


def test_a_resnet_block_is_residual() -> None:
    block = ResNetBlock(4)
    for parameter in block.parameters():
        nn.init.zeros_(parameter)
    inputs = torch.randn(2, 4, 6, 6)
    torch.testing.assert_close(block(inputs), inputs)


@pytest.mark.parametrize("kind", KINDS)
def test_policy_with_each_encoder_exports_to_onnx(kind: str, tmp_path: Path) -> None:
    side = MIN_IMAGE_SIDE[kind]
    space = spaces.Dict(
        {
            "camera": spaces.Box(0, 255, (side, side + 2, 3), np.uint8),
            "speed": spaces.Box(-1.0, 1.0, (2,), np.float32),
        }
    )
    layout = ObservationLayout.from_space(space)
    actions = ActionLayout.from_space(
        spaces.Dict(
            {
                "continuous": spaces.Box(-1.0, 1.0, (2,), np.float32),
                "discrete": spaces.MultiDiscrete([3, 2]),
            }
        )
    )
    settings = NetworkSettings(hidden_units=16, num_layers=1, vis_encode_type=kind)
    policy = PolicyNetwork(layout, actions, settings, build_normalizer(layout, False), squash=False)
    path = tmp_path / "policy.onnx"
    export_policy(policy, layout, path)
    session = onnxruntime.InferenceSession(str(path))
    assert [i.shape for i in session.get_inputs()] == [
        ["batch", 3, side, side + 2],
        ["batch", 2],
        ["batch", 5],
    ]
    space.seed(1)
    inputs = layout.to_tensors(
        layout.stack_single([space.sample() for _ in range(6)]), torch.device("cpu")
    )
    masks = np.ones((6, 5), np.float32)
    feeds: dict[str, Any] = {"obs_0": inputs[0].numpy(), "obs_1": inputs[1].numpy()}
    feeds["action_masks"] = masks
    continuous, discrete = session.run(
        ["deterministic_continuous_actions", "deterministic_discrete_actions"], feeds
    )
    with torch.no_grad():
        dist = policy(inputs, torch.from_numpy(masks))
        mean, argmax = dist.deterministic()
    assert mean is not None and argmax is not None
    np.testing.assert_allclose(continuous, dist.env_continuous(mean).numpy(), atol=1e-5)
    np.testing.assert_array_equal(discrete, argmax.numpy())


def test_the_new_encoders_are_accepted_in_configs() -> None:
    for kind in KINDS:
        options = parse_run_options(
            {"behaviors": {"B": {"network_settings": {"vis_encode_type": kind}}}}
        )
        assert options.behaviors["B"].network_settings.vis_encode_type == kind
    with pytest.raises(ConfigError, match="'resnet50' is not a visual encoder; use one of"):
        parse_run_options(
            {"behaviors": {"B": {"network_settings": {"vis_encode_type": "resnet50"}}}}
        )


@pytest.mark.parametrize(
    ("trainer", "kind"),
    [("ppo", "resnet"), ("ppo", "match3"), ("ppo", "fully_connected"), ("sac", "resnet")],
)
def test_training_runs_with_the_new_encoders(run_train: RunTrain, trainer: str, kind: str) -> None:
    network = {"hidden_units": 16, "num_layers": 1, "vis_encode_type": kind}
    make = ppo_behavior if trainer == "ppo" else sac_behavior
    behavior = make(max_steps=160, network_settings=network)
    run = run_train(
        {"behaviors": {"PixelsAndVector": behavior}},
        "--gym-id",
        "trainer_toy_envs:PixelsAndVector-v0",
    )
    session = onnxruntime.InferenceSession(str(run / "PixelsAndVector.onnx"))
    assert session.get_inputs()[0].shape == ["batch", 3, 40, 40]
    state = load_checkpoint(run / "PixelsAndVector" / "checkpoint.pt")
    assert state["update_count"] > 0


def test_a_too_small_image_stops_the_run_before_training(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    """HybridTarget's camera is 24x24: too small for nature_cnn (36), fine for resnet (15)."""
    network = {"hidden_units": 8, "num_layers": 1, "vis_encode_type": "nature_cnn"}
    behavior = ppo_behavior(max_steps=160, network_settings=network)
    run = run_train(
        {"behaviors": {"Hybrid": behavior}},
        "--gym-id",
        "trainer_toy_envs:HybridTarget-v0",
        expect=2,
    )
    error = capsys.readouterr().err
    assert "24x24" in error and "nature_cnn" in error and "36x36" in error
    assert "make the sensor" in error
    assert not list(run.rglob("*.pt"))  # nothing was trained
