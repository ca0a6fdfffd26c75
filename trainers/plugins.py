"""Trainer types and stats writers from other packages, found through entry points as
ML-Agents finds its plugins (``mlagents/plugins``; docs ``Training-Plugins.md``).

Two entry-point groups, of this project's own (an ML-Agents plugin builds ML-Agents' classes,
which ``unity-train`` cannot run, so it is not loaded as is):

``unity_train.trainer_type``
    Each entry point is a callable taking no argument and returning
    ``(trainer_types, hyperparameter_classes)``: two dicts keyed by ``trainer_type`` name (as
    ML-Agents' ``get_default_trainer_types``). ``trainer_types[name]`` is a subclass of
    :class:`trainers.common.trainer.Trainer`, built as ``cls(context)`` with a
    :class:`~trainers.common.trainer.TrainerContext`, whose ``trainer_type`` class attribute
    is ``name`` (checkpoints record it). ``hyperparameter_classes[name]`` is a dataclass that
    ``behaviors.<B>.hyperparameters`` of a behavior with ``trainer_type: name`` is parsed
    into (unknown keys are errors; an optional ``_validate(self, path)`` method checks values
    and raises :class:`~trainers.settings.ConfigError`). A subclass of PPO's trainer takes a
    subclass of :class:`~trainers.settings.PPOHyperparameters`.

``unity_train.stats_writer``
    Each entry point is a callable taking the run's :class:`~trainers.settings.RunOptions`
    and returning a list of :class:`trainers.common.bookkeeping.stats.StatsWriter` (as ML-Agents'
    ``register_stats_writer_plugins``); every behavior's summaries go to each of them.

The built-in trainer types (``ppo``, ``sac``, ``poca``) and writers (TensorBoard, console) are
not entry points: they are looked up first and always present, so a plugin cannot replace
them (a plugin's ``ppo`` is ignored with a warning). Plugins are loaded once per process, only
when a configuration names a trainer type that is not built-in (trainer types) or when a run
starts (stats writers). A plugin that fails to load or to run is logged as an error naming
the entry point and its distribution and left out (as ML-Agents does); a configuration that
needs its trainer type then fails with the list of known types and the failed plugins.

Example ``pyproject.toml`` of a plugin package::

    [project.entry-points."unity_train.trainer_type"]
    my_ppo = "my_package.plugin:get_trainer_types"

    [project.entry-points."unity_train.stats_writer"]
    my_writer = "my_package.plugin:get_stats_writers"
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, is_dataclass
from typing import TYPE_CHECKING, Any

from trainers.settings.errors import ConfigError
from trainers.settings.trainer import PPOHyperparameters, SACHyperparameters

if TYPE_CHECKING:
    from pathlib import Path

    from trainers.common.bookkeeping.stats import StatsWriter
    from trainers.common.trainer import Trainer
    from trainers.settings import RunOptions

__all__ = [
    "BUILTIN_TRAINER_TYPES",
    "STATS_WRITER_GROUP",
    "TRAINER_TYPE_GROUP",
    "hyperparameters_class",
    "known_trainer_types",
    "stats_writers",
    "trainer_class",
]

logger = logging.getLogger("trainers")

TRAINER_TYPE_GROUP = "unity_train.trainer_type"
STATS_WRITER_GROUP = "unity_train.stats_writer"

BUILTIN_TRAINER_TYPES: dict[str, type] = {
    "ppo": PPOHyperparameters,
    "sac": SACHyperparameters,
    "poca": PPOHyperparameters,  # ML-Agents' POCASettings are PPO's
}
"""Built-in trainer type -> its hyperparameters class."""


def _describe(entry_point: importlib.metadata.EntryPoint) -> str:
    """``'name' (value) of distribution D`` for messages."""
    dist = getattr(entry_point, "dist", None)
    owner = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"{entry_point.group} plugin {entry_point.name!r} ({entry_point.value}) of {owner}"


@dataclass
class _TrainerPlugins:
    trainers: dict[str, type[Trainer]] = field(default_factory=dict)
    settings: dict[str, type] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@functools.cache
def _trainer_plugins() -> _TrainerPlugins:
    """Load every ``unity_train.trainer_type`` entry point once."""
    from trainers.common.trainer import Trainer

    found = _TrainerPlugins()
    for entry_point in importlib.metadata.entry_points(group=TRAINER_TYPE_GROUP):
        what = _describe(entry_point)
        try:
            trainers, settings = entry_point.load()()
            for name, cls in trainers.items():
                if not (isinstance(cls, type) and issubclass(cls, Trainer)):
                    raise TypeError(f"trainer type {name!r}: {cls!r} is not a Trainer subclass")
                if name not in settings or not is_dataclass(settings[name]):
                    raise TypeError(
                        f"trainer type {name!r}: no hyperparameters dataclass returned for it"
                    )
        except Exception as exc:  # a broken plugin must not stop runs that do not use it
            logger.error(
                "Cannot load %s: %s: %s. Its trainer types are not available; reinstall or "
                "fix that distribution.",
                what,
                type(exc).__name__,
                exc,
            )
            found.failures.append(f"{what}: {type(exc).__name__}: {exc}")
            continue
        for name, cls in trainers.items():
            if name in BUILTIN_TRAINER_TYPES:
                logger.warning(
                    "%s: trainer type %r is built in; the plugin's is ignored.", what, name
                )
                continue
            found.trainers[name] = cls
            found.settings[name] = settings[name]
    return found


def known_trainer_types() -> list[str]:
    """Built-in trainer types, then those of the plugins (loading them)."""
    return [*BUILTIN_TRAINER_TYPES, *_trainer_plugins().trainers]


def hyperparameters_class(trainer_type: str, path: str) -> type:
    """The hyperparameters dataclass of ``trainer_type`` (built-in or from a plugin).

    Raises:
        ConfigError: no such trainer type; the message lists the known ones and the plugins
            that failed to load.
    """
    if trainer_type in BUILTIN_TRAINER_TYPES:
        return BUILTIN_TRAINER_TYPES[trainer_type]
    plugins = _trainer_plugins()
    if trainer_type in plugins.settings:
        return plugins.settings[trainer_type]
    message = (
        f"{path}: {trainer_type!r} is not a trainer type; known: "
        f"{', '.join(known_trainer_types())} (built-in ones and those of installed "
        f"'{TRAINER_TYPE_GROUP}' plugins)."
    )
    if plugins.failures:
        message += " Plugins that failed to load: " + "; ".join(plugins.failures) + "."
    raise ConfigError(message)


def trainer_class(trainer_type: str) -> type[Trainer]:
    """The trainer class of a trainer type that :func:`hyperparameters_class` accepted."""
    if trainer_type == "ppo":
        from trainers.ppo.trainer import PPOTrainer

        return PPOTrainer
    if trainer_type == "sac":
        from trainers.sac.trainer import SACTrainer

        return SACTrainer
    if trainer_type == "poca":
        from trainers.poca.trainer import POCATrainer

        return POCATrainer
    try:
        return _trainer_plugins().trainers[trainer_type]
    except KeyError:
        raise ConfigError(
            f"trainer_type: {trainer_type!r} is not a trainer type; known: "
            f"{', '.join(known_trainer_types())}."
        ) from None


def stats_writers(options: RunOptions, run_dir: Path, start_time: float) -> list[StatsWriter]:
    """The run's writers: TensorBoard into ``run_dir``, the console, then every plugin's.

    A plugin that fails (import error, exception, a result that is not a list of
    ``StatsWriter``) is logged as an error naming it and its distribution and left out.
    """
    from trainers.common.bookkeeping.stats import ConsoleWriter, StatsWriter, TensorBoardWriter

    writers: list[StatsWriter] = [TensorBoardWriter(run_dir), ConsoleWriter(start_time)]
    for entry_point in importlib.metadata.entry_points(group=STATS_WRITER_GROUP):
        what = _describe(entry_point)
        try:
            factory: Callable[[RunOptions], Any] = entry_point.load()
            made = list(factory(options))
            wrong = [writer for writer in made if not isinstance(writer, StatsWriter)]
            if wrong:
                raise TypeError(
                    f"{wrong[0]!r} is not a trainers.common.bookkeeping.stats.StatsWriter"
                )
        except Exception as exc:
            logger.error(
                "Cannot use %s: %s: %s. Its stats writers are left out; reinstall or fix that "
                "distribution.",
                what,
                type(exc).__name__,
                exc,
            )
            continue
        logger.debug("%s added %d stats writer(s).", what, len(made))
        writers += made
    return writers
