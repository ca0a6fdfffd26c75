"""Test helpers: a scripted Unity-side gRPC client and builders of Unity output messages.

``ScriptedUnity`` is a real gRPC client (the role Unity plays) running in a thread: it sends the
handshake, then one output per script entry, and records every raw answer from Python.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np

from unity_gym.protocol.communicator_objects.observation_pb2 import PNG
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
from unity_gym.protocol.communicator_objects.unity_rl_initialization_output_pb2 import (
    UnityRLInitializationOutputProto,
)

EXCHANGE_PATH = "/communicator_objects.UnityToExternalProto/Exchange"
HEADER_ONLY = bytes.fromhex("0a0308c801")
UNITY_QUIT = bytes.fromhex("0a03089003")
CALL1_VECTOR = bytes.fromhex(
    "0a0308c801123212300a1041636164656d7953696e676c65746f6e1205312e352e303a05332e302e30"
    "420e0801100118012001280130013801"
)


def free_port() -> int:
    """A port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def init_call(communication_version: str = "1.5.0", package_version: str = "3.0.0") -> bytes:
    """Unity's first handshake call."""
    message = UnityMessageProto()
    message.header.status = 200
    init: UnityRLInitializationOutputProto = message.unity_output.rl_initialization_output
    init.name = "AcademySingleton"
    init.communication_version = communication_version
    init.package_version = package_version
    caps = init.capabilities
    for flag in (
        "baseRLCapabilities",
        "concatenatedPngObservations",
        "compressedChannelMapping",
        "hybridActions",
        "trainingAnalytics",
        "variableLengthObservation",
        "multiAgentGroups",
    ):
        setattr(caps, flag, True)
    return message.SerializeToString()


@dataclass
class Agent:
    """One AgentInfo to put in an output."""

    id: int
    obs: Sequence[Any] = ()
    reward: float = 0.0
    done: bool = False
    max_step_reached: bool = False
    action_mask: Sequence[bool] = ()
    group_id: int = 0
    group_reward: float = 0.0
    obs_names: Sequence[str] = ()
    png_obs: dict[int, tuple[bytes, Sequence[int], Sequence[int]]] = field(default_factory=dict)


@dataclass
class Behavior:
    """Brain parameters to announce with an output."""

    continuous: int = 0
    branches: Sequence[int] = ()


def build_output(
    agents: dict[str, list[Agent]],
    brains: dict[str, Behavior] | None = None,
    side_channel: bytes = b"",
) -> bytes:
    """A serialized Unity message with ``rl_output`` (and brain parameters if given)."""
    message = UnityMessageProto()
    message.header.status = 200
    output = message.unity_output
    for name, infos in agents.items():
        entry = output.rl_output.agentInfos[name]
        for agent in infos:
            info = entry.value.add(
                id=agent.id,
                reward=agent.reward,
                done=agent.done,
                max_step_reached=agent.max_step_reached,
                group_id=agent.group_id,
                group_reward=agent.group_reward,
            )
            info.action_mask.extend(agent.action_mask)
            for index, values in enumerate(agent.obs):
                obs = info.observations.add()
                if index in agent.png_obs:
                    data, shape, mapping = agent.png_obs[index]
                    obs.shape.extend(shape)
                    obs.compression_type = PNG
                    obs.compressed_data = data
                    obs.compressed_channel_mapping.extend(mapping)
                else:
                    array = np.asarray(values, dtype=np.float32)
                    obs.shape.extend(array.shape)
                    obs.float_data.data.extend(array.ravel().tolist())
                obs.dimension_properties.extend([1] * len(obs.shape))
                if index < len(agent.obs_names):
                    obs.name = agent.obs_names[index]
    for name, behavior in (brains or {}).items():
        params = output.rl_initialization_output.brain_parameters.add(
            brain_name=name, is_training=True
        )
        params.action_spec.num_continuous_actions = behavior.continuous
        params.action_spec.num_discrete_actions = len(behavior.branches)
        params.action_spec.discrete_branch_sizes.extend(behavior.branches)
    output.rl_output.side_channel = side_channel
    return message.SerializeToString()


ScriptEntry = bytes | Callable[[UnityMessageProto], bytes | None]


class ScriptedUnity:
    """A Unity stand-in in a thread: handshake, then one call per ``script`` entry.

    A script entry is the serialized message to send, or a function of the last answer that
    returns it (None stops the script). Every answer is recorded in :attr:`answers` (raw bytes).
    After the script, the client stops calling (like a game that hangs) unless ``then_quit``.

    Args:
        port: where Python listens.
        script: the messages after the two handshake calls.
        first_call: the handshake's first message.
        then_quit: send a status-400 call after the script.
    """

    def __init__(
        self,
        port: int,
        script: Sequence[ScriptEntry] = (),
        *,
        first_call: bytes | None = None,
        then_quit: bool = False,
        host: str = "localhost",
        max_send: int = 512 * 1024 * 1024,
    ) -> None:
        self.port = port
        self.script = list(script)
        self.first_call = first_call if first_call is not None else init_call()
        self.then_quit = then_quit
        self.answers: list[bytes] = []
        self.error: BaseException | None = None
        self._channel = grpc.insecure_channel(
            f"{host}:{port}",
            options=[
                ("grpc.max_send_message_length", max_send),
                ("grpc.max_receive_message_length", -1),
                # the server may not listen yet: retry quickly instead of gRPC's 1 s backoff
                ("grpc.initial_reconnect_backoff_ms", 20),
                ("grpc.min_reconnect_backoff_ms", 20),
                ("grpc.max_reconnect_backoff_ms", 100),
            ],
        )
        self._exchange = self._channel.unary_unary(EXCHANGE_PATH)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ScriptedUnity:
        self._thread.start()
        return self

    def call(self, data: bytes) -> UnityMessageProto:
        answer: bytes = self._exchange(data, wait_for_ready=True, timeout=60)
        self.answers.append(answer)
        return UnityMessageProto.FromString(answer)

    def _run(self) -> None:
        try:
            last = self.call(self.first_call)
            last = self.call(HEADER_ONLY)
            for entry in self.script:
                if last.header.status != 200:
                    return
                data = entry(last) if callable(entry) else entry
                if data is None:
                    return
                last = self.call(data)
            if self.then_quit and last.header.status == 200:
                self.call(UNITY_QUIT)
        except BaseException as error:  # recorded for the test to inspect
            self.error = error

    def join(self, timeout: float = 30.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the Unity stand-in is still running"

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> ScriptedUnity:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def inputs(self) -> list[UnityInputProto]:
        """The ``unity_input`` of every recorded answer."""
        return [UnityMessageProto.FromString(a).unity_input for a in self.answers]
