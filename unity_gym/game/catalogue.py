"""The built-in scene catalogue: what the headless player's scenes are, asked in one place.

This module is the only one in ``unity_gym`` outside :mod:`unity_gym.player` that imports the
player (always inside functions, so that importing it stays cheap). It answers: the scene names
(:func:`builtin_scene_names`), a name's canonical spelling (:func:`canonical_scene`), the
behaviors a scene declares with their specs and agent counts (:func:`scene_behaviors`), its
layout of agents per training area (:func:`scene_layout`, :func:`scene_agents_per_area`), its
one-line description (:func:`scene_summary`), and the launcher that starts it like a Unity build
(:func:`builtin_executable`, cached per user and per interpreter).

Every function raises ``ValueError`` (never the player's own errors) for an unknown scene or
invalid options, with the player's message.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from unity_gym.base_env import BehaviorSpec

__all__ = [
    "CACHE_DIR_ENV_VAR",
    "SceneLayout",
    "builtin_executable",
    "builtin_scene_names",
    "canonical_scene",
    "scene_agents_per_area",
    "scene_area_count",
    "scene_behaviors",
    "scene_layout",
    "scene_summary",
]

CACHE_DIR_ENV_VAR = "UNITY_GYM_CACHE_DIR"
"""Environment variable overriding the cache directory of built-in scene executables."""


def builtin_scene_names() -> list[str]:
    """Names of the headless player's built-in scenes (its scene registry), sorted."""
    from unity_gym.player.scenes import scene_names

    return scene_names()


def _cache_root() -> Path:
    override = os.environ.get(CACHE_DIR_ENV_VAR)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "unity-gym"


def builtin_executable(scene: str) -> Path:
    """The launcher of built-in ``scene`` in the per-user cache, written or refreshed if stale.

    The cache lives in ``$UNITY_GYM_CACHE_DIR`` or ``$XDG_CACHE_HOME/unity-gym`` (default
    ``~/.cache/unity-gym``), under ``builds/<tag>/`` where the tag identifies this interpreter
    and this copy of ``unity_gym``. A launcher whose content differs from what
    :func:`unity_gym.player.build.build_executable` writes now is replaced atomically, so
    concurrent callers never see a half-written file.

    Raises:
        ValueError: for an unknown scene (the message lists the built-in scenes).
        OSError: if the cache directory cannot be written (set ``UNITY_GYM_CACHE_DIR``).
    """
    from unity_gym.player.build import EXECUTABLE_SUFFIX, build_executable
    from unity_gym.player.errors import PlayerError
    from unity_gym.player.scenes import get_scene_class

    try:
        name = get_scene_class(scene).name
    except PlayerError as exc:
        raise ValueError(str(exc)) from None
    package_root = Path(__file__).resolve().parents[2]
    tag = hashlib.sha256(f"{sys.executable}\0{package_root}".encode()).hexdigest()[:12]
    directory = _cache_root() / "builds" / tag
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{name}{EXECUTABLE_SUFFIX}"
    staging = Path(tempfile.mkdtemp(prefix="staging-", dir=directory))
    try:
        try:
            fresh = build_executable(canonical_scene(scene), staging, name=name)
        except PlayerError as exc:
            raise ValueError(
                f"Cannot write the launcher of scene {scene!r} in {directory}: {exc}. Set the "
                f"environment variable {CACHE_DIR_ENV_VAR} to another directory."
            ) from None
        if not target.exists() or target.read_bytes() != fresh.read_bytes():
            os.replace(fresh, target)
    finally:
        for leftover in staging.iterdir():
            leftover.unlink()
        staging.rmdir()
    return target


def canonical_scene(scene: str) -> str:
    """The registry's spelling of a built-in scene name; ``module:Class`` names unchanged.

    Raises:
        ValueError: for an unknown scene (the message lists the built-in scenes).
    """
    from unity_gym.player.errors import PlayerError
    from unity_gym.player.scenes import get_scene_class

    try:
        found = get_scene_class(scene)
    except PlayerError as exc:
        raise ValueError(f"{exc}; a Unity build is given with file_name=... instead") from None
    return scene if ":" in scene else found.name


