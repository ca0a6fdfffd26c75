"""The built-in scene index (:data:`BUILTIN_SCENES`): complete, exact, and what it spares.

A game process imports its own scene only and ``import unity_gym`` learns the scene names
without importing any scene, so the index must list every scene module under the name its
class declares; these tests fail, naming the module, when a new scene is not listed.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import unity_gym.player.scenes as scenes_package
from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes import (
    BUILTIN_SCENES,
    Scene,
    get_scene_class,
    register_scene,
    scene_names,
)

NOT_SCENES = {"base", "registry", "articulated"}


def test_every_scene_module_is_listed_under_its_scene_name() -> None:
    modules = {
        found.name
        for found in pkgutil.iter_modules(scenes_package.__path__)
        if found.name not in NOT_SCENES and not found.name.startswith("_")
    }
    assert sorted(modules) == sorted(BUILTIN_SCENES.values()), (
        "add each new scene module to BUILTIN_SCENES in unity_gym/player/scenes/registry.py"
    )
    for cls in map(get_scene_class, BUILTIN_SCENES):
        module = cls.__module__.rsplit(".", 1)[1]
        assert BUILTIN_SCENES[cls.name] == module
        assert issubclass(cls, Scene)
    assert scene_names() == sorted(BUILTIN_SCENES)


def test_names_are_case_insensitive_and_unknown_names_list_the_scenes() -> None:
    assert get_scene_class("3dball") is get_scene_class("3DBall")
    with pytest.raises(PlayerError, match=r"unknown scene 'Nope'; available scenes: 3DBall, "):
        get_scene_class("Nope")


def test_a_built_in_name_cannot_be_taken_before_its_scene_is_loaded() -> None:
    class Impostor(Scene):  # never registered
        name = "WallJump"

    with pytest.raises(ValueError, match="'WallJump' is already registered"):
        register_scene(Impostor)


def _imported_after(code: str) -> list[str]:
    """The ``unity_gym.player`` modules a fresh interpreter holds after running ``code``."""
    script = (
        f"import sys, json\n{code}\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m == 'unity_gym.player' or m.startswith('unity_gym.player.'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    modules: list[str] = json.loads(result.stdout.splitlines()[-1])
    return modules


def test_import_unity_gym_loads_no_scene_and_a_scene_loads_only_itself() -> None:
    assert _imported_after("import unity_gym") == [
        "unity_gym.player",
        "unity_gym.player.errors",
        "unity_gym.player.scenes",
        "unity_gym.player.scenes.registry",
    ]
    loaded = _imported_after(
        "from unity_gym.player.scenes import get_scene_class; get_scene_class('Tennis')"
    )
    scene_modules = [m for m in loaded if m.startswith("unity_gym.player.scenes.")]
    assert scene_modules == [
        "unity_gym.player.scenes.base",
        "unity_gym.player.scenes.registry",
        "unity_gym.player.scenes.tennis",
    ]
