"""Scenes of the headless player: the :class:`Scene` contract and the built-in scenes.

Every module of this package other than ``base``, ``registry`` and ``articulated`` (helpers of
the MuJoCo scenes) is a built-in scene module, imported here so that its ``@register_scene``
classes register themselves: a new scene is one new module, nothing else to edit.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Scene, SceneOption
from .registry import get_scene_class, register_scene, scene_names

__all__ = ["Scene", "SceneOption", "get_scene_class", "register_scene", "scene_names"]

_FRAMEWORK_MODULES = frozenset({"articulated", "base", "registry"})

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
    if _module.name not in _FRAMEWORK_MODULES and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
