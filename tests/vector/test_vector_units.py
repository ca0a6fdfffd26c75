"""Pure parts of the vector env: slot state machine, restart policy, planning, buffers."""

from __future__ import annotations

import dataclasses
import multiprocessing
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import cloudpickle
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from unity_gym.exceptions import UnityEnvironmentException, UnityMultipleBehaviorsException
from unity_gym.registration import GameSettings
from unity_gym.vector.autoreset import AgentSlots, Routing
from unity_gym.vector.buffers import BufferLayout, StepBuffers
from unity_gym.vector.faults import RestartPolicy, RestartTracker
from unity_gym.vector.game_worker import select_behavior
from unity_gym.vector.messages import RequestKind, WorkerReply, WorkerRequest
from unity_gym.vector.planning import check_slot_count, plan_processes


def report(
    slots: AgentSlots,
    decisions: Sequence[int] = (),
    terminals: Sequence[int] = (),
    reward: float = 1.0,
    interrupted: bool = False,
) -> Routing:
    """Feed one game reply with the given agent ids (same reward for every report)."""
    d = np.asarray(decisions, dtype=np.int64)
    t = np.asarray(terminals, dtype=np.int64)
    return slots.record(
        d,
        np.full(len(d), reward),
        np.zeros(len(d), dtype=np.int64),
        np.zeros(len(d)),
        t,
        np.full(len(t), reward),
        np.full(len(t), interrupted),
        np.zeros(len(t), dtype=np.int64),
        np.zeros(len(t)),
    )


def started(mode: AutoresetMode, agents: list[int]) -> AgentSlots:
    slots = AgentSlots(len(agents), mode)
    slots.begin_reset()
    report(slots, decisions=agents)
    assert slots.complete
    slots.finish()
    return slots


def test_reset_assigns_slots_in_report_order() -> None:
    slots = started(AutoresetMode.NEXT_STEP, [7, 3, 5])
    assert slots.agent_id.tolist() == [7, 3, 5]


def test_next_step_returns_terminal_then_new_episode_with_zero_actions() -> None:
    slots = started(AutoresetMode.NEXT_STEP, [0, 1])
    slots.begin_step()
    _, use_user = slots.action_sources([0, 1])
    assert use_user.tolist() == [True, True]
    routing = report(slots, decisions=[0, 1], terminals=[1], reward=2.0)
    assert slots.complete
    assert routing.terminal_obs == ([1], [0])
    assert routing.decision_obs == ([0], [0])  # agent 1's new episode is not shown yet
    result = slots.finish()
    assert result.reward.tolist() == [2.0, 2.0]
    assert result.terminated.tolist() == [False, True]
    # Next step: slot 1's action is ignored (zeros); its first decision of the step is returned.
    slots.begin_step()
    _, use_user = slots.action_sources([0, 1])
    assert use_user.tolist() == [True, False]
    routing = report(slots, decisions=[0, 1], reward=3.0)
    result = slots.finish()
    assert routing.decision_obs == ([0, 1], [0, 1])
    assert result.reward.tolist() == [3.0, 0.0]
    assert result.terminated.tolist() == [False, False]


def test_same_step_waits_for_the_next_decision_after_a_terminal() -> None:
    slots = started(AutoresetMode.SAME_STEP, [0, 1])
    slots.begin_step()
    routing = report(slots, decisions=[0], terminals=[1], reward=1.0, interrupted=True)
    assert routing.final_obs == ([1], [0])
    assert not slots.complete and slots.incomplete_slots() == [1]
    # Agent 0 decides again meanwhile: it repeats the user's action, agent 1 acts with zeros.
    _, use_user = slots.action_sources([0])
    assert use_user.tolist() == [True]
    routing = report(slots, decisions=[0, 1], reward=5.0)
    assert slots.complete
    result = slots.finish()
    assert routing.decision_obs == ([0, 1], [0, 1])
    # Slot 0 sums both reports; slot 1 drops the reward earned before its new episode's start.
    assert result.reward.tolist() == [6.0, 1.0]
    assert result.truncated.tolist() == [False, True]
    assert result.ended.tolist() == [False, True]


