"""unity-gym: a modern Python side for Unity ML-Agents games.

``import unity_gym`` stays light: the public names below are imported on first access. It also
registers the Gymnasium ids ``Unity-v0`` and ``Unity-<scene>-v0`` (:mod:`unity_gym.registration`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

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


def _runs_the_player() -> bool:
    """Whether this interpreter was started as ``python -m unity_gym.player`` (or the
    ``unity-gym-player`` script): a game process,
    which never makes Gymnasium envs, so it skips registering them (and importing Gymnasium,
    about a seventh of a game's start-up CPU) and runs numpy's BLAS on one thread
    (:data:`PLAYER_BLAS_THREADS`)."""
    argv = getattr(sys, "orig_argv", [])
    if len(argv) > 1 and os.path.basename(argv[1]) == "unity-gym-player":  # the console script
        return True
    return any(argv[i : i + 2] == ["-m", "unity_gym.player"] for i in range(1, len(argv) - 1))


#: Thread limits a game process sets for numpy's BLAS before numpy is imported (a user's value
#: wins). A game's matrices are small (a camera's 7056 rays at most): a second BLAS thread only
#: busy-waits beside the trainer, which doubled VisualFoodCollector's CPU per step on 2 cores.
PLAYER_BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

if _runs_the_player():
    for _variable, _value in PLAYER_BLAS_THREADS.items():
        os.environ.setdefault(_variable, _value)
else:
    from unity_gym.registration import register_envs as _register_envs

    _register_envs()


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'unity_gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_EXPORTS))
