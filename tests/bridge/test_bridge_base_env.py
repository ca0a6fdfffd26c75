"""Data classes of ``unity_gym.base_env``: official names and semantics, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from unity_gym.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorMapping,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)
from unity_gym.exceptions import UnityActionException

SPEC = BehaviorSpec(
    [
        ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "v"),
        ObservationSpec(
            (1, 2, 2),
            (DimensionProperty.NONE, *(DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2),
            ObservationType.GOAL_SIGNAL,
            "c",
        ),
    ],
    ActionSpec.create_hybrid(2, (3, 2)),
)


def test_enum_values_match_the_protocol() -> None:
    assert {name: int(p) for name, p in DimensionProperty.__members__.items()} == {
        "UNSPECIFIED": 0,
        "NONE": 1,
        "TRANSLATIONAL_EQUIVARIANCE": 2,
        "VARIABLE_SIZE": 4,
    }
    assert DimensionProperty(6) == (
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE | DimensionProperty.VARIABLE_SIZE
    )
    assert ObservationType(1) is ObservationType.GOAL_SIGNAL


def test_action_tuple_casts_and_fills_the_missing_part() -> None:
    action = ActionTuple(continuous=np.array([[1.5, 2.0]], dtype=np.float64))
    assert action.continuous.dtype == np.float32
    assert action.discrete.shape == (1, 0) and action.discrete.dtype == np.int32
    action = ActionTuple(discrete=[[1, 2], [0, 1]])
    assert action.discrete.dtype == np.int32
    assert action.continuous.shape == (2, 0) and action.continuous.dtype == np.float32
    assert ActionTuple(discrete=np.array([[2.0]])).discrete.tolist() == [[2]]
    assert ActionTuple().continuous is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"continuous": np.array([["a"]])}, "castable to float32"),
        ({"discrete": np.array([[1.5]])}, "whole numbers"),
        ({"discrete": np.array([[np.nan]])}, "whole numbers"),
        ({"discrete": np.array([["x"]])}, "castable to int32"),
    ],
)
def test_action_tuple_rejects_uncastable_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UnityActionException, match=message):
        ActionTuple(**kwargs)


def test_action_spec_helpers() -> None:
    spec = SPEC.action_spec
    assert spec.discrete_size == 2
    assert not spec.is_continuous() and not spec.is_discrete()
    assert ActionSpec.create_continuous(3).is_continuous()
    assert ActionSpec.create_discrete([4]).is_discrete()
    assert ActionSpec.create_discrete([4]) == ActionSpec(0, (4,))
    empty = spec.empty_action(4)
    assert empty.continuous.shape == (4, 2) and not empty.continuous.any()
    assert empty.discrete.shape == (4, 2) and empty.discrete.dtype == np.int32
    rng = np.random.default_rng(0)
    random = spec.random_action(500, rng=rng)
    assert random.continuous.min() >= -1 and random.continuous.max() <= 1
    assert set(random.discrete[:, 0].tolist()) == {0, 1, 2}
    assert set(random.discrete[:, 1].tolist()) == {0, 1}
    assert ActionSpec.create_continuous(1).random_action(3).discrete.shape == (3, 0)
    assert str(spec) == "Continuous: 2, Discrete: (3, 2)"


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (ActionTuple(np.zeros((3, 2)), np.zeros((2, 2))), r"discrete actions of shape \(3, 2\)"),
        (
            ActionTuple(np.zeros((3, 1)), np.zeros((3, 2))),
            r"continuous.*got shape \(3, 1\)",
        ),
        (ActionTuple(np.full((3, 2), np.nan), np.zeros((3, 2))), r"NaN or infinite.*\[0, 1, 2\]"),
        (ActionTuple(np.zeros((3, 2)), [[0, 0], [0, 2], [0, 0]]), r"branch 1 .*\[0, 2\)"),
        (ActionTuple(np.zeros((3, 2)), [[-1, 0], [0, 0], [0, 0]]), r"row 0, branch 0"),
        (np.zeros((3, 2)), "must be an ActionTuple"),
    ],
)
def test_validation_says_what_was_expected_and_what_was_given(
    action: ActionTuple, message: str
) -> None:
    with pytest.raises(UnityActionException, match=message):
        SPEC.action_spec.validate_action(action, 3, "Hybrid?team=0")
    with pytest.raises(UnityActionException, match="Hybrid"):
        SPEC.action_spec._validate_action(action, 3, "Hybrid?team=0")


def test_valid_actions_pass_through() -> None:
    action = ActionTuple(np.ones((2, 2)), [[2, 1], [0, 0]])
    assert SPEC.action_spec.validate_action(action, 2, "B") is action


def _decision_steps() -> DecisionSteps:
    return DecisionSteps(
        obs=[np.arange(9, dtype=np.float32).reshape(3, 3), np.zeros((3, 1, 2, 2), np.float32)],
        reward=np.array([0.1, 0.2, 0.3], dtype=np.float32),
        agent_id=np.array([10, 4, 7], dtype=np.int32),
        action_mask=[np.eye(3, dtype=bool), np.zeros((3, 2), dtype=bool)],
        group_id=np.array([0, 1, 1], dtype=np.int32),
        group_reward=np.array([0.0, 1.0, 1.0], dtype=np.float32),
    )


def test_decision_steps_is_a_mapping_from_agent_id() -> None:
    steps = _decision_steps()
    assert len(steps) == 3
    assert list(steps) == [10, 4, 7]
    assert steps.agent_id_to_index == {10: 0, 4: 1, 7: 2}
    step = steps[4]
    assert step.agent_id == 4 and step.reward == np.float32(0.2)
    assert step.obs[0].tolist() == [3, 4, 5]
    assert step.action_mask is not None and step.action_mask[0].tolist() == [False, True, False]
    assert step.group_id == 1 and step.group_reward == 1.0
    assert 7 in steps and 5 not in steps
    with pytest.raises(KeyError, match=r"agent_id 5 is not present.*\[10, 4, 7\]"):
        steps[5]


def test_terminal_steps_is_a_mapping_from_agent_id() -> None:
    steps = TerminalSteps(
        obs=[np.ones((2, 3), np.float32)],
        reward=np.array([1.0, -1.0], np.float32),
        interrupted=np.array([False, True]),
        agent_id=np.array([3, 8], np.int32),
        group_id=np.array([0, 0], np.int32),
        group_reward=np.zeros(2, np.float32),
    )
    assert steps[8].interrupted
    assert steps[3].reward == 1.0
    assert dict(steps.agent_id_to_index) == {3: 0, 8: 1}


def test_empty_batches_follow_the_spec() -> None:
    decision = DecisionSteps.empty(SPEC)
    terminal = TerminalSteps.empty(SPEC)
    assert [o.shape for o in decision.obs] == [(0, 3), (0, 1, 2, 2)]
    assert decision.obs[0].dtype == np.float32
    assert len(decision) == 0 and len(terminal) == 0
    assert terminal.interrupted.dtype == bool
    assert decision.action_mask is None


def test_behavior_mapping_is_read_only_and_names_known_behaviors() -> None:
    mapping = BehaviorMapping({"A?team=0": SPEC})
    assert list(mapping) == ["A?team=0"] and len(mapping) == 1
    assert mapping["A?team=0"] is SPEC
    with pytest.raises(KeyError, match=r"known behaviors: \['A\?team=0'\]"):
        mapping["B"]
