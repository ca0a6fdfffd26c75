"""The one env manager: routes every agent of every game to the trainer of its behavior.

Games come through a *front* (:mod:`trainers.game_fronts`): a Gymnasium vector env
(:class:`~trainers.game_fronts.VectorFront`, one behavior, each game stepped asynchronously
where the env can) or PettingZoo parallel envs (:class:`~trainers.game_fronts.PettingZooFront`,
teams and several behaviors). :class:`EnvManager` does the rest the same way for both:

Trainers. Agents are grouped by behavior name, the behavior id without its ``?team=<t>``
suffix: ``Tennis?team=0`` and ``Tennis?team=1`` are both driven by the trainer of ``Tennis``
(its name is chosen by ``trainer_name``, the configuration key in ``unity-train``). With
``self_play`` configured for that trainer it is a ghost trainer (:mod:`trainers.ghost`), which
reads each slot's team from :attr:`EnvManager.slot_teams` and trains one team at a time against
snapshots; without it all teams share one policy and a warning says once that the teams are not
trained against each other. All teams of a name must have the same observation shapes (entry *i*
of one team feeds the same network input as entry *i* of another, whatever the sensor names) and
the same action space.

Slots. A trainer's slots are its agents in the front's agent order (the vector env's slots;
env 0's PettingZoo agents first, each env's in ``possible_agents`` order); the order never
changes (:attr:`EnvManager.slot_agents`). A *group* is a set of agents that step together: one
game each when the front steps games asynchronously, else every agent. A
:class:`BehaviorStep` holds one group's slots of one trainer, in slot order.

Rewards. A slot's learning reward is the agent's reward plus its group reward where the game
reports one, as ML-Agents' extrinsic reward signal adds the group reward for PPO and SAC too
(without it SoccerTwos, whose rewards are group rewards, would teach nothing). Episode returns in
:attr:`BehaviorStep.episodes` (``Environment/Cumulative Reward``) are sums of these rewards, so
they include group rewards (ML-Agents' own statistic counts the individual reward only).

Groups of agents. Each slot's multi-agent group id (ML-Agents' ``group_id``, as last reported)
is made unique across game processes (game *i*'s group *g* is ``i * GROUP_ID_SPAN + g``) in
:attr:`BehaviorStep.group_ids`, with the step's group rewards in
:attr:`BehaviorStep.group_rewards`, for trainers that learn from groups (POCA).

Masks. ``None`` while no agent of the trainer has sent one; else one flat bool row per slot
(``True`` = allowed), all-allowed rows for agents without a mask.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from pettingzoo import ParallelEnv

from trainers.behavior_ids import (
    TrainerNamer,
    behavior_base_name,
    default_trainer_name,
    team_of,
)
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.contract import BehaviorSlots, BehaviorStep, PolicyDecision, join_steps
from trainers.game_fronts import (
    FrontActions,
    FrontRows,
    FrontStep,
    GameFront,
    PettingZooFront,
    VectorFront,
    apply_env_params,
)
from trainers.settings import ConfigError
from unity_gym.side_channels import EnvironmentStats

__all__ = [
    "GROUP_ID_SPAN",
    "BehaviorSlots",
    "BehaviorStep",
    "EnvManager",
    "PolicyDecision",
    "apply_env_params",
    "join_steps",
]

#: Group ids of game *i* are offset by ``i * GROUP_ID_SPAN`` (Unity's ids are 32-bit), so that
#: groups of different game processes never share an id.
GROUP_ID_SPAN = 2**32

logger = logging.getLogger(__name__)


@dataclass
class _Trainee:
    """The slots of one trainer and their running state."""

    name: str
    behavior_ids: list[str]
    agents: np.ndarray  # slot -> front agent index
    observation_layout: ObservationLayout
    action_layout: ActionLayout
    episode_reward: np.ndarray = field(default_factory=lambda: np.zeros(0))
    episode_length: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        self.episode_reward = np.zeros(len(self.agents), dtype=np.float64)
        self.episode_length = np.zeros(len(self.agents), dtype=np.int64)


@dataclass
class _GroupPart:
    """One trainer's share of one group: its slots there and where each behavior id's rows go.

    Attributes:
        slots: the trainer's slot indices in the group, in slot order (the step's rows).
        agents: per behavior id, the group's agents of that id, as the front lists them.
        positions: per behavior id, the row of each of those agents in the step.
        identity: a single behavior id whose agents are the step's rows in order.
    """

    slots: np.ndarray
    agents: dict[str, np.ndarray]
    positions: dict[str, np.ndarray]
    identity: bool


class EnvManager:
    """Steps the games of one front and hands every trainer its slots' outcomes.

    See the module documentation for trainers, slots, groups, rewards and masks. The loop is
    asynchronous: :meth:`start` resets everything and returns the first observations of every
    group; :meth:`send` gives a group its next actions (one :class:`PolicyDecision` per trainer,
    one row per slot of the group) and :meth:`receive` returns the next group whose step
    finished, one :class:`BehaviorStep` per trainer with slots there, all with that ``group``.

    Args:
        front: the games; the manager owns it from now on (:meth:`close` closes it). If the
            constructor raises, the front is left open for the caller to close.
        trainer_name: maps a behavior group's candidate names to its trainer's name (default:
            the behavior name without team).
        self_play: whether a trainer name is configured for self-play (its teams are then not
            warned about); default: none is.

    Raises:
        ConfigError: teams of one behavior name differ in observation shapes or actions, or
            two behavior names get the same trainer name.
    """

    def __init__(
        self,
        front: GameFront,
        trainer_name: TrainerNamer = default_trainer_name,
        self_play: Callable[[str], bool] | None = None,
    ) -> None:
        self.front = front
        self._group_reward_seen = False
        grouped: dict[str, list[str]] = {}
        for behavior_id in sorted(front.observation_layouts):
            grouped.setdefault(behavior_base_name(behavior_id), []).append(behavior_id)
        self._trainees: dict[str, _Trainee] = {}
        agent_ids = [agent.behavior_id for agent in front.agents]
        for base, members in grouped.items():
            name = trainer_name([base, *members])
            if name in self._trainees:
                raise ConfigError(
                    f"behaviors {self._trainees[name].behavior_ids} and {members} would both be "
                    f"trained by {name!r}; give them distinct configuration keys."
                )
            _check_teams_alike(front, members)
            agents = [i for i, behavior_id in enumerate(agent_ids) if behavior_id in members]
            self._trainees[name] = _Trainee(
                name=name,
                behavior_ids=members,
                agents=np.asarray(agents, dtype=np.int64),
                observation_layout=front.observation_layouts[members[0]],
                action_layout=front.action_layouts[members[0]],
            )
        self._game_of_agent = np.asarray([agent.game for agent in front.agents], dtype=np.int64)
        self._parts = [self._group_parts(group) for group in range(len(front.groups))]
        shared = {
            n: t.behavior_ids
            for n, t in self._trainees.items()
            if len(t.behavior_ids) > 1 and not (self_play is not None and self_play(n))
        }
        if shared:
            logger.warning(
                "The environment has several teams of %s, but self-play is not configured: all "
                "teams of a behavior share one policy, trained by %s (add a self_play section "
                "to train one team at a time against snapshots of its policy).",
                ", ".join(f"{name} ({', '.join(ids)})" for name, ids in shared.items()),
                "the trainer of the same name" if len(shared) > 1 else repr(next(iter(shared))),
            )

    @classmethod
    def for_vector_env(cls, env: VectorEnv, behavior_name: str) -> EnvManager:
        """A manager of a Gymnasium vector env whose slots all belong to ``behavior_name``
        (the trainer's name)."""
        return cls(VectorFront(env, behavior_name), trainer_name=lambda _: behavior_name)

    @classmethod
    def for_parallel_envs(
        cls,
        envs: Sequence[ParallelEnv[str, Any, Any]],
        trainer_name: TrainerNamer = default_trainer_name,
        self_play: Callable[[str], bool] | None = None,
        asynchronous: bool = True,
    ) -> EnvManager:
        """A manager of PettingZoo parallel envs, one per game process (see
        :class:`~trainers.game_fronts.PettingZooFront`, also for ``asynchronous``). If this
        raises, the envs are left open for the caller to close."""
        return cls(PettingZooFront(envs, asynchronous), trainer_name, self_play)

    def _group_parts(self, group: int) -> dict[str, _GroupPart]:
        """Each trainer's share of ``group`` (trainers without slots there are left out)."""
        by_id = self.front.group_agents(group)
        parts = {}
        for name, trainee in self._trainees.items():
            in_group = np.isin(trainee.agents, self.front.groups[group])
            slots = np.flatnonzero(in_group)
            if not slots.size:
                continue
            row_of_agent = {int(agent): row for row, agent in enumerate(trainee.agents[slots])}
            agents = {b: by_id[b] for b in trainee.behavior_ids if by_id[b].size}
            positions = {
                b: np.asarray([row_of_agent[int(a)] for a in ids], dtype=np.int64)
                for b, ids in agents.items()
            }
            identity = len(positions) == 1 and np.array_equal(
                next(iter(positions.values())), np.arange(slots.size)
            )
            parts[name] = _GroupPart(slots, agents, positions, identity)
        return parts

    # -- what the trainers see ------------------------------------------------------------------

    @property
    def behaviors(self) -> dict[str, BehaviorSlots]:
        """The slots of every trainer, keyed by trainer name."""
        return {
            name: BehaviorSlots(t.observation_layout, t.action_layout, len(t.agents))
            for name, t in self._trainees.items()
        }

    @property
    def behavior_names(self) -> list[str]:
        """The trainer names, in order."""
        return list(self._trainees)

    @property
    def behavior_ids(self) -> dict[str, list[str]]:
        """The behavior ids (``Tennis?team=0``, ...) each trainer drives."""
        return {name: list(t.behavior_ids) for name, t in self._trainees.items()}

    @property
    def slot_teams(self) -> dict[str, list[int]]:
        """Per trainer, the team id of each slot in slot order (the ``?team=<t>`` suffix of
        its behavior id; 0 without one)."""
        agents = self.front.agents
        return {
            name: [team_of(agents[i].behavior_id) for i in t.agents]
            for name, t in self._trainees.items()
        }

    @property
    def teams(self) -> list[int]:
        """Every team of the game, over all behaviors (``[0]`` for a game without teams)."""
        return sorted({team_of(behavior_id) for behavior_id in self.front.observation_layouts})

    @property
    def slot_agents(self) -> dict[str, list[tuple[int, str]]]:
        """Per trainer, the ``(game index, agent name)`` of each slot, in slot order."""
        agents = self.front.agents
        return {
            name: [(agents[i].game, agents[i].name) for i in t.agents]
            for name, t in self._trainees.items()
        }

    @property
    def num_groups(self) -> int:
        """How many groups step independently (one per game when stepping asynchronously)."""
        return len(self._parts)

    # -- the loop's interface ---------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Groups that were sent actions and whose step was not received yet."""
        return self.front.in_flight

    def start(self, seed: int | None) -> list[dict[str, BehaviorStep]]:
        """Reset every game; per group, steps with no reward, no done slot, ``valid`` False."""
        for trainee in self._trainees.values():
            trainee.episode_reward[:] = 0.0
            trainee.episode_length[:] = 0
        return [self._steps(front_step) for front_step in self.front.reset(seed)]

    def send(self, group: int, decisions: dict[str, PolicyDecision]) -> None:
        """Give ``group`` its next actions (it then steps)."""
        actions: FrontActions = {}
        for name, part in self._parts[group].items():
            decision = decisions[name]
            for behavior_id, positions in part.positions.items():
                layout = self.front.action_layouts[behavior_id]
                if part.identity:
                    actions[behavior_id] = layout.to_env(decision.continuous, decision.discrete)
                    continue
                actions[behavior_id] = layout.to_env(
                    None if decision.continuous is None else decision.continuous[positions],
                    None if decision.discrete is None else decision.discrete[positions],
                )
        self.front.send(group, actions)

    def receive(self) -> dict[str, BehaviorStep]:
        """Wait for the next group whose step finished and return what its slots saw."""
        return self._steps(self.front.receive(timeout=None))

    def receive_ready(self) -> list[dict[str, BehaviorStep]]:
        """:meth:`receive`, plus every other group whose step is already in (no more waiting)."""
        received = [self.receive()]
        while self.front.in_flight:
            try:
                received.append(self._steps(self.front.receive(timeout=0.0)))
            except TimeoutError:  # nothing else is in yet
                break
        return received

    def reset(self, seed: int | None) -> dict[str, BehaviorStep]:
        """:meth:`start` for a manager with one group (all slots step together).

        Raises:
            ValueError: the games step as several groups (use :meth:`start`).
        """
        self._require_one_group("reset")
        return self.start(seed)[0]

    def step(self, decisions: dict[str, PolicyDecision]) -> dict[str, BehaviorStep]:
        """:meth:`send` and :meth:`receive` for a manager with one group.

        Raises:
            ValueError: the games step as several groups (use :meth:`send`/:meth:`receive`).
        """
        self._require_one_group("step")
        self.send(0, decisions)
        return self.receive()

    def _require_one_group(self, method: str) -> None:
        if self.num_groups != 1:
            raise ValueError(
                f"{method}() steps every slot together, but these games step as "
                f"{self.num_groups} groups; use start(), send() and receive()."
            )

    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to the running games (:func:`apply_env_params`);
        False when the environment cannot take them."""
        return self.front.set_env_params(params)

    def take_game_stats(self) -> EnvironmentStats:
        """The games' own statistics (Unity's ``StatsRecorder``) since the previous call."""
        return self.front.take_stats()

    def close(self) -> None:
        """Close the games."""
        self.front.close()

    # -- assembling steps -------------------------------------------------------------------------

    def _steps(self, front_step: FrontStep) -> dict[str, BehaviorStep]:
        """Per trainer with slots in the group, the step of those slots."""
        group, rows = front_step
        steps = {}
        for name, part in self._parts[group].items():
            trainee = self._trainees[name]
            parts = {b: rows[b] for b in part.positions}
            if part.identity:
                step = self._step_of(group, next(iter(parts.values())), trainee)
            else:
                step = self._step_of(group, _merge(parts, part, trainee), trainee)
            steps[name] = step
        return steps

    def _step_of(self, group: int, rows: FrontRows, trainee: _Trainee) -> BehaviorStep:
        """The step of the trainer's slots of ``group`` from rows in slot order."""
        rewards = rows.rewards
        if rows.group_rewards is not None:
            if not self._group_reward_seen and rows.group_rewards.any():
                self._group_reward_seen = True
                logger.info(
                    "Agents receive group rewards; they are added to each member's own "
                    "reward (POCA also credits them to the whole group)."
                )
            rewards = (rewards + rows.group_rewards).astype(np.float32)
        group_ids = None
        if rows.group_ids is not None:
            games = self._game_of_agent[rows.agents]
            group_ids = np.where(rows.group_ids != 0, games * GROUP_ID_SPAN + rows.group_ids, 0)
        slots = self._parts[group][trainee.name].slots
        step = BehaviorStep(
            observations=rows.observations,
            action_mask=rows.action_mask,
            rewards=rewards,
            terminated=rows.terminated,
            truncated=rows.truncated,
            valid=rows.valid,
            final_observations=rows.final_observations,
            final_action_mask=rows.final_action_mask,
            group=group,
            group_ids=group_ids,
            group_rewards=rows.group_rewards,
            slots=slots,
        )
        step.episodes = _track_episodes(trainee, slots, step)
        return step


