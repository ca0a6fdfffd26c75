"""Intrinsic rewards and imitation, side by side: Pyramids with extrinsic only, curiosity and RND;
PushBlock with GAIL + behavioral cloning against PPO without demonstrations; and ``unity-train``
against ``mlagents-learn`` on the Pyramids curiosity config.

Three parts, each running its contenders one after another (``--concurrent``: at the same time,
each on its own game) in this one invocation, on the same headless player and seed:

* ``pyramids``: ML-Agents' ``config/ppo/Pyramids.yaml`` (curiosity; bundled as
  ``trainers/configs/Pyramids_ppo.yaml``), its ``PyramidsRND.yaml`` (the same with the ``rnd``
  signal in place of curiosity and without ``threaded``: :func:`pyramids_variants`), and the
  curiosity config with the extrinsic reward only, each for ``--pyramids-steps``
  agent steps. Printed: the mean reward of the last summaries (goal: both intrinsic variants
  clearly above extrinsic only, by at least 0.1). With ``--mlagents-learn`` the official
  ``mlagents-learn`` 1.1.0 then trains the RND and the curiosity variant on the same seed and one
  Pyramids executable (runs ``pyramids-rnd-mlagents-learn`` and
  ``pyramids-curiosity-mlagents-learn``, continued as the others are); their mean rewards are
  printed beside ours, for information: they tell "our trainer learns it" from "it is learnable
  at this budget".
* ``pushblock``: ML-Agents' ``config/imitation/PushBlock.yaml`` (GAIL + behavioral cloning from
  Unity's ``ExpertPushBlock.demo`` in ``../shared/data/demos``) against the same file without
  ``gail`` and ``behavioral_cloning``, each for at most ``--pushblock-steps`` steps. Printed: the
  step at which the mean reward of the last ``--tail`` summaries first reaches
  ``--pushblock-target`` (4; goal: fewer steps with the demonstrations).
* ``speed``: wall time from launch to the first summary with mean reward >= ``--target`` on the
  Pyramids curiosity config, ``unity-train`` vs the official ``mlagents-learn`` 1.1.0 in the
  reference peer venv, both launching the same Pyramids executable with one game process (goal:
  ratio <= 0.5). ``mlagents-learn`` stops after twice ``unity-train``'s time plus 60 s, which
  bounds the ratio when it has not reached the target by then
  (:func:`benchmarks.trainer_runs.race_mlagents_learn`).

Summaries come every twentieth of the step budget (``summary_freq`` is the only other change to
the configs besides ``max_steps`` and ``demo_path``; see
:func:`benchmarks.trainer_runs.with_max_steps`).

``--workdir DIR`` keeps the runs in ``DIR`` instead of a temporary folder: the same command
with the same folder continues a run stopped before its budget (Ctrl-C saves it; a temporary
folder holding one is kept and named) and reuses a complete one, so a long budget can be
trained over several sittings (:func:`benchmarks.trainer_runs.train`).

Usage::

    python -m benchmarks.intrinsic_imitation [--only pyramids|pushblock|speed ...]
        [--pyramids-steps 300000] [--pushblock-steps 300000] [--pushblock-target 4]
        [--target 0.0] [--time-limit 1800] [--seeds 1 2 3 | --seed 1] [--tail 3]
        [--concurrent] [--mlagents-learn] [--workdir DIR]

``--seeds 1 2 3`` runs every chosen part once per seed, each seed in ``<workdir>/seed<N>``
(``--seed N``: one seed), and prints each figure per seed with its median, its worst seed and
their spread (:mod:`benchmarks.seeds`); a goal is met when the median AND the worst seed meet
it.

Exit status 0 when the median and the worst seed of every figure met its goal, 1 otherwise, 2
when a part could not run (the reference peer or the demonstrations are unavailable; the reason
is printed).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.mlagents_learn_3dball import parse_summaries  # noqa: E402
from benchmarks.peer_venv import PeerUnavailableError  # noqa: E402
from benchmarks.seeds import Figure, Goal  # noqa: E402
from benchmarks.trainer_runs import (  # noqa: E402
    add_common_arguments,
    mean_of_last,
    race_mlagents_learn,
    run_parts,
    train_all,
    train_mlagents_learn,
    with_max_steps,
)

__all__ = ["PARTS", "main", "pushblock_imitation_config", "pyramids_variants", "steps_to"]

PYRAMIDS_CONFIG = REPO_ROOT / "trainers" / "configs" / "Pyramids_ppo.yaml"
DEMO = REPO_ROOT.parent / "shared" / "data" / "demos" / "ExpertPushBlock.demo"
PARTS = ("pyramids", "pushblock", "speed")
#: ML-Agents' ``config/ppo/PyramidsRND.yaml`` signal.
RND_SIGNAL = {
    "gamma": 0.99,
    "strength": 0.01,
    "learning_rate": 1.0e-4,
    "network_settings": {"hidden_units": 64, "num_layers": 3},
}


def pyramids_variants(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The curiosity config, its RND variant and its extrinsic-only variant.

    The RND variant is ML-Agents' ``config/ppo/PyramidsRND.yaml`` (apart from the budget): the
    curiosity config with the ``rnd`` signal in place of ``curiosity`` and without
    ``Pyramids.yaml``'s ``threaded: true`` (``PyramidsRND.yaml`` leaves it at its default,
    false). The extrinsic-only variant is the curiosity config without the curiosity signal.
    """
    variants: dict[str, dict[str, Any]] = {}
    for name, extra in (("curiosity", None), ("rnd", RND_SIGNAL), ("extrinsic", {})):
        out = yaml.safe_load(yaml.safe_dump(config))
        behavior = out["behaviors"]["Pyramids"]
        signals = behavior["reward_signals"]
        if extra is not None:
            signals.pop("curiosity")
            if extra:
                signals["rnd"] = dict(extra)
                behavior.pop("threaded", None)
        variants[name] = out
    return variants


