"""The conformance benchmarks run end to end and report every figure (no speed assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.bridge_throughput import parse_player_profile
from benchmarks.mlagents_learn_3dball import parse_summaries, trainer_config

pytestmark = [pytest.mark.peer, pytest.mark.timeout(300)]

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_player_profile_line_is_parsed() -> None:
    log = (
        "2026-01-01 [INFO] profile: 5005 Academy steps in 3.20 s; player time 91.5 us/step; "
        "1003 exchanges, player time 40.2 us/exchange, waiting for the trainer 1.250 ms/exchange"
    )
    profile = parse_player_profile("noise\n" + log + "\n")
    assert (profile.academy_steps, profile.exchanges) == (5005, 1003)
    assert profile.wait_us_per_exchange == pytest.approx(1250.0)
    assert profile.own_us_per_cycle == pytest.approx(91.5 * 5005 / 1003)
    with pytest.raises(ValueError, match="no 'profile:' line"):
        parse_player_profile("the player crashed")


def test_learn_summaries_and_config() -> None:
    output = (
        "[INFO] 3DBall. Step: 12000. Time Elapsed: 22.148 s. Mean Reward: 1.796. "
        "Std of Reward: 0.714. Training.\n"
        "[INFO] Other. Step: 12000. Time Elapsed: 1.0 s. Mean Reward: 9.0. Std of Reward: 0.1.\n"
        "[INFO] 3DBall. Step: 24000. Time Elapsed: 44.6 s. Mean Reward: -0.5. "
        "Std of Reward: 0.868. Training.\n"
    )
    summaries = parse_summaries(output)
    assert [(s.step, s.mean_reward) for s in summaries] == [(12000, 1.796), (24000, -0.5)]
    behavior = yaml.safe_load(trainer_config(50_000))["behaviors"]["3DBall"]
    assert behavior["max_steps"] == 50_000 and behavior["summary_freq"] == 12000
    assert behavior["hyperparameters"] == {
        "batch_size": 64,
        "buffer_size": 12000,
        "learning_rate": 0.0003,
        "beta": 0.001,
        "epsilon": 0.2,
        "lambd": 0.99,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    }
    network = behavior["network_settings"]
    assert (network["hidden_units"], network["num_layers"], network["normalize"]) == (128, 2, True)
    assert behavior["reward_signals"]["extrinsic"]["gamma"] == 0.99
    assert behavior["time_horizon"] == 1000


def test_bridge_throughput_reports_every_figure(peer_python: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "benchmarks/bridge_throughput.py",
            "--steps=60",
            "--warmup=10",
            "--rounds=1",
            "--echo-calls=200",
            "--timer-calls=2000",
            "--json",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert set(report["sides"]) == {"ours", "official"}
    for side in report["sides"].values():
        assert side["agent_steps_per_second"] > 0
        player = side["player_profile"]
        # 10 warm-up + 60 timed step() calls; several Academy steps each (decision period 5)
        assert player["exchanges"] >= 70
        assert player["academy_steps"] > 3 * player["exchanges"]
        assert 0 < side["player_share"] < 1
    assert report["throughput_ratio"] > 0
    sizes = report["message_bytes"]
    assert sizes["game_to_python"] > sizes["python_to_game"] > 12 * 2 * 4
    assert report["echo_us_per_round_trip"] > 0 and report["relay_us_per_round_trip"] > 0
    assert report["timers_us"]["ours"]["timed"] > 0
    assert report["timers_us"]["official"]["timed"] > 0


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_mlagents_learn_trains_on_the_player(peer_python: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "benchmarks/mlagents_learn_3dball.py", "--max-steps", "12000"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1150,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "OK: trained 12000 steps without error" in proc.stdout
    assert "3DBall.onnx" in proc.stdout


def test_train_3dball_reads_the_first_summary_at_the_target() -> None:
    from benchmarks.train_3dball import time_to_target

    line = (
        "[INFO] 3DBall. Step: {step}. Time Elapsed: 1.0 s. Mean Reward: {mean}. "
        "Std of Reward: 0.5. Training.\n"
    )
    lines = [
        (3.0, "[INFO] starting\n"),
        (10.0, line.format(step=12000, mean="2.5")),
        (20.0, line.format(step=24000, mean="90.5")),
        (30.0, line.format(step=36000, mean="100.0")),
    ]
    assert time_to_target(lines, 90.0) == (20.0, 24000, 90.5)
    assert time_to_target(lines[:2], 90.0) == (None, 12000, 2.5)
    seconds, step, mean = time_to_target([], 90.0)
    assert (seconds, step) == (None, 0) and mean != mean  # NaN without any summary


def test_train_3dball_translates_the_ppo_config_for_sb3() -> None:
    from benchmarks.train_3dball import DEFAULT_CONFIG, sb3_arguments

    behavior = yaml.safe_load(DEFAULT_CONFIG.read_text())["behaviors"]["3DBall"]
    kwargs = sb3_arguments(behavior, num_slots=48)
    assert kwargs["n_steps"] == 250  # 12000 agent steps over 48 agents
    assert (kwargs["batch_size"], kwargs["n_epochs"], kwargs["total_timesteps"]) == (64, 3, 500000)
    assert (kwargs["gamma"], kwargs["gae_lambda"], kwargs["ent_coef"]) == (0.99, 0.99, 0.001)
    assert kwargs["learning_rate"](1.0) == pytest.approx(3e-4)  # linear over max_steps
    assert kwargs["learning_rate"](0.5) == pytest.approx(1.5e-4)
    assert kwargs["clip_range"](0.5) == pytest.approx(0.1)  # epsilon follows the lr schedule
    assert kwargs["policy_kwargs"]["net_arch"] == {"pi": [128, 128], "vf": [128, 128]}
    constant = dict(behavior, hyperparameters=dict(behavior["hyperparameters"],
                                                   learning_rate_schedule="constant"))  # fmt: skip
    assert sb3_arguments(constant, num_slots=12)["learning_rate"] == pytest.approx(3e-4)
    with pytest.raises(ValueError, match="needs a ppo config"):
        sb3_arguments(dict(behavior, trainer_type="sac"), num_slots=12)


def test_train_3dball_judges_each_seed_on_the_median_of_its_rounds() -> None:
    from benchmarks.train_3dball import ContenderResult, seed_figures

    def round_of(ours: float, theirs: float | None) -> dict[str, ContenderResult]:
        return {
            "unity-train": ContenderResult("unity-train", ours, 120000, 91.0),
            "mlagents-learn": ContenderResult("mlagents-learn", theirs, 96000, 90.5),
        }

    rounds = [round_of(30.0, 100.0), round_of(27.0, 90.0), round_of(40.0, 80.0)]
    ratio, ours, theirs = seed_figures(rounds, ["unity-train", "mlagents-learn"], 900.0)
    assert ratio.name == "time ratio unity-train / mlagents-learn"
    assert ratio.value == pytest.approx(0.3) and ratio.goal is not None
    assert ratio.goal.met(ratio.value) and not ratio.goal.met(0.51)
    assert (ours.value, theirs.value) == (30.0, 90.0)
    late = seed_figures([round_of(30.0, None)], ["unity-train", "mlagents-learn"], 900.0)
    assert late[0].value != late[0].value and late[2].value != late[2].value  # nan: not reached
    alone = seed_figures([round_of(30.0, 90.0)], ["unity-train"], 900.0)
    assert [figure.name for figure in alone] == ["unity-train seconds"]


@pytest.mark.timeout(240)
def test_tennis_trains_with_mlagents_learn_on_the_same_seed_and_plays_its_onnx(
    peer_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.multiagent import main

    code = main(
        ["--only", "tennis", "--seed", "3", "--tennis-steps", "200", "--eval-episodes", "2",
         "--mlagents-learn", "--workdir", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    run = tmp_path / "seed3"
    assert (run / "results" / "tennis" / "Tennis.onnx").is_file(), out[-3000:]
    # The official exporter's file, played by the same evaluation as ours.
    _mlagents_learn_run(out, run, "tennis-mlagents-learn", 3)
    # Both learn from as many courts: the executable's stock 18, which unity-train asks for.
    for name in ("tennis", "tennis-mlagents-learn"):
        log = (run / "results" / name / "run_logs" / "Player-0.log").read_text("utf-8")
        assert "36 agents in 18 areas" in log, f"{name}: {log[:2000]}"
    assert out.count("trained (deterministic actions) vs random, 2 points: win rate") == 2
    table = out[out.index("part tennis (seeds 3)") :].splitlines()
    theirs = next(line for line in table if "(mlagents-learn)" in line)
    assert theirs.rstrip().endswith("(no goal)")
    ours = next(line for line in table if line.strip().startswith("Tennis win rate vs random "))
    assert code == (1 if "NOT met" in ours else 0)  # only unity-train's figure has a goal


@pytest.mark.timeout(240)
def test_hallway_memory_trains_with_mlagents_learn_on_the_same_seed(
    peer_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.curriculum_memory import main

    main(
        ["--only", "hallway", "--seed", "2", "--hallway-steps", "2000", "--mlagents-learn",
         "--workdir", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    settings = _mlagents_learn_run(out, tmp_path / "seed2", "hallway-memory-mlagents-learn", 2)
    # the memory config as ours trains it: an LSTM of ML-Agents' Hallway config
    memory = settings["config"]["behaviors"]["Hallway"]["network_settings"]["memory"]
    assert memory == {"sequence_length": 64, "memory_size": 128}
    assert "mlagents-learn memory mean reward" in out
    _assert_figures_without_goal(out, "part hallway (seeds 2)", 2)


def _mlagents_learn_run(out: str, run: Path, name: str, seed: int) -> dict[str, Any]:
    """Assert that ``mlagents-learn`` trained run ``name`` in ``run`` on ``seed`` and exported
    its ONNX model; returns the run's kept settings."""
    settings: dict[str, Any] = json.loads((run / f"{name}.settings.json").read_text("utf-8"))
    assert settings["trainer"] == "mlagents-learn" and settings["seed"] == seed
    (behavior,) = settings["config"]["behaviors"]
    assert (run / "results" / name / f"{behavior}.onnx").is_file(), out[-3000:]
    assert "$ mlagents-learn" in out and f"--seed {seed}" in out
    return settings


