"""Curriculum and memory, side by side: WallJump with and without lessons, Hallway with and
without an LSTM, and ``unity-train`` against ``mlagents-learn`` on the Hallway memory config.

Three parts, each running its contenders one after another (``--concurrent``: at the same time,
each on its own game) in this one invocation, on the same headless player and seed:

* ``walljump``: ML-Agents' ``config/ppo/WallJump_curriculum.yaml`` (bundled as
  ``trainers/configs/WallJump_curriculum_ppo.yaml``) against the same file with each wall height
  fixed at its last lesson's value, ``BigWallJump`` for ``--walljump-steps`` agent steps and
  ``SmallWallJump`` for the config's share of them (a quarter), on the
  WallJump scene with 12 areas (every area switches between ``SmallWallJump`` and
  ``BigWallJump`` with its wall). Printed per behavior: the lesson reached and the mean reward of
  the last summaries (goal: the curriculum run ahead).
* ``hallway``: ``trainers/configs/Hallway_ppo.yaml`` (ML-Agents' Hallway config: memory with
  sequence length 64 and memory size 128) against the same file without ``memory``, for
  ``--hallway-steps`` steps each. Printed: the mean reward of the last summaries (goal: memory
  clearly above) and the share of correct goals among those reached (the scene's
  ``Goal/Correct`` and ``Goal/Wrong`` statistics: 50% is all a policy without memory can do).
  With ``--mlagents-learn`` the official ``mlagents-learn`` 1.1.0 then trains the memory config
  on the same seed and one Hallway executable (run ``hallway-memory-mlagents-learn``, continued
  in a ``--workdir`` as the others): its reward and share of correct goals are printed beside
  ours, for information.
* ``speed``: wall time from launch to the first summary with mean reward >= ``--target`` on the
  Hallway memory config, ``unity-train`` vs the official ``mlagents-learn`` 1.1.0 in the reference
  peer venv (``benchmarks/peer_venv.py --learn``), both launching the same Hallway executable
  (``unity_gym.player.build``) with one game process (goal: ratio <= 0.5). ``mlagents-learn``
  stops after twice ``unity-train``'s time plus 60 s, which bounds the ratio when it has not
  reached the target by then (:func:`benchmarks.trainer_runs.race_mlagents_learn`).

The reported reward of a run is the mean of its last ``--tail`` summaries (ML-Agents' summary
lines: the mean cumulative reward of the episodes that ended since the previous summary).

``--workdir DIR`` keeps the runs in ``DIR`` instead of a temporary folder: the same command
with the same folder continues a run stopped before its budget (Ctrl-C saves it; a temporary
folder holding one is kept and named) and reuses a complete one, so a long budget can be
trained over several sittings (:func:`benchmarks.trainer_runs.train`).

Usage::

    python -m benchmarks.curriculum_memory [--only walljump|hallway|speed ...]
        [--walljump-steps 400000] [--hallway-steps 400000] [--target 0.2]
        [--time-limit 1800] [--seeds 1 2 3 | --seed 1] [--tail 3] [--concurrent]
        [--mlagents-learn] [--workdir DIR]

``--seeds 1 2 3`` runs every chosen part once per seed, each seed in ``<workdir>/seed<N>``
(``--seed N``: one seed), and prints each figure per seed with its median, its worst seed and
their spread (:mod:`benchmarks.seeds`); a goal is met when the median AND the worst seed meet
it.

Exit status 0 when the median and the worst seed of every figure met its goal, 1 otherwise, 2
when the reference peer is unavailable (the speed part is then skipped with the reason).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.peer_venv import PeerUnavailableError  # noqa: E402
from benchmarks.seeds import Figure, Goal  # noqa: E402
from benchmarks.trainer_runs import (  # noqa: E402
    add_common_arguments,
    last_scalar,
    mean_of_last,
    race_mlagents_learn,
    run_parts,
    scalar_series,
    train_all,
    train_mlagents_learn,
    with_max_steps,
)

__all__ = ["PARTS", "correct_share", "main", "without_curriculum", "without_memory"]

CONFIGS = REPO_ROOT / "trainers" / "configs"
WALLJUMP_CONFIG = CONFIGS / "WallJump_curriculum_ppo.yaml"
HALLWAY_CONFIG = CONFIGS / "Hallway_ppo.yaml"
PARTS = ("walljump", "hallway", "speed")
WALL_PARAMETERS = {"BigWallJump": "big_wall_height", "SmallWallJump": "small_wall_height"}


def without_curriculum(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with every curriculum parameter fixed at its last lesson's value."""
    out = yaml.safe_load(yaml.safe_dump(config))
    for name, parameter in out.get("environment_parameters", {}).items():
        if isinstance(parameter, dict) and "curriculum" in parameter:
            last = parameter["curriculum"][-1]
            lesson = next(iter(last.values())) if "value" not in last else last
            out["environment_parameters"][name] = lesson["value"]
    return out


