"""The env manager over PettingZoo games (its PettingZoo front): built-in Tennis and
SoccerTwos, and a two-behavior scene.

Every env is a real ``unity_gym.pettingzoo`` env driving a headless-player process over gRPC.
A pass-through recorder keeps what each env returned; the checks compare the manager's output
with expectations built from those raw PettingZoo results by the test's own bookkeeping.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pytest
from pettingzoo import ParallelEnv
from process_utils import python_path_with
from trainer_scenes import GROUP_REWARD, SCENE, SCENE_FOLDER

from trainers.contract import BehaviorStep, PolicyDecision
from trainers.env_manager import EnvManager
from unity_gym.pettingzoo import RestartLimitError, UnityParallelEnv, parallel_env

pytestmark = pytest.mark.timeout(120)

SELF_PLAY_WARNING = "self-play is not configured"


class RecordingEnv(ParallelEnv[str, Any, Any]):
    """A real PettingZoo env passed through unchanged; every reset and step result is kept."""

    def __init__(self, env: ParallelEnv[str, Any, Any]) -> None:
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = env.metadata
        self.log: list[dict[str, Any]] = []

    @property  # type: ignore[override]
    def agents(self) -> list[str]:
        return list(self.env.agents)

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(agent)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self.log.append({"kind": "reset", "seed": seed, "obs": observations, "infos": infos})
        return observations, infos

    def step(self, actions: dict[str, Any]) -> Any:
        result = self.env.step(actions)
        observations, rewards, terminations, truncations, infos = result
        self.log.append(
            {
                "kind": "step",
                "actions": {agent: np.array(action) for agent, action in actions.items()},
                "obs": observations,
                "rewards": rewards,
                "terminated": terminations,
                "truncated": truncations,
                "infos": infos,
            }
        )
        return result

    def close(self) -> None:
        self.env.close()


def _entries(env: RecordingEnv, agent: str, observation: Any) -> list[np.ndarray]:
    """An agent's observation as a list of arrays in its own space's entry order."""
    space = env.observation_space(agent)
    if hasattr(space, "spaces") and isinstance(space.spaces, dict):
        return [np.asarray(observation[key]) for key in space.spaces]
    return [np.asarray(observation)]


def _flat(mask: Any) -> np.ndarray:
    parts = mask if isinstance(mask, tuple) else (mask,)
    return np.concatenate([np.asarray(p, dtype=bool).reshape(-1) for p in parts])


@dataclass
class Bookkeeping:
    """The test's own view of every slot, built from the recorded PettingZoo results."""

    manager: EnvManager
    envs: list[RecordingEnv]
    finished: dict[tuple[int, str], bool] = field(default_factory=dict)
    returns: dict[tuple[int, str], float] = field(default_factory=dict)
    lengths: dict[tuple[int, str], int] = field(default_factory=dict)
    resets: int = 0
    done_reports: int = 0
    idle_while_others_play: int = 0
    group_reward_seen: float = 0.0

    def check_reset(self, seed: int, result: dict[str, BehaviorStep]) -> None:
        for index, env in enumerate(self.envs):
            entry = env.log[-1]
            assert entry["kind"] == "reset" and entry["seed"] == seed + index
        for name, step in result.items():
            assert not step.valid.any() and not step.done.any() and not step.rewards.any()
            for slot, (index, agent) in enumerate(self.manager.slot_agents[name]):
                self.finished[index, agent] = False
                self.returns[index, agent], self.lengths[index, agent] = 0.0, 0
                entry = self.envs[index].log[-1]
                self._same_observation(step.observations, slot, index, agent, entry["obs"])
                self._same_mask(step.action_mask, slot, entry["infos"][agent])

    def check_step(
        self,
        decisions: dict[str, PolicyDecision],
        marks: list[int],
        result: dict[str, BehaviorStep],
    ) -> None:
        """Compare one manager step with the env log entries written since ``marks``."""
        new = [env.log[mark:] for env, mark in zip(self.envs, marks, strict=True)]
        for entries in new:
            assert entries[0]["kind"] == "step"
            assert len(entries) == 1 or (len(entries) == 2 and entries[1]["kind"] == "reset")
            assert entries[-1]["kind"] != "reset" or entries[-1]["seed"] is None
        self.resets += sum(len(entries) == 2 for entries in new)
        for name, step in result.items():
            expected_episodes = []
            decision = decisions[name]
            for slot, (index, agent) in enumerate(self.manager.slot_agents[name]):
                stepped, reset = new[index][0], new[index][1] if len(new[index]) == 2 else None
                acted = agent in stepped["actions"]
                key = (index, agent)
                assert step.valid[slot] == acted == (not self.finished[key])
                if not acted:
                    assert step.rewards[slot] == 0.0 and not step.done[slot]
                    if stepped["actions"]:  # other agents of the same game played on
                        self.idle_while_others_play += 1
                else:
                    if decision.continuous is not None:
                        np.testing.assert_allclose(  # rescaled to the Box [-1, 1]
                            stepped["actions"][agent].reshape(-1),
                            decision.continuous[slot],
                            atol=1e-6,
                        )
                    if decision.discrete is not None:
                        assert stepped["actions"][agent].reshape(-1).tolist() == (
                            decision.discrete[slot].tolist()
                        )
                    group = float(stepped["infos"][agent]["group_reward"])
                    self.group_reward_seen += abs(group)
                    reward = float(stepped["rewards"][agent]) + group
                    assert step.rewards[slot] == pytest.approx(reward)
                    assert step.terminated[slot] == stepped["terminated"][agent]
                    assert step.truncated[slot] == stepped["truncated"][agent]
                    self._same_observation(
                        step.final_observations, slot, index, agent, stepped["obs"]
                    )
                    self._same_mask(step.final_action_mask, slot, stepped["infos"][agent])
                    self.returns[key] += reward
                    self.lengths[key] += 1
                    if step.done[slot]:
                        self.done_reports += 1
                        self.finished[key] = True
                        expected_episodes.append((self.returns[key], self.lengths[key]))
                        self.returns[key], self.lengths[key] = 0.0, 0
                if reset is not None:  # a new episode: the slot plays again from its first obs
                    assert agent in reset["obs"]
                    self.finished[key] = False
                    self._same_observation(step.observations, slot, index, agent, reset["obs"])
                    self._same_mask(step.action_mask, slot, reset["infos"][agent])
                elif acted:
                    self._same_observation(step.observations, slot, index, agent, stepped["obs"])
            assert len(step.episodes) == len(expected_episodes)
            for (got_return, got_length), (want_return, want_length) in zip(
                step.episodes, expected_episodes, strict=True
            ):
                assert got_return == pytest.approx(want_return, abs=1e-4)
                assert got_length == want_length

    def _same_observation(
        self, arrays: list[np.ndarray], slot: int, index: int, agent: str, observations: Any
    ) -> None:
        wanted = _entries(self.envs[index], agent, observations[agent])
        assert len(arrays) == len(wanted)
        for array, value in zip(arrays, wanted, strict=True):
            np.testing.assert_array_equal(array[slot], value)

    def _same_mask(self, mask: np.ndarray | None, slot: int, info: dict[str, Any]) -> None:
        if "action_mask" not in info:
            return
        assert mask is not None and mask.dtype == bool
        np.testing.assert_array_equal(mask[slot], _flat(info["action_mask"]))


