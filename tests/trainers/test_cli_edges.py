"""``unity-train``'s command-line edges, on real ``unity-train`` processes training the
built-in ``3DBall`` scene over gRPC: finding scenes, ``--resume`` keeping the run's seed,
``--inference`` leaving the trained run alone, and output files following the umask."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trainers.run_directory import INFERENCE_PREFIX
from unity_gym.player.scenes import scene_names

pytestmark = pytest.mark.timeout(240)

REPO_ROOT = Path(__file__).resolve().parents[2]

TINY_3DBALL = {
    "behaviors": {
        "3DBall": {
            "trainer_type": "ppo",
            "hyperparameters": {"batch_size": 32, "buffer_size": 64, "num_epoch": 1},
            "network_settings": {"hidden_units": 16, "num_layers": 1},
            "max_steps": 128,
            "summary_freq": 64,
            "checkpoint_interval": 64,
            "time_horizon": 32,
        }
    }
}


def _unity_train(
    cwd: Path, *args: str, umask: int = 0o022, max_steps: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m trainers CONFIG ARGS`` in ``cwd`` (results in ``cwd/results``)."""
    config = yaml.safe_load(yaml.safe_dump(TINY_3DBALL))
    if max_steps is not None:
        config["behaviors"]["3DBall"]["max_steps"] = max_steps
    config_path = cwd / "tiny.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "trainers", str(config_path), "--results-dir", "results", *args],
        cwd=cwd,
        env=env,
        umask=umask,
        capture_output=True,
        text=True,
        timeout=200,
    )


def _files(root: Path) -> dict[Path, int]:
    """Permission bits of every file below ``root``."""
    return {path: stat.S_IMODE(path.stat().st_mode) for path in root.rglob("*") if path.is_file()}


