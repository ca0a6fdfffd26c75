"""Curriculum learning: the current lesson of every environment parameter and when it advances.

Every ``environment_parameters`` entry is a list of lessons (a plain number or sampler is one
lesson). A lesson ends when its :class:`~trainers.settings.CompletionCriteria` hold for the
named behavior (ML-Agents' rule, :func:`lesson_complete`); the parameter then moves to the next
lesson, whose value the trainer controller sends to the running games. The last lesson never
ends. Lesson numbers are kept in ``run_logs/training_status.json`` (top-level
``{"<parameter>": {"lesson_num": N}}``, as ML-Agents writes them) and restored on ``--resume``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from trainers.settings import (
    CompletionCriteria,
    EnvironmentParameter,
    Lesson,
    lesson_env_param,
    lesson_seeds,
    parameter_lessons,
)

__all__ = [
    "LESSON_NUMBER_STAT",
    "LESSON_STATUS_KEY",
    "EnvironmentParameterManager",
    "LessonStore",
    "lesson_complete",
]

logger = logging.getLogger("trainers")

LESSON_NUMBER_STAT = "Environment/Lesson Number/"
"""TensorBoard tag prefix of a parameter's current lesson index (``<prefix><parameter>``)."""

LESSON_STATUS_KEY = "lesson_num"
"""Key of a parameter's lesson number in ``training_status.json``."""


