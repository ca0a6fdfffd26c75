"""Encoding sensor data into serialized ``ObservationProto`` the way Unity does (spec §4.1).

Float observations travel row-major (visual ones CHW, row 0 = top). PNG observations are 8-bit
RGB images, several concatenated byte-wise when a sensor has more than three channels, with an
optional ``compressed_channel_mapping`` telling Python which output channel each PNG channel
feeds (``-1`` = padding). When the trainer lacks the needed capability, the data is sent
uncompressed instead, as Unity does.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence

import numpy as np

from .capabilities import Capabilities
from .encoding import key, length_delimited, packed_int32, varint, varint_tag
from .specs import Compression, SensorSpec

__all__ = [
    "ObservationEncoder",
    "default_channel_mapping",
    "encode_png",
    "is_trivial_mapping",
    "stacked_channel_mapping",
]

logger = logging.getLogger("unity_gym.player")

#: zlib level of the PNGs: fast, and any level decodes identically.
PNG_COMPRESS_LEVEL = 1


def default_channel_mapping(channels: int) -> list[int]:
    """Unity's mapping for an unstacked sensor: ``[0, 0, 0]`` for one channel, else the identity
    padded with ``-1`` to a multiple of three."""
    if channels == 1:
        return [0, 0, 0]
    mapping = list(range(channels))
    return mapping + [-1] * (-len(mapping) % 3)


def stacked_channel_mapping(base: Sequence[int], channels: int, stack_size: int) -> list[int]:
    """Mapping of ``stack_size`` stacked copies of a sensor with ``channels`` channels.

    ``base`` (the wrapped sensor's mapping) is padded with ``-1`` to a multiple of three and each
    copy ``i`` is offset by ``channels * i``.
    """
    padded = list(base) + [-1] * (-len(base) % 3)
    result: list[int] = []
    for i in range(stack_size):
        result.extend(m + channels * i if m >= 0 else -1 for m in padded)
    return result


def is_trivial_mapping(mapping: Sequence[int]) -> bool:
    """True if every entry is its own index or padding (``-1``)."""
    return all(m in (i, -1) for i, m in enumerate(mapping))


def encode_png(chw: np.ndarray) -> bytes:
    """Encode a ``(3k, H, W)`` uint8 array as ``k`` RGB PNGs concatenated byte-wise."""
    from PIL import Image  # on first use: games without cameras start without Pillow

    out = io.BytesIO()
    for start in range(0, chw.shape[0], 3):
        hwc = np.ascontiguousarray(chw[start : start + 3].transpose(1, 2, 0))
        Image.fromarray(hwc, "RGB").save(out, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return out.getvalue()


class ObservationEncoder:
    """Serializes one sensor's observations as ``AgentInfoProto.observations`` entries.

    Args:
        sensor: the sensor (its wire name/shape include stacking).
        trainer: the trainer's capabilities, or ``None`` without a trainer (then PNG is kept).
    """

    def __init__(self, sensor: SensorSpec, trainer: Capabilities | None) -> None:
        self.sensor = sensor
        self.shape = sensor.wire_shape
        channels = sensor.shape[0]
        self._png_sources: np.ndarray | None = None
        mapping_field: list[int] = []
        if sensor.compression is Compression.PNG:
            explicit = sensor.channel_mapping is not None or sensor.stack_size > 1
            base = (
                list(sensor.channel_mapping)
                if sensor.channel_mapping is not None
                else default_channel_mapping(channels)
            )
            mapping = stacked_channel_mapping(base, channels, sensor.stack_size)
            several_pngs = len(mapping) > 3
            needs_mapping = explicit and not is_trivial_mapping(mapping)
            caps = trainer if trainer is not None else Capabilities()
            if several_pngs and not caps.concatenated_png_observations:
                logger.warning(
                    "sensor %s: the trainer cannot read concatenated PNGs; sending floats",
                    sensor.wire_name,
                )
            elif needs_mapping and not caps.compressed_channel_mapping:
                logger.warning(
                    "sensor %s: the trainer cannot read channel mappings; sending floats",
                    sensor.wire_name,
                )
            else:
                wire_channels = self.shape[0]
                self._png_sources = np.array(
                    [m if m >= 0 else wire_channels for m in mapping], dtype=np.intp
                )
                if explicit:
                    mapping_field = mapping
        # ObservationProto fields, in field-number order around the data (fields 3/4).
        shape_field = packed_int32(1, list(self.shape))
        tail = (
            packed_int32(6, list(sensor.dimension_properties or ()))
            + (
                varint_tag(7) + varint(int(sensor.observation_type))
                if sensor.observation_type
                else b""
            )
            + length_delimited(8, sensor.wire_name.encode("utf-8"))
        )
        self._count = int(np.prod(self.shape))
        if self._png_sources is not None:
            self._png_head = shape_field + varint_tag(2) + varint(1)
            self._png_tail = packed_int32(5, mapping_field) + tail
        else:
            data_size = 4 * self._count
            float_data = key(1, 2) + varint(data_size)
            head = shape_field + key(4, 2) + varint(len(float_data) + data_size) + float_data
            entry = key(13, 2) + varint(len(head) + data_size + len(tail))
            self._prefix = np.frombuffer(entry + head, dtype=np.uint8)
            self._suffix = np.frombuffer(tail, dtype=np.uint8)
            self._row_size = self._prefix.size + data_size + self._suffix.size

    @property
    def uses_png(self) -> bool:
        """True if this sensor's data travels as PNG."""
        return self._png_sources is not None

    def encode(self, batch: np.ndarray) -> list[bytes]:
        """Serialized ``observations`` entries (tag included) for ``batch`` ``(k, *wire_shape)``."""
        k = batch.shape[0]
        if self._png_sources is None:
            rows = np.empty((k, self._row_size), dtype=np.uint8)
            start = self._prefix.size
            end = start + 4 * self._count
            rows[:, :start] = self._prefix
            rows[:, start:end] = np.ascontiguousarray(
                batch.reshape(k, self._count), dtype="<f4"
            ).view(np.uint8)
            rows[:, end:] = self._suffix
            blob = rows.tobytes()
            size = self._row_size
            return [blob[i * size : (i + 1) * size] for i in range(k)]
        as_bytes = np.clip(np.rint(batch * 255.0), 0, 255).astype(np.uint8)
        padded = np.concatenate([as_bytes, np.zeros((k, 1, *batch.shape[2:]), np.uint8)], axis=1)
        png_channels = padded[:, self._png_sources]
        entries = []
        for i in range(k):
            observation = (
                self._png_head + length_delimited(3, encode_png(png_channels[i])) + self._png_tail
            )
            entries.append(length_delimited(13, observation))
        return entries
