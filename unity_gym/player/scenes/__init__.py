"""Scenes of the headless player: the :class:`Scene` contract and the built-in scenes.

Each built-in scene is a module of this package whose ``@register_scene`` class registers
itself when the module is imported; :data:`~.registry.BUILTIN_SCENES` names the module of each,
so that a scene is imported only when it is asked for by name (:func:`get_scene_class`).
``base``, ``registry`` and ``articulated`` (helpers of the MuJoCo scenes) are not scenes.
Importing this package imports no scene and not the :class:`Scene` base class either (both are
loaded on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from unity_gym.lazy_exports import lazy_exports

from .registry import (
    BUILTIN_SCENES,
    get_scene_class,
    register_scene,
    scene_names,
)

if TYPE_CHECKING:
    from .base import Scene, SceneOption

__all__ = [
    "BUILTIN_SCENES",
    "Scene",
    "SceneOption",
    "get_scene_class",
    "register_scene",
    "scene_names",
]

__getattr__, __dir__ = lazy_exports(__name__, {"Scene": ".base", "SceneOption": ".base"}, globals())
