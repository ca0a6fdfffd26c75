"""One behavior selection rule (``unity_gym.behavior_names``) for every front, planning included.

Facts followed: ML-Agents' ``BehaviorIdentifiers.from_name_behavior_id`` (``name?team=<t>``, team 0
without a query). The rule: a full name, or a plain name that exactly one behavior has.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from unity_gym.behavior_names import (
    BehaviorSelectionError,
    MultipleBehaviorsError,
    full_behavior_name,
    plain_behavior_name,
    select_behavior,
    split_behavior_name,
    team_of,
)
from unity_gym.exceptions import UnityEnvironmentException, UnityMultipleBehaviorsException
from unity_gym.registration import GameSettings
from unity_gym.vector import UnityVectorEnv
from unity_gym.vector.planning import plan_processes

TEAMS = ["Tennis?team=0", "Tennis?team=1"]


def test_behavior_ids_are_parsed_as_ml_agents_does() -> None:
    assert split_behavior_name("Tennis?team=1") == ("Tennis", 1)
    assert split_behavior_name("3DBall") == ("3DBall", 0)
    assert plain_behavior_name("SoccerTwos?team=0") == "SoccerTwos"
    assert team_of("Basic") == 0
    assert full_behavior_name("Tennis", 1) == "Tennis?team=1"
    with pytest.raises(ValueError, match="not a number"):
        team_of("Tennis?team=blue")


def test_the_rule_takes_full_names_and_unique_plain_names() -> None:
    assert select_behavior(["3DBall?team=0"], None) == "3DBall?team=0"
    assert select_behavior(["3DBall?team=0"], "3DBall") == "3DBall?team=0"
    assert select_behavior(TEAMS, "Tennis?team=1") == "Tennis?team=1"
    assert select_behavior(["A?team=0", "B?team=0"], "B") == "B?team=0"


def test_the_rule_refuses_with_the_names_listed() -> None:
    several = r"several behaviors \(Tennis\?team=0, "
    with pytest.raises(MultipleBehaviorsError, match=several) as many:
        select_behavior(TEAMS, None)
    assert isinstance(many.value, UnityMultipleBehaviorsException)
    assert isinstance(many.value, ValueError)
    assert many.value.behavior_names == tuple(TEAMS)
    with pytest.raises(BehaviorSelectionError, match="ambiguous: behaviors Tennis") as ambiguous:
        select_behavior(TEAMS, "Tennis")
    assert not isinstance(ambiguous.value, UnityMultipleBehaviorsException)
    assert isinstance(ambiguous.value, UnityEnvironmentException)
    with pytest.raises(BehaviorSelectionError, match="use one of: Tennis"):
        select_behavior(TEAMS, "Soccer")
    with pytest.raises(BehaviorSelectionError, match="reported no behavior"):
        select_behavior([], None)


def test_planning_follows_the_rule() -> None:
    ball = plan_processes(GameSettings(scene="3DBall"), 24, None, "3DBall")
    assert (ball.num_processes, ball.agents_per_process) == (2, 12)
    teams = GameSettings(scene="Stress", scene_options={"teams": 2})
    with pytest.raises(ValueError, match="ambiguous"):
        plan_processes(teams, 8, None, "Stress")


def test_the_vector_env_takes_a_plain_name_that_one_behavior_has(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(scene="3DBall", num_envs=12, behavior_name="3DBall")
    assert env.behavior_name == "3DBall?team=0"
    obs, _ = env.reset(seed=0)
    assert obs.shape == (12, 8)
