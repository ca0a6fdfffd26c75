"""``--record-video``: GIFs and MP4s of the scenes' pictures, written by real player processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]


def _player(
    *args: str, python: tuple[str, ...] = ("-m", "unity_gym.player")
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *python, *args, "-logFile", "-"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=100,
    )


def test_record_video_writes_a_gif_of_the_drawn_frames(tmp_path: Path) -> None:
    target = tmp_path / "ball.gif"
    result = _player(
        "--scene", "3DBall", "--record-video", str(target), "--video-steps", "40",
        "--video-every", "4", "--video-fps", "20", "--video-size", "160x120", "--video-area", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Wrote video" in result.stdout and "10 frames" in result.stdout
    assert "Quitting: recorded the video (10 frames)" in result.stdout
    with Image.open(target) as gif:
        assert gif.format == "GIF"
        assert gif.n_frames == 10
        assert gif.size == (160, 150)  # the picture and the 30-row caption
        durations = []
        for index in range(gif.n_frames):
            gif.seek(index)
            durations.append(gif.info["duration"])
        assert durations == [50] * 10
    assert not [p for p in tmp_path.iterdir() if p.name != "ball.gif"], "a temporary file is left"


def test_record_video_stops_after_the_episodes_asked_for(tmp_path: Path) -> None:
    # Basic's heuristic walks from 10 to the large goal at 17: 7 steps an episode, one frame each.
    target = tmp_path / "basic.gif"
    result = _player("--scene", "Basic", "--record-video", str(target), "--video-episodes", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "14 frames (0.6 s), 14 Academy steps, 2 episodes ended" in result.stdout
    with Image.open(target) as gif:
        assert gif.n_frames == 14
        columns = []
        for index in (5, 6):  # after steps 6 (at 16) and 7 (the goal reached: back at 10)
            gif.seek(index)
            picture = np.asarray(gif.convert("RGB"))[:96].astype(int)
            blue = np.abs(picture - [61, 161, 255]).sum(axis=2) < 40
            columns.append(np.flatnonzero(blue.any(axis=0)).mean())
    # 6 positions of 15.6 pixels (312 pixels between the margins for 20 positions)
    assert columns[0] - columns[1] == pytest.approx(6 * 15.6, abs=1.5)


def test_record_video_writes_an_mp4(tmp_path: Path) -> None:
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    target = tmp_path / "tennis.mp4"
    result = _player(
        "--scene", "Tennis", "--record-video", str(target), "--video-steps", "60",
        "--video-size", "161x91",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "30 frames (1.2 s)" in result.stdout
    assert target.read_bytes()[4:8] == b"ftyp"
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(target))
    assert frames == 30 and seconds == pytest.approx(1.2, abs=0.05)


def test_mp4_without_its_encoder_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['imageio_ffmpeg'] = None; "
        "from unity_gym.player.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    result = _player(
        "--scene", "Basic", "--record-video", str(tmp_path / "x.mp4"), python=("-c", code)
    )
    assert result.returncode == 2
    assert "pip install 'unity-gym[video]'" in result.stdout + result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--record-video", "{tmp}/x.avi"], "name a .gif or .mp4 file"),
        (["--record-video", "{tmp}/missing/x.gif"], "does not exist; create it first"),
        (["--video-steps", "5"], "--video-steps need --record-video PATH"),
        (["--record-video", "{tmp}/x.gif", "--video-size", "big"], "expected WIDTHxHEIGHT"),
        (["--record-video", "{tmp}/x.gif", "--video-fps", "0"], "between 1 and 100"),
        (["--record-video", "{tmp}/x.gif", "--video-area", "1"], "has areas 0 to 0"),
        (
            ["--record-video", "{tmp}/x.gif", "--mlagents-port", "1"],
            "--record-video is for play without a trainer",
        ),
    ],
)
def test_record_video_refuses_what_it_cannot_do(
    args: list[str], message: str, tmp_path: Path
) -> None:
    result = _player("--scene", "Basic", *(a.format(tmp=tmp_path) for a in args))
    assert result.returncode == 2, result.stdout
    assert message in result.stdout + result.stderr
    assert not list(tmp_path.glob("*.gif")) and not list(tmp_path.glob(".*partial*"))
