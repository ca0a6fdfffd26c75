"""Throughput of games as Ray actors on 1, 2 and 4 local Ray nodes, against worker processes.

All contenders run the same built-in 3DBall games (12 agents each) through
:class:`unity_gym.vector.UnityVectorEnv` with EnvPool-style ``send``/``recv`` (one game per
batch, zero actions), one after the other, in this process:

* ``subprocess``: ``backend="subprocess"`` (one worker process per game, shared memory);
* ``ray-<N>``: ``backend="ray"`` on a Ray cluster of ``N`` local nodes started with Ray's own
  test utilities (``ray.cluster_utils.Cluster``, one raylet per node, all on 127.0.0.1); games
  are spread over the nodes (a custom resource keeps them off the CPU-less head node), and rows
  travel through Ray's object store instead of shared memory.

It also prints what a real cluster would carry: the bytes of one step request and of one reply
per game (pickled, as Ray ships them) and per agent-step, and, with ``--train-steps``, the wall
time and PPO update time of ``unity-train`` on 3DBall with each backend (2 games; Ray with two
local nodes), from the runs' ``timers.json``.

Run from the repository root::

    .venv/bin/python -m benchmarks.ray_scaling --games 4 --seconds 8 --rounds 2 --train-steps 48000
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main", "message_sizes", "ray_nodes", "subprocess_backend"]

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""Keeps Ray on 127.0.0.1 (else it swaps in the machine's outward address)."""
GAME_RESOURCE = "unity_game_slot"


def _async_rate(env: Any, seconds: float) -> float:
    """Agent-steps/s of ``env`` driven with send/recv, one game per batch, zero actions."""
    per_game = env.agents_per_process
    env.batch_size = per_game
    env.reset()
    shape = env.single_action_space.shape
    env.send(np.zeros((env.num_envs, *shape), dtype=np.float32))
    zeros = np.zeros((per_game, *shape), dtype=np.float32)

    def step() -> int:
        *_, info = env.recv()
        env.send(zeros, info["env_id"])
        return per_game

    for _ in range(20 * env.num_processes):
        step()
    done = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += step()
    env.recv()  # let the last requests finish before closing
    return done / elapsed


def subprocess_backend(games: int, seconds: float) -> float:
    """Agent-steps/s with one worker process per game."""
    from unity_gym.vector import UnityVectorEnv

    env = UnityVectorEnv(num_processes=games, scene="3DBall", backend="subprocess")
    try:
        return _async_rate(env, seconds)
    finally:
        env.close()


def ray_nodes(nodes: int) -> Callable[[int, float], float]:
    """A contender: games as Ray actors spread over ``nodes`` local Ray nodes."""

    def contender(games: int, seconds: float) -> float:
        import ray
        from ray.cluster_utils import Cluster

        from unity_gym.vector import UnityVectorEnv

        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "node_ip_address": "127.0.0.1",
                "include_dashboard": False,
            },
        )
        try:
            for _ in range(nodes):
                cluster.add_node(
                    num_cpus=1, resources={GAME_RESOURCE: 64}, node_ip_address="127.0.0.1"
                )
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, log_to_driver=False)
            env = UnityVectorEnv(
                num_processes=games,
                scene="3DBall",
                backend="ray",
                ray_actor_options={"num_cpus": 0, "resources": {GAME_RESOURCE: 1}},
            )
            try:
                used = len(set(env.game_locations))
                rate = _async_rate(env, seconds)
                print(f"    ({games} games on {used} of {nodes} node(s))", flush=True)
                return rate
            finally:
                env.close()
        finally:
            ray.shutdown()
            cluster.shutdown()

    return contender


