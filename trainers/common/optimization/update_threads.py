"""How many torch threads an update may use while the environment waits for it.

Acting and learning run on one intra-op thread, since the games need the other cores. An update
taken while every game waits for its actions (PPO with ``threaded: false``, any update of a
lock-step environment) has the cores to itself, though, and convolutional encoders train faster
on more threads: GridWorld's PPO updates took 30 s instead of 49 s per 20k steps with 2 threads on
2 cores. Small MLPs gain nothing (3DBall: 0.8 s per update either way). Other programs that keep
cores busy turn more threads into a loss, since OpenMP's barriers wait for descheduled threads:
the same GridWorld updates took 8x as long with one core busy elsewhere.

So :class:`UpdateThreadGovernor` measures, in seconds per unit of work (PPO: rollout rows, SAC:
gradient steps), since updates differ in size. Updates start on the base count. After a few warm-up
updates one update tries the larger count. The governor keeps that count while it is at least 10%
faster than the base count's recent median, and falls back the moment an update on it takes
half as long again as its recent median. A lost trial doubles the wait before the next one.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from unity_gym.timers import set_gauge

__all__ = ["MAX_UPDATE_THREADS", "UpdateThreadGovernor", "update_thread_limit"]

logger = logging.getLogger("trainers")

FIRST_TRIAL = 3
"""Updates on the base count before the first trial (the first ones include warm-up costs)."""
WIN_RATIO = 0.9
"""A trial wins when it takes at most this fraction of the base count's recent median."""
SLOWDOWN_RATIO = 1.5
"""An update on the larger count this much slower than its recent median means other load."""
INITIAL_BACKOFF = 8
"""Updates between a fall-back and the next trial; every lost trial doubles the wait."""
MAX_BACKOFF = 256
"""The longest wait between trials, so that load that goes away is noticed."""
HISTORY = 5
"""Recent update times kept per thread count."""
MAX_UPDATE_THREADS = 4
"""The most threads tried (the networks are small; only 2 cores were available to measure)."""


def update_thread_limit(device: torch.device) -> int:
    """The thread count idle updates may try on ``device``: the usable cores, at most
    :data:`MAX_UPDATE_THREADS`; 1 (never more) off the CPU or when ``OMP_NUM_THREADS`` fixes
    torch's threads."""
    if device.type != "cpu" or "OMP_NUM_THREADS" in os.environ:
        return 1
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_UPDATE_THREADS))


class UpdateThreadGovernor:
    """Chooses torch's intra-op thread count for the updates of one trainer.

    Use :meth:`update` around an update taken while the environment is idle; outside it torch
    runs on ``base`` threads.

    Args:
        most: the thread count to try (at least ``base + 1``).
        base: the thread count of acting and of updates taken while the environment steps.
        clock: seconds as a float (an update's wall time per unit of work is what is compared).
    """

    def __init__(
        self, most: int, base: int = 1, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        if most <= base:
            raise ValueError(f"most ({most}) must exceed base ({base})")
        self.base = base
        self.most = most
        self._clock = clock
        self._times: dict[int, deque[float]] = {
            base: deque(maxlen=HISTORY),
            most: deque(maxlen=HISTORY),
        }
        self._using = base
        self._updates = 0
        self._next_trial = FIRST_TRIAL
        self._backoff = INITIAL_BACKOFF

    @property
    def using(self) -> int:
        """The count updates use outside trials."""
        return self._using

    @property
    def next_threads(self) -> int:
        """The count the next update will use (``most`` for a trial)."""
        if self._using == self.base and self._updates >= self._next_trial:
            return self.most
        return self._using

    @contextmanager
    def update(self, work: float = 1.0) -> Iterator[int]:
        """Run the block on :attr:`next_threads` threads (yielded), then back on ``base``.

        Args:
            work: the update's size; its wall time divided by ``work`` is recorded unless the
                block raises.
        """
        threads = self.next_threads
        torch.set_num_threads(threads)
        start = self._clock()
        try:
            yield threads
        finally:
            torch.set_num_threads(self.base)
        self.record(threads, (self._clock() - start) / max(work, 1e-9))

    def record(self, threads: int, seconds: float) -> None:
        """Account for an update that took ``seconds`` per unit of work on ``threads`` threads."""
        self._updates += 1
        history = self._times[threads]
        if threads != self._using:  # a trial of the larger count
            usual = statistics.median(self._times[self._using])
            if seconds <= WIN_RATIO * usual:
                self._switch(threads, f"{seconds:.3f} s against {usual:.3f} s on {self.base}")
                history.clear()
            else:
                self._backoff = min(2 * self._backoff, MAX_BACKOFF)
                self._next_trial = self._updates + self._backoff
            history.append(seconds)
        elif (
            threads != self.base
            and history
            and seconds > SLOWDOWN_RATIO * (usual := statistics.median(history))
        ):
            self._switch(self.base, f"an update took {seconds:.3f} s against {usual:.3f} s")
            self._next_trial = self._updates + self._backoff
            history.clear()
        else:
            history.append(seconds)
        set_gauge("update_threads", float(self._using))

    def _switch(self, threads: int, why: str) -> None:
        logger.debug("updates now use %d torch thread(s): %s", threads, why)
        self._using = threads
