"""Per-behavior statistics, and the stats writers that publish them (TensorBoard, console,
plugins).

Values are accumulated between summaries (from the env loop and, with ``threaded: true``, from
the trainer thread) and handed every ``summary_freq`` steps to every :class:`StatsWriter` of
the run as :class:`StatsSummary` objects, ML-Agents style (``mlagents.trainers.stats``: a
writer's ``write_stats(category, values, step)`` gets the behavior name as ``category``). The
built-in writers are :class:`TensorBoardWriter` (one event folder per behavior) and
:class:`ConsoleWriter` (one line)::

    [INFO] 3DBall. Step: 12000. Time Elapsed: 35.2 s. Mean Reward: 1.234.
    Std of Reward: 0.500. Training.

Plugins add writers through the ``unity_train.stats_writer`` entry-point group
(:mod:`trainers.plugins`).

The game's own statistics (Unity's ``StatsRecorder``) are aggregated as ML-Agents 1.1.0's
``StatsReporter`` does: ``AVERAGE`` values by their mean, ``SUM`` values by their sum,
``MOST_RECENT`` by the last value received (ML-Agents keeps game 0's only; here the last of any
game), ``HISTOGRAM`` by their mean plus a histogram ``<key>_hist``.
"""

from __future__ import annotations

import abc
import enum
import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from torch.utils.tensorboard import SummaryWriter

from unity_gym.side_channels import EnvironmentStats, StatsAggregationMethod

__all__ = [
    "CUMULATIVE_REWARD",
    "EPISODE_LENGTH",
    "GROUP_CUMULATIVE_REWARD",
    "IS_TRAINING",
    "ConsoleWriter",
    "StatsPropertyType",
    "StatsReporter",
    "StatsSummary",
    "StatsWriter",
    "TensorBoardWriter",
]

logger = logging.getLogger("trainers")

CUMULATIVE_REWARD = "Environment/Cumulative Reward"
GROUP_CUMULATIVE_REWARD = "Environment/Group Cumulative Reward"
"""Each group episode's summed group rewards (MA-POCA), as ML-Agents names it."""
EPISODE_LENGTH = "Environment/Episode Length"
IS_TRAINING = "Is Training"
"""1.0 while the behavior trains, 0.0 otherwise (in every summary, as in ML-Agents)."""


class StatsPropertyType(enum.Enum):
    """Kinds of :meth:`StatsWriter.add_property` values (ML-Agents' ``StatsPropertyType``)."""

    HYPERPARAMETERS = "hyperparameters"
    """The run's resolved configuration, as YAML text (:meth:`RunOptions.to_yaml`)."""


@dataclass(frozen=True)
class StatsSummary:
    """The values one statistic received since the last summary.

    Attributes:
        full_dist: every value, in arrival order (for ``MOST_RECENT``: the last one only).
        aggregation_method: how the values combine into :attr:`value`.
    """

    full_dist: tuple[float, ...]
    aggregation_method: StatsAggregationMethod = StatsAggregationMethod.AVERAGE

    @property
    def mean(self) -> float:
        """Mean of the values (0.0 without values)."""
        return float(np.mean(self.full_dist)) if self.full_dist else 0.0

    @property
    def std(self) -> float:
        """Standard deviation of the values (0.0 without values)."""
        return float(np.std(self.full_dist)) if self.full_dist else 0.0

    @property
    def sum(self) -> float:
        """Sum of the values."""
        return float(np.sum(self.full_dist))

    @property
    def num(self) -> int:
        """Number of values."""
        return len(self.full_dist)

    @property
    def value(self) -> float:
        """The summary value: the sum for ``SUM`` statistics, else the mean."""
        if self.aggregation_method is StatsAggregationMethod.SUM:
            return self.sum
        return self.mean


