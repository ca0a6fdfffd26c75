from unity_gym.protocol.communicator_objects import agent_action_pb2 as _agent_action_pb2
from unity_gym.protocol.communicator_objects import command_pb2 as _command_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UnityRLInputProto(_message.Message):
    __slots__ = ("agent_actions", "command", "side_channel")
    class ListAgentActionProto(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedCompositeFieldContainer[_agent_action_pb2.AgentActionProto]
        def __init__(self, value: _Optional[_Iterable[_Union[_agent_action_pb2.AgentActionProto, _Mapping]]] = ...) -> None: ...
    class AgentActionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: UnityRLInputProto.ListAgentActionProto
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[UnityRLInputProto.ListAgentActionProto, _Mapping]] = ...) -> None: ...
    AGENT_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    SIDE_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    agent_actions: _containers.MessageMap[str, UnityRLInputProto.ListAgentActionProto]
    command: _command_pb2.CommandProto
    side_channel: bytes
    def __init__(self, agent_actions: _Optional[_Mapping[str, UnityRLInputProto.ListAgentActionProto]] = ..., command: _Optional[_Union[_command_pb2.CommandProto, str]] = ..., side_channel: _Optional[bytes] = ...) -> None: ...
