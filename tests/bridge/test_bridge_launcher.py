"""Executable discovery, player arguments and process-group lifetime (spec §7, §11.12)."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.launcher import (
    PlayerProcess,
    build_player_args,
    describe_returncode,
    find_executable,
    remove_orphaned_output_dirs,
    user_log_file,
)

pytestmark = pytest.mark.timeout(60)
posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
REPO_ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    """True if ``pid`` is a running (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_until(predicate: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


# --------------------------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------------------------


def test_the_given_path_is_tried_as_is_first(tmp_path: Path) -> None:
    game = touch(tmp_path / "Game.sh")
    assert find_executable(game) == game
    assert find_executable("Game.sh", cwd=str(tmp_path)) == game


def test_extensions_inside_directory_names_are_left_alone(tmp_path: Path) -> None:
    # the official discovery deletes ".app"/".exe"/".x86" anywhere, breaking these paths
    game = touch(tmp_path / "my.apps" / "v1.exe.d" / "Game.x86_64")
    assert find_executable(tmp_path / "my.apps" / "v1.exe.d" / "Game", platform="linux") == game
    assert find_executable(str(game), platform="linux") == game


def test_linux_layouts(tmp_path: Path) -> None:
    x86 = touch(tmp_path / "a" / "Game.x86")
    assert find_executable(tmp_path / "a" / "Game", platform="linux") == x86
    assert find_executable(tmp_path / "a" / "Game.x86_64", platform="linux") == x86
    build = touch(tmp_path / "build" / "Tennis.x86_64")
    touch(tmp_path / "build" / "UnityPlayer.so")
    assert find_executable(tmp_path / "build", platform="linux") == build


def test_macos_layout(tmp_path: Path) -> None:
    binary = touch(tmp_path / "Ball.app" / "Contents" / "MacOS" / "Ball")
    assert find_executable(tmp_path / "Ball", platform="darwin") == binary
    assert find_executable(tmp_path / "Ball.app", platform="darwin") == binary
    other = touch(tmp_path / "Renamed.app" / "Contents" / "MacOS" / "Player")
    assert find_executable(tmp_path / "Renamed", platform="darwin") == other


def test_windows_layout(tmp_path: Path) -> None:
    exe = touch(tmp_path / "Ball.exe")
    assert find_executable(tmp_path / "Ball", platform="win32") == exe
    touch(tmp_path / "dir" / "UnityCrashHandler64.exe")
    game = touch(tmp_path / "dir" / "Soccer.exe")
    assert find_executable(tmp_path / "dir", platform="win32") == game


def test_missing_executable_lists_what_was_tried(tmp_path: Path) -> None:
    with pytest.raises(UnityEnvironmentException) as caught:
        find_executable(tmp_path / "Nothing", platform="linux")
    text = str(caught.value)
    assert "Couldn't launch" in text
    assert str(tmp_path / "Nothing.x86_64") in text and str(tmp_path / "Nothing.x86") in text
    with pytest.raises(UnityEnvironmentException, match="file_name is empty"):
        find_executable("  ")


# --------------------------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------------------------


def test_player_arguments_follow_the_official_order(tmp_path: Path) -> None:
    args = build_player_args(
        port=5007, worker_id=2, no_graphics=True, log_folder=tmp_path, additional_args=["-x"]
    )
    assert args == [
        "-nographics",
        "-batchmode",
        "--mlagents-port",
        "5007",
        "-logFile",
        str(tmp_path / "Player-2.log"),
        "-x",
    ]
    assert build_player_args(port=1, worker_id=0, no_graphics=False, log_folder=None) == [
        "--mlagents-port",
        "1",
    ]
    user = ["-LOGFILE", "/tmp/mine.log"]
    assert build_player_args(
        port=1, worker_id=0, no_graphics=False, log_folder=tmp_path, additional_args=user
    ) == ["--mlagents-port", "1", *user]
    assert user_log_file(user) == Path("/tmp/mine.log")
    assert user_log_file(["-logFile", "-"]) is None


def test_return_codes_name_signals() -> None:
    assert describe_returncode(3) == "return code 3"
    assert describe_returncode(-9) == "return code -9 (SIGKILL)"
    assert describe_returncode(-200).startswith("return code -200")


# --------------------------------------------------------------------------------------------
# process lifetime
# --------------------------------------------------------------------------------------------


@posix_only
def test_exit_is_reported_with_code_and_log_tail(tmp_path: Path) -> None:
    game = script(
        tmp_path / "crash.sh",
        """
        i=0
        while [ $i -lt 30 ]; do echo "line $i"; i=$((i+1)); done
        echo "fatal: out of cheese" >&2
        exit 3
        """,
    )
    player = PlayerProcess.launch(game, ["--mlagents-port", "1"], output_dir=tmp_path)
    exited = threading.Event()
    player.on_exit(lambda p: exited.set())
    assert exited.wait(10)
    assert player.returncode == 3
    tail = player.log_tail()
    assert len(tail) == 20 and tail[-1] == "fatal: out of cheese" and tail[0] == "line 11"
    story = player.describe_exit()
    assert "exited with return code 3" in story and "out of cheese" in story
    late: list[int | None] = []
    player.on_exit(lambda p: late.append(p.returncode))  # registered after the exit: runs now
    assert late == [3]
    player.close()
    assert (tmp_path / "Player-0-stdout.log").exists()  # the user's folder is kept


@posix_only
def test_close_terminates_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    game = script(
        tmp_path / "family.sh",
        f"""
        sleep 300 &
        echo $! > {pids}
        sleep 300
        """,
    )
    player = PlayerProcess.launch(game, [])
    assert wait_until(lambda: pids.exists() and pids.read_text().strip())
    grandchild = int(pids.read_text())
    assert alive(player.pid) and alive(grandchild)
    output_dir = player.output_path.parent
    player.close(timeout=0.1)
    assert wait_until(lambda: not alive(player.pid) and not alive(grandchild))
    assert player.returncode == -signal.SIGTERM
    assert not output_dir.exists()  # the temporary capture folder is removed


@posix_only
def test_processes_ignoring_sigterm_are_killed(tmp_path: Path) -> None:
    game = script(tmp_path / "stubborn.sh", "trap '' TERM\nwhile true; do sleep 0.1; done\n")
    player = PlayerProcess.launch(game, [], term_grace=0.3)
    time.sleep(0.2)
    player.close()
    assert player.returncode == -signal.SIGKILL


@posix_only
def test_garbage_collection_stops_the_game(tmp_path: Path) -> None:
    game = script(tmp_path / "sleep.sh", "exec sleep 300\n")
    player = PlayerProcess.launch(game, [])
    pid = player.pid
    del player
    gc.collect()
    assert wait_until(lambda: not alive(pid))


@posix_only
def test_launching_from_a_short_lived_thread_does_not_kill_the_game(tmp_path: Path) -> None:
    game = script(tmp_path / "sleep.sh", "exec sleep 300\n")
    players: list[PlayerProcess] = []
    worker = threading.Thread(target=lambda: players.append(PlayerProcess.launch(game, [])))
    worker.start()
    worker.join()
    time.sleep(0.5)  # a parent-death signal bound to that thread would have fired by now
    assert alive(players[0].pid)
    players[0].close()
    assert not alive(players[0].pid)


@posix_only
def test_permission_problems_say_what_to_do(tmp_path: Path) -> None:
    game = tmp_path / "noexec.x86_64"
    game.write_text("#!/bin/sh\nexit 0\n")
    game.chmod(0o644)
    with pytest.raises(UnityEnvironmentException, match="chmod 755"):
        PlayerProcess.launch(game, [])


_ORPHAN_PARENT = """
import sys, time
sys.path.insert(0, {root!r})
from unity_gym.launcher import PlayerProcess
player = PlayerProcess.launch(
    {game!r}, [], use_watchdog={watchdog}, die_with_parent={die_with_parent}
)
print(player.pid, flush=True)
sys.stdin.readline()
if {exit_normally}:
    sys.exit(0)  # without closing: atexit must clean up
time.sleep(300)
"""


def _run_parent(
    tmp_path: Path,
    *,
    watchdog: bool,
    exit_normally: bool,
    die_with_parent: bool = True,
) -> tuple[int, int]:
    """Run a Python process that launches a game and then exits or is killed.

    The parent's temporary folder (where the game's output folder goes) is ``tmp_path / "tmp"``.

    Returns:
        The parent's and the game's pids.
    """
    game = script(tmp_path / "sleep.sh", "exec sleep 300\n")
    code = _ORPHAN_PARENT.format(
        root=str(REPO_ROOT),
        game=str(game),
        watchdog=watchdog,
        exit_normally=exit_normally,
        die_with_parent=die_with_parent,
    )
    temp_root = tmp_path / "tmp"
    temp_root.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(temp_root)}
    parent = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert parent.stdin is not None and parent.stdout is not None
    game_pid = int(parent.stdout.readline())
    assert alive(game_pid)
    if exit_normally:
        parent.stdin.write("go\n")
        parent.stdin.close()
    else:
        parent.kill()  # no chance to clean up
    parent.wait(30)
    return parent.pid, game_pid


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_a_killed_parent_takes_the_game_with_it(tmp_path: Path) -> None:
    _, game_pid = _run_parent(tmp_path, watchdog=False, exit_normally=False)
    assert wait_until(lambda: not alive(game_pid))


@posix_only
def test_watchdog_fallback_kills_the_game_when_the_parent_dies(tmp_path: Path) -> None:
    _, game_pid = _run_parent(tmp_path, watchdog=True, exit_normally=False)
    assert wait_until(lambda: not alive(game_pid))


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_the_next_launch_removes_the_output_folder_a_killed_parent_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp_root = tmp_path / "tmp"
    _, game_pid = _run_parent(tmp_path, watchdog=False, exit_normally=False)
    assert wait_until(lambda: not alive(game_pid))
    [left] = temp_root.glob("unity_gym_player_*")  # the killed parent could not remove it
    assert (left / "Player-0-stdout.log").exists()
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    player = PlayerProcess.launch(tmp_path / "sleep.sh", [])
    try:
        assert not left.exists()
        assert player.output_path.parent.parent == temp_root
        assert remove_orphaned_output_dirs(temp_root) == []  # a running game's folder stays
        assert player.output_path.exists()
    finally:
        player.close()
    assert not player.output_path.parent.exists()


@posix_only
def test_a_game_outliving_its_parent_keeps_its_output_folder_until_it_exits(
    tmp_path: Path,
) -> None:
    temp_root = tmp_path / "tmp"
    _, game_pid = _run_parent(tmp_path, watchdog=False, exit_normally=False, die_with_parent=False)
    try:
        [folder] = temp_root.glob("unity_gym_player_*")
        time.sleep(0.2)
        assert alive(game_pid)
        assert remove_orphaned_output_dirs(temp_root) == []
        assert folder.exists()
    finally:
        os.killpg(game_pid, signal.SIGKILL)
    assert wait_until(lambda: not alive(game_pid))
    assert remove_orphaned_output_dirs(temp_root) == [folder]
    assert not folder.exists()
    unowned = temp_root / "unity_gym_player_unowned"  # no owners file: not touched
    unowned.mkdir()
    assert remove_orphaned_output_dirs(temp_root) == []
    assert unowned.exists()


@posix_only
def test_interpreter_exit_without_close_stops_the_game(tmp_path: Path) -> None:
    _, game_pid = _run_parent(tmp_path, watchdog=False, exit_normally=True)
    assert not alive(game_pid)  # cleaned up before the parent exited
