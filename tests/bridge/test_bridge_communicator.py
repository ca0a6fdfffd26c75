"""The gRPC server relay against a real gRPC client on 127.0.0.1 (spec §1, §3)."""

from __future__ import annotations

import socket
import threading
import time

import grpc
import pytest
from bridge_standin import (
    EXCHANGE_PATH,
    HEADER_ONLY,
    UNITY_QUIT,
    Agent,
    ScriptedUnity,
    build_output,
    init_call,
)

from unity_gym.communicator import Communicator
from unity_gym.decoding import encode_reset_input
from unity_gym.exceptions import (
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
    UnityWorkerInUseException,
)
from unity_gym.protocol.communicator_objects.unity_input_pb2 import UnityInputProto
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto

pytestmark = pytest.mark.timeout(60)

RESET = UnityInputProto(rl_input=encode_reset_input(b""))


def test_port_zero_binds_a_free_port_on_loopback() -> None:
    with Communicator(0, timeout_wait=5) as communicator:
        assert 0 < communicator.port < 65536
        # another server cannot take the same port while we hold it
        with pytest.raises(UnityWorkerInUseException, match=str(communicator.port)):
            Communicator(communicator.port, timeout_wait=5)


def test_a_port_used_by_another_program_is_reported() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(UnityWorkerInUseException, match=f"port {port}"):
            Communicator(port, timeout_wait=5, worker_id=3)


def test_each_call_is_held_open_until_python_supplies_the_next_input() -> None:
    with Communicator(0, timeout_wait=10) as communicator:
        output = build_output({"B?team=0": [Agent(id=1, obs=[[1.0]])]})
        unity = ScriptedUnity(communicator.port, [output]).start()
        init = communicator.initialize(UnityInputProto())
        assert init.rl_initialization_output.communication_version == "1.5.0"
        # Unity's second call is still waiting: its answer is the RESET we have not sent yet
        time.sleep(0.2)
        assert len(unity.answers) == 1
        reply = communicator.exchange(RESET)
        assert len(reply.rl_output.agentInfos["B?team=0"].value) == 1
        assert unity.inputs()[1].rl_input.command == 1  # RESET answered call 2
        communicator.close()
        unity.join()
        assert UnityMessageProto.FromString(unity.answers[-1]).header.status == 400
        unity.close()


def test_status_400_from_unity_stops_and_is_acknowledged() -> None:
    with Communicator(0, timeout_wait=10) as communicator:
        unity = ScriptedUnity(communicator.port, [], then_quit=True).start()
        communicator.initialize(UnityInputProto())
        with pytest.raises(UnityCommunicatorStoppedException, match="status 400"):
            communicator.exchange(RESET)
        unity.join()  # Unity's quitting call got an answer instead of hanging
        assert unity.answers[-1] == UNITY_QUIT
        assert not communicator.is_open
        with pytest.raises(UnityCommunicatorStoppedException):
            communicator.exchange(RESET)
        unity.close()


def test_timeout_when_nothing_connects_names_the_port() -> None:
    with Communicator(0, timeout_wait=0.5, peer_label="the game /x/Game.x86_64") as comm:
        started = time.monotonic()
        with pytest.raises(UnityTimeOutException) as caught:
            comm.initialize(UnityInputProto())
        assert time.monotonic() - started < 5
    text = str(caught.value)
    assert f"nothing connected to port {comm.port}" in text
    assert "/x/Game.x86_64" in text
    assert f"--mlagents-port {comm.port}" in text


def test_timeout_when_unity_stops_after_half_the_handshake() -> None:
    with Communicator(0, timeout_wait=1.0) as communicator:
        channel = grpc.insecure_channel(f"127.0.0.1:{communicator.port}")
        exchange = channel.unary_unary(EXCHANGE_PATH)
        result: list[bytes] = []
        caller = threading.Thread(
            target=lambda: result.append(exchange(init_call(), wait_for_ready=True, timeout=10))
        )
        caller.start()
        with pytest.raises(UnityTimeOutException, match="did not complete the handshake"):
            communicator.initialize(UnityInputProto())
        caller.join()
        assert result  # the first call was answered
        channel.close()


def test_timeout_when_connected_but_no_agent_reports() -> None:
    with Communicator(0, timeout_wait=1.0) as communicator:
        unity = ScriptedUnity(communicator.port, [lambda last: None]).start()
        communicator.initialize(UnityInputProto())
        with pytest.raises(UnityTimeOutException, match="no agent requested a decision"):
            communicator.exchange(RESET)
        unity.join()
        unity.close()