def test_a_new_agent_id_takes_over_the_slot_of_an_ended_agent() -> None:
    slots = started(AutoresetMode.SAME_STEP, [0])
    slots.begin_step()
    report(slots, decisions=[4], terminals=[0])  # Unity respawned the agent with a new id
    assert slots.complete
    slots.finish()
    assert slots.agent_id.tolist() == [4]


def test_restart_truncates_running_slots_and_keeps_ended_ones() -> None:
    slots = started(AutoresetMode.NEXT_STEP, [0, 1])
    slots.begin_step()
    report(slots, terminals=[0], reward=2.0)
    running = slots.begin_restart()
    assert running.tolist() == [False, True]
    assert slots.complete  # next-step mode keeps the last observations; nothing to collect
    result = slots.finish()
    assert result.terminated.tolist() == [True, False]
    assert result.truncated.tolist() == [False, True]
    assert result.reward.tolist() == [2.0, 0.0]


def test_next_step_departed_agent_leaves_a_vacant_slot_until_a_new_agent_takes_it() -> None:
    slots = started(AutoresetMode.NEXT_STEP, [0, 1, 2])
    # Step 1: agent 1 is removed (terminal report, no decision after it).
    slots.begin_step()
    routing = report(slots, decisions=[0, 2], terminals=[1], reward=1.0)
    assert slots.release_departed().size == 0 and slots.complete
    assert routing.terminal_obs == ([1], [0])
    result = slots.finish()
    assert result.terminated.tolist() == [False, True, False]
    assert result.vacant.tolist() == [False, False, False]
    # Step 2: slot 1 waits for a new episode; one decision of the others is not enough ...
    slots.begin_step()
    _, use_user = slots.action_sources([0, 2])
    assert use_user.tolist() == [True, True]
    report(slots, decisions=[0, 2], reward=2.0)
    assert slots.release_departed().size == 0
    assert slots.incomplete_slots() == [1]
    # ... a second one is: the slot is vacant and the step ends.
    report(slots, decisions=[0, 2], reward=3.0)
    assert slots.release_departed().size == 0  # next-step mode: the terminal obs stays
    assert slots.complete
    result = slots.finish()
    assert result.vacant.tolist() == [False, True, False]
    assert result.reward.tolist() == [5.0, 0.0, 5.0]
    assert not result.terminated.any() and not result.truncated.any()
    # Step 3: the vacant slot is complete from the start; the others step as usual.
    slots.begin_step()
    assert slots.incomplete_slots() == [0, 2]
    report(slots, decisions=[0, 2], reward=4.0)
    assert slots.complete
    result = slots.finish()
    assert result.vacant.tolist() == [False, True, False]
    assert result.reward.tolist() == [4.0, 0.0, 4.0]
    # Step 4: a new agent (Unity gives a re-enabled agent a new id) takes the slot, acting with
    # zeros; its first observation starts a new episode with reward 0.
    slots.begin_step()
    assert slots.action_sources([0, 5, 2])[1].tolist() == [True, False, True]
    routing = report(slots, decisions=[0, 5, 2], reward=6.0)
    assert routing.decision_obs == ([0, 1, 2], [0, 1, 2])
    result = slots.finish()
    assert result.agent_id.tolist() == [0, 5, 2]
    assert result.vacant.tolist() == [False, False, False]
    assert result.reward.tolist() == [6.0, 0.0, 6.0]
    # Step 5: the new agent acts with the user's action.
    slots.begin_step()
    assert slots.action_sources([0, 5, 2])[1].tolist() == [True, True, True]


