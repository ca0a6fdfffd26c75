"""Registry entries that open unity_gym's built-in scenes: no download, no Unity build.

Not an official module: :data:`unity_gym.compat.registry.default_registry` holds one
:class:`BuiltinRegistryEntry` per ML-Agents example environment the headless player ships
(:data:`BUILTIN_EXAMPLES`), under the identifier the official registry manifest uses for it
(the example's name: ``"3DBall"``, ``"Basic"``, ``"GridWorld"``, ...). ``make`` starts the stock
scene (as many areas and agents as the Unity example build: 3DBall has 12 agents) through
``UnityEnvironment`` exactly like a downloaded build, with the same keywords.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

from unity_gym.base_env import BaseEnv
from unity_gym.compat.registry.base_registry_entry import BaseRegistryEntry
from unity_gym.compat.registry.remote_registry_entry import merged_additional_args
from unity_gym.environment import UnityEnvironment
from unity_gym.game.catalogue import builtin_executable

__all__ = ["BUILTIN_EXAMPLES", "BuiltinRegistryEntry", "builtin_entries"]

BUILTIN_EXAMPLES: Final = MappingProxyType(
    {
        # identifier: (built-in scene, expected reward: the example's benchmark mean reward in
        # ML-Agents' Learning-Environment-Examples; None for self-play/cooperative examples,
        # whose docs give no benchmark reward)
        "3DBall": ("3DBall", 100.0),
        "Basic": ("Basic", 0.93),
        "GridWorld": ("GridWorld", 0.8),
        "Hallway": ("Hallway", 0.7),
        "PushBlock": ("PushBlock", 4.5),
        "PushBlockCollab": ("PushBlockCollab", None),
        "Pyramids": ("Pyramids", 1.75),
        "SoccerTwos": ("SoccerTwos", None),
        "Tennis": ("Tennis", None),
        "WallJump": ("WallJump", 0.8),
    }
)
"""Registry identifier -> (built-in scene, expected reward) of each example shipped built in.

unity_gym's own scenes that are no ML-Agents example (``Stress``) are not in the registry."""


class BuiltinRegistryEntry(BaseRegistryEntry):
    """An entry whose ``make`` starts a built-in scene of unity_gym's headless player.

    Args:
        identifier: the environment's registry name.
        expected_reward: reward at which the task counts as solved, if known.
        description: human-readable description.
        scene: the built-in scene (``unity_gym.game.catalogue.builtin_scene_names()``).
        additional_args: player arguments always given (e.g. ``["--num-agents", "1"]``).
    """

    def __init__(
        self,
        identifier: str,
        expected_reward: float | None,
        description: str | None,
        scene: str,
        additional_args: list[str] | None = None,
    ) -> None:
        super().__init__(identifier, expected_reward, description)
        self._scene = scene
        self._add_args = additional_args

    @property
    def scene(self) -> str:
        """The built-in scene this entry starts."""
        return self._scene

    def make(self, **kwargs: Any) -> BaseEnv:
        """Start the scene: ``UnityEnvironment(file_name=<scene's launcher>, **kwargs)``.

        Keywords as for a downloaded build (:class:`RemoteRegistryEntry`): ``file_name`` is
        ignored, the entry's ``additional_args`` follow the caller's.

        Raises:
            ValueError: if the scene is not a built-in scene.
        """
        executable = builtin_executable(self._scene)
        return UnityEnvironment(
            file_name=str(executable), **merged_additional_args(kwargs, self._add_args)
        )


def _description(identifier: str, scene: str) -> str:
    from unity_gym.game.catalogue import scene_summary

    summary = scene_summary(scene)
    return (
        f"## {identifier}\n"
        f"unity_gym's built-in headless stand-in of the ML-Agents example {identifier} "
        f"(player scene {scene!r}; no download): {summary}"
    )


def builtin_entries() -> list[BuiltinRegistryEntry]:
    """One entry per :data:`BUILTIN_EXAMPLES` item whose scene the player has, in that order."""
    from unity_gym.game.catalogue import builtin_scene_names

    available = set(builtin_scene_names())
    return [
        BuiltinRegistryEntry(identifier, reward, _description(identifier, scene), scene)
        for identifier, (scene, reward) in BUILTIN_EXAMPLES.items()
        if scene in available
    ]
