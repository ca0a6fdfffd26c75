"""The headless player's own compute per Academy step, scene by scene, in one process.

Each built-in scene (``--scenes`` to choose) runs its stock agents for ``--steps`` Academy steps
through the player's real code: :class:`~unity_gym.player.academy.Academy`, the scene, the
hand-written encoding of every report (:class:`~unity_gym.player.wire.OutputBuilder`) and the
framing and decoding of :class:`~unity_gym.player.connection.TrainerConnection`. Only the gRPC call
is left out: the connection's call answers at once with one of a few prepared trainer replies
(random actions for every agent of every behavior), which the player parses as it would a
trainer's. What is timed is therefore what the player computes itself per step, without the
transport and without any wait for a trainer (the figure that ``--profile`` of a player logs as
"player time ... us/step", minus the gRPC client's share).

Printed: microseconds of CPU time per Academy step and per agent-step, and the exchanges (steps
on which an agent reported). ``--cprofile SCENE`` also prints the top entries of a cProfile of
that scene's steps, sorted by own time. numpy's BLAS runs on one thread, as in a game process.

Usage::

    python -m benchmarks.player_compute [--scenes 3DBall Basic ...] [--steps 5000]
        [--warmup 200] [--rounds 3] [--cprofile 3DBall] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# A game process runs numpy's BLAS on one thread (``unity_gym.player_process.PLAYER_BLAS_THREADS``,
# set before numpy is imported; importing ``unity_gym`` here would import numpy first): measured the
# same way here. A value in the environment wins.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
for _variable in BLAS_THREAD_VARIABLES:
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from unity_gym.player.academy import Academy  # noqa: E402
from unity_gym.player.capabilities import Capabilities  # noqa: E402
from unity_gym.player.connection import STATUS_OK, TrainerConnection  # noqa: E402
from unity_gym.player.profiling import StepProfiler  # noqa: E402
from unity_gym.player.runtime import PlayerConfig, create_scene  # noqa: E402
from unity_gym.player.scenes import scene_names  # noqa: E402
from unity_gym.player.side_channels import SideChannelHub, StandardChannels  # noqa: E402
from unity_gym.player.specs import BehaviorSpec  # noqa: E402
from unity_gym.protocol.communicator_objects.agent_action_pb2 import AgentActionProto  # noqa: E402
from unity_gym.protocol.communicator_objects.header_pb2 import HeaderProto  # noqa: E402
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto  # noqa: E402
from unity_gym.protocol.communicator_objects.unity_message_pb2 import (  # noqa: E402
    UnityMessageProto,
)
from unity_gym.protocol.communicator_objects.unity_rl_input_pb2 import (  # noqa: E402
    UnityRLInputProto,
)

__all__ = ["BLAS_THREAD_VARIABLES", "SceneTiming", "main", "prepared_replies", "time_scene"]

#: Scenes timed by default: every built-in one.
DEFAULT_SCENES = tuple(scene_names())
#: Distinct prepared replies the answering call cycles through.
REPLY_VARIANTS = 8


@dataclass(frozen=True)
class SceneTiming:
    """The player's own compute for one scene (the best of the rounds)."""

    scene: str
    agents: int
    steps: int
    exchanges: int
    us_per_step: float

    @property
    def us_per_agent_step(self) -> float:
        """Microseconds per Academy step and agent."""
        return self.us_per_step / self.agents if self.agents else 0.0


