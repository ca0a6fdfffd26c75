"""``environment_parameters``: constants, samplers and curriculum lessons, parsed and turned
into the values sent to the games.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainers.settings.errors import ConfigError
from trainers.settings.structuring import (
    _as_number,
    _check_range,
    _convert,
    _structure,
    _unknown_key_message,
)
from unity_gym.game.env_params import SAMPLER_PARAMETERS

__all__ = [
    "CompletionCriteria",
    "Curriculum",
    "EnvironmentParameter",
    "Lesson",
    "LessonValue",
    "SamplerSettings",
    "lesson_env_param",
    "lesson_seeds",
    "parameter_lessons",
]

logger = logging.getLogger("trainers.settings")


@dataclass
class SamplerSettings:
    """A randomized environment parameter: ``sampler_type`` and its parameters."""

    sampler_type: str
    parameters: dict[str, Any]
    seed: int = -1

    def to_env_param(self, default_seed: int) -> dict[str, Any]:
        """The flat dict the environment layer takes (``env_params=``)."""
        seed = self.seed if self.seed != -1 else default_seed
        return {"sampler_type": self.sampler_type, **self.parameters, "seed": seed}


LessonValue = float | SamplerSettings
"""What a lesson sets its parameter to: a number or a sampler."""


@dataclass
class CompletionCriteria:
    """When a lesson is complete (ML-Agents' ``completion_criteria``).

    ``measure`` ``progress`` compares the trainer step of ``behavior`` over its ``max_steps``
    with ``threshold`` (within [0, 1]); ``reward`` compares the mean cumulative reward of the
    behavior's recent episodes (smoothed with ``signal_smoothing``). No lesson ends before
    ``min_lesson_length`` episodes were completed during it. ``require_reset`` resets the
    environment when the lesson ends.
    """

    behavior: str
    measure: Literal["progress", "reward"] = "reward"
    min_lesson_length: int = 0
    signal_smoothing: bool = True
    threshold: float = 0.0
    require_reset: bool = False

    def _validate(self, path: str) -> None:
        _check_range(path, "min_lesson_length", self.min_lesson_length, 0, math.inf)
        if self.measure == "progress":
            _check_range(path, "threshold", self.threshold, 0.0, 1.0)


@dataclass
class Lesson:
    """One lesson of a curriculum: the parameter's ``value`` until ``completion_criteria``
    hold (``None`` only for the last lesson, which never ends)."""

    name: str
    value: LessonValue
    completion_criteria: CompletionCriteria | None = None


@dataclass
class Curriculum:
    """An environment parameter taught in lessons, in order (at least one)."""

    lessons: list[Lesson]


EnvironmentParameter = float | SamplerSettings | Curriculum
"""One ``environment_parameters`` entry (a number or a sampler is a one-lesson curriculum)."""


def parameter_lessons(value: EnvironmentParameter) -> list[Lesson]:
    """The lessons of ``value`` (a plain number or sampler is one lesson without criteria)."""
    if isinstance(value, Curriculum):
        return value.lessons
    return [Lesson(name="", value=value)]


def lesson_seeds(parameters: Mapping[str, EnvironmentParameter], run_seed: int) -> list[list[int]]:
    """The sampler seed of every lesson of every parameter (ML-Agents' rule).

    A sampler with seed -1 gets ``run_seed + offset``, ``offset`` counting such samplers in
    order over parameters and their lessons; explicit seeds stay. Numbers get -1.
    """
    seeds: list[list[int]] = []
    offset = 0
    for value in parameters.values():
        row: list[int] = []
        for lesson in parameter_lessons(value):
            sampler = lesson.value
            if not isinstance(sampler, SamplerSettings):
                row.append(-1)
            elif sampler.seed == -1:
                row.append(run_seed + offset)
                offset += 1
            else:
                row.append(sampler.seed)
        seeds.append(row)
    return seeds


def lesson_env_param(value: LessonValue, seed: int) -> float | dict[str, Any]:
    """A lesson's value in the form the environment layer takes (``env_params=``)."""
    if isinstance(value, SamplerSettings):
        return value.to_env_param(seed)
    return float(value)


def _lesson_value_dict(value: LessonValue) -> float | dict[str, Any]:
    if isinstance(value, SamplerSettings):
        return {
            "sampler_type": value.sampler_type,
            "sampler_parameters": {**value.parameters, "seed": value.seed},
        }
    return float(value)


def _parameter_dict(value: EnvironmentParameter) -> Any:
    if not isinstance(value, Curriculum):
        return _lesson_value_dict(value)
    lessons: list[dict[str, Any]] = []
    for lesson in value.lessons:
        entry: dict[str, Any] = {"name": lesson.name, "value": _lesson_value_dict(lesson.value)}
        if lesson.completion_criteria is not None:
            entry["completion_criteria"] = dataclasses.asdict(lesson.completion_criteria)
        lessons.append(entry)
    return {"curriculum": lessons}


def _parse_environment_parameters(raw: Any) -> dict[str, EnvironmentParameter]:
    path = "environment_parameters"
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping of parameter name to value or sampler.")
    params: dict[str, EnvironmentParameter] = {}
    for name, value in raw.items():
        key_path = f"{path}.{name}"
        if isinstance(value, Mapping) and "curriculum" in value:
            params[str(name)] = _parse_curriculum(value, key_path)
        else:
            params[str(name)] = _parse_lesson_value(value, key_path, allow_curriculum=True)
    return params


def _parse_lesson_value(value: Any, path: str, *, allow_curriculum: bool) -> LessonValue:
    """A number or a sampler mapping (a ``constant`` sampler becomes its number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Mapping)):
        also = " or a {curriculum: [...]}" if allow_curriculum else ""
        raise ConfigError(
            f"{path}: expected a number or a sampler {{sampler_type, sampler_parameters}}"
            f"{also}, got {value!r}."
        )
    if isinstance(value, (int, float)):
        return float(_as_number(value, path, "a number"))
    return _parse_sampler(value, path, allow_curriculum=allow_curriculum)


def _parse_curriculum(value: Mapping[str, Any], path: str) -> Curriculum:
    for key in value:
        if key != "curriculum":
            raise ConfigError(_unknown_key_message(path, str(key), ("curriculum",)))
    raw_lessons = value["curriculum"]
    path = f"{path}.curriculum"
    if not isinstance(raw_lessons, list) or not raw_lessons:
        raise ConfigError(
            f"{path}: expected a non-empty list of lessons {{name, value, completion_criteria}}, "
            f"got {raw_lessons!r}."
        )
    lessons = [_parse_lesson(raw, f"{path}[{i}]") for i, raw in enumerate(raw_lessons)]
    for index, lesson in enumerate(lessons[:-1]):
        if lesson.completion_criteria is None:
            raise ConfigError(
                f"{path}[{index}]: lesson {lesson.name!r} has no completion_criteria; every "
                "lesson but the last needs one (say when it ends)."
            )
    last = lessons[-1]
    if last.completion_criteria is not None:
        logger.warning(
            "%s[%d]: the completion_criteria of the last lesson %r are ignored (the last "
            "lesson never ends).",
            path,
            len(lessons) - 1,
            last.name,
        )
    return Curriculum(lessons)


_LESSON_KEYS = ("name", "value", "completion_criteria")


def _parse_lesson(raw: Any, path: str) -> Lesson:
    """A lesson ``{name, value, completion_criteria}``, or ``{<name>: {value,
    completion_criteria}}`` (the form some of ML-Agents' example configs use)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a lesson {{name, value, completion_criteria}}.")
    if len(raw) == 1:
        ((key, inner),) = raw.items()
        if key not in _LESSON_KEYS and isinstance(inner, Mapping) and "name" not in inner:
            raw = {"name": key, **inner}
            path = f"{path}.{key}"
    for key in raw:
        if key not in _LESSON_KEYS:
            raise ConfigError(_unknown_key_message(path, str(key), _LESSON_KEYS))
    for key in ("name", "value"):
        if raw.get(key) is None:
            raise ConfigError(f"{path}.{key}: missing; every lesson needs a name and a value.")
    name = _convert(str, raw["name"], f"{path}.name")
    value = _parse_lesson_value(raw["value"], f"{path}.value", allow_curriculum=False)
    criteria_raw = raw.get("completion_criteria")
    criteria = None
    if criteria_raw is not None:
        criteria_path = f"{path}.completion_criteria"
        if not isinstance(criteria_raw, Mapping) or criteria_raw.get("behavior") is None:
            raise ConfigError(
                f"{criteria_path}.behavior: missing; name the behavior whose progress or "
                "reward ends the lesson."
            )
        criteria = _structure(CompletionCriteria, criteria_raw, criteria_path)
    return Lesson(name=name, value=value, completion_criteria=criteria)


def _parse_sampler(
    value: Mapping[str, Any], path: str, *, allow_curriculum: bool = False
) -> LessonValue:
    valid = ("sampler_type", "sampler_parameters", *(("curriculum",) if allow_curriculum else ()))
    for key in value:
        if key not in ("sampler_type", "sampler_parameters"):
            raise ConfigError(_unknown_key_message(path, key, valid))
    sampler_type = value.get("sampler_type")
    if not isinstance(sampler_type, str) or sampler_type not in SAMPLER_PARAMETERS:
        raise ConfigError(
            f"{path}.sampler_type: {sampler_type!r} is not a sampler; use one of "
            f"{', '.join(SAMPLER_PARAMETERS)}."
        )
    raw_params = value.get("sampler_parameters")
    if not isinstance(raw_params, Mapping):
        raise ConfigError(f"{path}.sampler_parameters: missing; give the sampler's parameters.")
    expected = SAMPLER_PARAMETERS[sampler_type]
    params: dict[str, Any] = {}
    seed = -1
    for key, param in raw_params.items():
        key_path = f"{path}.sampler_parameters.{key}"
        if key == "seed":
            seed = _convert(int, param, key_path)
        elif key not in expected:
            raise ConfigError(
                _unknown_key_message(f"{path}.sampler_parameters", key, (*expected, "seed"))
            )
        elif key == "intervals":
            params[key] = _parse_intervals(param, key_path)
        else:
            params[key] = _convert(float, param, key_path)
    missing = [name for name in expected if name not in params]
    if missing and sampler_type != "uniform":
        raise ConfigError(f"{path}.sampler_parameters: missing {', '.join(missing)}.")
    if sampler_type == "uniform":
        if "min_value" not in params:
            raise ConfigError(f"{path}.sampler_parameters: missing min_value.")
        params.setdefault("max_value", 1.0)
        if params["min_value"] > params["max_value"]:
            raise ConfigError(
                f"{path}.sampler_parameters: min_value {params['min_value']} is greater than "
                f"max_value {params['max_value']}."
            )
    if sampler_type == "constant":
        return float(params["value"])
    return SamplerSettings(sampler_type, params, seed)


def _parse_intervals(value: Any, path: str) -> list[list[float]]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path}: expected a list of [min, max] pairs.")
    intervals: list[list[float]] = []
    for index, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(f"{path}[{index}]: expected a [min, max] pair, got {pair!r}.")
        low = _convert(float, pair[0], f"{path}[{index}]")
        high = _convert(float, pair[1], f"{path}[{index}]")
        if low > high:
            raise ConfigError(f"{path}[{index}]: min {low} is greater than max {high}.")
        intervals.append([low, high])
    return intervals
