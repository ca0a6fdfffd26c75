"""Do the bundled PPO configs reach ML-Agents' benchmark rewards within their ``max_steps``?

ML-Agents documents a benchmark mean reward per example environment (spec §10): Basic 0.93,
GridWorld 0.8. This script trains ``unity-train`` with the bundled reference config of each
scene on the built-in headless scene, for each seed, until a summary's mean reward reaches the
target or the config's ``max_steps`` ends the run, and prints the step and wall time at which
the target was reached. Targets: Basic >= 0.9, GridWorld >= 0.8 (the done-when of the trainers'
issue).

Usage::

    python -m benchmarks.reference_targets [--scene Basic --scene GridWorld] [--seeds 1 2 3]
                                           [--time-limit 3600]

Exit status 0 when every run reached its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.train_3dball import run_until_target  # noqa: E402

__all__ = ["TARGETS", "main"]

TARGETS: dict[str, float] = {"Basic": 0.9, "GridWorld": 0.8}
"""The mean reward each scene's bundled PPO config must reach within its ``max_steps``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Train every scene with every seed and print where the target was reached."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scene", action="append", choices=sorted(TARGETS), help="scenes (default: all)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="run seeds")
    parser.add_argument("--time-limit", type=float, default=3600.0, help="seconds per run")
    args = parser.parse_args(argv)
    scenes = args.scene or sorted(TARGETS)
    rows = []
    workdir = Path(tempfile.mkdtemp(prefix="reference-targets-"))
    try:
        for scene in scenes:
            config = REPO_ROOT / "trainers" / "configs" / f"{scene}_ppo.yaml"
            max_steps = yaml.safe_load(config.read_text())["behaviors"][scene]["max_steps"]
            for seed in args.seeds:
                command = [
                    sys.executable, "-m", "trainers", str(config), "--scene", scene,
                    "--run-id", f"{scene}-{seed}", "--results-dir", str(workdir),
                    "--seed", str(seed),
                ]  # fmt: skip
                result = run_until_target(
                    f"{scene} seed {seed}",
                    command,
                    dict(os.environ),
                    TARGETS[scene],
                    args.time_limit,
                    behavior=scene,
                )
                rows.append((scene, seed, max_steps, result))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nbundled PPO configs on the built-in scenes (load average {os.getloadavg()[0]:.1f})")
    for scene, seed, max_steps, result in rows:
        target = TARGETS[scene]
        if result.seconds is None:
            shown = f"not reached ({result.note}; last mean {result.last_mean:.3f})"
        else:
            shown = (
                f"mean reward {result.last_mean:.3f} >= {target} at step {result.step} of "
                f"{max_steps} ({result.seconds:.0f} s)"
            )
        print(f"  {scene:10s} seed {seed}: {shown}")
    return 0 if all(result.seconds is not None for *_, result in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