def pushblock_imitation_config(demo: Path) -> dict[str, Any]:
    """ML-Agents' ``config/imitation/PushBlock.yaml`` with ``demo_path`` set to ``demo``."""
    behavior = {
        "trainer_type": "ppo",
        "hyperparameters": {
            "batch_size": 128, "buffer_size": 2048, "learning_rate": 3.0e-4, "beta": 0.01,
            "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3, "learning_rate_schedule": "linear",
        },
        "network_settings": {
            "normalize": False, "hidden_units": 256, "num_layers": 2, "vis_encode_type": "simple",
        },
        "reward_signals": {
            "extrinsic": {"gamma": 0.99, "strength": 1.0},
            "gail": {
                "gamma": 0.99, "strength": 0.01, "learning_rate": 3.0e-4, "use_actions": False,
                "use_vail": False, "demo_path": str(demo),
                "network_settings": {
                    "normalize": False, "hidden_units": 128, "num_layers": 2,
                    "vis_encode_type": "simple",
                },
            },
        },
        "keep_checkpoints": 5,
        "max_steps": 100000,
        "time_horizon": 64,
        "summary_freq": 60000,
        "behavioral_cloning": {
            "demo_path": str(demo), "steps": 50000, "strength": 1.0, "samples_per_update": 0,
        },
    }  # fmt: skip
    return {"behaviors": {"PushBlock": behavior}}


def steps_to(output: str, behavior: str, target: float, tail: int = 1) -> int | None:
    """The step of the first summary of ``behavior`` at which the mean reward of the last
    ``tail`` summaries is at least ``target`` (one lucky episode does not count)."""
    means: list[float] = []
    for line in output.splitlines():
        for summary in parse_summaries(line, behavior):
            means.append(summary.mean_reward)
            if len(means) >= tail and sum(means[-tail:]) / tail >= target:
                return summary.step
    return None


def pyramids(args: argparse.Namespace, workdir: Path) -> list[Figure]:
    """Part ``pyramids``: the smaller intrinsic variant's mean reward minus the extrinsic-only
    one's (goal: at least 0.1, clearly above), and each variant's."""
    config = yaml.safe_load(PYRAMIDS_CONFIG.read_text(encoding="utf-8"))
    config = with_max_steps(config, args.pyramids_steps)
    variants = pyramids_variants(config)
    runs = [(f"pyramids-{name}", variant) for name, variant in variants.items()]
    outputs = train_all(runs, workdir, ["--scene", "Pyramids"], args.seed, args.concurrent)
    rewards = {
        name: mean_of_last(output, "Pyramids", args.tail)
        for name, output in zip(variants, outputs, strict=True)
    }
    print(f"\nPyramids, {args.pyramids_steps} steps each, seed {args.seed}")
    for name, (reward, count) in rewards.items():
        print(f"  {name:10s} mean reward (last {count}) {reward:+.3f}")
    base = rewards["extrinsic"][0]
    met = all(rewards[name][0] >= base + 0.1 for name in ("curiosity", "rnd"))
    print(
        f"  goal: curiosity and RND clearly above extrinsic only -> {'met' if met else 'not met'}"
    )
    margin = min(rewards["curiosity"][0], rewards["rnd"][0]) - base
    figures = [
        Figure("Pyramids intrinsic minus extrinsic (the lower of the two)", margin, Goal(0.1)),
        *(Figure(f"Pyramids {name} reward", reward) for name, (reward, _) in rewards.items()),
    ]
    if args.mlagents_learn:
        figures += _pyramids_mlagents_learn(args, workdir, variants)
    return figures


