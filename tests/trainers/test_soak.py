"""Soak: ``unity-train`` on two games for a long time while games are killed (``-m slow``).

Issue 37 asks for a run that survives faults: ``unity-train`` (PPO, built-in scene 3DBall,
``--num-envs 2``) trains for ``UNITY_GYM_SOAK_MINUTES`` minutes (default 30) while this test
SIGKILLs one of its games, chosen at random, every ``UNITY_GYM_SOAK_KILL_EVERY_S`` seconds
(default 120), and once, half a period in, sends a malformed message (bytes that are no
``UnityMessageProto``) to the gRPC port of a game (the Python side is the gRPC server; a game's
port is the ``--mlagents-port`` on its command line). Then: the run exits 0, every ``*.pt``
checkpoint loads with the project's loader (``weights_only=True``) and the final one holds
``max_steps``, the ONNX model was exported and loads, no process of the run's tree is alive and
every port a game used can be bound again.

The games are paced in real time (``--env-args --realtime`` with ``--time-scale 1`` and
``--target-frame-rate 60``: 3DBall's 50 Academy steps a second, as a Unity build at time scale 1,
each agent deciding every 5th step), so two games of 12 agents make at most
:data:`PACED_STEPS_PER_S` agent steps a second, and ``max_steps`` is the soak's duration times
that rate: the run lasts at least ``UNITY_GYM_SOAK_MINUTES`` on any machine (longer where the
machine cannot keep the pace); the killer keeps going until the run ends. Restart limits are
sized for the schedule: the defaults (mlagents-learn's: 10 restarts per game, 1 per 60 s) stop a
run that crashes more often, which is the intended behaviour there, not what this test is about.

Run it with ``pytest tests/trainers/test_soak.py -m slow -n 0`` (a short soak:
``UNITY_GYM_SOAK_MINUTES=4 UNITY_GYM_SOAK_KILL_EVERY_S=40``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import socket
import time
from pathlib import Path

import grpc
import onnxruntime
import pytest
import yaml
from process_utils import ProcessTree, process_tree, survivors
from trainer_test_support import TrainerProcess, ppo_behavior

from trainers.common.checkpoints.files import load_checkpoint
from unity_gym.communicator import EXCHANGE_METHOD, SERVICE_NAME

MINUTES = float(os.environ.get("UNITY_GYM_SOAK_MINUTES", "30"))
"""Wall-clock length of the soak."""

KILL_EVERY_S = float(os.environ.get("UNITY_GYM_SOAK_KILL_EVERY_S", "120"))
"""Seconds between two games killed."""


AGENTS_PER_GAME = 12
GAMES = 2
PACED_STEPS_PER_S = GAMES * AGENTS_PER_GAME * 50 // 5
"""Agent steps a second of the paced games at most (3DBall: fixed delta time 0.02 s, a decision
every 5 Academy steps)."""
CHECKPOINTS = 6
"""Step checkpoints written over the run (``checkpoint_interval = max_steps / CHECKPOINTS``)."""

GAME_MARK = "unity_gym.player"
"""What a game's command line contains (the built-in scenes' launcher runs this module)."""

MALFORMED = b"\x0a\xff\xff\xff\xff\x0f\x12\x05junk"
"""A ``UnityMessageProto`` field whose length runs past the end: no protobuf parser accepts it."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(int(MINUTES * 60 * 3 + 600)),
    pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the run's games in /proc (Linux)"),
]


def _max_steps() -> int:
    """Agent steps expected in :data:`MINUTES` (a multiple of the checkpoint interval and of one
    step of both games)."""
    per_second = PACED_STEPS_PER_S
    unit = CHECKPOINTS * GAMES * AGENTS_PER_GAME * 100
    return max(unit, round(per_second * MINUTES * 60 / unit) * unit)


def _games(tree: ProcessTree) -> dict[int, int]:
    """pid -> ``--mlagents-port`` of each game in ``tree``."""
    found: dict[int, int] = {}
    for pid, (_, command) in tree.items():
        port = re.search(r"--mlagents-port (\d+)", command)
        if GAME_MARK in command and port is not None:
            found[pid] = int(port.group(1))
    return found


def _send_malformed(port: int) -> str:
    """Call ``Exchange`` on ``port`` with :data:`MALFORMED`; how the server answered."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        exchange = channel.unary_unary(f"/{SERVICE_NAME}/{EXCHANGE_METHOD}")
        try:
            answer = exchange(MALFORMED, timeout=10)
        except grpc.RpcError as error:
            return f"{error.code()}: {error.details()}"  # type: ignore[attr-defined]
        return f"answered {len(answer)} bytes"


def _port_free(port: int) -> bool:
    """True if a server could listen on ``port`` on this machine's loopback addresses now."""
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 here
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
                probe.listen(1)
            except OSError as error:
                if error.errno == 99 and family == socket.AF_INET6:  # ::1 not configured
                    continue
                return False
    return True


