"""``UnityEnvironment`` semantics (spec §3.3, §4.6, §5.3) against a scripted Unity over gRPC."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bridge_standin import (
    Agent,
    Behavior,
    ScriptedUnity,
    build_output,
    free_port,
    init_call,
)
from google.protobuf import any_pb2

from unity_gym.base_env import ActionTuple
from unity_gym.environment import (
    AgentNotDecidingError,
    UnityEnvironment,
    is_compatible_api_version,
    parse_version,
)
from unity_gym.exceptions import (
    UnityActionException,
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
)
from unity_gym.protocol.communicator_objects.training_analytics_pb2 import (
    TrainingEnvironmentInitialized,
)
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
from unity_gym.side_channels.raw_bytes_channel import RawBytesChannel
from unity_gym.side_channels.side_channel_manager import (
    decode_side_channel_records,
    encode_side_channel_records,
)
from unity_gym.timers import TimerStack, get_timer_tree, set_timer_stack

pytestmark = pytest.mark.timeout(60)

A, B = "A?team=0", "B?team=1"


def two_behaviors(step: int = 0, a_agents: tuple[int, ...] = (0, 1)) -> bytes:
    brains = {A: Behavior(continuous=2), B: Behavior(branches=(3,))} if step == 0 else None
    return build_output(
        {
            A: [Agent(id=i, obs=[[step, i]]) for i in a_agents],
            B: [Agent(id=9, obs=[[step, 9]], action_mask=[False, True, False])],
        },
        brains,
    )


class Session:
    """A scripted Unity plus the environment connected to it."""

    def __init__(self, script: list[Any], **kwargs: Any) -> None:
        first_call = kwargs.pop("first_call", None)
        then_quit = kwargs.pop("then_quit", False)
        port = free_port()
        self.unity = ScriptedUnity(port, script, first_call=first_call, then_quit=then_quit).start()
        kwargs.setdefault("timeout_wait", 20)
        self.env = UnityEnvironment(base_port=port, **kwargs)

    def finish(self) -> list[UnityMessageProto]:
        self.env.close()
        self.unity.join()
        self.unity.close()
        assert self.unity.error is None
        return [UnityMessageProto.FromString(a) for a in self.unity.answers]


@pytest.fixture
def sessions() -> Iterator[list[Session]]:
    created: list[Session] = []
    yield created
    for session in created:
        session.env.close()
        session.unity.close()


def test_handshake_carries_seed_num_areas_and_capabilities(sessions: list[Session]) -> None:
    session = Session([], seed=42, num_areas=3)
    sessions.append(session)
    assert len(session.env.behavior_specs) == 0
    assert session.env.academy_capabilities is not None
    assert session.env.academy_capabilities.multiAgentGroups
    answers = session.finish()
    init = answers[0].unity_input.rl_initialization_input
    assert (init.seed, init.num_areas, init.communication_version) == (42, 3, "1.5.0")
    assert init.package_version == "1.1.0"
    caps = init.capabilities
    assert all(getattr(caps, f.name) for f in caps.DESCRIPTOR.fields)
    assert answers[1].header.status == 400  # close answered Unity's pending second call


def test_step_before_reset_resets_and_specs_appear(sessions: list[Session]) -> None:
    session = Session([two_behaviors()])
    sessions.append(session)
    assert len(session.env.behavior_specs) == 0
    session.env.step()
    specs = session.env.behavior_specs
    assert set(specs) == {A, B}
    assert specs[A].action_spec.continuous_size == 2
    assert specs[B].action_spec.discrete_branches == (3,)
    assert specs[A].observation_specs[0].shape == (2,)
    answers = session.finish()
    assert answers[1].unity_input.rl_input.command == 1  # RESET, not STEP


def test_missing_actions_are_zero_filled_and_empty_behaviors_get_no_entry(
    sessions: list[Session],
) -> None:
    session = Session(
        [
            two_behaviors(0),
            two_behaviors(1),
            build_output({A: [Agent(id=0, obs=[[2, 0]], done=True)]}),
            two_behaviors(3),
        ]
    )
    sessions.append(session)
    env = session.env
    env.reset()
    decision, _ = env.get_steps(B)
    assert decision.action_mask is not None
    assert decision.action_mask[0].tolist() == [[False, True, False]]
    env.set_actions(A, ActionTuple(continuous=np.array([[0.5, 1.0], [-0.5, -1.0]])))
    env.step()  # B not set: zeros
    env.step()  # nobody set anything
    decision, terminal = env.get_steps(A)
    assert len(decision) == 0 and terminal.agent_id.tolist() == [0]
    b_decision, b_terminal = env.get_steps(B)  # B absent from the message: empty batches
    assert len(b_decision) == 0 and len(b_terminal) == 0
    env.set_actions(B, ActionTuple(discrete=np.zeros((0, 1))))  # zero agents is fine
    env.step()  # only terminal data last time: no action entries at all
    answers = session.finish()
    first_step = answers[2].unity_input.rl_input
    assert [list(a.continuous_actions) for a in first_step.agent_actions[A].value] == [
        [0.5, 1.0],
        [-0.5, -1.0],
    ]
    assert [list(a.discrete_actions) for a in first_step.agent_actions[B].value] == [[0]]
    second_step = answers[3].unity_input.rl_input
    assert [list(a.continuous_actions) for a in second_step.agent_actions[A].value] == [
        [0.0, 0.0],
        [0.0, 0.0],
    ]
    third_step = answers[4].unity_input.rl_input
    assert len(third_step.agent_actions) == 0
    assert third_step.command == 0


def test_action_errors_name_what_is_wrong(sessions: list[Session]) -> None:
    session = Session([two_behaviors()])
    sessions.append(session)
    env = session.env
    with pytest.raises(UnityActionException, match="call reset"):
        env.set_actions(A, ActionTuple(np.zeros((2, 2))))
    env.reset()
    with pytest.raises(UnityActionException, match=r"Known behaviors: \['A\?team=0', 'B\?team=1'"):
        env.set_actions("A", ActionTuple(np.zeros((2, 2))))
    with pytest.raises(UnityActionException, match=r"\(2, 2\).*got shape \(3, 2\)"):
        env.set_actions(A, ActionTuple(np.zeros((3, 2))))
    with pytest.raises(UnityActionException, match="NaN"):
        env.set_actions(A, ActionTuple(np.array([[0.0, np.nan], [0.0, 0.0]])))
    with pytest.raises(UnityActionException, match="out of range"):
        env.set_actions(B, ActionTuple(discrete=np.array([[3]])))
    with pytest.raises(UnityActionException, match="does not correspond"):
        env.get_steps("nope")
    session.finish()


def test_set_action_for_agent_writes_one_row(sessions: list[Session]) -> None:
    session = Session([two_behaviors(0), two_behaviors(1)])
    sessions.append(session)
    env = session.env
    env.reset()
    users = ActionTuple(continuous=np.array([[1.0, 1.0], [2.0, 2.0]]))
    env.set_actions(A, users)
    env.set_action_for_agent(A, 1, ActionTuple(continuous=np.array([[7.0, 8.0]])))
    env.set_action_for_agent(B, 9, ActionTuple(discrete=np.array([[2]])))
    assert users.continuous.tolist() == [[1.0, 1.0], [2.0, 2.0]]  # caller's array untouched
    with pytest.raises(AgentNotDecidingError, match=r"agent_id 5 .*\[0, 1\]") as caught:
        env.set_action_for_agent(A, 5, ActionTuple(continuous=np.array([[0.0, 0.0]])))
    assert isinstance(caught.value, IndexError)
    with pytest.raises(UnityActionException, match=r"\(1, 2\)"):
        env.set_action_for_agent(A, 0, ActionTuple(continuous=np.zeros((2, 2))))
    env.step()
    answers = session.finish()
    step = answers[2].unity_input.rl_input
    assert [list(a.continuous_actions) for a in step.agent_actions[A].value] == [
        [1.0, 1.0],
        [7.0, 8.0],
    ]
    assert list(step.agent_actions[B].value[0].discrete_actions) == [2]


def test_default_analytics_message_travels_with_the_first_reset(sessions: list[Session]) -> None:
    session = Session([two_behaviors()])
    sessions.append(session)
    session.env.reset()
    answers = session.finish()
    records = decode_side_channel_records(answers[1].unity_input.rl_input.side_channel)
    analytics = uuid.UUID("b664a4a9-d86f-5a5f-95cb-e8353a7e8356")
    assert [channel for channel, _ in records] == [analytics]
    wrapper = any_pb2.Any.FromString(records[0][1])
    assert wrapper.type_url.endswith("communicator_objects.TrainingEnvironmentInitialized")
    message = TrainingEnvironmentInitialized.FromString(wrapper.value)
    assert message.python_version.count(".") == 2


def test_user_side_channels_both_directions(sessions: list[Session]) -> None:
    channel_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    raw = RawBytesChannel(channel_id)
    from_unity = encode_side_channel_records([(channel_id, b"hello python")])
    session = Session(
        [build_output({A: [Agent(id=0, obs=[[1.0]])]}, {A: Behavior(1)}, side_channel=from_unity)],
        side_channels=[raw],
    )
    sessions.append(session)
    raw.send_raw_data(b"hello unity")
    session.env.reset()
    assert raw.get_and_clear_received_messages() == [b"hello python"]
    answers = session.finish()
    records = decode_side_channel_records(answers[1].unity_input.rl_input.side_channel)
    assert records[0] == (channel_id, b"hello unity")  # user channels first, analytics last
    assert len(records) == 2


@pytest.mark.parametrize("version", ["1.5.0-exp", "1.5.0.1", "1.4", "1.9.3-preview.2"])
def test_version_suffixes_and_newer_minors_are_tolerated(
    version: str, sessions: list[Session]
) -> None:
    session = Session([], first_call=init_call(version))
    sessions.append(session)
    answers = session.finish()
    assert answers[0].header.status == 200


@pytest.mark.parametrize("version", ["2.0.0", "0.15.0", "garbage", ""])
def test_incompatible_versions_are_refused_and_unity_is_told(version: str) -> None:
    port = free_port()
    unity = ScriptedUnity(port, [], first_call=init_call(version)).start()
    with pytest.raises(UnityEnvironmentException, match="not compatible") as caught:
        UnityEnvironment(base_port=port, timeout_wait=20)
    assert repr(version) in str(caught.value)
    unity.join()
    unity.close()
    assert UnityMessageProto.FromString(unity.answers[-1]).header.status == 400


def test_version_helpers() -> None:
    assert parse_version("1.5.0-exp") == (1, 5, 0)
    assert parse_version("1.5.0.1") == (1, 5, 0)
    assert parse_version("x") is None
    assert is_compatible_api_version("1.0.0", "1.5.0")
    assert not is_compatible_api_version("0.15.0", "0.16.0")
    assert is_compatible_api_version("0.16.1", "0.16.0")


def test_unity_quitting_during_a_step_stops_the_environment(sessions: list[Session]) -> None:
    session = Session([two_behaviors()], then_quit=True)
    sessions.append(session)
    env = session.env
    env.reset()
    with pytest.raises(UnityCommunicatorStoppedException, match="status 400"):
        env.step()
    with pytest.raises(UnityEnvironmentException, match="No Unity environment is loaded"):
        env.step()
    session.finish()


def test_step_timeout_says_no_agent_requested_a_decision(sessions: list[Session]) -> None:
    session = Session([two_behaviors(), lambda last: None], timeout_wait=1.0)
    sessions.append(session)
    session.env.reset()
    with pytest.raises(UnityTimeOutException, match="no agent requested a decision within 1 s"):
        session.env.step()
    session.finish()


def test_editor_mode_timeout_names_the_port() -> None:
    port = free_port()
    with pytest.raises(UnityTimeOutException) as caught:
        UnityEnvironment(base_port=port, timeout_wait=0.3)
    assert f"port {port}" in str(caught.value) and "Unity Editor" in str(caught.value)
    with socket.socket() as probe:  # the server was stopped: the port is free again
        probe.bind(("127.0.0.1", port))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"worker_id": 1}, "worker-id must be 0"),
        ({"worker_id": -1}, "non-negative"),
        ({"base_port": 70000}, r"\[0, 65535\]"),
        ({"seed": 2**40}, "32-bit"),
        ({"num_areas": 0}, ">= 1"),
        ({"timeout_wait": 0}, "positive"),
        ({"additional_args": "-batchmode"}, "list of strings"),
    ],
)
def test_bad_arguments_are_explained(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UnityEnvironmentException, match=message):
        UnityEnvironment(**kwargs)


def test_messages_above_4_mib_reach_the_user(sessions: list[Session]) -> None:
    big = build_output({A: [Agent(id=0, obs=[np.full(1_200_000, 0.5)])]}, {A: Behavior(1)})
    assert len(big) > 4 * 1024 * 1024
    session = Session([big])
    sessions.append(session)
    session.env.reset()
    decision, _ = session.env.get_steps(A)
    assert decision.obs[0].shape == (1, 1_200_000)
    assert float(decision.obs[0].mean()) == 0.5
    session.finish()


def test_context_manager_and_repeated_close() -> None:
    port = free_port()
    unity = ScriptedUnity(port, [two_behaviors()]).start()
    with UnityEnvironment(base_port=port, timeout_wait=20) as env:
        env.reset()
        assert env.port == port and env.process is None and env.worker_id == 0
    env.close()
    unity.join()
    unity.close()
    assert UnityMessageProto.FromString(unity.answers[-1]).header.status == 400


def test_hot_paths_are_timed(sessions: list[Session]) -> None:
    previous = set_timer_stack(TimerStack())
    try:
        session = Session([two_behaviors(0), two_behaviors(1)])
        sessions.append(session)
        session.env.reset()
        session.env.step()
        session.finish()
        names: set[str] = set()

        def collect(node: dict[str, Any]) -> None:
            for name, child in node.get("children", {}).items():
                names.add(name)
                collect(child)

        collect(get_timer_tree())
    finally:
        set_timer_stack(previous)
    assert {"UnityEnvironment.step", "communicator.exchange", "steps_from_proto"} <= names
    assert "encode_step_input" in names


@pytest.mark.parametrize(
    ("file_name", "worker_id", "base_port", "expected"),
    [
        (None, 0, None, 5004),  # the Editor's port
        ("game", 3, None, 0),  # a launched player gets a free port
        ("game", 3, 6000, 6003),  # base_port + worker_id, as in mlagents_envs
        ("game", 3, 0, 0),
        (None, 0, 7000, 7000),
    ],
)
def test_port_selection(
    file_name: str | None, worker_id: int, base_port: int | None, expected: int
) -> None:
    assert UnityEnvironment._resolve_port(file_name, worker_id, base_port) == expected


def test_package_import_is_light_and_exports_lazily() -> None:
    import subprocess
    import sys

    code = (
        "import sys, unity_gym\n"
        "assert 'torch' not in sys.modules and 'unity_gym.environment' not in sys.modules\n"
        "from unity_gym import UnityEnvironment, ActionTuple, UnityTimeOutException\n"
        "assert UnityEnvironment.__module__ == 'unity_gym.environment'\n"
        "assert 'torch' not in sys.modules\n"
        "assert set(unity_gym.__all__) <= set(dir(unity_gym))\n"
    )
    repo_root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo_root, timeout=60)