def _random_decisions(
    manager: EnvManager, current: dict[str, BehaviorStep], rng: np.random.Generator
) -> dict[str, PolicyDecision]:
    """Random actions; discrete ones picked among the allowed choices of each branch."""
    decisions = {}
    for name, slots in manager.behaviors.items():
        layout = slots.action_layout
        n = slots.num_slots
        continuous = None
        if layout.has_continuous:
            continuous = rng.uniform(-1, 1, (n, layout.continuous_size)).astype(np.float32)
        discrete = None
        if layout.has_discrete:
            mask = current[name].action_mask
            discrete = np.zeros((n, len(layout.discrete_branches)), dtype=np.int64)
            offset = 0
            for branch, size in enumerate(layout.discrete_branches):
                for row in range(n):
                    allowed = np.arange(size)
                    if mask is not None:
                        allowed = np.flatnonzero(mask[row, offset : offset + size])
                    discrete[row, branch] = rng.choice(allowed)
                offset += size
        decisions[name] = PolicyDecision(continuous, discrete)
    return decisions


def _drive(
    manager: EnvManager,
    envs: list[RecordingEnv],
    seed: int,
    until: Any,
    max_steps: int,
) -> Bookkeeping:
    """Reset with ``seed``, then step with random actions until ``until(book)`` holds."""
    book = Bookkeeping(manager, envs)
    current = manager.reset(seed)
    book.check_reset(seed, current)
    rng = np.random.default_rng(seed)
    for _ in range(max_steps):
        decisions = _random_decisions(manager, current, rng)
        marks = [len(env.log) for env in envs]
        current = manager.step(decisions)
        book.check_step(decisions, marks, current)
        if until(book):
            return book
    pytest.fail(f"not reached within {max_steps} steps: {book}")


