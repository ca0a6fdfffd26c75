"""Gymnasium ids of unity-gym.

``import unity_gym`` calls :func:`register_envs`, which registers

* ``Unity-v0`` (:data:`DEFAULT_ENV_ID`): by default the built-in ``3DBall`` scene with a single
  training area (one agent); ``file_name=`` points it at a real Unity build, ``scene=`` at another
  built-in scene, ``editor=True`` at the Unity Editor (wait for Play to be pressed);
* ``Unity-<scene>-v0`` (:func:`scene_env_id`) for every scene of the built-in scene catalogue
  (``Unity-3DBall-v0``, ``Unity-Basic-v0``, ``Unity-Stress-v0``, ...).

All ids use the entry point :data:`ENTRY_POINT` (``unity_gym.gym_env:UnityGymEnv``), are marked
``nondeterministic=True`` and have no ``max_episode_steps`` (the game truncates episodes itself).
``gymnasium.make("unity_gym:Unity-v0")`` imports ``unity_gym`` and so works without an explicit
import. :data:`VECTOR_ENTRY_POINT`, when set, is registered as the ids' ``vector_entry_point``.

What a game behind an id is made of lives in :mod:`unity_gym.game` (:class:`GameSettings` in
``settings``, the scene catalogue in ``catalogue``, environment parameters in ``env_params``);
this module re-exports those names so that their old import paths keep working.
"""

from __future__ import annotations

from typing import Any

from unity_gym.game.catalogue import (
    CACHE_DIR_ENV_VAR,
    builtin_executable,
    builtin_scene_names,
    scene_agents_per_area,
    scene_area_count,
    scene_behaviors,
)
from unity_gym.game.env_params import apply_env_param
from unity_gym.game.settings import DEFAULT_SCENE, GameSettings

__all__ = [
    "CACHE_DIR_ENV_VAR",
    "DEFAULT_ENV_ID",
    "DEFAULT_SCENE",
    "ENTRY_POINT",
    "VECTOR_ENTRY_POINT",
    "GameSettings",
    "apply_env_param",
    "builtin_executable",
    "builtin_scene_names",
    "register_envs",
    "scene_agents_per_area",
    "scene_area_count",
    "scene_behaviors",
    "scene_env_id",
]

DEFAULT_ENV_ID = "Unity-v0"
"""The generic id; its default game is :data:`DEFAULT_SCENE` with one training area."""
ENTRY_POINT = "unity_gym.gym_env:UnityGymEnv"
"""Gymnasium entry point of every id."""
VECTOR_ENTRY_POINT: str | None = "unity_gym.vector:UnityVectorEnv"
"""``gymnasium.make_vec`` entry point of every id: the vector env :mod:`unity_gym.vector`."""


# --------------------------------------------------------------------------------------------
# Ids
# --------------------------------------------------------------------------------------------


def scene_env_id(scene: str) -> str:
    """The Gymnasium id of a built-in scene: ``Unity-<scene>-v0``."""
    return f"Unity-{scene}-v0"


def register_envs() -> list[str]:
    """Register :data:`DEFAULT_ENV_ID` and one id per built-in scene; return the new ids.

    Idempotent: ids already registered are left alone, so calling it again after scenes were
    added registers just the new ones.
    """
    from gymnasium.envs.registration import register, registry

    wanted: dict[str, dict[str, Any]] = {DEFAULT_ENV_ID: {}}
    for scene in builtin_scene_names():
        wanted[scene_env_id(scene)] = {"scene": scene}
    added = []
    for env_id, kwargs in wanted.items():
        if env_id in registry:
            continue
        register(
            id=env_id,
            entry_point=ENTRY_POINT,
            vector_entry_point=VECTOR_ENTRY_POINT,
            nondeterministic=True,
            kwargs=kwargs,
        )
        added.append(env_id)
    return added