def _merge(parts: dict[str, FrontRows], part: _GroupPart, trainee: _Trainee) -> FrontRows:
    """The rows of several behavior ids (teams) as one batch in the trainer's slot order."""
    n = part.slots.size
    first = next(iter(parts.values()))
    has_mask = any(rows.action_mask is not None for rows in parts.values())
    has_groups = any(rows.group_ids is not None for rows in parts.values())
    has_group_rewards = any(rows.group_rewards is not None for rows in parts.values())
    merged = FrontRows(
        agents=np.zeros(n, dtype=np.int64),
        observations=[np.zeros((n, *e.shape[1:]), dtype=e.dtype) for e in first.observations],
        action_mask=trainee.action_layout.full_mask(n) if has_mask else None,
        rewards=np.zeros(n, dtype=np.float32),
        group_rewards=np.zeros(n, dtype=np.float32) if has_group_rewards else None,
        terminated=np.zeros(n, dtype=bool),
        truncated=np.zeros(n, dtype=bool),
        valid=np.zeros(n, dtype=bool),
        final_observations=[
            np.zeros((n, *e.shape[1:]), dtype=e.dtype) for e in first.final_observations
        ],
        final_action_mask=trainee.action_layout.full_mask(n) if has_mask else None,
        group_ids=np.zeros(n, dtype=np.int64) if has_groups else None,
    )
    for behavior_id, rows in parts.items():
        # the front lists a behavior id's agents of the group in one fixed order
        order = _position_of(rows.agents, part.agents[behavior_id])
        at = part.positions[behavior_id][order]
        merged.agents[at] = rows.agents
        for target, source in zip(merged.observations, rows.observations, strict=True):
            target[at] = source
        for target, source in zip(merged.final_observations, rows.final_observations, strict=True):
            target[at] = source
        merged.rewards[at] = rows.rewards
        merged.terminated[at] = rows.terminated
        merged.truncated[at] = rows.truncated
        merged.valid[at] = rows.valid
        if merged.action_mask is not None and rows.action_mask is not None:
            merged.action_mask[at] = rows.action_mask
        if merged.final_action_mask is not None and rows.final_action_mask is not None:
            merged.final_action_mask[at] = rows.final_action_mask
        if merged.group_rewards is not None and rows.group_rewards is not None:
            merged.group_rewards[at] = rows.group_rewards
        if merged.group_ids is not None and rows.group_ids is not None:
            merged.group_ids[at] = rows.group_ids
    return merged