def scene_agents_per_area(scene: str, scene_options: Mapping[str, object] | None = None) -> int:
    """Agents (all behaviors together) in one training area of built-in ``scene``.

    Raises:
        ValueError: for an unknown scene or invalid options.
    """
    from unity_gym.player.errors import PlayerError
    from unity_gym.player.scenes import get_scene_class

    try:
        instance = get_scene_class(scene)(dict(scene_options or {}))
    except PlayerError as exc:
        raise ValueError(str(exc)) from None
    return sum(behavior.agents_per_area for behavior in instance.behaviors())


@dataclass(frozen=True)
class SceneLayout:
    """How built-in scene's agents are laid out, before it runs.

    Attributes:
        agents_per_area: per behavior (full name), its agents in one training area.
        base_areas: the scene's training areas before the handshake's ``num_areas``.
    """

    agents_per_area: Mapping[str, int]
    base_areas: int


def scene_layout(
    scene: str, scene_options: Mapping[str, object] | None = None, num_agents: int | None = None
) -> SceneLayout:
    """The :class:`SceneLayout` of built-in ``scene`` with these options and total agents.

    Raises:
        ValueError: for an unknown scene or invalid options (the message says which).
    """
    from unity_gym.player.errors import PlayerError
    from unity_gym.player.scenes import get_scene_class

    try:
        instance = get_scene_class(scene)(dict(scene_options or {}), num_agents=num_agents)
    except PlayerError as exc:
        raise ValueError(f"scene {scene!r}: {exc}") from None
    return SceneLayout(
        {behavior.full_name: behavior.agents_per_area for behavior in instance.behaviors()},
        instance.base_area_count,
    )


def scene_area_count(scene: str, scene_options: Mapping[str, object] | None = None) -> int:
    """Training areas of built-in ``scene``'s stock layout (what its Unity scene holds, e.g.
    Tennis's 18 courts).

    Raises:
        ValueError: for an unknown scene or invalid options.
    """
    return scene_layout(scene, scene_options).base_areas


def scene_summary(scene: str) -> str:
    """The first line of built-in ``scene``'s description (its class docstring).

    Raises:
        ValueError: for an unknown scene.
    """
    from unity_gym.player.errors import PlayerError
    from unity_gym.player.scenes import get_scene_class

    try:
        found = get_scene_class(scene)
    except PlayerError as exc:
        raise ValueError(str(exc)) from None
    return ((found.__doc__ or "").strip().splitlines() or [""])[0]


def scene_behaviors(
    scene: str,
    scene_options: Mapping[str, object] | None = None,
    num_agents: int | None = None,
    num_areas: int = 1,
) -> dict[str, tuple[BehaviorSpec, int]]:
    """Every behavior built-in ``scene`` declares, before it runs: the spec the bridge will
    read once an agent of the behavior reports, and how many agents of it the game holds.

    A game reports a behavior only when one of its agents first asks for a decision; this tells
    in advance what a scene whose agents move between behaviors (WallJump, like Unity's
    ``SetModel``) will bring.

    Args:
        num_agents: the stock scene's total agents (``None``: its default).
        num_areas: the area replication factor (``GameSettings.num_areas``).

    Raises:
        ValueError: for an unknown scene or invalid options.
    """
    from unity_gym.base_env import ActionSpec, DimensionProperty, ObservationSpec, ObservationType
    from unity_gym.base_env import BehaviorSpec as BridgeSpec
    from unity_gym.player.errors import PlayerError
    from unity_gym.player.scenes import get_scene_class

    try:
        instance = get_scene_class(scene)(dict(scene_options or {}), num_agents=num_agents)
    except PlayerError as exc:
        raise ValueError(str(exc)) from None
    areas = instance.base_area_count * max(1, num_areas)
    declared: dict[str, tuple[BehaviorSpec, int]] = {}
    for behavior in instance.behaviors():
        sensors = [behavior.sensors[i] for i in behavior.wire_sensor_order()]
        observations = [
            ObservationSpec(
                shape=sensor.wire_shape,
                dimension_property=tuple(
                    DimensionProperty(p) for p in sensor.dimension_properties or ()
                ),
                observation_type=ObservationType(int(sensor.observation_type)),
                name=sensor.wire_name,
            )
            for sensor in sensors
        ]
        actions = ActionSpec(
            behavior.action_spec.continuous_size, tuple(behavior.action_spec.discrete_branches)
        )
        declared[behavior.full_name] = (
            BridgeSpec(observations, actions),
            behavior.agents_per_area * areas,
        )
    return declared
