"""Demonstrations for training: ``.demo`` steps in the trainer's format, ``demo_path`` as a file
or a folder (relative to the working directory), and errors naming both specs on a mismatch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from imitation_test_support import real_demo, write_demo

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.imitation import Demonstrations, demo_files, load_demonstrations
from trainers.settings import ConfigError, GAILSettings, parse_run_options

pytestmark = pytest.mark.timeout(60)

VECTOR = ObservationLayout.from_space(spaces.Box(-np.inf, np.inf, (2,), np.float32))
DISCRETE3 = ActionLayout.from_space(spaces.Discrete(3))
KEY = "behaviors.B.behavioral_cloning.demo_path"


def _load(path: str | Path, layout: ObservationLayout = VECTOR) -> Demonstrations:
    return load_demonstrations(path, layout, DISCRETE3, behavior_name="B", key=KEY)


def _steps(count: int, offset: float = 0.0) -> np.ndarray:
    return np.stack([np.arange(count) + offset, -np.arange(count) - offset], axis=1)


def test_demo_steps_become_rows_with_the_next_records_done_flag(tmp_path: Path) -> None:
    observations = _steps(4)
    write_demo(
        tmp_path / "a.demo",
        [observations],
        discrete=np.array([[0], [2], [1], [2]]),
        branches=[3],
        dones=[False, False, True, False],
    )
    demos = load_demonstrations(tmp_path / "a.demo", VECTOR, DISCRETE3, behavior_name="B", key=KEY)
    assert len(demos) == 3  # the last record has no successor (ML-Agents drops it)
    np.testing.assert_allclose(demos.observations[0], observations[:3])
    assert demos.observations[0].dtype == np.float32
    assert demos.discrete is not None and demos.discrete[:, 0].tolist() == [0, 2, 1]
    assert demos.continuous is None
    assert demos.dones.tolist() == [False, True, False]  # step 1's action ended the episode
    batch = demos.batch(np.array([1, 1]), VECTOR, torch.device("cpu"))
    assert batch.dones is not None and batch.dones.tolist() == [1.0, 1.0]


def test_a_folder_of_demos_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "demos"
    folder.mkdir()
    write_demo(folder / "b.demo", [_steps(3, 10.0)], discrete=np.zeros((3, 1)), branches=[3])
    write_demo(folder / "a.demo", [_steps(5)], discrete=np.ones((5, 1)), branches=[3])
    (folder / "notes.txt").write_text("not a demo")
    monkeypatch.chdir(tmp_path)
    assert demo_files("demos", KEY) == [folder / "a.demo", folder / "b.demo"]
    demos = load_demonstrations("demos", VECTOR, DISCRETE3, behavior_name="B", key=KEY)
    assert len(demos) == 4 + 2  # each file's last record is dropped
    assert demos.observations[0][:, 0].tolist() == [0, 1, 2, 3, 10, 11]
    assert demos.files == (folder / "a.demo", folder / "b.demo")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.demo", "does not exist (a relative demo_path starts at the working directory"),
        ("notes.txt", "is not a .demo file"),
        ("empty", "holds no .demo files"),
    ],
)
def test_demo_path_errors_name_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, message: str
) -> None:
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        _load(name)
    assert str(info.value).startswith(KEY) and message in str(info.value)


def test_a_spec_mismatch_names_both_specs_and_the_file() -> None:
    basic = real_demo("ExpertBasic.demo")
    push_block = ObservationLayout.from_space(
        spaces.Dict(
            {
                "RayPerceptionSensor": spaces.Box(-np.inf, np.inf, (105,), np.float32),
                "OffsetRayPerceptionSensor": spaces.Box(-np.inf, np.inf, (105,), np.float32),
            }
        )
    )
    with pytest.raises(ConfigError) as info:
        load_demonstrations(
            basic,
            push_block,
            ActionLayout.from_space(spaces.Discrete(7)),
            behavior_name="PushBlock",
            key=KEY,
        )
    message = str(info.value)
    assert message.startswith(KEY) and str(basic) in message
    assert "records observations [(20,)] and actions (continuous 0, discrete branches (3,))" in (
        message
    )
    assert (
        "behavior PushBlock has observations [OffsetRayPerceptionSensor (105,), "
        "RayPerceptionSensor (105,)] and actions (continuous 0, discrete branches (7,))"
    ) in message


def test_a_mismatch_of_actions_alone_is_refused(tmp_path: Path) -> None:
    write_demo(tmp_path / "a.demo", [_steps(3)], continuous=np.zeros((3, 1)))
    with pytest.raises(ConfigError, match=r"actions \(continuous 1, discrete branches \(\)\)"):
        _load(tmp_path / "a.demo")


@pytest.mark.parametrize(
    ("section", "value", "message"),
    [
        ("behavioral_cloning", {}, "behavioral_cloning.demo_path: required for behavioral"),
        ("behavioral_cloning", {"demo_path": "x", "steps": -1}, "behavioral_cloning.steps"),
        ("behavioral_cloning", {"demo_path": "x", "strength": -1}, "behavioral_cloning.strength"),
        ("behavioral_cloning", {"demo_path": "x", "batch_size": 0}, "cloning.batch_size"),
        ("behavioral_cloning", {"demo_path": "x", "num_epoch": 0}, "cloning.num_epoch"),
        ("behavioral_cloning", {"demo_path": "x", "samples_per_update": -4}, "samples_per"),
        ("behavioral_cloning", {"demo_path": "x", "stps": 3}, "did you mean steps?"),
        ("gail", {"demo_path": "x", "strength": -0.1}, "reward_signals.gail.strength"),
        ("gail", {"demo_path": "x", "learning_rate": 0}, "reward_signals.gail.learning_rate"),
        ("gail", {"demo_path": "x", "use_vail": "yes"}, "gail.use_vail: expected true or false"),
    ],
)
def test_configuration_errors_name_the_key(
    section: str, value: dict[str, object], message: str
) -> None:
    behavior: dict[str, object] = {"reward_signals": {"extrinsic": {}}}
    if section == "gail":
        behavior["reward_signals"] = {"extrinsic": {}, "gail": value}
    else:
        behavior[section] = value
    with pytest.raises(ConfigError, match=message.replace("?", r"\?")):
        parse_run_options({"behaviors": {"B": behavior}})


def test_settings_take_ml_agents_defaults() -> None:
    options = parse_run_options(
        {
            "behaviors": {
                "B": {
                    "reward_signals": {"extrinsic": {}, "gail": {"demo_path": "d.demo"}},
                    "behavioral_cloning": {"demo_path": "d.demo"},
                }
            }
        }
    )
    settings = options.trainer_settings_for("B")
    gail = settings.reward_signals["gail"]
    assert isinstance(gail, GAILSettings)
    assert (gail.gamma, gail.strength, gail.network_settings.hidden_units) == (0.99, 1.0, 128)
    assert (gail.learning_rate, gail.use_actions, gail.use_vail) == (3e-4, False, False)
    cloning = settings.behavioral_cloning
    assert cloning is not None
    assert (cloning.strength, cloning.steps, cloning.samples_per_update) == (1.0, 0, 0)
    assert (cloning.batch_size, cloning.num_epoch) == (None, None)
