"""The gRPC server that the game calls into (spec §1, §3).

The game is the gRPC *client*: it calls ``Exchange(message)`` and blocks until it gets the next
message from Python. This server is therefore a relay (spec §1.1): every incoming call is handed
to the Python main thread and held open until the main thread supplies the answer, which is the
*next* input of the simulation. The hand-off uses threading primitives only, and messages cross
the gRPC layer as raw bytes, so each is parsed and serialized exactly once, in the main thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from unity_gym.exceptions import (
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityTimeOutException,
    UnityWorkerInUseException,
)
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
from unity_gym.protocol.communicator_objects.unity_output_pb2 import UnityOutputProto
from unity_gym.protocol.wire_format import encode_varint
from unity_gym.timers import hierarchical_timer

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "EXCHANGE_METHOD",
    "SERVICE_NAME",
    "STATUS_CLOSE",
    "STATUS_OK",
    "Communicator",
    "encode_message",
    "established_connections",
]

logger = logging.getLogger(__name__)

SERVICE_NAME = "communicator_objects.UnityToExternalProto"
"""Fully qualified gRPC service name; the wire path is ``/<SERVICE_NAME>/Exchange``."""
EXCHANGE_METHOD = "Exchange"

STATUS_OK = 200
STATUS_CLOSE = 400

DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Largest game message accepted by default (the official server is stuck at 4 MiB)."""

_SIGNAL_CHECK_S = 0.2  # longest stretch a wait for the game blocks without running Python
# A header with status 200 / 400, as serialized by protobuf: field 1, length 3, (status varint).
_HEADER_OK = bytes.fromhex("0a0308c801")
_CLOSE_MESSAGE = bytes.fromhex("0a03089003")
_INPUT_FIELD_TAG = b"\x1a"  # UnityMessageProto.unity_input: field 3, length-delimited


_PROBE_AFTER_S = 1.0  # a wait this long starts looking for the game's TCP connection ...
_PROBE_EVERY_S = 0.5  # ... this often; two misses in a row mean the connection is gone


def established_connections(port: int) -> int | None:
    """Established TCP connections accepted on local ``port`` (None where unknown).

    Read from ``/proc/net/tcp`` and ``/proc/net/tcp6`` (Linux). gRPC tells a server nothing
    about connections between calls, so this is how a wait notices that the game's connection
    is gone while no call of the game is held.
    """
    found = False
    count = 0
    suffix = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                lines = handle.readlines()[1:]
        except OSError:
            continue
        found = True
        for line in lines:
            fields = line.split(None, 4)
            if len(fields) > 3 and fields[3] == "01" and fields[1].endswith(suffix):
                count += 1
    return count if found else None


def encode_message(unity_input: UnityInputProto | None, status: int = STATUS_OK) -> bytes:
    """Serialize a ``UnityMessageProto`` (header ``status`` + optional ``unity_input``).

    Byte-identical to building the message and calling ``SerializeToString()``, without copying
    the payload into an envelope object first.
    """
    header = _HEADER_OK if status == STATUS_OK else _header(status)
    if unity_input is None:
        return header
    payload = unity_input.SerializeToString()
    return header + _INPUT_FIELD_TAG + encode_varint(len(payload)) + payload


def _header(status: int) -> bytes:
    message = UnityMessageProto()
    message.header.status = status
    return message.SerializeToString()


def _address(host: str, port: int) -> str:
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


class _Call:
    """One ``Exchange`` call held open until the main thread answers it."""

    __slots__ = ("_done", "_lock", "_reply", "request")

    def __init__(self, request: bytes) -> None:
        self.request = request
        self._reply: bytes | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    def answer(self, reply: bytes) -> None:
        """Release the call with ``reply`` (first answer or abandonment wins)."""
        with self._lock:
            if not self._done.is_set():
                self._reply = reply
                self._done.set()

    def abandon(self) -> bool:
        """Release the call without a reply (the RPC ended); True if it was still unanswered."""
        with self._lock:
            if self._done.is_set():
                return False
            self._done.set()
            return True

    def wait(self) -> bytes | None:
        self._done.wait()
        return self._reply