def test_same_step_departed_agent_is_vacant_in_the_step_it_ends() -> None:
    slots = started(AutoresetMode.SAME_STEP, [0, 1, 2])
    slots.begin_step()
    routing = report(slots, decisions=[0, 2], terminals=[1], reward=1.0)
    assert routing.final_obs == ([1], [0])
    assert slots.release_departed().size == 0
    report(slots, decisions=[0, 2], reward=2.0)
    # Released: its observation becomes the final one (the caller copies it).
    assert slots.release_departed().tolist() == [1]
    assert slots.complete
    result = slots.finish()
    assert result.terminated.tolist() == [False, True, False]
    assert result.ended.tolist() == [False, True, False]
    assert result.vacant.tolist() == [False, True, False]
    assert result.reward.tolist() == [3.0, 1.0, 3.0]
    slots.begin_step()
    report(slots, decisions=[0, 2], reward=4.0)
    assert slots.complete
    result = slots.finish()
    assert result.vacant.tolist() == [False, True, False]
    assert not result.ended.any() and result.reward.tolist() == [4.0, 0.0, 4.0]
    slots.begin_step()
    report(slots, decisions=[7, 0, 2], reward=5.0)
    result = slots.finish()
    assert result.agent_id.tolist() == [0, 7, 2]
    assert result.vacant.tolist() == [False, False, False]
    assert result.reward.tolist() == [5.0, 0.0, 5.0]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_slots_of_present_agents_are_never_released(mode: AutoresetMode) -> None:
    """An agent that decides rarely (still in the game) keeps its step waiting."""
    slots = started(mode, [0, 1])
    slots.begin_step()
    for _ in range(5):
        report(slots, decisions=[0])
        assert slots.release_departed().size == 0
        assert slots.incomplete_slots() == [1]
    report(slots, decisions=[1])
    assert slots.complete
    assert not slots.finish().vacant.any()


def test_every_slot_empty_keeps_waiting() -> None:
    """With no agent left at all the game must bring agents back: nothing is released."""
    slots = started(AutoresetMode.SAME_STEP, [0])
    slots.begin_step()
    report(slots, terminals=[0])
    for _ in range(3):
        report(slots)
        assert slots.release_departed().size == 0
    assert not slots.complete


def test_disabled_autoreset_is_refused() -> None:
    with pytest.raises(ValueError, match=r"NEXT_STEP or AutoresetMode\.SAME_STEP"):
        AgentSlots(2, AutoresetMode.DISABLED)


def test_restart_tracker_applies_lifetime_and_rate_limits() -> None:
    now = [0.0]
    tracker = RestartTracker(RestartPolicy(3, 2, 60.0), clock=lambda: now[0])
    for _ in range(2):
        assert tracker.refusal() is None
        tracker.grant()
    assert "restarts_rate_limit_n=2" in (tracker.refusal() or "")
    now[0] = 61.0  # the window has passed
    assert tracker.refusal() is None
    tracker.grant()
    assert "max_lifetime_restarts=3" in (tracker.refusal() or "")
    unlimited = RestartTracker(RestartPolicy(-1, -1, 1.0))
    for _ in range(50):
        unlimited.grant()
    assert unlimited.refusal() is None
    with pytest.raises(ValueError, match="max_lifetime_restarts"):
        RestartPolicy(max_lifetime_restarts=-2)


def test_planning_derives_processes_and_sizes_builtin_games() -> None:
    ball = GameSettings(scene="3DBall")
    plan = plan_processes(ball, 48, None, None)
    assert (plan.num_processes, plan.agents_per_process) == (4, 12)
    sized = plan_processes(ball, 8, 4, None)
    assert (sized.num_processes, sized.agents_per_process, sized.settings.num_agents) == (4, 2, 2)
    with pytest.raises(ValueError, match=r"num_envs=48 \(4 processes\) or num_envs=60"):
        plan_processes(ball, 50, None, None)
    with pytest.raises(ValueError, match="cannot be split evenly"):
        plan_processes(ball, 9, 4, None)
    teams = GameSettings(scene="Stress", scene_options={"teams": 2})
    with pytest.raises(ValueError, match="several behaviors"):
        plan_processes(teams, 8, None, None)
    plan = plan_processes(teams, 8, None, "Stress?team=1")
    assert (plan.num_processes, plan.agents_per_process) == (2, 4)
    with pytest.raises(ValueError, match="does not equal num_processes=3"):
        check_slot_count(10, 3, 4, "B")
    assert check_slot_count(None, 3, 4, "B") == (12, 3)


