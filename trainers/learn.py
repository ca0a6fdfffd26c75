"""Assembles a training run from resolved options: run folder, environment, trainers, loop.

:func:`run_training` is what ``unity-train`` runs after parsing its arguments; it can be called
directly with a :class:`~trainers.settings.RunOptions`.

The run's seed: ``env_settings.seed`` (``--seed``) when given, else -1 picks one at random, as
``mlagents-learn`` 1.1.0 does (``learn.py``: ``np.random.randint(0, 10000)``). Unlike
``mlagents-learn``, which writes ``seed: -1`` into ``configuration.yaml`` and draws a new seed
on every ``--resume``, the seed actually used is written into ``configuration.yaml``, and
``--resume`` (or ``--inference`` on a trained run) without a seed of its own uses the seed the
run recorded there. A seed given explicitly (flag or file) wins, with a warning when it differs
from the recorded one.

``--inference`` acts with the trained policy for ``max_steps`` steps without training, saving or
touching the run: see :meth:`trainers.run_directory.RunDirectory.prepare_inference` for where its
outputs go and how it differs from ``mlagents-learn``'s ``--inference`` (which acts until
stopped).
"""

from __future__ import annotations

import logging
import os
import platform
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

import gymnasium
import numpy as np
import torch
import yaml

import unity_gym
from trainers.common.bookkeeping.progress import ProgressBar
from trainers.common.bookkeeping.stats import StatsPropertyType, StatsReporter, StatsWriter
from trainers.common.checkpoints.files import (
    LATEST_NAME,
    CheckpointManager,
    LoadedCheckpoint,
    TrainingStatus,
    atomic_write,
    load_checkpoint,
    load_newest_checkpoint,
)
from trainers.common.networks.precision import cpu_has_bf16_units
from trainers.common.optimization.update_threads import update_thread_limit
from trainers.common.trainer import Trainer, TrainerContext, check_checkpoint_state
from trainers.contract import BehaviorSlots
from trainers.curriculum import EnvironmentParameterManager
from trainers.env_manager import EnvManager
from trainers.envs import ParallelTrainingEnvironment, TrainingEnvironment, make_training_env
from trainers.ghost import GhostController, GhostTrainer
from trainers.plugins import stats_writers, trainer_class
from trainers.poca.trainer import POCATrainer
from trainers.ppo.trainer import PPOTrainer
from trainers.run_directory import RunDirectory, RunDirectoryError, behavior_dir_name
from trainers.sac.trainer import SACTrainer
from trainers.settings import ConfigError, Precision, RunOptions, TrainerSettings, companion_path
from trainers.trainer_controller import TrainerController
from unity_gym.timers import add_metadata, reset_timers, write_timer_tree

__all__ = ["TRAINER_TYPES", "configured_behavior_name", "resolve_behavior_name", "run_training"]

logger = logging.getLogger("trainers")

TRAINER_TYPES: dict[str, type[Trainer]] = {
    "ppo": PPOTrainer,
    "sac": SACTrainer,
    "poca": POCATrainer,
}
"""The built-in trainer types (plugins add others: :mod:`trainers.plugins`)."""


