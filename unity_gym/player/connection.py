"""The player's gRPC client to the trainer: handshake, exchanges and closing (spec §1, §3).

The game is the gRPC *client*: it dials ``localhost:<port>`` and calls ``Exchange`` once per
message. Python answers each call with its *next* message, so calls block (no deadline) until the
trainer decides what to send. A reply with status 400, or a failed call (the trainer is gone),
stops the connection.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import grpc

from unity_gym.protocol.communicator_objects.header_pb2 import HeaderProto
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
from unity_gym.protocol.communicator_objects.unity_output_pb2 import UnityOutputProto
from unity_gym.protocol.communicator_objects.unity_rl_initialization_output_pb2 import (
    UnityRLInitializationOutputProto,
)
from unity_gym.protocol.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto

from .capabilities import Capabilities
from .encoding import length_delimited

__all__ = [
    "ACADEMY_NAME",
    "COMMUNICATION_VERSION",
    "EXCHANGE_METHOD",
    "PACKAGE_VERSION",
    "Handshake",
    "TrainerConnection",
    "frame_output",
    "versions_compatible",
]

logger = logging.getLogger("unity_gym.player")

COMMUNICATION_VERSION = "1.5.0"
PACKAGE_VERSION = "3.0.0"
ACADEMY_NAME = "AcademySingleton"
EXCHANGE_METHOD = "/communicator_objects.UnityToExternalProto/Exchange"
STATUS_OK = 200
STATUS_CLOSE = 400
#: How long the goodbye (header-400) call may wait for the trainer's answer.
CLOSE_TIMEOUT_SECONDS = 5.0


_HEADER_OK = UnityMessageProto(header=HeaderProto(status=STATUS_OK)).SerializeToString()


def frame_output(output: bytes) -> bytes:
    """The serialized ``UnityMessageProto`` (status 200) carrying a serialized
    ``UnityOutputProto``."""
    return _HEADER_OK + length_delimited(2, output)


def versions_compatible(unity_version: str, python_version: str) -> bool:
    """Unity's rule: with major 0 majors and minors must match, otherwise majors must."""
    try:
        unity = [int(p) for p in unity_version.split(".")[:2]]
        python = [int(p) for p in python_version.split(".")[:2]]
    except ValueError:
        return False
    if len(unity) < 2 or len(python) < 2:
        return False
    if unity[0] == 0:
        return unity == python
    return unity[0] == python[0]


@dataclass(frozen=True)
class Handshake:
    """What the trainer told the game during the handshake."""

    seed: int
    num_areas: int
    communication_version: str
    package_version: str
    capabilities: Capabilities
    first_input: UnityRLInputProto


