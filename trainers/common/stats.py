"""Per-behavior statistics: TensorBoard scalars and the console summary line.

Values are accumulated between summaries (from the env loop and, with ``threaded: true``, from
the trainer thread) and written every ``summary_freq`` steps as their mean, ML-Agents style
(one line)::

    [INFO] 3DBall. Step: 12000. Time Elapsed: 35.2 s. Mean Reward: 1.234.
    Std of Reward: 0.500. Training.

The game's own statistics (Unity's ``StatsRecorder``) are aggregated as ML-Agents 1.1.0's
``StatsReporter`` does: ``AVERAGE`` values by their mean, ``SUM`` values by their sum,
``MOST_RECENT`` by the last value received (ML-Agents keeps game 0's only; here the last of any
game), ``HISTOGRAM`` by their mean plus a histogram ``<key>_hist``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict, deque
from pathlib import Path

import numpy as np
from torch.utils.tensorboard import SummaryWriter

from unity_gym.side_channels import EnvironmentStats, StatsAggregationMethod

__all__ = ["CUMULATIVE_REWARD", "EPISODE_LENGTH", "GROUP_CUMULATIVE_REWARD", "StatsReporter"]

logger = logging.getLogger("trainers")

CUMULATIVE_REWARD = "Environment/Cumulative Reward"
GROUP_CUMULATIVE_REWARD = "Environment/Group Cumulative Reward"
"""Each group episode's summed group rewards (MA-POCA), as ML-Agents names it."""
EPISODE_LENGTH = "Environment/Episode Length"


class StatsReporter:
    """Collects scalar statistics for one behavior and writes periodic summaries.

    Args:
        behavior_name: shown in console lines.
        log_dir: TensorBoard event files go here (``<run>/<behavior>``).
        start_time: ``time.monotonic()`` at the start of training (for "Time Elapsed").
    """

    def __init__(self, behavior_name: str, log_dir: Path, start_time: float) -> None:
        self.behavior_name = behavior_name
        self.start_time = start_time
        self._writer = SummaryWriter(log_dir=str(log_dir))
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

    def add_text(self, tag: str, text: str) -> None:
        """Write a text entry (e.g. the hyperparameters) to TensorBoard."""
        self._writer.add_text(tag, text)

    def write_summary(self, step: int, training: bool) -> None:
        """Write the means of everything recorded since the last summary, then reset."""
        with self._lock:
            values = dict(self._values)
            self._values.clear()
            gauges = dict(self._gauges)
        rewards = values.get(CUMULATIVE_REWARD, [])
        for key, items in values.items():
            if not items:
                continue
            method = self._aggregation.get(key, StatsAggregationMethod.AVERAGE)
            total = np.sum(items) if method is StatsAggregationMethod.SUM else np.mean(items)
            self._writer.add_scalar(key, float(total), step)
            if method is StatsAggregationMethod.HISTOGRAM:
                self._writer.add_histogram(f"{key}_hist", np.asarray(items), step)
        for key, value in gauges.items():
            self._writer.add_scalar(key, value, step)
        self._writer.add_scalar("Is Training", 1.0 if training else 0.0, step)
        self._writer.flush()
        elapsed = time.monotonic() - self.start_time
        mode = "Training." if training else "Not Training."
        if rewards:
            self.last_mean_reward = float(np.mean(rewards))
            group_rewards = values.get(GROUP_CUMULATIVE_REWARD)
            # ML-Agents shows the groups' mean reward instead of the spread when there are groups
            spread = (
                f"Mean Group Reward: {np.mean(group_rewards):.3f}"
                if group_rewards
                else f"Std of Reward: {np.std(rewards):.3f}"
            )
            logger.info(
                "%s. Step: %d. Time Elapsed: %.1f s. Mean Reward: %.3f. %s. %s",
                self.behavior_name,
                step,
                elapsed,
                self.last_mean_reward,
                spread,
                mode,
            )
        else:
            logger.info(
                "%s. Step: %d. Time Elapsed: %.1f s. No episode was completed since last "
                "summary. %s",
                self.behavior_name,
                step,
                elapsed,
                mode,
            )

    def close(self) -> None:
        """Flush and close the event file."""
        self._writer.close()
