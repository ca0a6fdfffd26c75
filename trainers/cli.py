"""``unity-train``: train PPO/SAC from an ML-Agents configuration file.

Usage mirrors ``mlagents-learn``::

    unity-train config/3DBall_ppo.yaml --run-id ball  # the Unity Editor: press Play
    unity-train config/3DBall_ppo.yaml --env builds/3DBall --run-id ball --num-envs 4
    unity-train trainers/configs/3DBall_ppo.yaml --scene 3DBall --run-id ball
    unity-train trainers/configs/CartPole_ppo.yaml --gym-id CartPole-v1 --run-id cp

With no ``--env``, ``--scene`` nor ``--gym-id`` (and none in ``env_settings``), the game is the
Unity Editor, as with ``mlagents-learn``: the run listens on port 5004 (``--base-port``) and
trains once Play is pressed (see :mod:`trainers.envs`).

Command-line flags override the file's values (only flags actually given). Exit status: 0 on
success (also after Ctrl-C, once the models are saved), 2 for configuration or usage errors,
1 when the environment fails.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, get_args

from trainers.settings import (
    ConfigError,
    Precision,
    RunOptions,
    load_config_file,
    parse_run_options,
)
from unity_gym.exceptions import UnityException

__all__ = ["build_parser", "main", "options_from_args"]

logger = logging.getLogger("trainers")

# Command-line destination -> (config section, key). ``None`` section = top level.
_OVERRIDES: dict[str, tuple[str | None, str]] = {
    "env_path": ("env_settings", "env_path"),
    "scene": ("env_settings", "scene"),
    "gym_id": ("env_settings", "gym_id"),
    "env_args": ("env_settings", "env_args"),
    "base_port": ("env_settings", "base_port"),
    "num_envs": ("env_settings", "num_envs"),
    "num_areas": ("env_settings", "num_areas"),
    "timeout_wait": ("env_settings", "timeout_wait"),
    "seed": ("env_settings", "seed"),
    "max_lifetime_restarts": ("env_settings", "max_lifetime_restarts"),
    "restarts_rate_limit_n": ("env_settings", "restarts_rate_limit_n"),
    "restarts_rate_limit_period_s": ("env_settings", "restarts_rate_limit_period_s"),
    "backend": ("env_settings", "backend"),
    "ray_address": ("env_settings", "ray_address"),
    "ray_game_cpus": ("env_settings", "ray_game_cpus"),
    "width": ("engine_settings", "width"),
    "height": ("engine_settings", "height"),
    "quality_level": ("engine_settings", "quality_level"),
    "time_scale": ("engine_settings", "time_scale"),
    "target_frame_rate": ("engine_settings", "target_frame_rate"),
    "capture_frame_rate": ("engine_settings", "capture_frame_rate"),
    "no_graphics": ("engine_settings", "no_graphics"),
    "no_graphics_monitor": ("engine_settings", "no_graphics_monitor"),
    "run_id": ("checkpoint_settings", "run_id"),
    "initialize_from": ("checkpoint_settings", "initialize_from"),
    "resume": ("checkpoint_settings", "resume"),
    "load_model": ("checkpoint_settings", "load_model"),
    "train_model": ("checkpoint_settings", "train_model"),
    "force": ("checkpoint_settings", "force"),
    "inference": ("checkpoint_settings", "inference"),
    "results_dir": ("checkpoint_settings", "results_dir"),
    "device": ("torch_settings", "device"),
    "precision": ("torch_settings", "precision"),
    "debug": (None, "debug"),
}
_ENV_SELECTORS = ("env_path", "scene", "gym_id")


class _RemovedFlag(argparse.Action):
    """A flag mlagents-learn 1.1.0 removed but still accepts (``--torch``, ``--tensorflow``):
    it takes no value, changes nothing and logs the same warning as ``mlagents-learn``."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        logger.warning("The command line argument %s was removed.", option_string)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every flag defaults to "not given", so the file's value stays)."""
    parser = argparse.ArgumentParser(
        prog="unity-train",
        description="Train PPO or SAC on a Unity game or a Gymnasium environment from an "
        "ML-Agents configuration file.",
        argument_default=argparse.SUPPRESS,
    )
    parser.add_argument("config", nargs="?", help="YAML configuration (ML-Agents format).")
    env = parser.add_argument_group(
        "environment (one of these)",
        "Without --env, --scene or --gym-id, unity-train trains in the Unity Editor as "
        "mlagents-learn does: it listens on port 5004 (or --base-port) and trains once Play is "
        "pressed in the Editor.",
    ).add_mutually_exclusive_group()
    env.add_argument(
        "--env",
        dest="env_path",
        metavar="PATH",
        help="Unity build to train on; 'gym:<id>' selects a Gymnasium environment.",
    )
    env.add_argument(
        "--scene", metavar="NAME", help="Built-in unity_gym scene to train on (e.g. 3DBall)."
    )
    env.add_argument("--gym-id", metavar="ID", help="Gymnasium environment id (e.g. CartPole-v1).")
    parser.add_argument(
        "--run-id", metavar="ID", help="Run name; results go to <results-dir>/<ID>."
    )
    # Not mutually exclusive: mlagents-learn 1.1.0 accepts every combination (see
    # _prioritize_resume_or_initialize and CheckpointSettings for what wins).
    parser.add_argument("--resume", action="store_true", help="Continue the run --run-id.")
    parser.add_argument(
        "--force", action="store_true", help="Overwrite the run --run-id if it exists."
    )
    parser.add_argument(
        "--initialize-from", metavar="ID", help="Start from the final model of run ID."
    )
    parser.add_argument("--load", dest="load_model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--train", dest="train_model", action="store_true", help=argparse.SUPPRESS)
    for removed in ("--torch", "--tensorflow"):
        parser.add_argument(
            removed,
            action=_RemovedFlag,
            help="(Removed) accepted and ignored with a warning, as mlagents-learn does.",
        )
    parser.add_argument(
        "--inference", action="store_true", help="Act with the policy without training."
    )
    parser.add_argument(
        "--deterministic", action="store_true", help="Act with the most likely actions."
    )
    parser.add_argument("--results-dir", metavar="DIR", help="Results folder (default: results).")
    parser.add_argument(
        "--num-envs",
        type=int,
        metavar="N",
        help="Unity: game processes; Gymnasium: environment copies (default 1; the Unity "
        "Editor: 1 only).",
    )
    parser.add_argument("--num-areas", type=int, metavar="N", help="Training areas per game.")
    parser.add_argument("--seed", type=int, metavar="S", help="Random seed (-1: random).")
    parser.add_argument(
        "--base-port",
        type=int,
        metavar="P",
        help="First port for Unity games (default: free ports; the Unity Editor: 5004).",
    )
    parser.add_argument(
        "--timeout-wait",
        type=int,
        metavar="S",
        help="Seconds to wait for a game (also for Play in the Unity Editor; default 60).",
    )
    parser.add_argument("--max-lifetime-restarts", type=int, metavar="N")
    parser.add_argument("--restarts-rate-limit-n", type=int, metavar="N")
    parser.add_argument("--restarts-rate-limit-period-s", type=int, metavar="S")
    where = parser.add_argument_group("where Unity games run")
    where.add_argument(
        "--backend",
        choices=("subprocess", "inprocess", "ray"),
        help="subprocess: a worker process per game; inprocess: a thread per game; ray: a Ray "
        "actor per game, anywhere in the cluster (default: inprocess for one game, subprocess "
        "for several).",
    )
    where.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to join (host:port, or 'auto'); default: join the local Ray "
        "instance if one runs, else start one.",
    )
    where.add_argument(
        "--ray-game-cpus",
        type=float,
        metavar="N",
        help="CPUs Ray reserves for each game (default 1; 0 places games without reserving).",
    )
    engine = parser.add_argument_group("engine configuration (Unity only)")
    engine.add_argument("--width", type=int)
    engine.add_argument("--height", type=int)
    engine.add_argument("--quality-level", type=int)
    engine.add_argument("--time-scale", type=float, metavar="T")
    engine.add_argument("--target-frame-rate", type=int)
    engine.add_argument("--capture-frame-rate", type=int)
    engine.add_argument("--no-graphics", action="store_true")
    engine.add_argument("--no-graphics-monitor", action="store_true")
    parser.add_argument(
        "--torch-device", dest="device", metavar="DEV", help="Torch device (cpu, cuda, ...)."
    )
    parser.add_argument(
        "--torch-precision",
        dest="precision",
        choices=get_args(Precision),
        help="float32 (default), or bf16-mixed: updates compute matrix products in bfloat16 "
        "(faster on CPUs with AMX or AVX-512 BF16, and on GPUs); acting stays float32.",
    )
    parser.add_argument("--debug", action="store_true", help="Verbose logging.")
    parser.add_argument(
        "--env-args",
        nargs=argparse.REMAINDER,
        metavar="ARG",
        help="Arguments passed to the Unity executable (must come last).",
    )
    return parser


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """Merge the configuration file with the given flags and validate the result.

    Raises:
        ConfigError: invalid file content or flag values.
    """
    given: dict[str, Any] = vars(args)
    data = load_config_file(given["config"]) if given.get("config") else {}
    for section in {section for section, _ in _OVERRIDES.values() if section}:
        if data.get(section) is None:
            data[section] = {}
        elif not isinstance(data[section], dict):
            raise ConfigError(f"{section}: expected a mapping, got {data[section]!r}.")
    if any(selector in given for selector in _ENV_SELECTORS):
        for selector in _ENV_SELECTORS:  # the command line's environment choice wins
            data["env_settings"].pop(selector, None)
    for dest, (target_section, key) in _OVERRIDES.items():
        if dest in given:
            destination = data[target_section] if target_section else data
            destination[key] = given[dest]
    if given.get("load_model"):  # mlagents-learn: resume = resume or load_model
        data["checkpoint_settings"]["resume"] = True
    _prioritize_resume_or_initialize(data["checkpoint_settings"], given)
    options = parse_run_options(data)
    if given.get("deterministic"):
        for settings in [*options.behaviors.values(), options.default_settings]:
            if settings is not None:
                settings.network_settings.deterministic = True
    return options


