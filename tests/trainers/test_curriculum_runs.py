"""``unity-train`` with curriculum lessons on the built-in 3DBall scene, then ``--resume``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_test_support import RunTrain, ppo_behavior

pytestmark = pytest.mark.timeout(180)


def _lesson_series(behavior_dir: Path, parameter: str = "mass") -> list[tuple[int, float]]:
    """The ``Environment/Lesson Number/<parameter>`` scalars of a behavior, by step."""
    tag = f"Environment/Lesson Number/{parameter}"
    series: list[tuple[int, float]] = []
    for event_file in sorted(behavior_dir.glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(event_file))
        accumulator.Reload()
        if tag in accumulator.Tags()["scalars"]:
            series += [(event.step, event.value) for event in accumulator.Scalars(tag)]
    return sorted(series)


def _config(max_steps: int) -> dict[str, object]:
    behavior = ppo_behavior(
        max_steps=max_steps, summary_freq=120, checkpoint_interval=10**6, time_horizon=20
    )
    behavior["hyperparameters"]["buffer_size"] = 240
    return {
        "behaviors": {"3DBall": behavior},
        "environment_parameters": {
            "mass": {
                "curriculum": [
                    {
                        "name": "Light",
                        "value": 1.0,
                        "completion_criteria": {
                            "behavior": "3DBall",
                            "measure": "progress",
                            "threshold": 0.3,
                        },
                    },
                    {"name": "Heavy", "value": 5.0},
                ]
            },
        },
    }


def test_a_lesson_change_is_recorded_and_survives_resume(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ("--scene", "3DBall", "--seed", "3", "--no-graphics")
    run = run_train(_config(480), *flags)  # 12 agents: 40 steps of the game
    console = capsys.readouterr().err
    assert "Parameter 'mass' starts in lesson 0 ('Light')" in console
    assert "Parameter 'mass' has changed. Now in lesson 'Heavy'" in console
    assert "has no set_env_params" not in console  # the new value went to the running games
    status_path = run / "run_logs" / "training_status.json"
    assert json.loads(status_path.read_text())["mass"] == {"lesson_num": 1}
    series = _lesson_series(run / "3DBall")
    assert series[0] == (120, 0.0)  # progress 0.25: still the first lesson
    assert [value for step, value in series if step >= 240] == [1.0, 1.0, 1.0]
    configuration = (run / "configuration.yaml").read_text()
    assert "curriculum:" in configuration and "name: Heavy" in configuration

    run_train(_config(720), *flags, "--resume")
    console = capsys.readouterr().err
    assert "Parameter 'mass' starts in lesson 1 ('Heavy')" in console
    assert "has changed" not in console
    assert json.loads(status_path.read_text())["mass"] == {"lesson_num": 1}
    resumed = [value for step, value in _lesson_series(run / "3DBall") if step > 480]
    assert resumed and all(value == 1.0 for value in resumed)


def test_lessons_advance_on_an_env_without_parameters_with_one_warning(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    behavior = ppo_behavior(max_steps=400, summary_freq=100, checkpoint_interval=10**6)
    lessons = [
        {"name": f"L{i}", "value": float(i),
         "completion_criteria": {"behavior": "CartPole", "measure": "progress",
                                 "threshold": 0.2 * (i + 1)}}
        for i in range(2)
    ] + [{"name": "L2", "value": 2.0}]  # fmt: skip
    config = {
        "behaviors": {"CartPole": behavior},
        "environment_parameters": {"length": {"curriculum": lessons}},
    }
    run = run_train(config, "--gym-id", "CartPole-v1", "--num-envs", "2", "--seed", "1")
    console = capsys.readouterr().err
    assert "Now in lesson 'L1'" in console and "Now in lesson 'L2'" in console
    assert console.count("has no set_env_params method") == 1
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert status["length"] == {"lesson_num": 2}
    assert [value for _, value in _lesson_series(run / "CartPole", "length")][-1] == 2.0


def test_a_lesson_with_require_reset_resets_the_games(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(480)
    lessons = config["environment_parameters"]["mass"]["curriculum"]  # type: ignore[index]
    lessons[0]["completion_criteria"]["require_reset"] = True
    # two game processes: one may still be stepping when the lesson changes
    run = run_train(config, "--scene", "3DBall", "--seed", "3", "--num-envs", "2")
    console = capsys.readouterr().err
    assert "Parameter 'mass' has changed. Now in lesson 'Heavy'" in console
    assert console.count("the games were reset") == 1
    timers = json.loads((run / "run_logs" / "timers.json").read_text())
    assert '"lesson_reset"' in json.dumps(timers)


def test_walljump_curriculum_trains_both_behaviors_of_a_switching_scene(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    """ML-Agents' WallJump curriculum config, unmodified but for max_steps and summaries, on
    the WallJump scene whose areas switch between SmallWallJump and BigWallJump."""
    path = Path(__file__).parents[2] / "trainers" / "configs" / "WallJump_curriculum_ppo.yaml"
    config = yaml.safe_load(path.read_text())
    for behavior in config["behaviors"].values():
        behavior["max_steps"] = 600
        behavior["summary_freq"] = 300
    run = run_train(config, "--scene", "WallJump", "--num-areas", "2", "--seed", "2")
    console = capsys.readouterr().err
    assert "Training BigWallJump" in console and "Training SmallWallJump" in console
    for behavior in ("BigWallJump", "SmallWallJump"):
        assert (run / f"{behavior}.onnx").is_file()
        assert _lesson_series(run / behavior, f"{behavior[:-8].lower()}_wall_height")
