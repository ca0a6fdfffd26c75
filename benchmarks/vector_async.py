"""Agent-steps/s of UnityVectorEnv against Gymnasium's AsyncVectorEnv and SB3's SubprocVecEnv.

All contenders run the same ``Stress`` scene with the same number of game processes, one agent
each, and a simulated compute time per Academy step (``step_time``), once without jitter and once
with ``jitter`` (each step takes ``step_time * U(1 - jitter, 1 + jitter)``):

* ``unity-async``: :class:`unity_gym.vector.UnityVectorEnv`, EnvPool-style ``send``/``recv``
  with ``batch_size`` = one game, so a slow game never holds the others back;
* ``unity-async-threads``: the same with ``backend="inprocess"``: the workers are threads of
  this process, one hop (a pipe and a process) fewer per exchange, all of them under one GIL;
* ``unity-lockstep``: the same env through ``step()`` (waits for every game);
* ``gym-async``: ``gymnasium.vector.AsyncVectorEnv`` over ``gymnasium.make("Unity-v0",
  scene="Stress", ...)`` (the single-agent env, one game each);
* ``sb3-subproc``: ``stable_baselines3``'s ``SubprocVecEnv`` over the same single-agent env.

Every game gets its own seed (``0 + i``), hence its own sequence of step times.

Run from the repository root::

    .venv/bin/python -m benchmarks.vector_async --processes 32 --step-time 0.1 --seconds 8
    .venv/bin/python -m benchmarks.vector_async --processes 1 2 4 8 14 16 --step-time 0 \
        --jitter 0 --seconds 5    # a scaling table (a machine with 16 cores or more)

Prints one line per contender and setting, then the ratios of ``unity-async`` to the others
(goals: >= 1.8x under jitter, >= 1.0x without). ``--cpu-split`` (Linux) adds, per contender, the
CPU that the main process, the players and the workers (or the peers' subprocesses) spent per
agent-step over the measured seconds, read from ``/proc``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["main", "measure", "scaling_table"]

Contender = Callable[[int, dict[str, Any], float], float]


def _single_agent_env(scene_options: dict[str, Any]) -> Any:
    import gymnasium as gym

    return gym.make("unity_gym:Unity-v0", scene="Stress", scene_options=scene_options)


#: ``--cpu-split``: print where each contender's CPU went (set by :func:`main`).
CPU_SPLIT = False


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), [] if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads); 0 when it is gone."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def _descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, as ``{pid: "player" | "worker"}`` (a player runs
    ``unity_gym.player``; the rest are the workers or subprocesses that hold the games)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        fields = _stat_fields(int(entry)) if entry.isdigit() else []
        if fields:
            parents.setdefault(int(fields[1]), []).append(int(entry))
    kinds: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            with contextlib.suppress(OSError):
                with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                    command = cmdline.read()
                kinds[child] = "player" if b"unity_gym.player" in command else "worker"
            todo.append(child)
    return kinds


def _print_cpu_split(
    before: dict[int, float], kinds: dict[int, str], steps: int, wall: float
) -> None:
    """``--cpu-split``: CPU per agent-step of this process, the players and the workers."""
    me = os.getpid()
    used = {pid: _process_cpu_seconds(pid) - start for pid, start in before.items()}
    groups = {"main process": [used[me]]}
    for pid, kind in kinds.items():
        groups.setdefault(f"{kind}s", []).append(used[pid])
    parts = [
        f"{name} ({len(values)}) {sum(values) / steps * 1e6:.0f} us"
        + (f" = {values[0] / wall:.2f} of a core" if name == "main process" else "")
        for name, values in groups.items()
    ]
    total = sum(sum(values) for values in groups.values()) / steps * 1e6
    print(f"    CPU per agent-step: {'; '.join(parts)}; total {total:.0f} us", flush=True)


def _timed_loop(step: Callable[[], int], seconds: float, warmup: int = 10) -> float:
    """Agent-steps per second of ``step`` (which returns the agent-steps it did); with
    :data:`CPU_SPLIT`, also prints the CPU that each kind of process spent per agent-step."""
    for _ in range(warmup):
        step()
    kinds = _descendants(os.getpid()) if CPU_SPLIT else {}
    before = {pid: _process_cpu_seconds(pid) for pid in [os.getpid(), *kinds]}
    done = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += step()
    if CPU_SPLIT:
        _print_cpu_split(before, kinds, done, elapsed)
    return done / elapsed


def unity_async(
    processes: int, scene_options: dict[str, Any], seconds: float, backend: str = "subprocess"
) -> float:
    """UnityVectorEnv with send/recv, one game per batch, workers on ``backend``."""
    from unity_gym.vector import UnityVectorEnv

    env = UnityVectorEnv(
        processes,
        num_processes=processes,
        scene="Stress",
        scene_options=scene_options,
        batch_size=1,
        backend=backend,
    )
    try:
        env.reset()
        env.send(np.zeros((processes, 2), dtype=np.float32))
        zeros = np.zeros((1, 2), dtype=np.float32)

        def step() -> int:
            *_, info = env.recv()
            env.send(zeros, info["env_id"])
            return 1

        return _timed_loop(step, seconds, warmup=10 * processes)
    finally:
        env.close()


def unity_lockstep(processes: int, scene_options: dict[str, Any], seconds: float) -> float:
    """UnityVectorEnv through ``step()``."""
    from unity_gym.vector import UnityVectorEnv

    env = UnityVectorEnv(
        processes, num_processes=processes, scene="Stress", scene_options=scene_options
    )
    try:
        env.reset()
        zeros = np.zeros((processes, 2), dtype=np.float32)

        def step() -> int:
            env.step(zeros)
            return processes

        return _timed_loop(step, seconds)
    finally:
        env.close()


def gym_async(processes: int, scene_options: dict[str, Any], seconds: float) -> float:
    """Gymnasium's AsyncVectorEnv over the single-agent env."""
    from gymnasium.vector import AsyncVectorEnv

    make = functools.partial(_single_agent_env, scene_options)
    env = AsyncVectorEnv([make] * processes)
    try:
        env.reset(seed=0)
        zeros = np.zeros((processes, 2), dtype=np.float32)

        def step() -> int:
            env.step(zeros)
            return processes

        return _timed_loop(step, seconds)
    finally:
        env.close()