_Recorder = TypeVar("_Recorder", bound=RecordingEnv)


def _games(
    count: int,
    seed: int,
    wrapper: Callable[[ParallelEnv[str, Any, Any]], _Recorder],
    per_game: Sequence[dict[str, Any]] = (),
    **options: Any,
) -> list[_Recorder]:
    """``count`` games (game *i*: seed + *i*, ``per_game[i]`` keywords), each in ``wrapper``."""
    envs: list[_Recorder] = []
    try:
        for index in range(count):
            extra = per_game[index] if per_game else {}
            game = parallel_env(seed=seed + index, worker_id=index, no_graphics=True, **options,
                                **extra)  # fmt: skip
            envs.append(wrapper(game))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return envs


@pytest.fixture(autouse=True)
def _trainer_logs_reach_caplog(monkeypatch: pytest.MonkeyPatch) -> None:
    """``unity-train`` runs in this process stop propagation of the ``trainers`` logger."""
    monkeypatch.setattr(logging.getLogger("trainers"), "propagate", True)


def test_tennis_teams_share_one_trainer_and_finished_slots_wait_for_the_reset(
    caplog: pytest.LogCaptureFixture,
) -> None:
    envs = _games(2, 11, RecordingEnv, scene="Tennis", num_areas=3)
    try:
        with caplog.at_level(logging.WARNING):
            manager = EnvManager.for_parallel_envs(envs, asynchronous=False)
        assert sum(SELF_PLAY_WARNING in r.message for r in caplog.records) == 1
        assert manager.behavior_names == ["Tennis"]
        assert manager.behavior_ids == {"Tennis": ["Tennis?team=0", "Tennis?team=1"]}
        slots = manager.behaviors["Tennis"]
        assert slots.num_slots == 2 * 3 * 2  # games x areas x (one agent per team)
        assert [e.raw_shape for e in slots.observation_layout.entries] == [(27,)]
        assert (slots.action_layout.kind, slots.action_layout.continuous_size) == ("box", 3)
        agents = manager.slot_agents["Tennis"]
        assert agents[:6] == [(0, a) for a in envs[0].possible_agents]
        assert agents[6:] == [(1, a) for a in envs[1].possible_agents]
        book = _drive(
            manager,
            envs,
            seed=11,
            until=lambda b: b.resets >= 4 and b.idle_while_others_play >= 4,
            max_steps=400,
        )
        assert book.done_reports >= 4 * 6  # every slot reported its end once per episode
        assert manager.slot_agents["Tennis"] == agents  # the slot order is stable
    finally:
        for env in envs:
            env.close()