def _snapshot(root: Path) -> dict[Path, tuple[int, bytes]]:
    """Modification time and content of every file below ``root``."""
    return {
        path: (path.stat().st_mtime_ns, path.read_bytes())
        for path in root.rglob("*")
        if path.is_file()
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished ``--seed 7`` run ``ball`` of 3DBall, trained under umask 022."""
    cwd = tmp_path_factory.mktemp("cli-edges")
    result = _unity_train(cwd, "--scene", "3DBall", "--run-id", "ball", "--seed", "7")
    assert result.returncode == 0, result.stderr
    assert "Training 3DBall (built-in scene 3DBall" in result.stderr
    return cwd / "results" / "ball"


def test_outputs_follow_umask_022(trained: Path) -> None:
    modes = _files(trained)
    expected = {
        trained / "configuration.yaml",
        trained / "configuration.unity-train.yaml",
        trained / "3DBall.onnx",
        trained / "run_logs" / "timers.json",
        trained / "run_logs" / "training_status.json",
        trained / "3DBall" / "checkpoint.pt",
        trained / "3DBall" / "3DBall-132.pt",
        trained / "3DBall" / "3DBall-132.onnx",
    }
    assert expected <= set(modes)
    assert any(path.name.startswith("events.out.tfevents") for path in modes)
    assert {path: mode for path, mode in modes.items() if mode != 0o644} == {}


def test_resume_keeps_the_seed_and_files_follow_umask_077(trained: Path, tmp_path: Path) -> None:
    shutil.copytree(trained, tmp_path / "results" / "ball")
    run = tmp_path / "results" / "ball"
    recorded = yaml.safe_load((run / "configuration.yaml").read_text())
    assert recorded["env_settings"]["seed"] == 7  # not -1

    result = _unity_train(
        tmp_path, "--scene", "3DBall", "--run-id", "ball", "--resume", umask=0o077, max_steps=256
    )
    assert result.returncode == 0, result.stderr
    assert "run seed: 7 (the run's" in result.stderr
    assert "Resuming 3DBall from step 132" in result.stderr
    assert yaml.safe_load((run / "configuration.yaml").read_text())["env_settings"]["seed"] == 7
    modes = _files(run)
    for written in (
        run / "configuration.yaml",
        run / "3DBall.onnx",
        run / "run_logs" / "timers.json",
        run / "run_logs" / "training_status.json",
        run / "3DBall" / "checkpoint.pt",
        run / "3DBall" / "3DBall-264.pt",
        run / "3DBall" / "3DBall-264.onnx",
    ):
        assert modes[written] == 0o600, written
    assert modes[run / "3DBall" / "3DBall-132.pt"] == 0o644  # from the first run, untouched


def test_inference_leaves_the_trained_run_alone(trained: Path) -> None:
    before = _snapshot(trained)
    cwd = trained.parent.parent
    # alone (no --resume), with --force (which must delete nothing) and another seed
    result = _unity_train(
        cwd, "--scene", "3DBall", "--run-id", "ball", "--inference", "--force", "--seed", "9"
    )
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "Training 3DBall" not in err and "Inference (no training, nothing saved)" in err
    assert "Loaded 3DBall for inference" in err
    assert "--force is ignored with --inference" in err
    assert "was started with seed 7; this session uses seed 9" in err
    sessions = [p for p in trained.iterdir() if p.name.startswith(INFERENCE_PREFIX)]
    assert len(sessions) == 1
    session = sessions[0]
    assert {p: v for p, v in _snapshot(trained).items() if session not in p.parents} == before
    assert (session / "run_logs" / "timers.json").is_file()
    assert yaml.safe_load((session / "configuration.yaml").read_text())["env_settings"]["seed"] == 9
    assert list((session / "3DBall").glob("events.out.tfevents.*"))
    assert not list(session.rglob("*.pt")) and not list(session.rglob("*.onnx"))

    missing = _unity_train(cwd, "--scene", "3DBall", "--run-id", "nope", "--inference")
    assert missing.returncode == 2
    assert "--inference: there is no trained run 'nope'" in missing.stderr
    assert not (cwd / "results" / "nope").exists()


def _unity_train_bare(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m trainers ARGS`` (no config) in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "trainers", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("module", ["trainers", "unity_gym.player"])
def test_a_listing_cut_short_by_its_reader_ends_without_a_traceback(
    tmp_path: Path, module: str
) -> None:
    """``unity-train --list-scenes | head -1`` (and the player's): the reader has gone before
    the listing is written; exit status 1, no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--list-scenes"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()  # no reader left: the first write fails with EPIPE
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_list_scenes_help_and_scene_typos(tmp_path: Path) -> None:
    listed = _unity_train_bare(tmp_path, "--list-scenes")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    ball = next(line for line in lines if line.split()[0] == "3DBall")
    assert "Balance a ball" in ball and "3DBall_ppo.yaml" in ball
    for name in ("Basic", "GridWorld", "SoccerTwos", "Tennis"):
        assert any(line.split()[0] == name for line in lines[1:-1]), name

    shown = _unity_train_bare(tmp_path, "--help")
    text = " ".join(shown.stdout.split())
    assert shown.returncode == 0
    assert "PPO, SAC or POCA" in text and "PPO or SAC" not in text
    assert "--list-scenes" in text and ", ".join(scene_names()) in text

    typo = _unity_train(tmp_path, "--scene", "3dbal", "--run-id", "typo")
    assert typo.returncode == 2
    assert (
        "--scene 3dbal: no built-in scene has this name. Did you mean 3DBall or 3DBallHard?"
        in typo.stderr
    )
    assert "file_name=" not in typo.stderr
    no_build = _unity_train(tmp_path, "--env", "builds/Nothing", "--run-id", "nobuild")
    assert no_build.returncode == 2
    assert "--env builds/Nothing: no Unity build there" in no_build.stderr
    assert "file_name=" not in no_build.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_recorded_demos_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    demo = tmp_path / "Ball.demo"
    recorded = subprocess.run(
        [sys.executable, "-m", "unity_gym.player", "--scene", "3DBall", "--record-demo",
         str(demo), "--record-steps", "5", "-batchmode", "-nographics"],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        umask=umask,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert _files(tmp_path) == {demo: mode}
