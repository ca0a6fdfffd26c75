from unity_gym.protocol.communicator_objects import capabilities_pb2 as _capabilities_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UnityRLInitializationInputProto(_message.Message):
    __slots__ = ("seed", "communication_version", "package_version", "capabilities", "num_areas")
    SEED_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_VERSION_FIELD_NUMBER: _ClassVar[int]
    PACKAGE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    NUM_AREAS_FIELD_NUMBER: _ClassVar[int]
    seed: int
    communication_version: str
    package_version: str
    capabilities: _capabilities_pb2.UnityRLCapabilitiesProto
    num_areas: int
    def __init__(self, seed: _Optional[int] = ..., communication_version: _Optional[str] = ..., package_version: _Optional[str] = ..., capabilities: _Optional[_Union[_capabilities_pb2.UnityRLCapabilitiesProto, _Mapping]] = ..., num_areas: _Optional[int] = ...) -> None: ...
