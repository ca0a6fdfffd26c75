"""Visual encoders: one image observation ``(n, C, H, W)`` to ``(n, output_size)`` features.

``network_settings.vis_encode_type`` picks the encoder, following the architectures of
ML-Agents' ``torch_entities/encoders.py`` as ``ModelUtils.get_encoder_for_type`` maps them:

* ``simple`` (``SimpleVisualEncoder``): conv 16 channels 8x8 stride 4, conv 32 channels 4x4
  stride 2, each followed by a leaky ReLU;
* ``nature_cnn`` (``NatureVisualEncoder``, the DQN network): conv 32 8x8/4, conv 64 4x4/2,
  conv 64 3x3/1, each followed by a leaky ReLU;
* ``resnet`` (``ResNetVisualEncoder``, IMPALA style): three stacks of 16, 32 and 32 channels,
  each a 3x3 convolution (stride 1, padding 1), a 3x3 max pool of stride 2 and two residual
  blocks (``x + conv(swish(conv(swish(x))))``, 3x3 convolutions with padding 1), then a swish;
* ``match3`` (``SmallVisualEncoder``, for small board games): conv 35 3x3/1, conv 144 3x3/1,
  each followed by a leaky ReLU;
* ``fully_connected`` (``FullyConnectedVisualEncoder``): no convolution.

Every encoder then flattens and applies one dense layer of ``output_size`` (``hidden_units``)
units with He-normal weights of gain sqrt(2) (ML-Agents writes 1.41) and zero bias, followed by
a leaky ReLU (a ReLU for ``resnet``). Convolutions keep PyTorch's default initialization, as
in ML-Agents (orthogonal weights with gain sqrt(2) made the features ~6x larger and GridWorld's
policy collapsed within 40k steps), and have no padding unless stated. Swish is SiLU.
:data:`MIN_IMAGE_SIDE` is ML-Agents' ``ModelUtils.MIN_RESOLUTION_FOR_ENCODER``: the smallest
height and width whose convolutions still leave at least one output pixel.

Unlike ML-Agents (channels-last inputs permuted inside the encoder), the images arrive here
channels-first, the layout of the exported ONNX model.
"""

from __future__ import annotations

import math
from typing import get_args

import torch
from torch import nn

from trainers.common.spaces import ObservationEntry
from trainers.settings import ConfigError, EncoderType

__all__ = [
    "MIN_IMAGE_SIDE",
    "ResNetBlock",
    "check_image_size",
    "visual_encoder",
]

#: Smallest image height and width each encoder accepts (ML-Agents' values).
MIN_IMAGE_SIDE: dict[str, int] = {
    "fully_connected": 1,
    "match3": 5,
    "simple": 20,
    "nature_cnn": 36,
    "resnet": 15,
}
_DENSE_GAIN = math.sqrt(2.0)  # the dense layer after the convolutions (ReLU gain)
# (out_channels, kernel, stride) of the convolutions of the plain convolutional encoders
_CONVOLUTIONS: dict[str, list[tuple[int, int, int]]] = {
    "simple": [(16, 8, 4), (32, 4, 2)],
    "nature_cnn": [(32, 8, 4), (64, 4, 2), (64, 3, 1)],
    "match3": [(35, 3, 1), (144, 3, 1)],
    "fully_connected": [],
}
_RESNET_CHANNELS = (16, 32, 32)
_RESNET_BLOCKS = 2


def check_image_size(entry: ObservationEntry, kind: str) -> None:
    """Check that image ``entry`` is large enough for encoder ``kind``.

    Raises:
        ConfigError: the image is smaller than ``MIN_IMAGE_SIDE[kind]`` in height or width; the
            message names the sensor, its size, the encoder, its minimum and the way out.
    """
    _, height, width = entry.network_shape
    minimum = MIN_IMAGE_SIDE[kind]
    if height >= minimum and width >= minimum:
        return
    fitting = [name for name, side in MIN_IMAGE_SIDE.items() if height >= side and width >= side]
    raise ConfigError(
        f"observation {entry.name!r}: its {height}x{width} (height x width) image is too small "
        f"for network_settings.vis_encode_type '{kind}', which needs at least "
        f"{minimum}x{minimum}; make the sensor (camera or render texture) at least "
        f"{minimum}x{minimum} or use a vis_encode_type that accepts {height}x{width} "
        f"({', '.join(fitting)})."
    )


def visual_encoder(entry: ObservationEntry, kind: str, output_size: int) -> nn.Module:
    """The ``kind`` encoder of image ``entry``: ``(n, C, H, W)`` -> ``(n, output_size)``.

    Raises:
        ConfigError: the image is too small for ``kind`` (see :func:`check_image_size`).
        ValueError: ``kind`` is not an encoder (settings validation rejects those first).
    """
    if kind not in get_args(EncoderType):
        raise ValueError(f"unknown visual encoder {kind!r}; use one of {get_args(EncoderType)}")
    check_image_size(entry, kind)
    channels, height, width = entry.network_shape
    if kind == "resnet":
        layers, flat = _resnet_layers(channels, height, width)
        final: nn.Module = nn.ReLU()
    else:
        layers, flat = _conv_layers(_CONVOLUTIONS[kind], channels, height, width)
        final = nn.LeakyReLU()
    return nn.Sequential(*layers, nn.Flatten(), _dense(flat, output_size), final)


def _conv_layers(
    specs: list[tuple[int, int, int]], channels: int, height: int, width: int
) -> tuple[list[nn.Module], int]:
    """Unpadded convolutions, each followed by a leaky ReLU, and their flattened output size."""
    layers: list[nn.Module] = []
    for out_channels, kernel, stride in specs:
        layers += [nn.Conv2d(channels, out_channels, kernel, stride), nn.LeakyReLU()]
        channels = out_channels
        height, width = _conv_out(height, kernel, stride), _conv_out(width, kernel, stride)
    return layers, channels * height * width


def _resnet_layers(channels: int, height: int, width: int) -> tuple[list[nn.Module], int]:
    """The residual stacks (see the module docstring) and their flattened output size."""
    layers: list[nn.Module] = []
    for out_channels in _RESNET_CHANNELS:
        layers += [
            nn.Conv2d(channels, out_channels, 3, 1, padding=1),
            nn.MaxPool2d(3, 2),
            *(ResNetBlock(out_channels) for _ in range(_RESNET_BLOCKS)),
        ]
        channels = out_channels
        height, width = _conv_out(height, 3, 2), _conv_out(width, 3, 2)
    layers.append(nn.SiLU())
    return layers, channels * height * width


class ResNetBlock(nn.Module):
    """``x + conv(silu(conv(silu(x))))`` with two 3x3, stride 1, padding 1 convolutions that
    keep ``channels`` and the image size."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.SiLU(),
            nn.Conv2d(channels, channels, 3, 1, padding=1),
            nn.SiLU(),
            nn.Conv2d(channels, channels, 3, 1, padding=1),
        )

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Same shape as ``inputs`` ``(n, channels, H, W)``."""
        return inputs + self.layers(inputs)


def _conv_out(side: int, kernel: int, stride: int) -> int:
    return (side - kernel) // stride + 1


def _dense(in_size: int, out_size: int) -> nn.Linear:
    """He-normal (linear unit) weights times the ReLU gain sqrt(2), zero bias."""
    layer = nn.Linear(in_size, out_size)
    nn.init.kaiming_normal_(layer.weight, nonlinearity="linear")
    with torch.no_grad():
        layer.weight.mul_(_DENSE_GAIN)
    nn.init.zeros_(layer.bias)
    return layer
