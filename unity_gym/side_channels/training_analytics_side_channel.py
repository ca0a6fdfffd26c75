"""Training analytics channel: tells the game which trainer drives it (spec §5.3).

Each message is a serialized ``google.protobuf.Any`` wrapping a ``TrainingEnvironmentInitialized``
or ``TrainingBehaviorInitialized``. Names and paths that may identify a user's project are replaced
by their HMAC-SHA256 (key ``"unity.ml-agents"``) before they leave the process.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import sys
import uuid
from collections.abc import Mapping
from typing import Any

from google.protobuf import any_pb2
from google.protobuf.message import Message

from unity_gym.protocol.communicator_objects.training_analytics_pb2 import (
    TrainingBehaviorInitialized,
    TrainingEnvironmentInitialized,
)
from unity_gym.side_channels.messages import OutgoingMessage
from unity_gym.side_channels.side_channel import OutgoingOnlySideChannel
from unity_gym.version import __version__

__all__ = [
    "DefaultTrainingAnalyticsSideChannel",
    "TrainingAnalyticsSideChannel",
    "anonymize",
]

_HASH_KEY = b"unity.ml-agents"
_TYPE_URL_PREFIX = "type.googleapis.com"
_PATH_KEYS = frozenset({"init_path", "demo_path", "initialize_from", "results_dir"})
_UNKNOWN = "Unknown"


def anonymize(text: str) -> str:
    """HMAC-SHA256 hex digest of ``text`` with the ML-Agents analytics key ``"unity.ml-agents"``."""
    return hmac.new(_HASH_KEY, text.encode("utf-8"), hashlib.sha256).hexdigest()


def _hash_paths(tree: Any) -> None:
    """Hash, in place and at any depth, the string values of keys that hold file paths."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key in _PATH_KEYS and isinstance(value, str):
                tree[key] = anonymize(value)
            else:
                _hash_paths(value)
    elif isinstance(tree, list):
        for item in tree:
            _hash_paths(item)


