"""``unity-train``: train PPO, SAC or POCA (or a plugin's trainer) from an ML-Agents
configuration file.

Usage mirrors ``mlagents-learn``::

    unity-train config/3DBall_ppo.yaml --run-id ball  # the Unity Editor: press Play
    unity-train config/3DBall_ppo.yaml --env builds/3DBall --run-id ball --num-envs 4
    unity-train trainers/configs/3DBall_ppo.yaml --scene 3DBall --run-id ball
    unity-train trainers/configs/CartPole_ppo.yaml --gym-id CartPole-v1 --run-id cp
    unity-train --list-scenes  # the built-in scenes --scene takes, one line each

With no ``--env``, ``--scene`` nor ``--gym-id`` (and none in ``env_settings``), the game is the
Unity Editor, as with ``mlagents-learn``: the run listens on port 5004 (``--base-port``) and
trains once Play is pressed (see :mod:`trainers.envs`).

Command-line flags override the file's values (only flags actually given). Exit status: 0 on
success (also after Ctrl-C, once the models are saved), 2 for configuration or usage errors,
1 when the environment fails.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, get_args

from trainers.run_directory import RunLock
from trainers.settings import (
    ConfigError,
    Precision,
    RunOptions,
    load_config_file,
    parse_run_options,
)
from unity_gym.exceptions import UnityEnvironmentException, UnityException

__all__ = ["build_parser", "check_environment_choice", "list_scenes", "main", "options_from_args"]

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
        description="Train PPO, SAC or POCA (or a trainer type a plugin adds) on a Unity game, "
        "a built-in scene or a Gymnasium environment from an ML-Agents configuration file.",
        epilog="Built-in scenes for --scene: "
        + ", ".join(_scene_names())
        + " (unity-train --list-scenes describes each).",
        argument_default=argparse.SUPPRESS,
    )
    parser.add_argument("config", nargs="?", help="YAML configuration (ML-Agents format).")
    parser.add_argument(
        "--list-scenes",
        action="store_true",
        help="Print the built-in scenes --scene takes, one line each, and exit.",
    )
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
        "--scene",
        metavar="NAME",
        help="Built-in scene to train on (e.g. 3DBall; --list-scenes lists them all).",
    )
    env.add_argument("--gym-id", metavar="ID", help="Gymnasium environment id (e.g. CartPole-v1).")
    parser.add_argument(
        "--run-id", metavar="ID", help="Run name; results go to <results-dir>/<ID>."
    )
    # Not mutually exclusive: mlagents-learn 1.1.0 accepts every combination (see
    # _prioritize_resume_or_initialize and CheckpointSettings for what wins).
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Continue the run --run-id (with the seed it recorded, unless --seed is given).",
    )
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
        "--inference",
        action="store_true",
        help="Act with the trained policy of --run-id for max_steps steps without training or "
        "saving; statistics and logs go to <results-dir>/<ID>/inference-<time>/ and the run "
        "itself is left as it is (--resume is not needed).",
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
    parser.add_argument(
        "--num-areas",
        type=int,
        metavar="N",
        help=(
            "Training areas per game (default: the game as it is, a built-in scene with its "
            "stock areas). A built-in scene with several behaviors holds N areas; one with a "
            "single behavior N times its stock areas."
        ),
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="S",
        help="Random seed (-1: random; recorded in configuration.yaml, which --resume reuses).",
    )
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


def _scene_names() -> list[str]:
    """The built-in scenes' names (the headless player's scene registry)."""
    from unity_gym.player.scenes import scene_names

    return scene_names()


def _configs_dir() -> Path:
    """The folder of the configurations shipped with ``trainers`` (``trainers/configs``)."""
    return Path(__file__).resolve().parent / "configs"


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def list_scenes(stream: TextIO) -> None:
    """Write every built-in scene with one line about it (``unity-train --list-scenes``).

    Each line gives the scene's name (what ``--scene`` takes), the first line of its
    description and the shipped configurations named after it (``trainers/configs/<name>_*``).
    """
    from unity_gym.player.scenes import get_scene_class

    configs = _configs_dir()
    names = _scene_names()
    width = max((len(name) for name in names), default=0)
    stream.write("Built-in scenes (unity-train CONFIG --scene NAME):\n")
    for name in names:
        doc = (get_scene_class(name).__doc__ or "").strip()
        about = doc.splitlines()[0] if doc else ""
        shipped = sorted(path.name for path in configs.glob(f"{name}_*.yaml"))
        where = f" [{', '.join(shipped)}]" if shipped else ""
        stream.write(f"  {name:<{width}}  {about}{where}\n")
    stream.write(f"Configurations in brackets are in {_shown_path(configs)}{os.sep}.\n")


def check_environment_choice(options: RunOptions, given: dict[str, Any]) -> None:
    """Check the chosen scene or Unity build before anything starts, naming the flag.

    A ``--scene`` that is not a built-in scene (nor ``package.module:Class``) gets the
    closest built-in names (``--scene 3dbal``: did you mean 3DBall?); an ``--env`` path with no
    Unity build (as :func:`unity_gym.launcher.find_executable` looks for one) is refused with
    what to pass instead. The message names the command-line flag when it was given there, or
    the configuration key (``env_settings.scene`` / ``env_settings.env_path``) otherwise. Builds
    for the Ray backend are not checked here: they may exist only on the cluster's machines.

    Args:
        options: the resolved options.
        given: the flags given on the command line (``vars`` of the parsed arguments).

    Raises:
        ConfigError: the scene or build does not exist.
    """
    env = options.env_settings
    if env.scene is not None and ":" not in env.scene:
        names = _scene_names()
        if env.scene.lower() not in {name.lower() for name in names}:
            flag = "--scene" if "scene" in given else "env_settings.scene"
            by_lower = {name.lower(): name for name in names}
            close = [
                by_lower[match]
                for match in difflib.get_close_matches(env.scene.lower(), list(by_lower), n=3)
            ]
            hint = f" Did you mean {' or '.join(close)}?" if close else ""
            raise ConfigError(
                f"{flag} {env.scene}: no built-in scene has this name.{hint} Built-in scenes: "
                f"{', '.join(names)} (unity-train --list-scenes describes them); a scene of "
                "your own is given as package.module:ClassName, a Unity build with --env PATH."
            )
    if env.env_path is not None and env.backend != "ray":
        from unity_gym.launcher import find_executable

        flag = "--env" if "env_path" in given else "env_settings.env_path"
        try:
            find_executable(env.env_path)
        except UnityEnvironmentException:
            raise ConfigError(
                f"{flag} {env.env_path}: no Unity build there (looked for "
                f"{Path(env.env_path).expanduser().absolute()} and its .x86_64/.x86/.app/.exe "
                "forms). Give the path of a built player (python -m unity_gym.player.build "
                "--scene 3DBall --output builds/ writes builds/3DBall.x86_64), use --scene "
                "NAME for a built-in scene, or leave out --env to train in the Unity Editor."
            ) from None


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
    given = vars(args)
    if given.pop("list_scenes", False):
        try:
            list_scenes(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped early (``| head``): no traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        return 0
    try:
        options = options_from_args(args)
        _configure_logging(options.debug)
        check_environment_choice(options, given)
        checkpoints = options.checkpoint_settings
        if not checkpoints.inference:  # a run in use is refused before the heavy imports
            RunLock.ensure_free(checkpoints.run_dir, checkpoints.run_id)
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
