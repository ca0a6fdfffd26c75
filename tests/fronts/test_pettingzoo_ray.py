"""``RayParallelEnv``: the PettingZoo front in a Ray actor, on a local Ray instance.

The games are real player processes started by the actors; lost actors are real ones (killed
with ``ray.kill`` or SIGKILL).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import time
from collections.abc import Iterator
from typing import Any

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from process_utils import kill_ray_actor

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.pettingzoo import (
    RayParallelEnv,
    RestartLimitError,
    parallel_env,
    ray_parallel_env,
)
from unity_gym.side_channels import StatsAggregationMethod
from unity_gym.vector.backends.ray_pool import RayPlacementError

ray = pytest.importorskip("ray", reason='Ray is not installed (pip install "unity-gym[ray]")')

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo"),
]

SCENE = "Tennis"
SEED = 7
STEPS = 60  # several Tennis episodes with these actions
LOCATION = re.compile(r"^Ray node [0-9a-f]{8} \(.+\)$")

Record = tuple[Any, ...]


def scripted_actions(env: Any, step: int) -> dict[str, np.ndarray]:
    """The same actions for the same step and live agents, whichever env asks."""
    rng = np.random.default_rng(step)
    actions = {}
    for agent in sorted(env.agents):
        space = env.action_space(agent)
        assert isinstance(space, gymnasium.spaces.Box)
        actions[agent] = rng.uniform(-1.0, 1.0, size=space.shape).astype(np.float32)
    return actions


def play(env: Any, steps: int) -> list[Record]:
    """Reset with SEED, then ``steps`` steps (resetting when the episode ends): what came back."""
    observations, _ = env.reset(seed=SEED)
    records: list[Record] = [("reset", observations)]
    for step in range(steps):
        if not env.agents:
            observations, _ = env.reset()
            records.append(("reset", observations))
            continue
        observations, rewards, terminations, truncations, _ = env.step(scripted_actions(env, step))
        records.append(("step", observations, rewards, terminations, truncations))
    return records


def assert_same_records(actual: list[Record], expected: list[Record]) -> None:
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert got[0] == want[0], f"record {index}"
        assert got[1].keys() == want[1].keys(), f"record {index}"
        for agent, observation in want[1].items():
            np.testing.assert_array_equal(got[1][agent], observation, err_msg=f"record {index}")
        assert got[2:] == want[2:], f"record {index}"


def game_pid(env: RayParallelEnv) -> int:
    pid = ray.get(env._actor.game_pid.remote())
    assert isinstance(pid, int)
    return pid


def process_alive(pid: int) -> bool:
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115  (one read)
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    """The in-process env's description and records (made before Ray starts: a process that
    hosts a Ray driver cannot safely fork a game of its own)."""
    env = parallel_env(scene=SCENE, seed=SEED)
    try:
        agents = list(env.possible_agents)
        return {
            "possible_agents": agents,
            "observation_spaces": {a: env.observation_space(a) for a in agents},
            "action_spaces": {a: env.action_space(a) for a in agents},
            "metadata": dict(env.metadata),
            "records": play(env, STEPS),
        }
    finally:
        env.close()


@pytest.fixture(scope="module", autouse=True)
def local_ray(reference: dict[str, Any]) -> Iterator[Any]:
    """A local Ray instance of its own (``address="local"``: never a cluster of other tests)."""
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture
def make_env() -> Iterator[Any]:
    """``make_env(**kwargs)``: a RayParallelEnv of Tennis, closed after the test."""
    made: list[RayParallelEnv] = []

    def make(**kwargs: Any) -> RayParallelEnv:
        kwargs.setdefault("scene", SCENE)
        kwargs.setdefault("seed", SEED)
        env = ray_parallel_env(**kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


def test_proxy_passes_the_parallel_api_test_and_describes_the_game(
    make_env: Any, reference: dict[str, Any]
) -> None:
    env = make_env()
    assert LOCATION.match(env.game_location), env.game_location
    assert env.possible_agents == reference["possible_agents"]
    for agent in env.possible_agents:
        assert env.observation_space(agent) == reference["observation_spaces"][agent]
        assert env.action_space(agent) == reference["action_spaces"][agent]
    assert env.metadata == reference["metadata"]
    assert "goal_signal_keys" in env.metadata
    parallel_api_test(env, num_cycles=60)
    assert env.restart_count == 0
    with pytest.raises(KeyError, match="Unknown agent"):
        env.observation_space("nobody")


def test_steps_equal_the_in_process_env(make_env: Any, reference: dict[str, Any]) -> None:
    env = make_env()
    records = play(env, STEPS)
    assert_same_records(records, reference["records"])
    assert sum(1 for record in records if record[0] == "reset") >= 3  # episodes ended meanwhile
    observation = records[-1][1][env.possible_agents[0]]
    observation += 1  # writable, as in-process (Ray hands out read-only views)


def test_lost_actor_truncates_live_agents_then_play_goes_on(
    make_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    env = make_env()
    env.reset()
    for step in range(3):
        observations, *_, infos = env.step(scripted_actions(env, step))
    assert env.agents == env.possible_agents
    lost_at, lost_game = env.game_location, game_pid(env)
    kill_ray_actor(env._actor)

    with caplog.at_level(logging.WARNING, logger="unity_gym.pettingzoo"):
        outcome, rewards, terminations, truncations, out_infos = env.step(scripted_actions(env, 3))
    agents = env.possible_agents
    assert truncations == dict.fromkeys(agents, True)
    assert terminations == dict.fromkeys(agents, False)
    assert rewards == dict.fromkeys(agents, 0.0)
    for agent in agents:
        np.testing.assert_array_equal(outcome[agent], observations[agent])
        assert out_infos[agent]["agent_id"] == infos[agent]["agent_id"]
        assert out_infos[agent]["group_reward"] == 0.0
        reason = out_infos[agent]["restart_reason"]
        assert f"lost its Ray actor on {lost_at}" in reason
        assert reason.endswith(f"restarted on {env.game_location}")
    assert env.agents == []
    assert env.restart_count == 1
    assert LOCATION.match(env.game_location)
    (warning,) = [r for r in caplog.records if r.name == "unity_gym.pettingzoo"]
    assert warning.levelno == logging.WARNING
    assert f"on {lost_at}" in warning.getMessage()
    assert f"runs it on {env.game_location} now" in warning.getMessage()
    assert wait_gone(lost_game), "the lost actor's game outlived it"
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step({})

    new_game = game_pid(env)
    observations, infos = env.reset()
    assert game_pid(env) == new_game  # the new actor's game is used, not restarted again
    assert env.agents == agents
    assert all("restart_reason" not in info for info in infos.values())
    episodes = 0
    for step in range(40):  # training-style: reset whenever the episode is over
        if not env.agents:
            observations, infos = env.reset()
            episodes += 1
            continue
        observations, *_ = env.step(scripted_actions(env, step))
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation)
    assert episodes >= 1
    assert env.restart_count == 1


def test_actor_process_killed_during_reset_restarts_with_the_latest_seed(
    make_env: Any, reference: dict[str, Any]
) -> None:
    env = make_env(seed=SEED + 1)  # reset(seed=SEED) below makes SEED the game's seed
    env.reset(seed=SEED)
    env.step(scripted_actions(env, 0))
    actor_pid = ray.get(env._actor.__ray_call__.remote(lambda _: os.getpid()))
    os.kill(actor_pid, signal.SIGKILL)

    observations, infos = env.reset()
    assert env.restart_count == 1
    assert all("lost its Ray actor" in info["restart_reason"] for info in infos.values())
    expected = reference["records"]  # the in-process env's reset(seed=SEED) and first step
    assert observations.keys() == expected[0][1].keys()
    for agent, observation in expected[0][1].items():
        np.testing.assert_array_equal(observations[agent], observation)
    observations, *_ = env.step(scripted_actions(env, 0))
    for agent, observation in expected[1][1].items():
        np.testing.assert_array_equal(observations[agent], observation)


def test_game_crash_inside_the_actor_is_restarted_there(make_env: Any) -> None:
    env = make_env()
    env.reset()
    location, actor = env.game_location, env._actor
    os.kill(game_pid(env), signal.SIGKILL)
    *_, truncations, infos = env.step(scripted_actions(env, 0))
    assert truncations == dict.fromkeys(env.possible_agents, True)
    assert all(info["restart_reason"].startswith("game crashed") for info in infos.values())
    assert env.restart_count == 1
    assert (env.game_location, env._actor) == (location, actor)
    env.reset()
    assert env.agents == env.possible_agents


def test_game_stats_come_back_from_the_actor(make_env: Any) -> None:
    # Stress rewards the first action component and ends episodes after episode_length steps;
    # the player reports each episode's return and length (AVERAGE) on the stats channel.
    env = make_env(scene="Stress", num_agents=2, scene_options={"episode_length": 2})
    env.reset()
    assert env.get_and_reset_stats() == {}
    half = dict.fromkeys(env.agents, np.full(2, 0.5, dtype=np.float32))
    env.step(half)
    *_, terminations, _, _ = env.step(half)
    assert all(terminations.values())
    average = StatsAggregationMethod.AVERAGE
    assert env.get_and_reset_stats() == {
        "Player/Cumulative Reward/Stress?team=0": [(1.0, average)] * 2,
        "Player/Episode Length/Stress?team=0": [(2.0, average)] * 2,
    }
    assert env.get_and_reset_stats() == {}


def test_lost_actor_beyond_the_limits_closes_and_raises(make_env: Any) -> None:
    env = make_env(max_lifetime_restarts=0)
    env.reset()
    kill_ray_actor(env._actor)
    with pytest.raises(RestartLimitError, match=r"max_lifetime_restarts=0") as raised:
        env.step(scripted_actions(env, 0))
    assert "lost its Ray actor" in str(raised.value)
    assert env.agents == []
    with pytest.raises(UnityEnvironmentException, match="closed"):
        env.reset()
    env.close()  # again: no error


def test_unplaceable_actor_names_the_resources() -> None:
    started = time.monotonic()
    with pytest.raises(RayPlacementError) as raised:
        RayParallelEnv(
            actor_options={"resources": {"unity_gym_test_nowhere": 1}},
            scene=SCENE,
            timeout_wait=2,
        )
    assert time.monotonic() - started < 20
    message = str(raised.value)
    assert "timeout_wait=2 s" in message
    assert "'unity_gym_test_nowhere': 1" in message
    assert "free" in message and "CPU" in message  # the cluster's available resources


def test_side_channels_are_refused_with_what_to_do() -> None:
    from unity_gym.side_channels import EngineConfigurationChannel

    with pytest.raises(ValueError, match="env_params as keywords"):
        ray_parallel_env(scene=SCENE, side_channels=[EngineConfigurationChannel()])


def test_render_returns_the_camera_frame(make_env: Any) -> None:
    env = make_env(scene="GridWorld", render_mode="rgb_array")
    observations, _ = env.reset()
    frame = env.render()
    assert frame is not None and frame.dtype == np.uint8 and frame.ndim == 3
    np.testing.assert_array_equal(frame, observations["GridWorld_0"]["CameraSensor"])
