"""Scenes of the headless player: the :class:`Scene` contract and the built-in scenes."""

from __future__ import annotations

from .base import Scene, SceneOption
from .registry import get_scene_class, register_scene, scene_names

# Built-in scenes register themselves on import.
from . import ball3d, basic, gridworld, pushblock, soccer_twos, stress, tennis  # noqa: F401  isort: skip

__all__ = ["Scene", "SceneOption", "get_scene_class", "register_scene", "scene_names"]
