"""Throughput of ``unity_gym.UnityEnvironment`` versus the official one, on the same player scene.

One run measures, against the headless player's 3DBall (12 agents, fixed seed):

1. **Bridge throughput**: agent-steps per second of ``step()`` loops (warm-up, then ``--steps``
   timed calls with random actions drawn up front) through our ``UnityEnvironment`` and through
   the official ``mlagents_envs`` 1.1.0 (in the reference peer venv), each in a fresh process,
   alternating for ``--rounds`` rounds and keeping each side's best. Goal: ours >= 2.0x.
2. **Per-exchange overhead** against a bare gRPC echo: the player logs how long each exchange
   waited for the trainer (transport plus all trainer-side work); a bare grpcio client/server
   pair on loopback exchanges pre-serialized bytes of the same sizes as one 3DBall step. Goal:
   ours <= 1.3x the echo.
3. **The player's share**: its own compute per exchange cycle, from its profile line, next to
   the wall time per ``step()``, to show whether the player is the bottleneck.
4. **``@timed`` overhead** next to ``mlagents_envs.timers`` (``benchmarks/timers_overhead.py``).

Usage::

    python benchmarks/bridge_throughput.py [--steps 3000] [--warmup 200] [--rounds 2]
        [--echo-calls 5000] [--profile-ours] [--json]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.peer_runner import (  # noqa: E402
    free_port,
    peer_process_environment,
    run_python_snippet,
)
from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv  # noqa: E402
from benchmarks.timers_overhead import measure as measure_timers  # noqa: E402
from unity_gym.communicator import Communicator, encode_message  # noqa: E402
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto  # noqa: E402

__all__ = [
    "BridgeResult",
    "PlayerProfile",
    "main",
    "measure_bridge",
    "measure_echo",
    "measure_relay",
    "parse_player_profile",
    "sample_messages",
]

BEHAVIOR = "3DBall?team=0"
AGENTS = 12
SEED = 7
ACTION_SEED = 2024
EXCHANGE_PATH = "/communicator_objects.UnityToExternalProto/Exchange"

# Imports for each side; both then run the same MEASURE code.
_OFFICIAL_IMPORTS = """
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.base_env import ActionTuple
"""
_OURS_IMPORTS = """
from unity_gym.environment import UnityEnvironment
from unity_gym.base_env import ActionTuple
"""
_MEASURE = """
import json, sys, time
import numpy as np

ARGS = json.loads(sys.argv[1])

def emit(obj):
    print("RESULT:" + json.dumps(obj), flush=True)

actions = np.load(ARGS["actions"], allow_pickle=False)
env = UnityEnvironment(
    file_name=ARGS["file_name"], worker_id=0, base_port=ARGS["port"], seed=ARGS["seed"],
    no_graphics=True, timeout_wait=60, log_folder=ARGS["log_folder"],
)
name = ARGS["behavior"]

def play(offset, count):
    agent_steps = 0
    for i in range(count):
        decision, _ = env.get_steps(name)
        n = len(decision)
        agent_steps += n
        env.set_actions(name, ActionTuple(continuous=actions[offset + i, :n]))
        env.step()
    return agent_steps

env.reset()
play(0, ARGS["warmup"])
start = time.perf_counter()
agent_steps = play(ARGS["warmup"], ARGS["steps"])
elapsed = time.perf_counter() - start
process = env._process
env.close()
code = process.wait(timeout=30) if process is not None else None
emit({"agent_steps": agent_steps, "elapsed": elapsed, "returncode": code})
"""

# A bare gRPC client (standing in for the game): ``calls`` timed unary calls sending the bytes of
# ``request_file`` (after ``warmup`` untimed ones); checks the first timed reply's size.
_CLIENT = """
import json, sys, time
import grpc

ARGS = json.loads(sys.argv[1])
channel = grpc.insecure_channel(
    f"localhost:{ARGS['port']}",
    options=[("grpc.enable_http_proxy", 0), ("grpc.max_receive_message_length", -1)],
)
call = channel.unary_unary(ARGS["path"])
with open(ARGS["request_file"], "rb") as f:
    payload = f.read()
for _ in range(ARGS["warmup"]):
    call(payload, wait_for_ready=True)
start = time.perf_counter()
first = call(payload)
for _ in range(ARGS["calls"] - 1):
    call(payload)
