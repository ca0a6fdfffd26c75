"""Academy semantics (spec §9) observed through the official ``mlagents_envs`` 1.1.0.

The Stress scene reports counters (obs 0 = agent step, 2 = Academy step, 3 = episode number,
4 = last action) and rewards the first action component of every executed action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [pytest.mark.peer, pytest.mark.timeout(180)]

Peer = Callable[..., Any]


def test_decision_period_advances_five_academy_steps(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "decision_period=5"])
        env.reset()
        out = [steps(env, "Stress?team=0")]
        for _ in range(3):
            env.step()
            out.append(steps(env, "Stress?team=0"))
        emit({"out": out, "code": close_env(env)})
        """
    )
    academy = [[row[2] for row in s["obs"][0]] for s in result["out"]]
    agent = [[row[0] for row in s["obs"][0]] for s in result["out"]]
    assert academy == [[1.0] * 4, [6.0] * 4, [11.0] * 4, [16.0] * 4]
    assert agent == academy
    assert result["code"] == 0


def test_max_step_interrupt_and_new_decision_of_the_same_agent_in_one_message(
    peer: Peer,
) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "decision_period=5",
                                        "--option", "max_step=10"])
        env.reset()
        first = steps(env, "Stress?team=0")
        env.step()
        env.step()
        both = steps(env, "Stress?team=0")
        env.step()
        after = steps(env, "Stress?team=0")
        emit({"first": first, "both": both, "after": after, "code": close_env(env)})
        """
    )
    first, both, after = result["first"], result["both"], result["after"]
    assert first["ids"] == [0, 1, 2, 3]
    assert both["t_ids"] == both["ids"] == [0, 1, 2, 3], "terminal and decision in one message"
    assert both["t_interrupted"] == [True] * 4
    assert [row[0] for row in both["t_obs"][0]] == [10.0] * 4, "final observation at step 10"
    assert [row[0] for row in both["obs"][0]] == [1.0] * 4, "the new episode's first decision"
    assert [row[3] for row in both["obs"][0]] == [2.0] * 4
    assert after["ids"] == [0, 1, 2, 3] and after["t_ids"] == []
    assert result["code"] == 0


def test_episode_end_is_not_interrupted_and_forces_an_extra_exchange(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "decision_period=5",
                                        "--option", "episode_length=3"])
        env.reset()
        env.step()
        emit({"s": steps(env, "Stress?team=0"), "code": close_env(env)})
        """
    )
    s = result["s"]
    # The episode ends at agent step 3, between decisions: the next exchange holds only the
    # terminal reports (Academy step 4), before the next decision step.
    assert s["ids"] == [] and s["t_ids"] == [0, 1, 2, 3]
    assert s["t_interrupted"] == [False] * 4
    assert [row[2] for row in s["t_obs"][0]] == [3.0] * 4


def test_actions_map_to_agents_in_message_order(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "decision_period=5", "--num-agents", "6"])
        env.reset()
        d, _ = env.get_steps("Stress?team=0")
        values = (np.arange(len(d), dtype=np.float32) + 1) * 0.1
        sent = dict(zip(d.agent_id.tolist(), values.tolist()))
        env.set_actions("Stress?team=0", ActionTuple(continuous=np.stack([values, -values], 1)))
        env.step()
        s = steps(env, "Stress?team=0")
        emit({"sent": sent, "s": s, "code": close_env(env)})
        """
    )
    s = result["s"]
    for agent_id, reward, row in zip(s["ids"], s["reward"], s["obs"][0], strict=True):
        value = result["sent"][str(agent_id)]
        assert reward == pytest.approx(5 * value, rel=1e-5), "5 executed actions per decision"
        assert row[4] == pytest.approx(value)


def test_reset_restarts_without_terminal_reports(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "decision_period=5"])
        env.reset()
        env.set_actions("Stress?team=0", ActionTuple(continuous=np.ones((4, 2), np.float32)))
        env.step()
        env.step()
        before = steps(env, "Stress?team=0")
        env.reset()
        after = steps(env, "Stress?team=0")
        emit({"before": before, "after": after, "code": close_env(env)})
        """
    )
    before, after = result["before"], result["after"]
    assert [row[2] for row in before["obs"][0]] == [11.0] * 4
    assert after["t_ids"] == [], "abandoned episodes are not reported as done"
    assert after["ids"] == [0, 1, 2, 3], "ids survive a reset"
    assert [row[2] for row in after["obs"][0]] == [1.0] * 4
    assert [row[0] for row in after["obs"][0]] == [1.0] * 4
    assert [row[3] for row in after["obs"][0]] == [2.0] * 4, "the reset began episode 2"
    # After RESET the rest of that step runs with all-zero actions: no reward.
    assert after["reward"] == [0.0] * 4


