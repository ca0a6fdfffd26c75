"""``--torch-precision bf16-mixed`` against ``float32``: update time and learning, side by side.

Each part trains the same config twice in this one invocation, on the same built-in scene and
seed, once per precision (``float32`` first), and reads every run's ``timers.json`` (the
``*_update`` timers: seconds spent in updates, and their count) and its summaries:

* ``soccer``: ML-Agents' ``config/poca/SoccerTwos.yaml`` (POCA + self-play, 512 x 2 networks,
  :data:`benchmarks.multiagent.SOCCER_TWOS_POCA`) for ``--soccer-steps`` steps on
  ``--scene SoccerTwos`` with 4 game processes. Goal: updates take at most 0.7x as long.
* ``3dball``: ``trainers/configs/3DBall_ppo.yaml`` (ML-Agents' 3DBall PPO config, 128 x 2) for
  ``--ball-steps`` steps on ``--scene 3DBall`` with 4 game processes. Goal: both runs end at a
  mean reward of at least 90 (the mean of the last ``--tail`` summaries), so that bfloat16
  products do not cost the learning its result.

Printed per run: seconds per update, updates, wall time and the final mean reward; then the
ratios ``bf16-mixed / float32``. Bfloat16 pays off on CPUs with AMX or AVX-512 BF16 units
(``lscpu`` lists ``amx_bf16`` or ``avx512_bf16``) and on GPUs; elsewhere it is emulated.

Usage::

    python -m benchmarks.update_precision [--only soccer|3dball] [--soccer-steps 61440]
                                          [--ball-steps 150000] [--tail 3]
                                          [--seeds 1 2 3 | --seed 1] [--workdir DIR]

Exit status 0 when the median and the worst seed of every part's figure met its goal (see
:mod:`benchmarks.seeds`), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.multiagent import SOCCER_TWOS_POCA  # noqa: E402
from benchmarks.seeds import Figure, Goal, add_seed_arguments  # noqa: E402
from benchmarks.trainer_runs import (  # noqa: E402
    run_parts,
    scalar_series,
    train,
    with_max_steps,
)
from trainers.settings import Precision  # noqa: E402

__all__ = [
    "PARTS",
    "UpdateTimes",
    "add_run_arguments",
    "ball_config",
    "both_learned",
    "main",
    "mean_of_last_rewards",
    "train_variants",
    "update_times",
]

PARTS = ("soccer", "3dball")
PRECISIONS: tuple[Precision, ...] = get_args(Precision)  # float32 first
BALL_CONFIG = REPO_ROOT / "trainers" / "configs" / "3DBall_ppo.yaml"
CUMULATIVE_REWARD = "Environment/Cumulative Reward"


@dataclass(frozen=True)
class UpdateTimes:
    """What a run's ``timers.json`` says of its updates and of the whole run."""

    seconds: float
    count: int
    wall: float

    @property
    def per_update(self) -> float:
        """Seconds per update (nan without updates)."""
        return self.seconds / self.count if self.count else float("nan")


def update_times(timers_path: Path) -> UpdateTimes:
    """The ``*_update`` timers of ``timers_path`` summed over the whole tree (threads
    included), and the run's total wall time."""
    root: dict[str, Any] = json.loads(timers_path.read_text(encoding="utf-8"))
    seconds, count = 0.0, 0
    pending = [root]
    while pending:
        node = pending.pop()
        for name, child in node.get("children", {}).items():
            if name.endswith("_update"):
                seconds += float(child.get("total", 0.0))
                count += int(child.get("count", 0))
            else:
                pending.append(child)
    return UpdateTimes(seconds, count, float(root.get("total", 0.0)))


def mean_of_last_rewards(run_dir: Path, tail: int) -> float:
    """The mean of the last ``tail`` summaries' mean cumulative reward (nan without any)."""
    last = scalar_series(run_dir, CUMULATIVE_REWARD)[-tail:]
    return sum(point.value for point in last) / len(last) if last else float("nan")