def _prioritize_resume_or_initialize(checkpoint: dict[str, Any], given: dict[str, Any]) -> None:
    """Resolve ``resume`` together with ``initialize_from`` as ``mlagents-learn`` 1.1.0 does
    (``CheckpointSettings.prioritize_resume_init``): the one given on the command line wins;
    when both come from the file (or both from the command line), resume wins. This function
    handles the case the file alone cannot: ``--initialize-from`` on the command line over a
    file's ``resume: true`` (``CheckpointSettings`` makes resume win otherwise).
    """
    resume_given = given.get("resume") or given.get("load_model")
    resume_in_file = checkpoint.get("resume") or checkpoint.get("load_model")
    if "initialize_from" in given and not resume_given and resume_in_file:
        logger.warning(
            "Both 'resume' (from the configuration file) and --initialize-from %s are set; "
            "run %s is initialized from %s and resume is ignored.",
            given["initialize_from"],
            checkpoint.get("run_id"),
            given["initialize_from"],
        )
        checkpoint["resume"] = False
        checkpoint["load_model"] = False


def _configure_logging(debug: bool) -> None:
    from trainers.common.bookkeeping.progress import ProgressAwareHandler

    root = logging.getLogger("trainers")
    for handler in list(root.handlers):
        if isinstance(handler, ProgressAwareHandler):
            root.removeHandler(handler)
    handler = ProgressAwareHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``unity-train``; returns the process exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    _configure_logging("--debug" in arguments)  # warnings of removed flags while parsing
    args = parser.parse_args(arguments)
    _configure_logging(bool(getattr(args, "debug", False)))
    try:
        options = options_from_args(args)
        _configure_logging(options.debug)
        from trainers.learn import run_training  # heavy imports (torch) only when training

        run_training(options, ["unity-train", *arguments])
    except ConfigError as exc:
        logger.error("%s", exc)
        return 2
    except UnityException as exc:
        logger.error("the environment failed: %s", exc)
        return 1
    except KeyboardInterrupt:
        logger.error("aborted (second Ctrl-C); the last saved checkpoint is intact.")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
