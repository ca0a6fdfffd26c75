"""Version tolerance against the real player announcing another communication API version.

The player's ``--communication-version`` changes the version it announces in the handshake.
``unity_gym`` accepts a suffixed ``1.5.0-exp`` (same major version), while the official
``mlagents_envs`` 1.1.0 fails on it with a ``ValueError`` from ``StrictVersion`` (spec §3.6).
Both refuse an incompatible major version with ``UnityEnvironmentException``. In every case the
player ends and leaves no process behind. (After that ``ValueError`` the official process cannot
exit by itself: its gRPC handler thread keeps waiting for the game's input.)
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from benchmarks.peer_runner import run_in_peer
from unity_gym.environment import UnityEnvironment
from unity_gym.exceptions import UnityEnvironmentException

pytestmark = [
    pytest.mark.peer,
    pytest.mark.timeout(180),
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks read /proc"),
]

BALL = "3DBall?team=0"


def _pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _eventually(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_ours_accepts_a_suffixed_version_from_the_real_player(
    scene_builds: dict[str, Path], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    env = UnityEnvironment(
        str(scene_builds["3DBall"]),
        no_graphics=True,
        timeout_wait=60,
        log_folder=logs,
        additional_args=["--communication-version", "1.5.0-exp"],
    )
    process = env.process
    assert process is not None
    try:
        env.reset()
        decision, _ = env.get_steps(BALL)
        assert len(decision) == 12
        for _ in range(5):
            env.set_actions(BALL, env.behavior_specs[BALL].action_spec.random_action(12))
            env.step()
        assert env.get_steps(BALL)[0].obs[0].shape == (12, 8)
        assert np.isfinite(env.get_steps(BALL)[0].obs[0]).all()
    finally:
        env.close()
    assert process.returncode == 0
    log = (logs / "Player-0.log").read_text()
    assert "--communication-version 1.5.0-exp" in log
    assert "Connected to trainer" in log


def test_ours_refuses_another_major_version_and_the_player_ends(
    scene_builds: dict[str, Path],
) -> None:
    with pytest.raises(UnityEnvironmentException, match=r"Unity API: '2\.0\.0'") as caught:
        UnityEnvironment(
            str(scene_builds["3DBall"]),
            timeout_wait=60,
            additional_args=["--communication-version", "2.0.0"],
        )
    assert "Python API: 1.5.0" in str(caught.value)
    # the environment was never returned: its player must be gone all the same
    assert _eventually(lambda: not _live_players("--communication-version 2.0.0"))


def _live_players(*needles: str) -> list[int]:
    """Live player processes whose command line contains every needle."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        wanted = "unity_gym.player" in cmdline and all(n in cmdline for n in needles)
        if wanted and _pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


OFFICIAL_HANDSHAKE = """
import os
from pathlib import Path

def players():
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\\0", b" ").decode()
        except OSError:
            continue
        if f"--mlagents-port {ARGS['port']}" in cmdline and "unity_gym.player" in cmdline:
            found.append(int(entry.name))
    return found

try:
    env = open_env("3DBall", extra=["--communication-version", ARGS["version"]])
except Exception as error:
    emit({"error": type(error).__name__, "message": str(error), "players": players(),
          "port": ARGS["port"]})
    # After the ValueError the official server thread waits forever for an input it will never
    # get, which blocks interpreter exit: leave at once, as a killed trainer would.
    sys.stdout.flush()
    os._exit(0)
else:
    env.reset()
    n = len(env.get_steps("3DBall?team=0")[0])
    emit({"error": None, "agents": n, "code": close_env(env), "players": players(),
          "port": ARGS["port"]})
"""


@pytest.mark.parametrize(
    ("version", "error"),
    [
        ("1.5.0", None),
        ("1.5.0-exp", "ValueError"),  # StrictVersion rejects suffixes (spec §3.6)
        ("2.0.0", "UnityEnvironmentException"),
    ],
)
def test_official_reaction_to_the_announced_version(
    version: str,
    error: str | None,
    peer_python: Path,
    scene_builds: dict[str, Path],
    tmp_path: Path,
) -> None:
    result = run_in_peer(
        peer_python,
        OFFICIAL_HANDSHAKE,
        builds=scene_builds,
        cwd=tmp_path,
        extra={"version": version},
    )
    assert result["error"] == error, result
    if error is None:
        assert result["agents"] == 12 and result["code"] == 0
    elif error == "ValueError":
        assert "1.5.0-exp" in result["message"]
    else:
        assert "not compatible" in result["message"]
    # whatever the official side did, the player does not outlive it
    assert _eventually(lambda: not _live_players(f"--mlagents-port {result['port']}"))


def test_the_peer_takes_a_new_port_when_its_chosen_one_was_taken_meanwhile(
    peer_python: Path, scene_builds: dict[str, Path], tmp_path: Path
) -> None:
    """Between choosing a free port and binding it, another program may take it (the suite
    runs many games at once): ``open_env`` then binds a new free port instead of failing with
    ``UnityWorkerInUseException``, and ``ARGS["port"]`` says which."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_in_peer(
            peer_python,
            """
            env = open_env("3DBall")
            env.reset()
            emit({"port": ARGS["port"], "agents": len(env.get_steps("3DBall?team=0")[0]),
                  "code": close_env(env)})
            """,
            builds=scene_builds,
            cwd=tmp_path,
            extra={"port": port},
        )
    assert result["port"] != port and result["agents"] == 12 and result["code"] == 0, result