def test_unity_dropping_the_connection_wakes_python() -> None:
    with Communicator(0, timeout_wait=30) as communicator:
        channel = grpc.insecure_channel(f"127.0.0.1:{communicator.port}")
        exchange = channel.unary_unary(EXCHANGE_PATH)
        second: list[grpc.Future] = []

        def unity() -> None:
            exchange(init_call(), wait_for_ready=True, timeout=10)
            second.append(exchange.future(HEADER_ONLY))

        caller = threading.Thread(target=unity)
        caller.start()
        communicator.initialize(UnityInputProto())
        caller.join()
        # Python holds Unity's second call; Unity goes away before getting its answer
        second[0].cancel()
        channel.close()
        time.sleep(0.5)
        started = time.monotonic()
        with pytest.raises(UnityCommunicatorStoppedException, match="dropped its connection"):
            communicator.exchange(RESET)
        assert time.monotonic() - started < 10


def test_peer_exit_notification_interrupts_the_wait() -> None:
    with Communicator(0, timeout_wait=30) as communicator:
        threading.Timer(
            0.2, communicator.notify_peer_exited, [UnityEnvironmentException("exit 3")]
        ).start()
        started = time.monotonic()
        with pytest.raises(UnityEnvironmentException, match="exit 3"):
            communicator.initialize(UnityInputProto())
        assert time.monotonic() - started < 10


def test_messages_larger_than_4_mib_are_accepted() -> None:
    big = build_output({"B?team=0": [Agent(id=0, obs=[[0.25] * 1_500_000])]})
    assert len(big) > 4 * 1024 * 1024
    with Communicator(0, timeout_wait=20) as communicator:
        unity = ScriptedUnity(communicator.port, [big]).start()
        communicator.initialize(UnityInputProto())
        reply = communicator.exchange(RESET)
        obs = reply.rl_output.agentInfos["B?team=0"].value[0].observations[0]
        assert len(obs.float_data.data) == 1_500_000
        communicator.close()
        unity.join()
        unity.close()


def test_max_message_bytes_is_enforced() -> None:
    big = build_output({"B?team=0": [Agent(id=0, obs=[[0.25] * 100_000])]})
    with Communicator(0, timeout_wait=1, max_message_bytes=64 * 1024) as communicator:
        unity = ScriptedUnity(communicator.port, [big]).start()
        communicator.initialize(UnityInputProto())
        with pytest.raises(
            UnityCommunicationException, match=r"was \d+ bytes, more than max_message_bytes"
        ):
            communicator.exchange(RESET)  # named at once, not a timeout (issue 37)
        unity.join()
        assert isinstance(unity.error, grpc.RpcError)
        assert unity.error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        unity.close()


def test_close_is_idempotent_and_later_calls_get_status_400() -> None:
    communicator = Communicator(0, timeout_wait=5)
    port = communicator.port
    unity = ScriptedUnity(port, []).start()
    communicator.initialize(UnityInputProto())
    communicator.close()
    communicator.close()
    unity.join()
    assert UnityMessageProto.FromString(unity.answers[-1]).header.status == 400
    unity.close()
    # the port is released: a new server can bind it at once
    Communicator(port, timeout_wait=5).close()


def test_a_second_unity_call_while_one_is_pending_is_queued_in_order() -> None:
    with Communicator(0, timeout_wait=10) as communicator:
        channel = grpc.insecure_channel(f"127.0.0.1:{communicator.port}")
        exchange = channel.unary_unary(EXCHANGE_PATH)
        first = exchange.future(init_call(), wait_for_ready=True)
        time.sleep(0.2)
        second = exchange.future(HEADER_ONLY, wait_for_ready=True)
        communicator.initialize(UnityInputProto())
        assert UnityMessageProto.FromString(first.result(timeout=10)).header.status == 200
        communicator.close()
        assert UnityMessageProto.FromString(second.result(timeout=10)).header.status == 400
        channel.close()


def test_host_option_binds_other_interfaces() -> None:
    with Communicator(0, host="0.0.0.0", timeout_wait=10) as communicator:
        unity = ScriptedUnity(communicator.port, [], host="127.0.0.1").start()
        assert communicator.initialize(UnityInputProto()).rl_initialization_output.name
        communicator.close()
        unity.join()
        unity.close()
