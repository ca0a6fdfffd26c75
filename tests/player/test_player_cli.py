"""The player as a process: heuristic play, ``--max-steps``, Unity-style flags, errors, builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from unity_gym.player.build import build_executable
from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes import scene_names
from unity_gym.player_process import PLAYER_BLAS_THREADS

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]


def _player(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unity_gym.player", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=50,
    )


@pytest.mark.parametrize("scene", ["3DBall", "Basic", "Stress"])
def test_heuristic_play_stops_at_max_steps(scene: str, tmp_path: Path) -> None:
    log = tmp_path / "nested" / "player.log"
    result = _player(
        "--scene", scene, "--max-steps", "300", "-batchmode", "-nographics",
        "-logFile", str(log), "-screen-quality", "Fast", "--unknown-flag",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = log.read_text()
    assert "playing with the built-in heuristic" in text
    assert "Quitting: reached --max-steps 300" in text
    assert "profile: 300 Academy steps" in text
    assert "Ignoring unknown command-line argument '-screen-quality'" in text
    assert "Ignoring unknown command-line argument '--unknown-flag'" in text


def test_a_game_process_imports_neither_gymnasium_nor_pillow_it_does_not_use(
    tmp_path: Path,
) -> None:
    """``python -m unity_gym.player`` never makes Gymnasium envs, so ``import unity_gym`` skips
    registering its ids there (Gymnasium's import was a seventh of a game's start-up CPU);
    any other program that imports ``unity_gym`` still registers them. A game without cameras
    and without a video never draws, so it does not import Pillow either (median CPU per game
    launch 294 ms instead of 312 ms)."""

    def imported_by_game(*args: str) -> set[str]:
        game = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "unity_gym.player", *args,
             "--max-steps", "5", "-logFile", "-"],
            cwd=REPO, capture_output=True, text=True, timeout=50,
        )  # fmt: skip
        assert game.returncode == 0, game.stderr
        lines = (game.stdout + game.stderr).splitlines()
        return {line.rsplit("|", 1)[-1].strip() for line in lines if "import time:" in line}

    imported = imported_by_game("--scene", "3DBall")
    assert {"unity_gym.player.cli", "numpy", "grpc"} <= imported
    assert not {"gymnasium", "unity_gym.registration", "PIL", "PIL.Image"} & imported
    # drawing brings Pillow in when the first picture is made
    video = str(tmp_path / "ball.gif")
    assert "PIL.Image" in imported_by_game("--scene", "3DBall", "--record-video", video)
    other = subprocess.run(
        [sys.executable, "-c", "import unity_gym, gymnasium; print(gymnasium.spec('Unity-v0').id)"],
        cwd=REPO, capture_output=True, text=True, timeout=50,
    )  # fmt: skip
    assert other.returncode == 0 and other.stdout.strip() == "Unity-v0", other.stderr


def test_a_game_process_runs_numpy_blas_on_one_thread_unless_told_otherwise() -> None:
    """A game's matrices are small: a second BLAS thread only busy-waited beside the trainer
    (VisualFoodCollector's CPU per step halved with one). ``python -m unity_gym.player`` sets the
    limit before numpy is imported; a value in the environment wins."""

    def blas_line(environment: dict[str, str]) -> str:
        game = subprocess.run(
            [sys.executable, "-m", "unity_gym.player", "--scene", "3DBall", "--max-steps", "5",
             "-logFile", "-"],
            cwd=REPO, capture_output=True, text=True, timeout=50, env=environment,
        )  # fmt: skip
        assert game.returncode == 0, game.stderr
        lines = [line for line in game.stdout.splitlines() if "numpy BLAS threads" in line]
        assert len(lines) == 1, game.stdout
        return lines[0]

    clean = {k: v for k, v in os.environ.items() if k not in PLAYER_BLAS_THREADS}
    assert blas_line(clean).endswith("OPENBLAS_NUM_THREADS=1, MKL_NUM_THREADS=1")
    told = {**clean, "OPENBLAS_NUM_THREADS": "2"}
    assert blas_line(told).endswith("OPENBLAS_NUM_THREADS=2, MKL_NUM_THREADS=1")


def test_log_to_stdout_with_profile_breakdown() -> None:
    result = _player("--scene", "Stress", "--max-steps", "20", "--profile", "-logFile", "-")
    assert result.returncode == 0
    assert "Quitting: reached --max-steps 20" in result.stdout
    assert "profile:   observe" in result.stdout


def test_num_agents_and_options_shape_the_scene() -> None:
    result = _player(
        "--scene", "Stress", "--num-agents", "6", "--option", "teams=2", "--max-steps", "5",
    )  # fmt: skip
    assert result.returncode == 0
    assert "Scene Stress: 6 agents in 3 areas" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--scene", "Nope"],
            f"unknown scene 'Nope'; available scenes: {', '.join(scene_names())} "
            "(or give package.module:ClassName)",
        ),
        (["--scene", "Stress", "--option", "bogus=1"], "scene Stress has no option 'bogus'"),
        (["--scene", "Stress", "--option", "obs_size"], "expected name=value"),
        (["--scene", "Stress", "--option", "obs_size=x"], "obs_size='x': expected an integer"),
        (["--scene", "3DBall", "--num-agents", "0"], "must be a positive multiple of 1"),
        (["--scene", "Stress", "--option", "visual_shape=3x4", "--option", "visual=png"],
         "expected CxHxW"),
    ],
)  # fmt: skip
def test_configuration_errors_explain_the_fix(args: list[str], message: str) -> None:
    result = _player(*args)
    assert result.returncode == 2
    assert message in result.stdout + result.stderr


def test_missing_scene_lists_the_scenes() -> None:
    result = _player("--max-steps", "1")
    assert result.returncode == 2
    assert f"--scene is required; scenes: {', '.join(scene_names())}\n" in result.stderr


def test_built_executable_runs_from_any_directory(tmp_path: Path) -> None:
    executable = build_executable(
        "Stress", tmp_path / "build", name="Stress2", extra_args=["--num-agents", "2"]
    )
    assert executable.name == "Stress2.x86_64"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [str(executable), "--max-steps", "10"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=50,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert "Scene Stress: 2 agents" in result.stdout


def test_build_refuses_paths_mlagents_would_mangle(tmp_path: Path) -> None:
    with pytest.raises(PlayerError, match="strips from paths"):
        build_executable("3DBall", tmp_path / "my.apps")
    with pytest.raises(PlayerError, match="unknown scene"):
        build_executable("Nope", tmp_path)


def test_build_command_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "unity_gym.player.build", "--scene", "Basic", "--output",
         str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=50,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == tmp_path / "Basic.x86_64"
    assert (tmp_path / "Basic.x86_64").stat().st_mode & 0o111