def sb3_subproc(processes: int, scene_options: dict[str, Any], seconds: float) -> float:
    """Stable-Baselines3's SubprocVecEnv over the single-agent env."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    make = functools.partial(_single_agent_env, scene_options)
    env = SubprocVecEnv([make] * processes)
    try:
        env.seed(0)  # a distinct seed per game, as the other contenders get (distinct jitter)
        env.reset()
        zeros = np.zeros((processes, 2), dtype=np.float32)

        def step() -> int:
            env.step(zeros)
            return processes

        return _timed_loop(step, seconds)
    finally:
        env.close()


CONTENDERS: dict[str, Contender] = {
    "unity-async": unity_async,
    "unity-async-threads": functools.partial(unity_async, backend="inprocess"),
    "unity-lockstep": unity_lockstep,
    "gym-async": gym_async,
    "sb3-subproc": sb3_subproc,
}


def measure(
    processes: int, step_time: float, jitter: float, seconds: float, names: Sequence[str]
) -> dict[str, float]:
    """Agent-steps per second of each contender in ``names`` for one setting."""
    options = {"step_time": step_time, "jitter": jitter}
    results = {}
    for name in names:
        rate = CONTENDERS[name](processes, options, seconds)
        results[name] = rate
        print(
            f"  {name:<15} processes={processes:<3} step_time={step_time:g}s jitter={jitter:<4g}"
            f" -> {rate:9.1f} agent-steps/s",
            flush=True,
        )
    return results


def scaling_table(rates: dict[int, dict[str, float]], ours: str = "unity-async") -> list[str]:
    """The rows of a scaling table over several process counts (one setting).

    Args:
        rates: ``{processes: {contender: agent-steps/s}}``.
        ours: the contender whose ratios to the others, and to linear scaling, are shown.

    Returns:
        Text lines: per process count each contender's rate, ``ours`` over each other contender
        and ``ours`` over linear scaling, i.e. over ``processes / smallest count`` times its rate
        at the smallest count (``-`` where ``ours`` was not run).
    """
    counts = sorted(rates)
    names = list(dict.fromkeys(name for count in counts for name in rates[count]))
    others = [name for name in names if name != ours]
    base = rates[counts[0]].get(ours)
    header = ["processes", *names, *(f"{ours} / {name}" for name in others), "of linear"]
    lines = ["  " + " | ".join(header)]
    for count in counts:
        row = rates[count]
        mine = row.get(ours)
        cells = [str(count), *(f"{row[name]:.0f}" if name in row else "-" for name in names)]
        cells += [
            f"{mine / row[name]:.2f}x" if mine is not None and name in row else "-"
            for name in others
        ]
        linear = mine / (base * count / counts[0]) if mine is not None and base else None
        cells.append("-" if linear is None else f"{linear:.2f}")
        lines.append("  " + " | ".join(cells))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; exits 0 when both goals are met at every process count."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        default=[32],
        metavar="N",
        help="game processes (1 agent each); several counts add a scaling table",
    )
    parser.add_argument("--step-time", type=float, default=0.1, help="seconds per Academy step")
    parser.add_argument("--jitter", type=float, default=1.0, help="relative jitter of the run")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per run")
    parser.add_argument(
        "--contenders",
        nargs="+",
        default=[name for name in CONTENDERS if name != "unity-async-threads"],
        choices=list(CONTENDERS),
        help="default: all but unity-async-threads",
    )
    parser.add_argument(
        "--cpu-split",
        action="store_true",
        help="also print the CPU per agent-step of the main process, the players and the "
        "workers (Linux: read from /proc)",
    )
    args = parser.parse_args(argv)
    if args.cpu_split and not os.path.isdir("/proc/self"):
        parser.error("--cpu-split reads each process's CPU time from /proc, which only Linux has")
    global CPU_SPLIT
    CPU_SPLIT = args.cpu_split
    goals = {0.0: 1.0} if args.jitter == 0 else {0.0: 1.0, args.jitter: 1.8}
    met = True
    summary = []
    tables: dict[float, dict[int, dict[str, float]]] = {jitter: {} for jitter in goals}
    for processes in dict.fromkeys(args.processes):
        for jitter, goal in goals.items():
            print(f"processes={processes} jitter={jitter:g}:", flush=True)
            rates = measure(processes, args.step_time, jitter, args.seconds, args.contenders)
            tables[jitter][processes] = rates
            ours = rates.get("unity-async")
            for other in ("gym-async", "sb3-subproc"):
                if ours is None or other not in rates:
                    continue
                ratio = ours / rates[other]
                met &= ratio >= goal
                summary.append(
                    f"processes={processes} jitter={jitter:g}: unity-async / {other} = "
                    f"{ratio:.2f}x (goal >= {goal:g}x)"
                )
    print("\n".join(summary), flush=True)
    if len(args.processes) > 1:
        for jitter, table in tables.items():
            print(f"\nstep time {args.step_time:g} s, jitter {jitter:g} (agent-steps/s):")
            print("\n".join(scaling_table(table)), flush=True)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
