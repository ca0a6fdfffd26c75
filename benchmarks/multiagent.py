"""Multi-agent training side by side: Tennis self-play, SoccerTwos POCA, PushBlockCollab POCA.

Tennis with self-play, SoccerTwos with MA-POCA and self-play, and PushBlockCollab with MA-POCA
against PPO and against ``mlagents-learn``.

Four parts, run one after another in this one invocation (``--concurrent``: the two ``collab``
contenders at the same time, each on its own game), on the same headless player and seed:

* ``tennis``: ``trainers/configs/Tennis_ppo.yaml`` (ML-Agents' ``config/ppo/Tennis.yaml``: PPO +
  self-play) on ``--scene Tennis`` for ``--tennis-steps`` agent steps (of the learning team), in
  one game of ``--tennis-areas`` courts (default: the scene's stock 18, which is what
  ``mlagents-learn`` gets from the executable, so both learn from as many courts; each court
  restarts on its own, as in Unity). One court per game (``--tennis-areas 1``, the figures before
  2026-11-29) made every learning step an exchange with the game: 3.5 to 4.5 times the wall time
  of 18 courts.
  Printed: ``Self-play/ELO`` at every summary (TensorBoard, under the run's ``Tennis/`` folder),
  then the point-win rate of the exported ``Tennis.onnx`` against a uniformly random policy over
  ``--eval-episodes`` points (:mod:`benchmarks.policy_eval`; goal >= 90%).
* ``soccer``: ML-Agents' ``config/poca/SoccerTwos.yaml`` (POCA + self-play; built below as
  :data:`SOCCER_TWOS_POCA`) on ``--scene SoccerTwos`` for ``--soccer-steps`` steps, with
  ``--soccer-envs`` game processes (default 1) of ``--soccer-areas`` fields each (default: the
  scene's stock 8, as Unity's scene; each field restarts on its own; the figures before
  2026-11-29 came from ``--soccer-envs 4 --soccer-areas 1``, 1.8 times the wall time), its
  updates in
  ``--soccer-precision`` (``unity-train --torch-precision``). Printed: the
  ELO at every summary, then the win rate of the exported ``SoccerTwos.onnx`` team against a
  random team over ``--eval-episodes`` games (a game ends at a goal or after the scene's 5000
  steps, a draw; goal >= 80% of all games won).
* ``collab``: ``trainers/configs/PushBlockCollab_poca.yaml`` (ML-Agents'
  ``config/poca/PushBlockCollab.yaml``) against ``trainers/configs/PushBlockCollab_ppo.yaml`` (the
  same hyperparameters, PPO on each agent's reward plus its group's reward), ``--collab-steps``
  steps each on ``--scene PushBlockCollab``. The figure of each is the mean over its last
  ``--tail`` summaries of: for POCA, ``Environment/Group Cumulative Reward`` (TensorBoard: the
  group rewards summed over each group episode); for PPO, the summary line's mean reward (each
  agent's cumulative reward per episode, which holds the group rewards since PushBlockCollab
  has no reward of an agent's own; every member of a group gets the same, so it is the group's
  sum too). Goal: POCA higher.
* ``speed``: the wall time from launch to the first summary with mean group reward >=
  ``--target`` on the POCA config (``max_steps`` as bundled), ``unity-train`` vs the official
  ``mlagents-learn`` 1.1.0 in the reference peer venv, one game process of the same
  PushBlockCollab executable (goal: ratio <= 0.5; ``mlagents-learn`` stops at twice
  ``unity-train``'s time plus 60 s, see :func:`benchmarks.trainer_runs.race_mlagents_learn`).

Besides ``max_steps``, :func:`benchmarks.trainer_runs.with_max_steps` changes ``summary_freq``
(a twentieth of the budget) in the trained configs; nothing else. ``--inference sampled`` has
the trained policy play its sampled actions in the evaluation games, as Unity's inference does
by default (``BehaviorParameters.DeterministicInference`` off), instead of its deterministic
ones. ``--random-baseline`` also plays the evaluation games random against random (about 50%
wins in Tennis; in SoccerTwos about as many wins as losses, most games drawn).
``--mlagents-learn`` (``tennis`` and ``soccer``): the official ``mlagents-learn`` 1.1.0 (reference
peer venv) also trains the same config for the same steps with the same seed, on one
executable of the same player scene, and its exported ONNX plays the same games against random
(:mod:`benchmarks.policy_eval` reads ML-Agents' exporter's tensor names as they are); its
win rate is printed per seed, for comparison, without a goal of its own.

``--workdir DIR`` keeps the runs in ``DIR`` instead of a temporary folder: the same command
with the same folder continues a run stopped before its budget (Ctrl-C saves it; a temporary
folder holding one is kept and named) and reuses a complete one, so a long budget can be
trained over several sittings (:func:`benchmarks.trainer_runs.train`).

Usage::

    python -m benchmarks.multiagent [--only tennis|soccer|collab|speed ...]
        [--tennis-steps 500000] [--tennis-areas 18]
        [--soccer-steps 1000000] [--soccer-envs 1] [--soccer-areas 8]
        [--soccer-precision float32|bf16-mixed]
        [--collab-steps 500000]
        [--eval-episodes 100] [--random-baseline] [--inference deterministic|sampled]
        [--target 0.0]
        [--time-limit 1800] [--seeds 1 2 3 | --seed 1] [--tail 3] [--concurrent] [--workdir DIR]
        [--mlagents-learn]

``--seeds 1 2 3`` runs every chosen part once per seed, each seed in ``<workdir>/seed<N>``
(``--seed N``: one seed), and prints each figure per seed with its median, its worst seed and
their spread (:mod:`benchmarks.seeds`); a goal is met when the median AND the worst seed meet
it.

Exit status 0 when the median and the worst seed of every figure of every part that ran met
its goal, 1 otherwise, 2 when a part could not run (the reference peer is unavailable; the
reason is printed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, get_args

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.mlagents_learn_3dball import ensure_onnx  # noqa: E402
from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv  # noqa: E402
from benchmarks.policy_eval import MatchRecord, play_against_random  # noqa: E402
from benchmarks.seeds import Figure, Goal  # noqa: E402
from benchmarks.trainer_runs import (  # noqa: E402
    GROUP_REWARD,
    add_common_arguments,
    mean_of_last,
    race_mlagents_learn,
    run_parts,
    scalar_series,
    train,
    train_all,
    train_mlagents_learn,
    with_max_steps,
)
from trainers.settings import Precision  # noqa: E402
from unity_gym.registration import scene_area_count  # noqa: E402

__all__ = ["PARTS", "SOCCER_TWOS_POCA", "main"]

CONFIGS = REPO_ROOT / "trainers" / "configs"
TENNIS_CONFIG = CONFIGS / "Tennis_ppo.yaml"
COLLAB_POCA_CONFIG = CONFIGS / "PushBlockCollab_poca.yaml"
COLLAB_PPO_CONFIG = CONFIGS / "PushBlockCollab_ppo.yaml"
PARTS = ("tennis", "soccer", "collab", "speed")
ELO = "Self-play/ELO"
#: ML-Agents' ``config/poca/SoccerTwos.yaml``.
SOCCER_TWOS_POCA: dict[str, Any] = {
    "behaviors": {
        "SoccerTwos": {
            "trainer_type": "poca",
            "hyperparameters": {
                "batch_size": 2048, "buffer_size": 20480, "learning_rate": 3.0e-4, "beta": 5.0e-3,
                "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3, "learning_rate_schedule": "constant",
            },
            "network_settings": {
                "normalize": False, "hidden_units": 512, "num_layers": 2,
                "vis_encode_type": "simple",
            },
            "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
            "keep_checkpoints": 5,
            "max_steps": 50_000_000,
            "time_horizon": 1000,
            "summary_freq": 10000,
            "threaded": False,
            "self_play": {
                "save_steps": 50000, "team_change": 200000, "swap_steps": 2000, "window": 10,
                "play_against_latest_model_ratio": 0.5, "initial_elo": 1200.0,
            },
        }
    }
}  # fmt: skip


def _print_elo(run_dir: Path) -> None:
    """Print ``Self-play/ELO`` at every summary of the run, five to a line."""
    points = scalar_series(run_dir, ELO)
    print(f"  ELO over training ({len(points)} summaries; step: ELO):")
    for start in range(0, len(points), 5):
        row = points[start : start + 5]
        print("    " + "   ".join(f"{point.step:>8d}: {point.value:7.1f}" for point in row))


def _evaluate(
    args: argparse.Namespace,
    scene: str,
    model: Path,
    goal: float,
    what: str,
    with_baseline: bool = True,
) -> MatchRecord:
    """Print (and return) the trained team's record against a random team, and the random
    baseline when asked (``--random-baseline``, unless ``with_baseline`` is False)."""
    sampled = args.inference == "sampled"
    record = play_against_random(scene, model, args.eval_episodes, args.seed, sampled=sampled)
    print(
        f"  trained ({args.inference} actions) vs random, {args.eval_episodes} {what}: {record} "
        f"(goal >= {goal:.0%})"
    )
    if args.random_baseline and with_baseline:
        baseline = play_against_random(scene, None, args.eval_episodes, args.seed)
        print(f"  random vs random, {args.eval_episodes} {what}: {baseline}")
    return record


def _self_play(
    args: argparse.Namespace,
    workdir: Path,
    config: dict[str, Any],
    scene: str,
    steps: int,
    what: str,
    goal: float,
    flags: Sequence[str] = (),
) -> list[Figure] | None:
    """Train ``config`` on ``scene`` for ``steps``, print its ELO and its record against a
    random team; the figure is the win rate (goal: at least ``goal``). With
    ``--mlagents-learn``, the official ``mlagents-learn`` then trains the same config on the same
    player scene (one executable, ``--num-envs 1``) and seed, and its exported model plays the
    same games: its win rate is a figure for information. None (printed) when
    ``--mlagents-learn`` is asked and the reference peer venv is unavailable."""
    if args.mlagents_learn:
        try:
            ensure_onnx(ensure_peer_venv(learn=True))
        except PeerUnavailableError as error:
            print(f"\n{scene}: not run: mlagents-learn asked, reference peer unavailable: {error}")
            return None
    name = scene.lower()
    train(with_max_steps(config, steps), name, workdir, ["--scene", scene, *flags], args.seed)
    run_dir = workdir / "results" / name
    print(f"\n{scene}, {steps} steps, seed {args.seed}")
    _print_elo(run_dir)
    record = _evaluate(args, scene, run_dir / f"{scene}.onnx", goal, what)
    met = record.win_rate >= goal
    print(f"  goal: win rate >= {goal:.0%} -> {'met' if met else 'not met'}")
    figures = [Figure(f"{scene} win rate vs random", record.win_rate, Goal(goal))]
    if args.mlagents_learn:
        theirs = _mlagents_learn_self_play(args, workdir, config, scene, steps, what, goal)
        figures.append(Figure(f"{scene} win rate vs random (mlagents-learn)", theirs))
    return figures


def _mlagents_learn_self_play(
    args: argparse.Namespace,
    workdir: Path,
    config: dict[str, Any],
    scene: str,
    steps: int,
    what: str,
    goal: float,
) -> float:
    """Train ``config`` with ``mlagents-learn`` (run ``<scene>-mlagents-learn`` in ``workdir``,
    continued as :func:`benchmarks.trainer_runs.train` continues its runs) on one executable of
    ``scene`` and return its exported policy's win rate against a random team.

    ML-Agents' exporter names its tensors as ``unity-train``'s does (inputs ``obs_<i>``, outputs
    ``continuous_actions`` / ``deterministic_continuous_actions`` and the discrete ones); the
    ``action_masks`` and ``recurrent_in`` inputs it declares are left out of the file when the
    policy does not use them (feed-forward continuous control, as Tennis), so
    :class:`benchmarks.policy_eval.OnnxPolicy` plays it as it is."""
    name = f"{scene.lower()}-mlagents-learn"
    train_mlagents_learn(with_max_steps(config, steps), scene, name, workdir, args.seed)
    run_dir = workdir / "results" / name
    print(f"\n{scene} (mlagents-learn 1.1.0), {steps} steps, seed {args.seed}")
    _print_elo(run_dir)
    record = _evaluate(args, scene, run_dir / f"{scene}.onnx", goal, what, with_baseline=False)
    return record.win_rate


def tennis(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``tennis``: the trained policy's point-win rate (goal: at least 90%)."""
    config = yaml.safe_load(TENNIS_CONFIG.read_text(encoding="utf-8"))
    flags = ["--num-areas", str(args.tennis_areas or scene_area_count("Tennis"))]
    return _self_play(args, workdir, config, "Tennis", args.tennis_steps, "points", 0.9, flags)