def _position_of(agents: np.ndarray, listed: np.ndarray) -> np.ndarray:
    """For each of ``agents``, its index in ``listed`` (both hold the same agent indices)."""
    if np.array_equal(agents, listed):
        return np.arange(len(agents))
    index = {int(agent): i for i, agent in enumerate(listed)}
    return np.asarray([index[int(agent)] for agent in agents], dtype=np.int64)


def _track_episodes(
    trainee: _Trainee, slots: np.ndarray, step: BehaviorStep
) -> list[tuple[float, int]]:
    """Add the step to the slots' running episodes; the ``(return, length)`` of those that
    ended."""
    valid = step.valid
    trainee.episode_reward[slots] += np.where(valid, step.rewards, 0.0)
    trainee.episode_length[slots] += valid
    finished = slots[step.done]
    episodes = [
        (float(trainee.episode_reward[slot]), int(trainee.episode_length[slot]))
        for slot in finished
    ]
    trainee.episode_reward[finished] = 0.0
    trainee.episode_length[finished] = 0
    return episodes


def _check_teams_alike(front: GameFront, behavior_ids: list[str]) -> None:
    """Teams of one behavior name share one policy: same observation shapes and actions.

    Raises:
        ConfigError: they differ.
    """
    reference = behavior_ids[0]
    observations = front.observation_layouts
    actions = front.action_layouts
    for behavior_id in behavior_ids[1:]:
        if _observation_signature(observations[behavior_id]) != _observation_signature(
            observations[reference]
        ):
            raise ConfigError(
                f"{behavior_id!r} and {reference!r} observe differently shaped inputs "
                f"({_describe(observations[behavior_id])} vs "
                f"{_describe(observations[reference])}); teams of one behavior name "
                "share one policy and must observe the same shapes."
            )
        if _action_signature(actions[behavior_id]) != _action_signature(actions[reference]):
            raise ConfigError(
                f"{behavior_id!r} and {reference!r} have different action spaces; teams of "
                "one behavior name share one policy and must act alike."
            )


def _observation_signature(layout: ObservationLayout) -> tuple[object, ...]:
    """Everything about a layout's entries except their names."""
    return (
        layout.is_dict,
        tuple(
            (
                e.kind,
                e.raw_shape,
                e.network_shape,
                np.dtype(e.raw_dtype).str,
                e.channels_last,
                e.scale,
                e.categories,
                e.offsets,
                e.goal,
            )
            for e in layout.entries
        ),
    )


def _action_signature(layout: ActionLayout) -> tuple[object, ...]:
    """Everything about an action layout, comparable with ``==`` (bounds as tuples)."""

    def values(array: np.ndarray | None) -> tuple[float, ...] | None:
        return None if array is None else tuple(float(v) for v in np.asarray(array).reshape(-1))

    return (
        layout.kind,
        layout.continuous_size,
        layout.discrete_branches,
        values(layout.low),
        values(layout.high),
        layout.box_shape,
        None if layout.box_dtype is None else np.dtype(layout.box_dtype).str,
        layout.discrete_start,
        layout.discrete_is_scalar,
    )


def _describe(layout: ObservationLayout) -> str:
    """``name: shape`` of every entry, for error messages."""
    return ", ".join(f"{e.name}: {e.raw_shape}" for e in layout.entries)
