"""Headless player: a Python stand-in for a Unity build made with the ML-Agents SDK.

It dials the trainer as the gRPC client, performs the handshake and runs the Academy loop of
the Unity package (API 1.5.0), so any ML-Agents trainer — the official ``mlagents_envs`` included —
can drive it. Run ``python -m unity_gym.player --scene 3DBall`` (or the ``unity-gym-player``
console script); ``python -m unity_gym.player.build`` writes an executable launcher that
``UnityEnvironment(file_name=...)`` can start. Scenes implement
:class:`~unity_gym.player.scenes.Scene`.

What lives here: the Academy loop and the agent batches (``academy``), the trainer connection
and handshake (``connection``, ``capabilities``, ``wire``), behavior and sensor specs
(``specs``, ``observations``, ``stacking``, ``raycast``), side channels and samplers, the demo
recorder, ONNX policies acting without a trainer (``onnx_policy``), pictures and videos of the
scenes (``render``, ``video``), the command line and launcher (``cli``, ``runtime``, ``build``)
and the scenes (``scenes/``). It sits beside the bridge and never imports what drives a game
(only the wire messages, side channels, demo files, behavior names and, to feed ONNX models as
a trainer did, the observation spaces); the rest of unity_gym asks it about scenes only through
:mod:`unity_gym.game.catalogue`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from unity_gym.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .academy import Academy, AgentBatch, SceneContext
    from .errors import PlayerError, SceneError
    from .runtime import PlayerConfig, run_player
    from .scenes import Scene, SceneOption, get_scene_class, register_scene, scene_names
    from .specs import ActionSpec, BehaviorSpec, Compression, DecisionSettings, SensorSpec

# Imported on first access, so that importing a submodule (the scene index, the errors) does
# not load the Academy, the connection and every scene.
_LAZY_EXPORTS: dict[str, str] = {
    "Academy": ".academy",
    "AgentBatch": ".academy",
    "SceneContext": ".academy",
    "PlayerError": ".errors",
    "SceneError": ".errors",
    "PlayerConfig": ".runtime",
    "run_player": ".runtime",
    "Scene": ".scenes",
    "SceneOption": ".scenes",
    "get_scene_class": ".scenes",
    "register_scene": ".scenes",
    "scene_names": ".scenes",
    "ActionSpec": ".specs",
    "BehaviorSpec": ".specs",
    "Compression": ".specs",
    "DecisionSettings": ".specs",
    "SensorSpec": ".specs",
}

__all__ = [
    "Academy",
    "ActionSpec",
    "AgentBatch",
    "BehaviorSpec",
    "Compression",
    "DecisionSettings",
    "PlayerConfig",
    "PlayerError",
    "Scene",
    "SceneContext",
    "SceneError",
    "SceneOption",
    "SensorSpec",
    "get_scene_class",
    "register_scene",
    "run_player",
    "scene_names",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY_EXPORTS, globals())