def run_training(
    options: RunOptions, command_line: Sequence[str], progress_stream: TextIO | None = None
) -> None:
    """Train as configured by ``options`` (blocking until done or interrupted).

    Args:
        options: the resolved configuration (see :func:`trainers.settings.parse_run_options`);
            its ``env_settings.seed`` is set to the seed the run uses (module documentation),
            which ``configuration.yaml`` records.
        command_line: recorded in ``timers.json`` metadata.
        progress_stream: where the progress bar draws (default stderr; drawn only on a TTY).

    Raises:
        ConfigError: invalid settings, run-folder conflicts, unusable environment or checkpoint.
    """
    start_wall = time.time()
    start = time.monotonic()
    reset_timers()
    _record_metadata(command_line, start_wall)
    device = _device(options.torch_settings.device)
    add_metadata("torch_device", str(device))
    _configure_threads(device)
    _announce_precision(options.torch_settings.precision, device)
    checkpoint_settings = options.checkpoint_settings
    trained: RunDirectory | None = None
    if checkpoint_settings.inference:
        if checkpoint_settings.force:
            logger.warning(
                "--force is ignored with --inference: inference never deletes or overwrites "
                "a run (its outputs go to a new inference-<time> folder of the run)."
            )
        other_source = checkpoint_settings.initialize_from is not None or any(
            settings.init_path is not None for settings in options.behaviors.values()
        )
        run, trained = RunDirectory.prepare_inference(
            checkpoint_settings, other_source=other_source
        )
    else:
        run = RunDirectory.prepare(checkpoint_settings)
        if checkpoint_settings.resume:
            trained = run
    try:
        seed = _run_seed(options, trained)
        options.env_settings.seed = seed  # recorded in configuration.yaml for --resume
        torch.manual_seed(seed)
        _train_in(run, trained, options, seed, device, start, progress_stream)
    finally:
        run.release()  # the run folder's lock (RunDirectory.prepare)


def _train_in(
    run: RunDirectory,
    trained: RunDirectory | None,
    options: RunOptions,
    seed: int,
    device: torch.device,
    start: float,
    progress_stream: TextIO | None,
) -> None:
    """The body of :func:`run_training`, in the prepared (and, for training, locked) ``run``;
    ``trained`` is the run whose weights are loaded, if any."""
    checkpoint_settings = options.checkpoint_settings
    writers = stats_writers(options, run.root, start)  # built-in, then plugins
    try:
        controller, training_env = _set_up(
            options, run, trained, seed, device, start, progress_stream, writers
        )
    except BaseException:
        _close_writers(writers)
        if checkpoint_settings.inference:
            run.discard_session(trained)
        else:
            run.discard_if_new(checkpoint_settings)  # nothing was trained
        raise
    try:
        with _stop_on_sigint(controller):
            controller.run()
    finally:
        try:
            _record_game_locations(training_env)  # where games ended up, after any relocation
            controller.close()
        finally:
            _close_writers(writers)
            add_metadata("end_time_seconds", str(int(time.time())))
            write_timer_tree(run.timers_path)


def _run_seed(options: RunOptions, trained: RunDirectory | None) -> int:
    """The run's seed (module documentation): the given one, else the one ``trained``
    recorded in its ``configuration.yaml``, else a random one in ``[0, 9999]``."""
    given = options.env_settings.seed
    recorded = _recorded_seed(trained.configuration_path) if trained is not None else None
    if given != -1:
        if recorded is not None and recorded != given:
            logger.warning(
                "Run '%s' was started with seed %d; this session uses seed %d as given "
                "(drop --seed, or set it to -1, to keep the run's seed).",
                options.checkpoint_settings.run_id,
                recorded,
                given,
            )
        return given
    if recorded is not None and trained is not None:
        logger.info("run seed: %d (the run's, from %s)", recorded, trained.configuration_path)
        return recorded
    seed = random.randint(0, 9999)
    logger.info("run seed: %d (set --seed to reproduce)", seed)
    return seed


def _recorded_seed(configuration: Path) -> int | None:
    """``env_settings.seed`` of a run's ``configuration.yaml``; ``None`` when the file is
    missing or unreadable or holds -1 (runs written before seeds were recorded)."""
    try:
        data = yaml.safe_load(configuration.read_text(encoding="utf-8"))
        seed = data["env_settings"]["seed"]
    except (OSError, ValueError, yaml.YAMLError, KeyError, TypeError):
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed == -1:
        return None
    return seed


def _close_writers(writers: Sequence[StatsWriter]) -> None:
    """Close every stats writer; one that fails is logged and the others still close."""
    for writer in writers:
        try:
            writer.close()
        except Exception:
            logger.exception("Closing stats writer %r failed.", writer)


