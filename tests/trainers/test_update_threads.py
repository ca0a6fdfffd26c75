"""Torch threads of updates taken while the environment is idle (``UpdateThreadGovernor``).

The governor's decisions are asserted update by update from given durations; the runs check
that ``unity-train`` hands it exactly the updates taken with no game stepping.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.optimization.update_threads import (
    FIRST_TRIAL,
    INITIAL_BACKOFF,
    MAX_BACKOFF,
    MAX_UPDATE_THREADS,
    UpdateThreadGovernor,
    update_thread_limit,
)

pytestmark = pytest.mark.timeout(120)


def _replay(governor: UpdateThreadGovernor, seconds_on: dict[int, float], count: int) -> list[int]:
    """Run ``count`` updates taking ``seconds_on[threads]`` each; the thread counts used."""
    used = []
    for _ in range(count):
        threads = governor.next_threads
        used.append(threads)
        governor.record(threads, seconds_on[threads])
    return used


def test_a_faster_trial_is_kept() -> None:
    governor = UpdateThreadGovernor(most=2)
    used = _replay(governor, {1: 1.0, 2: 0.6}, 8)
    assert used == [1] * FIRST_TRIAL + [2] * (8 - FIRST_TRIAL)
    assert governor.using == 2


def test_a_trial_within_ten_percent_is_not_kept() -> None:
    governor = UpdateThreadGovernor(most=2)
    used = _replay(governor, {1: 1.0, 2: 0.95}, FIRST_TRIAL + 2)
    assert used == [1] * FIRST_TRIAL + [2, 1]
    assert governor.using == 1


def test_lost_trials_double_the_wait_up_to_the_cap() -> None:
    governor = UpdateThreadGovernor(most=2)
    used = _replay(governor, {1: 1.0, 2: 8.0}, 2000)
    trials = [index for index, threads in enumerate(used) if threads == 2]
    gaps = [later - earlier - 1 for earlier, later in itertools.pairwise(trials)]
    assert trials[0] == FIRST_TRIAL
    expected = [min(INITIAL_BACKOFF * 2**k, MAX_BACKOFF) for k in range(1, len(gaps) + 1)]
    assert gaps == expected
    assert max(gaps) == MAX_BACKOFF
    assert governor.using == 1


def test_a_slowdown_on_more_threads_falls_back_at_once() -> None:
    governor = UpdateThreadGovernor(most=4)
    used = _replay(governor, {1: 1.0, 4: 0.5}, FIRST_TRIAL + 3)
    assert used[-3:] == [4, 4, 4]
    # Other load arrives: an update on 4 threads takes more than 1.5x their median (0.5 s).
    governor.record(4, 0.7)
    assert governor.using == 4  # 1.4x the median: noise
    governor.record(4, 0.8)
    assert governor.using == 1  # 1.6x the median (still 0.5 s)
    # The next trial comes INITIAL_BACKOFF updates later and wins again once the load is gone.
    after = _replay(governor, {1: 1.0, 4: 0.5}, INITIAL_BACKOFF + 2)
    assert after == [1] * INITIAL_BACKOFF + [4, 4]


def test_durations_are_compared_per_unit_of_work() -> None:
    ticks = iter([0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0])  # each update takes 1 s
    governor = UpdateThreadGovernor(most=2, clock=lambda: next(ticks))
    torch.set_num_threads(1)
    for work in (100, 100, 100):
        with governor.update(work) as threads:
            assert threads == 1
    # The trial also takes 1 s, but for twice the work: 0.01 s against 0.005 s per unit.
    with governor.update(200) as threads:
        assert threads == 2
    assert governor.using == 2


def test_update_sets_the_threads_for_the_block_only_and_an_error_is_not_recorded() -> None:
    torch.set_num_threads(1)
    governor = UpdateThreadGovernor(most=2)
    for _ in range(FIRST_TRIAL):
        governor.record(1, 1.0)
    with pytest.raises(RuntimeError), governor.update(1) as threads:
        assert threads == 2
        assert torch.get_num_threads() == 2
        raise RuntimeError("update failed")
    assert torch.get_num_threads() == 1
    assert governor.next_threads == 2  # the failed trial counted for nothing


def test_most_must_exceed_base() -> None:
    with pytest.raises(ValueError, match=r"most \(1\) must exceed base \(1\)"):
        UpdateThreadGovernor(most=1)


def test_the_limit_follows_the_cores_the_device_and_omp_num_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert update_thread_limit(torch.device("cpu")) == max(1, min(cores, MAX_UPDATE_THREADS))
    assert update_thread_limit(torch.device("cuda")) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert update_thread_limit(torch.device("cpu")) == 1


def _timers(run: Path) -> dict[str, Any]:
    timers: dict[str, Any] = json.loads((run / "run_logs" / "timers.json").read_text())
    return timers


def _inline_updates(timers: dict[str, Any], update: str) -> int:
    loop = timers["children"]["TrainerController.start_learning"]["children"]
    count: int = loop["TrainerController.advance"]["children"][update]["count"]
    return count


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs at least 2 usable cores for more than one update thread")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


@pytest.mark.usefixtures("two_cores")
def test_every_ppo_update_on_a_unity_scene_goes_through_the_governor(run_train: RunTrain) -> None:
    """GridWorld (one game, real player over gRPC): PPO settles the game before each update."""
    behavior = ppo_behavior(
        hyperparameters={"batch_size": 32, "buffer_size": 128, "num_epoch": 1},
        network_settings={"hidden_units": 16, "num_layers": 1, "vis_encode_type": "simple"},
        max_steps=900,
        time_horizon=5,
    )
    run = run_train({"behaviors": {"GridWorld": behavior}}, "--scene", "GridWorld")
    timers = _timers(run)
    updates = _inline_updates(timers, "ppo_update")
    assert updates == 6  # 9 agents: a rollout closes every 15 steps (135 agent steps)
    gauge = timers["gauges"]["update_threads"]
    assert gauge["count"] == updates
    assert gauge["min"] == 1.0  # the first updates warm up on one thread
    assert torch.get_num_threads() == 1  # acting is back on one thread


@pytest.mark.usefixtures("two_cores")
def test_sac_updates_on_a_unity_scene_run_while_the_game_steps(run_train: RunTrain) -> None:
    """3DBall (one game, real player over gRPC): SAC sends the next actions before it updates,
    so no update finds the game idle and none goes through the governor, though every one of
    them is taken inline in the training loop."""
    behavior = sac_behavior(max_steps=600, hyperparameters={"buffer_init_steps": 120})
    run = run_train({"behaviors": {"3DBall": behavior}}, "--scene", "3DBall", "--seed", "1")
    timers = _timers(run)
    updates = _inline_updates(timers, "sac_update")
    # 12 agents: 50 exchanges of 12 steps; from the one that reaches buffer_init_steps (120)
    # to the last (600), each brings 3 due gradient steps: 41 update calls
    assert updates == 41
    assert load_checkpoint(run / "3DBall" / "checkpoint.pt")["update_count"] == 121
    assert "update_threads" not in timers.get("gauges", {})


@pytest.mark.usefixtures("two_cores")
def test_threaded_updates_and_omp_num_threads_keep_one_thread(
    run_train: RunTrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {"behaviors": {"CartPole": ppo_behavior(max_steps=600)}}
    args = ("--gym-id", "CartPole-v1", "--num-envs", "2", "--seed", "1")
    run = run_train(config, *args, run_id="lockstep")
    timers = _timers(run)
    # every update inline (more than 128 steps of whole trajectories each: 3 or 4 in 600)
    updates = load_checkpoint(run / "CartPole" / "checkpoint.pt")["update_count"]
    assert updates >= 3
    assert _inline_updates(timers, "ppo_update") == updates
    assert timers["gauges"]["update_threads"]["count"] == updates

    threaded = {"behaviors": {"CartPole": ppo_behavior(max_steps=600, threaded=True)}}
    run = run_train(threaded, "--gym-id", "CartPole-v1", "--num-envs", "2", run_id="threaded")
    timers = _timers(run)
    assert any(name.startswith("trainer_thread.") for name in timers["children"])
    assert "update_threads" not in timers.get("gauges", {})

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run = run_train(config, *args, run_id="omp")
    timers = _timers(run)
    assert _inline_updates(timers, "ppo_update") == updates  # the same seed, the same run
    assert "update_threads" not in timers.get("gauges", {})