DETERMINISM = """
def run(seed):
    env = open_env("3DBall", seed=seed)
    env.reset()
    rng = np.random.default_rng(0)
    trace = []
    for _ in range(150):
        d, t = env.get_steps("3DBall?team=0")
        trace.append([d.agent_id.tolist(), d.obs[0].tolist(), d.reward.tolist(),
                      t.agent_id.tolist(), t.obs[0].tolist(), t.reward.tolist()])
        env.set_actions("3DBall?team=0",
                        ActionTuple(continuous=rng.uniform(-1, 1, (len(d), 2)).astype(np.float32)))
        env.step()
    close_env(env)
    return trace

emit({"a": run(7), "b": run(7), "c": run(8)})
"""


def test_same_seed_and_actions_reproduce_the_run_exactly(peer: Peer) -> None:
    result = peer(DETERMINISM)
    assert result["a"] == result["b"]
    assert result["a"] != result["c"], "the handshake seed drives the scene's randomness"
    assert any(step[3] for step in result["a"]), "the trace covers episode ends"


def test_basic_goal_reloads_the_area_with_a_new_agent_id(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Basic")
        env.reset()
        out = []
        for _ in range(8):
            env.set_actions("Basic?team=0", ActionTuple(discrete=np.full((1, 1), 2, np.int32)))
            env.step()
            out.append(steps(env, "Basic?team=0"))
        emit({"out": out, "code": close_env(env)})
        """
    )
    out = result["out"]
    assert [s["ids"] for s in out[:6]] == [[0]] * 6
    goal = out[6]  # the 7th move reaches position 17
    assert goal["t_ids"] == [0] and goal["t_interrupted"] == [False]
    assert goal["t_reward"][0] == pytest.approx(1.0 - 0.01)
    assert goal["t_obs"][0][0].index(1.0) == 17
    assert goal["ids"] == [1], "the reloaded area holds a new agent"
    assert goal["obs"][0][0].index(1.0) == 10
    assert out[7]["ids"] == [1] and out[7]["reward"][0] == pytest.approx(-0.01)


def test_groups_masks_hybrid_actions_and_two_teams(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "teams=2", "--option", "group_size=2",
                                        "--option", "discrete=3,2", "--option", "action_mask=true"])
        env.reset()
        names = sorted(env.behavior_specs)
        specs = {n: [env.behavior_specs[n].action_spec.continuous_size,
                     list(env.behavior_specs[n].action_spec.discrete_branches)] for n in names}
        first = {n: steps(env, n) for n in names}
        env.step()
        second = {n: steps(env, n) for n in names}
        emit({"names": names, "specs": specs, "first": first, "second": second,
              "code": close_env(env)})
        """
    )
    assert result["names"] == ["Stress?team=0", "Stress?team=1"]
    assert result["specs"]["Stress?team=0"] == [2, [3, 2]]
    team0, team1 = result["second"]["Stress?team=0"], result["second"]["Stress?team=1"]
    # ids are assigned area by area: team 0 gets even ids, team 1 odd ones.
    assert team0["ids"] == [0, 2, 4, 6] and team1["ids"] == [1, 3, 5, 7]
    assert team0["group_id"] == [1, 1, 2, 2] and team1["group_id"] == [3, 3, 4, 4]
    assert team0["group_reward"] == [1.0] * 4, "one group reward per Academy step"
    assert result["first"]["Stress?team=0"]["group_reward"] == [0.0] * 4
    # Agent step 2: action 2 % 3 of branch 0 and 2 % 2 of branch 1 are disabled.
    mask0, mask1 = team0["mask"]
    assert mask0 == [[False, False, True]] * 4 and mask1 == [[True, False]] * 4