def _set_up(
    options: RunOptions,
    run: RunDirectory,
    trained: RunDirectory | None,
    seed: int,
    device: torch.device,
    start: float,
    progress_stream: TextIO | None,
    writers: Sequence[StatsWriter],
) -> tuple[TrainerController, TrainingEnvironment | ParallelTrainingEnvironment]:
    """Write the run's configuration, create the environment and one trainer per behavior.

    ``run`` is where outputs go (an ``--inference`` session's own folder); ``trained`` is the
    trained run that ``--resume`` continues or ``--inference`` acts with (``None``: none).
    """
    official, companion = options.configuration_files()
    with atomic_write(run.configuration_path) as handle:
        handle.write(official.encode("utf-8"))
    with atomic_write(companion_path(run.configuration_path)) as handle:
        handle.write(companion.encode("utf-8"))
    restore = trained is not None
    status = TrainingStatus(trained.status_path if trained else run.status_path, _versions())
    if restore:
        status.load()  # checkpoint history and curriculum lessons of the trained run
    status.path = run.status_path  # an inference session writes its own copy
    status.save()
    curriculum = EnvironmentParameterManager(
        options.environment_parameters,
        seed,
        status,
        restore=restore,
    )
    for name in curriculum.curriculum_parameters:
        logger.info(
            "Parameter '%s' starts in lesson %d ('%s').",
            name,
            curriculum.lesson_numbers()[name],
            curriculum.lesson_name(name),
        )
    training_env = make_training_env(options, seed, run.run_logs, curriculum.current_env_params())
    try:
        if training_env.ray_cluster is not None:
            for index, location in enumerate(_record_game_locations(training_env)):
                logger.info("Game %d runs on %s.", index, location)
        manager = _make_manager(options, training_env)
    except BaseException:
        training_env.close()
        raise
    trainers: dict[str, Trainer] = {}
    ghosts = GhostController()  # the learning-team schedule of every self-play behavior
    try:
        for behavior, slots in manager.behaviors.items():
            settings = options.trainer_settings_for(behavior)
            trainer_name = settings.trainer_type.upper()
            if options.checkpoint_settings.inference:
                logger.info(
                    "Inference (no training, nothing saved): %s (%s, %d slot(s)) acts with its "
                    "%s policy for %d steps; statistics in %s",
                    behavior,
                    training_env.description,
                    slots.num_slots,
                    trainer_name,
                    settings.max_steps,
                    run.root,
                )
            else:
                logger.info(
                    "Training %s (%s, %d slot(s)) with %s; results in %s",
                    behavior,
                    training_env.description,
                    slots.num_slots,
                    trainer_name + (" + self-play" if settings.self_play else ""),
                    run.root,
                )
            trainer = _build_trainer(
                options, behavior, settings, slots, run, status, device, seed, start, writers
            )
            if settings.self_play is not None:
                trainer = _self_play_trainer(trainer, manager, ghosts)
            trainers[behavior] = trainer
        _check_self_play_teams(trainers, ghosts)
        for trainer in trainers.values():
            _load_initial_state(options, trainer, trained)
    except BaseException:
        try:
            for trainer in trainers.values():
                trainer.close()
        finally:
            manager.close()
        raise
    max_steps = max(trainer.settings.max_steps for trainer in trainers.values())
    controller = TrainerController(
        manager,
        trainers,
        run.root,
        {name: behavior_dir_name(name) for name in trainers},
        seed,
        ProgressBar(max_steps, progress_stream),
        curriculum,
    )
    return controller, training_env


def _record_game_locations(
    training_env: TrainingEnvironment | ParallelTrainingEnvironment,
) -> list[str]:
    """Where each game runs, also written to ``timers.json`` metadata (``game_locations``)."""
    try:
        locations = training_env.game_locations()
    except Exception:  # a closed or failed environment: keep what was recorded before
        return []
    if training_env.ray_cluster is not None:
        add_metadata("ray_cluster", training_env.ray_cluster.address)
    if locations:
        described = "; ".join(f"game {i}: {where}" for i, where in enumerate(locations))
        add_metadata("game_locations", described)
    return locations