elapsed = time.perf_counter() - start
channel.close()
assert len(first) == ARGS["reply_size"], (len(first), ARGS["reply_size"])
print("RESULT:" + json.dumps({"seconds_per_call": elapsed / ARGS["calls"]}), flush=True)
"""

_PROFILE_LINE = re.compile(
    r"profile: (?P<steps>\d+) Academy steps in (?P<wall>[\d.]+) s; player time "
    r"(?P<own_step>[\d.]+) us/step; (?P<exchanges>\d+) exchanges, player time "
    r"(?P<own_exchange>[\d.]+) us/exchange, waiting for the trainer (?P<wait>[\d.]+) ms/exchange"
)


@dataclass(frozen=True)
class PlayerProfile:
    """The player's exit profile line (times per Academy step and per exchange)."""

    academy_steps: int
    exchanges: int
    own_us_per_academy_step: float
    own_us_per_exchange: float
    wait_us_per_exchange: float

    @property
    def own_us_per_cycle(self) -> float:
        """Player compute between two exchanges (all Academy steps of one ``step()``)."""
        return self.own_us_per_academy_step * self.academy_steps / max(1, self.exchanges)


@dataclass(frozen=True)
class BridgeResult:
    """One timed loop of one implementation."""

    implementation: str
    agent_steps: int
    seconds: float
    steps: int
    player: PlayerProfile

    @property
    def agent_steps_per_second(self) -> float:
        """Agent decisions handled per second."""
        return self.agent_steps / self.seconds

    @property
    def us_per_step(self) -> float:
        """Wall time of one ``step()`` cycle (get_steps, set_actions, step)."""
        return self.seconds / self.steps * 1e6


def parse_player_profile(log_text: str) -> PlayerProfile:
    """The last ``profile:`` summary of a player log.

    Raises:
        ValueError: if the log has no profile line (the player did not exit normally).
    """
    matches = list(_PROFILE_LINE.finditer(log_text))
    if not matches:
        raise ValueError("the player log has no 'profile:' line; did the player exit normally?")
    m = matches[-1]
    return PlayerProfile(
        academy_steps=int(m["steps"]),
        exchanges=int(m["exchanges"]),
        own_us_per_academy_step=float(m["own_step"]),
        own_us_per_exchange=float(m["own_exchange"]),
        wait_us_per_exchange=float(m["wait"]) * 1e3,
    )


def _build_3dball(directory: Path) -> Path:
    from unity_gym.player.build import build_executable

    return build_executable("3DBall", directory).with_suffix("")


def measure_bridge(
    implementation: str,
    python: Path | str,
    build: Path,
    actions: Path,
    *,
    steps: int,
    warmup: int,
    workdir: Path,
) -> BridgeResult:
    """Time ``steps`` ``step()`` cycles of ``implementation`` (``"ours"`` or ``"official"``)."""
    logs = Path(tempfile.mkdtemp(prefix=f"{implementation}-", dir=workdir))
    args = {
        "file_name": str(build),
        "port": free_port(),
        "seed": SEED,
        "log_folder": str(logs),
        "actions": str(actions),
        "behavior": BEHAVIOR,
        "steps": steps,
        "warmup": warmup,
    }
    if implementation == "official":
        source, env, cwd = _OFFICIAL_IMPORTS + _MEASURE, peer_process_environment(), workdir
    else:
        source = _OURS_IMPORTS + _MEASURE
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        cwd = REPO_ROOT
    result = run_python_snippet(python, source, args, cwd=cwd, timeout=900, env=env)
    if result["returncode"] != 0:
        raise RuntimeError(f"{implementation}: the player exited with {result['returncode']}")
    profile = parse_player_profile((logs / "Player-0.log").read_text())
    return BridgeResult(implementation, result["agent_steps"], result["elapsed"], steps, profile)


