"""unity-gym: a modern Python side for Unity ML-Agents games.

``import unity_gym`` stays light: the public names below are imported on first access. It also
registers the Gymnasium ids ``Unity-v0`` and ``Unity-<scene>-v0`` (:mod:`unity_gym.registration`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from unity_gym.lazy_exports import lazy_exports
from unity_gym.player_process import limit_player_threads, runs_the_player
from unity_gym.version import __version__

# Games are launched with fork+exec while gRPC threads may be running. gRPC's fork handlers then
# crash the forked child now and then (SIGSEGV/SIGABRT before exec, about one launch in 30 when
# games are restarted in one process). The child execs at once and never uses gRPC, so the
# handlers are not needed. Must be set before gRPC is first imported; a user's value wins.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

_LAZY_EXPORTS: dict[str, str] = {
    "UnityEnvironment": "unity_gym.environment",
    "UnityGymEnv": "unity_gym.gym_env",
    "ActionSpec": "unity_gym.base_env",
    "ActionTuple": "unity_gym.base_env",
    "BaseEnv": "unity_gym.base_env",
    "BehaviorSpec": "unity_gym.base_env",
    "DecisionStep": "unity_gym.base_env",
    "DecisionSteps": "unity_gym.base_env",
    "DimensionProperty": "unity_gym.base_env",
    "ObservationSpec": "unity_gym.base_env",
    "ObservationType": "unity_gym.base_env",
    "TerminalStep": "unity_gym.base_env",
    "TerminalSteps": "unity_gym.base_env",
    "UnityActionException": "unity_gym.exceptions",
    "UnityCommunicationException": "unity_gym.exceptions",
    "UnityCommunicatorStoppedException": "unity_gym.exceptions",
    "UnityEnvironmentException": "unity_gym.exceptions",
    "UnityException": "unity_gym.exceptions",
    "UnityMultipleBehaviorsException": "unity_gym.exceptions",
    "UnityObservationException": "unity_gym.exceptions",
    "UnitySideChannelException": "unity_gym.exceptions",
    "UnityTimeOutException": "unity_gym.exceptions",
    "UnityWorkerInUseException": "unity_gym.exceptions",
}

__all__ = [
    "ActionSpec",
    "ActionTuple",
    "BaseEnv",
    "BehaviorSpec",
    "DecisionStep",
    "DecisionSteps",
    "DimensionProperty",
    "ObservationSpec",
    "ObservationType",
    "TerminalStep",
    "TerminalSteps",
    "UnityActionException",
    "UnityCommunicationException",
    "UnityCommunicatorStoppedException",
    "UnityEnvironment",
    "UnityEnvironmentException",
    "UnityException",
    "UnityGymEnv",
    "UnityMultipleBehaviorsException",
    "UnityObservationException",
    "UnitySideChannelException",
    "UnityTimeOutException",
    "UnityWorkerInUseException",
    "__version__",
]

if TYPE_CHECKING:
    from unity_gym.base_env import (
        ActionSpec,
        ActionTuple,
        BaseEnv,
        BehaviorSpec,
        DecisionStep,
        DecisionSteps,
        DimensionProperty,
        ObservationSpec,
        ObservationType,
        TerminalStep,
        TerminalSteps,
    )
    from unity_gym.environment import UnityEnvironment
    from unity_gym.exceptions import (
        UnityActionException,
        UnityCommunicationException,
        UnityCommunicatorStoppedException,
        UnityEnvironmentException,
        UnityException,
        UnityMultipleBehaviorsException,
        UnityObservationException,
        UnitySideChannelException,
        UnityTimeOutException,
        UnityWorkerInUseException,
    )
    from unity_gym.gym_env import UnityGymEnv


if runs_the_player():
    limit_player_threads()
else:
    from unity_gym.registration import register_envs as _register_envs

    _register_envs()


__getattr__, __dir__ = lazy_exports(__name__, _LAZY_EXPORTS, globals())