def _make_manager(
    options: RunOptions, training_env: TrainingEnvironment | ParallelTrainingEnvironment
) -> EnvManager:
    """The env manager of ``training_env``, with the configuration key of each behavior."""
    if isinstance(training_env, ParallelTrainingEnvironment):
        return EnvManager.for_parallel_envs(
            training_env.envs,
            trainer_name=lambda candidates: (
                configured_behavior_name(options, candidates) or candidates[0]
            ),
            self_play=lambda name: options.trainer_settings_for(name).self_play is not None,
        )
    behavior = resolve_behavior_name(options, training_env)
    return EnvManager.for_vector_env(training_env.env, behavior)


def configured_behavior_name(options: RunOptions, candidates: Sequence[str]) -> str | None:
    """The first of ``candidates`` that is a key of ``behaviors``, if any."""
    return next((name for name in candidates if name in options.behaviors), None)


def resolve_behavior_name(options: RunOptions, training_env: TrainingEnvironment) -> str:
    """The configuration key of the environment's behavior.

    The first candidate found in ``behaviors`` wins. A Gymnasium environment has no behavior
    name of its own, so a config with exactly one behavior applies to it whatever its key.
    Otherwise the first candidate is used with ``default_settings`` (or ML-Agents' defaults).
    """
    candidates = training_env.behavior_candidates
    found = configured_behavior_name(options, candidates)
    if found is not None:
        return found
    from_gymnasium = options.env_settings.gym_id is not None
    if len(options.behaviors) == 1 and (from_gymnasium or not candidates):
        return next(iter(options.behaviors))
    if not candidates:
        raise ConfigError(
            "the environment did not report a behavior name; list exactly one behavior under "
            "'behaviors:'."
        )
    return candidates[0]


def _build_trainer(
    options: RunOptions,
    behavior: str,
    settings: TrainerSettings,
    slots: BehaviorSlots,
    run: RunDirectory,
    status: TrainingStatus,
    device: torch.device,
    seed: int,
    start: float,
    writers: Sequence[StatsWriter],
) -> Trainer:
    training = not options.checkpoint_settings.inference
    directory = run.behavior_dir(behavior)
    directory.mkdir(parents=True, exist_ok=True)
    stats = StatsReporter(behavior, directory, start, writers)
    stats.add_property(StatsPropertyType.HYPERPARAMETERS, options.to_yaml())
    checkpoints = None
    if training:
        checkpoints = CheckpointManager(
            directory, behavior_dir_name(behavior), settings.keep_checkpoints, status, behavior
        )
    context = TrainerContext(
        behavior_name=behavior,
        settings=settings,
        observation_layout=slots.observation_layout,
        action_layout=slots.action_layout,
        device=device,
        seed=seed,
        training=training,
        artifact_dir=directory,
        stats=stats,
        checkpoints=checkpoints,
        update_threads=update_thread_limit(device),
        precision=options.torch_settings.precision,
    )
    try:
        return trainer_class(settings.trainer_type)(context)
    except BaseException:
        stats.close()  # the trainer that would close it does not exist: stop its writer
        raise


def _self_play_trainer(trainer: Trainer, manager: EnvManager, ghosts: GhostController) -> Trainer:
    """Wrap ``trainer`` in a ghost trainer for self-play over its behavior's teams.

    Raises:
        ConfigError: the game has no teams (it does not come through the PettingZoo front), or
            a team is already played by another self-play behavior.
    """
    name = trainer.behavior_name
    if len(manager.teams) < 2:
        trainer.close()
        raise ConfigError(
            f"behaviors.{name}.self_play: this game has a single team (one behavior without "
            "'?team=' ids); self-play needs teams that play against each other. Remove the "
            "self_play section."
        )
    try:
        return GhostTrainer(trainer, manager.slot_teams[name], ghosts)
    except ValueError as exc:
        trainer.close()
        raise ConfigError(f"behaviors.{name}.self_play: {exc}") from exc
    except BaseException:
        trainer.close()
        raise


