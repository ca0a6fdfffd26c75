"""``--torch-device cuda`` against ``cpu``: update time and run time of one training, side by side.

Each part trains the same config twice in this one invocation, on the same built-in scene,
seed, precision and number of game processes, once per device (``cpu`` first), and reads every
run's ``timers.json`` (the ``*_update`` timers: seconds spent in updates, and their count; see
:func:`benchmarks.update_precision.update_times`) and its summaries:

* ``soccer``: ML-Agents' ``config/poca/SoccerTwos.yaml`` (POCA + self-play, 512 x 2 networks,
  minibatches of 2048 rows, :data:`benchmarks.multiagent.SOCCER_TWOS_POCA`) for
  ``--soccer-steps`` steps on ``--scene SoccerTwos``. Goal: updates on the GPU take at most
  0.5x as long as on the CPU.
* ``3dball``: ``trainers/configs/3DBall_ppo.yaml`` (ML-Agents' 3DBall PPO config, 128 x 2,
  minibatches of 64 rows) for ``--ball-steps`` steps on ``--scene 3DBall``. Goal: both runs end
  at a mean reward of at least 90 (the mean of the last ``--tail`` summaries), so that the
  device does not cost the learning its result. Small networks and minibatches gain little
  from a GPU: this part shows what the device costs or saves there.

Printed per run: seconds per update, updates, wall time and agent steps per second, and the final
mean reward; then the ratios ``cuda / cpu``. The CPU run uses ``unity-train``'s own thread
settings (one intra-op thread while the games step; see
:mod:`trainers.common.optimization.update_threads`).

Usage::

    python -m benchmarks.torch_device [--only soccer|3dball] [--soccer-steps 61440]
                                      [--ball-steps 150000] [--num-envs 4]
                                      [--precision float32|bf16-mixed]
                                      [--seeds 1 2 3 | --seed 1] [--tail 3] [--workdir DIR]

Exit status 0 when the median and the worst seed of every part's figure met its goal, 1
otherwise, 2 when CUDA is not available (the reason is printed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.multiagent import SOCCER_TWOS_POCA  # noqa: E402
from benchmarks.seeds import Figure, Goal  # noqa: E402
from benchmarks.trainer_runs import run_parts, with_max_steps  # noqa: E402
from benchmarks.update_precision import (  # noqa: E402
    PARTS,
    UpdateTimes,
    add_run_arguments,
    ball_config,
    both_learned,
    train_variants,
)
from trainers.settings import Precision  # noqa: E402

__all__ = ["DEVICES", "PARTS", "main"]

DEVICES = ("cpu", "cuda")


def _cuda_missing() -> str | None:
    """Why CUDA cannot be used here, or None when it can."""
    import torch

    if not torch.cuda.is_available():
        return f"CUDA is not available to torch {torch.__version__}; run this on a GPU machine"
    return None


def _compare(
    args: argparse.Namespace, workdir: Path, config: dict[str, Any], name: str, scene: str
) -> dict[str, tuple[UpdateTimes, float]] | None:
    """Train ``config`` once per device; each device's update times and final mean reward
    (None, with the reason printed, when CUDA is not available)."""
    missing = _cuda_missing()
    if missing:
        print(f"\n{scene}: not run: {missing}")
        return None
    common = ["--num-envs", str(args.num_envs), "--torch-precision", args.precision]
    variants = {device: [*common, "--torch-device", device] for device in DEVICES}
    print(f"\n{scene}: {args.num_envs} games, {args.precision}")
    results = train_variants(config, workdir, name, scene, variants, args.seed, args.tail)
    (gpu, _), (cpu, _) = results["cuda"], results["cpu"]
    print(
        f"  cuda / cpu: updates {gpu.per_update / cpu.per_update:.2f}x, "
        f"run {gpu.wall / cpu.wall:.2f}x"
    )
    return results


def soccer(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``soccer``: the GPU's time per update over the CPU's (goal: at most 0.5); None
    without CUDA."""
    config = with_max_steps(SOCCER_TWOS_POCA, args.soccer_steps, summaries=3)
    results = _compare(args, workdir, config, "soccer", "SoccerTwos")
    if results is None:
        return None
    ratio = results["cuda"][0].per_update / results["cpu"][0].per_update
    print(f"  goal: updates <= 0.5x -> {'met' if ratio <= 0.5 else 'not met'}")
    return [Figure("SoccerTwos update time cuda / cpu", ratio, Goal(0.5, higher=False))]


def ball(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``3dball``: the lower final mean reward of the two devices (goal: at least 90);
    None without CUDA."""
    results = _compare(args, workdir, ball_config(args.ball_steps), "3dball", "3DBall")
    return None if results is None else both_learned(results)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts; the exit status says whether they met their goals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_run_arguments(parser)
    parser.add_argument("--num-envs", type=int, default=4, help="game processes per run")
    parser.add_argument(
        "--precision",
        choices=get_args(Precision),
        default="float32",
        help="--torch-precision of every run",
    )
    args = parser.parse_args(argv)
    return run_parts({"soccer": soccer, "3dball": ball}, args, "torch-device-")


if __name__ == "__main__":
    sys.exit(main())