class StatsWriter(abc.ABC):
    """Receives the summaries of every behavior (ML-Agents' ``StatsWriter`` interface).

    A writer is shared by all behaviors of a run and may be called from several trainer
    threads (``threaded: true``); :meth:`write_stats` must be thread-safe for different
    categories.
    """

    @abc.abstractmethod
    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        """Publish one summary.

        Args:
            category: the behavior name.
            values: statistic name -> its summary (``Environment/Cumulative Reward``,
                ``Losses/...``, ``Policy/...``, the game's own statistics, ``Is Training``).
            step: the behavior's step count.
        """

    def add_property(self, category: str, property_type: StatsPropertyType, value: Any) -> None:  # noqa: B027  (optional hook)
        """Receive a property of ``category`` once (default: ignored)."""

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Flush and release resources at the end of the run (default: nothing)."""


class TensorBoardWriter(StatsWriter):
    """TensorBoard scalars (and ``<key>_hist`` histograms) of every behavior.

    Args:
        base_dir: with ``category_dirs``, the events of behavior ``B`` go to
            ``base_dir/<B, file-system safe>`` (the run folder's behavior folders); otherwise
            every category writes into ``base_dir`` itself.
        category_dirs: see ``base_dir``.
    """

    def __init__(self, base_dir: Path, *, category_dirs: bool = True) -> None:
        self.base_dir = Path(base_dir)
        self.category_dirs = category_dirs
        self._writers: dict[str, SummaryWriter] = {}
        self._lock = threading.Lock()

    def _writer(self, category: str) -> SummaryWriter:
        from trainers.run_directory import behavior_dir_name

        key = category if self.category_dirs else ""
        with self._lock:
            writer = self._writers.get(key)
            if writer is None:
                folder = self.base_dir / behavior_dir_name(category) if key else self.base_dir
                writer = SummaryWriter(log_dir=str(folder))
                self._writers[key] = writer
            return writer

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        """Write every value as a scalar (histograms too for ``HISTOGRAM`` statistics)."""
        writer = self._writer(category)
        for key, summary in values.items():
            if not summary.full_dist:
                continue
            writer.add_scalar(key, summary.value, step)
            if summary.aggregation_method is StatsAggregationMethod.HISTOGRAM:
                writer.add_histogram(f"{key}_hist", np.asarray(summary.full_dist), step)
        writer.flush()

    def add_property(self, category: str, property_type: StatsPropertyType, value: Any) -> None:
        """Write the hyperparameters as a text entry."""
        if property_type is StatsPropertyType.HYPERPARAMETERS:
            self._writer(category).add_text("Hyperparameters", f"```\n{value}\n```")

    def close(self) -> None:
        """Close every event file."""
        with self._lock:
            writers = list(self._writers.values())
            self._writers.clear()
        for writer in writers:
            writer.close()


class ConsoleWriter(StatsWriter):
    """The one-line summary of every behavior on the ``trainers`` logger.

    Args:
        start_time: ``time.monotonic()`` at the start of training (for "Time Elapsed").
    """

    def __init__(self, start_time: float) -> None:
        self.start_time = start_time

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        """Log the mean reward (and spread) of the episodes finished since the last summary."""
        elapsed = time.monotonic() - self.start_time
        training = values.get(IS_TRAINING)
        mode = "Training." if training is not None and training.mean > 0 else "Not Training."
        rewards = values.get(CUMULATIVE_REWARD)
        if rewards is not None and rewards.full_dist:
            group_rewards = values.get(GROUP_CUMULATIVE_REWARD)
            # ML-Agents shows the groups' mean reward instead of the spread when there are groups
            spread = (
                f"Mean Group Reward: {group_rewards.mean:.3f}"
                if group_rewards is not None and group_rewards.full_dist
                else f"Std of Reward: {rewards.std:.3f}"
            )
            logger.info(
                "%s. Step: %d. Time Elapsed: %.1f s. Mean Reward: %.3f. %s. %s",
                category,
                step,
                elapsed,
                rewards.mean,
                spread,
                mode,
            )
        else:
            logger.info(
                "%s. Step: %d. Time Elapsed: %.1f s. No episode was completed since last "
                "summary. %s",
                category,
                step,
                elapsed,
                mode,
            )


class StatsReporter:
    """Collects scalar statistics for one behavior and hands periodic summaries to the writers.

    Args:
        behavior_name: the ``category`` the writers get.
        log_dir: without ``writers``: TensorBoard event files go here (``<run>/<behavior>``).
        start_time: ``time.monotonic()`` at the start of training (for "Time Elapsed").
        writers: the run's shared writers (closed by the run, not by :meth:`close`); None: a
            :class:`TensorBoardWriter` into ``log_dir`` and a :class:`ConsoleWriter` of this
            reporter's own, closed by :meth:`close`.
    """

    def __init__(
        self,
        behavior_name: str,
        log_dir: Path,
        start_time: float,
        writers: Sequence[StatsWriter] | None = None,
    ) -> None:
        self.behavior_name = behavior_name
        self.start_time = start_time
        self._owns_writers = writers is None
        if writers is None:
            tensorboard = TensorBoardWriter(log_dir, category_dirs=False)
            tensorboard._writer(behavior_name)  # the event file exists from the start
            writers = [tensorboard, ConsoleWriter(start_time)]
        self.writers: list[StatsWriter] = list(writers)
        self._values: dict[str, list[float]] = defaultdict(list)
        self._lock = threading.Lock()
        self._gauges: dict[str, float] = {}
        self._aggregation: dict[str, StatsAggregationMethod] = {}
        self._recent_rewards: deque[float] | None = None
        self.last_mean_reward: float | None = None

    def set_gauge(self, key: str, value: float) -> None:
        """Write ``key`` = ``value`` at every summary from now on (until set again)."""
        with self._lock:
            self._gauges[key] = float(value)

    def keep_recent_rewards(self, capacity: int) -> None:
        """Keep the cumulative rewards of the last ``capacity`` finished episodes (curricula)."""
        with self._lock:
            self._recent_rewards = deque(self._recent_rewards or (), maxlen=max(1, capacity))

    def recent_rewards(self) -> list[float]:
        """The kept episode rewards, oldest first (empty unless :meth:`keep_recent_rewards`)."""
        with self._lock:
            return list(self._recent_rewards or ())

    def clear_recent_rewards(self) -> None:
        """Forget the kept episode rewards."""
        with self._lock:
            if self._recent_rewards is not None:
                self._recent_rewards.clear()

    def add(self, key: str, value: float) -> None:
        """Record one value of ``key`` (averaged at the next summary)."""
        with self._lock:
            self._values[key].append(float(value))

    def add_many(self, values: dict[str, float]) -> None:
        """Record several values at once."""
        with self._lock:
            for key, value in values.items():
                self._values[key].append(float(value))

    def add_game_stats(self, stats: EnvironmentStats) -> None:
        """Record the game's own statistics, each with its aggregation (module documentation).

        A key that arrives with another aggregation than before is aggregated the new way from
        then on, with a warning (ML-Agents silently takes the latest method too).
        """
        with self._lock:
            for key, values in stats.items():
                for value, method in values:
                    method = StatsAggregationMethod(method)
                    known = self._aggregation.get(key)
                    if known is not None and known is not method:
                        logger.warning(
                            "The game reported stat %r with aggregation %s after %s; it is "
                            "aggregated with %s from now on.",
                            key,
                            method.name,
                            known.name,
                            method.name,
                        )
                    self._aggregation[key] = method
                    if method is StatsAggregationMethod.MOST_RECENT:
                        self._values[key] = [float(value)]
                    else:
                        self._values[key].append(float(value))

    def add_episode(self, reward: float, length: int) -> None:
        """Record a finished episode's cumulative reward and length."""
        with self._lock:
            self._values[CUMULATIVE_REWARD].append(float(reward))
            self._values[EPISODE_LENGTH].append(float(length))
            if self._recent_rewards is not None:
                self._recent_rewards.append(float(reward))

    def add_property(self, property_type: StatsPropertyType, value: Any) -> None:
        """Hand a property of this behavior (e.g. the hyperparameters) to every writer."""
        for writer in self.writers:
            writer.add_property(self.behavior_name, property_type, value)

    def write_summary(self, step: int, training: bool) -> None:
        """Hand the summaries of everything recorded since the last one to the writers, then
        reset."""
        with self._lock:
            values = dict(self._values)
            self._values.clear()
            gauges = dict(self._gauges)
            aggregation = dict(self._aggregation)
        summaries: dict[str, StatsSummary] = {}
        for key, items in values.items():
            if items:
                method = aggregation.get(key, StatsAggregationMethod.AVERAGE)
                summaries[key] = StatsSummary(tuple(items), method)
        for key, value in gauges.items():
            summaries[key] = StatsSummary((value,))
        summaries[IS_TRAINING] = StatsSummary((1.0 if training else 0.0,))
        rewards = values.get(CUMULATIVE_REWARD, [])
        if rewards:
            self.last_mean_reward = float(np.mean(rewards))
        for writer in self.writers:
            writer.write_stats(self.behavior_name, summaries, step)

    def close(self) -> None:
        """Close the writers this reporter created (shared writers are the run's to close)."""
        if self._owns_writers:
            for writer in self.writers:
                writer.close()