def test_training_survives_killed_games_and_a_malformed_message(tmp_path: Path) -> None:
    max_steps = _max_steps()
    interval = max_steps // CHECKPOINTS
    behavior = ppo_behavior(
        max_steps=max_steps,
        time_horizon=100,
        summary_freq=interval,
        checkpoint_interval=interval,
        keep_checkpoints=CHECKPOINTS + 1,
        hyperparameters={"batch_size": 240, "buffer_size": 2400},
        network_settings={"hidden_units": 32},
    )
    config = tmp_path / "soak.yaml"
    config.write_text(yaml.safe_dump({"behaviors": {"3DBall": behavior}}), encoding="utf-8")
    results = tmp_path / "results"
    kills_planned = 2 * int(MINUTES * 60 // KILL_EVERY_S) + 2  # the run may take longer
    args = [str(config), "--scene", "3DBall", "--num-envs", str(GAMES), "--run-id", "soak",
            "--results-dir", str(results), "--seed", "11", "--no-graphics", "--time-scale", "1",
            "--target-frame-rate", "60",
            "--max-lifetime-restarts", str(kills_planned + 1),
            "--restarts-rate-limit-n", "1",
            "--restarts-rate-limit-period-s", str(max(1, int(KILL_EVERY_S // 2))),
            "--env-args", "--realtime"]  # fmt: skip
    rng = random.Random(37)
    trainer = TrainerProcess(args, tmp_path)
    seen: ProcessTree = {}
    ports: set[int] = set()
    kills: list[tuple[float, int, int]] = []
    malformed: str | None = None
    started = time.monotonic()
    end = started + MINUTES * 60 * 3  # a slow machine: kill on until the run ends
    next_kill = started + KILL_EVERY_S
    malformed_at = started + KILL_EVERY_S / 2
    try:
        trainer.wait_for("Training 3DBall", timeout=180)
        while trainer.process.poll() is None and time.monotonic() < end:
            tree = process_tree(trainer.process.pid)
            seen.update(tree)
            games = _games(tree)
            ports.update(games.values())
            now = time.monotonic()
            if malformed is None and now >= malformed_at and games:
                malformed = _send_malformed(rng.choice(sorted(games.values())))
            if now >= next_kill and games:
                victim = rng.choice(sorted(games))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
                kills.append((now - started, victim, games[victim]))
                next_kill = now + KILL_EVERY_S
            time.sleep(1.0)
        code, output = trainer.finish(timeout=MINUTES * 60 * 2 + 300)
    finally:
        trainer.stop()
    elapsed = time.monotonic() - started
    story = (
        f"after {elapsed:.0f} s, {len(kills)} kill(s) (at s, pid, port): {kills}; malformed "
        f"message: {malformed}\n--- unity-train output (tail) ---\n{output[-6000:]}"
    )
    print(story.split("\n---", 1)[0])  # shown by pytest -rA: what the soak did
    assert code == 0, f"unity-train exited with {code} {story}"
    assert kills, f"no game was killed: the run ended too early {story}"
    assert malformed is not None, f"the malformed message was never sent {story}"

    run = results / "soak"
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert status["3DBall"]["final_checkpoint"]["steps"] == max_steps, story
    checkpoints = sorted((run / "3DBall").glob("*.pt"))
    assert len(checkpoints) >= 2, f"checkpoints: {checkpoints} {story}"
    for path in checkpoints:
        state = load_checkpoint(path)  # weights_only=True; raises ValueError if damaged
        assert isinstance(state["step"], int), path
    assert load_checkpoint(run / "3DBall" / "checkpoint.pt")["step"] == max_steps
    onnxruntime.InferenceSession(str(run / "3DBall.onnx"))
    assert not list(run.rglob("*.tmp")), "a half-written file was left"

    deadline = time.monotonic() + 15.0
    alive = survivors(seen)
    while alive and time.monotonic() < deadline:
        time.sleep(0.5)
        alive = survivors(seen)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not alive, "processes of the run left behind:\n" + "\n".join(
        f"  {pid}: {command[:160]}" for pid, (_, command) in alive.items()
    )
    taken = sorted(port for port in ports if not _port_free(port))
    assert not taken, f"ports the games used are still taken: {taken} (all: {sorted(ports)})"
