"""Scene lookup by name: built-in scenes register themselves; ``module:Class`` loads others."""

from __future__ import annotations

import importlib
from typing import TypeVar

from ..errors import PlayerError
from .base import Scene

__all__ = ["get_scene_class", "register_scene", "scene_names"]

_SCENES: dict[str, type[Scene]] = {}
SceneT = TypeVar("SceneT", bound=type[Scene])


def register_scene(cls: SceneT) -> SceneT:
    """Class decorator: make ``cls`` available as ``--scene <cls.name>``.

    Raises:
        ValueError: if another scene already uses the name.
    """
    key = cls.name.lower()
    if key in _SCENES and _SCENES[key] is not cls:
        raise ValueError(f"scene name {cls.name!r} is already registered")
    _SCENES[key] = cls
    return cls


def scene_names() -> list[str]:
    """Names of the registered scenes, sorted."""
    return sorted(cls.name for cls in _SCENES.values())


def get_scene_class(name: str) -> type[Scene]:
    """The scene called ``name`` (case-insensitive), or ``package.module:ClassName``.

    Raises:
        PlayerError: if no such scene exists.
    """
    if ":" in name:
        module_name, _, class_name = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise PlayerError(f"cannot load scene {name!r}: {exc}") from exc
        if not (isinstance(found, type) and issubclass(found, Scene)):
            raise PlayerError(f"{name!r} is not a Scene subclass")
        return found
    cls = _SCENES.get(name.lower())
    if cls is None:
        raise PlayerError(
            f"unknown scene {name!r}; available scenes: {', '.join(scene_names())} "
            "(or give package.module:ClassName)"
        )
    return cls
