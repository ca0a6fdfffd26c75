from unity_gym.protocol.communicator_objects import agent_info_pb2 as _agent_info_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UnityRLOutputProto(_message.Message):
    __slots__ = ("agentInfos", "side_channel")
    class ListAgentInfoProto(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedCompositeFieldContainer[_agent_info_pb2.AgentInfoProto]
        def __init__(self, value: _Optional[_Iterable[_Union[_agent_info_pb2.AgentInfoProto, _Mapping]]] = ...) -> None: ...
    class AgentInfosEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: UnityRLOutputProto.ListAgentInfoProto
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[UnityRLOutputProto.ListAgentInfoProto, _Mapping]] = ...) -> None: ...
    AGENTINFOS_FIELD_NUMBER: _ClassVar[int]
    SIDE_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    agentInfos: _containers.MessageMap[str, UnityRLOutputProto.ListAgentInfoProto]
    side_channel: bytes
    def __init__(self, agentInfos: _Optional[_Mapping[str, UnityRLOutputProto.ListAgentInfoProto]] = ..., side_channel: _Optional[bytes] = ...) -> None: ...
