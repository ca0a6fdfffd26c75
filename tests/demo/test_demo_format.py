"""Layout handling and clear errors, on synthetic files written like Unity does (spec §8)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from demo_writer import delimited, demo_bytes
from PIL import Image

from unity_gym.base_env import ActionSpec
from unity_gym.demo import (
    DemonstrationError,
    get_demo_files,
    load_demonstration,
    read_demonstration,
)
from unity_gym.exceptions import UnityException
from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.demonstration_meta_pb2 import (
    DemonstrationMetaProto,
)
from unity_gym.protocol.communicator_objects.observation_pb2 import PNG, ObservationProto

pytestmark = pytest.mark.timeout(60)


def meta(steps: int, api_version: int = 1) -> DemonstrationMetaProto:
    return DemonstrationMetaProto(
        api_version=api_version,
        demonstration_name="synthetic",
        number_steps=steps,
        number_episodes=1,
        mean_reward=1.5,
    )


def hybrid_brain() -> BrainParametersProto:
    brain = BrainParametersProto(brain_name="Synth?team=0")
    brain.action_spec.num_continuous_actions = 2
    brain.action_spec.num_discrete_actions = 2
    brain.action_spec.discrete_branch_sizes.extend([3, 2])
    return brain


def vector_record(step: int, *, done: bool = False) -> AgentInfoActionPairProto:
    record = AgentInfoActionPairProto()
    info = record.agent_info
    info.id, info.reward, info.done = 7, 0.25 * step, done
    info.max_step_reached = done
    info.group_id, info.group_reward = 2, -1.0
    info.action_mask.extend([False, True, False, False, True])
    obs = info.observations.add()
    obs.shape.extend([2, 3])
    obs.float_data.data.extend([step + i / 10 for i in range(6)])
    obs.dimension_properties.extend([1, 1])
    obs.name = "Grid"
    record.action_info.continuous_actions.extend([0.5, -0.5 * step])
    record.action_info.discrete_actions.extend([step % 3, 1])
    return record


def write(tmp_path: Path, data: bytes, name: str = "synthetic.demo") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_round_trip_of_a_synthetic_hybrid_file(tmp_path: Path) -> None:
    records = [vector_record(i, done=(i == 2)) for i in range(3)]
    demo = read_demonstration(write(tmp_path, demo_bytes(meta(3), hybrid_brain(), records)))
    assert demo.meta.name == "synthetic" and demo.meta.mean_reward == 1.5
    assert demo.behavior_spec.action_spec == ActionSpec(2, (3, 2))
    assert demo.observations(0).shape == (3, 2, 3)
    np.testing.assert_allclose(demo.observations(0)[1], [[1.0, 1.1, 1.2], [1.3, 1.4, 1.5]])
    assert demo.rewards().tolist() == [0.0, 0.25, 0.5]
    assert demo.dones().tolist() == [False, False, True]
    assert demo.interrupted().tolist() == [False, False, True]
    assert demo.discrete_actions().tolist() == [[0, 1], [1, 1], [2, 1]]
    np.testing.assert_allclose(demo.continuous_actions(), [[0.5, 0.0], [0.5, -0.5], [0.5, -1.0]])
    assert demo.action_masks()[0].tolist() == [False, True, False, False, True]
    assert demo.group_ids().tolist() == [2, 2, 2] and demo.group_rewards().tolist() == [-1.0] * 3


def test_stops_after_number_steps_without_trailing_meta(tmp_path: Path) -> None:
    records = [vector_record(i) for i in range(4)]
    # The header announces 2 steps; the other two records (and no trailing meta) are ignored.
    data = demo_bytes(meta(2), hybrid_brain(), records, trailing_meta=False)
    assert len(read_demonstration(write(tmp_path, data))) == 2


def test_deprecated_actions_split_by_spec(tmp_path: Path) -> None:
    record = vector_record(0)
    record.action_info.ClearField("continuous_actions")
    record.action_info.ClearField("discrete_actions")
    record.action_info.vector_actions_deprecated.extend([0.25, -1.0, 2.0, 1.0])
    step = read_demonstration(write(tmp_path, demo_bytes(meta(1), hybrid_brain(), [record])))
    (only,) = step.steps
    assert only.continuous_actions.tolist() == [0.25, -1.0]
    assert only.discrete_actions.tolist() == [2, 1] and only.has_action


def test_deprecated_action_spec_fallback(tmp_path: Path) -> None:
    brain = BrainParametersProto(brain_name="Old")
    brain.vector_action_size_deprecated.extend([4, 2])  # two discrete branches
    record = vector_record(0)
    record.action_info.ClearField("continuous_actions")
    record.action_info.ClearField("discrete_actions")
    record.action_info.vector_actions_deprecated.extend([3.0, 1.0])
    demo = read_demonstration(write(tmp_path, demo_bytes(meta(1), brain, [record])))
    assert demo.behavior_spec.action_spec == ActionSpec(0, (4, 2))
    assert demo.discrete_actions().tolist() == [[3, 1]]


def test_png_observations_in_legacy_hwc_shape_keep_that_shape(tmp_path: Path) -> None:
    pixels = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 4
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, format="PNG")
    record = AgentInfoActionPairProto()
    obs: ObservationProto = record.agent_info.observations.add()
    obs.shape.extend([4, 5, 3])
    obs.compression_type = PNG
    obs.compressed_data = buffer.getvalue()
    record.action_info.vector_actions_deprecated.append(1.0)
    brain = BrainParametersProto(brain_name="Legacy")
    brain.vector_action_size_deprecated.append(2)
    demo = read_demonstration(write(tmp_path, demo_bytes(meta(1), brain, [record])))
    np.testing.assert_allclose(demo.observations(0)[0], pixels / 255.0, atol=1e-6)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "too short"),
        (b"hello world, this is not a demonstration file at all", r"not a Unity \.demo"),
        (b"\xff" * 64, "length prefix"),
    ],
)
def test_not_a_demo_file(tmp_path: Path, data: bytes, match: str) -> None:
    with pytest.raises(DemonstrationError, match=match) as info:
        read_demonstration(write(tmp_path, data))
    assert isinstance(info.value, UnityException) and isinstance(info.value, ValueError)


def test_real_png_file_is_not_a_demo(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32)).save(buffer, format="PNG")
    with pytest.raises(DemonstrationError, match=r"not a Unity \.demo"):
        read_demonstration(write(tmp_path, buffer.getvalue(), "image.demo"))


def test_unsupported_api_version(tmp_path: Path) -> None:
    data = demo_bytes(meta(1, api_version=2), hybrid_brain(), [vector_record(0)])
    with pytest.raises(
        DemonstrationError, match=r"version 2 is not supported \(supported: \[0, 1\]"
    ):
        read_demonstration(write(tmp_path, data))


def test_api_version_zero_is_accepted(tmp_path: Path) -> None:
    data = demo_bytes(meta(1, api_version=0), hybrid_brain(), [vector_record(0)])
    assert read_demonstration(write(tmp_path, data)).meta.api_version == 0


@pytest.mark.parametrize("missing", [1, 10, 60])
def test_truncated_file(tmp_path: Path, missing: int) -> None:
    data = demo_bytes(meta(3), hybrid_brain(), [vector_record(i) for i in range(3)], False)
    with pytest.raises(DemonstrationError, match="truncated"):
        read_demonstration(write(tmp_path, data[:-missing]))


def test_fewer_records_than_announced(tmp_path: Path) -> None:
    data = demo_bytes(meta(5), hybrid_brain(), [vector_record(i) for i in range(3)], False)
    with pytest.raises(DemonstrationError, match="after 3 of the 5 records"):
        read_demonstration(write(tmp_path, data))


def test_truncated_real_file(demos_dir: Path, tmp_path: Path) -> None:
    data = (demos_dir / "ExpertPushBlock.demo").read_bytes()
    with pytest.raises(DemonstrationError, match="truncated"):
        read_demonstration(write(tmp_path, data[: len(data) // 2]))


def test_zero_steps(tmp_path: Path) -> None:
    data = demo_bytes(meta(0), hybrid_brain(), [])
    with pytest.raises(DemonstrationError, match="no recorded steps"):
        read_demonstration(write(tmp_path, data))


def test_records_inconsistent_with_specs(tmp_path: Path) -> None:
    bad_actions = vector_record(1)
    bad_actions.action_info.discrete_actions.append(0)  # 3 values for 2 branches
    data = demo_bytes(meta(2), hybrid_brain(), [vector_record(0), bad_actions])
    with pytest.raises(DemonstrationError, match="record 1: recorded 2 continuous and 3 discrete"):
        read_demonstration(write(tmp_path, data))

    bad_obs = vector_record(1)
    bad_obs.agent_info.observations[0].float_data.data.append(1.0)
    data = demo_bytes(meta(2), hybrid_brain(), [vector_record(0), bad_obs])
    with pytest.raises(DemonstrationError, match="7 float values recorded, shape"):
        read_demonstration(write(tmp_path, data))


def test_header_meta_overrunning_33_bytes(tmp_path: Path) -> None:
    long_meta = meta(1)
    long_meta.demonstration_name = "x" * 40
    data = delimited(long_meta) + delimited(hybrid_brain()) + delimited(vector_record(0))
    with pytest.raises(DemonstrationError, match=r"not a Unity \.demo"):
        read_demonstration(write(tmp_path, data))


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_demonstration(tmp_path / "absent.demo")
    with pytest.raises(IsADirectoryError, match=r"pass one \.demo file"):
        read_demonstration(tmp_path)


# --------------------------------------------------------------------------------------------
# load_demonstration: ML-Agents' (behavior_spec, info_action_pairs, total_expected)
# --------------------------------------------------------------------------------------------


def test_load_demonstration_reads_a_folder_as_mlagents_does(tmp_path: Path) -> None:
    """Official demo_loader: the folder's ``*.demo`` entries (no subfolder, no other file),
    records concatenated, ``total_expected`` summed, the spec from the first file."""
    folder = tmp_path / "demos"
    (folder / "nested").mkdir(parents=True)
    write(
        folder, demo_bytes(meta(2), hybrid_brain(), [vector_record(0), vector_record(1)]), "b.demo"
    )
    write(folder, demo_bytes(meta(1), hybrid_brain(), [vector_record(5)]), "a.demo")
    write(folder, b"not a demo", "notes.txt")
    write(folder / "nested", b"ignored", "c.demo")
    spec, pairs, total_expected = load_demonstration(folder)
    assert total_expected == 3
    assert len(pairs) == 3
    assert all(isinstance(p, AgentInfoActionPairProto) for p in pairs)
    assert [p.agent_info.reward for p in pairs] == [1.25, 0.0, 0.25]  # a.demo, then b.demo
    assert spec.action_spec == ActionSpec(2, (3, 2))
    assert [o.shape for o in spec.observation_specs] == [(2, 3)]
    assert get_demo_files(folder) == [str(folder / "a.demo"), str(folder / "b.demo")]
    single = load_demonstration(folder / "a.demo")
    assert single[2] == 1 and single[1][0].agent_info.reward == 1.25


def test_load_demonstration_errors_are_the_official_ones(tmp_path: Path) -> None:
    """Official get_demo_files / load_demonstration errors: ValueError for a non-.demo file or
    a folder without one, FileNotFoundError for a missing path, RuntimeError for an
    unsupported version or when no file holds a record."""
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_demonstration(tmp_path / "absent")
    with pytest.raises(ValueError, match=r"no '\.demo' files"):
        load_demonstration(tmp_path)
    with pytest.raises(ValueError, match=r"not a '\.demo' file"):
        load_demonstration(write(tmp_path, b"x", "notes.txt"))
    newer = write(tmp_path, demo_bytes(meta(1, api_version=2), hybrid_brain(), [vector_record(0)]))
    with pytest.raises(RuntimeError, match="version 2 is not supported") as caught:
        load_demonstration(newer)
    assert isinstance(caught.value, DemonstrationError)
    empty = write(tmp_path, demo_bytes(meta(0), hybrid_brain(), []), "empty.demo")
    newer.unlink()
    with pytest.raises(RuntimeError, match="No BrainParameters found"):
        load_demonstration(empty)


@pytest.mark.skipif(
    not Path("/work/shared/data/demos/ExpertBasic.demo").exists(),
    reason="real Unity demos absent (/work/shared/data/demos)",
)
def test_load_demonstration_of_a_real_unity_recording() -> None:
    spec, pairs, total_expected = load_demonstration("/work/shared/data/demos/ExpertBasic.demo")
    assert len(pairs) == total_expected > 0
    assert (
        spec.action_spec.discrete_branches
        == read_demonstration(
            "/work/shared/data/demos/ExpertBasic.demo"
        ).behavior_spec.action_spec.discrete_branches
    )