def _check_self_play_teams(trainers: dict[str, Trainer], ghosts: GhostController) -> None:
    """Self-play needs at least two teams over all its behaviors (ML-Agents: a behavior may
    play one team of an asymmetric game, another behavior the other).

    Raises:
        ConfigError: the self-play behaviors have a single team between them.
    """
    names = [name for name, trainer in trainers.items() if isinstance(trainer, GhostTrainer)]
    if names and len(ghosts.teams) < 2:
        raise ConfigError(
            f"behaviors.{names[0]}.self_play: the game has a single team "
            f"(team {ghosts.teams[0]}) for self-play; self-play needs at least two teams "
            "(behavior ids '<name>?team=<t>'). Remove the self_play section."
        )


def _load_initial_state(
    options: RunOptions, trainer: Trainer, trained: RunDirectory | None
) -> None:
    """Restore ``--resume`` / ``--initialize-from`` / ``init_path`` state into ``trainer``.

    ``--inference`` loads, in this order: the trained run's newest checkpoint with
    ``--resume``; else ``--initialize-from`` / ``init_path``; else the trained run's newest
    checkpoint (``mlagents-learn`` needs ``--resume`` for that). Its step count starts at 0.
    """
    checkpoint_settings = options.checkpoint_settings
    name = trainer.behavior_name
    inference = checkpoint_settings.inference
    from_run = checkpoint_settings.resume or (
        inference
        and checkpoint_settings.initialize_from is None
        and trainer.settings.init_path is None
    )
    if from_run and trained is not None:
        directory = trained.behavior_dir(name)
        if inference:  # act for max_steps steps with the saved model
            loaded = _read_newest(directory, name, "--inference")
            trainer.load_state_dict(loaded.state, restore_progress=False)
            logger.info("Loaded %s for inference (%s).", name, loaded.path)
            return
        loaded = _read_newest(directory, name)
        trainer.load_state_dict(loaded.state, restore_progress=True)
        trainer.load_auxiliary(directory)
        if trainer.context.checkpoints is not None:
            trainer.context.checkpoints.resumed_at(trainer.step)
        logger.info("Resuming %s from step %d (%s).", name, trainer.step, loaded.path)
        return
    source: Path | None = None
    if checkpoint_settings.initialize_from is not None:
        source_run = Path(checkpoint_settings.results_dir) / checkpoint_settings.initialize_from
        source = source_run / behavior_dir_name(name) / LATEST_NAME
        what = f"--initialize-from {checkpoint_settings.initialize_from}"
    elif trainer.settings.init_path is not None:
        source = Path(trainer.settings.init_path)
        if source.is_dir():
            source = source / LATEST_NAME
        what = f"behaviors.{name}.init_path"
    if source is not None:
        trainer.load_state_dict(_read(source, what), restore_progress=False)
        logger.info("Initialized %s from %s.", name, source)
    elif checkpoint_settings.inference:
        logger.warning(
            "--inference: %s has no trained model to load (no trained run, --initialize-from "
            "or init_path for it): its policy is untrained.",
            name,
        )


