"""``mlagents_envs.envs.env_helpers``: agent names of the official PettingZoo wrappers.

Follows ML-Agents 1.1.0's ``mlagents_envs/envs/env_helpers.py``: a PettingZoo agent is named
``<behavior name>?agent_id=<Unity agent id>``, and since Unity behavior names carry their team
(``Tennis?team=1``), names read ``Tennis?team=1?agent_id=3``. The official module has only
underscore-named helpers; they are its whole interface, so they are exported here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

from unity_gym.base_env import DecisionSteps, TerminalSteps

__all__ = [
    "_agent_id_to_behavior",
    "_behavior_to_agent_id",
    "_parse_behavior",
    "_unwrap_batch_steps",
]

_AGENT_ID_SEPARATOR = "?agent_id="


def _behavior_to_agent_id(behavior_name: str, unique_id: int) -> str:
    """The PettingZoo name of Unity agent ``unique_id`` of ``behavior_name``."""
    return f"{behavior_name}{_AGENT_ID_SEPARATOR}{unique_id}"


def _agent_id_to_behavior(agent_id: str) -> str:
    """The behavior name inside a PettingZoo agent name (the name itself if it has no id)."""
    return agent_id.split(_AGENT_ID_SEPARATOR)[0]


def _parse_behavior(full_behavior: str) -> tuple[str, int]:
    """``(name, team id)`` of a Unity behavior name such as ``Tennis?team=1`` (team 0 if none).

    Raises:
        ValueError: if the team is not an integer.
    """
    parsed = urlparse(full_behavior)
    queries = parse_qs(parsed.query)
    team = int(queries["team"][0]) if "team" in queries else 0
    return parsed.path, team


def deciding_agent_observation(decision: DecisionSteps, row: int) -> list[Any] | dict[str, Any]:
    """What the official wrappers report for the deciding agent in ``row``: its observations
    (one array per sensor), or, where the batch has action masks,
    ``{"observation": [arrays], "action_mask": [one bool array per branch]}`` (True = disabled).
    Not an official name: the one place both of this package's wrappers build it."""
    values = [batch[row] for batch in decision.obs]
    if decision.action_mask is None:
        return values
    return {"observation": values, "action_mask": [mask[row] for mask in decision.action_mask]}


def _unwrap_batch_steps(
    batch_steps: tuple[DecisionSteps, TerminalSteps], behavior_name: str
) -> tuple[
    list[str],
    dict[str, Any],
    dict[str, bool],
    dict[str, float],
    dict[str, float],
    dict[str, dict[str, Any]],
    dict[str, int],
]:
    """One behavior's step results keyed by agent name, as the official helper reports them.

    Returns ``(agents, observations, dones, rewards, cumulative_rewards, infos, id_map)``:
    ``agents`` lists the deciding agents, then the terminated ones. An agent's observation is
    its array (a list if it has several observations); a deciding agent of a batch with action
    masks gets ``{"observation": [arrays], "action_mask": [one bool array per branch]}`` with
    Unity's masks (True = disabled). ``infos`` hold ``behavior_name``, ``group_id``,
    ``group_reward`` and, for terminated agents, ``interrupted``. ``id_map`` maps deciding agents
    to their row. As officially, an agent both terminated and deciding in this batch (its next
    episode began) is reported with its decision: not done, with its decision's observation and
    reward, but with its terminal info.
    """
    decision, terminal = batch_steps
    decision_ids = [_behavior_to_agent_id(behavior_name, int(i)) for i in decision.agent_id]
    terminal_ids = [_behavior_to_agent_id(behavior_name, int(i)) for i in terminal.agent_id]
    observations: dict[str, Any] = {
        name: [batch[row] for batch in terminal.obs] for row, name in enumerate(terminal_ids)
    }
    for row, name in enumerate(decision_ids):
        observations[name] = deciding_agent_observation(decision, row)
    observations = {
        name: value[0] if isinstance(value, list) and len(value) == 1 else value
        for name, value in observations.items()
    }
    dones = dict.fromkeys(terminal_ids, True) | dict.fromkeys(decision_ids, False)
    rewards = {name: float(terminal.reward[row]) for row, name in enumerate(terminal_ids)}
    rewards.update({name: float(decision.reward[row]) for row, name in enumerate(decision_ids)})
    infos: dict[str, dict[str, Any]] = {}
    for row, name in enumerate(decision_ids):
        infos[name] = {
            "behavior_name": behavior_name,
            "group_id": decision.group_id[row],
            "group_reward": decision.group_reward[row],
        }
    for row, name in enumerate(terminal_ids):
        infos[name] = {
            "behavior_name": behavior_name,
            "group_id": terminal.group_id[row],
            "group_reward": terminal.group_reward[row],
            "interrupted": terminal.interrupted[row],
        }
    id_map = {name: row for row, name in enumerate(decision_ids)}
    return decision_ids + terminal_ids, observations, dones, rewards, dict(rewards), infos, id_map
