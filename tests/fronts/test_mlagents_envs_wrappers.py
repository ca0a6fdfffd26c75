"""``mlagents_envs.envs`` wrappers served by ``unity_gym.mlagents_compat`` over real games.

Every check runs in a fresh interpreter (``compat_processes``) that imports
``unity_gym.mlagents_compat`` first, as scripts written for the official package do, and drives
built-in player scenes over real gRPC through ``mlagents_envs.environment.UnityEnvironment``.
"""

from __future__ import annotations

import textwrap

import pytest
from compat_processes import run_python_json

pytestmark = pytest.mark.timeout(300)

PRELUDE = textwrap.dedent(
    """
    import json, warnings
    import numpy as np
    import unity_gym.mlagents_compat
    from mlagents_envs.environment import UnityEnvironment
    from unity_gym.registration import builtin_executable

    def launch(scene, *args):
        return UnityEnvironment(
            file_name=str(builtin_executable(scene)), no_graphics=True, additional_args=list(args)
        )
    """
)


def run(code: str) -> dict:
    return run_python_json(PRELUDE + textwrap.dedent(code), timeout=280)


def test_gym_wrapper_follows_the_official_api_over_single_agent_3dball() -> None:
    facts = run(
        """
        from mlagents_envs.envs.unity_gym_env import (
            ActionFlattener, UnityGymException, UnityToGymWrapper,
        )
        facts = {}
        env = UnityToGymWrapper(launch("3DBall", "--num-agents", "1"), action_space_seed=3)
        facts["spaces"] = [str(env.observation_space), str(env.action_space)]
        facts["meta"] = [env.metadata, list(env.reward_range), env.spec, env.name]
        obs = env.reset()
        facts["reset"] = [type(obs).__name__, list(obs.shape), env.observation_space.contains(obs)]
        steps, done = 0, False
        while not done:
            obs, reward, done, info = env.step(env.action_space.sample())
            steps += 1
            facts.setdefault("types", [type(reward).__name__, type(done).__name__, list(info)])
            facts.setdefault("decision", type(info["step"]).__name__)
        facts["end"] = [steps, type(info["step"]).__name__, env.game_over]
        try:
            env.step(env.action_space.sample())
        except UnityGymException as exc:
            facts["after_done"] = str(exc)
        env.reset()
        facts["after_reset"] = env.game_over
        facts["render"] = env.render() is None
        env.close()
        try:
            UnityToGymWrapper(launch("3DBall"))
        except UnityGymException as exc:
            facts["many"] = str(exc)
        flat = ActionFlattener([2, 2, 3])
        facts["flat"] = [int(flat.action_space.n), flat.lookup_action(0), flat.lookup_action(11)]
        print(json.dumps(facts))
        """
    )
    assert facts["spaces"] == ["Box(-inf, inf, (8,), float32)", "Box(-1.0, 1.0, (2,), float32)"]
    assert facts["meta"][:3] == [
        {"render.modes": ["rgb_array"]},
        [float("-inf"), float("inf")],
        None,
    ]
    assert facts["meta"][3].startswith("3DBall")
    assert facts["reset"] == ["ndarray", [8], True]
    assert facts["types"] == ["float", "bool", ["step"]]
    assert facts["decision"] == "DecisionSteps"
    assert facts["end"][1:] == ["TerminalSteps", True] and facts["end"][0] >= 1
    assert "You must always call 'reset()'" in facts["after_done"]
    assert facts["after_reset"] is False and facts["render"] is True
    assert "only be one Agent" in facts["many"] and "12 were detected" in facts["many"]
    assert facts["flat"] == [12, [0, 0, 0], [1, 1, 2]]


def test_gym_wrapper_discrete_and_visual_spaces_over_basic_and_stress() -> None:
    facts = run(
        """
        from mlagents_envs.envs.unity_gym_env import UnityToGymWrapper
        facts = {}
        env = UnityToGymWrapper(launch("Basic"))
        facts["basic"] = str(env.action_space)
        obs, reward, done, info = env.step(1)
        facts["basic_step"] = [list(np.shape(obs)), type(reward).__name__]
        env.close()
        stress = launch("Stress", "--num-agents", "1", "--option", "visual=float",
                        "--option", "visual_shape=3x8x6")
        env = UnityToGymWrapper(stress, uint8_visual=True, allow_multiple_obs=True)
        obs = env.reset()
        facts["multi"] = [str(env.observation_space), [str(o.dtype) for o in obs]]
        facts["contains"] = bool(env.observation_space.contains(tuple(obs)))
        facts["render"] = list(env.render().shape)
        env.close()
        print(json.dumps(facts))
        """
    )
    assert facts["basic"] == "Discrete(3)"
    assert facts["basic_step"][1] == "float"
    assert facts["multi"][1] == ["uint8", "float32"]
    assert facts["multi"][0].startswith("Tuple(Box(0, 255, (3, 8, 6), uint8)")
    assert facts["contains"] is True
    assert facts["render"] == [3, 8, 6]  # the camera's shape as the game declares it


