"""Untrusted demonstrations and configs are read within documented bounds (issue 37, item 1).

Official facts followed: a ``.demo`` file is a delimited ``DemonstrationMetaProto``, the
``BrainParametersProto`` at offset 33, then ``number_steps`` delimited
``AgentInfoActionPairProto`` records whose PNG observations are decoded to float32
(``mlagents_envs.rpc_utils.process_pixels``); the PNG ``IHDR`` chunk holds width and height.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from demo_writer import demo_bytes
from PIL import Image

from trainers.settings import ConfigError
from trainers.settings.run_options import MAX_CONFIG_BYTES, load_config_file
from unity_gym.demo import MAX_DECODED_BYTES, DemonstrationError, read_demonstration
from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)
from unity_gym.protocol.communicator_objects.observation_pb2 import PNG


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (width, height)).save(buffer, format="PNG")
    return buffer.getvalue()


def _demo(tmp_path: Path, png: bytes, shape: tuple[int, int, int], records: int) -> Path:
    brain = BrainParametersProto(brain_name="Visual")
    brain.action_spec.num_continuous_actions = 1
    pairs = []
    for _ in range(records):
        record = AgentInfoActionPairProto()
        obs = record.agent_info.observations.add()
        obs.shape.extend(shape)
        obs.compression_type = PNG
        obs.compressed_data = png
        record.action_info.continuous_actions.append(0.0)
        pairs.append(record)
    meta = DemonstrationMetaProto(api_version=1, demonstration_name="big", number_steps=records)
    path = tmp_path / "big.demo"
    path.write_bytes(demo_bytes(meta, brain, pairs))
    return path


def test_png_larger_than_its_shape_is_refused_before_decoding(tmp_path: Path) -> None:
    path = _demo(tmp_path, _png(4000, 4000), (1, 64, 64), records=3)
    started = time.monotonic()
    with pytest.raises(DemonstrationError, match=r"4000x4000.*refused without decoding"):
        read_demonstration(path)
    assert time.monotonic() - started < 1.0  # decoding 3 such images takes far longer


def test_huge_declared_shape_is_refused_by_the_decoded_size_bound(tmp_path: Path) -> None:
    # the file: blank 13000x13000 observations (here a tiny PNG; it is never decoded)
    path = _demo(tmp_path, _png(8, 8), (1, 13000, 13000), records=10)
    assert path.stat().st_size < 10_000
    started = time.monotonic()
    with pytest.raises(DemonstrationError, match="MAX_DECODED_BYTES") as caught:
        read_demonstration(path)
    assert time.monotonic() - started < 1.0
    assert str(MAX_DECODED_BYTES) in str(caught.value)


def test_matching_png_is_still_decoded(tmp_path: Path) -> None:
    demo = read_demonstration(_demo(tmp_path, _png(6, 4), (1, 4, 6), records=2))
    assert demo.observations(0).shape == (2, 1, 4, 6)


def test_oversized_config_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("behaviors: {}\n" + "#" * MAX_CONFIG_BYTES, encoding="utf-8")
    with pytest.raises(ConfigError, match="MAX_CONFIG_BYTES"):
        load_config_file(path)
