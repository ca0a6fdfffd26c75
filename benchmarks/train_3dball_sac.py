"""3DBall with SAC: wall time to a mean reward, ``unity-train`` against ``mlagents-learn``.

One part, ``speed``: the wall time from launch to the first summary with a mean reward of at
least ``--target`` (30 by default) on ``trainers/configs/3DBall_sac.yaml`` (ML-Agents'
``config/sac/3DBall.yaml`` hyperparameters, ``max_steps`` as bundled), ``unity-train`` first, then
the official ``mlagents-learn`` 1.1.0 in the reference peer venv, each on one game process of the
same 3DBall executable of the headless player (12 agents), with the same ``--seed``. Goal:
``unity-train`` takes at most a quarter of ``mlagents-learn``'s time
(:func:`benchmarks.trainer_runs.race_mlagents_learn`; ``mlagents-learn`` stops at four times
``unity-train``'s time plus 60 s, and the ratio printed is then an upper bound).

A summary is written every ``summary_freq`` = 12000 steps, so each time is that of the first
summary at or above the target; ``mlagents-learn`` counts steps only when a trajectory reaches
its trainer. Rerun it for figures of your own machine: the ratio is what to compare.

Usage::

    python -m benchmarks.train_3dball_sac [--target 30] [--time-limit 1800] [--seeds 1 2 3]
        [--workdir DIR]

Exit status 0 when the goal is met, 1 when not, 2 when the reference peer is unavailable (the
reason is printed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.seeds import Figure  # noqa: E402
from benchmarks.trainer_runs import add_common_arguments, race_mlagents_learn, run_parts  # noqa: E402

__all__ = ["GOAL", "SAC_CONFIG", "main", "speed"]

SAC_CONFIG = REPO_ROOT / "trainers" / "configs" / "3DBall_sac.yaml"
#: ``unity-train``'s time over ``mlagents-learn``'s, at most.
GOAL = 0.25
PARTS = ("speed",)


def speed(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``speed``: the time ratio ``unity-train`` SAC / ``mlagents-learn`` to ``--target``
    (goal <= :data:`GOAL`) and each contender's seconds; None when the reference peer is
    unavailable."""
    config = yaml.safe_load(SAC_CONFIG.read_text(encoding="utf-8"))
    return race_mlagents_learn(
        config,
        "3DBall",
        "3DBall",
        args.target,
        args.time_limit,
        args.seed,
        workdir,
        goal=GOAL,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the race and print both times and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser, PARTS)
    parser.add_argument("--target", type=float, default=30.0, help="3DBall mean reward")
    args = parser.parse_args(argv)
    return run_parts({"speed": speed}, args, "sac-3dball-")


if __name__ == "__main__":
    sys.exit(main())