def train_variants(
    config: dict[str, Any],
    workdir: Path,
    name: str,
    scene: str,
    variants: dict[str, list[str]],
    seed: int,
    tail: int,
) -> dict[str, tuple[UpdateTimes, float]]:
    """Train ``config`` on built-in ``scene`` once per variant, one after another, and print
    each run's update time, wall time and final reward.

    Args:
        variants: a label per run (``<name>-<label>``) and the flags it adds to
            ``--scene <scene>``.

    Returns:
        Per label, the run's update times and the mean reward of its last ``tail`` summaries.
    """
    steps = next(iter(config["behaviors"].values()))["max_steps"]
    results: dict[str, tuple[UpdateTimes, float]] = {}
    for label, flags in variants.items():
        run = f"{name}-{label}"
        train(config, run, workdir, ["--scene", scene, *flags], seed)
        times = update_times(workdir / "results" / run / "run_logs" / "timers.json")
        results[label] = (times, mean_of_last_rewards(workdir / "results" / run, tail))
    print(f"\n{scene}, {steps} steps, seed {seed}")
    for label, (times, reward) in results.items():
        print(
            f"  {label:>10}: {times.per_update:6.2f} s per update ({times.count} updates), "
            f"run {times.wall:7.1f} s ({steps / times.wall:5.0f} steps/s), "
            f"mean reward (last {tail}) {reward:+.3f}"
        )
    return results


def _compare(
    args: argparse.Namespace,
    workdir: Path,
    config: dict[str, Any],
    name: str,
    scene: str,
) -> dict[str, tuple[UpdateTimes, float]]:
    """Train ``config`` once per precision; each precision's update times and final reward."""
    variants: dict[str, list[str]] = {
        precision: ["--num-envs", "4", "--torch-precision", precision] for precision in PRECISIONS
    }
    results = train_variants(config, workdir, name, scene, variants, args.seed, args.tail)
    (fast, _), (slow, _) = results["bf16-mixed"], results["float32"]
    print(
        f"  bf16-mixed / float32: updates {fast.per_update / slow.per_update:.2f}x, "
        f"run {fast.wall / slow.wall:.2f}x"
    )
    return results


def soccer(args: argparse.Namespace, workdir: Path) -> list[Figure]:
    """Part ``soccer``: bf16-mixed's time per update over float32's (goal: at most 0.7)."""
    config = with_max_steps(SOCCER_TWOS_POCA, args.soccer_steps, summaries=3)
    results = _compare(args, workdir, config, "soccer", "SoccerTwos")
    ratio = results["bf16-mixed"][0].per_update / results["float32"][0].per_update
    print(f"  goal: updates <= 0.7x -> {'met' if ratio <= 0.7 else 'not met'}")
    return [Figure("SoccerTwos update time bf16-mixed / float32", ratio, Goal(0.7, higher=False))]


def ball(args: argparse.Namespace, workdir: Path) -> list[Figure]:
    """Part ``3dball``: the lower final mean reward of the two precisions (goal: at least
    90)."""
    results = _compare(args, workdir, ball_config(args.ball_steps), "3dball", "3DBall")
    return both_learned(results)


def ball_config(steps: int) -> dict[str, Any]:
    """The bundled 3DBall PPO config with ``max_steps`` ``steps`` and a summary per 12000."""
    config = yaml.safe_load(BALL_CONFIG.read_text(encoding="utf-8"))
    return with_max_steps(config, steps, summaries=max(1, steps // 12000))


def both_learned(results: dict[str, tuple[UpdateTimes, float]]) -> list[Figure]:
    """Whether every run ended at a mean reward of at least 90 (printed), as the figure "the
    lowest final mean reward of the runs" (goal: at least 90; nan when a run has none)."""
    met = all(reward >= 90.0 for _, reward in results.values())
    print(f"  goal: both mean rewards >= 90 -> {'met' if met else 'not met'}")
    rewards = [reward for _, reward in results.values()]
    lowest = math.nan if any(math.isnan(r) for r in rewards) else min(rewards)
    return [Figure("3DBall lowest final mean reward", lowest, Goal(90.0))]


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both parts take: ``--only``, ``--seeds`` / ``--seed``, ``--tail``,
    ``--workdir``, ``--soccer-steps`` and ``--ball-steps``."""
    parser.add_argument("--only", action="append", choices=PARTS, help="parts to run")
    add_seed_arguments(parser)
    parser.add_argument("--tail", type=int, default=3, help="summaries averaged per run")
    parser.add_argument(
        "--workdir", type=Path, help="keep the runs in this folder instead of a temporary one"
    )
    parser.add_argument("--soccer-steps", type=int, default=61_440)
    parser.add_argument("--ball-steps", type=int, default=150_000)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts; the exit status says whether they met their goals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    return run_parts({"soccer": soccer, "3dball": ball}, args, "update-precision-")


if __name__ == "__main__":
    sys.exit(main())