def message_sizes() -> dict[str, float]:
    """Pickled bytes of a 3DBall step request and reply (rows shipped, as with Ray)."""
    from gymnasium.vector import AutoresetMode

    from unity_gym.registration import GameSettings
    from unity_gym.vector.buffers import BufferLayout
    from unity_gym.vector.game_worker import GameWorker, WorkerConfig
    from unity_gym.vector.messages import RequestKind, WorkerRequest

    config = WorkerConfig(
        index=0,
        settings=GameSettings(scene="3DBall"),
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    worker = GameWorker(config)
    try:
        description = worker.handle(WorkerRequest(RequestKind.START, 1)).description
        assert description is not None
        agents = description.num_agents
        spec = description.behavior_spec.action_spec
        from unity_gym.spaces import ObservationAdapter

        space = ObservationAdapter(description.behavior_spec.observation_specs).space
        layout = BufferLayout.for_spaces(
            agents,
            space,
            with_final_obs=True,
            continuous_size=spec.continuous_size,
            discrete_size=spec.discrete_size,
            mask_size=0,
        )
        worker.handle(WorkerRequest(RequestKind.ATTACH, 2, layout=layout, shared_name=None))
        request = WorkerRequest(
            RequestKind.STEP,
            3,
            continuous=np.zeros((agents, spec.continuous_size), dtype=np.float32),
            discrete=np.zeros((agents, spec.discrete_size), dtype=np.int32),
        )
        reply = worker.handle(request)
        reply.timer_tree = None  # sent every timer_interval_s only
        request_bytes = len(pickle.dumps(request, protocol=5))
        reply_bytes = len(pickle.dumps(reply, protocol=5))
    finally:
        worker.close()
    return {
        "agents": agents,
        "request_bytes": request_bytes,
        "reply_bytes": reply_bytes,
        "bytes_per_agent_step": (request_bytes + reply_bytes) / agents,
    }


def _train(backend: str, steps: int, cluster_address: str | None) -> dict[str, float]:
    """Wall time and PPO update time of a unity-train 3DBall run with ``backend``."""
    import yaml

    with tempfile.TemporaryDirectory() as folder:
        config = yaml.safe_load((REPO / "trainers/configs/3DBall_ppo.yaml").read_text())
        config["behaviors"]["3DBall"]["max_steps"] = steps
        path = Path(folder) / "3DBall.yaml"
        path.write_text(yaml.safe_dump(config))
        command = [
            sys.executable,
            "-m",
            "trainers",
            str(path),
            "--scene",
            "3DBall",
            "--num-envs",
            "2",
            "--seed",
            "1",
            "--backend",
            backend,
            "--results-dir",
            str(Path(folder) / "results"),
            "--run-id",
            "bench",
        ]
        if cluster_address is not None:
            command += ["--ray-address", cluster_address, "--ray-game-cpus", "0"]
        start = time.perf_counter()
        subprocess.run(
            command,
            check=True,
            cwd=folder,
            env={**os.environ, **LOOPBACK, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        tree = json.loads((Path(folder) / "results/bench/run_logs/timers.json").read_text())
    update = _find(tree, "ppo_update")
    return {"wall_s": wall, "update_s": update[0], "updates": update[1]}


def _find(node: dict[str, Any], name: str) -> tuple[float, int]:
    """Total seconds and count of every timer ``name`` in a timers.json tree."""
    total, count = 0.0, 0
    for child_name, child in node.get("children", {}).items():
        if child_name == name:
            total += child["total"]
            count += child["count"]
        else:
            more = _find(child, name)
            total, count = total + more[0], count + more[1]
    return total, count


def _train_on_two_nodes(steps: int) -> dict[str, float]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False},
    )
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        return _train("ray", steps, cluster.address)
    finally:
        cluster.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=4, help="3DBall games (12 agents each)")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per run")
    parser.add_argument("--rounds", type=int, default=2, help="contenders run in turn N times")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--train-steps", type=int, default=0, help="also time unity-train runs of this length"
    )
    args = parser.parse_args(argv)
    os.environ.update(LOOPBACK)  # before Ray is imported: it reads this once
    contenders: dict[str, Callable[[int, float], float]] = {"subprocess": subprocess_backend}
    for nodes in args.nodes:
        contenders[f"ray-{nodes}"] = ray_nodes(nodes)
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for round_index in range(args.rounds):
        print(f"round {round_index + 1}:", flush=True)
        for name, contender in contenders.items():
            rate = contender(args.games, args.seconds)
            rates[name].append(rate)
            print(f"  {name:<11} {args.games} games -> {rate:8.0f} agent-steps/s", flush=True)
    base = statistics.median(rates["subprocess"])
    print("median agent-steps/s (ratio to subprocess):")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"  {name:<11} {median:8.0f}  {median / base:.2f}x")
    sizes = message_sizes()
    print(
        f"per game step of 3DBall ({sizes['agents']:g} agents): request {sizes['request_bytes']:g}"
        f" B, reply {sizes['reply_bytes']:g} B -> {sizes['bytes_per_agent_step']:.0f} B per "
        "agent-step (each way together), one round trip per game per step"
    )
    if args.train_steps:
        local = _train("subprocess", args.train_steps, None)
        remote = _train_on_two_nodes(args.train_steps)
        for name, result in (("subprocess", local), ("ray, 2 nodes", remote)):
            print(
                f"unity-train 3DBall {args.train_steps} steps, 2 games, {name}: "
                f"{result['wall_s']:.1f} s wall, {result['updates']:g} PPO updates taking "
                f"{result['update_s']:.2f} s in all"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
