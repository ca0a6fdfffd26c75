"""The contract between the env manager and the front a game comes through.

A *front* turns one kind of environment (a Gymnasium vector env, PettingZoo parallel envs) into
agents with fixed indices, each of one behavior id, and reports their steps as
:class:`FrontRows`: one batch of rows per behavior id, in the front's own terms (individual
rewards and group rewards apart, the group ids as the game reports them). Everything that is
the same for every front (which trainer drives which agent, learning rewards, episode
statistics, group ids unique across games, the asynchronous group protocol) lives in
:class:`trainers.env_manager.EnvManager`, which drives every front.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainers.common.spaces import ActionLayout, ObservationLayout
from unity_gym.side_channels import EnvironmentStats

__all__ = ["FrontActions", "FrontAgent", "FrontRows", "FrontStep", "GameFront"]


@dataclass(frozen=True)
class FrontAgent:
    """One agent of a front: its game process and its behavior id (``Tennis?team=1``).

    Attributes:
        game: the index of the game process (environment) the agent lives in.
        behavior_id: the behavior id, with its ``?team=<t>`` suffix where it has one.
        name: how the front names the agent (a PettingZoo agent name, ``"slot <i>"``).
    """

    game: int
    behavior_id: str
    name: str


@dataclass
class FrontRows:
    """What some agents of one behavior id saw after a step (or a reset).

    Attributes:
        agents: the agents' indices into :attr:`GameFront.agents` (``int64``), one per row.
        observations: per observation entry, ``(n, ...)``: what to act on next.
        action_mask: ``(n, choices)`` bools (``True`` = allowed); ``None`` while the game has
            never sent a mask for this behavior (everything allowed).
        rewards: the agents' own rewards of the step.
        group_rewards: the group rewards of the step; ``None`` when the front reports none.
        terminated, truncated: whether the agent's episode ended at this step.
        valid: ``False`` where the agent's action of this step was ignored (it was waiting for
            its game's reset); such rows report no reward and no episode end.
        final_observations: the successor of the step: the final observation where the
            episode ended, else the same as ``observations``.
        final_action_mask: the mask matching ``final_observations``.
        group_ids: the agents' multi-agent group ids as their game reports them (0 = none);
            ``None`` when the front reports no groups.
    """

    agents: np.ndarray
    observations: list[np.ndarray]
    action_mask: np.ndarray | None
    rewards: np.ndarray
    group_rewards: np.ndarray | None
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray
    final_observations: list[np.ndarray]
    final_action_mask: np.ndarray | None
    group_ids: np.ndarray | None

    @classmethod
    def first(
        cls,
        agents: np.ndarray,
        observations: list[np.ndarray],
        action_mask: np.ndarray | None,
        group_ids: np.ndarray | None,
        reports_group_rewards: bool,
    ) -> FrontRows:
        """Rows just after a reset: no reward, nothing done, nothing valid."""
        n = len(agents)
        return cls(
            agents=agents,
            observations=observations,
            action_mask=action_mask,
            rewards=np.zeros(n, dtype=np.float32),
            group_rewards=np.zeros(n, dtype=np.float32) if reports_group_rewards else None,
            terminated=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool),
            valid=np.zeros(n, dtype=bool),
            final_observations=observations,
            final_action_mask=action_mask,
            group_ids=group_ids,
        )

    def take(self, rows: np.ndarray) -> FrontRows:
        """The rows ``rows`` (positions) of this batch."""

        def pick(array: np.ndarray | None) -> np.ndarray | None:
            return None if array is None else array[rows]

        return FrontRows(
            agents=self.agents[rows],
            observations=[entry[rows] for entry in self.observations],
            action_mask=pick(self.action_mask),
            rewards=self.rewards[rows],
            group_rewards=pick(self.group_rewards),
            terminated=self.terminated[rows],
            truncated=self.truncated[rows],
            valid=self.valid[rows],
            final_observations=[entry[rows] for entry in self.final_observations],
            final_action_mask=pick(self.final_action_mask),
            group_ids=pick(self.group_ids),
        )


FrontStep = tuple[int, dict[str, FrontRows]]
"""A group's step: the group index and its rows per behavior id."""

FrontActions = dict[str, Any]
"""Per behavior id, the actions of the group's agents of that id, in the order of
:meth:`GameFront.group_agents`, in :meth:`ActionLayout.to_env` format."""


class GameFront(ABC):
    """Agents of one kind of environment, stepped group by group.

    Agents are fixed for the whole run (index *i* is always the same agent). A *group* is a set
    of agents that step together: one game process each where the front steps games
    asynchronously, else all agents (group 0). :meth:`send` gives a group its actions;
    :meth:`receive` returns the next group whose step is in.
    """

    agents: list[FrontAgent]
    observation_layouts: dict[str, ObservationLayout]
    action_layouts: dict[str, ActionLayout]

    @property
    @abstractmethod
    def groups(self) -> list[np.ndarray]:
        """The agent indices of each group (sorted)."""

    @property
    @abstractmethod
    def in_flight(self) -> int:
        """Groups that were sent actions and whose step was not received yet."""

    def group_agents(self, group: int) -> dict[str, np.ndarray]:
        """Per behavior id, the indices of the group's agents of that id (sorted)."""
        agents = self.groups[group]
        ids = np.array([self.agents[i].behavior_id for i in agents], dtype=object)
        return {behavior_id: agents[ids == behavior_id] for behavior_id in self.observation_layouts}

    @abstractmethod
    def reset(self, seed: int | None) -> list[FrontStep]:
        """Reset every game; per group, rows with no reward, nothing done, ``valid`` False."""

    @abstractmethod
    def send(self, group: int, actions: FrontActions) -> None:
        """Give ``group`` its agents' actions."""

    @abstractmethod
    def receive(self, timeout: float | None) -> FrontStep:
        """The next group whose step is in.

        Raises:
            TimeoutError: none is in within ``timeout`` seconds (``None``: wait).
        """

    def take_stats(self) -> EnvironmentStats:
        """The games' own statistics received since the previous call (none by default)."""
        return {}

    @abstractmethod
    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to every game; False when the games cannot take them."""

    @abstractmethod
    def close(self) -> None:
        """Close every environment."""