def test_soccer_twos_masks_dict_observations_and_group_rewards() -> None:
    options = {"kickoff": "shot_blue", "max_environment_steps": 60}
    envs = _games(1, 3, RecordingEnv, scene="SoccerTwos", scene_options=options)
    try:
        manager = EnvManager.for_parallel_envs(envs, asynchronous=False)
        assert manager.behavior_names == ["SoccerTwos"]
        slots = manager.behaviors["SoccerTwos"]
        assert slots.num_slots == 4  # one field: two agents per team
        assert [e.raw_shape for e in slots.observation_layout.entries] == [(264,), (72,)]
        layout = slots.action_layout
        assert (layout.kind, layout.discrete_branches) == ("multi_discrete", (3, 3, 3))
        # the purple team's sensors have other names; entry i is still the same input
        purple = next(a for a in envs[0].possible_agents if "team1" in a)
        assert all("Purple" in key for key in envs[0].observation_space(purple).spaces)
        book = _drive(manager, envs, seed=3, until=lambda b: b.resets >= 2, max_steps=200)
        assert book.group_reward_seen > 0  # the shot scored: group rewards reached the slots
        first = manager.reset(seed=5)["SoccerTwos"]
        assert first.action_mask is not None
        assert first.action_mask.shape == (4, 9) and first.action_mask.dtype == bool
    finally:
        for env in envs:
            env.close()


def test_two_behavior_names_get_two_trainers_with_exact_episodes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PYTHONPATH", python_path_with(SCENE_FOLDER))
    envs = _games(2, 7, RecordingEnv, scene=SCENE, num_areas=2)
    try:
        with caplog.at_level(logging.WARNING):
            manager = EnvManager.for_parallel_envs(
                envs, trainer_name=lambda names: f"key:{names[0]}", asynchronous=False
            )
        assert not any(SELF_PLAY_WARNING in r.message for r in caplog.records)
        assert manager.behavior_names == ["key:Hider", "key:Seeker"]
        hider, seeker = manager.behaviors["key:Hider"], manager.behaviors["key:Seeker"]
        assert (hider.num_slots, seeker.num_slots) == (4, 4)
        assert hider.action_layout.discrete_branches == (3, 2)
        assert seeker.action_layout.continuous_size == 2
        assert [e.raw_shape for e in seeker.observation_layout.entries] == [(3,)]

        book = Bookkeeping(manager, envs)
        current = manager.reset(7)
        book.check_reset(7, current)
        rng = np.random.default_rng(0)
        seen: dict[str, list[Any]] = {"key:Hider": [], "key:Seeker": []}
        for _ in range(12):
            decisions = _random_decisions(manager, current, rng)
            decisions["key:Seeker"].continuous[:] = 0.5  # type: ignore[index]
            marks = [len(env.log) for env in envs]
            current = manager.step(decisions)
            book.check_step(decisions, marks, current)
            for name, step in current.items():
                seen[name].append((step.valid.tolist(), step.done.tolist(), step.episodes))
        # Seeker: 3 actions, then idle while the Hider plays 2 more; the env resets after the
        # Hider's 5th action, so the 6th manager step is valid for everyone again.
        for name in seen:  # all slots of a behavior move in step
            assert all(len(set(valid)) == 1 for valid, _, _ in seen[name])
        seeker_valid = [v[0][0] for v in seen["key:Seeker"]]
        seeker_done = [d[1][0] for d in seen["key:Seeker"]]
        hider_valid = [v[0][0] for v in seen["key:Hider"]]
        hider_done = [d[1][0] for d in seen["key:Hider"]]
        assert seeker_valid == [True, True, True, False, False] * 2 + [True, True]
        assert seeker_done == [False, False, True, False, False] * 2 + [False, False]
        assert hider_valid == [True] * 12
        assert hider_done == [False, False, False, False, True] * 2 + [False, False]
        # returns: Seeker 3 x 0.5 + group rewards of the steps before its last one
        seeker_episodes = [e for _, _, eps in seen["key:Seeker"] for e in eps]
        assert len(seeker_episodes) == 2 * 4
        for total, length in seeker_episodes:
            assert length == 3
            assert total == pytest.approx(3 * 0.5 + 2 * GROUP_REWARD)
        assert book.resets == 2 * 2  # both games, twice
    finally:
        for env in envs:
            env.close()