def _pyramids_mlagents_learn(
    args: argparse.Namespace, workdir: Path, variants: dict[str, dict[str, Any]]
) -> list[Figure]:
    """``--mlagents-learn``: the official ``mlagents-learn`` trains the RND variant, then the
    curiosity one, on the same seed (runs ``pyramids-<variant>-mlagents-learn``); their mean
    rewards are figures for information (no goal). No figures (the reason printed) without the
    reference peer venv."""
    figures: list[Figure] = []
    for variant in ("rnd", "curiosity"):
        name = f"pyramids-{variant}-mlagents-learn"
        try:
            output = train_mlagents_learn(variants[variant], "Pyramids", name, workdir, args.seed)
        except PeerUnavailableError as error:
            print(f"\nPyramids: mlagents-learn not run, reference peer unavailable: {error}")
            return figures
        reward, count = mean_of_last(output, "Pyramids", args.tail)
        print(f"  mlagents-learn {variant:10s} mean reward (last {count}) {reward:+.3f}")
        figures.append(Figure(f"Pyramids {variant} reward (mlagents-learn)", reward))
    return figures


def pushblock(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``pushblock``: the steps to the target with the demonstrations over those without
    (goal: below 1; a run that did not reach it counts ``--pushblock-steps`` for PPO, a bound,
    and makes the ratio unmeasured for GAIL + BC), and each run's steps; None without the
    demonstration file."""
    if not DEMO.is_file():
        print(f"\npushblock: skipped, {DEMO} is absent")
        return None
    imitation = pushblock_imitation_config(DEMO)
    imitation = with_max_steps(imitation, args.pushblock_steps)
    plain = yaml.safe_load(yaml.safe_dump(imitation))
    behavior = plain["behaviors"]["PushBlock"]
    behavior.pop("behavioral_cloning")
    behavior["reward_signals"].pop("gail")
    runs = [("pushblock-gail+bc", imitation), ("pushblock-ppo", plain)]
    outputs = train_all(runs, workdir, ["--scene", "PushBlock"], args.seed, args.concurrent)
    reached = {
        name: steps_to(output, "PushBlock", args.pushblock_target, args.tail)
        for name, output in zip(("gail+bc", "ppo"), outputs, strict=True)
    }
    print(f"\nPushBlock, steps to mean reward {args.pushblock_target}, seed {args.seed}")
    for name, step in reached.items():
        shown = f"{step} steps" if step is not None else f"not within {args.pushblock_steps}"
        print(f"  {name:8s} {shown}")
    ours, plain_steps = reached["gail+bc"], reached["ppo"]
    met = ours is not None and (plain_steps is None or ours < plain_steps)
    print(f"  goal: fewer steps with the demonstrations -> {'met' if met else 'not met'}")
    ratio = math.nan if ours is None else ours / (plain_steps or args.pushblock_steps)
    return [
        Figure("PushBlock steps GAIL+BC / PPO", ratio, Goal(1.0, higher=False, strict=True)),
        Figure("PushBlock GAIL+BC steps", math.nan if ours is None else ours),
        Figure("PushBlock PPO steps", math.nan if plain_steps is None else plain_steps),
    ]


def speed(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``speed``: unity-train's time over mlagents-learn's (goal: at most 0.5); None when
    the reference peer is unavailable."""
    config = yaml.safe_load(PYRAMIDS_CONFIG.read_text(encoding="utf-8"))
    return race_mlagents_learn(
        config, "Pyramids", "Pyramids", args.target, args.time_limit, args.seed, workdir
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts and print their results side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser, PARTS)
    parser.add_argument("--pyramids-steps", type=int, default=300_000)
    parser.add_argument("--pushblock-steps", type=int, default=300_000)
    parser.add_argument("--pushblock-target", type=float, default=4.0)
    parser.add_argument("--target", type=float, default=0.0, help="Pyramids reward (speed)")
    parser.add_argument(
        "--mlagents-learn",
        action="store_true",
        help=(
            "pyramids: also train the RND and curiosity variants with mlagents-learn 1.1.0 "
            "(reference peer venv) on the same seed"
        ),
    )
    args = parser.parse_args(argv)
    return run_parts(
        {"pyramids": pyramids, "pushblock": pushblock, "speed": speed}, args, "intrinsic-imitation-"
    )


if __name__ == "__main__":
    sys.exit(main())
