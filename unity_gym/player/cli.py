"""Command line of the headless player, launched like a Unity build.

``python -m unity_gym.player --scene 3DBall --mlagents-port 5005 -nographics -batchmode
-logFile run.log`` (or the ``unity-gym-player`` console script). Unity-style flags are
case-insensitive; ``-logFile -`` (or none) logs to stdout. Unknown arguments are ignored with a
log line, as a Unity player ignores options it does not know.

Without a trainer: ``--model PATH.onnx`` (repeatable, or ``BEHAVIOR=PATH``) plays exported
policies instead of the heuristic, and ``--record-video PATH.gif`` (or ``.mp4``) records the play,
e.g. ``unity-gym-player --scene 3DBall --model results/run/3DBall.onnx --record-video ball.gif``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from unity_gym.player_process import PLAYER_BLAS_THREADS

from .connection import COMMUNICATION_VERSION
from .errors import PlayerError
from .runtime import EXIT_CONFIG_ERROR, PlayerConfig, run_player
from .scenes import Scene, get_scene_class, scene_names
from .video import DEFAULT_STEPS, VideoSettings, parse_size

__all__ = ["UnityFlags", "build_parser", "main", "parse_arguments", "split_unity_flags"]

logger = logging.getLogger("unity_gym.player")
LOG_FORMAT = "%(asctime)s [%(levelname)s] %(message)s"


@dataclass
class UnityFlags:
    """Standard Unity player options found on the command line."""

    batchmode: bool = False
    nographics: bool = False
    log_file: str | None = None
    ignored: list[str] = field(default_factory=list)


def split_unity_flags(argv: Sequence[str]) -> tuple[UnityFlags, list[str]]:
    """Take ``-batchmode``, ``-nographics`` and ``-logFile [path]`` out of ``argv``."""
    flags = UnityFlags()
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        lowered = token.lower()
        if lowered == "-batchmode":
            flags.batchmode = True
        elif lowered == "-nographics":
            flags.nographics = True
        elif lowered == "-logfile":
            following = argv[i + 1] if i + 1 < len(argv) else None
            if following is not None and (following == "-" or not following.startswith("-")):
                flags.log_file = following
                i += 1
            else:
                flags.log_file = "-"
        else:
            rest.append(token)
        i += 1
    return flags, rest


def build_parser() -> argparse.ArgumentParser:
    """The parser of the player's own options."""
    parser = argparse.ArgumentParser(
        prog="unity-gym-player",
        description="Headless stand-in for a Unity ML-Agents player build.",
        allow_abbrev=False,
        epilog="Unity flags: -batchmode, -nographics, -logFile PATH ('-' = stdout). "
        "Unknown arguments are ignored.",
    )
    parser.add_argument("--scene", help="scene to play (see --list-scenes)")
    parser.add_argument("--list-scenes", action="store_true", help="list scenes and exit")
    parser.add_argument("--mlagents-port", type=int, help="trainer port; absent = heuristic")
    parser.add_argument("--num-agents", type=int, help="agents of the stock scene")
    parser.add_argument("--seed", type=int, default=0, help="seed without a trainer (default 0)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="scene option (repeatable), e.g. --option step_time=0.002",
    )
    parser.add_argument(
        "--max-steps", type=int, default=0, help="quit after N Academy steps (0 = unlimited)"
    )
    parser.add_argument(
        "--record-demo",
        metavar="PATH",
        help="record the heuristic play of one behavior into PATH (.demo); needs --record-steps",
    )
    parser.add_argument(
        "--record-steps",
        type=int,
        metavar="N",
        help="agent steps (records) to write into --record-demo, then quit",
    )
    parser.add_argument(
        "--record-behavior",
        metavar="NAME",
        help="behavior to record (required when the scene has several)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="[BEHAVIOR=]PATH",
        help="ONNX policy acting instead of the heuristic (repeatable); a bare PATH plays the "
        "behavior named like the file (unity-train exports <Behavior>.onnx) or the only one",
    )
    parser.add_argument(
        "--sampled",
        action="store_true",
        help="models play their sampled actions (Unity's default inference) instead of their "
        "deterministic ones",
    )
    video = parser.add_argument_group("video (without a trainer)")
    video.add_argument(
        "--record-video",
        metavar="PATH",
        help="draw one training area into PATH (.gif; .mp4 with the video extra), then quit",
    )
    video.add_argument(
        "--video-steps",
        type=int,
        default=0,
        metavar="N",
        help=f"Academy steps to record (default {DEFAULT_STEPS}, or unlimited with "
        "--video-episodes)",
    )
    video.add_argument(
        "--video-episodes", type=int, default=0, metavar="N", help="episodes of the area to record"
    )
    video.add_argument(
        "--video-fps", type=float, default=25.0, metavar="F", help="frames per second (default 25)"
    )
    video.add_argument(
        "--video-every",
        type=int,
        default=0,
        metavar="K",
        help="Academy steps per frame (default: the scene's, 2 = real time at 25 fps)",
    )
    video.add_argument(
        "--video-area", type=int, default=0, metavar="A", help="training area to draw (default 0)"
    )
    video.add_argument(
        "--video-size",
        metavar="WxH",
        help="picture size in pixels (default: the scene's); a 30-row caption is added below",
    )
    parser.add_argument("--profile", action="store_true", help="time each phase of a step")
    parser.add_argument(
        "--realtime", action="store_true", help="pace steps like a Unity clock (time scale)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=0.0,
        help="seconds to wait for the trainer to listen (default: one attempt)",
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser.add_argument(
        "--communication-version",
        default=COMMUNICATION_VERSION,
        metavar="VERSION",
        help=f"API version announced in the handshake (default {COMMUNICATION_VERSION}); "
        "e.g. 1.5.0-exp to test a trainer's version tolerance",
    )
    return parser


def parse_arguments(
    argv: Sequence[str],
) -> tuple[argparse.Namespace, UnityFlags, list[str]]:
    """Parse ``argv``: the player's options, the Unity flags and the ignored leftovers."""
    flags, rest = split_unity_flags(argv)
    namespace, unknown = build_parser().parse_known_args(rest)
    return namespace, flags, unknown


def _configure_logging(log_file: str | None, level: str) -> list[logging.Handler]:
    """Log to ``log_file`` (stdout for ``None``/``-``); errors also go to stderr then."""
    handlers: list[logging.Handler] = []
    if log_file is None or log_file == "-":
        handlers.append(logging.StreamHandler(sys.stdout))
    else:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="w", encoding="utf-8"))
        errors = logging.StreamHandler(sys.stderr)
        errors.setLevel(logging.ERROR)
        handlers.append(errors)
    for handler in handlers:
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return handlers