def test_a_crashed_game_truncates_its_slots_and_the_manager_plays_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Two Stress games of two agents; game 0 exits with code 3 during its 4th step after reset.
    envs: list[RecordingEnv] = []
    games: list[UnityParallelEnv] = []

    def crashing_game_pid() -> int:
        process = games[0].unity_env.process
        assert process is not None
        return process.pid

    try:
        for index, scene_options in enumerate([{"crash_after": 4}, {}]):
            game = parallel_env(scene="Stress", num_agents=2, seed=5 + index, worker_id=index,
                                scene_options=scene_options)  # fmt: skip
            games.append(game)
            envs.append(RecordingEnv(game))
        manager = EnvManager.for_parallel_envs(envs, asynchronous=False)
        assert manager.slot_agents["Stress"] == [
            (0, "Stress_0"), (0, "Stress_1"), (1, "Stress_0"), (1, "Stress_1")
        ]  # fmt: skip
        book = Bookkeeping(manager, envs)
        current = manager.reset(5)
        book.check_reset(5, current)
        np.testing.assert_array_equal(current["Stress"].observations[0][:, 0], [1, 1, 1, 1])
        decisions = {"Stress": PolicyDecision(np.full((4, 2), 0.5, np.float32), None)}
        for _ in range(3):
            marks = [len(env.log) for env in envs]
            current = manager.step(decisions)
            book.check_step(decisions, marks, current)
            assert not current["Stress"].done.any()
        old_pid = crashing_game_pid()
        marks = [len(env.log) for env in envs]
        with caplog.at_level(logging.WARNING, logger="unity_gym.pettingzoo"):
            current = manager.step(decisions)  # game 0 crashes and is restarted
        book.check_step(decisions, marks, current)
        step = current["Stress"]
        assert step.valid.tolist() == [True] * 4  # every slot acted in this step
        assert step.truncated.tolist() == [True, True, False, False]
        assert not step.terminated.any()
        np.testing.assert_array_equal(step.rewards, [0.0, 0.0, 0.5, 0.5])  # nothing after crash
        np.testing.assert_array_equal(step.final_observations[0][:, 0], [4, 4, 5, 5])
        np.testing.assert_array_equal(step.observations[0][:, 0], [1, 1, 5, 5])
        assert step.episodes == [(1.5, 4), (1.5, 4)]  # 3 x 0.5, then the truncated step
        crashed = envs[0].log[marks[0]]
        assert all("return code 3" in info["restart_reason"] for info in crashed["infos"].values())
        assert envs[0].log[-1]["kind"] == "reset" and envs[0].log[-1]["seed"] is None
        assert games[0].restart_count == 1 and games[1].restart_count == 0
        assert crashing_game_pid() != old_pid
        assert sum("restarting it with the same settings" in r.message for r in caplog.records) == 1
        marks = [len(env.log) for env in envs]
        current = manager.step(decisions)  # valid again, in the restarted game
        book.check_step(decisions, marks, current)
        step = current["Stress"]
        assert step.valid.all() and not step.done.any()
        np.testing.assert_array_equal(step.observations[0][:, 0], [2, 2, 6, 6])
        np.testing.assert_array_equal(step.rewards, [0.5, 0.5, 0.5, 0.5])
    finally:
        for env in envs:
            env.close()


