"""The public scenarios of ML-Agents' own ml-agents-envs tests, through ``mlagents_envs`` names.

ML-Agents' ``tests/test_set_action.py`` drives 3DBall from ``default_registry`` with
``set_action_for_agent`` (one ``(1, 2)`` float64 row per agent) and ``set_actions``, with an
``EngineConfigurationChannel`` at ``time_scale=100``; its ``tests/test_envs.py`` and
``tests/test_rpc_communicator.py`` check, through mocks of the official RPC layer, that a
blank ``file_name`` raises ``UnityEnvironmentException``, that a wrong number of action rows
raises ``UnityActionException`` and that a second environment on a port in use raises
``UnityWorkerInUseException``. These are those outcomes over a real built-in player and real
gRPC, in a fresh interpreter after ``import unity_gym.mlagents_compat``
(``compat_processes``), with no mock.
"""

from __future__ import annotations

import textwrap

import pytest
from compat_processes import run_python_json

pytestmark = pytest.mark.timeout(240)

SCENARIO = textwrap.dedent(
    """
    import json, socket
    import numpy as np
    import unity_gym.mlagents_compat
    import unity_gym.registration
    from mlagents_envs.base_env import ActionTuple
    from mlagents_envs.environment import UnityEnvironment
    from mlagents_envs.exception import (
        UnityActionException, UnityEnvironmentException, UnityWorkerInUseException,
    )
    from mlagents_envs.registry import default_registry
    from mlagents_envs.side_channel.engine_configuration_channel import (
        EngineConfigurationChannel,
    )

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    facts = {}
    try:
        UnityEnvironment(" ")
    except UnityEnvironmentException as exc:
        facts["blank_file_name"] = type(exc).__name__
    engine = EngineConfigurationChannel()
    env = default_registry["3DBall"].make(
        base_port=port, worker_id=0, no_graphics=True, side_channels=[engine]
    )
    engine.set_configuration_parameters(time_scale=100)
    facts["port"] = [env.port, port]  # env.port: unity_gym's property
    rows, steps = 0, 0
    for _ in range(2):
        env.reset()
        name = list(env.behavior_specs.keys())[0]
        d, t = env.get_steps(name)
        for _ in range(20):
            for agent_id in d.agent_id:
                action = ActionTuple()
                action.add_continuous(np.ones((1, 2)))
                env.set_action_for_agent(name, agent_id, action)
                rows += 1
            env.step()
            steps += 1
            d, t = env.get_steps(name)
        for _ in range(20):
            action = ActionTuple()
            action.add_continuous(np.ones((len(d), 2)))
            env.set_actions(name, action)
            env.step()
            steps += 1
            d, t = env.get_steps(name)
    facts["rows"], facts["steps"] = rows, steps
    try:
        env.set_actions(name, env.behavior_specs[name].action_spec.empty_action(len(d) + 1))
    except UnityActionException as exc:
        facts["wrong_rows"] = type(exc).__name__
    exe = str(unity_gym.registration.builtin_executable("3DBall"))
    try:
        UnityEnvironment(file_name=exe, base_port=port, worker_id=0, no_graphics=True).close()
    except UnityWorkerInUseException as exc:
        facts["port_in_use"] = [type(exc).__name__, str(port) in str(exc)]
    env.close()
    print(json.dumps(facts))
    """
)


def test_official_set_action_and_environment_scenarios_over_the_3dball_player() -> None:
    facts = run_python_json(SCENARIO, timeout=200)
    assert facts["blank_file_name"] == "UnityEnvironmentException"
    assert facts["port"][0] == facts["port"][1]  # base_port + worker_id, as the official
    assert facts["steps"] == 80
    assert facts["rows"] == 2 * 20 * 12  # 3DBall: all 12 agents decide on every step
    assert facts["wrong_rows"] == "UnityActionException"
    assert facts["port_in_use"] == ["UnityWorkerInUseException", True]
