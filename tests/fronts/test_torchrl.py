"""TorchRL's ML-Agents wrapper on our ``UnityEnvironment`` through ``unity_gym.mlagents_compat``.

Each test runs in a fresh interpreter (``compat_processes``): the aliases stay out of this
process, and the import order of TorchRL and the compat module is the one under test.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from compat_processes import run_python_json

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module", autouse=True)
def _torchrl() -> None:
    pytest.importorskip(
        "torchrl",
        reason="TorchRL is not installed (pip install torchrl tensordict 'torch==2.13.0')",
    )


def test_wrapper_and_env_class_on_3dball(scene_builds: dict[str, Path]) -> None:
    """Compat imported first: ``UnityMLAgentsWrapper`` and ``UnityMLAgentsEnv`` both work."""
    facts = run_python_json(
        textwrap.dedent(
            f"""
            import json
            import unity_gym.mlagents_compat
            import torch
            from mlagents_envs.environment import UnityEnvironment
            from torchrl.envs import UnityMLAgentsEnv, UnityMLAgentsWrapper
            from torchrl.envs.utils import check_env_specs

            torch.manual_seed(0)
            build = {str(scene_builds["3DBall"])!r}
            env = UnityMLAgentsWrapper(UnityEnvironment(build, no_graphics=True, timeout_wait=60))
            check_env_specs(env)
            action = env.full_action_spec["group_0", "agent_0", "continuous_action"]
            obs = env.full_observation_spec["group_0", "agent_0", "VectorSensor_size8"]
            rollout = env.rollout(100, break_when_any_done=False)
            leaves = rollout["next"].items(include_nested=True, leaves_only=True)
            dones = sum(int(v.sum()) for k, v in leaves if k[-1] == "done")
            leaves = rollout["next"].items(include_nested=True, leaves_only=True)
            rewards = torch.cat([v.flatten() for k, v in leaves if k[-1] == "reward"])
            short = env.rollout(150)  # stops at the first dropped ball
            process = env._env.process
            env.close()
            by_file = UnityMLAgentsEnv(file_name=build, no_graphics=True, timeout_wait=60)
            check_env_specs(by_file)
            inner = type(by_file._env)
            by_file_steps = by_file.rollout(10).shape[0]
            by_file.close()
            print(json.dumps({{
                "groups": {{g: len(a) for g, a in env.group_map.items()}},
                "action": [list(action.shape), float(action.space.low.min()),
                           float(action.space.high.max())],
                "obs": list(obs.shape),
                "steps": rollout.shape[0],
                "dones": dones,
                "max_reward": float(rewards.max()),
                "short": short.shape[0],
                "exit_code": process.returncode,
                "inner": f"{{inner.__module__}}.{{inner.__qualname__}}",
                "by_file_steps": by_file_steps,
            }}))
            """
        )
    )
    assert facts["groups"] == {"group_0": 12}
    assert facts["action"] == [[2], -1.0, 1.0]
    assert facts["obs"] == [8]
    assert facts["steps"] == 100
    assert facts["dones"] >= 1  # random actions drop balls
    assert facts["max_reward"] == pytest.approx(0.1)
    assert 1 <= facts["short"] < 150
    assert facts["exit_code"] == 0
    assert facts["inner"] == "unity_gym.environment.UnityEnvironment"
    assert facts["by_file_steps"] == 10


def test_wrapper_on_soccer_twos_with_torchrl_imported_first(
    scene_builds: dict[str, Path],
) -> None:
    """Two behaviors (one per team), discrete actions, agents grouped by Unity's group id."""
    facts = run_python_json(
        textwrap.dedent(
            f"""
            import json
            import torch
            from torchrl.envs import UnityMLAgentsWrapper
            from torchrl.envs.utils import check_env_specs
            import unity_gym.mlagents_compat
            from mlagents_envs.environment import UnityEnvironment

            torch.manual_seed(0)
            unity = UnityEnvironment(
                {str(scene_builds["SoccerTwos"])!r}, no_graphics=True, timeout_wait=60
            )
            env = UnityMLAgentsWrapper(unity, categorical_actions=True)
            check_env_specs(env)
            behaviors = sorted(set(env.agent_name_to_behavior_map.values()))
            group, agents = next(iter(env.group_map.items()))
            action = env.full_action_spec[group, agents[0], "discrete_action"]
            rollout = env.rollout(40)
            env.close()
            one_hot = UnityMLAgentsWrapper(
                UnityEnvironment(
                    {str(scene_builds["SoccerTwos"])!r}, no_graphics=True, timeout_wait=60
                )
            )
            check_env_specs(one_hot)
            one_hot_steps = one_hot.rollout(10).shape[0]
            one_hot.close()
            print(json.dumps({{
                "behaviors": behaviors,
                "group_sizes": sorted({{len(a) for a in env.group_map.values()}}),
                "groups": len(env.group_map),
                "teams_per_group": sorted({{
                    len({{env.agent_name_to_behavior_map[a] for a in members}})
                    for members in env.group_map.values()
                }}),
                "nvec": action.nvec.tolist(),
                "steps": rollout.shape[0],
                "one_hot_steps": one_hot_steps,
            }}))
            """
        )
    )
    assert facts["behaviors"] == ["SoccerTwos?team=0", "SoccerTwos?team=1"]
    assert facts["group_sizes"] == [2]  # two players per team on each field
    assert facts["groups"] >= 2
    assert facts["teams_per_group"] == [1]
    assert facts["nvec"] == [3, 3, 3]
    assert facts["steps"] == 40
    assert facts["one_hot_steps"] == 10