class _PeerGone:
    """Queued instead of a call when the game disappears; waking the main thread with ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


_Event = _Call | _PeerGone


class _Relay:
    """The part shared with gRPC worker threads: a FIFO of calls and a closed flag."""

    def __init__(self, max_message_bytes: int, peer_label: str) -> None:
        self.events: queue.Queue[_Event] = queue.Queue()
        self.lock = threading.Lock()
        self.closed = False
        self.connected = False
        self.outstanding: set[_Call] = set()
        self.max_message_bytes = max_message_bytes
        self.peer_label = peer_label

    def _refuse(self, size: int, context: grpc.ServicerContext) -> None:
        """Fail the main thread's wait with the message's size, and the call with
        ``RESOURCE_EXHAUSTED``."""
        limit = self.max_message_bytes
        self._fail(
            UnityCommunicationException(
                f"A message of {self.peer_label} was {size} bytes, more than max_message_bytes "
                f"({limit} bytes, {limit / 2**20:g} MiB). Pass a larger max_message_bytes= to "
                "UnityEnvironment (or use fewer agents, smaller or PNG-compressed observations)."
            )
        )
        context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"message of {size} bytes is larger than max_message_bytes ({limit})",
        )

    def _fail(self, error: Exception) -> None:
        """Wake the main thread with ``error`` (unless the session is closed)."""
        with self.lock:
            if not self.closed:
                self.connected = True
                self.events.put(_PeerGone(error))

    def serve(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """gRPC handler: queue the call, then block until the main thread answers it.

        gRPC itself accepts messages of any size (a message it refused would vanish inside
        gRPC, and the wait would run into ``timeout_wait``); a message over
        ``max_message_bytes`` is refused here, with ``RESOURCE_EXHAUSTED`` to the game, as gRPC
        would, and named to the main thread at once.
        """
        if len(request) > self.max_message_bytes:
            self._refuse(len(request), context)
            return b""  # not reached: the refusal aborts the call
        call = _Call(request)
        with self.lock:
            if self.closed:
                return _CLOSE_MESSAGE
            self.connected = True
            self.outstanding.add(call)
            self.events.put(call)
        if not context.add_callback(lambda: self._on_rpc_end(call)):
            self._on_rpc_end(call)
        reply = call.wait()
        with self.lock:
            self.outstanding.discard(call)
        return reply if reply is not None else b""

    def _on_rpc_end(self, call: _Call) -> None:
        if call.abandon():
            with self.lock:
                self.outstanding.discard(call)
                if not self.closed:
                    self.events.put(
                        _PeerGone(
                            UnityCommunicatorStoppedException(
                                "Communicator has exited: the game dropped its connection while "
                                "waiting for Python's answer."
                            )
                        )
                    )

    def shut(self) -> None:
        """Refuse new calls and answer every pending one with the close message."""
        with self.lock:
            self.closed = True
            pending = list(self.outstanding)
        for call in pending:
            call.answer(_CLOSE_MESSAGE)


_LIVE_RELAYS: weakref.WeakSet[_Relay] = weakref.WeakSet()


def _release_held_calls_at_exit() -> None:
    """Answer every held call with the close message, so interpreter shutdown can finish.

    At shutdown Python joins the gRPC worker threads (``ThreadPoolExecutor``) *before* it runs
    ``atexit`` handlers; a call still held open for an environment nobody closed would block that
    join forever. Registered with ``threading``'s shutdown hooks, which run before those joins.
    """
    for relay in list(_LIVE_RELAYS):
        relay.shut()


# Registered after concurrent.futures' own hook (imported above), so it runs first.
_register_shutdown_hook = getattr(threading, "_register_atexit", None)
if _register_shutdown_hook is not None:
    _register_shutdown_hook(_release_held_calls_at_exit)


def _stop_server(server: grpc.Server, relay: _Relay, grace: float) -> None:
    relay.shut()
    server.stop(grace).wait(grace + 1.0)


class Communicator:
    """Python side of the connection: a gRPC server relaying the game's ``Exchange`` calls.

    The port is bound (and listening) in the constructor. :meth:`initialize` performs the two-call
    handshake, :meth:`exchange` answers the game's pending call with the next input and returns
    its next output, :meth:`close` answers the pending call with status 400 and stops the server.
    Only the thread that drives the environment may call these methods.

    Args:
        port: port to listen on; 0 picks a free one (read it back from :attr:`port`).
        host: interface to bind; the default serves only this machine. Use ``"0.0.0.0"`` or
            ``"::"`` to accept games from other hosts (they dial ``localhost`` by default, so this
            needs port forwarding).
        timeout_wait: seconds to wait for each message of the game.
        max_message_bytes: largest message accepted from the game.
        worker_id: only used in error messages.
        peer_label: how error messages name the game (e.g. its executable).
        close_grace: seconds the server may take to deliver the close message.
        start: serve at once. With False the port is bound and listening (connections wait in
            the backlog) but calls are only served after :meth:`start`; launch the game in
            between, so it is not forked while gRPC threads run.

    Raises:
        UnityWorkerInUseException: if the port cannot be bound.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        timeout_wait: float = 60.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        worker_id: int = 0,
        peer_label: str = "the game",
        close_grace: float = 1.0,
        start: bool = True,
    ) -> None:
        if timeout_wait <= 0:
            raise ValueError(
                f"timeout_wait must be a positive number of seconds, got {timeout_wait}"
            )
        if max_message_bytes <= 0:
            raise ValueError(f"max_message_bytes must be positive, got {max_message_bytes}")
        self.timeout_wait = float(timeout_wait)
        self.host = host
        self._relay = _Relay(int(max_message_bytes), peer_label)
        self.peer_label = peer_label
        _LIVE_RELAYS.add(self._relay)
        self._pending: _Call | None = None
        self._stopped = False
        handler = grpc.method_handlers_generic_handler(
            SERVICE_NAME,
            {
                EXCHANGE_METHOD: grpc.unary_unary_rpc_method_handler(
                    self._relay.serve, request_deserializer=None, response_serializer=None
                )
            },
        )
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=4, thread_name_prefix="unity-gym-grpc"),
            handlers=[handler],
            options=[
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", -1),  # checked by _Relay.serve
                ("grpc.max_send_message_length", -1),
            ],
        )
        try:
            bound = self._server.add_insecure_port(_address(host, port))
        except RuntimeError:
            bound = 0
        if bound == 0:
            self._server.stop(None)
            raise UnityWorkerInUseException(f"{worker_id} (port {port} on {host})")
        self.port = bound
        self._started = False
        if start:
            self.start()
        self._finalizer = weakref.finalize(
            self, _stop_server, self._server, self._relay, close_grace
        )
        logger.debug("listening on %s", _address(host, bound))

    @property
    def peer_label(self) -> str:
        """How error messages name the game."""
        return self._relay.peer_label

    @peer_label.setter
    def peer_label(self, label: str) -> None:
        self._relay.peer_label = label

    def start(self) -> None:
        """Begin serving calls (no-op if already serving)."""
        if not self._started:
            self._started = True
            self._server.start()

    # ----------------------------------------------------------------------------------------
    # waiting for the game
    # ----------------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """True until :meth:`close` (or the game quitting) ended the session."""
        return self._finalizer.alive and not self._stopped

    @property
    def connected(self) -> bool:
        """True once the game has made at least one call."""
        return self._relay.connected

    def notify_peer_exited(self, error: Exception) -> None:
        """Wake the main thread with ``error`` (thread-safe; e.g. from a process-exit watcher).

        Calls the game made before are still processed first.
        """
        with self._relay.lock:
            if not self._relay.closed:
                self._relay.events.put(_PeerGone(error))

    def _next_call(self, stage: str) -> _Call:
        self.start()
        started = time.monotonic()
        deadline = started + self.timeout_wait
        next_probe = started + _PROBE_AFTER_S
        missing = 0  # consecutive probes that found no connection of the game
        while True:
            # Wake up at least every _SIGNAL_CHECK_S: a Ctrl-C delivered to another thread of
            # the process only reaches Python code when the main thread runs again.
            if self._stopped or self._relay.closed:  # closed by another thread meanwhile
                raise UnityCommunicatorStoppedException(
                    "Communicator has exited: the environment was closed while it waited for "
                    "the game."
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout_error(stage)
            try:
                event = self._relay.events.get(timeout=min(remaining, _SIGNAL_CHECK_S))
                break
            except queue.Empty:
                pass
            if stage != "connect" and self._relay.connected and time.monotonic() >= next_probe:
                next_probe = time.monotonic() + _PROBE_EVERY_S
                count = established_connections(self.port)
                missing = missing + 1 if count == 0 else 0
                if missing >= 2:
                    self._stopped = True
                    raise UnityCommunicatorStoppedException(
                        f"Communicator has exited: {self.peer_label} closed its connection to "
                        f"port {self.port} between exchanges (after Python's answer, before its "
                        "next call) without quitting (no status-400 message): it lost the "
                        "connection, stopped its communicator or crashed."
                    )
        if isinstance(event, _PeerGone):
            self._stopped = True
            raise event.error
        return event

    def _timeout_error(self, stage: str) -> UnityTimeOutException:
        wait = f"{self.timeout_wait:g} s"
        if stage == "connect":
            text = (
                f"The Unity environment took too long to respond: nothing connected to port "
                f"{self.port} within {wait} ({self.peer_label}). Make sure that the game was "
                f"started with '--mlagents-port {self.port}' (or, in the Editor, that Play was "
                "pressed and the Editor port matches), that it does not wait for user input, "
                "and that a headless machine uses no_graphics=True. Raise timeout_wait if it "
                "needs longer to start."
            )
        elif stage == "handshake":
            text = (
                f"The Unity environment took too long to respond: {self.peer_label} connected "
                f"to port {self.port} but did not complete the handshake within {wait}."
            )
        else:
            text = (
                f"The Unity environment took too long to respond: {self.peer_label} is "
                f"connected on port {self.port} but no agent requested a decision within "
                f"{wait}. Make sure the agents' Behavior Type is 'Default', that they request "
                "decisions (DecisionRequester or RequestDecision()), that the game is not "
                "paused, and raise timeout_wait if a step takes longer."
            )
        return UnityTimeOutException(text)

    def _receive(self, stage: str) -> UnityMessageProto:
        call = self._next_call(stage)
        try:
            message = UnityMessageProto.FromString(call.request)
        except Exception as error:
            call.answer(_CLOSE_MESSAGE)
            self._stopped = True
            raise UnityCommunicationException(
                f"The game sent a message that is not a UnityMessageProto ({error})."
            ) from error
        if message.header.status != STATUS_OK:
            call.answer(_CLOSE_MESSAGE)  # the game is quitting; let its last call return
            self._stopped = True
            raise UnityCommunicatorStoppedException(
                f"Communicator has exited: the game sent status {message.header.status} "
                "(it is shutting down)."
            )
        self._pending = call
        return message

    def _answer(self, reply: bytes) -> None:
        if self._stopped or not self._finalizer.alive:
            raise UnityCommunicatorStoppedException(
                "Communicator has exited: the connection to the game is closed."
            )
        call = self._pending
        if call is None:
            raise UnityCommunicationException(
                "No call of the game is waiting for an answer; call initialize() first."
            )
        self._pending = None
        call.answer(reply)

    # ----------------------------------------------------------------------------------------
    # protocol steps
    # ----------------------------------------------------------------------------------------

    def initialize(self, inputs: UnityInputProto) -> UnityOutputProto:
        """Perform the handshake (spec §3.2) and return the game's initialization output.

        Waits for the game's first call, answers it with ``inputs`` (the
        ``rl_initialization_input``), then waits for the second call, which stays pending until
        the first :meth:`exchange`.

        Raises:
            UnityTimeOutException: if a handshake call does not arrive within ``timeout_wait``.
            UnityCommunicatorStoppedException: if the game quits during the handshake.
        """
        first = self._receive("connect")
        self._answer(encode_message(inputs))
        self._receive("handshake")
        return first.unity_output

    def exchange(self, inputs: UnityInputProto) -> UnityOutputProto:
        """Answer the game's pending call with ``inputs`` and return its next output.

        Raises:
            UnityTimeOutException: if the next call does not come within ``timeout_wait``.
            UnityCommunicatorStoppedException: if the game quit (status != 200) or vanished.
        """
        self._answer(encode_message(inputs))
        with hierarchical_timer("communicator.wait"):
            message = self._receive("step")
        return message.unity_output

    def close(self) -> None:
        """Answer the pending call with status 400, then stop the server. Idempotent."""
        if self._pending is not None:
            self._pending.answer(_CLOSE_MESSAGE)
            self._pending = None
        self._stopped = True
        self._finalizer()

    def __enter__(self) -> Communicator:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
