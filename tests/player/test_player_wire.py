"""The player's side of the wire against a scripted gRPC trainer in the test process: exact
handshake bytes (spec §2.4), fallback to heuristics, and how the player reacts to a 400 reply or
to the trainer vanishing."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
CALL1 = bytes.fromhex(
    "0a0308c801123212300a1041636164656d7953696e676c65746f6e1205312e352e303a05332e302e3042"
    "0e0801100118012001280130013801"
)
REPLY1 = bytes.fromhex(
    "0a0308c8011a2212201205312e352e301a05312e312e30220e08011001180120012801300138012801"
)
CALL2 = bytes.fromhex("0a0308c801")
RESET = bytes.fromhex("0a0308c8011a040a022001")
CLOSE = bytes.fromhex("0a03089003")


class ScriptedTrainer:
    """A gRPC server whose ``Exchange`` hands each request to the test and waits for its reply."""

    def __init__(self) -> None:
        self.requests: queue.Queue[bytes] = queue.Queue()
        self._replies: queue.Queue[bytes | None] = queue.Queue()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.method_handlers_generic_handler(
            "communicator_objects.UnityToExternalProto",
            {"Exchange": grpc.unary_unary_rpc_method_handler(self._exchange)},
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _exchange(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        self.requests.put(request)
        reply = self._replies.get()
        if reply is None:
            context.abort(grpc.StatusCode.UNAVAILABLE, "trainer gone")
            return b""
        return reply

    def next_request(self, timeout: float = 20.0) -> bytes:
        return self.requests.get(timeout=timeout)

    def reply(self, data: bytes | None) -> None:
        self._replies.put(data)

    def stop(self) -> None:
        for _ in range(8):
            self._replies.put(None)
        self.server.stop(0)


@pytest.fixture
def trainer() -> Iterator[ScriptedTrainer]:
    stub = ScriptedTrainer()
    yield stub
    stub.stop()


def _launch(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "player.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "unity_gym.player", *args, "-logFile", str(log)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, log


def _finish(process: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


def test_handshake_bytes_match_the_spec_and_400_reply_closes(
    trainer: ScriptedTrainer, tmp_path: Path
) -> None:
    process, log = _launch(tmp_path, "--scene", "3DBall", "--mlagents-port", str(trainer.port))
    try:
        assert trainer.next_request() == CALL1
        trainer.reply(REPLY1)
        assert trainer.next_request() == CALL2
        trainer.reply(RESET)
        output = UnityMessageProto.FromString(trainer.next_request())
        infos = output.unity_output.rl_output.agentInfos["3DBall?team=0"].value
        assert [info.id for info in infos] == list(range(12))
        brains = output.unity_output.rl_initialization_output.brain_parameters
        assert [b.brain_name for b in brains] == ["3DBall?team=0"]
        assert brains[0].action_spec.num_continuous_actions == 2
        assert list(brains[0].vector_action_size_deprecated) == [], "trainer has hybridActions"
        trainer.reply(CLOSE)
        assert _finish(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert trainer.requests.empty(), "no goodbye after the trainer said 400"
    assert "Quitting: the trainer closed the connection (status 400)" in log.read_text()


def test_trainer_without_hybrid_actions_gets_deprecated_fields(
    trainer: ScriptedTrainer, tmp_path: Path
) -> None:
    reply = UnityMessageProto.FromString(REPLY1)
    reply.unity_input.rl_initialization_input.capabilities.hybridActions = False
    process, _ = _launch(tmp_path, "--scene", "Basic", "--mlagents-port", str(trainer.port))
    try:
        trainer.next_request()
        trainer.reply(reply.SerializeToString())
        trainer.next_request()
        trainer.reply(RESET)
        output = UnityMessageProto.FromString(trainer.next_request())
        brain = output.unity_output.rl_initialization_output.brain_parameters[0]
        assert list(brain.vector_action_size_deprecated) == [3]
        assert brain.vector_action_space_type_deprecated == 0  # discrete
        trainer.reply(CLOSE)
        assert _finish(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_handshake_cut_short_falls_back_to_the_heuristic(
    trainer: ScriptedTrainer, tmp_path: Path
) -> None:
    process, log = _launch(
        tmp_path,
        "--scene", "Basic", "--mlagents-port", str(trainer.port), "--max-steps", "50",
    )  # fmt: skip
    try:
        trainer.next_request()
        trainer.reply(REPLY1)
        trainer.next_request()
        trainer.reply(CLOSE)
        assert _finish(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text()
    assert "continuing without a trainer" in text
    assert "reached --max-steps 50" in text


def test_player_exits_when_the_trainer_vanishes(trainer: ScriptedTrainer, tmp_path: Path) -> None:
    process, log = _launch(tmp_path, "--scene", "Stress", "--mlagents-port", str(trainer.port))
    try:
        trainer.next_request()
        trainer.reply(REPLY1)
        trainer.next_request()
        trainer.reply(RESET)
        trainer.next_request()
        trainer.stop()  # the pending call fails: the trainer is gone
        assert _finish(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Quitting: the trainer disappeared" in log.read_text()


def test_nobody_listening_plays_heuristically(tmp_path: Path, free_tcp_port: int) -> None:
    process, log = _launch(
        tmp_path, "--scene", "3DBall", "--mlagents-port", str(free_tcp_port), "--max-steps", "30"
    )
    assert _finish(process) == 0
    text = log.read_text()
    assert "Couldn't connect to trainer" in text
    assert "heuristic" in text


def test_sigterm_while_waiting_for_the_trainer_says_goodbye(
    trainer: ScriptedTrainer, tmp_path: Path
) -> None:
    process, log = _launch(tmp_path, "--scene", "Basic", "--mlagents-port", str(trainer.port))
    try:
        trainer.next_request()
        trainer.reply(REPLY1)
        trainer.next_request()
        trainer.reply(RESET)
        trainer.next_request()  # the player now blocks until the trainer answers
        process.send_signal(signal.SIGTERM)
        goodbye = UnityMessageProto.FromString(trainer.next_request())
        assert goodbye.header.status == 400 and not goodbye.HasField("unity_output")
        trainer.reply(CLOSE)  # answers the abandoned call ...
        trainer.reply(CLOSE)  # ... and the goodbye
        assert _finish(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Quitting: terminated by SIGTERM" in log.read_text()
