"""PettingZoo parallel envs (one per game process) as a game front, for games with teams or
several behaviors.

It uses nothing but the public PettingZoo ``ParallelEnv`` API plus the infos of
``unity_gym.pettingzoo``.

Agents. The front's agents are every agent of ``possible_agents`` in every env: env 0's agents
first, each env's in ``possible_agents`` order. An agent's behavior id is the env's
``metadata["agent_behaviors"]`` entry where it has one (``unity_gym``'s envs declare them), else
``info["behavior_name"]`` at a first unseeded reset (without it, the agent's name without its
``_<n>`` suffix, PettingZoo's naming convention).

Episodes. PettingZoo episodes end agent by agent: an agent that finishes (terminated or
truncated) leaves ``env.agents`` until the next reset. Its row reports that step (reward, done
flags, ``final_observations`` = the observation returned with the done flag) and is then
``valid = False`` (its action is ignored and must not be learned from) with its last
observation. When an env has no agent left it is reset at once, within the same step, so the
rows' ``observations`` already are the new episode's first ones while ``final_observations``
still hold the last ones; the next step is valid again. An agent of ``possible_agents`` that is
not part of a new episode stays invalid until the next reset.

Agents that play on (``unity_gym.pettingzoo``'s ``agent_autoreset=True``, where each agent
restarts as in Unity): an agent that finishes and stays in ``env.agents`` was restarted in the
same step; its row reports the step, ``final_observations`` = ``info["final_observation"]``
(mask and group id from ``info["final_info"]``) and ``observations`` = its new episode's first,
and stays valid. An agent that appears in a step's observations without having acted (it joined
``env.agents``) takes its row with that first observation: invalid in that step, valid from the
next. Such an env is reset only when no agent is left.

Faults. A ``unity_gym.pettingzoo`` env whose game crashes or stops answering restarts it (within
its restart limits, which ``unity-train`` sets from ``env_settings``) and reports every live agent
truncated with its latest observation and ``info["restart_reason"]``. That is an ordinary
truncation here: the rows report the step with those observations as ``final_observations``,
the emptied env is reset into the restarted game at once, and the next step is valid again.
Beyond the limits the env raises ``RestartLimitError``, which ends the run.

Groups and rewards. Every step reports each agent's ``info["group_id"]`` as last reported (new
episodes included; 0 = no group) and ``info["group_reward"]`` (missing: 0) apart from the
agent's own reward.

Action masks. ``info["action_mask"]`` in the format of ``action_space(agent).sample(mask=...)``
(an int8 array, a tuple of them per branch, or ``{"continuous": None, "discrete": ...}``, 1 =
allowed) becomes one flat bool row per agent, branches concatenated, ``True`` = allowed. As long
as no agent of a behavior id has sent a mask its mask is ``None``.

Seeding and stepping. ``reset(seed)`` resets env *i* with ``seed + i`` (``None``: unseeded);
the automatic resets of finished envs are unseeded. With several envs, every env steps and resets
in a thread of its own (an env's calls wait for its game, which releases the GIL). By default each
env is a group of its own, stepped asynchronously as ML-Agents' environment manager steps its
workers: an env gets its next actions as soon as its step is in, while the others play on, and
a failure is raised when that env's step is received. With ``asynchronous=False`` all envs step
together as one group: results are taken in env order, so the outcome does not depend on which
game answers first, and a failure in one env is raised after the others finished their call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from pettingzoo import ParallelEnv

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.game_fronts.base import FrontActions, FrontAgent, FrontRows, FrontStep, GameFront
from trainers.game_fronts.vector import apply_env_params, take_game_stats
from unity_gym.side_channels import EnvironmentStats
from unity_gym.timers import hierarchical_timer

__all__ = ["PettingZooFront", "close_all"]

_T = TypeVar("_T")


@dataclass
class _BehaviorState:
    """The running state of the agents of one behavior id (rows in agent-index order)."""

    agents: np.ndarray
    observation_layout: ObservationLayout
    action_layout: ActionLayout
    names: list[str]
    observations: list[np.ndarray] = field(default_factory=list)
    mask: np.ndarray | None = None
    live: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    group_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        n = len(self.agents)
        self.observations = [
            np.zeros((n, *entry.raw_shape), dtype=entry.raw_dtype)
            for entry in self.observation_layout.entries
        ]
        self.live = np.zeros(n, dtype=bool)
        self.group_ids = np.zeros(n, dtype=np.int64)

    def write(self, row: int, observation: Any, info: Mapping[str, Any]) -> None:
        """Store one agent's observation, mask and group id in ``row``."""
        layout = self.observation_layout
        values = [observation[name] for name in layout.names] if layout.is_dict else [observation]
        for array, value in zip(self.observations, values, strict=True):
            array[row] = np.asarray(value).reshape(array.shape[1:])
        self.group_ids[row] = int(info.get("group_id", 0))
        self._write_mask(row, info)

    def _write_mask(self, row: int, info: Mapping[str, Any]) -> None:
        if not self.action_layout.has_discrete:
            return
        raw = info.get("action_mask")
        if raw is None:
            if self.mask is not None:
                self.mask[row] = True
            return
        if self.mask is None:
            self.mask = self.action_layout.full_mask(len(self.agents))
        flat = _flat_mask(raw)
        if flat.size != self.action_layout.discrete_size:
            raise ValueError(
                f"info['action_mask'] of agent {self.names[row]!r} has {flat.size} entries "
                f"but its action space has {self.action_layout.discrete_size} choices (branches "
                f"{list(self.action_layout.discrete_branches)})."
            )
        self.mask[row] = flat

    def copy_observations(self) -> list[np.ndarray]:
        """Copies of the per-entry arrays (trainers keep what a step hands them)."""
        return [array.copy() for array in self.observations]

    def copy_mask(self) -> np.ndarray | None:
        """A copy of the masks, or ``None`` while no agent has sent one."""
        return None if self.mask is None else self.mask.copy()