def without_memory(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with ``network_settings.memory`` removed from every behavior."""
    out = yaml.safe_load(yaml.safe_dump(config))
    for behavior in out["behaviors"].values():
        behavior.get("network_settings", {}).pop("memory", None)
    return out


def walljump(args: argparse.Namespace, workdir: Path) -> list[Figure]:
    """Part ``walljump``: the curriculum run's mean rewards summed over behaviors minus the
    run without lessons' (goal: above 0, ahead), and each run's sum."""
    config = yaml.safe_load(WALLJUMP_CONFIG.read_text(encoding="utf-8"))
    config = with_max_steps(config, args.walljump_steps)
    flags = ["--scene", "WallJump", "--num-areas", "12"]
    rows = []
    variants = {"curriculum": config, "no-curriculum": without_curriculum(config)}
    runs = [(f"walljump-{name}", variant) for name, variant in variants.items()]
    outputs = train_all(runs, workdir, flags, args.seed, args.concurrent)
    for name, output in zip(variants, outputs, strict=True):
        for behavior, parameter in WALL_PARAMETERS.items():
            reward, count = mean_of_last(output, behavior, args.tail)
            lesson = last_scalar(
                workdir / "results" / f"walljump-{name}" / behavior,
                f"Environment/Lesson Number/{parameter}",
            )
            rows.append((name, behavior, lesson, reward, count))
    print(f"\nWallJump, {args.walljump_steps} steps per behavior, seed {args.seed}")
    for name, behavior, lesson, reward, count in rows:
        shown = "-" if lesson is None else f"{lesson:.0f}"
        print(
            f"  {name:15s} {behavior:14s} lesson reached {shown:>2s}   "
            f"mean reward (last {count}) {reward:+.3f}"
        )
    with_lessons = [row[3] for row in rows if row[0] == "curriculum"]
    without = [row[3] for row in rows if row[0] == "no-curriculum"]
    ahead = sum(with_lessons) > sum(without)
    print(f"  goal: curriculum ahead (sum over behaviors) -> {'met' if ahead else 'not met'}")
    return [
        Figure(
            "WallJump curriculum minus none (summed rewards)",
            sum(with_lessons) - sum(without),
            Goal(0.0, strict=True),
        ),
        Figure("WallJump curriculum summed reward", sum(with_lessons)),
        Figure("WallJump no-curriculum summed reward", sum(without)),
    ]


def hallway(args: argparse.Namespace, workdir: Path) -> list[Figure]:
    """Part ``hallway``: the memory run's mean reward minus the run without memory's (goal: at
    least 0.1, clearly above), and the memory run's share of correct goals."""
    config = yaml.safe_load(HALLWAY_CONFIG.read_text(encoding="utf-8"))
    config = with_max_steps(config, args.hallway_steps)
    rows = []
    variants = {"memory": config, "no-memory": without_memory(config)}
    runs = [(f"hallway-{name}", variant) for name, variant in variants.items()]
    outputs = train_all(runs, workdir, ["--scene", "Hallway"], args.seed, args.concurrent)
    for name, output in zip(variants, outputs, strict=True):
        share = correct_share(workdir / "results" / f"hallway-{name}", args.tail)
        rows.append((name, *mean_of_last(output, "Hallway", args.tail), share))
    print(f"\nHallway, {args.hallway_steps} steps each, seed {args.seed}")
    for name, reward, count, share in rows:
        print(
            f"  {name:10s} mean reward (last {count}) {reward:+.3f}; correct goal in "
            f"{share:.0%} of the goals reached (last {count} summaries)"
        )
    above = rows[0][1] >= rows[1][1] + 0.1
    print(f"  goal: memory clearly above (by >= 0.1) -> {'met' if above else 'not met'}")
    figures = [
        Figure("Hallway memory minus no memory", rows[0][1] - rows[1][1], Goal(0.1)),
        Figure("Hallway memory correct-goal share", rows[0][3]),
        Figure("Hallway no-memory correct-goal share", rows[1][3]),
    ]
    if args.mlagents_learn:
        figures += _hallway_mlagents_learn(args, workdir, config)
    return figures


def _hallway_mlagents_learn(
    args: argparse.Namespace, workdir: Path, config: dict[str, Any]
) -> list[Figure]:
    """``--mlagents-learn``: the official ``mlagents-learn`` trains the memory config on the same
    seed (run ``hallway-memory-mlagents-learn``); its mean reward and share of correct goals are
    figures for information (no goal): they tell "our trainer learns it" from "it is learnable
    at this budget". No figures (the reason printed) without the reference peer venv."""
    name = "hallway-memory-mlagents-learn"
    try:
        output = train_mlagents_learn(config, "Hallway", name, workdir, args.seed)
    except PeerUnavailableError as error:
        print(f"\nHallway: mlagents-learn not run, reference peer unavailable: {error}")
        return []
    reward, count = mean_of_last(output, "Hallway", args.tail)
    share = correct_share(workdir / "results" / name, args.tail)
    print(
        f"  mlagents-learn memory mean reward (last {count}) {reward:+.3f}; correct goal in "
        f"{share:.0%} of the goals reached (last {count} summaries)"
    )
    return [
        Figure("Hallway memory reward (mlagents-learn)", reward),
        Figure("Hallway memory correct-goal share (mlagents-learn)", share),
    ]


def correct_share(run_dir: Path, tail: int) -> float:
    """The share of correct goals among the goals reached in the last ``tail`` summaries, from
    the scene's own ``Goal/Correct`` and ``Goal/Wrong`` statistics (nan without any): 0.5 is
    what a policy without memory can do, 1.0 a policy that remembers the symbol."""
    correct = [p.value for p in scalar_series(run_dir, "Goal/Correct")[-tail:]]
    wrong = [p.value for p in scalar_series(run_dir, "Goal/Wrong")[-tail:]]
    total = sum(correct) + sum(wrong)
    return sum(correct) / total if total else float("nan")


def speed(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``speed``: unity-train's time over mlagents-learn's (goal: at most 0.5); None when
    the reference peer is unavailable."""
    config = yaml.safe_load(HALLWAY_CONFIG.read_text(encoding="utf-8"))
    return race_mlagents_learn(
        config, "Hallway", "Hallway", args.target, args.time_limit, args.seed, workdir
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts and print their results side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser, PARTS)
    parser.add_argument("--walljump-steps", type=int, default=400_000)
    parser.add_argument("--hallway-steps", type=int, default=400_000)
    parser.add_argument("--target", type=float, default=0.2, help="Hallway reward (speed)")
    parser.add_argument(
        "--mlagents-learn",
        action="store_true",
        help=(
            "hallway: also train the memory config with mlagents-learn 1.1.0 (reference peer "
            "venv) on the same seed, after the unity-train runs"
        ),
    )
    args = parser.parse_args(argv)
    return run_parts(
        {"walljump": walljump, "hallway": hallway, "speed": speed}, args, "curriculum-memory-"
    )


if __name__ == "__main__":
    sys.exit(main())
