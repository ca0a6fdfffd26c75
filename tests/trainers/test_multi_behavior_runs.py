"""``unity-train`` on games with several behaviors, through PettingZoo parallel envs.

Built-in Tennis and SoccerTwos (two teams of one behavior name: one shared trainer) and a Unity
build with two differently named behaviors (two trainers; the vector env refuses the build, the
run falls back to PettingZoo). All games are real headless-player processes over gRPC.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
from process_utils import python_path_with
from trainer_scenes import SCENE, SCENE_FOLDER
from trainer_test_support import RunTrain, ppo_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.envs import ParallelTrainingEnvironment, make_training_env, unity_front
from trainers.settings import parse_run_options
from unity_gym.pettingzoo import UnityParallelEnv
from unity_gym.player.build import build_executable
from unity_gym.vector import RestartPolicy

pytestmark = pytest.mark.timeout(120)

SELF_PLAY_WARNING = "self-play is not configured"


def _game_processes(marker: str) -> set[int]:
    """Live processes whose command line contains ``marker`` (e.g. their log folder)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in command and state not in ("Z", "X"):
            found.add(int(entry.name))
    return found


def _input_shapes(model: Path) -> dict[str, list[object]]:
    session = onnxruntime.InferenceSession(str(model))
    return {i.name: list(i.shape) for i in session.get_inputs()}