class PettingZooFront(GameFront):
    """Drives PettingZoo parallel envs, one per game process (see the module documentation).

    Args:
        envs: the envs, all with the same ``possible_agents`` and spaces. The front resets each
            once without a seed to read its agents' behaviors (``unity_gym.pettingzoo`` envs
            that were just created do not restart their game for that). From then on the front
            owns them and :meth:`close` closes them; if the constructor raises, they are left
            open for the caller to close.
        asynchronous: with several envs, step each game as its own group (the default): a game
            gets its next actions as soon as its step is in, while the others play on.
            ``False`` steps all games together (one group; results in env order).

    Raises:
        ValueError: no env, envs that differ in ``possible_agents`` or behaviors, or an agent of
            ``possible_agents`` missing from the first episode.
    """

    def __init__(
        self, envs: Sequence[ParallelEnv[str, Any, Any]], asynchronous: bool = True
    ) -> None:
        if not envs:
            raise ValueError("the PettingZoo front needs at least one environment.")
        self.envs = list(envs)
        self._pool: ThreadPoolExecutor | None = None  # created last: nothing to stop on errors
        behavior_of_agent = self._read_behaviors()
        possible = list(self.envs[0].possible_agents)
        first = self.envs[0]
        goal_keys = first.metadata.get("goal_signal_keys", {})
        entity_keys = first.metadata.get("variable_length_keys", {})
        self.agents = [
            FrontAgent(index, behavior_of_agent[agent], agent)
            for index in range(len(self.envs))
            for agent in possible
        ]
        self.observation_layouts = {}
        self.action_layouts = {}
        for behavior_id in sorted(set(behavior_of_agent.values())):
            example = next(a for a in possible if behavior_of_agent[a] == behavior_id)
            self.observation_layouts[behavior_id] = ObservationLayout.from_space(
                first.observation_space(example),
                goal_keys.get(behavior_id, ()),
                entity_keys.get(behavior_id, ()),
            )
            self.action_layouts[behavior_id] = ActionLayout.from_space(first.action_space(example))
        # (env index, agent name) -> (behavior id, row of that id)
        self._row_of: list[dict[str, tuple[str, int]]] = [{} for _ in self.envs]
        self._states: dict[str, _BehaviorState] = {}
        for behavior_id in self.observation_layouts:
            indices = [i for i, a in enumerate(self.agents) if a.behavior_id == behavior_id]
            for row, index in enumerate(indices):
                agent = self.agents[index]
                self._row_of[agent.game][agent.name] = (behavior_id, row)
            self._states[behavior_id] = _BehaviorState(
                agents=np.asarray(indices, dtype=np.int64),
                observation_layout=self.observation_layouts[behavior_id],
                action_layout=self.action_layouts[behavior_id],
                names=[self.agents[i].name for i in indices],
            )
        # env index -> behavior id -> the rows of that id that live in the env (sorted)
        self._env_rows = [
            {
                behavior_id: np.asarray(
                    sorted(row for b, row in self._row_of[index].values() if b == behavior_id),
                    dtype=np.int64,
                )
                for behavior_id in self._states
            }
            for index in range(len(self.envs))
        ]
        self.asynchronous = asynchronous and len(self.envs) > 1
        per_env = len(possible)
        if self.asynchronous:
            self._groups = [
                np.arange(i * per_env, (i + 1) * per_env, dtype=np.int64)
                for i in range(len(self.envs))
            ]
        else:
            self._groups = [np.arange(len(self.agents), dtype=np.int64)]
        self._pending: FrontActions | None = None  # lock-step: the sent actions
        self._playing: dict[int, tuple[Future[_Played], dict[str, Any]]] = {}  # asynchronous
        if len(self.envs) > 1:
            self._pool = ThreadPoolExecutor(len(self.envs), thread_name_prefix="pettingzoo-env")

    def _read_behaviors(self) -> dict[str, str]:
        """Agent name -> behavior id (see the module documentation)."""
        possible = list(self.envs[0].possible_agents)
        behavior_of_agent: dict[str, str] = {}
        for index, env in enumerate(self.envs):
            if list(env.possible_agents) != possible:
                raise ValueError(
                    f"environment {index} has agents {list(env.possible_agents)}, environment 0 "
                    f"has {possible}; all game processes must hold the same agents."
                )
            declared = dict(getattr(env, "metadata", None) or {}).get("agent_behaviors") or {}
            _, infos = env.reset()
            for agent in possible:
                if agent in declared:
                    behavior = str(declared[agent])
                elif agent in infos:
                    behavior = str(infos[agent].get("behavior_name") or agent.rsplit("_", 1)[0])
                else:
                    raise ValueError(
                        f"agent {agent!r} of possible_agents is not in the first episode of "
                        f"environment {index}; its behavior cannot be known."
                    )
                known = behavior_of_agent.setdefault(agent, behavior)
                if known != behavior:
                    raise ValueError(
                        f"agent {agent!r} has behavior {behavior!r} in environment {index} but "
                        f"{known!r} in environment 0; all game processes must be the same game."
                    )
        return behavior_of_agent

    # -- the front interface ----------------------------------------------------------------

    @property
    def groups(self) -> list[np.ndarray]:
        """One group per env when stepping asynchronously, else one of every agent."""
        return self._groups

    @property
    def in_flight(self) -> int:
        """Groups that were sent actions and whose step was not received yet."""
        if self.asynchronous:
            return len(self._playing)
        return int(self._pending is not None)

    def reset(self, seed: int | None) -> list[FrontStep]:
        """Reset every env (env *i* with ``seed + i``); one step per group."""
        self._pending = None
        self._settle()
        for state in self._states.values():
            state.live[:] = False
        with hierarchical_timer("env_reset"):
            indices = list(range(len(self.envs)))
            starts = self._each(
                indices,
                lambda index: self.envs[index].reset(seed=None if seed is None else seed + index),
            )
            for index, (observations, infos) in zip(indices, starts, strict=True):
                self._start_episode(index, observations, infos)
        firsts = [self._first_rows(index) for index in indices]
        if self.asynchronous:
            return list(enumerate(firsts))
        return [(0, _concat(firsts))]

    def send(self, group: int, actions: FrontActions) -> None:
        """Give a game its agents' actions; it steps at once in its thread (lock-step: kept
        until :meth:`receive`, which steps every game)."""
        if not self.asynchronous:
            if group != 0 or self._pending is not None:
                raise ValueError(f"group {group} was sent twice or does not exist (only group 0).")
            self._pending = actions
            return
        if group in self._playing:
            raise ValueError(f"group {group} was sent twice (its step is still running).")
        env_actions = self._env_actions(group, actions, offset=True)
        assert self._pool is not None  # asynchronous means several envs
        future = self._pool.submit(self._play, group, env_actions)
        self._playing[group] = (future, env_actions)

    def receive(self, timeout: float | None) -> FrontStep:
        """The next game whose step is in (lock-step: every game's step)."""
        if not self.asynchronous:
            if self._pending is None:
                raise ValueError("receive() without send(): no step is under way.")
            actions, self._pending = self._pending, None
            return 0, self._step_all(actions)
        if not self._playing:
            raise ValueError("receive() without send(): no step is under way.")
        with hierarchical_timer("env_receive"):
            futures = [future for future, _ in self._playing.values()]
            done, _ = wait_all(futures, timeout=timeout, return_when=FIRST_COMPLETED)
        if not done:
            raise TimeoutError("no game finished its step in time.")
        index = min(i for i, (future, _) in self._playing.items() if future in done)
        future, env_actions = self._playing.pop(index)
        played = future.result()  # the env's failure, if any, is raised here
        return index, self._absorb(index, env_actions, played)

    def take_stats(self) -> EnvironmentStats:
        """The game statistics received since the previous call, env 0's first, of every env
        whose step is not running (a running step may be adding to them: those come with a
        later call)."""
        merged: EnvironmentStats = {}
        for index, env in enumerate(self.envs):
            if index in self._playing:
                continue
            for key, values in take_game_stats(env).items():
                merged.setdefault(key, []).extend(values)
        return merged

    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to every env's game (see
        :func:`~trainers.game_fronts.vector.apply_env_params`); False if an env cannot take
        them."""
        return all([apply_env_params(env, params) for env in self.envs])

    def close(self) -> None:
        """Close every env (all of them, even if closing one fails), then the env threads."""
        try:
            close_all(self.envs)  # first: a call still waiting for its game then fails at once
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self._playing.clear()

    # -- stepping -----------------------------------------------------------------------------

    def _step_all(self, actions: FrontActions) -> dict[str, FrontRows]:
        """Lock-step: step every env at once (one thread each); results in env order."""
        indices = list(range(len(self.envs)))
        per_env = [self._env_actions(index, actions, offset=False) for index in indices]
        with hierarchical_timer("env_step"):
            played = self._each(indices, lambda index: self._play(index, per_env[index]))
        return _concat(
            [self._absorb(i, per_env[i], result) for i, result in zip(indices, played, strict=True)]
        )

    def _env_actions(self, index: int, actions: FrontActions, offset: bool) -> dict[str, Any]:
        """Env ``index``'s live agents' actions out of per-behavior batches: of that env's
        agents only (``offset``, a group's actions) or of every env's."""
        rows = self._row_of[index]
        out = {}
        for agent in self.envs[index].agents:
            behavior_id, row = rows[agent]
            if offset:  # the batch holds only this env's rows of the behavior id
                row = int(np.searchsorted(self._env_rows[index][behavior_id], row))
            out[agent] = _row(actions[behavior_id], row)
        return out

    def _play(self, index: int, env_actions: dict[str, Any]) -> _Played:
        """In the env's thread: step env ``index`` (if it has live agents), then reset it if
        no agent is left."""
        env = self.envs[index]
        result = env.step(env_actions) if env_actions else None
        playing = frozenset(env.agents)
        reset = None if playing else env.reset()
        return result, playing, reset

    def _absorb(
        self, index: int, env_actions: dict[str, Any], played: _Played
    ) -> dict[str, FrontRows]:
        """Record env ``index``'s step and reset; its agents' rows per behavior id."""
        result, playing, reset = played
        env_rows = self._env_rows[index]
        outcome = {b: _Outcome.empty(len(env_rows[b])) for b in self._states}
        for behavior_id, state in self._states.items():
            outcome[behavior_id].valid[:] = state.live[env_rows[behavior_id]]
        starting: list[tuple[str, Any, Mapping[str, Any]]] = []  # agents with a new episode
        if result is not None:
            observations, rewards, terminations, truncations, infos = result
            for agent in env_actions:
                behavior_id, row = self._row_of[index][agent]
                state, out = self._states[behavior_id], outcome[behavior_id]
                at = int(np.searchsorted(env_rows[behavior_id], row))
                info = infos.get(agent, {})
                out.rewards[at] = float(rewards[agent])
                out.group_rewards[at] = float(info.get("group_reward", 0.0))
                out.terminated[at] = bool(terminations[agent])
                out.truncated[at] = bool(truncations[agent])
                if not (out.terminated[at] or out.truncated[at]):
                    state.write(row, observations[agent], info)
                elif agent in playing:  # restarted in the same step (agent autoreset)
                    state.write(row, info["final_observation"], info.get("final_info", info))
                    starting.append((agent, observations[agent], info))
                else:
                    state.write(row, observations[agent], info)
                    state.live[row] = False
            starting += [
                (agent, observations[agent], infos.get(agent, {}))
                for agent in playing
                if agent not in env_actions
            ]  # joined in this step (agent autoreset): acts from the next step on
        finals = {b: self._rows_now(b, env_rows[b]) for b in self._states}
        for agent, observation, info in starting:
            behavior_id, row = self._row_of[index][agent]
            self._states[behavior_id].write(row, observation, info)
            self._states[behavior_id].live[row] = True
        if reset is not None:
            self._start_episode(index, *reset)
        steps = {}
        for behavior_id, state in self._states.items():
            rows, out = env_rows[behavior_id], outcome[behavior_id]
            final_observations, final_mask = finals[behavior_id]
            observations, mask = (
                self._rows_now(behavior_id, rows)
                if reset is not None or starting
                else finals[behavior_id]
            )
            steps[behavior_id] = FrontRows(
                agents=state.agents[rows],
                observations=observations,
                action_mask=mask,
                rewards=out.rewards,
                group_rewards=out.group_rewards,
                terminated=out.terminated,
                truncated=out.truncated,
                valid=out.valid,
                final_observations=final_observations,
                final_action_mask=final_mask,
                group_ids=state.group_ids[rows].copy(),
            )
        return steps

    def _first_rows(self, index: int) -> dict[str, FrontRows]:
        """Env ``index``'s rows just after a reset: no reward, nothing done, nothing valid."""
        out = {}
        for behavior_id, state in self._states.items():
            rows = self._env_rows[index][behavior_id]
            observations, mask = self._rows_now(behavior_id, rows)
            out[behavior_id] = FrontRows.first(
                state.agents[rows],
                observations,
                mask,
                state.group_ids[rows].copy(),
                reports_group_rewards=True,
            )
        return out

    def _rows_now(
        self, behavior_id: str, rows: np.ndarray
    ) -> tuple[list[np.ndarray], np.ndarray | None]:
        """Copies of the current observations and mask of ``rows`` of a behavior id."""
        state = self._states[behavior_id]
        mask = None if state.mask is None else state.mask[rows]
        return [array[rows] for array in state.observations], mask

    def _settle(self) -> None:
        """Wait for the games still stepping and drop their results (before a reset)."""
        playing, self._playing = self._playing, {}
        if playing:
            wait_all([future for future, _ in playing.values()])
            for future, _ in playing.values():
                future.result()

    def _each(self, indices: Sequence[int], call: Callable[[int], _T]) -> list[_T]:
        """``call(index)`` for each of ``indices``, results in the same order.

        With several envs the calls run in the env threads at the same time. All of them have
        finished when this returns or raises (the first failure in ``indices`` order).
        """
        if self._pool is None or len(indices) < 2:
            return [call(index) for index in indices]
        futures: list[Future[_T]] = [self._pool.submit(call, index) for index in indices]
        wait_all(futures)
        return [future.result() for future in futures]

    def _start_episode(
        self, index: int, observations: Mapping[str, Any], infos: Mapping[str, Any]
    ) -> None:
        """Take the first observations of env ``index``'s new episode into the rows."""
        rows = self._row_of[index]
        for behavior_id, row in rows.values():
            self._states[behavior_id].live[row] = False
        for agent in self.envs[index].agents:
            behavior_id, row = rows[agent]
            state = self._states[behavior_id]
            state.live[row] = True
            state.write(row, observations[agent], infos.get(agent, {}))


_Played = tuple[Any, frozenset[str], Any]
"""An env's step result (``None``: no agent was live), its ``agents`` after the step and its
reset result (``None``: not reset)."""


@dataclass
class _Outcome:
    """One step's results for some agents of one behavior id."""

    rewards: np.ndarray
    group_rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _Outcome:
        """No reward, nothing done, no row valid, for ``n`` rows."""
        return cls(
            rewards=np.zeros(n, dtype=np.float32),
            group_rewards=np.zeros(n, dtype=np.float32),
            terminated=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool),
            valid=np.zeros(n, dtype=bool),
        )


