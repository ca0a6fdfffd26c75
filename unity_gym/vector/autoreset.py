"""Agents of one game as vector-env slots, and Unity's agent reports as per-slot step results.

A *slot* is one entry of the vector env: one agent of the chosen behavior in one game process.
Unity restarts agents by itself: an agent whose episode ends sends a terminal report and later
requests its next decision, the first of its new episode. :class:`AgentSlots` turns that stream of
reports into Gymnasium step results for both autoreset modes:

``NEXT_STEP`` (Gymnasium's default)
    The step in which an agent's episode ends returns its final observation with
    ``terminated``/``truncated`` set. The action given for that slot at the next step is ignored:
    the agent acts with zeros (as Unity makes restarted agents do) until the first decision
    reported during that step, which is returned with reward 0 as the new episode's first
    observation.

``SAME_STEP`` (Unity's natural mode, Stable-Baselines3's semantics)
    The step in which an episode ends waits for the agent's next decision and returns it as the
    observation; the final observation goes to ``info["final_obs"]``.

Rules shared by both modes:

* a vector step sends the user's action of each slot with the first exchange; it then keeps
  exchanging with the game until every slot has a result. An agent that asks for another
  decision meanwhile repeats its action (like Unity between decisions); an agent of a new episode
  the user has not seen yet acts with zeros;
* the reward of a step is the sum of the rewards reported for the user's episode during that step;
  the reward an agent collects between its restart and the first observation of its new episode
  is dropped (no action of the user caused it);
* slots are assigned in the order agents report at reset; an agent id never seen before (Unity
  gives a respawned agent a new id) takes over the slot of an agent whose episode ended.

Agents that leave the game: an agent removed in the middle of its group's episode (DungeonEscape's
sacrificed agent, Unity's ``SetActive(false)``) sends a terminal report and no decision after it;
a new agent takes its slot only later (DungeonEscape: at the group's reset). A step stops waiting
for such a slot once every slot still waiting is empty and every other slot's agent has decided
twice in the step (a whole decision interval without the slot's agent). The slot is then
*vacant* (``SlotResults.vacant``): reward 0, not terminated or truncated, its observation the
last one shown (in same-step mode the removed agent's final observation), its actions ignored.
Vacant slots are complete from the start of the next steps, so the others' steps go on as
usual; the step in which a new agent takes the slot returns that agent's first observation as a
new episode (reward 0), and the slot is no longer vacant.

The class only does bookkeeping: it tells its caller which report rows to write where
(:class:`Routing`), so it can be tested without a game.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from gymnasium.vector import AutoresetMode

__all__ = ["AgentSlots", "Routing", "SlotResults"]

logger = logging.getLogger(__name__)

_READY = 0
"""The slot's last result was an observation the user will act on."""
_ENDED = 1
"""(NEXT_STEP) The slot's last result ended an episode: its next action is ignored."""
_VACANT = 2
"""The slot's agent left the game and no agent has taken the slot yet (module docs)."""
_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_SLOTS.flags.writeable = False


@dataclass
class Routing:
    """Where the rows of one game reply go (each pair of arrays is ``slots``/``rows``).

    Attributes:
        decision_obs: slots whose observation becomes the given ``DecisionSteps`` row.
        terminal_obs: slots whose observation becomes the given ``TerminalSteps`` row.
        final_obs: slots whose final observation (same-step mode) is the ``TerminalSteps`` row.
    """

    decision_obs: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))
    terminal_obs: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))
    final_obs: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))


@dataclass
class SlotResults:
    """Per-slot outcome of one vector step or reset of a game (arrays of length ``num_slots``).

    Attributes:
        reward: summed reward of the user's episode during the step.
        terminated: the episode reached a terminal state.
        truncated: the episode was cut short (Unity's ``interrupted``, or a restarted game).
        group_reward: summed group reward, same rule as ``reward``.
        agent_id: the agent now in each slot.
        group_id: the slot's agent's group (0 = none) at its last report.
        ended: an episode ended during the step (same-step mode: ``final_obs`` is set).
        final_agent_id: the agent whose episode ended (-1 where none did).
        vacant: the slot's agent left the game and no agent has taken it yet (module docs).
    """

    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    group_reward: np.ndarray
    agent_id: np.ndarray
    group_id: np.ndarray
    ended: np.ndarray
    final_agent_id: np.ndarray
    vacant: np.ndarray