def _assert_figures_without_goal(out: str, part: str, count: int) -> None:
    """The ``part`` table lists ``count`` mlagents-learn figures, each without a goal."""
    table = out[out.index(part) :].splitlines()
    theirs = [line for line in table if "(mlagents-learn)" in line]
    assert len(theirs) == count and all(line.rstrip().endswith("(no goal)") for line in theirs)


@pytest.mark.timeout(300)
def test_pyramids_intrinsic_variants_train_with_mlagents_learn_on_the_same_seed(
    peer_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.intrinsic_imitation import main

    main(
        ["--only", "pyramids", "--seed", "2", "--pyramids-steps", "2000", "--mlagents-learn",
         "--workdir", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    run = tmp_path / "seed2"
    for variant in ("rnd", "curiosity"):
        name = f"pyramids-{variant}-mlagents-learn"
        settings = _mlagents_learn_run(out, run, name, 2)
        # the same variant ours trained: the same reward signals, the same settings
        ours = json.loads((run / f"pyramids-{variant}.settings.json").read_text("utf-8"))
        assert settings["config"] == ours["config"]
        assert variant in settings["config"]["behaviors"]["Pyramids"]["reward_signals"]
    assert out.count("$ mlagents-learn") == 2
    assert "mlagents-learn rnd        mean reward" in out
    _assert_figures_without_goal(out, "part pyramids (seeds 2)", 2)