def test_ppo_on_tennis_trains_both_teams_with_one_trainer(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    behavior = ppo_behavior(max_steps=320, summary_freq=160, checkpoint_interval=160)
    # updates on more than 64 steps of whole trajectories (points and 32-step cuts): two or
    # more within 320 steps of 8 slots
    behavior["hyperparameters"].update(buffer_size=64, batch_size=32)
    run = run_train({"behaviors": {"Tennis": behavior}}, "--scene", "Tennis", "--num-envs", "2",
                    "--num-areas", "2", "--seed", "4", "--no-graphics")  # fmt: skip
    err = capsys.readouterr().err
    assert err.count(SELF_PLAY_WARNING) == 1
    assert "PettingZoo, 2 game processes, 8 slot(s)" in err  # 2 games x 2 areas x 2 teams
    assert sorted(p.name for p in run.iterdir()) == [
        ".unity-train.lock",  # one run per folder (trainers.run_directory)
        "Tennis",
        "Tennis.onnx",
        "configuration.unity-train.yaml",
        "configuration.yaml",
        "run_logs",
    ]
    behavior_dir = run / "Tennis"
    assert list(behavior_dir.glob("events.out.tfevents.*"))
    # steps count the valid slots only (finished agents wait for their game's reset)
    state = load_checkpoint(behavior_dir / "checkpoint.pt")
    assert state["trainer_type"] == "ppo" and 320 <= state["step"] < 320 + 8
    assert state["update_count"] >= 2
    checkpoints = sorted(int(p.stem.split("-")[1]) for p in behavior_dir.glob("Tennis-*.pt"))
    assert len(checkpoints) == 2 and 160 <= checkpoints[0] < 168
    assert checkpoints[1] == state["step"]
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert set(status) == {"Tennis", "metadata"}
    timers = json.loads((run / "run_logs" / "timers.json").read_text())
    loop = timers["children"]["TrainerController.start_learning"]["children"]
    assert loop["TrainerController.advance"]["count"] >= 320 // 8
    # two game processes step on their own: the loop waits in env_receive for the next one
    assert "env_receive" in loop["TrainerController.advance"]["children"]
    assert (run / "run_logs" / "Player-0.log").is_file()
    assert (run / "run_logs" / "Player-1.log").is_file()
    assert _input_shapes(run / "Tennis.onnx") == {"obs_0": ["batch", 27]}
    assert not _game_processes(str(run / "run_logs"))


def test_ppo_on_soccer_twos_with_dict_observations_and_masks(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    behavior = ppo_behavior(max_steps=240, summary_freq=120, checkpoint_interval=10**6)
    run = run_train({"behaviors": {"SoccerTwos": behavior}}, "--scene", "SoccerTwos",
                    "--num-areas", "1", "--seed", "6", "--no-graphics", "--env-args", "--option",
                    "max_environment_steps=50")  # fmt: skip
    err = capsys.readouterr().err
    assert err.count(SELF_PLAY_WARNING) == 1
    assert "Mean Reward" in err  # episodes (interrupted after 50 steps) were completed
    assert sorted(p.name for p in run.iterdir() if p.suffix == ".onnx") == ["SoccerTwos.onnx"]
    assert _input_shapes(run / "SoccerTwos.onnx") == {
        "obs_0": ["batch", 264],
        "obs_1": ["batch", 72],
        "action_masks": ["batch", 9],
    }
    state = load_checkpoint(run / "SoccerTwos" / "checkpoint.pt")
    assert state["trainer_type"] == "ppo" and 240 <= state["step"] < 240 + 4
    assert (run / "run_logs" / "timers.json").is_file()


@pytest.fixture
def two_behavior_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Unity-style build of the two-behavior test scene (``Seeker`` and ``Hider``)."""
    monkeypatch.setenv("PYTHONPATH", python_path_with(SCENE_FOLDER))
    return build_executable(SCENE, tmp_path / "builds", name="TwoBehaviors").with_suffix("")


def test_a_build_with_two_behaviors_trains_two_trainers_with_default_settings(
    run_train: RunTrain, two_behavior_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = {"hidden_units": 8, "num_layers": 1}
    config = {  # Hider is not listed: default_settings (an 8-unit network) apply to it
        "behaviors": {"Seeker": ppo_behavior(max_steps=200, summary_freq=100)},
        "default_settings": ppo_behavior(max_steps=200, summary_freq=100, network_settings=small),
    }
    run = run_train(config, "--env", str(two_behavior_build), "--num-areas", "2", "--seed", "1",
                    "--no-graphics")  # fmt: skip
    err = capsys.readouterr().err
    assert "has several behaviors; training them through PettingZoo" in err
    assert SELF_PLAY_WARNING not in err  # no teams here: one behavior per name
    assert "Training Hider" in err and "Training Seeker" in err
    assert sorted(p.name for p in run.iterdir()) == [
        ".unity-train.lock",  # one run per folder (trainers.run_directory)
        "Hider",
        "Hider.onnx",
        "Seeker",
        "Seeker.onnx",
        "configuration.unity-train.yaml",
        "configuration.yaml",
        "run_logs",
    ]
    seeker = load_checkpoint(run / "Seeker" / "checkpoint.pt")
    hider = load_checkpoint(run / "Hider" / "checkpoint.pt")
    assert seeker["step"] >= 200 and hider["step"] >= 200
    first_layers = {  # (hidden units, observation size) of the policy's first layer
        name: {tuple(v.shape) for v in state["modules"]["policy"].values() if v.dim() == 2}
        for name, state in (("Seeker", seeker), ("Hider", hider))
    }
    assert (16, 3) in first_layers["Seeker"] and (8, 2) in first_layers["Hider"]
    assert _input_shapes(run / "Seeker.onnx") == {"obs_0": ["batch", 3]}
    hider_inputs = _input_shapes(run / "Hider.onnx")
    assert hider_inputs == {"obs_0": ["batch", 2], "action_masks": ["batch", 5]}
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert {"Hider", "Seeker"} <= set(status)
    assert (run / "run_logs" / "timers.json").is_file()


def test_a_behavior_past_its_max_steps_reports_not_training_while_the_other_goes_on(
    run_train: RunTrain, two_behavior_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ML-Agents' should_still_train: a summary past max_steps says "Not Training."
    config = {
        "behaviors": {
            "Seeker": ppo_behavior(max_steps=400, summary_freq=50),
            "Hider": ppo_behavior(max_steps=100, summary_freq=50),
        }
    }
    run = run_train(config, "--env", str(two_behavior_build), "--num-areas", "2", "--seed", "1",
                    "--no-graphics")  # fmt: skip
    lines = [line for line in capsys.readouterr().err.splitlines() if ". Step: " in line]
    modes: dict[str, list[tuple[int, bool]]] = {"Hider": [], "Seeker": []}
    for line in lines:
        name = line.split("] ", 1)[1].split(".", 1)[0] if "] " in line else line.split(".", 1)[0]
        step = int(line.split("Step: ", 1)[1].split(".", 1)[0])
        modes[name.strip()].append((step, line.endswith("Not Training.")))
    assert any(step <= 400 for step, _ in modes["Seeker"])
    assert all(past == (step > 400) for step, past in modes["Seeker"])
    assert any(step > 100 for step, _ in modes["Hider"])  # the Hider acted on
    assert all(past == (step > 100) for step, past in modes["Hider"])
    hider = load_checkpoint(run / "Hider" / "checkpoint.pt")
    assert hider["step"] >= 100


def test_the_refused_vector_env_leaves_only_the_pettingzoo_games(
    two_behavior_build: Path, tmp_path: Path
) -> None:
    options = parse_run_options({"env_settings": {"env_path": str(two_behavior_build),
                                                  "num_envs": 2}})  # fmt: skip
    logs = tmp_path / "logs"
    training_env = make_training_env(options, seed=3, log_folder=logs)
    try:
        assert isinstance(training_env, ParallelTrainingEnvironment)
        assert len(training_env.envs) == 2
        # the vector env's worker and game are gone; one game per PettingZoo env is left
        games = _game_processes(str(logs))
        assert len(games) == 2
        for pid in games:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            assert "unity_gym.player" in command
    finally:
        training_env.close()
    assert not _game_processes(str(logs))


def test_pettingzoo_games_get_areas_seeds_and_environment_parameters(tmp_path: Path) -> None:
    options = parse_run_options(
        {
            "env_settings": {"scene": "Tennis", "num_envs": 2, "num_areas": 2},
            "environment_parameters": {"angle": 0.0},  # Tennis: no racket tilt at all
        }
    )
    training_env = make_training_env(options, seed=8, log_folder=tmp_path)
    try:
        assert isinstance(training_env, ParallelTrainingEnvironment)
        for index, env in enumerate(training_env.envs):
            assert len(env.possible_agents) == 4  # 2 areas x 2 teams
            assert env.unwrapped.settings.seed == 8 + index  # type: ignore[attr-defined]
            env.reset(seed=8 + index)
            tilt = np.array([0.0, 0.0, 1.0], dtype=np.float32)  # full tilt, were it allowed
            for _ in range(3):
                observations, *_ = env.step({agent: tilt for agent in env.agents})
            for observation in observations.values():
                assert np.all(observation[8::9] == 0.0)  # sin(tilt / 2) of every stacked report
    finally:
        training_env.close()


@pytest.mark.parametrize(
    ("scene", "areas", "agents_per_area"), [("Tennis", 18, 2), ("SoccerTwos", 8, 4)]
)
def test_pettingzoo_games_of_a_scene_get_its_stock_areas_and_play_every_agent_on(
    tmp_path: Path, scene: str, areas: int, agents_per_area: int
) -> None:
    """Without ``--num-areas`` a scene's PettingZoo game holds the areas of Unity's scene (as
    the vector env's game does), and its agents restart as in Unity (``agent_autoreset``)."""
    options = parse_run_options({"env_settings": {"scene": scene}})
    training_env = make_training_env(options, seed=2, log_folder=tmp_path)
    try:
        assert isinstance(training_env, ParallelTrainingEnvironment)
        (env,) = training_env.envs
        assert len(env.possible_agents) == areas * agents_per_area
        assert env.unwrapped.agent_autoreset  # type: ignore[attr-defined]
    finally:
        training_env.close()
    log = (tmp_path / "Player-0.log").read_text(encoding="utf-8")
    assert f"{areas * agents_per_area} agents in {areas} areas" in log, log[:2000]


def test_pettingzoo_games_get_the_run_restart_limits(tmp_path: Path) -> None:
    limits = {"max_lifetime_restarts": 3, "restarts_rate_limit_n": 2,
              "restarts_rate_limit_period_s": 120}  # fmt: skip
    options = parse_run_options({"env_settings": {"scene": "Tennis", "num_envs": 2, **limits}})
    training_env = make_training_env(options, seed=1, log_folder=tmp_path)
    try:
        assert isinstance(training_env, ParallelTrainingEnvironment)
        assert len(training_env.envs) == 2
        for env in training_env.envs:
            game = env.unwrapped
            assert isinstance(game, UnityParallelEnv)
            assert game.restart_policy == RestartPolicy(3, 2, 120)
            assert game.restart_count == 0
    finally:
        training_env.close()


@pytest.mark.parametrize(
    ("scene", "front"),
    [("Tennis", "pettingzoo"), ("SoccerTwos", "pettingzoo"), ("WallJump", "pettingzoo"),
     ("3DBall", "vector"), ("PushBlockCollab", "vector"), ("NoSuchScene", "vector")],
)  # fmt: skip
def test_a_built_in_scene_chooses_its_front_from_its_declared_behaviors(
    scene: str, front: str
) -> None:
    # several declared behavior ids (teams count, and WallJump's two models) -> PettingZoo
    options = parse_run_options({"env_settings": {"scene": scene}})
    assert unity_front(options) == front


def test_a_build_takes_pettingzoo_from_self_play_and_otherwise_asks_the_game() -> None:
    build = {"env_settings": {"env_path": "builds/Game"}}
    assert unity_front(parse_run_options(build)) is None
    one = {"behaviors": {"Seeker": {"trainer_type": "ppo"}}}
    assert unity_front(parse_run_options({**build, **one})) is None
    two = {"behaviors": {"Seeker": {"trainer_type": "ppo"}, "Hider": {"trainer_type": "sac"}}}
    assert unity_front(parse_run_options({**build, **two})) == "pettingzoo"
    teams = {"behaviors": {"Striker": {"trainer_type": "ppo", "self_play": {}}}}
    assert unity_front(parse_run_options({**build, **teams})) == "pettingzoo"
    default = {"default_settings": {"trainer_type": "ppo", "self_play": {}}}
    assert unity_front(parse_run_options({**build, **default})) == "pettingzoo"


@pytest.mark.parametrize(
    "behaviors",
    [{"Seeker": {"trainer_type": "ppo", "self_play": {}}},
     {"Seeker": {"trainer_type": "ppo"}, "Hider": {"trainer_type": "ppo"}}],
    ids=["self_play", "two_behaviors_named"],
)  # fmt: skip
def test_a_build_with_self_play_or_several_behaviors_starts_only_the_pettingzoo_games(
    behaviors: dict[str, Any],
    two_behavior_build: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    options = parse_run_options(
        {"behaviors": behaviors, "env_settings": {"env_path": str(two_behavior_build)}}
    )
    caplog.set_level("INFO")
    training_env = make_training_env(options, seed=3, log_folder=tmp_path / "logs")
    try:
        assert isinstance(training_env, ParallelTrainingEnvironment)
        assert len(training_env.envs) == 1
    finally:
        training_env.close()
    # the vector env never started the game (it would have refused it and said so)
    assert "has several behaviors" not in caplog.text