def _sanitized_run_options(run_options: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``run_options`` with behavior, parameter, lesson and path names hashed."""
    options = copy.deepcopy(dict(run_options))
    behaviors = options.get("behaviors")
    if isinstance(behaviors, Mapping):
        hashed_behaviors: dict[str, Any] = {}
        for name, settings in behaviors.items():
            hashed_behaviors[anonymize(str(name))] = settings
        options["behaviors"] = hashed_behaviors
    parameters = options.get("environment_parameters")
    if isinstance(parameters, Mapping):
        hashed_parameters: dict[str, Any] = {}
        for name, parameter in parameters.items():
            for lesson in _lessons(parameter):
                if isinstance(lesson.get("name"), str):
                    lesson["name"] = anonymize(lesson["name"])
                criteria = lesson.get("completion_criteria")
                if isinstance(criteria, dict) and isinstance(criteria.get("behavior"), str):
                    criteria["behavior"] = anonymize(criteria["behavior"])
            hashed_parameters[anonymize(str(name))] = parameter
        options["environment_parameters"] = hashed_parameters
    _hash_paths(options)
    return options


def _lessons(parameter: Any) -> list[dict[str, Any]]:
    """The curriculum lessons of one environment parameter setting (empty if it has none)."""
    if not isinstance(parameter, Mapping):
        return []
    curriculum = parameter.get("curriculum")
    if not isinstance(curriculum, list):
        return []
    return [lesson for lesson in curriculum if isinstance(lesson, dict)]


def _packed(message: Message) -> OutgoingMessage:
    wrapper = any_pb2.Any()
    wrapper.Pack(message, type_url_prefix=_TYPE_URL_PREFIX)
    out = OutgoingMessage()
    out.set_raw_bytes(wrapper.SerializeToString())
    return out


class TrainingAnalyticsSideChannel(OutgoingOnlySideChannel):
    """Python→game channel announcing the training environment and each trained behavior.

    The game never sends on this channel; receiving anything raises.
    """

    CHANNEL_ID = uuid.UUID("b664a4a9-d86f-5a5f-95cb-e8353a7e8356")
    """``uuid5(NAMESPACE_URL, "com.unity.ml-agents/TrainingAnalyticsSideChannel")``."""

    channel_label = "training analytics"

    def __init__(self) -> None:
        super().__init__(self.CHANNEL_ID)
        self._run_options: dict[str, Any] | None = None

    def environment_initialized(
        self,
        run_options: Mapping[str, Any] | None = None,
        *,
        torch_version: str | None = None,
        torch_device_type: str | None = None,
    ) -> None:
        """Queue a ``TrainingEnvironmentInitialized`` message.

        Args:
            run_options: the trainer's resolved configuration (JSON-serializable). Its
                ``env_settings.num_envs`` and number of ``environment_parameters`` are reported;
                behavior, lesson and path names are hashed before sending. It is also used to tell
                whether a behavior takes part in a curriculum (:meth:`training_started`).
            torch_version: reported torch version, ``"Unknown"`` when not given.
            torch_device_type: reported torch device type (``"cpu"``, ``"cuda"``), ``"Unknown"``
                when not given.

        Raises:
            TypeError: if ``run_options`` is not JSON-serializable.
        """
        info = sys.version_info
        message = TrainingEnvironmentInitialized(
            mlagents_version=f"unity-gym {__version__}",
            mlagents_envs_version=__version__,
            python_version=f"{info.major}.{info.minor}.{info.micro}",
            torch_version=torch_version or _UNKNOWN,
            torch_device_type=torch_device_type or _UNKNOWN,
        )
        if run_options is not None:
            self._run_options = copy.deepcopy(dict(run_options))
            env_settings = run_options.get("env_settings")
            if isinstance(env_settings, Mapping) and isinstance(env_settings.get("num_envs"), int):
                message.num_envs = env_settings["num_envs"]
            parameters = run_options.get("environment_parameters")
            message.num_environment_parameters = (
                len(parameters) if isinstance(parameters, Mapping) else 0
            )
            message.run_options = json.dumps(_sanitized_run_options(run_options))
        self.queue_message_to_send(_packed(message))

    def training_started(self, behavior_name: str, config: Mapping[str, Any]) -> None:
        """Queue a ``TrainingBehaviorInitialized`` message for one behavior.

        Args:
            behavior_name: fully-qualified behavior name (sent hashed).
            config: the behavior's trainer settings as a dict in ``mlagents-learn`` layout
                (``trainer_type``, ``reward_signals``, ``network_settings``, ``behavioral_cloning``,
                ``self_play``, ``threaded``, ...); missing keys get ``mlagents-learn`` defaults.

        Raises:
            TypeError: if ``config`` is not JSON-serializable.
        """
        settings = copy.deepcopy(dict(config))
        reward_signals = settings.get("reward_signals") or {}
        network = settings.get("network_settings") or {}
        message = TrainingBehaviorInitialized(
            behavior_name=anonymize(behavior_name),
            trainer_type=str(settings.get("trainer_type", "")),
            extrinsic_reward_enabled="extrinsic" in reward_signals,
            gail_reward_enabled="gail" in reward_signals,
            curiosity_reward_enabled="curiosity" in reward_signals,
            rnd_reward_enabled="rnd" in reward_signals,
            behavioral_cloning_enabled=settings.get("behavioral_cloning") is not None,
            recurrent_enabled=network.get("memory") is not None,
            visual_encoder=str(network.get("vis_encode_type", "simple")),
            num_network_layers=int(network.get("num_layers", 2)),
            num_network_hidden_units=int(network.get("hidden_units", 128)),
            trainer_threaded=bool(settings.get("threaded", False)),
            self_play_enabled=settings.get("self_play") is not None,
            curriculum_enabled=self._uses_curriculum(behavior_name),
        )
        _hash_paths(settings)
        message.config = json.dumps(settings)
        self.queue_message_to_send(_packed(message))

    def _uses_curriculum(self, behavior_name: str) -> bool:
        parameters = (self._run_options or {}).get("environment_parameters")
        if not isinstance(parameters, Mapping):
            return False
        for parameter in parameters.values():
            for lesson in _lessons(parameter):
                criteria = lesson.get("completion_criteria")
                if isinstance(criteria, Mapping) and criteria.get("behavior") == behavior_name:
                    return True
        return False


DefaultTrainingAnalyticsSideChannel = TrainingAnalyticsSideChannel
"""The official ``mlagents_envs`` name of the same channel, kept for migrations."""