def _read_newest(directory: Path, behavior: str, flag: str = "--resume") -> LoadedCheckpoint:
    """The newest readable checkpoint of ``behavior`` for ``--resume`` (or ``--inference``),
    warning about newer files that cannot be read.

    Raises:
        RunDirectoryError: there is no checkpoint, or none can be read.
    """
    try:
        loaded = load_newest_checkpoint(
            directory, behavior_dir_name(behavior), check_checkpoint_state
        )
    except FileNotFoundError as exc:
        if flag == "--inference":
            raise RunDirectoryError(
                f"--inference: {exc}; the run has no model of {behavior} to act with. Train "
                "it first (without --inference), or load weights with --initialize-from ID."
            ) from None
        raise RunDirectoryError(
            f"--resume: {exc}; start the run without --resume (or with --force)."
        ) from None
    except ValueError as exc:
        advice = "" if flag == "--inference" else ", or start over with --force"
        raise RunDirectoryError(
            f"{flag}: {behavior} has {exc}. Put back a readable checkpoint{advice}."
        ) from exc
    verb = "Acting with" if flag == "--inference" else "Resuming"
    if loaded.damaged:
        logger.warning(
            "%s: %s. %s %s from %s (step %d) instead, the newest readable checkpoint%s.",
            flag,
            "; ".join(loaded.damaged),
            verb,
            behavior,
            loaded.path,
            loaded.state["step"],
            ""
            if flag == "--inference"
            else "; the next save replaces or deletes the unreadable files",
        )
    elif loaded.path.name != LATEST_NAME:
        logger.warning(
            "%s: %s is missing or older than %s (a save was cut short); %s %s from the newer one.",
            flag,
            directory / LATEST_NAME,
            loaded.path,
            verb.lower(),
            behavior,
        )
    return loaded


def _read(path: Path, what: str) -> dict[str, object]:
    try:
        state = load_checkpoint(path)
        check_checkpoint_state(state, path)
    except FileNotFoundError:
        raise RunDirectoryError(f"{what}: no checkpoint at {path}.") from None
    except ValueError as exc:
        raise RunDirectoryError(f"{what}: {exc}") from exc
    return state


def _device(name: str | None) -> torch.device:
    if name is None:
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ConfigError(f"torch_settings.device: {name!r} is not a torch device: {exc}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"torch_settings.device: {name!r} requested but CUDA is not available; use cpu."
        )
    return device


def _announce_precision(precision: Precision, device: torch.device) -> None:
    """Log a precision other than float32, warning where bfloat16 products are emulated."""
    add_metadata("torch_precision", precision)
    if precision == "float32":
        return
    logger.info(
        "Updates compute matrix products in bfloat16 (torch_settings.precision: %s).", precision
    )
    if device.type == "cpu" and cpu_has_bf16_units() is False:
        logger.warning(
            "This CPU lists neither amx_bf16 nor avx512_bf16: bfloat16 products are emulated "
            "and %s updates may be slower than float32 ones; drop --torch-precision to compare.",
            precision,
        )


def _configure_threads(device: torch.device) -> None:
    """One intra-op thread on CPU unless ``OMP_NUM_THREADS`` says otherwise.

    The networks are small and the environment competes for the same cores: with more threads,
    torch's thread pool spins against the environment and every update gets slower (10-20x was
    measured with 2 threads on a busy 2-core machine). Updates taken while the environment is
    idle may use more (:mod:`trainers.common.optimization.update_threads`).
    """
    if device.type == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)


def _versions() -> dict[str, str]:
    return {
        "unity_gym_version": unity_gym.__version__,
        "torch_version": torch.__version__,
    }


def _record_metadata(command_line: Sequence[str], start_wall: float) -> None:
    add_metadata("start_time_seconds", str(int(start_wall)))
    add_metadata("command_line_arguments", " ".join(command_line))
    add_metadata("python_version", platform.python_version())
    add_metadata("unity_gym_version", unity_gym.__version__)
    add_metadata("pytorch_version", torch.__version__)
    add_metadata("numpy_version", np.__version__)
    add_metadata("gymnasium_version", gymnasium.__version__)


@contextmanager
def _stop_on_sigint(controller: TrainerController) -> Iterator[None]:
    """First Ctrl-C (or SIGTERM): finish the step, save and stop. Second one: abort at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    presses = 0

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            raise KeyboardInterrupt
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(
            f"\n[INFO] {name}: stopping after this step and saving the models "
            "(press Ctrl-C again to abort without saving).",
            file=sys.stderr,
            flush=True,
        )
        controller.request_stop()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