def _child_writes(layout: BufferLayout, name: str) -> None:
    buffers = StepBuffers.attach_shared(layout, name)
    buffers["obs:"][1] = 42.0
    buffers["reward"][1] = 0.5
    buffers.close()


def test_shared_buffers_are_written_by_another_process() -> None:
    space = spaces.Box(-np.inf, np.inf, (3,), np.float32)
    layout = BufferLayout.for_spaces(2, space, with_final_obs=True, continuous_size=2, mask_size=3)
    shapes = {spec.name: spec.shape for spec in layout.arrays}
    assert shapes == {
        "obs:": (3,),
        "final_obs:": (3,),
        "ended": (),
        "final_agent_id": (),
        "reward": (),
        "terminated": (),
        "truncated": (),
        "info:agent_id": (),
        "info:group_id": (),
        "info:group_reward": (),
        "info:vacant": (),
        "info:action_mask": (3,),
        "action:continuous": (2,),
        "action:discrete": (0,),
    }
    buffers = StepBuffers.create_shared(layout)
    try:
        assert buffers.shared_name is not None
        process = multiprocessing.get_context("spawn").Process(
            target=_child_writes, args=(layout, buffers.shared_name)
        )
        process.start()
        process.join(30)
        assert process.exitcode == 0
        assert buffers["obs:"].tolist() == [[0, 0, 0], [42, 42, 42]]
        assert buffers["reward"].tolist() == [0.0, 0.5]
    finally:
        name = buffers.shared_name
        buffers.close()
    with pytest.raises(FileNotFoundError):
        StepBuffers.attach_shared(layout, name)


def test_a_game_with_several_behaviors_needs_a_choice() -> None:
    teams = ["Tennis?team=0", "Tennis?team=1"]
    assert select_behavior(["3DBall?team=0"], None) == "3DBall?team=0"
    assert select_behavior(teams, "Tennis?team=1") == "Tennis?team=1"
    with pytest.raises(UnityMultipleBehaviorsException, match="pass behavior_name"):
        select_behavior(teams, None)
    with pytest.raises(UnityEnvironmentException, match="not a behavior of this game") as error:
        select_behavior(teams, "Soccer")
    assert not isinstance(error.value, UnityMultipleBehaviorsException)


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_worker_messages_keep_every_field_through_pickling(dumps: Callable[[Any], bytes]) -> None:
    """Requests and replies pickle as their field values (pipes: pickle; Ray: cloudpickle)."""
    layout = BufferLayout.for_spaces(
        2, spaces.Box(-1, 1, (3,)), with_final_obs=False, continuous_size=2, discrete_size=0
    )
    request = WorkerRequest(
        kind=RequestKind.ATTACH, seq=7, seed=3, continuous=np.ones((2, 2), np.float32),
        layout=layout, shared_name="block", row_offset=4, env_params={"wall": 2.0},
    )  # fmt: skip
    reply = WorkerReply(
        worker=1, seq=7, kind=RequestKind.STEP, restart_reason="crashed", game_pid=99,
        events=[(30, "restarted")], timer_tree={"name": "root"}, rows={"reward": np.ones(2)},
        stats={"Goal": [(1.0, 0)]}, error=ValueError("bad"),
    )  # fmt: skip
    for message in (request, reply, WorkerRequest(kind=RequestKind.STEP, seq=8)):
        copy = pickle.loads(dumps(message))
        assert type(copy) is type(message)
        for spec in dataclasses.fields(message):
            ours, theirs = getattr(message, spec.name), getattr(copy, spec.name)
            if isinstance(ours, np.ndarray):
                np.testing.assert_array_equal(theirs, ours)
            elif spec.name == "rows":
                assert ours.keys() == theirs.keys()
                for name, values in ours.items():
                    np.testing.assert_array_equal(theirs[name], values)
            elif isinstance(ours, BaseException):
                assert type(theirs) is type(ours) and theirs.args == ours.args
            else:
                assert theirs == ours, spec.name