class AgentSlots:
    """Slot assignment and the per-slot state machine of one game (see the module docs).

    Args:
        num_slots: agents of the behavior in the game.
        mode: ``AutoresetMode.NEXT_STEP`` or ``AutoresetMode.SAME_STEP``.

    Raises:
        ValueError: for ``AutoresetMode.DISABLED`` (Unity restarts agents itself) or a
            non-positive slot count.
    """

    def __init__(self, num_slots: int, mode: AutoresetMode) -> None:
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(
                f"autoreset_mode {mode} is not supported: Unity restarts agents by itself, so "
                "use AutoresetMode.NEXT_STEP or AutoresetMode.SAME_STEP."
            )
        if num_slots <= 0:
            raise ValueError(f"A game needs at least one agent slot, got {num_slots}.")
        self.num_slots = num_slots
        self.mode = mode
        self._slot_of: dict[int, int] = {}
        self.agent_id = np.full(num_slots, -1, dtype=np.int64)
        #: No agent in the slot: its agent's episode ended and none has decided in it since.
        self._empty = np.ones(num_slots, dtype=bool)
        self._phase = np.full(num_slots, _READY, dtype=np.int8)
        self._unknown_warned: set[int] = set()
        n = num_slots
        self._counting = np.zeros(n, dtype=bool)
        self._returns_new_episode = np.zeros(n, dtype=bool)
        self._user_action = np.zeros(n, dtype=bool)
        self._complete = np.zeros(n, dtype=bool)
        #: Decisions reported in each slot since the step began.
        self._decisions = np.zeros(n, dtype=np.int64)
        #: The slot reports ``vacant`` in this step (its agent left the game; module docs).
        self._vacant = np.zeros(n, dtype=bool)
        self._ended = np.zeros(n, dtype=bool)
        self._reward = np.zeros(n, dtype=np.float64)
        self._group_reward = np.zeros(n, dtype=np.float64)
        self._group_id = np.zeros(n, dtype=np.int64)
        self._final_agent = np.full(n, -1, dtype=np.int64)
        self._terminated = np.zeros(n, dtype=bool)
        self._truncated = np.zeros(n, dtype=bool)

    # -- phases of a step -------------------------------------------------------------------

    def begin_reset(self, *, forget_agents: bool = True) -> None:
        """Start collecting the first observation of every slot (a game reset or restart).

        Args:
            forget_agents: drop the agent-to-slot assignment (agents are assigned again in the
                order they report).
        """
        if forget_agents:
            self._slot_of.clear()
            self.agent_id.fill(-1)
            self._empty.fill(True)
        self._clear_accumulators()
        self._vacant.fill(False)
        self._returns_new_episode.fill(True)
        self._phase.fill(_READY)

    def begin_step(self) -> None:
        """Start a vector step in which every ready slot acts with the user's action.

        Vacant slots start complete: they keep reporting ``vacant`` unless a new agent takes
        them during the step.
        """
        self._clear_accumulators()
        ready = self._phase == _READY
        self._counting[:] = ready
        self._user_action[:] = ready
        self._returns_new_episode[:] = ~ready
        self._vacant[:] = self._phase == _VACANT
        self._complete[:] = self._vacant

    def begin_restart(self) -> np.ndarray:
        """Start collecting a restarted game's first observations in the middle of a step.

        Rewards and episode ends already collected in this step are kept. Every slot whose
        user episode was still running is truncated; in next-step mode its current observation
        stays (the last one known) and its next action is ignored; in same-step mode its current
        observation becomes the final one (the caller copies it) and the new game's first
        observation is collected.

        Returns:
            Bool mask of the slots truncated by the restart (their episode was running).
        """
        running = self._counting.copy()
        self._truncated |= running
        self._ended |= running
        self._final_agent[running] = self.agent_id[running]
        if self.mode is AutoresetMode.NEXT_STEP:
            self._returns_new_episode &= ~running
        else:
            self._returns_new_episode.fill(True)
        self._counting.fill(False)
        self._user_action.fill(False)
        self._vacant.fill(False)
        self._complete[:] = ~self._returns_new_episode
        self._slot_of.clear()
        self.agent_id.fill(-1)
        self._empty.fill(True)
        return running

    def adopt_phases(self, ended: np.ndarray) -> None:
        """Continue from another worker's slots: ``ended`` marks the slots whose last result
        ended an episode (their next action is ignored in next-step mode).

        Used when a worker replaces one that was lost (a Ray actor on a node that died), before
        :meth:`begin_step` and :meth:`begin_restart` of the step the lost worker never finished.
        """
        ended = np.asarray(ended, dtype=bool).reshape(self.num_slots)
        if self.mode is AutoresetMode.NEXT_STEP:
            self._phase[:] = np.where(ended, _ENDED, _READY)
        else:
            self._phase.fill(_READY)
        self._vacant.fill(False)

    def finish(self) -> SlotResults:
        """End the step or reset and return the per-slot results."""
        if self.mode is AutoresetMode.NEXT_STEP:
            self._phase[:] = np.where(self._ended, _ENDED, _READY)
        else:
            self._phase.fill(_READY)
        self._phase[self._vacant] = _VACANT
        return SlotResults(
            reward=self._reward.copy(),
            terminated=self._terminated.copy(),
            truncated=self._truncated.copy(),
            group_reward=self._group_reward.copy(),
            agent_id=self.agent_id.copy(),
            group_id=self._group_id.copy(),
            ended=self._ended.copy(),
            final_agent_id=self._final_agent.copy(),
            vacant=self._vacant.copy(),
        )

    @property
    def complete(self) -> bool:
        """Whether every slot has its result for the current step."""
        return bool(self._complete.all())

    def incomplete_slots(self) -> list[int]:
        """Slots still waiting for a report."""
        return np.flatnonzero(~self._complete).tolist()

    def release_departed(self) -> np.ndarray:
        """Stop waiting for slots whose agents left the game (module docs); call after each
        recorded reply.

        The incomplete slots are released when all of them are empty (their agent's episode
        ended and no agent took them), at least one slot is occupied, and every occupied slot's
        agent has decided at least twice since the step began. Released slots become vacant.

        Returns:
            The released slots whose observation must become their final observation (those
            that ended in this step, in same-step mode); empty where none.
        """
        if self._complete.all():  # the usual case: nothing waits
            return _NO_SLOTS
        waiting = ~self._complete
        occupied = ~self._empty
        if (
            (waiting & occupied).any()
            or not occupied.any()
            or (self._decisions[occupied] < 2).any()
        ):
            return _NO_SLOTS
        self._complete[waiting] = True
        self._vacant[waiting] = True
        if self.mode is AutoresetMode.NEXT_STEP:
            return _NO_SLOTS
        return np.flatnonzero(waiting & self._ended)

    # -- actions ----------------------------------------------------------------------------

    def action_sources(
        self, agent_ids: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For agents about to act: their slots and whether each uses the user's action.

        Args:
            agent_ids: ``DecisionSteps.agent_id`` of the behavior.

        Returns:
            ``(slots, use_user)``: slot of each agent (-1 for agents in no slot) and a bool mask;
            agents with ``use_user`` False act with zeros.
        """
        slots = np.array([self._slot_of.get(int(a), -1) for a in agent_ids], dtype=np.int64)
        use_user = np.zeros(len(slots), dtype=bool)
        known = slots >= 0
        use_user[known] = self._user_action[slots[known]]
        return slots, use_user

    # -- reports ----------------------------------------------------------------------------

    def record(
        self,
        decision_ids: np.ndarray,
        decision_rewards: np.ndarray,
        decision_group_ids: Sequence[int] | np.ndarray,
        decision_group_rewards: np.ndarray,
        terminal_ids: np.ndarray,
        terminal_rewards: np.ndarray,
        terminal_interrupted: np.ndarray,
        terminal_group_ids: Sequence[int] | np.ndarray,
        terminal_group_rewards: np.ndarray,
    ) -> Routing:
        """Account one game reply (terminal reports first, then decisions).

        Returns:
            Which rows the caller must write as observations / final observations.
        """
        routing = Routing()
        for row, agent in enumerate(terminal_ids.tolist()):
            slot = self._slot_of.get(agent)
            if slot is None:
                continue  # an agent that never decided: nothing of it was shown to the user
            self._on_terminal(
                slot,
                row,
                float(terminal_rewards[row]),
                bool(terminal_interrupted[row]),
                int(terminal_group_ids[row]),
                float(terminal_group_rewards[row]),
                routing,
            )
        for row, agent in enumerate(decision_ids.tolist()):
            slot = self._slot_of.get(agent)
            if slot is None:
                slot = self._claim(agent)
                if slot is None:
                    continue
            self._on_decision(
                slot,
                row,
                float(decision_rewards[row]),
                int(decision_group_ids[row]),
                float(decision_group_rewards[row]),
                routing,
            )
        return routing

    def _on_terminal(
        self,
        slot: int,
        row: int,
        reward: float,
        interrupted: bool,
        group_id: int,
        group_reward: float,
        routing: Routing,
    ) -> None:
        self._empty[slot] = True
        self._user_action[slot] = False
        if not self._counting[slot]:
            return  # an episode the user never saw, or one already reported as ended
        self._counting[slot] = False
        self._reward[slot] += reward
        self._group_reward[slot] += group_reward
        self._group_id[slot] = group_id
        self._ended[slot] = True
        self._final_agent[slot] = self.agent_id[slot]
        self._terminated[slot] = not interrupted
        self._truncated[slot] = interrupted
        if self.mode is AutoresetMode.NEXT_STEP:
            routing.terminal_obs[0].append(slot)
            routing.terminal_obs[1].append(row)
            self._complete[slot] = True
        else:
            routing.final_obs[0].append(slot)
            routing.final_obs[1].append(row)
            self._complete[slot] = False

    def _on_decision(
        self,
        slot: int,
        row: int,
        reward: float,
        group_id: int,
        group_reward: float,
        routing: Routing,
    ) -> None:
        self._empty[slot] = False
        self._decisions[slot] += 1
        if self._counting[slot]:
            self._reward[slot] += reward
            self._group_reward[slot] += group_reward
        capture = (
            self.mode is AutoresetMode.SAME_STEP
            or self._counting[slot]
            or self._returns_new_episode[slot]
        )
        if capture:
            self._group_id[slot] = group_id
            routing.decision_obs[0].append(slot)
            routing.decision_obs[1].append(row)
            self._complete[slot] = True
            self._vacant[slot] = False

    def _claim(self, agent: int) -> int | None:
        """Give a newly seen agent the first empty slot (slots its agent left first), or None
        (it then acts with zeros)."""
        free = np.flatnonzero(self._empty & self._vacant)
        if free.size == 0:
            free = np.flatnonzero(self._empty)
        if free.size == 0:
            if agent not in self._unknown_warned:
                self._unknown_warned.add(agent)
                logger.warning(
                    "Agent %d joined a game whose %d slots are all taken; it acts with zero "
                    "actions and is not part of the vector env.",
                    agent,
                    self.num_slots,
                )
            return None
        slot = int(free[0])
        previous = int(self.agent_id[slot])
        if previous >= 0:
            self._slot_of.pop(previous, None)
        self._slot_of[agent] = slot
        self.agent_id[slot] = agent
        return slot

    def _clear_accumulators(self) -> None:
        self._counting.fill(False)
        self._returns_new_episode.fill(False)
        self._user_action.fill(False)
        self._complete.fill(False)
        self._decisions.fill(0)
        self._ended.fill(False)
        self._final_agent.fill(-1)
        self._reward.fill(0.0)
        self._group_reward.fill(0.0)
        self._terminated.fill(False)
        self._truncated.fill(False)