def _list_scenes(out: TextIO) -> None:
    for name in scene_names():
        cls: type[Scene] = get_scene_class(name)
        out.write(f"{name}: {cls.summary}\n{cls.describe_options()}\n")


def _recording_problem(namespace: argparse.Namespace) -> str | None:
    """What is wrong with the ``--record-*`` options, or ``None``."""
    if namespace.record_demo is None:
        if namespace.record_steps is not None or namespace.record_behavior is not None:
            return "--record-steps and --record-behavior need --record-demo PATH"
        return None
    if namespace.record_steps is None:
        return "--record-demo needs --record-steps N (the agent steps to record, N >= 1)"
    if namespace.record_steps <= 0:
        return f"--record-steps must be at least 1, got {namespace.record_steps}"
    if namespace.mlagents_port is not None:
        return "--record-demo records heuristic play without a trainer; drop --mlagents-port"
    return None


def _video_settings(namespace: argparse.Namespace) -> VideoSettings | None:
    """The ``--record-video`` settings, or ``None``.

    Raises:
        PlayerError: on ``--video-*`` options without ``--record-video`` or a bad size.
    """
    if namespace.record_video is None:
        given = [
            flag
            for flag, value, default in (
                ("--video-steps", namespace.video_steps, 0),
                ("--video-episodes", namespace.video_episodes, 0),
                ("--video-fps", namespace.video_fps, 25.0),
                ("--video-every", namespace.video_every, 0),
                ("--video-area", namespace.video_area, 0),
                ("--video-size", namespace.video_size, None),
            )
            if value != default
        ]
        if given:
            raise PlayerError(f"{', '.join(given)} need --record-video PATH")
        return None
    return VideoSettings(
        path=Path(namespace.record_video),
        steps=namespace.video_steps,
        episodes=namespace.video_episodes,
        fps=namespace.video_fps,
        every=namespace.video_every,
        area=namespace.video_area,
        size=parse_size(namespace.video_size) if namespace.video_size else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m unity_gym.player``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    namespace, flags, unknown = parse_arguments(args)
    if namespace.list_scenes:
        try:
            _list_scenes(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped early (``| head``): no traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        return 0
    if not namespace.scene:
        sys.stderr.write(
            f"unity-gym-player: --scene is required; scenes: {', '.join(scene_names())}\n"
        )
        return EXIT_CONFIG_ERROR
    try:
        handlers = _configure_logging(flags.log_file, namespace.log_level)
    except OSError as exc:
        sys.stderr.write(f"unity-gym-player: cannot open -logFile {flags.log_file!r}: {exc}\n")
        return EXIT_CONFIG_ERROR
    try:
        logger.info("unity-gym-player %s", " ".join(args))
        logger.info(
            "numpy BLAS threads: %s",
            ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in PLAYER_BLAS_THREADS),
        )
        for token in unknown:
            logger.info("Ignoring unknown command-line argument %r", token)
        try:
            options = Scene.parse_option_pairs(namespace.option)
            video = _video_settings(namespace)
            if namespace.sampled and not namespace.model:
                raise PlayerError("--sampled chooses how --model plays; give --model PATH")
        except PlayerError as exc:
            logger.error("%s", exc)
            return EXIT_CONFIG_ERROR
        problem = _recording_problem(namespace)
        if problem:
            logger.error("%s", problem)
            return EXIT_CONFIG_ERROR
        config = PlayerConfig(
            scene=namespace.scene,
            port=namespace.mlagents_port,
            seed=namespace.seed,
            num_agents=namespace.num_agents,
            options=options,
            max_steps=max(0, namespace.max_steps),
            profile=namespace.profile,
            realtime=namespace.realtime,
            connect_timeout=namespace.connect_timeout,
            communication_version=namespace.communication_version,
            record_demo=Path(namespace.record_demo) if namespace.record_demo else None,
            record_steps=namespace.record_steps or 0,
            record_behavior=namespace.record_behavior,
            models=tuple(namespace.model),
            sampled=namespace.sampled,
            video=video,
        )
        return run_player(config)
    finally:
        for handler in handlers:
            handler.flush()
            logger.removeHandler(handler)
            handler.close()