def test_sb3_learns_on_the_gymnasium_view_of_the_gym_wrapper() -> None:
    facts = run(
        """
        import gymnasium
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_checker import check_env
        from mlagents_envs.envs.unity_gym_env import UnityToGymWrapper
        wrapper = UnityToGymWrapper(launch("3DBall", "--num-agents", "1"))
        env = wrapper.as_gymnasium()
        facts = {"is_env": isinstance(env, gymnasium.Env)}
        check_env(env, warn=True)
        obs, info = env.reset(seed=1)
        facts["reset"] = [list(obs.shape), list(info)]
        model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, verbose=0)
        model.learn(total_timesteps=384)
        facts["timesteps"] = model.num_timesteps
        obs, info = env.reset()
        action, _ = model.predict(obs, deterministic=True)
        out = env.step(action)
        facts["step"] = [len(out), type(out[2]).__name__, type(out[3]).__name__]
        env.close()
        try:
            PPO("MlpPolicy", UnityToGymWrapper(launch("3DBall", "--num-agents", "1")))
        except ValueError as exc:
            facts["plain"] = str(exc)
        print(json.dumps(facts))
        """
    )
    assert facts["is_env"] is True
    assert facts["reset"] == [[8], ["step"]]
    assert facts["timesteps"] >= 384
    assert facts["step"] == [5, "bool", "bool"]
    assert "not a Gymnasium environment" in facts["plain"]


def test_pettingzoo_wrappers_pass_the_api_tests_over_tennis() -> None:
    facts = run(
        """
        from gymnasium.error import Error
        from pettingzoo.test import api_test, parallel_api_test
        from mlagents_envs.envs.unity_aec_env import UnityAECEnv
        from mlagents_envs.envs.unity_parallel_env import UnityParallelEnv
        from mlagents_envs.side_channel.engine_configuration_channel import (
            EngineConfigurationChannel,
        )
        warnings.simplefilter("ignore")
        facts = {}
        engine = EngineConfigurationChannel()
        unity = UnityEnvironment(file_name=str(builtin_executable("Tennis")), no_graphics=True,
                                 side_channels=[engine])
        env = UnityParallelEnv(unity, seed=5)
        facts["channel"] = env.side_channel["EngineConfigurationChannel"] is engine
        obs, infos = env.reset()
        first = env.agents[0]
        facts["names"] = [first, len(env.agents), sorted(infos[first])]
        facts["spaces"] = [str(env.observation_space(first)), str(env.action_space(first))]
        try:
            env.step({"Nobody?agent_id=0": env.action_space(first).sample()})
        except Error as exc:
            facts["unknown"] = str(exc)
        try:
            env.step({first: np.full(3, 5.0)})
        except Error as exc:
            facts["invalid"] = str(exc)
        parallel_api_test(env, num_cycles=400)
        ended = {}
        env.reset()
        while env.agents:
            obs, rew, term, trunc, info = env.step(
                {a: env.action_space(a).sample() for a in env.agents}
            )
            ended.update({a: [term[a], trunc[a], info[a].get("interrupted")]
                          for a in term if term[a] or trunc[a]})
        facts["ended"] = [len(ended), sorted({tuple(v) for v in ended.values()})]
        env.close()
        aec = UnityAECEnv(launch("Tennis"))
        api_test(aec, num_cycles=400)
        aec.reset()
        agent = aec.agent_selection
        observation, reward, termination, truncation, info = aec.last()
        facts["last"] = [agent == aec.agents[0], list(np.shape(observation)), termination]
        aec.close()
        print(json.dumps(facts))
        """
    )
    assert facts["channel"] is True
    first, count, info_keys = facts["names"]
    assert first.startswith("Tennis?team=0?agent_id=") and count > 1
    assert info_keys == ["behavior_name", "group_id", "group_reward"]
    assert facts["spaces"] == ["Box(-inf, inf, (27,), float32)", "Box(-1.0, 1.0, (3,), float32)"]
    assert "not live" in facts["unknown"] and "Invalid action" in facts["invalid"]
    assert facts["ended"][0] == count
    assert all(
        term != trunc and interrupted == trunc for term, trunc, interrupted in facts["ended"][1]
    )
    assert facts["last"] == [True, [27], False]
