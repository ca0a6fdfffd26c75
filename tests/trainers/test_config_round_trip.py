"""``configuration.yaml`` round trip and ``mlagents-learn``'s flag combinations.

Official facts followed (mlagents 1.1.0): ``settings.py`` (``RunOptions.from_dict`` and
``from_argparse`` reject unknown keys at the top level and in ``env_settings``,
``engine_settings``, ``checkpoint_settings``; ``base_port`` is an ``int``;
``CheckpointSettings.prioritize_resume_init``), ``cli_utils.py`` (no mutually exclusive flags;
``--torch``/``--tensorflow`` log "The command line argument --torch was removed."),
``learn.py`` (``--load`` sets resume and logs its deprecation, as ``--train`` does),
``mlagents_envs.environment`` (``no_graphics_monitor``: every worker but worker 0 gets
``-nographics -batchmode``) and ``RewardSignalSettings.structure`` (no ``extrinsic`` needed).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from imitation_test_support import write_demo
from trainer_test_support import RunTrain, ppo_behavior

from trainers.cli import build_parser, main, options_from_args
from trainers.common.checkpoints.files import load_checkpoint
from trainers.settings import companion_path, load_config_file, parse_run_options

PEER_DIR = Path(
    os.environ.get("UNITY_GYM_PEER_VENV", Path(__file__).resolve().parents[2] / ".peer-venv")
)
PEER_PYTHON = PEER_DIR / "bin" / "python"

_OFFICIAL_LOADER = textwrap.dedent(
    """
    import json, sys, yaml
    from mlagents.plugins.trainer_type import register_trainer_plugins
    register_trainer_plugins()
    from mlagents.trainers.settings import RunOptions
    from mlagents.trainers.learn import parse_command_line
    path = sys.argv[1]
    from_dict = RunOptions.from_dict(yaml.safe_load(open(path)))
    # what `mlagents-learn <path> --resume` parses (from_argparse checks the top-level keys)
    from_cli = parse_command_line([path, "--resume"])
    assert from_cli.checkpoint_settings.resume
    print(json.dumps({"dict": from_dict.as_dict(), "cli": from_cli.as_dict()}, default=str))
    """
)


def _official_load(path: Path) -> dict[str, Any]:
    """What mlagents-learn 1.1.0 makes of ``path`` (skips without the reference peer)."""
    if not PEER_PYTHON.is_file() or not (PEER_DIR / ".unity-gym-peer-learn").exists():
        pytest.skip(f"the reference peer with mlagents is absent ({PEER_DIR})")
    proc = subprocess.run(
        [str(PEER_PYTHON), "-c", _OFFICIAL_LOADER, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        cwd=path.parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def _ball(max_steps: int) -> dict[str, Any]:
    behavior = ppo_behavior(max_steps=max_steps, summary_freq=100, keep_checkpoints=10)
    return {"behaviors": {"3DBall": behavior}}


def test_written_configuration_loads_in_mlagents_and_resumes_intact(
    run_train: RunTrain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ("--scene", "3DBall", "--num-envs", "2", "--no-graphics-monitor", "--seed", "4")
    run = run_train(_ball(200), *flags, "--backend", "subprocess", "--time-scale", "30")
    written = run / "configuration.yaml"
    companion = companion_path(written)
    assert companion.name == "configuration.unity-train.yaml" and companion.is_file()

    # --no-graphics-monitor: game 0 keeps its graphics, game 1 runs -nographics -batchmode
    first = (run / "run_logs" / "Player-0.log").read_text().splitlines()[0]
    second = (run / "run_logs" / "Player-1.log").read_text().splitlines()[0]
    assert "-nographics" not in first and "-batchmode" not in first
    assert "-nographics -batchmode" in second

    official = yaml.safe_load(written.read_text())
    assert "scene" not in official["env_settings"] and "precision" not in official["torch_settings"]
    assert (official["env_settings"]["num_envs"], official["env_settings"]["base_port"]) == (
        1,
        5005,
    )
    extras = yaml.safe_load(companion.read_text())
    assert extras["env_settings"]["scene"] == "3DBall"
    assert extras["env_settings"]["num_envs"] == 2 and extras["env_settings"]["base_port"] is None

    loaded = _official_load(written)
    for parsed in (loaded["dict"], loaded["cli"]):
        assert parsed["behaviors"]["3DBall"] == official["behaviors"]["3DBall"]
        assert parsed["engine_settings"]["no_graphics_monitor"] is True
        assert parsed["env_settings"]["seed"] == 4

    # unity-train reads both files back: the same options as the run's
    given = options_from_args(build_parser().parse_args([str(written)]))
    original = options_from_args(
        build_parser().parse_args(
            [
                str(tmp_path / "run-config.yaml"),
                *flags,
                *("--backend", "subprocess", "--time-scale", "30", "--run-id", "run"),
                *("--results-dir", str(run.parent)),
            ]
        )
    )
    assert given.to_dict() == original.to_dict()

    # and resumes from them with everything intact (scene, 2 games, no-graphics monitor)
    capsys.readouterr()
    for log in (run / "run_logs").glob("Player-*.log"):
        log.unlink()
    bigger = yaml.safe_load(written.read_text())
    bigger["behaviors"]["3DBall"]["max_steps"] = 400
    written.write_text(yaml.safe_dump(bigger))
    assert main([str(written), "--resume"]) == 0
    err = capsys.readouterr().err
    assert "Resuming 3DBall from step" in err and "built-in scene 3DBall" in err
    assert load_checkpoint(run / "3DBall" / "checkpoint.pt")["step"] >= 400
    assert "-nographics" in (run / "run_logs" / "Player-1.log").read_text().splitlines()[0]
    assert "-nographics" not in (run / "run_logs" / "Player-0.log").read_text().splitlines()[0]
    again = yaml.safe_load(written.read_text())
    assert again["checkpoint_settings"]["resume"] is True
    assert yaml.safe_load(companion.read_text()) == extras


RICH = {
    "behaviors": {
        "A": {
            "trainer_type": "sac",
            "hyperparameters": {"batch_size": 64, "buffer_size": 1000, "tau": 0.01},
            "network_settings": {"memory": {"memory_size": 32, "sequence_length": 16}},
            "reward_signals": {
                "extrinsic": {"gamma": 0.9},
                "curiosity": {"strength": 0.02},
                "gail": {"demo_path": "x.demo", "use_actions": True},
                "rnd": {"strength": 0.1},
            },
            "behavioral_cloning": {"demo_path": "x.demo", "strength": 0.5, "steps": 100},
            "self_play": {"save_steps": 100, "window": 3},
        },
        "B": {"trainer_type": "poca", "hyperparameters": {"learning_rate_schedule": "constant"}},
        "C": {"trainer_type": "ppo", "reward_signals": {"gail": {"demo_path": "x.demo"}}},
    },
    "environment_parameters": {
        "g": 9.8,
        "s": {"sampler_type": "uniform", "sampler_parameters": {"min_value": 1, "max_value": 2}},
        "c": {
            "curriculum": [
                {
                    "name": "L0",
                    "completion_criteria": {"measure": "reward", "behavior": "A", "threshold": 1},
                    "value": 1.0,
                },
                {"name": "L1", "value": 2.0},
            ]
        },
    },
    "env_settings": {"gym_id": "CartPole-v1", "num_envs": 3},
    "torch_settings": {"precision": "bf16-mixed"},
}


def test_every_trainer_feature_round_trips_and_loads_in_mlagents(tmp_path: Path) -> None:
    options = parse_run_options(RICH)
    official, companion = options.configuration_files()
    path = tmp_path / "configuration.yaml"
    path.write_text(official)
    companion_path(path).write_text(companion)
    loaded = _official_load(path)["dict"]
    written = yaml.safe_load(official)
    assert (
        loaded["behaviors"]["A"]["hyperparameters"] == written["behaviors"]["A"]["hyperparameters"]
    )
    assert set(loaded["behaviors"]["A"]["reward_signals"]) == {
        "extrinsic",
        "curiosity",
        "gail",
        "rnd",
    }
    assert set(loaded["behaviors"]["C"]["reward_signals"]) == {"gail"}  # no extrinsic, as written
    assert loaded["behaviors"]["B"]["trainer_type"] == "poca"
    assert set(loaded["environment_parameters"]) == {"g", "s", "c"}

    back = parse_run_options(load_config_file(path))
    assert back.to_dict() == options.to_dict()
    # a file unity-train wrote before the companion existed (extensions inside sections)
    old = tmp_path / "old" / "configuration.yaml"
    old.parent.mkdir()
    old.write_text(options.to_yaml())
    assert parse_run_options(load_config_file(old)).to_dict() == options.to_dict()


def test_gail_without_extrinsic_trains(run_train: RunTrain, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    demo = write_demo(
        tmp_path / "cartpole.demo",
        [rng.normal(size=(64, 4)).astype(np.float32)],
        discrete=rng.integers(0, 2, size=(64, 1)),
        branches=(2,),
    )
    behavior = ppo_behavior(max_steps=256, summary_freq=128)
    behavior["reward_signals"] = {"gail": {"demo_path": str(demo), "strength": 1.0}}
    run = run_train({"behaviors": {"CartPole": behavior}}, "--gym-id", "CartPole-v1")
    assert load_checkpoint(run / "CartPole" / "checkpoint.pt")["step"] == 256
    resolved = yaml.safe_load((run / "configuration.yaml").read_text())
    assert set(resolved["behaviors"]["CartPole"]["reward_signals"]) == {"gail"}


def _cartpole(max_steps: int = 128) -> dict[str, Any]:
    return {"behaviors": {"CartPole": ppo_behavior(max_steps=max_steps, summary_freq=64)}}


def test_official_flag_combinations(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    gym = ("--gym-id", "CartPole-v1")
    source = run_train(_cartpole(), *gym, run_id="source")
    source_state = load_checkpoint(source / "CartPole" / "checkpoint.pt")

    # --force with --initialize-from: overwrite the run, start from the other one's model
    target = run_train(_cartpole(), *gym, run_id="target")
    (target / "CartPole" / "marker").write_text("old")
    frozen = _cartpole(64)
    frozen["behaviors"]["CartPole"]["hyperparameters"]["buffer_size"] = 1000  # no update
    run_train(frozen, *gym, "--force", "--initialize-from", "source", run_id="target")
    assert not (target / "CartPole" / "marker").exists()
    state = load_checkpoint(target / "CartPole" / "checkpoint.pt")
    assert state["step"] == 64
    for key, value in source_state["modules"]["policy"].items():
        np.testing.assert_array_equal(state["modules"]["policy"][key].numpy(), value.numpy())

    # --resume with --force: resumed, nothing deleted
    capsys.readouterr()
    run_train(_cartpole(256), *gym, "--resume", "--force", run_id="source")
    err = capsys.readouterr().err
    assert "Resuming CartPole from step 128" in err
    # --resume with --initialize-from (both on the command line): resume wins, with a warning
    run_train(_cartpole(320), *gym, "--resume", "--initialize-from", "target", run_id="source")
    err = capsys.readouterr().err
    assert "ignoring initialize_from" in err and "Resuming CartPole from step 256" in err
    # --load: deprecated spelling of --resume; --train: deprecated, ignored
    run_train(_cartpole(384), *gym, "--load", "--train", run_id="source")
    err = capsys.readouterr().err
    assert "The --load option has been deprecated" in err
    assert "The --train option has been deprecated" in err
    assert "Resuming CartPole from step 320" in err
    # --torch / --tensorflow: removed, accepted and ignored with mlagents-learn's warning
    run_train(_cartpole(), *gym, "--torch", "--tensorflow", run_id="removed")
    err = capsys.readouterr().err
    assert "The command line argument --torch was removed." in err
    assert "The command line argument --tensorflow was removed." in err

    # a file's resume: true loses against --initialize-from on the command line
    written = source / "configuration.yaml"
    assert yaml.safe_load(written.read_text())["checkpoint_settings"]["resume"] is True
    args = [str(written), "--initialize-from", "target", "--run-id", "fresh"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "resume is ignored" in err and "Initialized CartPole from" in err

    # what mlagents-learn rejects stays rejected: --resume of a missing run
    run_train(_cartpole(), *gym, "--resume", "--force", run_id="missing", expect=2)
    assert "cannot resume" in capsys.readouterr().err