class TimedEnv(RecordingEnv):
    """A :class:`RecordingEnv` that also notes when each ``step`` call began and ended."""

    def __init__(self, env: ParallelEnv[str, Any, Any]) -> None:
        super().__init__(env)
        self.calls: list[tuple[float, float]] = []

    def step(self, actions: dict[str, Any]) -> Any:
        began = time.monotonic()
        try:
            return super().step(actions)
        finally:
            self.calls.append((began, time.monotonic()))


def _stress_games(options: list[dict[str, Any]], **kwargs: Any) -> list[TimedEnv]:
    """Timed two-agent Stress games, game *i* with scene options ``options[i]``."""
    per_game = [{"scene_options": scene_options} for scene_options in options]
    return _games(len(options), 7, TimedEnv, per_game, scene="Stress", num_agents=2, **kwargs)


def test_several_games_step_at_the_same_time_and_results_keep_env_order() -> None:
    # Each Academy step of these games takes 0.2 s; one manager step is one Academy step.
    envs = _stress_games([{"step_time": 0.2}, {"step_time": 0.2}])
    try:
        manager = EnvManager.for_parallel_envs(envs, asynchronous=False)
        book = Bookkeeping(manager, envs)
        current = manager.reset(7)
        book.check_reset(7, current)
        decisions = {"Stress": PolicyDecision(np.full((4, 2), 0.25, np.float32), None)}
        for _ in range(3):
            marks = [len(env.log) for env in envs]
            current = manager.step(decisions)
            book.check_step(decisions, marks, current)  # rows still in env order
        for (began_0, ended_0), (began_1, ended_1) in zip(
            envs[0].calls, envs[1].calls, strict=True
        ):
            assert began_1 < ended_0 and began_0 < ended_1  # the two calls overlapped
        np.testing.assert_array_equal(current["Stress"].observations[0][:, 0], [4, 4, 4, 4])
    finally:
        manager.close()


def test_a_failing_game_is_raised_after_the_other_games_finished_their_step() -> None:
    # Game 0 crashes in its 2nd step and may not restart; game 1 is slow but healthy.
    envs = _stress_games([{"crash_after": 2}, {"step_time": 0.3}], max_lifetime_restarts=0)
    manager = EnvManager.for_parallel_envs(envs, asynchronous=False)
    try:
        manager.reset(7)
        decisions = {"Stress": PolicyDecision(np.zeros((4, 2), np.float32), None)}
        manager.step(decisions)
        with pytest.raises(RestartLimitError, match="max_lifetime_restarts=0"):
            manager.step(decisions)
        assert len(envs[1].calls) == 2  # its second step completed before the error surfaced
        assert envs[1].log[-1]["kind"] == "step"
    finally:
        manager.close()


def test_asynchronous_games_are_groups_that_step_on_their_own() -> None:
    # Game 1's Academy steps take 0.25 s, game 0's are quick: game 0 plays on meanwhile.
    envs = _stress_games([{}, {"step_time": 0.25}])
    manager = EnvManager.for_parallel_envs(envs)  # asynchronous by default
    try:
        assert manager.num_groups == 2
        first = manager.start(seed=7)
        assert [steps["Stress"].group for steps in first] == [0, 1]
        for group, steps in enumerate(first):
            step = steps["Stress"]
            assert step.slots is not None and step.slots.tolist() == [2 * group, 2 * group + 1]
            assert not step.valid.any()
        sent = {g: np.full((2, 2), 0.1 * (g + 1), np.float32) for g in (0, 1)}
        for group in (0, 1):
            manager.send(group, {"Stress": PolicyDecision(sent[group], None)})
        assert manager.in_flight == 2
        with pytest.raises(ValueError, match="sent twice"):
            manager.send(1, {"Stress": PolicyDecision(sent[1], None)})
        taken = {0: 0, 1: 0}
        while taken[1] < 2:
            step = manager.receive()["Stress"]
            group = step.group
            taken[group] += 1
            assert step.slots is not None and step.slots.tolist() == [2 * group, 2 * group + 1]
            assert step.valid.all() and not step.done.any()
            np.testing.assert_array_equal(step.observations[0][:, 0], taken[group] + 1)
            np.testing.assert_allclose(step.rewards, sent[group][:, 0], atol=1e-6)
            value = (group * 500 + taken[group] % 400) / 1000  # within the action bounds
            sent[group] = np.full((2, 2), value, np.float32)
            manager.send(group, {"Stress": PolicyDecision(sent[group], None)})
        assert taken[0] > 2 * taken[1]  # the quick game did not wait for the slow one
        with pytest.raises(ValueError, match="step as 2 groups"):
            manager.step({"Stress": PolicyDecision(sent[0], None)})
    finally:
        manager.close()


