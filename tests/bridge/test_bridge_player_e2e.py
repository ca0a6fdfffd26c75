"""End to end: ``UnityEnvironment`` launching the real headless player as a built executable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from process_utils import eventually, group_members

from unity_gym.base_env import ActionTuple
from unity_gym.environment import UnityEnvironment
from unity_gym.exceptions import UnityEnvironmentException, UnityTimeOutException
from unity_gym.player import build
from unity_gym.side_channels.engine_configuration_channel import EngineConfigurationChannel
from unity_gym.side_channels.environment_parameters_channel import EnvironmentParametersChannel
from unity_gym.side_channels.stats_side_channel import StatsSideChannel

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks read /proc"),
]
BALL = "3DBall?team=0"
STRESS = "Stress?team=0"


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("player_builds")
    build.build_executable("3DBall", folder)
    build.build_executable("Stress", folder)
    return folder


def test_handshake_reset_step_and_clean_close(builds: Path) -> None:
    stats = StatsSideChannel()
    engine = EngineConfigurationChannel()
    env = UnityEnvironment(
        str(builds / "3DBall"),
        no_graphics=True,
        timeout_wait=60,
        seed=3,
        side_channels=[engine, EnvironmentParametersChannel(), stats],
    )
    engine.set_configuration_parameters(time_scale=20.0)
    env.reset()
    spec = env.behavior_specs[BALL]
    assert spec.action_spec.continuous_size == 2
    assert [o.shape for o in spec.observation_specs] == [(8,)]
    decision, _ = env.get_steps(BALL)
    assert len(decision) == 12
    assert sorted(decision.agent_id.tolist()) == list(range(12))
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(30):
        decision, _ = env.get_steps(BALL)
        env.set_actions(BALL, spec.action_spec.random_action(len(decision), rng=rng))
        env.step()
        rewards.extend(env.get_steps(BALL)[0].reward.tolist())
    assert rewards and max(rewards) == pytest.approx(0.1)
    assert env.process is not None
    group = env.process.pid
    env.close()
    assert env.process.returncode == 0
    assert group_members(group) == []


def test_crashing_game_reports_exit_code_and_log_tail(builds: Path) -> None:
    env = UnityEnvironment(
        str(builds / "Stress"),
        timeout_wait=60,
        additional_args=["--num-agents", "2", "--option", "crash_after=4"],
    )
    assert env.process is not None
    group = env.process.pid
    env.reset()
    with pytest.raises(UnityEnvironmentException) as caught:
        for _ in range(10):
            env.step()
    text = str(caught.value)
    assert "Environment shut down with return code 3" in text
    assert "Last " in text and "lines of its log" in text
    assert eventually(lambda: group_members(group) == [])


def test_game_that_never_connects_times_out_naming_port_and_executable(builds: Path) -> None:
    # a later --mlagents-port wins in the player's parser: it dials a closed port, falls back to
    # heuristic mode and never connects to us
    with pytest.raises(UnityTimeOutException) as caught:
        UnityEnvironment(
            str(builds / "Stress"), timeout_wait=3, additional_args=["--mlagents-port", "1"]
        )
    text = str(caught.value)
    assert "nothing connected to port" in text
    assert str(builds / "Stress.x86_64") in text
    pid = int(text.split("(pid ")[1].split(")")[0])
    assert eventually(lambda: group_members(pid) == [])


def test_messages_above_4_mib(builds: Path) -> None:
    with UnityEnvironment(
        str(builds / "Stress"),
        timeout_wait=60,
        additional_args=["--num-agents", "2", "--option", "obs_size=700000"],
    ) as env:
        env.reset()
        decision, _ = env.get_steps(STRESS)
        assert decision.obs[0].shape == (2, 700000)  # 5.6 MB of floats in one message
        env.set_actions(STRESS, ActionTuple(continuous=np.full((2, 2), 0.5)))
        env.step()
        decision, _ = env.get_steps(STRESS)
        assert decision.obs[0][:, 4].tolist() == [0.5, 0.5]  # the action came back


def test_no_orphans_after_an_exception(builds: Path) -> None:
    env = UnityEnvironment(
        str(builds / "Stress"),
        timeout_wait=3,
        additional_args=["--num-agents", "2", "--option", "hang_after=3"],
    )
    assert env.process is not None
    group = env.process.pid
    env.reset()
    with pytest.raises(UnityTimeOutException, match="no agent requested a decision"):
        for _ in range(10):
            env.step()
    assert eventually(lambda: group_members(group) == [])