def sample_messages(build: Path) -> tuple[bytes, UnityInputProto]:
    """One real 3DBall step: the game's serialized message and Python's answer (12 actions).

    Captured from an exchange with the player through our communicator.
    """
    from unity_gym.base_env import ActionTuple
    from unity_gym.decoding import encode_reset_input, encode_step_input
    from unity_gym.environment import UnityEnvironment
    from unity_gym.protocol.communicator_objects.header_pb2 import HeaderProto
    from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
    from unity_gym.protocol.communicator_objects.unity_rl_initialization_input_pb2 import (
        UnityRLInitializationInputProto,
    )

    communicator = Communicator(0, start=False, timeout_wait=60)
    player = subprocess.Popen(
        [f"{build}.x86_64", "--mlagents-port", str(communicator.port), "-logFile", os.devnull],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        communicator.start()
        init = UnityRLInitializationInputProto(
            seed=SEED,
            communication_version=UnityEnvironment.API_VERSION,
            package_version=UnityEnvironment.PACKAGE_VERSION,
        )
        init.capabilities.baseRLCapabilities = True
        communicator.initialize(UnityInputProto(rl_initialization_input=init))
        communicator.exchange(UnityInputProto(rl_input=encode_reset_input()))
        actions = {BEHAVIOR: ActionTuple(continuous=np.full((AGENTS, 2), 0.25, np.float32))}
        step_input = UnityInputProto(rl_input=encode_step_input(actions))
        output = communicator.exchange(step_input)
        game_message = UnityMessageProto(header=HeaderProto(status=200), unity_output=output)
        return game_message.SerializeToString(), step_input
    finally:
        communicator.close()
        player.wait(timeout=30)


def _run_client(port: int, request: bytes, reply_size: int, calls: int, workdir: Path) -> float:
    request_file = workdir / f"request-{port}.bin"
    request_file.write_bytes(request)
    result = run_python_snippet(
        sys.executable,
        _CLIENT,
        {
            "port": port,
            "path": EXCHANGE_PATH,
            "request_file": str(request_file),
            "reply_size": reply_size,
            "calls": calls,
            "warmup": min(500, calls),
        },
        cwd=REPO_ROOT,
        timeout=600,
    )
    return float(result["seconds_per_call"])


def measure_echo(request: bytes, reply: bytes, calls: int, workdir: Path) -> float:
    """Seconds per round trip of a bare grpcio echo on loopback.

    The server (this process) answers every call with the pre-serialized ``reply``; the client
    (a separate process, like the game) sends ``request``.
    """

    def exchange(message: bytes, context: grpc.ServicerContext) -> bytes:
        return reply

    service, method = EXCHANGE_PATH.strip("/").split("/")
    handler = grpc.method_handlers_generic_handler(
        service,
        {
            method: grpc.unary_unary_rpc_method_handler(
                exchange, request_deserializer=None, response_serializer=None
            )
        },
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=4), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        return _run_client(port, request, len(reply), calls, workdir)
    finally:
        server.stop(None).wait()


def measure_relay(request: bytes, answer: UnityInputProto, calls: int, workdir: Path) -> float:
    """Seconds per round trip through our communicator, seen by a bare client sending
    ``request``: the relay to the main thread, parsing the game's message and serializing
    ``answer`` each time (no numpy decoding, no user code)."""
    communicator = Communicator(0, timeout_wait=60)
    warmup = min(500, calls)
    seconds: list[float] = []
    client = threading.Thread(
        target=lambda: seconds.append(
            _run_client(communicator.port, request, len(encode_message(answer)), calls, workdir)
        )
    )
    client.start()
    try:
        communicator.initialize(answer)  # the client's first two calls
        for _ in range(warmup + calls - 2):
            communicator.exchange(answer)
    finally:
        communicator.close()
        client.join()
    return seconds[0]


def profile_ours(build: Path, actions: Path, steps: int, top: int = 25) -> str:
    """cProfile of our side of ``steps`` ``step()`` cycles (in this process); the top entries."""
    from unity_gym.base_env import ActionTuple
    from unity_gym.environment import UnityEnvironment

    table = np.load(actions, allow_pickle=False)
    with UnityEnvironment(str(build), seed=SEED, no_graphics=True, timeout_wait=60) as env:
        env.reset()
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(steps):
            n = len(env.get_steps(BEHAVIOR)[0])
            env.set_actions(BEHAVIOR, ActionTuple(continuous=table[i, :n]))
            env.step()
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main(argv: list[str] | None = None) -> int:
    """Run every measurement and print the figures (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="timed step() calls per run")
    parser.add_argument("--warmup", type=int, default=200, help="untimed step() calls first")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs; best kept")
    parser.add_argument("--echo-calls", type=int, default=5000, help="calls of the gRPC echo")
    parser.add_argument("--timer-calls", type=int, default=100_000, help="calls per timer round")
    parser.add_argument("--profile-ours", action="store_true", help="also cProfile our side")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.steps <= 0 or args.warmup < 0 or args.rounds <= 0:
        parser.error("--steps and --rounds must be positive and --warmup non-negative")

    try:
        peer: Path | None = ensure_peer_venv()
    except PeerUnavailableError as error:
        print(f"official side not measured (reference peer unavailable): {error}")
        peer = None

    with tempfile.TemporaryDirectory(prefix="bridge-throughput-") as tmp:
        workdir = Path(tmp)
        build = _build_3dball(workdir / "build")
        actions = workdir / "actions.npy"
        rng = np.random.default_rng(ACTION_SEED)
        total = args.warmup + args.steps
        np.save(actions, rng.uniform(-1, 1, (total, AGENTS, 2)).astype(np.float32))

        best: dict[str, BridgeResult] = {}
        for _ in range(args.rounds):
            sides = [("ours", sys.executable)] + ([("official", peer)] if peer else [])
            for name, python in sides:
                result = measure_bridge(
                    name,
                    python,
                    build,
                    actions,
                    steps=args.steps,
                    warmup=args.warmup,
                    workdir=workdir,
                )
                previous = best.get(name)
                if previous is None or result.agent_steps_per_second > (
                    previous.agent_steps_per_second
                ):
                    best[name] = result
        game_message, answer = sample_messages(build)
        answer_bytes = encode_message(answer)
        echo = measure_echo(game_message, answer_bytes, args.echo_calls, workdir)
        relay = measure_relay(game_message, answer, args.echo_calls, workdir)
        game_bytes, python_bytes = len(game_message), len(answer_bytes)
        profile_text = profile_ours(build, actions, args.steps) if args.profile_ours else ""

    timers_ours = measure_timers(sys.executable, "unity_gym.timers", args.timer_calls, 7)
    timers_official = (
        measure_timers(peer, "mlagents_envs.timers", args.timer_calls, 7) if peer else None
    )

    report = _report(best, game_bytes, python_bytes, echo, relay, timers_ours, timers_official)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report)
        if profile_text:
            print("\ncProfile of our side (sorted by own time):")
            print(profile_text)
    return 0


def _report(
    best: dict[str, BridgeResult],
    game_bytes: int,
    python_bytes: int,
    echo_seconds: float,
    relay_seconds: float,
    timers_ours: dict[str, float],
    timers_official: dict[str, float] | None,
) -> dict[str, Any]:
    sides: dict[str, Any] = {}
    for name, result in best.items():
        player = result.player
        sides[name] = {
            "agent_steps_per_second": result.agent_steps_per_second,
            "us_per_step": result.us_per_step,
            "player_own_us_per_step_cycle": player.own_us_per_cycle,
            "player_share": player.own_us_per_cycle / result.us_per_step,
            "trainer_side_us_per_exchange": player.wait_us_per_exchange,
            "exchange_vs_echo": _ratio(player.wait_us_per_exchange, echo_seconds * 1e6),
            "player_profile": asdict(player),
        }
    report: dict[str, Any] = {
        "scene": f"3DBall, {AGENTS} agents, seed {SEED}",
        "sides": sides,
        "message_bytes": {"game_to_python": game_bytes, "python_to_game": python_bytes},
        "echo_us_per_round_trip": echo_seconds * 1e6,
        "relay_us_per_round_trip": relay_seconds * 1e6,
        "relay_vs_echo": _ratio(relay_seconds, echo_seconds),
        "timers_us": {
            "ours": {k: (timers_ours[k] - timers_ours["plain"]) * 1e6 for k in ("timed", "block")}
        },
    }
    if timers_official is not None:
        report["timers_us"]["official"] = {
            k: (timers_official[k] - timers_official["plain"]) * 1e6 for k in ("timed", "block")
        }
    if "ours" in sides and "official" in sides:
        report["throughput_ratio"] = _ratio(
            sides["ours"]["agent_steps_per_second"], sides["official"]["agent_steps_per_second"]
        )
    return report


def _print_report(report: dict[str, Any]) -> None:
    sides = report["sides"]
    print(f"bridge throughput on {report['scene']} (best of the rounds)")
    print(
        f"{'':10s} {'agent-steps/s':>14s} {'us/step()':>10s} {'player us':>10s} "
        f"{'player share':>13s} {'trainer us/exch':>16s} {'vs echo':>8s}"
    )
    for name, side in sides.items():
        print(
            f"{name:10s} {side['agent_steps_per_second']:14.0f} {side['us_per_step']:10.1f} "
            f"{side['player_own_us_per_step_cycle']:10.1f} {side['player_share']:12.0%} "
            f"{side['trainer_side_us_per_exchange']:16.1f} {side['exchange_vs_echo']:7.2f}x"
        )
    if "throughput_ratio" in report:
        ratio = report["throughput_ratio"]
        print(f"throughput ours/official: {ratio:.2f}x (goal >= 2.0x)")
    sizes = report["message_bytes"]
    print(
        f"bare grpcio echo ({sizes['game_to_python']} B up, {sizes['python_to_game']} B down): "
        f"{report['echo_us_per_round_trip']:.1f} us/round trip"
    )
    print(
        f"our communicator relaying the same messages (parse + serialize, no decoding): "
        f"{report['relay_us_per_round_trip']:.1f} us/round trip = {report['relay_vs_echo']:.2f}x "
        "the echo (goal <= 1.3x)"
    )
    if "ours" in sides:
        print(
            f"our full trainer side per exchange (the player's wait: relay, decoding, user loop): "
            f"{sides['ours']['exchange_vs_echo']:.2f}x the echo"
        )
    timers = report["timers_us"]
    line = f"@timed overhead: ours {timers['ours']['timed']:.3f} us/call"
    if "official" in timers:
        line += f", mlagents_envs {timers['official']['timed']:.3f} us/call"
    print(line)
    print(
        "player share = the player's own compute per step() cycle (its profile line) divided "
        "by the wall time of one step() cycle"
    )


if __name__ == "__main__":
    sys.exit(main())
