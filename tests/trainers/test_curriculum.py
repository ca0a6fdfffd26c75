"""Curriculum lessons: configuration, the completion rule on hand-made rewards, seeds, status.

The end-to-end run is in ``test_curriculum_runs.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainers.common.checkpoints.files import TrainingStatus
from trainers.curriculum import EnvironmentParameterManager, lesson_complete
from trainers.settings import (
    CompletionCriteria,
    ConfigError,
    Curriculum,
    SamplerSettings,
    parse_run_options,
)


def _criteria(**fields: Any) -> dict[str, Any]:
    return {"behavior": "B", **fields}


def _curriculum(*lessons: dict[str, Any]) -> dict[str, Any]:
    return {"curriculum": list(lessons)}


def _lesson(name: str, value: Any, **criteria: Any) -> dict[str, Any]:
    lesson: dict[str, Any] = {"name": name, "value": value}
    if criteria:
        lesson["completion_criteria"] = _criteria(**criteria)
    return lesson


def _options(parameters: dict[str, Any], seed: int = 10) -> Any:
    return parse_run_options({"env_settings": {"seed": seed}, "environment_parameters": parameters})


def _error(parameters: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        _options(parameters)
    return str(info.value)


TWO_LESSONS = _curriculum(
    _lesson("easy", 1.0, measure="progress", threshold=0.5),
    _lesson("hard", {"sampler_type": "uniform", "sampler_parameters": {"min_value": 0.5}}),
)


# -- configuration ---------------------------------------------------------------------------


def test_curricula_parse_with_mlagents_defaults_and_round_trip() -> None:
    options = _options({"gravity": TWO_LESSONS, "mass": 3})
    curriculum = options.environment_parameters["gravity"]
    assert isinstance(curriculum, Curriculum)
    easy, hard = curriculum.lessons
    assert easy.completion_criteria == CompletionCriteria(
        behavior="B", measure="progress", threshold=0.5
    )
    criteria = CompletionCriteria(behavior="B")
    assert (criteria.measure, criteria.min_lesson_length, criteria.signal_smoothing) == (
        "reward",
        0,
        True,
    )
    assert (criteria.threshold, criteria.require_reset) == (0.0, False)
    assert hard.value == SamplerSettings("uniform", {"min_value": 0.5, "max_value": 1.0}, -1)
    assert hard.completion_criteria is None
    # env_params() gives the first lesson (the games' launch values)
    assert options.env_params() == {"gravity": 1.0, "mass": 3.0}
    again = parse_run_options(yaml.safe_load(options.to_yaml()))
    assert again.environment_parameters == options.environment_parameters


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (
            {"g": {"curriculum": [], "sampler_type": "uniform"}},
            "environment_parameters.g.sampler_type: unknown key; valid keys: curriculum.",
        ),
        ({"g": {"curriculum": []}}, "environment_parameters.g.curriculum: expected a non-empty"),
        ({"g": {"curriculum": 3}}, "environment_parameters.g.curriculum: expected a non-empty"),
        (
            {"g": {"curiculum": []}},
            "environment_parameters.g.curiculum: unknown key; did you mean curriculum?",
        ),
        (
            {"g": _curriculum({"name": "a", "value": 1, "completion": {}})},
            "environment_parameters.g.curriculum[0].completion: unknown key; did you mean "
            "completion_criteria?",
        ),
        (
            {"g": _curriculum({"value": 1})},
            "environment_parameters.g.curriculum[0].name: missing",
        ),
        (
            {"g": _curriculum({"name": "a"})},
            "environment_parameters.g.curriculum[0].value: missing",
        ),
        (
            {"g": _curriculum(_lesson("a", True))},
            "environment_parameters.g.curriculum[0].value: expected a number or a sampler",
        ),
        (
            {"g": _curriculum(_lesson("a", {"curriculum": []}))},
            "environment_parameters.g.curriculum[0].value.curriculum: unknown key",
        ),
        (
            {"g": _curriculum(_lesson("a", 1), _lesson("b", 2))},
            "environment_parameters.g.curriculum[0]: lesson 'a' has no completion_criteria",
        ),
        (
            {
                "g": _curriculum(
                    {"name": "a", "value": 1, "completion_criteria": {}}, _lesson("b", 2)
                )
            },
            "environment_parameters.g.curriculum[0].completion_criteria.behavior: missing",
        ),
        (
            {"g": _curriculum(_lesson("a", 1, treshold=0.5), _lesson("b", 2))},
            "environment_parameters.g.curriculum[0].completion_criteria.treshold: unknown key; "
            "did you mean threshold?",
        ),
        (
            {"g": _curriculum(_lesson("a", 1, measure="steps"), _lesson("b", 2))},
            "environment_parameters.g.curriculum[0].completion_criteria.measure: 'steps' is not "
            "valid; use one of progress, reward",
        ),
        (
            {"g": _curriculum(_lesson("a", 1, measure="progress", threshold=1.5), _lesson("b", 2))},
            "environment_parameters.g.curriculum[0].completion_criteria.threshold: must be "
            "between 0.0 and 1.0, got 1.5.",
        ),
        (
            {"g": _curriculum(_lesson("a", 1, min_lesson_length=-1), _lesson("b", 2))},
            "environment_parameters.g.curriculum[0].completion_criteria.min_lesson_length: must "
            "be at least 0",
        ),
        (
            {"g": _curriculum(_lesson("a", 1, signal_smoothing="yes"), _lesson("b", 2))},
            "environment_parameters.g.curriculum[0].completion_criteria.signal_smoothing: "
            "expected true or false",
        ),
    ],
)
def test_curriculum_errors_name_the_key(parameters: dict[str, Any], message: str) -> None:
    assert message in _error(parameters)


def test_lessons_may_be_keyed_by_their_name() -> None:
    keyed = {"curriculum": [{"First": {"completion_criteria": {"behavior": "B"}, "value": 1}},
                            {"Last": {"value": 2.5}}]}  # fmt: skip
    (lessons,) = [p.lessons for p in _options({"g": keyed}).environment_parameters.values()]
    assert [(lesson.name, lesson.value) for lesson in lessons] == [("First", 1.0), ("Last", 2.5)]
    assert lessons[0].completion_criteria is not None
    assert "curriculum[0].Last.value: missing" in _error({"g": {"curriculum": [{"Last": {}}]}})


def test_reward_threshold_is_not_limited_and_last_criteria_are_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        options = _options(
            {"g": _curriculum(_lesson("a", 1, threshold=50.0), _lesson("b", 2, threshold=3.0))}
        )
    assert "the completion_criteria of the last lesson 'b' are ignored" in caplog.text
    manager = EnvironmentParameterManager(options.environment_parameters, 0)
    assert manager.update({"B": 10}, {"B": 10}, {"B": [100.0] * 5}) == (True, False)
    assert manager.update({"B": 10}, {"B": 10}, {"B": [100.0] * 5}) == (False, False)


# -- the completion rule ---------------------------------------------------------------------


def test_progress_measure_compares_step_over_max_steps() -> None:
    criteria = CompletionCriteria(behavior="B", measure="progress", threshold=0.5)
    assert lesson_complete(criteria, 0.5, [], 0.0) == (False, 0.0)
    assert lesson_complete(criteria, 0.51, [], 0.0) == (True, 0.0)
    manager = EnvironmentParameterManager(_options({"g": TWO_LESSONS}).environment_parameters, 0)
    assert manager.update({"B": 50}, {"B": 100}, {}) == (False, False)
    assert manager.update({"B": 51}, {"B": 100}, {}) == (True, False)
    assert manager.lesson_numbers() == {"g": 1}


def test_reward_measure_without_smoothing_uses_the_mean() -> None:
    criteria = CompletionCriteria(behavior="B", threshold=1.0, signal_smoothing=False)
    assert lesson_complete(criteria, 0.0, [], 0.0) == (False, 0.0)
    assert lesson_complete(criteria, 0.0, [0.0, 2.0], 0.0) == (False, 0.0)  # mean 1.0
    assert lesson_complete(criteria, 0.0, [0.5, 2.0], 0.0) == (True, 0.0)  # mean 1.25
    assert lesson_complete(criteria, 0.0, [float("nan")], 0.0) == (False, 0.0)


def test_reward_measure_with_smoothing_blends_a_quarter_of_the_previous_value() -> None:
    criteria = CompletionCriteria(behavior="B", threshold=1.5)
    complete, smoothing = lesson_complete(criteria, 0.0, [2.0], 0.0)
    assert (complete, smoothing) == (False, 1.5)  # 0.25 * 0 + 0.75 * 2
    complete, smoothing = lesson_complete(criteria, 0.0, [2.0], smoothing)
    assert (complete, smoothing) == (True, 1.875)  # 0.25 * 1.5 + 0.75 * 2
    # through the manager: the smoothing is kept per parameter between updates
    options = _options(
        {
            "g": _curriculum(_lesson("a", 1, threshold=1.5), _lesson("b", 2)),
            "h": _curriculum(_lesson("a", 1, threshold=1.8), _lesson("b", 2)),
        }
    )
    manager = EnvironmentParameterManager(options.environment_parameters, 0)
    assert manager.update({"B": 1}, {"B": 10}, {"B": [2.0]}) == (False, False)
    assert manager.update({"B": 1}, {"B": 10}, {"B": [2.0]}) == (True, False)
    assert manager.lesson_numbers() == {"g": 1, "h": 1}  # both: 1.875 > 1.8 as well


def test_min_lesson_length_waits_for_enough_episodes() -> None:
    criteria = CompletionCriteria(behavior="B", threshold=0.1, min_lesson_length=3)
    assert lesson_complete(criteria, 0.0, [5.0, 5.0], 0.0) == (False, 0.0)
    assert lesson_complete(criteria, 0.0, [5.0, 5.0, 5.0], 0.0) == (True, 3.75)
    progress = CompletionCriteria(behavior="B", measure="progress", min_lesson_length=2)
    assert lesson_complete(progress, 0.9, [1.0], 0.0) == (False, 0.0)
    assert lesson_complete(progress, 0.9, [1.0, 1.0], 0.0) == (True, 0.0)


def test_lessons_advance_one_at_a_time_and_the_last_never_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    options = _options(
        {
            "g": _curriculum(
                _lesson("one", 1.0, measure="progress", threshold=0.1),
                _lesson("two", 2.0, measure="progress", threshold=0.2, require_reset=True),
                _lesson("three", 3.0),
            ),
            "other": _curriculum(
                {"name": "x", "value": 0.0, "completion_criteria": {"behavior": "C"}},
                _lesson("y", 1.0),
            ),
            "plain": 5.0,
        }
    )
    manager = EnvironmentParameterManager(options.environment_parameters, 0)
    assert manager.curriculum_parameters == ["g", "other"]
    assert manager.behaviors() == {"B", "C"}
    with caplog.at_level(logging.INFO, logger="trainers"):
        assert manager.update({"B": 90}, {"B": 100}, {}) == (True, False)
        assert manager.current_env_params() == {"g": 2.0, "other": 0.0, "plain": 5.0}
        assert manager.update({"B": 90}, {"B": 100}, {}) == (True, True)  # require_reset
        for _ in range(3):
            assert manager.update({"B": 100}, {"B": 100}, {}) == (False, False)
    assert manager.lesson_numbers() == {"g": 2, "other": 0, "plain": 0}
    assert manager.current_env_params()["g"] == 3.0
    assert "Parameter 'g' has changed. Now in lesson 'two'" in caplog.text
    assert "Parameter 'g' has changed. Now in lesson 'three'" in caplog.text
    # behavior C is not trained: its criteria are never met
    assert manager.update({"B": 100}, {"B": 100}, {"C": [10.0]}) == (False, False)


def test_reward_buffer_size_is_the_largest_min_lesson_length_of_the_behavior() -> None:
    options = _options(
        {
            "g": _curriculum(_lesson("a", 1, min_lesson_length=7), _lesson("b", 2)),
            "h": _curriculum(
                _lesson("a", 1, min_lesson_length=3),
                _lesson("b", 2, min_lesson_length=11),
                _lesson("c", 3),
            ),
        }
    )
    manager = EnvironmentParameterManager(options.environment_parameters, 0)
    assert manager.reward_buffer_size("B") == 11
    assert manager.reward_buffer_size("Other") == 1


# -- seeds -----------------------------------------------------------------------------------


def test_sampler_seeds_count_samplers_over_parameters_and_lessons() -> None:
    uniform = {"sampler_type": "uniform", "sampler_parameters": {"min_value": 0, "max_value": 1}}
    seeded = {
        "sampler_type": "gaussian",
        "sampler_parameters": {"mean": 0, "st_dev": 1, "seed": 99},
    }
    options = _options(
        {
            "a": uniform,  # offset 0
            "b": _curriculum(
                _lesson("l0", uniform, measure="progress", threshold=0.0),  # offset 1
                _lesson("l1", seeded, measure="progress", threshold=0.0),  # explicit 99
                _lesson("l2", 4.0, measure="progress", threshold=0.0),
                _lesson("l3", uniform),  # offset 2
            ),
            "c": uniform,  # offset 3
        },
        seed=100,
    )
    manager = EnvironmentParameterManager(options.environment_parameters, 500)
    seeds = []
    for _ in range(4):
        params = manager.current_env_params()
        value = params["b"]
        seeds.append(value["seed"] if isinstance(value, dict) else None)
        manager.update({"B": 1}, {"B": 1}, {})
    assert seeds == [501, 99, None, 502]
    assert manager.current_env_params()["a"]["seed"] == 500  # type: ignore[index]
    assert manager.current_env_params()["c"]["seed"] == 503  # type: ignore[index]
    # env_params() follows the same rule with env_settings.seed by default
    assert options.env_params()["c"]["seed"] == 103  # type: ignore[index]


# -- training status -------------------------------------------------------------------------


def test_lesson_numbers_are_saved_and_restored_only_on_resume(tmp_path: Path) -> None:
    path = tmp_path / "training_status.json"
    parameters = _options({"g": TWO_LESSONS, "plain": 1.0}).environment_parameters
    status = TrainingStatus(path, {})
    manager = EnvironmentParameterManager(parameters, 0, status)
    assert json.loads(path.read_text())["g"] == {"lesson_num": 0}
    manager.update({"B": 9}, {"B": 10}, {})
    saved = json.loads(path.read_text())
    assert saved["g"] == {"lesson_num": 1} and "plain" not in saved

    resumed = TrainingStatus(path, {})
    resumed.load()
    assert EnvironmentParameterManager(parameters, 0, resumed, restore=True).lesson_numbers() == {
        "g": 1,
        "plain": 0,
    }
    fresh = TrainingStatus(path, {})
    fresh.load()
    assert EnvironmentParameterManager(parameters, 0, fresh).lesson_numbers()["g"] == 0


def test_a_saved_lesson_beyond_the_curriculum_resumes_in_the_last_lesson(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    status = TrainingStatus(tmp_path / "status.json", {})
    status.set_parameter_state("g", "lesson_num", 5)
    parameters = _options({"g": TWO_LESSONS}).environment_parameters
    with caplog.at_level(logging.WARNING, logger="trainers"):
        manager = EnvironmentParameterManager(parameters, 0, status, restore=True)
    assert manager.lesson_numbers() == {"g": 1}
    assert "was in lesson 5 but now has 2 lesson(s)" in caplog.text