def _concat(parts: Sequence[dict[str, FrontRows]]) -> dict[str, FrontRows]:
    """The rows of several envs (in env order) as one batch per behavior id."""
    out = {}
    for behavior_id in parts[0]:
        rows = [part[behavior_id] for part in parts]
        out[behavior_id] = FrontRows(
            agents=np.concatenate([r.agents for r in rows]),
            observations=_concat_entries([r.observations for r in rows]),
            action_mask=_concat_masks([r.action_mask for r in rows], rows),
            rewards=np.concatenate([r.rewards for r in rows]),
            group_rewards=np.concatenate([_must(r.group_rewards) for r in rows]),
            terminated=np.concatenate([r.terminated for r in rows]),
            truncated=np.concatenate([r.truncated for r in rows]),
            valid=np.concatenate([r.valid for r in rows]),
            final_observations=_concat_entries([r.final_observations for r in rows]),
            final_action_mask=_concat_masks([r.final_action_mask for r in rows], rows),
            group_ids=np.concatenate([_must(r.group_ids) for r in rows]),
        )
    return out


def _concat_entries(per_env: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Per observation entry, the envs' arrays one after the other."""
    return [np.concatenate([entries[i] for entries in per_env]) for i in range(len(per_env[0]))]


def _concat_masks(masks: list[np.ndarray | None], rows: list[FrontRows]) -> np.ndarray | None:
    """Masks of several envs; an env without one yet gets all-allowed rows."""
    present = [mask for mask in masks if mask is not None]
    if not present:
        return None
    width = present[0].shape[1]
    return np.concatenate(
        [
            np.ones((len(r.agents), width), dtype=bool) if mask is None else mask
            for mask, r in zip(masks, rows, strict=True)
        ]
    )


def _must(array: np.ndarray | None) -> np.ndarray:
    assert array is not None  # the PettingZoo front always reports group ids and rewards
    return array


def _row(batch: Any, row: int) -> Any:
    """One agent's action out of a batch in :meth:`ActionLayout.to_env` format."""
    if isinstance(batch, Mapping):
        return {key: value[row] for key, value in batch.items()}
    return batch[row]


def _flat_mask(raw: Any) -> np.ndarray:
    """A ``space.sample(mask=...)`` mask as one flat bool array (``True`` = allowed)."""
    if isinstance(raw, Mapping):
        raw = raw.get("discrete")
        if raw is None:
            return np.zeros(0, dtype=bool)
    if isinstance(raw, tuple | list):
        parts = [np.asarray(part).reshape(-1) for part in raw]
        return np.concatenate(parts).astype(bool) if parts else np.zeros(0, dtype=bool)
    return np.asarray(raw).reshape(-1).astype(bool)


def close_all(envs: Sequence[ParallelEnv[str, Any, Any]]) -> None:
    """Close every env, even if closing one fails (the first error is raised at the end)."""
    errors: list[BaseException] = []
    for env in envs:
        try:
            env.close()
        except Exception as exc:  # close the others, then report
            errors.append(exc)
    if errors:
        raise errors[0]