class LessonStore(Protocol):
    """Where lesson numbers persist (``TrainingStatus``)."""

    def parameter_state(self, name: str, key: str) -> Any:
        """The stored value of ``key`` for parameter ``name`` (None if absent)."""
        ...

    def set_parameter_state(self, name: str, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` for parameter ``name`` (and save)."""
        ...


def lesson_complete(
    criteria: CompletionCriteria,
    progress: float,
    rewards: Sequence[float],
    smoothing: float,
) -> tuple[bool, float]:
    """Whether a lesson with ``criteria`` is complete, and the new smoothed reward.

    Args:
        criteria: the lesson's completion criteria.
        progress: the behavior's trainer step over its ``max_steps``.
        rewards: the behavior's recent episode cumulative rewards (since the last lesson change).
        smoothing: the parameter's smoothed reward so far (starts at 0.0).

    Returns:
        ``(complete, smoothing)``: with fewer than ``min_lesson_length`` episodes, never
        complete; ``progress`` measure: ``progress > threshold``; ``reward`` measure: the mean
        reward (with ``signal_smoothing``: ``0.25 * smoothing + 0.75 * mean``, which becomes the
        new smoothing) ``> threshold``; no episode or a NaN mean is not complete.
    """
    if len(rewards) < criteria.min_lesson_length:
        return False, smoothing
    if criteria.measure == "progress":
        return progress > criteria.threshold, smoothing
    if not rewards:
        return False, smoothing
    mean = float(np.mean(rewards))
    if math.isnan(mean):
        return False, smoothing
    if criteria.signal_smoothing:
        mean = 0.25 * smoothing + 0.75 * mean
        smoothing = mean
    return mean > criteria.threshold, smoothing


class EnvironmentParameterManager:
    """The current lesson of each environment parameter.

    Args:
        parameters: ``RunOptions.environment_parameters``.
        run_seed: the run's seed; samplers without a seed get ``run_seed`` plus their offset
            (:func:`trainers.settings.lesson_seeds`).
        store: where lesson numbers are saved (None: nowhere).
        restore: start from the lesson numbers in ``store`` (``--resume``); else lesson 0.
    """

    def __init__(
        self,
        parameters: Mapping[str, EnvironmentParameter],
        run_seed: int,
        store: LessonStore | None = None,
        *,
        restore: bool = False,
    ) -> None:
        self._lessons: dict[str, list[Lesson]] = {
            name: parameter_lessons(value) for name, value in parameters.items()
        }
        self._seeds = dict(zip(self._lessons, lesson_seeds(parameters, run_seed), strict=True))
        self._store = store
        self._smoothing: dict[str, float] = dict.fromkeys(self._lessons, 0.0)
        self._current: dict[str, int] = dict.fromkeys(self._lessons, 0)
        if restore and store is not None:
            for name, lessons in self._lessons.items():
                saved = store.parameter_state(name, LESSON_STATUS_KEY)
                if saved is None:
                    continue
                if isinstance(saved, bool) or not isinstance(saved, int) or saved < 0:
                    logger.warning(
                        "training_status.json: lesson number %r of parameter '%s' is not a "
                        "lesson index; starting at lesson 0.",
                        saved,
                        name,
                    )
                    continue
                if saved >= len(lessons):
                    logger.warning(
                        "Parameter '%s' was in lesson %d but now has %d lesson(s); resuming in "
                        "its last lesson.",
                        name,
                        saved,
                        len(lessons),
                    )
                    saved = len(lessons) - 1
                self._current[name] = saved
        self._save_all()

    @property
    def has_curriculum(self) -> bool:
        """Whether any parameter has more than one lesson."""
        return any(len(lessons) > 1 for lessons in self._lessons.values())

    @property
    def curriculum_parameters(self) -> list[str]:
        """Names of the parameters with more than one lesson."""
        return [name for name, lessons in self._lessons.items() if len(lessons) > 1]

    def lesson_numbers(self) -> dict[str, int]:
        """The current lesson index of every parameter."""
        return dict(self._current)

    def lesson_name(self, name: str) -> str:
        """The name of parameter ``name``'s current lesson."""
        return self._lessons[name][self._current[name]].name

    def current_env_params(self) -> dict[str, float | dict[str, Any]]:
        """Every parameter's current lesson value, as the environment layer takes it."""
        return {name: self._param(name) for name in self._lessons}

    def behaviors(self) -> set[str]:
        """The behaviors named by completion criteria."""
        return {
            lesson.completion_criteria.behavior
            for lessons in self._lessons.values()
            for lesson in lessons[:-1]
            if lesson.completion_criteria is not None
        }

    def reward_buffer_size(self, behavior: str) -> int:
        """How many recent episode rewards of ``behavior`` to keep: the largest
        ``min_lesson_length`` of its criteria, at least 1."""
        lengths = [
            lesson.completion_criteria.min_lesson_length
            for lessons in self._lessons.values()
            for lesson in lessons
            if lesson.completion_criteria is not None
            and lesson.completion_criteria.behavior == behavior
        ]
        return max([1, *lengths])

    def update(
        self,
        steps: Mapping[str, int],
        max_steps: Mapping[str, int],
        reward_buffers: Mapping[str, Sequence[float]],
    ) -> tuple[bool, bool]:
        """Advance every parameter whose current lesson is complete (at most one lesson each).

        Args:
            steps: trainer step per behavior.
            max_steps: trainer ``max_steps`` per behavior.
            reward_buffers: recent episode cumulative rewards per behavior.

        Returns:
            ``(changed, must_reset)``: whether any lesson changed (the caller then sends
            :meth:`current_env_params` and clears the reward buffers) and whether a completed
            lesson asked for ``require_reset``. Criteria naming a behavior absent from
            ``steps`` are never met.
        """
        changed = False
        must_reset = False
        for name, lessons in self._lessons.items():
            index = self._current[name]
            criteria = lessons[index].completion_criteria
            if criteria is None or index + 1 >= len(lessons) or criteria.behavior not in steps:
                continue
            limit = max(1, max_steps.get(criteria.behavior, 1))
            progress = steps[criteria.behavior] / limit
            complete, self._smoothing[name] = lesson_complete(
                criteria,
                progress,
                reward_buffers.get(criteria.behavior, ()),
                self._smoothing[name],
            )
            if not complete:
                continue
            self._current[name] = index + 1
            changed = True
            must_reset = must_reset or criteria.require_reset
            logger.info(
                "Parameter '%s' has changed. Now in lesson '%s'.",
                name,
                lessons[index + 1].name,
            )
            if self._store is not None:
                self._store.set_parameter_state(name, LESSON_STATUS_KEY, index + 1)
        return changed, must_reset

    def _param(self, name: str) -> float | dict[str, Any]:
        index = self._current[name]
        return lesson_env_param(self._lessons[name][index].value, self._seeds[name][index])

    def _save_all(self) -> None:
        if self._store is None:
            return
        for name in self.curriculum_parameters:
            self._store.set_parameter_state(name, LESSON_STATUS_KEY, self._current[name])