def soccer(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``soccer``: the trained team's game-win rate (goal: at least 80%)."""
    fields = args.soccer_areas or scene_area_count("SoccerTwos")
    flags = ["--num-envs", str(args.soccer_envs), "--num-areas", str(fields)]
    if args.soccer_precision != "float32":  # the flags of runs kept in a --workdir stay valid
        flags += ["--torch-precision", args.soccer_precision]
    return _self_play(
        args, workdir, SOCCER_TWOS_POCA, "SoccerTwos", args.soccer_steps, "games", 0.8, flags
    )


def collab(args: argparse.Namespace, workdir: Path) -> list[Figure]:
    """Part ``collab``: POCA's mean group reward minus PPO's (goal: above 0), and each."""
    poca_config = yaml.safe_load(COLLAB_POCA_CONFIG.read_text(encoding="utf-8"))
    ppo_config = yaml.safe_load(COLLAB_PPO_CONFIG.read_text(encoding="utf-8"))
    runs = [
        ("collab-poca", with_max_steps(poca_config, args.collab_steps)),
        ("collab-ppo", with_max_steps(ppo_config, args.collab_steps)),
    ]
    flags = ["--scene", "PushBlockCollab"]
    output = train_all(runs, workdir, flags, args.seed, args.concurrent)[1]
    points = scalar_series(workdir / "results" / "collab-poca", GROUP_REWARD)[-args.tail :]
    poca = sum(point.value for point in points) / len(points) if points else float("nan")
    ppo, ppo_count = mean_of_last(output, "PushBlockCollab", args.tail)
    print(f"\nPushBlockCollab, {args.collab_steps} steps each, seed {args.seed}")
    print(f"  poca  mean group reward (last {len(points)} summaries, TensorBoard) {poca:+.3f}")
    print(f"  ppo   mean episode reward (last {ppo_count} summaries)             {ppo:+.3f}")
    higher = poca > ppo
    print(f"  goal: POCA higher -> {'met' if higher else 'not met'}")
    return [
        Figure("PushBlockCollab POCA minus PPO", poca - ppo, Goal(0.0, strict=True)),
        Figure("PushBlockCollab POCA group reward", poca),
        Figure("PushBlockCollab PPO reward", ppo),
    ]


def speed(args: argparse.Namespace, workdir: Path) -> list[Figure] | None:
    """Part ``speed``: ``unity-train`` POCA's time to ``--target`` over ``mlagents-learn``'s
    (goal: at most 0.5); None when the reference peer is unavailable."""
    config = yaml.safe_load(COLLAB_POCA_CONFIG.read_text(encoding="utf-8"))
    return race_mlagents_learn(
        config,
        "PushBlockCollab",
        "PushBlockCollab",
        args.target,
        args.time_limit,
        args.seed,
        workdir,
        group_reward=True,
    )


def _area_count(what: str, scene: str) -> Callable[[str], int]:
    """The parser of an option that counts ``what`` (courts, fields) of ``scene``: a whole
    number of at least 1."""

    def parse(text: str) -> int:
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            stock = scene_area_count(scene)
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number of {what}: give a whole number of at least 1 "
                f"(or leave the option out for the scene's stock {stock})"
            )
        return count

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts and print their results side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser, PARTS)
    parser.add_argument("--tennis-steps", type=int, default=500_000)
    parser.add_argument(
        "--tennis-areas",
        type=_area_count("courts", "Tennis"),
        default=None,
        help="Tennis courts in the game unity-train trains on (default: the scene's stock 18)",
    )
    parser.add_argument("--soccer-steps", type=int, default=1_000_000)
    parser.add_argument("--soccer-envs", type=int, default=1, help="SoccerTwos game processes")
    parser.add_argument(
        "--soccer-areas",
        type=_area_count("fields", "SoccerTwos"),
        default=None,
        help="SoccerTwos fields in each game (default: the scene's stock 8)",
    )
    parser.add_argument(
        "--soccer-precision",
        choices=get_args(Precision),
        default="float32",
        help="precision of the SoccerTwos updates (unity-train --torch-precision)",
    )
    parser.add_argument("--collab-steps", type=int, default=500_000)
    parser.add_argument("--eval-episodes", type=int, default=100, help="games vs random")
    parser.add_argument("--random-baseline", action="store_true", help="also play random vs random")
    parser.add_argument(
        "--mlagents-learn",
        action="store_true",
        help=(
            "tennis and soccer: also train the same config with mlagents-learn 1.1.0 (reference "
            "peer venv) on the same scene and seed, and play its model against random"
        ),
    )
    parser.add_argument(
        "--inference",
        choices=("deterministic", "sampled"),
        default="deterministic",
        help="the trained policy's actions in the games vs random (sampled: Unity's default)",
    )
    parser.add_argument(
        "--target", type=float, default=0.0, help="PushBlockCollab mean group reward (speed)"
    )
    args = parser.parse_args(argv)
    return run_parts(
        {"tennis": tennis, "soccer": soccer, "collab": collab, "speed": speed}, args, "multiagent-"
    )


if __name__ == "__main__":
    sys.exit(main())
