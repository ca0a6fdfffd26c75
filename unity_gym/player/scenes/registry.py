"""Scene lookup by name: the built-in scenes' index, ``module:Class`` for others.

Importing this module imports no scene: :data:`BUILTIN_SCENES` names each built-in scene's
module, and :func:`get_scene_class` imports that one module on first use (a game process loads
its own scene only, and ``import unity_gym`` learns the names without loading any). A module's
``@register_scene`` class registers itself when the module is imported; a new built-in scene is
a new module of this package plus its line in :data:`BUILTIN_SCENES` (a test checks that every
scene module is listed under the name its class declares).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TypeVar

from ..errors import PlayerError

if TYPE_CHECKING:
    from .base import Scene

__all__ = [
    "BUILTIN_SCENES",
    "get_scene_class",
    "register_scene",
    "scene_names",
]

#: Each built-in scene's name (as ``--scene`` takes it, case-insensitive) and its module in
#: this package.
BUILTIN_SCENES: dict[str, str] = {
    "3DBall": "ball3d",
    "3DBallHard": "ball3d_hard",
    "Basic": "basic",
    "Crawler": "crawler",
    "DungeonEscape": "dungeon_escape",
    "FoodCollector": "foodcollector",
    "GridFoodCollector": "grid_foodcollector",
    "GridWorld": "gridworld",
    "Hallway": "hallway",
    "Match3": "match3",
    "PushBlock": "pushblock",
    "PushBlockCollab": "pushblock_collab",
    "Pyramids": "pyramids",
    "SoccerTwos": "soccer_twos",
    "Sorter": "sorter",
    "Stress": "stress",
    "StrikersVsGoalie": "strikers_vs_goalie",
    "Tennis": "tennis",
    "Visual3DBall": "visual3dball",
    "VisualFoodCollector": "visual_foodcollector",
    "Walker": "walker",
    "WallJump": "walljump",
    "Worm": "worm",
}

_BUILTIN_MODULES = {name.lower(): module for name, module in BUILTIN_SCENES.items()}
_SCENES: dict[str, type[Scene]] = {}
SceneT = TypeVar("SceneT", bound="type[Scene]")


def register_scene(cls: SceneT) -> SceneT:
    """Class decorator: make ``cls`` available as ``--scene <cls.name>``.

    Raises:
        ValueError: if another scene already uses the name (a built-in scene's name included,
            loaded or not).
    """
    key = cls.name.lower()
    module = _BUILTIN_MODULES.get(key)
    if module is not None and cls.__module__ != f"{__package__}.{module}":
        raise ValueError(f"scene name {cls.name!r} is already registered (a built-in scene)")
    if key in _SCENES and _SCENES[key] is not cls:
        raise ValueError(f"scene name {cls.name!r} is already registered")
    _SCENES[key] = cls
    return cls


def scene_names() -> list[str]:
    """Names of the built-in scenes and of any other registered scene, sorted."""
    return sorted(set(BUILTIN_SCENES) | {cls.name for cls in _SCENES.values()})


def get_scene_class(name: str) -> type[Scene]:
    """The scene called ``name`` (case-insensitive), or ``package.module:ClassName``.

    Raises:
        PlayerError: if no such scene exists.
    """
    if ":" in name:
        from .base import Scene

        module_name, _, class_name = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise PlayerError(f"cannot load scene {name!r}: {exc}") from exc
        if not (isinstance(found, type) and issubclass(found, Scene)):
            raise PlayerError(f"{name!r} is not a Scene subclass")
        return found
    key = name.lower()
    cls = _SCENES.get(key)
    if cls is None and key in _BUILTIN_MODULES:
        importlib.import_module(f"{__package__}.{_BUILTIN_MODULES[key]}")
        cls = _SCENES.get(key)
        if cls is None:
            raise PlayerError(
                f"module {_BUILTIN_MODULES[key]!r} registers no scene called {name!r}: "
                "fix BUILTIN_SCENES in unity_gym/player/scenes/registry.py"
            )
    if cls is None:
        raise PlayerError(
            f"unknown scene {name!r}; available scenes: {', '.join(scene_names())} "
            "(or give package.module:ClassName)"
        )
    return cls
