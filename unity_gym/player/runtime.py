"""The player process: connect to the trainer (or not), build the Academy and step until quitting.

Without a trainer the scene's heuristic acts, or ONNX models (``--model``, see
:mod:`unity_gym.player.onnx_policy`) for the behaviors given one; ``--record-demo`` and
``--record-video`` (:mod:`unity_gym.player.video`) record the play.

The player quits as a Unity player does when the trainer answers with status 400, disappears or
sends QUIT (exit code 0, nothing sent back). It also quits after ``max_steps`` Academy steps, once
a recording is complete, and
on SIGTERM/SIGINT (sending the header-400 goodbye first, exit code 0) and, when started with a
port, once the process that launched it is gone. A configuration error exits with 2, a failure of
the scene with 1.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from unity_gym.protocol.communicator_objects.unity_rl_initialization_output_pb2 import (
    UnityRLInitializationOutputProto,
)

from .academy import Academy
from .capabilities import Capabilities
from .connection import (
    ACADEMY_NAME,
    COMMUNICATION_VERSION,
    PACKAGE_VERSION,
    TrainerConnection,
)
from .demo_recorder import RecordingAcademy
from .errors import PlayerError, SceneError
from .onnx_policy import BehaviorModel
from .pacing import Pacer
from .profiling import StepProfiler
from .scenes import Scene, get_scene_class
from .side_channels import SideChannelHub, StandardChannels
from .video import VideoRecorder, VideoSettings

__all__ = [
    "EXIT_CONFIG_ERROR",
    "EXIT_OK",
    "EXIT_SCENE_ERROR",
    "PlayerConfig",
    "create_scene",
    "initialization_output",
    "run_player",
]

logger = logging.getLogger("unity_gym.player")

EXIT_OK = 0
EXIT_SCENE_ERROR = 1
EXIT_CONFIG_ERROR = 2
PROFILE_REPORT_SECONDS = 10.0
PARENT_CHECK_SECONDS = 0.5


@dataclass(frozen=True)
class PlayerConfig:
    """Everything the command line decides.

    Args:
        scene: scene name (or ``module:Class``).
        port: trainer port; ``None`` plays without a trainer.
        seed: random seed used when no trainer gives one in the handshake.
        num_agents: agents of the stock scene (``None`` = the scene's default).
        options: scene options as strings.
        max_steps: stop after this many Academy steps (0 = unlimited).
        profile: time the phases of each step and log them periodically.
        realtime: pace steps by the engine settings instead of running flat out.
        connect_timeout: seconds to wait for the trainer to listen (0 = one attempt).
        communication_version: API version announced in the handshake (``1.5.0``; another
            value tests how a trainer copes, e.g. ``1.5.0-exp``).
        record_demo: write a ``.demo`` of the heuristic play here (needs ``port=None``).
        record_steps: agent steps to record into ``record_demo``.
        record_behavior: behavior to record (``None`` = the scene's only behavior).
        models: ``--model`` arguments (``PATH`` or ``BEHAVIOR=PATH``): ONNX models acting
            instead of the heuristic (needs ``port=None``).
        sampled: the models play their sampled actions rather than their deterministic ones.
        video: record a video of the play (needs ``port=None``).
    """

    scene: str
    port: int | None = None
    seed: int = 0
    num_agents: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    max_steps: int = 0
    profile: bool = False
    realtime: bool = False
    connect_timeout: float = 0.0
    communication_version: str = COMMUNICATION_VERSION
    record_demo: Path | None = None
    record_steps: int = 0
    record_behavior: str | None = None
    models: tuple[str, ...] = ()
    sampled: bool = False
    video: VideoSettings | None = None


class _Terminated(BaseException):
    """Raised from the SIGTERM handler to unwind the step loop."""


def initialization_output(
    communication_version: str = COMMUNICATION_VERSION,
) -> UnityRLInitializationOutputProto:
    """The game's handshake message: name, API ``communication_version`` (``1.5.0``), package
    ``3.0.0``, all capabilities."""
    return UnityRLInitializationOutputProto(
        name=ACADEMY_NAME,
        communication_version=communication_version,
        package_version=PACKAGE_VERSION,
        capabilities=Capabilities().to_proto(),
    )


def create_scene(config: PlayerConfig) -> Scene:
    """Instantiate the configured scene.

    Raises:
        PlayerError: on an unknown scene, bad options or an impossible agent count.
    """
    scene_class = get_scene_class(config.scene)
    return scene_class(config.options, num_agents=config.num_agents)


@contextmanager
def _termination_signals() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_player(config: PlayerConfig, *, handle_signals: bool = True) -> int:
    """Run the player until it quits; returns the process exit code.

    Args:
        config: what to run.
        handle_signals: turn SIGTERM/SIGINT into a clean quit (main thread only).
    """
    try:
        if config.port is not None:
            for given, flag in (
                (config.record_demo, "--record-demo"),
                (config.models, "--model"),
                (config.video, "--record-video"),
            ):
                if given:
                    raise PlayerError(
                        f"{flag} is for play without a trainer (the trainer decides the actions "
                        "when it is connected); drop --mlagents-port"
                    )
        if config.video is not None:
            config.video.check()
        scene = create_scene(config)
        models = _load_models(scene, config)
    except PlayerError as exc:
        logger.error("%s", exc)
        return EXIT_CONFIG_ERROR
    if handle_signals:
        with _termination_signals():
            return _run(scene, config, models)
    return _run(scene, config, models)


def _load_models(scene: Scene, config: PlayerConfig) -> dict[str, BehaviorModel]:
    """The ``--model`` models by behavior, loaded and checked against the scene's behaviors."""
    if not config.models:
        return {}
    from .onnx_policy import assign_models, load_models

    behaviors = scene.behaviors()
    models = load_models(assign_models(config.models, behaviors), behaviors, config.sampled)
    for behavior, model in models.items():
        logger.info(
            "Behavior %s plays model %s (%s actions%s)",
            behavior,
            model.policy.path,
            "sampled" if model.policy.sampled else "deterministic",
            f", memory {model.policy.memory_size}" if model.policy.memory_size else "",
        )
    return models


def _run(scene: Scene, config: PlayerConfig, models: dict[str, BehaviorModel]) -> int:
    # A player launched for a trainer (--mlagents-port) never outlives its launcher, even when
    # the handshake failed and it plays heuristically. The launcher is noted before the
    # handshake: a trainer that dies during it must not leave the player adopted by init.
    launcher = os.getppid() if config.port is not None else None
    channels = StandardChannels.create()
    hub = SideChannelHub(channels.in_registration_order())
    profiler = StepProfiler(detailed=config.profile)
    connection: TrainerConnection | None = None
    exit_code = EXIT_OK
    reason = "finished"
    recording: RecordingAcademy | None = None
    video: VideoRecorder | None = None
    try:
        trainer = None
        seed, num_areas = config.seed, 1
        if config.port is not None:
            candidate = TrainerConnection(
                config.port,
                connect_timeout=config.connect_timeout,
                communication_version=config.communication_version,
            )
            handshake = candidate.handshake(initialization_output(config.communication_version))
            if handshake is not None:
                connection = candidate
                trainer = handshake.capabilities
                seed, num_areas = handshake.seed, handshake.num_areas
                # The first RESET only carries side channels; the Academy resets by itself.
                hub.process_incoming(handshake.first_input.side_channel)
        else:
            logger.info(
                "No --mlagents-port: playing with %s.",
                "the models given (the heuristic for other behaviors)"
                if models
                else "the built-in heuristic",
            )
        academy: Academy
        if config.record_demo is not None:
            academy = recording = RecordingAcademy(
                scene,
                demo_path=config.record_demo,
                record_steps=config.record_steps,
                record_behavior=config.record_behavior,
                channels=channels,
                hub=hub,
                seed=seed,
                num_areas=num_areas,
                profiler=profiler,
                deciders=models,
            )
        else:
            academy = Academy(
                scene,
                channels=channels,
                hub=hub,
                connection=connection,
                trainer=trainer,
                seed=seed,
                num_areas=num_areas,
                profiler=profiler,
                deciders=models,
            )
        if config.video is not None:
            video = VideoRecorder(config.video, scene, academy)
        logger.info(
            "Scene %s: %d agents in %d areas; behaviors %s; seed %d; %s",
            scene.name,
            academy.agent_count,
            academy.area_count,
            ", ".join(b.name for b in academy.batches),
            seed,
            "trainer connected" if connection else ("models" if models else "heuristic"),
        )
        reason = _step_until_quit(academy, scene, config, profiler, channels, launcher, video)
        if recording is not None:
            _finish_recording(recording)
            recording = None
        if video is not None:
            _finish_video(video)
            video = None
    except _Terminated as signal_name:
        reason = f"terminated by {signal_name}"
        try:
            if recording is not None:
                _finish_recording(recording)
        except PlayerError as exc:
            logger.error("%s", exc)
            exit_code = EXIT_CONFIG_ERROR
        recording = None
        try:
            if video is not None:
                _finish_video(video)
        except PlayerError as exc:
            logger.error("%s", exc)
            exit_code = EXIT_CONFIG_ERROR
        video = None
    except SceneError as exc:
        logger.error("scene failure: %s", exc)
        reason, exit_code = "scene failure", EXIT_SCENE_ERROR
    except PlayerError as exc:
        logger.error("%s", exc)
        reason, exit_code = "configuration error", EXIT_CONFIG_ERROR
    except Exception:
        logger.exception("unexpected failure")
        reason, exit_code = "unexpected failure", EXIT_SCENE_ERROR
    finally:
        if recording is not None:
            recording.discard_recording()
        if video is not None:
            video.discard()
        if connection is not None and connection.is_open:
            connection.close(notify=True)
    logger.info("Quitting: %s", reason)
    logger.info("%s", profiler.summary())
    return exit_code


def _finish_recording(recording: RecordingAcademy) -> None:
    summary = recording.finish_recording()
    logger.info(
        "Wrote demonstration %s (%s): %d agent steps, %d episodes, mean reward %.4g",
        summary.path,
        summary.name,
        summary.number_steps,
        summary.number_episodes,
        summary.mean_reward,
    )


def _finish_video(video: VideoRecorder) -> None:
    summary = video.finish()
    logger.info(
        "Wrote video %s: %d frames (%.1f s), %d Academy steps, %d episodes ended",
        summary.path,
        summary.frames,
        summary.seconds,
        summary.steps,
        summary.episodes,
    )


def _step_until_quit(
    academy: Academy,
    scene: Scene,
    config: PlayerConfig,
    profiler: StepProfiler,
    channels: StandardChannels,
    launcher: int | None,
    video: VideoRecorder | None = None,
) -> str:
    pacer = Pacer(channels.engine.settings, scene.fixed_delta_time) if config.realtime else None
    clock = time.perf_counter
    next_report = clock() + PROFILE_REPORT_SECONDS
    next_parent_check = clock() + PARENT_CHECK_SECONDS
    while True:
        start = clock()
        running = academy.environment_step()
        profiler.record_step(clock() - start)
        if not running:
            return academy.quit_reason or "the trainer closed the connection"
        if video is not None and video.capture():
            return f"recorded the video ({video.frames} frames)"
        if config.max_steps and academy.total_step_count >= config.max_steps:
            return f"reached --max-steps {config.max_steps}"
        if pacer is not None:
            pacer.wait()
        if config.profile and clock() >= next_report:
            logger.info("%s", profiler.summary())
            next_report = clock() + PROFILE_REPORT_SECONDS
        if launcher is not None and clock() >= next_parent_check:
            if os.getppid() != launcher:
                return "the launching process exited"
            next_parent_check = clock() + PARENT_CHECK_SECONDS