def test_agents_that_play_on_keep_their_slots_valid_with_final_observations() -> None:
    """``agent_autoreset=True`` envs (what ``unity-train`` makes): an agent restarted in the
    step its episode ends stays valid; its slot reports the end with the final observation
    and already holds the new episode's first one, and the game is never reset."""
    game = parallel_env(
        scene="Stress", num_agents=2, agent_autoreset=True, scene_options={"episode_length": 2}
    )
    try:
        manager = EnvManager.for_parallel_envs([game], asynchronous=False)
        current = manager.reset(1)
        pid = game.unity_env.process.pid  # type: ignore[union-attr]
        episodes = current["Stress"].observations[0][:, 3]  # Stress index 3: episodes begun
        np.testing.assert_array_equal(episodes, [1, 1])
        decisions = {"Stress": PolicyDecision(np.full((2, 2), 0.5, np.float32), None)}
        for step in range(1, 7):
            current = manager.step(decisions)
            rows = current["Stress"]
            assert rows.valid.all() and not rows.truncated.any()
            ended = step % 2 == 0
            assert rows.terminated.tolist() == [ended, ended]
            np.testing.assert_array_equal(rows.rewards, [0.5, 0.5])
            begun = 1 + step // 2
            np.testing.assert_array_equal(rows.observations[0][:, 3], [begun, begun])
            np.testing.assert_array_equal(rows.final_observations[0][:, 3], [begun - ended] * 2)
            if ended:  # the final observation: 2 steps into the episode, last action 0.5
                final = rows.final_observations[0][:, [0, 4]]
                np.testing.assert_array_equal(final, [[2, 0.5]] * 2)
                assert [length for _, length in rows.episodes] == [2, 2]
        assert game.unity_env.process.pid == pid  # type: ignore[union-attr]
    finally:
        game.close()


def test_agents_that_join_take_their_slot_from_the_next_step() -> None:
    """With agent autoreset an agent may join ``env.agents`` without having acted (WallJump's
    agent that moved to the other behavior): its slot gets the first observation in that step,
    invalid, and is valid from the next step on."""
    game = parallel_env(scene="WallJump", num_areas=6, seed=3, agent_autoreset=True)
    try:
        manager = EnvManager.for_parallel_envs([game], asynchronous=False)
        current = manager.reset(3)
        agents = {b: [name for _, name in manager.slot_agents[b]] for b in manager.behavior_names}
        joined = 0
        rng = np.random.default_rng(0)
        for _ in range(300):
            live = {b: set(game.agents) & set(names) for b, names in agents.items()}
            decisions = {
                b: PolicyDecision(
                    None,
                    np.stack([rng.integers(0, n, len(names)) for n in (3, 3, 3, 2)], axis=1),
                )
                for b, names in agents.items()
            }
            current = manager.step(decisions)
            for behavior, rows in current.items():
                names = agents[behavior]
                now = [name in game.agents for name in names]
                for slot, name in enumerate(names):
                    if now[slot] and name not in live[behavior]:  # joined in this step
                        joined += 1
                        assert not rows.valid[slot] and not rows.done[slot]
                    if name in live[behavior] and not rows.done[slot]:
                        assert rows.valid[slot]
            if joined >= 2:
                break
        assert joined >= 2
    finally:
        game.close()
