"""The asynchronous env manager and loop: each game process is a group that steps on its own.

Real headless-player processes of the ``Stress`` scene, reached over gRPC on 127.0.0.1: every
observation is derived from counters and the executed actions, so exact values are asserted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior

import unity_gym.vector  # noqa: F401  (a broken import fails the module, never skips it)
from trainers.common.checkpoints.files import load_checkpoint
from trainers.env_manager import EnvManager, PolicyDecision
from trainers.game_fronts import VectorFront

pytestmark = pytest.mark.timeout(180)

GAMES, AGENTS = 3, 2
BEHAVIOR = "Stress"


@pytest.fixture
def manager() -> Iterator[EnvManager]:
    env = gymnasium.make_vec(
        "unity_gym:Unity-v0",
        num_envs=None,  # type: ignore[arg-type]  # every agent of every game
        num_processes=GAMES,
        scene="Stress",
        num_agents=AGENTS,
        scene_options={"step_time": 0.002, "jitter": 1.0},
        autoreset_mode=AutoresetMode.SAME_STEP,
        backend="inprocess",
        timeout_wait=30,
    )
    made = EnvManager.for_vector_env(env, BEHAVIOR)
    yield made
    made.close()


def _actions(values: np.ndarray) -> dict[str, PolicyDecision]:
    continuous = np.zeros((len(values), 2), dtype=np.float32)
    continuous[:, 0] = values
    return {BEHAVIOR: PolicyDecision(continuous, None)}


def test_each_game_is_a_group_that_steps_independently(manager: EnvManager) -> None:
    front = manager.front
    assert isinstance(front, VectorFront) and front.asynchronous
    assert manager.num_groups == 3
    assert [rows.tolist() for rows in front.groups] == [[0, 1], [2, 3], [4, 5]]
    assert [agent.game for agent in front.agents] == [0, 0, 1, 1, 2, 2]
    assert front.env.batch_size == AGENTS  # type: ignore[attr-defined]
    first = manager.start(seed=0)
    assert [steps[BEHAVIOR].group for steps in first] == [0, 1, 2]
    for steps in first:
        step = steps[BEHAVIOR]
        assert not step.valid.any() and len(step.valid) == AGENTS
        np.testing.assert_array_equal(step.observations[0][:, 6], [0, 1])  # slot in its game
    sent = np.zeros((GAMES, AGENTS), dtype=np.float32)  # last action given to each slot
    actions_taken = np.zeros(GAMES, dtype=int)
    for group in range(GAMES):
        sent[group] = (group * 100 + np.arange(AGENTS)) / 1000
        manager.send(group, _actions(sent[group]))
    assert manager.in_flight == GAMES
    order = []
    # at least 30 steps, and until every game has answered (a loaded machine may let one game
    # lag far behind the others: that is what independent stepping allows)
    while len(order) < 30 or (set(order) != {0, 1, 2} and len(order) < 600):
        step = manager.receive()[BEHAVIOR]
        group = step.group
        order.append(group)
        actions_taken[group] += 1
        assert manager.in_flight == GAMES - 1
        assert step.valid.all() and not step.done.any()
        obs = step.observations[0]
        np.testing.assert_array_equal(obs[:, 0], actions_taken[group] + 1)  # agent step count
        np.testing.assert_allclose(obs[:, 4], sent[group], atol=1e-6)  # its own last action
        np.testing.assert_allclose(step.rewards, sent[group], atol=1e-6)
        sent[group] = (group * 100 + actions_taken[group] * 10 + np.arange(AGENTS)) / 1000
        manager.send(group, _actions(sent[group]))
        assert manager.in_flight == GAMES
    assert set(order) == {0, 1, 2}
    with pytest.raises(ValueError, match="still running"):
        manager.send(order[-1], _actions(sent[order[-1]]))


def test_lockstep_vector_env_is_one_group() -> None:
    env = gymnasium.make_vec(
        "trainer_toy_envs:Countdown-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )
    manager = EnvManager.for_vector_env(env, "Countdown")
    try:
        assert isinstance(manager.front, VectorFront) and not manager.front.asynchronous
        assert manager.num_groups == 1
        (first,) = manager.start(seed=0)
        assert first["Countdown"].group == 0 and manager.in_flight == 0
        manager.send(0, {"Countdown": PolicyDecision(None, np.zeros((2, 1), np.int64))})
        assert manager.in_flight == 1
        with pytest.raises(ValueError, match="sent twice"):
            manager.send(0, {"Countdown": PolicyDecision(None, np.zeros((2, 1), np.int64))})
        step = manager.receive()["Countdown"]
        assert step.rewards.tolist() == [1.0, 1.0] and manager.in_flight == 0
        with pytest.raises(ValueError, match="without send"):
            manager.receive()
    finally:
        manager.close()


@pytest.mark.parametrize("threaded", [False, True])
def test_ppo_on_asynchronous_games_closes_each_rollout_with_every_game_settled(
    run_train: RunTrain, threaded: bool
) -> None:
    # 3 games x 2 agents with jittered step times: games finish in varying order, and each
    # update must first collect the steps of the games still playing.
    behavior = ppo_behavior(
        max_steps=360, summary_freq=60, checkpoint_interval=10**6, time_horizon=8,
        threaded=threaded,
    )  # fmt: skip
    behavior["hyperparameters"].update(buffer_size=60, batch_size=30)
    run = run_train(
        {"behaviors": {BEHAVIOR: behavior}}, "--scene", "Stress", "--num-envs", str(GAMES),
        "--seed", "2", "--env-args", "--option", "step_time=0.002", "--option", "jitter=1.0",
    )  # fmt: skip
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert status[BEHAVIOR]["final_checkpoint"]["steps"] == 360  # whole games of 4 agents
    state = load_checkpoint(run / BEHAVIOR / "checkpoint.pt")
    # Stress's 4 agents per game never end their episodes, so a game's trajectories complete
    # together every time_horizon = 8 steps: 32 agent steps at once. An update comes once more
    # than 60 completed steps are in, that is at the second such chunk; settling then adds at
    # most one more chunk from each of the 2 other games: every update holds 2 to 4 chunks, and
    # nothing else (the normalizer absorbs exactly the updates' steps).
    updates = state["update_count"]
    absorbed = float(state["modules"]["policy"]["encoder.normalizer.normalizers.0.count"])
    chunks, rest = divmod(absorbed, 32)
    assert rest == 0 and 2 * updates <= chunks <= 4 * updates
    # 90 game steps give 9 to 11 chunks (each game's steps // 8), all but at most one updated
    assert 2 <= updates <= 5 and chunks >= 8


def test_sac_on_asynchronous_games(run_train: RunTrain) -> None:
    behavior = sac_behavior(max_steps=120, summary_freq=60, checkpoint_interval=10**6)
    run = run_train(
        {"behaviors": {BEHAVIOR: behavior}}, "--scene", "Stress", "--num-envs", str(GAMES),
        "--env-args", "--option", "jitter=1.0", "--option", "step_time=0.002",
    )  # fmt: skip
    state = load_checkpoint(run / BEHAVIOR / "checkpoint.pt")
    assert state["step"] == 120 and state["update_count"] > 0


def test_a_game_that_crashes_while_it_starts_does_not_stop_the_run(
    run_train: RunTrain, tmp_path: Path
) -> None:
    # Issue 37, item 7: of the two games, the first to start exits while it starts; the run
    # restarts it (as mlagents-learn restarts a failed worker) and trains to the end.
    marker = tmp_path / "crashed-once"
    behavior = ppo_behavior(max_steps=120, summary_freq=60, checkpoint_interval=10**6)
    run = run_train(
        {"behaviors": {BEHAVIOR: behavior}}, "--scene", "Stress", "--num-envs", "2",
        "--env-args", "--option", f"crash_once={marker}",
    )  # fmt: skip
    assert marker.exists()
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert status[BEHAVIOR]["final_checkpoint"]["steps"] >= 120