class TrainerConnection:
    """A gRPC channel to the trainer on ``localhost:port``.

    Args:
        port: the trainer's port (``--mlagents-port``).
        connect_timeout: seconds the first call may wait for the trainer to listen; 0 fails at
            once when nobody listens, like Unity.
        communication_version: the API version the game announces (used in the version
            checks and messages).
    """

    def __init__(
        self,
        port: int,
        *,
        connect_timeout: float = 0.0,
        communication_version: str = COMMUNICATION_VERSION,
    ) -> None:
        self.port = port
        self._connect_timeout = connect_timeout
        self.communication_version = communication_version
        self._channel = grpc.insecure_channel(
            f"localhost:{port}",
            options=[
                ("grpc.enable_http_proxy", 0),
                ("grpc.max_receive_message_length", -1),
                ("grpc.max_send_message_length", -1),
            ],
        )
        # Raw bytes both ways: the player serializes itself to time its own work.
        self._raw_call = self._channel.unary_unary(EXCHANGE_METHOD)
        self._open = True
        self.stop_reason: str | None = None
        #: Seconds the last exchange spent encoding/decoding and blocked waiting for the trainer.
        self.last_own_seconds = 0.0
        self.last_wait_seconds = 0.0

    def _call(self, message: UnityMessageProto, **kwargs: object) -> UnityMessageProto:
        raw = self._raw_call(message.SerializeToString(), **kwargs)
        return UnityMessageProto.FromString(raw)

    @property
    def is_open(self) -> bool:
        """False once the trainer closed, vanished or the game said goodbye."""
        return self._open

    def handshake(self, init_output: UnityRLInitializationOutputProto) -> Handshake | None:
        """Send the game's initialization (call 1), then the empty call 2.

        Returns:
            The trainer's parameters and its first ``rl_input`` (normally RESET with the queued
            side channels), or ``None`` if nobody listens or the trainer cut the handshake short;
            the connection is then closed and the game should play without a trainer.
        """
        first = UnityMessageProto(
            header=HeaderProto(status=STATUS_OK),
            unity_output=UnityOutputProto(rl_initialization_output=init_output),
        )
        try:
            if self._connect_timeout > 0:
                reply1 = self._call(first, wait_for_ready=True, timeout=self._connect_timeout)
            else:
                reply1 = self._call(first)
            reply2 = self._call(UnityMessageProto(header=HeaderProto(status=STATUS_OK)))
        except grpc.RpcError as exc:
            self._shutdown(f"could not reach the trainer: {_describe(exc)}")
            logger.info(
                "Couldn't connect to trainer on port %d using API version %s (%s). "
                "Will perform inference instead.",
                self.port,
                self.communication_version,
                _describe(exc),
            )
            return None
        init_input = reply1.unity_input.rl_initialization_input
        python_version = init_input.communication_version
        if reply1.header.status != STATUS_OK or reply2.header.status != STATUS_OK:
            if not versions_compatible(self.communication_version, python_version):
                logger.warning(
                    "Communication protocol between python (%s) and Unity (%s) have different "
                    "versions which make them incompatible. Python library version: %s.",
                    python_version,
                    self.communication_version,
                    init_input.package_version,
                )
            self._shutdown("the trainer ended the handshake")
            logger.info("The trainer ended the handshake; continuing without a trainer.")
            return None
        if not versions_compatible(self.communication_version, python_version):
            logger.warning(
                "trainer communication version %s is not compatible with %s",
                python_version,
                self.communication_version,
            )
        capabilities = Capabilities.from_proto(init_input.capabilities)
        if not capabilities.base_rl:
            logger.warning("the trainer does not report base RL capabilities")
        handshake = Handshake(
            seed=init_input.seed,
            num_areas=max(1, init_input.num_areas),
            communication_version=python_version,
            package_version=init_input.package_version,
            capabilities=capabilities,
            first_input=reply2.unity_input.rl_input,
        )
        logger.info(
            "Connected to trainer on port %d (communication %s, package %s, seed %d, num_areas %d)",
            self.port,
            handshake.communication_version,
            handshake.package_version,
            handshake.seed,
            handshake.num_areas,
        )
        return handshake

    def exchange(self, output: bytes) -> UnityInputProto | None:
        """Send a serialized ``UnityOutputProto`` and block until the trainer's next input.

        Returns:
            The input, or ``None`` when the connection stopped (status 400 or a failed call);
            :attr:`stop_reason` then says why.
        """
        if not self._open:
            return None
        start = time.perf_counter()
        raw = frame_output(output)
        sent = time.perf_counter()
        try:
            raw_reply = self._raw_call(raw)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                logger.error(
                    "the trainer rejected a %d-byte message (its limit is 4 MiB): use fewer "
                    "agents, PNG compression or smaller observations",
                    len(raw),
                )
            self._shutdown(f"the trainer disappeared: {_describe(exc)}")
            return None
        received = time.perf_counter()
        reply = UnityMessageProto.FromString(raw_reply)
        self.last_wait_seconds = received - sent
        self.last_own_seconds = (sent - start) + (time.perf_counter() - received)
        if reply.header.status != STATUS_OK:
            self._shutdown(f"the trainer closed the connection (status {reply.header.status})")
            return None
        return reply.unity_input

    def close(self, *, notify: bool = True) -> None:
        """Close the channel; with ``notify``, first send the header-400 goodbye call.

        The goodbye waits at most :data:`CLOSE_TIMEOUT_SECONDS` for the trainer's answer.
        """
        if self._open and notify:
            try:
                self._call(
                    UnityMessageProto(header=HeaderProto(status=STATUS_CLOSE)),
                    timeout=CLOSE_TIMEOUT_SECONDS,
                )
            except grpc.RpcError as exc:
                logger.debug("goodbye call failed: %s", _describe(exc))
        self._shutdown(self.stop_reason or "the game quit")

    def _shutdown(self, reason: str) -> None:
        if self._open:
            self._open = False
            self.stop_reason = reason
            self._channel.close()


def _describe(exc: grpc.RpcError) -> str:
    if isinstance(exc, grpc.Call):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc)
