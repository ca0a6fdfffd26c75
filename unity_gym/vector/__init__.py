"""Asynchronous vector env over every agent of every game process.

``gymnasium.make_vec("Unity-v0", num_envs=48)`` returns a :class:`UnityVectorEnv` (its
``vector_entry_point``). See :mod:`unity_gym.vector.unity_vector_env` for the API,
:mod:`unity_gym.vector.planning` for how ``num_envs``, ``num_processes`` and training areas
relate, and :mod:`unity_gym.vector.autoreset` for the autoreset semantics.

What lives here: the env (``unity_vector_env``), the worker that drives one game process
(``game_worker``), the worker backends (``backends/``: in-process, subprocess, Ray), the shared
step buffers (``buffers``) and worker messages (``messages``), process planning (``planning``)
and the fault and restart rules (``faults``). Games are described by
:class:`unity_gym.game.settings.GameSettings`; behaviors are chosen by
:func:`unity_gym.behavior_names.select_behavior`.
"""

from __future__ import annotations

from gymnasium.vector import AutoresetMode

from unity_gym.vector.faults import RestartLimitError, RestartPolicy
from unity_gym.vector.unity_vector_env import BACKENDS, UnityVectorEnv, VectorWaitTimeoutError

__all__ = [
    "BACKENDS",
    "AutoresetMode",
    "RestartLimitError",
    "RestartPolicy",
    "UnityVectorEnv",
    "VectorWaitTimeoutError",
]