def prepared_replies(
    specs: Sequence[BehaviorSpec], agents: dict[str, int], seed: int
) -> list[bytes]:
    """Serialized ``UnityMessageProto`` replies (status 200, command STEP) with random actions
    for ``agents[behavior]`` agents of each behavior: more than any exchange asks for (the
    player reads the first ones it needs)."""
    rng = np.random.default_rng(seed)
    replies = []
    for _ in range(REPLY_VARIANTS):
        rl_input = UnityRLInputProto()  # command STEP (0), the default
        for spec in specs:
            actions = spec.action_spec
            count = agents[spec.full_name]
            continuous = rng.uniform(-1.0, 1.0, size=(count, actions.continuous_size))
            branches = np.asarray(actions.discrete_branches, dtype=np.int64)
            discrete = (rng.random((count, actions.discrete_size)) * branches).astype(np.int64)
            entries = rl_input.agent_actions[spec.full_name].value
            for row in range(count):
                entries.append(
                    AgentActionProto(
                        continuous_actions=continuous[row].tolist(),
                        discrete_actions=discrete[row].tolist(),
                    )
                )
        message = UnityMessageProto(
            header=HeaderProto(status=STATUS_OK),
            unity_input=UnityInputProto(rl_input=rl_input),
        )
        replies.append(message.SerializeToString())
    return replies


def _academy(scene_name: str, seed: int) -> tuple[Academy, StepProfiler]:
    """An Academy of the stock scene whose trainer answers at once from prepared replies."""
    scene = create_scene(PlayerConfig(scene=scene_name))
    channels = StandardChannels.create()
    hub = SideChannelHub(channels.in_registration_order())
    connection = TrainerConnection(1)  # never dialled: the call is replaced below
    specs = list(scene.behaviors())
    profiler = StepProfiler()
    academy = Academy(
        scene,
        channels=channels,
        hub=hub,
        connection=connection,
        trainer=Capabilities(),
        seed=seed,
        profiler=profiler,
    )
    agents = {batch.name: batch.size for batch in academy.batches}
    replies = prepared_replies(specs, agents, seed)
    calls = 0

    def answer(raw: bytes, **_: object) -> bytes:
        nonlocal calls
        calls += 1
        return replies[calls % len(replies)]

    connection._raw_call = answer
    return academy, profiler


def time_scene(scene_name: str, steps: int, warmup: int, rounds: int, seed: int) -> SceneTiming:
    """The best of ``rounds`` timings of ``steps`` Academy steps (after ``warmup`` steps), in
    CPU time of this process: on a machine shared with other jobs, wall time mostly measures
    the waits for a core."""
    best = float("inf")
    exchanges = 0
    agents = 0
    for _ in range(rounds):
        academy, profiler = _academy(scene_name, seed)
        agents = academy.agent_count
        for _ in range(warmup):
            academy.environment_step()
        before = profiler.exchanges
        start = time.process_time()
        for _ in range(steps):
            if not academy.environment_step():
                raise RuntimeError(f"{scene_name}: the player quit: {academy.quit_reason}")
        elapsed = time.process_time() - start
        exchanges = profiler.exchanges - before
        best = min(best, elapsed)
    return SceneTiming(scene_name, agents, steps, exchanges, best / steps * 1e6)


def cprofile_scene(scene_name: str, steps: int, seed: int, top: int) -> str:
    """The top ``top`` entries (by own time) of a cProfile of ``steps`` Academy steps."""
    academy, _ = _academy(scene_name, seed)
    for _ in range(50):
        academy.environment_step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        academy.environment_step()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """Time the chosen scenes and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="+", default=list(DEFAULT_SCENES), metavar="SCENE")
    parser.add_argument("--steps", type=int, default=5000, help="timed Academy steps per round")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="the best round counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cprofile", metavar="SCENE", help="also cProfile this scene's steps")
    parser.add_argument("--top", type=int, default=25, help="cProfile entries shown")
    args = parser.parse_args(argv)
    print(f"{'scene':18s} {'agents':>6s} {'exchanges':>9s} {'us/step':>9s} {'us/agent-step':>13s}")
    for name in args.scenes:
        timing = time_scene(name, args.steps, args.warmup, args.rounds, args.seed)
        print(
            f"{timing.scene:18s} {timing.agents:6d} {timing.exchanges:9d} "
            f"{timing.us_per_step:9.1f} {timing.us_per_agent_step:13.2f}",
            flush=True,
        )
    if args.cprofile:
        print(f"\ncProfile of {args.steps} Academy steps of {args.cprofile} (by own time):")
        print(cprofile_scene(args.cprofile, args.steps, args.seed, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
