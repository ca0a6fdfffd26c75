"""Wall time to a mean reward of 90 on 3DBall: ``unity-train`` vs ``mlagents-learn`` vs SB3 PPO.

The three trainers run one after another in one invocation, on the same headless 3DBall
executable (built once with ``unity_gym.player.build``), with the same number of game processes
and the same hyperparameters, those of ``trainers/configs/3DBall_ppo.yaml`` (ML-Agents'
reference 3DBall PPO config):

* ``unity-train CONFIG --env BUILD --num-envs N``;
* the official ``mlagents-learn`` 1.1.0 with the same file, in the reference peer venv
  (``benchmarks/peer_venv.py --learn``), launching the executable itself;
* Stable-Baselines3 ``PPO("MlpPolicy", VecNormalize(VecMonitor(UnityVecEnv(...))))`` with the
  config translated: ``n_steps = buffer_size / agents``, ``batch_size``, ``n_epochs``,
  ``gamma``, ``gae_lambda``, ``ent_coef = beta``, ``clip_range = epsilon`` and the learning rate
  (linear schedules over ``max_steps`` where the config says so), ``hidden_units x num_layers``
  for separate policy and value networks with ML-Agents' SiLU (Swish) activation, observation
  normalization (``VecNormalize``) when ``normalize`` is set; the games run on the same vector
  env backend as ``unity-train``'s.

Each contender runs in a subprocess and prints ML-Agents' summary lines (the SB3 run prints
them from a callback with the same rule: the mean cumulative reward of the episodes that ended
since the previous summary, every ``summary_freq`` agent steps). The time of a contender is the
wall time from its launch (imports and game start-up included) to the first summary whose mean
reward is at least ``--target``; it is then stopped. The script prints each time and the ratios
``unity-train / mlagents-learn`` (goal <= 0.5) and ``unity-train / SB3`` (goal <= 0.7). With
``--rounds N`` the contenders run N times in turn (one round after another, so background load
hits all of them alike) and the median of each ratio over the rounds is printed too.

Usage::

    python -m benchmarks.train_3dball [--num-envs 4] [--target 90] [--time-limit 900]
                                      [--seeds 1 2 3 | --seed 1] [--rounds 1]
                                      [--only unity-train --only sb3 ...]

``--seeds 1 2 3`` runs the rounds once per seed (every contender with that seed) and prints,
per seed, each ratio (the median of its rounds) and each contender's seconds, with their
median over seeds, worst seed and spread (:func:`seed_figures`, :mod:`benchmarks.seeds`).

Exit status 0 when the median and the worst seed of every ratio meet its goal and every
contender reached the target in every round, 1 otherwise, 2 when the
reference peer is unavailable (``mlagents-learn`` is then skipped with the reason).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.mlagents_learn_3dball import (  # noqa: E402
    _LEARN_WITH_LEGACY_ONNX_EXPORT,
    ensure_onnx,
    parse_summaries,
)
from benchmarks.peer_runner import free_port, peer_process_environment  # noqa: E402
from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv  # noqa: E402
from benchmarks.seeds import (  # noqa: E402
    Figure,
    Goal,
    add_seed_arguments,
    chosen_seeds,
    format_table,
    summarize_figures,
)

__all__ = [
    "CONTENDERS",
    "ContenderProcess",
    "ContenderResult",
    "main",
    "run_until_target",
    "sb3_arguments",
    "seed_figures",
    "time_to_target",
]

DEFAULT_CONFIG = REPO_ROOT / "trainers" / "configs" / "3DBall_ppo.yaml"
BEHAVIOR = "3DBall"
AGENTS_PER_GAME = 12
CONTENDERS = ("unity-train", "mlagents-learn", "sb3")


@dataclass
class ContenderResult:
    """How one trainer did.

    Attributes:
        name: the contender.
        seconds: wall time from launch to the first summary at or above the target (``None``:
            not reached).
        step: the agent step of that summary (or of the last summary when not reached).
        last_mean: the mean reward of the last summary seen.
        note: why it was not reached or skipped, if so.
    """

    name: str
    seconds: float | None
    step: int
    last_mean: float
    note: str = ""


def time_to_target(
    lines: Sequence[tuple[float, str]], target: float, behavior: str = BEHAVIOR
) -> tuple[float | None, int, float]:
    """The first summary at or above ``target`` among timestamped output lines.

    Args:
        lines: ``(seconds since launch, line)`` in arrival order.

    Returns:
        ``(seconds, step, mean)`` of that summary; ``(None, last step, last mean)`` when no
        summary reached the target (``(None, 0, nan)`` without any summary).
    """
    step, mean = 0, float("nan")
    for seconds, line in lines:
        summaries = parse_summaries(line, behavior)
        if not summaries:
            continue
        step, mean = summaries[0].step, summaries[0].mean_reward
        if mean >= target:
            return seconds, step, mean
    return None, step, mean


def sb3_arguments(config: dict[str, Any], num_slots: int) -> dict[str, Any]:
    """Keyword arguments of SB3's ``PPO`` that match an ML-Agents PPO behavior config.

    Args:
        config: the behavior's section of the YAML file.
        num_slots: agents stepped together (SB3's ``n_envs``).

    Raises:
        ValueError: the config is not a PPO config or its buffer is smaller than one step.
    """
    import torch

    if config.get("trainer_type", "ppo") != "ppo":
        raise ValueError(f"SB3 contender needs a ppo config, not {config['trainer_type']!r}")
    hyper = config.get("hyperparameters", {})
    network = config.get("network_settings", {})
    max_steps = float(config["max_steps"])
    n_steps = int(hyper["buffer_size"]) // num_slots
    if n_steps < 1:
        raise ValueError(f"buffer_size {hyper['buffer_size']} is smaller than {num_slots} slots")
    lr_schedule = hyper.get("learning_rate_schedule", "linear")

    def schedule(value: float, kind: str) -> Any:
        if kind == "constant":
            return value
        # SB3 passes the remaining progress (1 -> 0); ML-Agents decays linearly over max_steps.
        return lambda remaining: value * remaining

    layers = [int(network.get("hidden_units", 128))] * int(network.get("num_layers", 2))
    return {
        "n_steps": n_steps,
        "batch_size": int(hyper["batch_size"]),
        "n_epochs": int(hyper["num_epoch"]),
        "gamma": float(config["reward_signals"]["extrinsic"]["gamma"]),
        "gae_lambda": float(hyper["lambd"]),
        "ent_coef": float(hyper["beta"]),
        "clip_range": schedule(float(hyper["epsilon"]), hyper.get("epsilon_schedule", lr_schedule)),
        "learning_rate": schedule(float(hyper["learning_rate"]), lr_schedule),
        "policy_kwargs": {"net_arch": {"pi": layers, "vf": layers}, "activation_fn": torch.nn.SiLU},
        "total_timesteps": int(max_steps),
    }


def _sb3_worker(config_path: Path, build: Path, num_games: int, seed: int) -> int:
    """Train SB3 PPO, printing ML-Agents-style summary lines (runs in its own process)."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from trainers.envs import SINGLE_GAME_BACKEND
    from unity_gym.sb3 import UnityVecEnv

    torch.set_num_threads(1)  # as unity-train (the games need the other core)
    behavior = yaml.safe_load(config_path.read_text())["behaviors"][BEHAVIOR]
    slots = AGENTS_PER_GAME * num_games
    kwargs = sb3_arguments(behavior, slots)
    total = kwargs.pop("total_timesteps")
    summary_freq = int(behavior.get("summary_freq", 50000))
    normalize = bool(behavior.get("network_settings", {}).get("normalize", False))
    backend = SINGLE_GAME_BACKEND if num_games == 1 else "subprocess"  # as unity-train's
    venv = UnityVecEnv(
        num_envs=slots, file_name=str(build), seed=seed, timeout_wait=120, backend=backend
    )
    env: Any = VecMonitor(venv)
    if normalize:
        env = VecNormalize(env, norm_obs=True, norm_reward=False)
    start = time.monotonic()

    class Summaries(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rewards: list[float] = []
            self.next_summary = summary_freq

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                episode = info.get("episode")
                if episode is not None:
                    self.rewards.append(float(episode["r"]))
            if self.num_timesteps >= self.next_summary:
                self.next_summary = (self.num_timesteps // summary_freq + 1) * summary_freq
                if self.rewards:
                    print(
                        f"[INFO] {BEHAVIOR}. Step: {self.num_timesteps}. Time Elapsed: "
                        f"{time.monotonic() - start:.1f} s. Mean Reward: "
                        f"{np.mean(self.rewards):.3f}. Std of Reward: {np.std(self.rewards):.3f}."
                        " Training.",
                        flush=True,
                    )
                self.rewards.clear()
            return True

    model = PPO("MlpPolicy", env, seed=seed, verbose=0, device="cpu", **kwargs)
    try:
        model.learn(total_timesteps=total, callback=Summaries())
    finally:
        env.close()
    return 0


def _commands(
    name: str,
    python: Path | None,
    config: Path,
    build: Path,
    workdir: Path,
    num_games: int,
    seed: int,
) -> list[str]:
    """The command line of contender ``name`` (the same config, build, games and seed)."""
    shared = [
        str(config),
        "--env",
        str(build),
        "--num-envs",
        str(num_games),
        "--run-id",
        "bench",
        "--results-dir",
        str(workdir / f"results-{name}"),
        "--seed",
        str(seed),
        "--timeout-wait",
        "120",
    ]
    if name == "unity-train":
        return [sys.executable, "-m", "trainers", *shared]
    if name == "mlagents-learn":
        assert python is not None
        return [
            str(python),
            "-c",
            _LEARN_WITH_LEGACY_ONNX_EXPORT,
            *shared,
            "--base-port",
            str(free_port()),
            "--no-graphics",
            "--torch-device",
            "cpu",
        ]
    return [
        sys.executable,
        "-m",
        "benchmarks.train_3dball",
        "--sb3-worker",
        "--config",
        str(config),
        "--build",
        str(build),
        "--num-envs",
        str(num_games),
        "--seed",
        str(seed),
    ]


class ContenderProcess:
    """A trainer run in a new session (its games too), stopped with everything it launched when
    the ``with`` block ends or ``time_limit`` seconds have passed (SIGINT, then SIGKILL)."""

    def __init__(
        self, name: str, command: list[str], env: dict[str, str], time_limit: float
    ) -> None:
        print(f"\n== {name}\n$ {' '.join(command[:2])} ... {' '.join(command[3:])}", flush=True)
        self.time_limit = time_limit
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._timer = threading.Timer(time_limit, _stop_group, (self.process,))
        self._timer.start()

    def __enter__(self) -> ContenderProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _stop_group(self.process)

    def lines(self) -> Iterator[tuple[float, str]]:
        """Each output line with the seconds since launch, until the trainer exits."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            yield time.monotonic() - self.started, line

    def why_not(self, target: float) -> str:
        """Why the target was not reached (call after the ``with`` block)."""
        why = "time limit" if time.monotonic() - self.started >= self.time_limit else "exited"
        return f"{why} (exit code {self.process.returncode}) before reaching {target}"


def run_until_target(
    name: str,
    command: list[str],
    env: dict[str, str],
    target: float,
    time_limit: float,
    behavior: str = BEHAVIOR,
) -> ContenderResult:
    """Run a trainer until a summary of ``behavior`` reaches ``target``, it exits or time is up
    (see :class:`ContenderProcess`)."""
    lines: list[tuple[float, str]] = []
    reached = False
    with ContenderProcess(name, command, env, time_limit) as run:
        for elapsed, line in run.lines():
            lines.append((elapsed, line))
            summaries = parse_summaries(line, behavior)
            if summaries or "Traceback" in line or "rror" in line:
                print(f"  [{elapsed:6.1f} s] {line.rstrip()}", flush=True)
            if summaries and summaries[0].mean_reward >= target:
                reached = True
                break
    seconds, step, mean = time_to_target(lines, target, behavior)
    note = ""
    if not reached:
        tail = "".join(line for _, line in lines[-15:])
        note = run.why_not(target)
        print(f"  {note}; last lines:\n{tail}", flush=True)
    return ContenderResult(name, seconds, step, mean, note)


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """Stop a contender and everything it launched: SIGINT, then SIGKILL after 30 s."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with contextlib.suppress(ProcessLookupError):  # games that outlived their trainer
        os.killpg(proc.pid, signal.SIGKILL)


def _ratio_value(ours: ContenderResult | None, other: ContenderResult | None) -> float | None:
    """``ours`` time over ``other``'s, or None when either did not reach the target."""
    if ours is None or other is None or ours.seconds is None or other.seconds is None:
        return None
    return ours.seconds / other.seconds


def _ratio(ours: ContenderResult, other: ContenderResult | None) -> str:
    value = _ratio_value(ours, other)
    return "n/a" if value is None else f"{value:.2f}x"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the contenders side by side and print times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="PPO YAML config")
    parser.add_argument("--num-envs", type=int, default=4, help="game processes (12 agents each)")
    parser.add_argument("--target", type=float, default=90.0, help="mean reward to reach")
    parser.add_argument("--time-limit", type=float, default=900.0, help="seconds per contender")
    add_seed_arguments(parser)
    parser.add_argument(
        "--rounds", type=int, default=1, help="run the contenders this many times in turn"
    )
    parser.add_argument(
        "--only", action="append", choices=CONTENDERS, help="run only these (repeatable)"
    )
    parser.add_argument("--sb3-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.sb3_worker:
        return _sb3_worker(args.config, args.build, args.num_envs, chosen_seeds(args)[0])

    from unity_gym.player.build import build_executable

    try:
        seeds = chosen_seeds(args)
    except ValueError as error:
        parser.error(str(error))
    chosen = [name for name in CONTENDERS if not args.only or name in args.only]
    python: Path | None = None
    skipped: dict[str, str] = {}
    if "mlagents-learn" in chosen:
        try:
            python = ensure_peer_venv(learn=True)
            ensure_onnx(python)
        except PeerUnavailableError as error:
            skipped["mlagents-learn"] = f"reference peer venv unavailable: {error}"
            chosen.remove("mlagents-learn")
    workdir = Path(tempfile.mkdtemp(prefix="train-3dball-"))
    per_seed: dict[int, list[Figure]] = {}
    try:
        build = build_executable(BEHAVIOR, workdir / "build").with_suffix("")
        print(
            f"3DBall, {args.num_envs} game(s) x {AGENTS_PER_GAME} agents, config {args.config}, "
            f"target mean reward {args.target}, seeds {' '.join(map(str, seeds))}, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for seed in seeds:
            rounds: list[dict[str, ContenderResult]] = []
            for number in range(args.rounds):
                results: dict[str, ContenderResult] = {}
                round_dir = workdir / f"seed{seed}" / f"round-{number}"
                round_dir.mkdir(parents=True)
                for name in chosen:
                    command = _commands(
                        name, python, args.config, build, round_dir, args.num_envs, seed
                    )
                    env = (
                        peer_process_environment() if name == "mlagents-learn" else dict(os.environ)
                    )
                    results[name] = run_until_target(
                        name, command, env, args.target, args.time_limit
                    )
                rounds.append(results)
                _print_round(number, args.rounds, results, skipped, args.target, seed)
            per_seed[seed] = seed_figures(rounds, chosen, args.time_limit)
            if args.rounds > 1:
                print(f"\nseed {seed}: median over {args.rounds} rounds")
                for figure in per_seed[seed]:
                    print(f"  {figure.name:45s} {figure.value:.2f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summaries = summarize_figures(per_seed)
    print(f"\n{format_table(f'3DBall, wall time to mean reward {args.target}', summaries)}")
    if skipped:
        return 2
    return 0 if all(summary.met for summary in summaries) else 1


#: The goal of each ratio ``unity-train / <contender>``.
RATIO_GOALS = {"mlagents-learn": 0.5, "sb3": 0.7}


def seed_figures(
    rounds: Sequence[dict[str, ContenderResult]], chosen: Sequence[str], time_limit: float
) -> list[Figure]:
    """One seed's figures from its rounds: the median over rounds of each ratio
    ``unity-train / <contender>`` whose two contenders ran (goals: <= 0.5 for
    ``mlagents-learn``, <= 0.7 for SB3; nan when no round has both times), and each contender's
    median seconds to the target (goal: within ``time_limit``; nan when a round did not reach
    it)."""
    figures = []
    for other, goal in RATIO_GOALS.items():
        if "unity-train" in chosen and other in chosen:
            ratios = [_ratio_value(r.get("unity-train"), r.get(other)) for r in rounds]
            known = [value for value in ratios if value is not None]
            value = statistics.median(known) if known else math.nan
            figures.append(
                Figure(f"time ratio unity-train / {other}", value, Goal(goal, higher=False))
            )
    for name in chosen:
        times = [r[name].seconds for r in rounds]
        if any(seconds is None for seconds in times):
            value = math.nan
        else:
            value = statistics.median(seconds for seconds in times if seconds is not None)
        figures.append(Figure(f"{name} seconds", value, Goal(time_limit, higher=False)))
    return figures


def _print_round(
    number: int,
    total: int,
    results: dict[str, ContenderResult],
    skipped: dict[str, str],
    target: float,
    seed: int,
) -> None:
    """The times and ratios of one round."""
    which = f", seed {seed}" + (f", round {number + 1} of {total}" if total > 1 else "")
    print(f"\nwall time to mean reward >= {target}{which} (load average {os.getloadavg()[0]:.1f})")
    for name in CONTENDERS:
        if name in skipped:
            print(f"  {name:15s} skipped: {skipped[name]}")
        elif name in results:
            r = results[name]
            shown = f"{r.seconds:7.1f} s at step {r.step}" if r.seconds is not None else r.note
            print(f"  {name:15s} {shown} (last mean reward {r.last_mean:.2f})")
    ours = results.get("unity-train")
    if ours is not None:
        print(
            f"  ratio unity-train / mlagents-learn: "
            f"{_ratio(ours, results.get('mlagents-learn'))} (goal <= 0.5x)"
        )
        print(
            f"  ratio unity-train / SB3:            {_ratio(ours, results.get('sb3'))} "
            "(goal <= 0.7x)"
        )


if __name__ == "__main__":
    sys.exit(main())
